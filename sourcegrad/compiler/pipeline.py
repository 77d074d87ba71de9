"""The compiled gradient's stages, in order: the one place that lists them and runs them.

Plain data between stages: Python source, `ir.Function`s, dicts of abstract values
(`analysis.AVal`), generated source text.

    stage            function (module under compiler/)     takes -> gives
    1 lower          function_to_ir (frontend), or         a Python function -> IR (A-normal form)
                     trace_function (trace)
    2 prepare        prepare: hoist_loop_invariants        IR -> IR (loop invariants out; with
                     (optimize), output_and_aux (facts)    has_aux, the return a pair)
    3 infer          infer_shapes (analysis)               IR, input AVals -> {name: AVal}
    4 decide         decide_branches (specialise.branches) IR, AVals -> IR (branches this
                                                           signature decides, kept once)
    5 rewrite        arrays_of_lists                       IR, AVals -> IR (lists passed to
                     (specialise.list_operands),           numpy's array functions made arrays,
                     selects_for_masked_writes             masked writes made selections,
                     (specialise.masked_writes),           per-row products as one matrix
                     batch_row_products, hoist again,      product, ...)
                     negate_products (optimize)
    6 check          check_in_place_updates,               IR, AVals -> None or a located
                     check_real_values,                    SourcegradError
                     check_unmodelled_calls,
                     check_keywords,
                     check_dropped_inputs (analysis)
    7 differentiate  reverse, split_vjp (derive.reverse)   IR, AVals, Mode -> derivative IR
                     | derivative, forward_mode
                     (derive.forward)
    8 optimize       optimize (optimize)                   IR -> IR (CSE, folding, dead code,
                                                           buffers reused)
    9 print          generate_module (emit.codegen)        IR -> Python source
    10 load          load (emit.codegen), or the           source -> a module's functions
                     backends' (backends.numba_backend,
                     backends.dask_backend)

`compile(fn, avals, mode)` runs 1-9 in that order and gives a `Generated` (the source, the
manifest of saved values, the IR and what the api asks of it); `load` runs 10. The api
(`sourcegrad.api.compiling`) runs the same stages with its caches between them: stage 1
once per function (its IR cache), stage 2, then its template and disk caches (keyed by
stage 2's IR), then `generate` (stages 3-9) on a miss, then `load`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .. import errors
from ..ops import template_globals
from . import facts
from .analysis import (
    AVal,
    aval_of,
    check_dropped_inputs,
    check_in_place_updates,
    check_keywords,
    check_real_values,
    check_unmodelled_calls,
    infer_shapes,
)
from .analysis.lifetimes import FREE_MIN_BYTES
from .backends import dask_backend, numba_backend
from .derive import checkpointing
from .derive.forward import derivative, forward_mode
from .derive.reverse import reverse, split_vjp
from .emit.codegen import BACKENDS, DOT_MAX_SIZE, SourceInfo, generate_module
from .emit.codegen import load as load_module
from .frontend import function_to_ir
from .ir import Assign, Call, Function, Tup, reads_of, walk
from .names import Namer
from .optimize import batch_row_products, hoist_loop_invariants, negate_products, optimize
from .specialise.branches import decide_branches
from .specialise.list_operands import arrays_of_lists
from .specialise.masked_writes import selects_for_masked_writes
from .trace import state as trace_state

# backends whose backward can take its residuals in a list (`Mode.handing_over`): numpy's
# (numba types each argument; CuPy's arrays go back to its memory pool, not to the system)
HANDING_BACKENDS = ("numpy",)


@dataclass(frozen=True)
class Mode:
    """What to derive, and for which backend.

    `kind`: "gradient" (reverse mode), "vjp" (a forward and a backward function),
    "jvp" (forward mode, one tangent per input in `wrt`) or "forward over reverse" (the
    derivative of generated gradient code with respect to one number, by forward mode).
    `single`: one input differentiated (its gradient returned alone, not in a tuple).
    `value`: the value returned with the gradient; `has_aux`: the function returns
    (output, aux). `name`: the generated function's name where the default (after the
    function and `wrt`) will not do. `hands_over`: a VJP's backward takes its residuals in
    one list, which it empties, and frees each array after its last use (for a caller that
    gives them up, as an eager node does unless retain_graph: `handing_over`)."""

    wrt: tuple
    kind: str = "gradient"
    single: bool = True
    value: bool = False
    has_aux: bool = False
    memory_plan: Any = None
    backend: str = "numpy"
    name: Optional[str] = None
    hands_over: bool = False

    @property
    def handing_over(self) -> bool:
        """Whether the generated backward takes its residuals in a list (HANDING_BACKENDS)."""
        return self.hands_over and self.kind == "vjp" and self.backend in HANDING_BACKENDS

    @property
    def with_value(self) -> bool:
        """Whether the generated function returns a pair (value or aux first)."""
        return self.value or self.has_aux

    @property
    def verb(self) -> str:
        """The user's name for the transformation, in messages."""
        return {"vjp": "vjp", "jvp": "jvp"}.get(self.kind, "grad")


@dataclass(frozen=True)
class About:
    """What the generated module's header says it came from (the api knows; defaults for
    a function compiled here): the file, the function's label, the names differentiated,
    the parameters read as the numpy scalars their 0-d arrays hold (`unwrapped`,
    positions), and why it was traced (None: the source front end read it)."""

    file: Optional[str] = None
    label: Optional[str] = None
    wrt_names: tuple = ()
    unwrapped: frozenset = frozenset()
    traced: Optional[str] = None


@dataclass
class Generated:
    """What the pipeline made for one signature: the generated module's `source`, the
    `manifest` of the values its backward keeps (`checkpointing.manifest`), the optimized
    derivative `ir` (its function's `name`; `names`: the module's functions, a VJP's forward
    and backward), the specialised primal and its abstract values (`primal`, `env`), and
    what the api asks of them: `control_flow` (loops or branches), `fresh` (per gradient:
    always a new array), `users` (per gradient: may be the user's own array, or None where
    not asked), `floats` (every gradient a Python float), `complex_sites` (powers of Python
    numbers that may be complex, `facts.PowerSite`)."""

    source: str
    manifest: list
    ir: Function
    names: list
    primal: Function
    env: dict
    control_flow: bool
    fresh: tuple = ()
    users: Optional[tuple] = None
    floats: bool = False
    complex_sites: tuple = field(default=())


# -- stage 1: lower (a front end) ----------------------------------------------------------------

lower = function_to_ir


# -- stage 2: prepare ------------------------------------------------------------------------------


def prepare(written: Function, mode: Mode, traced: bool = False) -> Function:
    """Stage 2: the IR as written, made ready to specialise: loop invariants hoisted (not in a
    trace, which has no loops), and with `has_aux` the return made a pair `(output, aux)`.
    Raises `NonScalarOutputError` for a function returning a tuple without `has_aux`."""
    primal = written if traced else hoist_loop_invariants(written)
    if mode.has_aux:
        return facts.output_and_aux(primal)
    if isinstance(primal.body[-1].value, Tup):
        ret = primal.body[-1]
        raise errors.NonScalarOutputError(
            f"{mode.verb} needs a function with one output, "
            f"but {primal.name} returns a tuple of {len(ret.value.items)} values; if "
            "the others are auxiliary outputs, pass has_aux=True (output first)",
            ret.loc,
        )
    return primal


# -- stages 3-6: specialise ----------------------------------------------------------------------


def specialised(primal, written, avals, wrt_names, batch_rows=True):
    """Stages 3-6: the (hoisted) primal IR specialised to the inputs' abstract values `avals`.

    Takes the IR after stage 2 and the IR as written (`written`, before hoisting: the in-place
    check reads values where the user wrote them). Gives `(IR, {name: AVal})`: shapes
    inferred, decided branches kept once (repeated: a decided branch may decide a flag, an
    early return's), the rewrites applied (each followed by inference again), and the
    checks passed (or a located SourcegradError). `batch_rows=False` (under a memory plan)
    leaves per-row products per row: their batched form is an array per trip, made once and
    kept (for the RNN as large as the per-trip values checkpointing does without)."""
    env = infer_shapes(primal, avals)
    decided = decide_branches(primal, env)
    while decided is not primal:
        primal, env = decided, infer_shapes(decided, avals)
        decided = decide_branches(primal, env)
    # (hoisted again after the batching: the product it makes for an inner loop is invariant
    # in an outer one)
    rewrites = (arrays_of_lists, selects_for_masked_writes) + (
        (batch_row_products, _hoisted_again, negate_products) if batch_rows else (negate_products,)
    )
    for rewrite in rewrites:
        rewritten = rewrite(primal, env)
        if rewritten is not primal:
            primal, env = rewritten, infer_shapes(rewritten, avals)
    check_in_place_updates(written, env)
    check_real_values(primal, env, wrt_names)
    check_unmodelled_calls(primal, wrt_names)
    check_keywords(primal, wrt_names)
    check_dropped_inputs(primal, env, wrt_names)
    return primal, env


def _hoisted_again(fn, env):
    """hoist_loop_invariants again (the same function when nothing moves)."""
    hoisted = hoist_loop_invariants(fn)
    return fn if hoisted.body == fn.body else hoisted


# -- stages 7-8: differentiate, optimize ---------------------------------------------------------


def differentiate(primal, env, namer, mode: Mode):
    """Stages 7-8: (the optimized derivative function, the functions to print) for `mode`:
    one function (named `mode.name` where given), or a VJP's forward and backward."""
    optimized, functions = _differentiated(primal, env, namer, mode)
    if mode.name is not None and mode.kind != "vjp":
        optimized.name = mode.name
    return optimized, functions


def _differentiated(primal, env, namer, mode):
    if mode.kind == "jvp":
        optimized = optimize(forward_mode(primal, list(mode.wrt), env, namer), facts.shapes(env))
        return optimized, [optimized]
    if mode.kind == "forward over reverse":
        optimized = optimize(
            derivative(primal, mode.wrt[0], env, namer, mode.with_value), facts.shapes(env)
        )
        return optimized, [optimized]
    pullback = mode.kind == "vjp"
    cotangent = namer.fresh("g") if pullback else None
    grad_ir = reverse(
        primal,
        list(mode.wrt),
        env,
        namer,
        mode.value,
        as_tuple=not mode.single,
        cotangent=cotangent,
        has_aux=mode.has_aux,
        memory_plan=mode.memory_plan,
    )
    optimized = optimize(
        grad_ir,
        facts.shapes(env),
        facts.dtypes(env),
        keep_residuals=pullback,
        backend=mode.backend,
        numbers=facts.numbers(env),
        # (under a plan, a top-level loop's rows would keep a row per trip; a segment's
        # hold one segment)
        batch_rows=True if mode.memory_plan is None else "nested",
    )
    if pullback:
        fwd, bwd, _ = split_vjp(optimized, cotangent)
        return optimized, [fwd, bwd]
    return optimized, [optimized]


# -- stage 9: print --------------------------------------------------------------------------------


def source_info(primal, env, optimized, mode: Mode, about: About) -> SourceInfo:
    """What stage 9 prints in the header and needs to know of the values' kinds."""
    forward = frozenset(s.target for s in primal.body if isinstance(s, Assign))
    arrays = frozenset(
        n
        for n, a in env.items()
        if a is not None and isinstance(a.stand_in, np.ndarray) and a.stand_in.ndim > 0
    )
    scalars = frozenset(n for n, a in env.items() if a is not None and type(a.stand_in) is float)
    matrices = frozenset(
        n for n in arrays if env[n].stand_in.ndim <= 2 and env[n].stand_in.size <= DOT_MAX_SIZE
    )
    read = {n for stmt in walk(optimized.body) for n in reads_of(stmt)}
    return SourceInfo(
        about.file or primal.source_file,
        about.label or primal.name,
        about.wrt_names or tuple(primal.params[i] for i in mode.wrt),
        forward,
        arrays,
        scalars,
        matrices,
        tuple(primal.params[i] for i in sorted(about.unwrapped) if primal.params[i] in read),
        "forward-mode derivative (JVP)" if mode.kind == "jvp" else "gradient",
        large=frozenset(n for n in arrays if env[n].stand_in.nbytes >= FREE_MIN_BYTES),
        traced=about.traced if about.traced is not None else _traced_calls(primal),
        hands_over=mode.handing_over,
    )


def _traced_calls(primal) -> str:
    """The calls the source front end left to the trace front end (`ops.traced_call`), said
    in the header: "line 10 (h = cell(h, x)): cell, a Cell object, ..."."""
    said = []
    for stmt in walk(primal.body):
        if not isinstance(stmt, Assign) or not isinstance(stmt.value, Call):
            continue
        value = stmt.value
        if value.op == "traced_call":
            callee = primal.free.get(value.args[0].name)
            what = f"{value.args[0].name}, a {type(callee).__name__} object"
            where = f"line {stmt.loc.line} ({stmt.loc.text.strip()})" if stmt.loc else "a call"
            said.append(f"{where}: {what}")
    if not said:
        return ""
    return (
        "the calls the source front end does not read run as they are, their derivatives "
        "traced when the backward runs: " + "; ".join(dict.fromkeys(said))
    )


# -- stages 3-9, and 1-9 ---------------------------------------------------------------------------


def generate(primal, written, avals, mode: Mode, about: About = About()) -> Generated:
    """Stages 3-9 for one signature: `primal` (stage 2's IR), `written` (stage 1's) and the
    inputs' abstract values `avals` -> the `Generated` module and what is known of it."""
    recorder = trace_state.active()
    if recorder is not None:  # (sourcegrad.hessian(g)(t) run by a traced function; a
        # gradient called there runs with the trace suspended: recorder.gradient_call)
        raise recorder.refused(
            errors.UnsupportedSyntaxError(errors.TRANSFORM_INSIDE, recorder.loc())
        )
    primal, env = specialised(  # 3-6
        primal,
        written,
        avals,
        [primal.params[i] for i in mode.wrt],
        batch_rows=mode.memory_plan is None,
    )
    namer = Namer(reserved=facts.names_in(primal) | template_globals() | {"math"})
    optimized, functions = differentiate(primal, env, namer, mode)  # 7-8
    info = source_info(primal, env, optimized, mode, about)
    source = generate_module(functions, info, BACKENDS[mode.backend])  # 9
    if mode.backend == "dask":
        dask_backend.check_source(source, info.file)
    # what the backward keeps (per trip of a loop too), what it recomputes, and why
    manifest = checkpointing.manifest(
        facts.saved_values(optimized, info.forward_names | set(primal.params), env),
        optimized,
        env,
        checkpointing.known_trip_counts(primal, env),
    )
    gradient = mode.kind in ("gradient", "forward over reverse")
    return Generated(
        source,
        manifest,
        optimized,
        [f.name for f in functions],
        primal,
        env,
        facts.has_control_flow(optimized),
        fresh=() if mode.kind == "vjp" else facts.new_gradients(optimized, mode.with_value),
        users=facts.users_gradients(optimized, mode.with_value) if gradient else None,
        floats=gradient and facts.returns_floats(optimized, env, mode.with_value),
        complex_sites=facts.complex_power_sites(primal, env),
    )


def compile(fn, args, mode: Mode, about: About = About()) -> Generated:  # noqa: A001
    """Stages 1-9 in order, with no cache: the Python function `fn` (or its IR) and example
    arguments `args` (or their abstract values) -> the `Generated` module."""
    written = fn if isinstance(fn, Function) else lower(fn)  # 1
    primal = prepare(written, mode)  # 2
    avals = [a if isinstance(a, AVal) else aval_of(a) for a in args]
    return generate(primal, written, avals, mode, about)  # 3-9


# -- stage 10: load --------------------------------------------------------------------------------


def load(source, module_name, free, names, backend, args=(), label="", tangents=(), file=None):
    """Stage 10: the generated `source` run as a module holding `free` (the function's own
    globals and closure values) -> `(the source that runs, the module, its functions named
    `names`)`. numba: the source rewritten for numba and compiled for `args`' types (and the
    JVP's `tangents`), or the numpy source where numba cannot (`backends.numba_backend`);
    dask: each function wrapped to compute its results at once (`backends.dask_backend`;
    `file`: the user's, named in its errors)."""
    if backend == "numba":
        source, module = numba_backend.load(
            source, module_name, free, names, args, label, tuple(tangents)
        )
    else:
        module = load_module(source, module_name, free)
    loaded = tuple(getattr(module, n) for n in names)
    if backend == "dask":
        loaded = tuple(dask_backend.computing(f, source, file) for f in loaded)
    return source, module, loaded
