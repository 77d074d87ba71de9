"""A gradient's compiling step: from a signature to loaded generated code.

`Compiling` is the part of `Gradient` (`sourcegrad.api.gradient`) that runs the compiler's
pipeline (`sourcegrad.compiler`: its stages are listed and run in `compiler.pipeline`) for one
input signature, with the caches between its stages: `ir` lowers the function (stage 1, once
per function, or per value of its int and function arguments; `_lowered`: the trace front
end where the source front end refuses), `compile` prepares it (stage 2), looks for the
signature's template in memory and on disk, and on a miss has the compiler generate it
(stages 3-9, for the `Mode` this gradient asks: `_mode`), and `_instance` loads the printed
module bound to the function's own globals and closure values (stage 10). Takes the call's
arguments; returns a `memory_caches.Compiled`, cached per signature and, as a template, per code
(`sourcegrad.api.memory_caches`) and on disk (`sourcegrad.cache`).

A mixin, as the front end's lowerer is: what it reads of the gradient (`fn`, `wrt`,
`inner`, `pullback`, `forward_mode`, `backend_for`, ...) is set by `Gradient.__init__`.

Why one module: it is one step of `Gradient`, the pipeline run for a signature with the
caches between its stages, and its parts read the same attributes of the gradient.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import cache, compiler, errors
from ..compiler import (
    About,
    Mode,
    aval_of,
    check_dask_inputs,
    function_run_by,
    in_a_library,
    python_data,
    refuse_dask_transform,
    signature_key,
    trace_function,
    updated_parameters,
    walk,
    zero_d_arrays,
)
from ..ops.fingerprint import fingerprint
from . import memory_caches, mutable_defaults, results
from .arguments import check_array_kind, check_differentiable, label_of

# A traced loop whose iterations differ only in how many elements a mask selects (the layers
# LSTM's stable sigmoid) can be rolled for numba (`trace_function(roll_counts=True)`), which
# then compiles the loop: measured on the 2-core machine, the LSTM's first call took 75-126 s
# for a step at 0.87-1.08x its hand-written backward, where unrolled it runs the numpy code
# after a 4.5 s first call at ~1.1-1.2x. Two thirds of it is the one rolled function (LLVM's
# time grows faster than a function's array expressions), not the 88 helper specialisations:
# docs/guide/numba.md. A first call of minutes is not what a jit promises, so it is off until
# numba compiles it in seconds.
ROLL_MASK_COUNTS_FOR_NUMBA = False


class Compiling:
    """The compiling methods of `Gradient` (see the module docstring)."""

    # what the compiling step reads of its gradient (set by `Gradient.__init__` and kinds)
    fn: Callable[..., Any]
    wrt: tuple[int, ...]
    inner: Any  # the inner gradient of a gradient of a gradient, or None
    with_value: bool
    value_asked: bool
    has_aux: bool
    memory_plan: Any
    pullback: bool
    forward_mode: bool
    reads_zero_d_as_scalars: bool
    _params: list
    _single: bool
    _lock: Any
    _cache: dict
    _last: Any
    _cached: Callable[..., Any]
    _flattened: Callable[..., Any]
    _has_trees: Callable[..., bool]
    _param_label: Callable[[int], str]
    _wrt_names: Callable[[], tuple]
    backend_for: Callable[[Sequence[Any]], str]
    _traces: dict
    traces_allowed: bool
    reads_source: bool
    hands_over: bool  # a VJP whose backward frees its residuals (gradient.HandingVJP)

    def _finisher(self, args, generated=None, unread=False):
        """How to give this signature's gradients their inputs' types (cheap for floats), or
        None when the generated code returns Python floats for Python float inputs
        (`generated`: what the compiler knows of the code; None for code from the disk)."""
        if (
            generated is not None
            and all(type(args[i]) is float for i in self.wrt)
            and generated.floats
        ):
            return None
        if all(type(args[i]) is float for i in self.wrt):  # the common scalar case, made cheap
            return (
                (lambda g, args: float(g))
                if self._single
                else (lambda grads, args: tuple(map(float, grads)))
            )
        converters = []
        # (`unread`: code from the disk cache, whose IR is not at hand: any may be the user's)
        users = (
            generated.users if generated is not None else (True,) * len(self.wrt) if unread else ()
        )
        for k, i in enumerate(self.wrt):
            x = args[i]
            if type(x) is float:
                converters.append(lambda g, args: float(g))
            elif isinstance(x, np.generic) or type(x) is np.ndarray and x.ndim == 0:
                # (a 0-d array's gradient is a numpy scalar, as numpy's ufuncs give for one)
                converters.append(lambda g, args, t=x.dtype.type: t(g))
            elif k < len(users) and users[k]:
                converters.append(results.copied_like_input(i))
            elif type(x) is np.ndarray:
                converters.append(results.array_finisher(i, x.shape, x.dtype))
            else:
                converters.append(lambda g, args, i=i: results.like_input(g, args[i], args))
        if self._single:
            return converters[0]
        return lambda grads, args: results.distinct(
            tuple(c(g, args) for c, g in zip(converters, grads))
        )

    # -- compiling -----------------------------------------------------------------------------

    def ir(self, args: Optional[Sequence[Any]] = None) -> Any:
        """The function's IR (independent of shapes, so lowered once per function).

        For a gradient of a gradient, the inner gradient's generated function (for these
        arguments' signature) is what gets differentiated: its source is ordinary Python.
        """
        if self.inner is not None:
            inner = self.inner.compile(args, to_transform=True)
            # forward mode over generated code is fine with loops (the stack is a list it
            # carries tangents through); reverse over reverse is not written for them yet
            if (
                not self.forward_mode
                and inner.control_flow
                and not self._by_forward_mode(args, inner.control_flow)
            ):
                raise errors.SourcegradError(
                    f"the gradient of {label_of(self.inner.fn)} has loops or branches, and "
                    "reverse mode over its saved-value stack is not implemented: with respect "
                    "to an array, this derivative is computed column by column (one forward "
                    "sweep per element) and has no generated source of its own. Call it, or "
                    "use sourcegrad.hessian / sourcegrad.hvp"
                )
            return compiler.lower(inner.fn)
        code = memory_caches.code_of(self.fn)
        by_value = memory_caches.of_function(memory_caches.BY_VALUE, self.fn)
        if by_value is not None and by_value[0] is code:
            return memory_caches.lowered_for_values(by_value[1], self.fn, self._params, args)
        if args is not None and any(memory_caches.is_function(a) for a in args):
            # a function argument is inlined: IR per function (the key holds it too)
            return memory_caches.lowered_for_values({}, self.fn, self._params, args)
        known = memory_caches.of_function(memory_caches.IR, self.fn)
        if known is None or known[0] is not code:
            try:
                known = (code, memory_caches.lowered(self.fn))
            except errors.RecursionDepthError:
                if not memory_caches.static_ints(self._params, args):
                    raise
                by_value = (code, {})  # its recursion unrolls for its int arguments' values
                try:
                    memory_caches.BY_VALUE[self.fn] = by_value
                except TypeError:
                    pass
                return memory_caches.lowered_for_values(by_value[1], self.fn, self._params, args)
            try:
                memory_caches.IR[self.fn] = known
            except TypeError:
                pass
        return known[1]

    @memory_caches.collector_paused
    def compile(
        self, args: Sequence[Any], key: Optional[tuple] = None, to_transform: bool = False
    ) -> memory_caches.Compiled:
        """Generate, load and cache the gradient for the signature of `args`.

        `to_transform`: the code is for a higher-order transformation to read, so 0-d
        arrays are not read as numpy scalars (`x[()]` is an index it would differentiate)."""
        if self._has_trees(args, to_transform):
            flat, leaves, _ = self._flattened(args)
            self._last = flat.compile(tuple(leaves), None, to_transform)
            return self._last
        key = signature_key(args) if key is None else key
        to_transform = to_transform and bool(zero_d_arrays(args))
        if to_transform:
            key = key + ("to transform",)
        with self._lock:
            if not memory_caches.still_valid(self.fn):
                memory_caches.forget(self.fn)
            cached = self._cached(key)
            if cached is not None:
                self._last = cached
                return cached
            self._check_arguments(args, to_transform)
            memory_caches.counted_compile()
            try:
                return self._compiled_anew(args, key, to_transform)
            except errors.WritingCallError as exc:
                # `np.copyto(a, v)` of a differentiated a: no rule, but the trace records it
                # as a store (found only after lowering: which values carry a gradient)
                if self._traces.get(key) is not None or not self._may_trace():
                    raise
                return self._compiled_anew(args, key, to_transform, traced_because=exc)

    def _may_trace(self) -> bool:
        return self.inner is None and self.traces_allowed

    def _compiled_anew(self, args, key, to_transform, traced_because=None):
        """Stages 1-9 for the signature of `args` (the source front end's IR, or a trace's
        where it refuses the function or `traced_because` says why), through the caches."""
        if traced_because is None:
            written, trace = self._lowered(args)  # stage 1
        else:
            written, trace = self._traced(args, traced_because)
        self._traces[key] = trace
        primal = compiler.prepare(written, self._mode(args, decided=False), trace is not None)  # 2
        if self.inner is None:  # (a default array or list changed in place: refused)
            mutable_defaults.check(self.fn, updated_parameters(primal))
        disk_key, identities = self._disk_key(primal, args, key, to_transform)
        # (values keyed by identity are kept by the template, so their ids stay theirs)
        template_key = (disk_key, tuple(map(id, identities)))
        template = memory_caches.template(template_key)
        # (a disk entry holds no complex_power_sites: such code is compiled here)
        on_disk = (
            cache.directory()
            and not identities
            and not compiler.may_power_python_numbers(primal, args)
        )
        if template is None and on_disk:
            template = self._from_disk(cache.load(disk_key), args)
            if template is not None:
                try:  # (authentic, but made by code that differs: any fault, a compile)
                    compiled = self._instance(template, primal, key, args)
                except Exception as exc:
                    cache.fault("entry unusable", f"an entry could not be loaded ({exc!r})")
                else:
                    memory_caches.remember(template_key, template)
                    return compiled
                template = None
        if template is not None:
            return self._instance(template, primal, key, args)
        template, generated = self._generated(
            primal, written, trace, args, to_transform, identities
        )
        memory_caches.remember(template_key, template)
        if on_disk:
            cache.store(
                disk_key,
                generated.source,
                generated.manifest,
                generated.names,
                template.control_flow,
            )
        return self._instance(template, generated.primal, key, args)

    def _check_arguments(self, args, to_transform):
        """As many arguments as parameters, the ones differentiated differentiable."""
        if len(args) != len(self._params):
            raise TypeError(
                f"{label_of(self.fn)}() takes {len(self._params)} arguments, got {len(args)}"
            )
        for i, arg in enumerate(args):
            check_array_kind(self._param_label(i), arg)
        for i in self.wrt:
            check_differentiable(self._param_label(i), args[i], complex_ok=not self.forward_mode)
        if self.backend_for(args) == "dask":
            self._check_dask(args, to_transform)

    def _generated(self, primal, written, trace, args, to_transform, identities):
        """(the template, what stages 3-9 generated) for the signature of `args`."""
        # a 0-d array is differentiated as the numpy scalar it holds (read once with
        # x[()]): numpy scalar arithmetic costs ~30 ns an operation, a 0-d array's ~250
        unwrapped = set() if to_transform else self._unwrappable(primal, args)
        avals = [aval_of(a[()] if i in unwrapped else a) for i, a in enumerate(args)]
        base = self
        while base.inner is not None:
            base = base.inner
        about = About(
            _source_file(base.fn),
            label_of(self.fn)
            if self.inner is None
            else f"{primal.name} (the generated gradient of {label_of(base.fn)})",
            self._wrt_names(),
            frozenset(unwrapped),
            trace.why if trace is not None else None,
        )
        generated = compiler.generate(
            primal, written, avals, self._mode(args, primal), about
        )  # 3-9
        finish = (
            self._finisher(args, generated)
            if not self.pullback and not self.forward_mode
            else self._finisher(args)
        )
        # (the template keeps no value of this function's: the IR's free values and
        # dependencies are this function's globals and closure cells)
        template = memory_caches.Template(
            generated.source,
            generated.ir.name,
            generated.names,
            generated.manifest,
            finish,
            replace(generated.ir, free={}, dependencies=[]),
            generated.fresh,
            generated.control_flow,
            identities,
            generated.complex_sites,
        )
        return template, generated

    def _mode(self, args, primal=None, decided=True) -> Mode:
        """What this gradient asks the compiler to derive, for the signature of `args` (and
        the function's IR `primal`). `decided=False`: before its caches are asked, without
        deciding forward over reverse (which compiles the inner gradient)."""
        return Mode(
            self.wrt,
            "vjp"
            if self.pullback
            else "jvp"
            if self.forward_mode
            else "forward over reverse"
            if decided and self._by_forward_mode(args)
            else "gradient",
            self._single,
            self.value_asked,
            self.has_aux,
            self.memory_plan,
            self.backend_for(args),
            None if primal is None else self._function_name(primal),
            self.hands_over,
        )

    def _function_name(self, primal) -> Optional[str]:
        """The generated function's name, where the compiler's default will not do."""
        return None

    def _unwrappable(self, primal, args) -> set:
        """Positions of the 0-d numpy arrays the generated code may read as numpy scalars:
        for a plain gradient whose function never indexes, stores into, updates in place
        or calls methods of any value (where a numpy scalar and a 0-d array differ)."""
        if (
            not self.reads_zero_d_as_scalars
            or self.inner is not None
            or self.backend_for(args) not in ("numpy", "numba")
        ):
            return set()
        positions = zero_d_arrays(args)
        if not positions or any(compiler.differs_for_scalars(s) for s in walk(primal.body)):
            return set()
        return positions

    def _disk_key(self, primal, args, signature, to_transform=False):
        """Everything the generated code depends on, as stable text (see sourcegrad.cache),
        and the free values that only their identity can stand for (not arrays: a list's
        length, say, may have shaped the code), or () where there are none."""
        free, identities = [], []
        for n, v in sorted(primal.free.items()):
            if type(v) is np.ndarray or hasattr(v, "__cuda_array_interface__"):
                free.append((n, repr(signature_key([v]))))
            elif isinstance(v, (dict, list)) and python_data(v):
                # (a config dict of numbers: its items may be inlined, so by value; the same
                # dict changed in place is another key)
                free.append((n, f"data {v!r}"))
            else:
                free.append((n, "object"))
                identities.append(v)
        text = cache.key_of(
            type(self).__name__,
            self.wrt,
            self._single,
            (self.value_asked, self.has_aux),
            self.backend_for(args),
            repr(signature),
            to_transform,
            primal.name,
            primal.params,
            repr(primal.body),
            sorted(primal.user_names),
            free,
            # (the rules the code uses, users' included: one edited between runs is a new key)
            fingerprint(compiler.ops_called(primal)),
            *(() if self.memory_plan is None else (repr(self.memory_plan),)),
        )
        return text, tuple(identities)

    def _from_disk(self, hit, args):
        """The template of a disk entry (None for none): the generated code and what the
        compiler knew of it; without the IR, the finish is the general one."""
        if hit is None:
            return None
        return memory_caches.Template(
            hit.source,
            hit.names[0],
            hit.names,
            hit.saved,
            self._finisher(args, unread=True),
            None,
            (),
            hit.control_flow,
            (),
        )

    def _instance(self, template, primal, key, args):
        """The template loaded with `primal`'s free values (this function's own globals and
        closure values, read by the generated code as module globals), cached for `key`;
        for the numba backend, compiled by numba for `args`' types where it can be. Dask
        code is wrapped to compute its result once (stage 10: `compiler.load`)."""
        source, module, loaded = compiler.load(
            template.source,
            template.module_name,
            primal.free,
            template.names,
            self.backend_for(args),
            args,
            label_of(self.fn),
            # (a JVP takes a tangent per differentiated argument: typed as its primal)
            tuple(args[i] for i in self.wrt) if self.forward_mode else (),
            primal.source_file,
        )
        compiled = memory_caches.Compiled(
            source,
            module,
            loaded if len(loaded) > 1 else loaded[0],
            template.saved,
            template.finish,
            memory_caches.prepared(
                tuple(primal.dependencies) + _frozen_arrays(primal.free, self.backend_for(args))
            ),
            template.ir,
            template.fresh,
            complex_sites=template.complex_sites,
            code=memory_caches.code_of(self.fn),
            control_flow=template.control_flow,
            updated=tuple(
                (primal.params.index(name), loc) for name, loc in updated_parameters(primal).items()
            ),
            handed=self.hands_over and self._mode(args, decided=False).handing_over,
        )
        compiled.trace = self._traces.get(key)
        self._cache[key] = compiled
        self._last = compiled
        return compiled

    def _lowered(self, args):
        """(the function's IR as written, the `Trace` it came from or None): the AST front
        end's, or, where that refuses a Python construct it does not model, a trace of the
        call (`compiler.trace`: Python runs the function on traced values) for these
        arguments' signature (`self._traces`, per signature)."""
        try:
            if self.reads_source or self.inner is not None:
                return self.ir(args), None
            reason = errors.SourcegradError("the trace front end was asked for")
        except _TRACEABLE as exc:
            if not self._may_trace():
                raise
            reason = exc
        return self._traced(args, reason)

    def _traced(self, args, reason):
        """(the IR of a trace of the call, the `Trace`), the source front end having refused
        the function (`reason`, said in the trace's own refusals)."""
        why = _why(reason)
        try:
            trace = trace_function(
                self.fn,
                tuple(args),
                list(self._params),
                set(self.wrt),
                why,
                getattr(self, "_defs", None),
                roll_counts=ROLL_MASK_COUNTS_FOR_NUMBA and self.backend_for(args) == "numba",
            )
        except errors.TraceEscapeError as exc:
            if not _escaped_in_a_library(exc, reason):
                exc.message += f" (sourcegrad traced {label_of(self.fn)} because {why})"
                exc.args = (exc._format(),)
                raise
            # inside a library's code (scipy's odeint given a lambda): the source front
            # end's refusal says what in the user's code to change
            reason.message += (
                f" (running it on traced values, a value carrying a gradient left for plain "
                f"numpy in {exc.loc.file}:{exc.loc.line})"
            )
            reason.args = (reason._format(),)
            raise reason from exc
        except errors.SourcegradError as exc:  # the trace's own refusal: said with why
            exc.message += f" (sourcegrad traced {label_of(self.fn)} because {why})"
            exc.args = (exc._format(),)
            raise
        except Exception as exc:  # Python's error running it: the source front end's refusal
            reason.message += (
                f" (running it on traced values raised {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''})"
            )
            reason.args = (reason._format(),)
            raise reason from exc
        return trace.function, trace

    def _check_dask(self, args, to_transform):
        """Refuse what the Dask backend does not run: other transformations than grad and
        value_and_grad, and Dask arrays of unknown shape."""
        if self.inner is not None or to_transform:
            raise refuse_dask_transform("a gradient of a gradient")
        if self.pullback or self.forward_mode:
            raise refuse_dask_transform("vjp" if self.pullback else "jvp")
        check_dask_inputs(args, self._params)

    def _by_forward_mode(self, args, inner_control_flow=None):
        """Whether this gradient of a gradient is computed forward over reverse: true when the
        inner gradient has loops or branches (reverse over its saved-value stack is not
        written) and this one is with respect to one number, so one forward sweep with the
        tangent 1.0 gives the derivative. grad(grad(grad(f))) repeats it."""
        if self.inner is None or self.pullback or self.forward_mode or not self._single:
            return False
        x = args[self.wrt[0]]
        if not (isinstance(x, (float, int)) or (np.ndim(x) == 0 and hasattr(x, "dtype"))):
            return False
        return (
            inner_control_flow
            if inner_control_flow is not None
            else self.inner.compile(args).control_flow
        )


# The AST front end's refusals of Python it does not model: the call is traced instead
# (`Compiling._lowered`). Not its refusals of what would be wrong either way (complex values,
# numpy's own errors), nor a stale source.
_TRACEABLE = (
    errors.UnsupportedSyntaxError,
    errors.NameResolutionError,
    errors.SourceNotFoundError,
    errors.NoRuleError,
)


def _escaped_in_a_library(escape, reason) -> bool:
    """Did the trace's value escape inside an installed library's code, where the source
    front end had refused a construct of the user's (its refusal is then the one to show)?"""
    loc = getattr(escape, "loc", None)
    return (
        isinstance(reason, _TRACEABLE)
        and loc is not None
        and in_a_library(getattr(loc, "file", None))
    )


def _why(refusal) -> str:
    """Why a function was traced, in one line: the source front end's refusal, located."""
    loc = getattr(refusal, "loc", None)
    where = f"line {loc.line} ({loc.text.strip()})" if loc is not None and loc.line else ""
    message = getattr(refusal, "message", str(refusal)).split(". ")[0].split("; ")[0]
    return (
        f"the source front end stopped at {where}: {message}"
        if where
        else f"the source front end stopped: {message}"
    )


def _source_file(fn):
    """The file a function's code came from, or None (a callable without Python code)."""
    code = getattr(function_run_by(fn), "__code__", None)
    try:
        return inspect.getsourcefile(code) if code is not None else None
    except TypeError:
        return None


def _frozen_arrays(free: dict, backend: str) -> tuple:
    """For numba, which compiles the global arrays a function reads into its machine code as
    constants, a dependency on each free array's contents ("contents": compared on each call,
    `memory_caches.still_bound`): changed in place (`W[0] = 0.5`), the code is compiled again,
    where numba's kept the values it was compiled with. The numpy code reads the array itself."""
    if backend != "numba":
        return ()
    return tuple(
        ("contents", value, name, value.copy())
        for name, value in sorted(free.items())
        if type(value) is np.ndarray
    )
