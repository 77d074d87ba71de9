"""The compiled API: `grad`, `value_and_grad`, `show`, `check_grad`.

`grad(f, wrt=0)` returns a `Gradient`: a callable that, on its first call with
a given input signature (array shapes and dtypes, Python scalar types, static
values), runs the pipeline (its stages are listed in `sourcegrad.pipeline`) and loads
what it prints (`codegen.load`), and caches the loaded function per signature; later
calls go straight to it.
The lowered IR is cached per function, since it does not depend on shapes.

What the caches hold, and for how long:
- per function, held weakly (`_COMPILED`, `_IR`): the lowered IR, keyed on the code
  object it was lowered from (a swapped `__code__` is lowered again; the compiled code
  and its fast entry check it), and the loaded code per signature, bound to that
  function's own global and closure values. They go when the function goes.
- per code (`_templates`, an LRU of `TEMPLATES_KEPT`): the pipeline's product, keyed on
  everything the generated code depends on (`_disk_key`: the lowered body with its
  inlined constants, the signatures of the arrays it reads from globals and closures,
  the input signature, the mode). A new closure of the same code over arrays of the same
  shapes (a `def` per training step over each batch) finds it and only loads it bound to
  its own values: lowering and loading (a few ms) but no differentiation, and nothing of
  an earlier closure is kept. Numbers a closure holds are inlined, so they are part of
  the key; other objects (lists, ...) are keyed by identity and kept by the template.
  The on-disk cache (sourcegrad.cache) holds the same, across processes.
Before a function's source is lowered it is checked to be the code Python runs
(sourcegrad.source_check): a file edited after import is refused, located. The fast
entry checks `fn.__code__ is code` on each call (a function's `__code__` costs ~25-70 ns
to read), so a swapped code object never runs against the old gradient.

Why one module: `Gradient` and its kinds (VJP, JVP, the tree gradient), the caches they
share and the higher-order entry points are one family of objects (dispatch, the disk cache
and the pipeline already live apart); splitting it (gradients, higher order, manifest,
checks) is the redesign's next step (issue 17).
"""

from __future__ import annotations

import functools
import gc
import inspect
import threading
import types
import weakref
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import IO, Any, Callable, Optional, Sequence, TypeVar, Union, overload

import numpy as np

from . import analysis, cache, dask_backend, errors, numba_backend, pipeline, random_draws, trees
from .analysis import aval_of, signature_key
from .codegen import BACKENDS, DOT_MAX_SIZE, SourceInfo, generate_module, load
from .lifetimes import FREE_MIN_BYTES
from .dispatch import fast_entry
from .frontend import function_to_ir
from .ir import (
    Assign,
    Call,
    Const,
    For,
    If,
    Push,
    Return,
    Tup,
    Var,
    While,
    atom_vars,
    reads_of,
    walk,
    writes_of,
)
from .names import Namer
from .optimize import hoist_loop_invariants, makes_new_value, optimize
from .forward import derivative, forward_mode
from .reverse import reverse, split_vjp
from .memory_budget import memory_plan
from . import checkpointing
from .ops import RULES, TEMPLATE_NAMESPACE, rule_for_function
from .source_check import check_current

# what `wrt`/`argnums`/`argnum` take: an argument's index or name, or a tuple of them
Wrt = Union[int, str, Sequence[Union[int, str]]]


@dataclass
class Compiled:
    """One specialisation: the generated source, its module and function, and what it saves."""

    source: str
    module: object
    fn: object
    saved: list
    finish: object = None  # gives the gradients their inputs' types
    # the global and closure values the code was built from, (kind, dict or cell, name,
    # value): it is valid while each is still bound (`_still_bound`), checked per call
    dependencies: tuple = ()
    ir: object = None  # the optimized gradient IR the source was printed from
    fresh: tuple = ()  # per gradient: the generated code makes it a new array
    converters: tuple | None = None  # per gradient, the conversion the fast path applies (or None)
    settled: bool = False  # finish and converters were fitted to a first result
    code: object = None  # the differentiated function's code object it was built from
    control_flow: bool = False  # the generated code has loops or branches


@dataclass
class _Template:
    """What the pipeline made for one `_disk_key` (see the module docstring): loaded once per
    function that needs it. Holds no array of the globals and closure of the function it came
    from (their values are bound per function, `_instance`)."""

    source: str
    module_name: str
    names: list
    saved: list
    finish: object
    ir: object
    fresh: tuple
    control_flow: bool
    kept: tuple  # the free values its key names by identity (see _disk_key)


def _normalize_wrt(fn, wrt):
    params = list(inspect.signature(fn).parameters)
    single = not isinstance(wrt, (tuple, list))
    items = [wrt] if single else list(wrt)
    if not items:
        raise errors.WrtError("wrt is empty; give an argument index, a name, or a tuple of them")
    positions = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise errors.WrtError(f"wrt must be an argument index or name, got {item!r}")
        if isinstance(item, str):
            if item not in params:
                raise errors.WrtError(
                    f"wrt={item!r} names no argument of {fn.__name__}({', '.join(params)})"
                )
            positions.append(params.index(item))
        else:
            if not -len(params) <= item < len(params):
                raise errors.WrtError(
                    f"wrt={item} is out of range: {fn.__name__} takes "
                    f"{len(params)} argument(s) ({', '.join(params)})"
                )
            positions.append(item % len(params))
    if len(set(positions)) != len(positions):
        raise errors.WrtError(f"wrt={wrt!r} names an argument twice")
    return tuple(positions), single


def _check_differentiable(name, value, complex_ok=False):
    """Refuse a `wrt` argument that is not a float (complex too where `complex_ok`: reverse
    mode differentiates complex inputs, with torch's convention: docs/sharp-bits.md)."""
    if complex_ok and (isinstance(value, complex) or np.iscomplexobj(value)):
        return
    if isinstance(value, bool) or isinstance(value, (int, np.integer)):
        raise errors.NonDifferentiableInputError(
            f"argument {name!r} is an integer ({value!r}); gradients are defined for floating-point "
            f"inputs: pass {float(value)!r} or an array of floats"
        )
    dtype = getattr(value, "dtype", None)
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise errors.NonDifferentiableInputError(
            f"argument {name!r} has dtype {dtype}; gradients are defined for floating-point "
            "arrays: convert it with .astype(float)"
        )
    if dtype is None and not isinstance(value, float):
        raise errors.NonDifferentiableInputError(
            f"argument {name!r} is a {type(value).__name__}; sourcegrad differentiates with respect "
            "to floats, numpy floating scalars and floating-point arrays"
        )


def _like_input(g, x, args):
    """Give a gradient its input's type, shape and dtype, in memory of its own.

    Generated code may return an input itself (the gradient of sum(a * b) with
    respect to a is b) or a read-only broadcast view; those are copied.
    """
    if isinstance(x, np.generic):
        return x.dtype.type(g)
    if isinstance(x, float):
        return float(g)
    if dask_backend.is_dask(x):
        return dask_backend.like_input(g, x)
    if _is_cupy(x):
        import cupy  # type: ignore[import-untyped]

        g = cupy.asarray(g, dtype=x.dtype)
        if g.shape != x.shape:
            g = cupy.broadcast_to(g, x.shape)
        return g.copy() if g.base is not None or any(g is a for a in args) else g
    dtype = x.dtype
    if (
        type(g) is np.ndarray
        and g.dtype == dtype
        and g.shape == x.shape
        and g.flags.writeable
        and g.base is None
        and not any(g is a for a in args)
    ):
        return g
    g = np.asarray(g, dtype=dtype)
    if g.shape != x.shape:
        g = np.broadcast_to(g, x.shape)
    if not g.flags.writeable or g.base is not None or any(g is a for a in args):
        g = g.copy()
    return g


# fn -> {(wrt, single, with_value, backend, class name): {signature: Compiled}}, and
# _TEMPLATES_KEY -> the templates (so that replacing or clearing it forgets everything)
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_IR: weakref.WeakKeyDictionary = (
    weakref.WeakKeyDictionary()
)  # fn -> (the code object it was lowered from, its IR)
# fn -> (its code object, {its int arguments' values: its IR}), where it is lowered per value
_BY_VALUE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# fn -> (its code object, {the TreeDefs of its arguments: its IR on their leaves})
_TREE_IR: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.RLock()
TEMPLATES_KEPT = 256


class _TemplatesKey:
    """The key of the templates in _COMPILED (a weakly referenceable object kept alive here)."""


_TEMPLATES_KEY = _TemplatesKey()


def _templates() -> OrderedDict:
    return _COMPILED.setdefault(_TEMPLATES_KEY, OrderedDict())


def _template(key):
    templates = _templates()
    template = templates.get(key)
    if template is not None:
        templates.move_to_end(key)
    return template


def _remember(key, template):
    templates = _templates()
    templates[key] = template
    while len(templates) > TEMPLATES_KEPT:
        templates.popitem(last=False)


def _of_function(table, fn, default=None):
    try:
        return table.get(fn, default)
    except TypeError:  # not weakly referenceable: not kept
        return default


def _compiled_for(fn) -> dict:
    try:
        return _COMPILED.setdefault(fn, {})
    except TypeError:  # not weakly referenceable: this Gradient keeps its own
        return {}


def _code_of(fn):
    """The code object a function (or what it wraps) runs, or None."""
    return getattr(inspect.unwrap(fn), "__code__", None)


_MISSING = object()


def _still_valid(fn) -> bool:
    """False when a global or closure value fn's lowered IR was built from was rebound, or
    its code was replaced."""
    known = _of_function(_IR, fn)
    return known is None or known[0] is _code_of(fn) and _still_bound(known[1].dependencies)


def _still_bound(dependencies) -> bool:
    """Whether each global or closure value of `dependencies` (a Compiled's, an IR's) is
    still bound. Each compiled code checks its own: code built before a rebinding stays
    stale after another gradient of the same function has been rebuilt for the new value."""
    for kind, container, name, value in dependencies:
        if kind == "attribute":  # an attribute of an object (a property makes a new number)
            current = getattr(container, name, _MISSING)
            if current is not value and not (
                type(current) is type(value)
                and isinstance(value, (int, float, str, bool))
                and current == value
            ):
                return False
            continue
        current = (
            container.get(name, _MISSING)
            if kind == "global"
            else getattr(container, "__code__", _MISSING)
            if kind == "code"
            else getattr(getattr(container, name, None), "__func__", _MISSING)
            if kind == "method"
            else _cell_value(container)
        )
        if current is not value:
            return False
    return True


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def _static_ints(params, args) -> dict:
    """The int (and bool) arguments, and function arguments: part of a signature, so code
    is lowered per value (a recursion on an int unrolls; a function passed is inlined)."""
    if args is None:
        return {}
    return {p: a for p, a in zip(params, args) if type(a) in (int, bool) or _is_function(a)}


def _is_function(value) -> bool:
    """A function passed as an argument (a callback such as an ODE's dynamics)."""
    return callable(value) and not hasattr(value, "shape") and not isinstance(value, type)


def _lowered_for_values(by_value, fn, params, args):
    """fn's IR with its int arguments as constants (a recursion on them unrolls)."""
    static = _static_ints(params, args)
    key = tuple(static.items())
    if key not in by_value:
        by_value[key] = _lowered(fn, static)
    return by_value[key]


def _lowered(fn, static=None, structure=None):
    """fn's IR, after checking that its source (and that of each function it inlines) is the
    code Python runs; its dependencies name each inlined function's code, so that code
    replaced later (as autoreload does) makes the compiled code stale. `structure`: the
    TreeDefs of the arguments passed as their leaves (see `_TreeGradient`)."""
    check_current(fn)
    primal = function_to_ir(fn, static, structure) if static or structure else function_to_ir(fn)
    callees = [
        v
        for _, _, _, v in primal.dependencies
        if isinstance(v, types.FunctionType) and rule_for_function(v) is None
    ]
    for callee in callees:
        check_current(callee)
    primal.dependencies = list(primal.dependencies) + [
        ("code", callee, "__code__", callee.__code__) for callee in callees
    ]
    return primal


def _forget(fn):
    """Drop the IR and every compiled gradient of `fn` (its globals or code changed)."""
    for table in (_IR, _BY_VALUE, _TREE_IR):
        try:
            table.pop(fn, None)
        except TypeError:
            pass
    for compiled in _of_function(_COMPILED, fn, {}).values():
        compiled.clear()


def _collector_paused(method):
    """Run `method` with Python's cyclic garbage collector off: compiling makes many small
    objects that live until it ends (IR statements, syntax trees), and the collector's
    passes over all of them took a third of a 2000-statement function's compile time."""

    @functools.wraps(method)
    def paused(*args, **kwargs):
        was_on = gc.isenabled()
        gc.disable()
        try:
            return method(*args, **kwargs)
        finally:
            if was_on:
                gc.enable()

    return paused


class Gradient(staticmethod):
    """A compiled gradient of `fn` (see `grad`).

    Why a staticmethod: a staticmethod's call, in C, hands its arguments straight to the
    function it holds (Python >= 3.10), for ~3-8 ns; a `__call__` written in Python costs
    ~10 ns more, one found through a property (as before) ~25 ns more: a tenth of a
    gradient on Python floats. A Gradient holds the function its next call runs (`_call`,
    see below) and uses nothing else of staticmethod: on a class it is itself (`__get__`),
    its `__wrapped__` is `fn`, its names are fn's.
    """

    # frontend: a call of a Gradient inside differentiated code is `ops.call_gradient`
    _sourcegrad_gradient = True

    def pullback_of_gradient(self, argnum, g, args):
        """The VJP of this gradient function at `args` for the cotangent `g`, with respect to
        its argument `argnum`: for `grad(f)` the Hessian-vector product. The backward of a
        gradient called inside differentiated code (`ops.call_gradient`) calls it, on the
        compiled second-order code (one VJP object per argument, code cached per signature)."""
        pulls = self.__dict__.setdefault("_pullbacks", {})
        if argnum not in pulls:
            pulls[argnum] = VJP(self, argnum, False, self.backend)
        _, pullback = pulls[argnum](*args)
        return pullback(g)

    pullback = False  # VJP: compile a forward and a backward function instead of one
    # (what __init__ sets, as the type checker reads it)
    fn: Callable[..., Any]
    wrt: tuple[int, ...]
    with_value: bool
    _single: bool

    def __init__(
        self,
        fn: Callable[..., Any],
        wrt: Wrt = 0,
        with_value: bool = False,
        backend: str = "auto",
        has_aux: bool = False,
        memory_plan: Any = None,
    ) -> None:
        self.memory_plan = memory_plan  # checkpointing.MemoryPlan: recompute, not save
        self.inner = fn if isinstance(fn, Gradient) else None  # grad(grad(f)): higher order
        if self.inner is not None and (self.inner.with_value or not self.inner._single):
            raise errors.SourcegradError(
                "a higher-order gradient needs an inner gradient with "
                "one wrt argument and no value (grad(grad(f)))"
            )
        if has_aux and (self.inner is not None or self.pullback):
            raise errors.SourcegradError(
                "has_aux=True is supported by grad and value_and_grad "
                "of a Python function (not of a gradient, nor by vjp)"
            )
        if self.inner is None and not isinstance(inspect.unwrap(fn), types.FunctionType):
            raise errors.SourceNotFoundError(
                f"{fn!r} is not a Python function with source; sourcegrad differentiates "
                "functions written in Python (numpy functions are differentiated through "
                "their rules when a Python function calls them)"
            )
        if backend not in BACKENDS and backend != "auto":
            raise errors.SourcegradError(
                f"unknown backend {backend!r}; choose one of auto, {', '.join(BACKENDS)}"
            )
        self.fn = fn
        self._wrt_given = wrt
        self.wrt, self._single = _normalize_wrt(fn, wrt)
        # with has_aux the generated code returns a pair, (aux, grads) or ((value, aux), grads):
        # the value's place holds aux, so everything that reads a (value, grads) pair works
        self.with_value = with_value or has_aux
        self.value_asked = with_value
        self.has_aux = has_aux
        self.backend = backend
        self._params = list(inspect.signature(fn).parameters)
        self._signature = inspect.signature(fn)
        self._defaults = tuple(
            p.default for p in self._signature.parameters.values() if p.default is not p.empty
        )
        # compiled code is shared by every Gradient of the same function, wrt and backend
        with _SHARED_LOCK:
            self._cache = _compiled_for(fn).setdefault(
                (
                    self.wrt,
                    self._single,
                    with_value,
                    backend,
                    type(self).__name__,
                    has_aux,
                    memory_plan,
                ),
                {},
            )
        self._owner = inspect.unwrap(fn)  # whose __code__ the compiled code was built from
        self._lock = _SHARED_LOCK
        self._last: Compiled | None = None
        self._general = self._general_call  # (one bound method, held while it is the call)
        self._entries: dict = {}  # signature key -> (Compiled, its fast path for this Gradient)
        self._column_args = None
        # fn's __name__, __doc__, ...: a Gradient is named as the function it differentiates
        self._names = {
            name: getattr(fn, name) for name in functools.WRAPPER_ASSIGNMENTS if hasattr(fn, name)
        }
        self._call = self._general
        self._missed = None  # the signature that last came to the general path past an entry
        self._flat: dict = {}  # the TreeDefs of tree arguments -> their _TreeGradient

    # -- calling -------------------------------------------------------------------------------

    # `g(...)` calls `g._call`: the general path below until a signature is compiled, then
    # the generated entry of the signature called last (sourcegrad.dispatch), which checks
    # its arguments and hands any other call back to the general path.

    @property
    def _call(self):
        """The function `g(...)` runs: the staticmethod's callable."""
        return self.__func__

    @_call.setter
    def _call(self, function):
        staticmethod.__init__(self, function)
        self.__dict__.update(self._names)  # (which the line above set to the function's)

    @property
    def __wrapped__(self):
        """The differentiated function (inspect.signature and inspect.unwrap follow it)."""
        return self.fn

    def __get__(self, instance, owner=None):
        return self  # on a class, a Gradient is the Gradient (as a plain callable object is)

    # Copied as a function is (itself: its compiled code is shared anyway), pickled as what
    # makes it (fn is pickled by reference, as functions are).
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return type(self), (self.fn, self._wrt_given, self.value_asked, self.backend, self.has_aux)

    def _general_call(self, *args, **kwargs):
        if kwargs or len(args) < len(self._params):  # keywords, or defaults to fill in
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())
        if self._has_trees(args):
            flat, leaves, defs = self._flattened(args)
            result = flat._call(*leaves)
            self._last = flat._last
            return self._unflattened(result, defs)
        key = signature_key(args)
        compiled = self._cached(key)
        if compiled is None:
            if self._by_forward_columns(args):
                return self._forward_columns(args)
            compiled = self.compile(args, key)
        self._last = compiled
        result = compiled.fn(*args)
        if not compiled.settled:
            self._settle(compiled, result, args)
        self._install(self._entry_for(compiled, key, args), key)
        if compiled.finish is None:  # the generated code already returns the inputs' types
            return result
        if self.with_value:
            value, grads = result
            return value, compiled.finish(grads, args)
        return compiled.finish(result, args)

    # -- parameter trees: arguments passed to the generated code as their leaves ----------------

    def _has_trees(self, args, to_transform=False) -> bool:
        wrt = self.wrt
        found = any(trees.needs_flattening(a, i in wrt) for i, a in enumerate(args))
        if found and (self.inner is not None or to_transform):
            _refuse_trees("a gradient of a gradient")
        return found

    def _flattened(self, args):
        """(the _TreeGradient for these arguments' structure, their leaves, the TreeDef of
        each argument or None where it is passed as it is)."""
        leaves, defs = [], []
        for i, a in enumerate(args):
            if trees.needs_flattening(a, i in self.wrt):
                try:
                    part, treedef = trees.flatten(a)
                except TypeError as exc:
                    raise errors.NonDifferentiableInputError(
                        f"argument {self._params[i]!r} of {self.fn.__name__}: {exc}"
                    ) from None
                leaves += part
                defs.append(treedef)
            else:
                leaves.append(a)
                defs.append(None)
        defs = tuple(defs)
        flat = self._flat.get(defs)
        if flat is None:
            flat = self._flat[defs] = _TreeGradient(self, defs)
        return flat, leaves, defs

    def _unflattened(self, result, defs):
        """The leaves' gradients the generated code returned, in the structures of the
        differentiated arguments (and the value or aux as they are)."""
        grads = iter(result[1] if self.with_value else result)
        out = []
        for i in self.wrt:
            treedef = defs[i]
            out.append(
                next(grads)
                if treedef is None
                else treedef.unflatten([next(grads) for _ in range(treedef.num_leaves)])
            )
        gradient = out[0] if self._single else tuple(out)
        return (result[0], gradient) if self.with_value else gradient

    def _param_label(self, i) -> str:
        """Argument `i` as messages name it."""
        return self._params[i]

    def _wrt_names(self) -> tuple:
        """The differentiated arguments, as the generated module's header names them."""
        return tuple(self._params[i] for i in self.wrt)

    def _cached(self, key):
        """The compiled code of key's signature, or None when there is none or it is stale (a
        global or closure value it was built from has been rebound since, or the function's
        code was replaced)."""
        try:
            compiled = self._cache.get(key)
        except TypeError:  # an unhashable argument: a tuple (or list) holding arrays
            raise self._unhashable_argument(key) from None
        if (
            compiled is None
            or (compiled.dependencies and not _still_bound(compiled.dependencies))
            or compiled.code is not None
            and getattr(self._owner, "__code__", None) is not compiled.code
        ):
            return None
        return compiled

    def _unhashable_argument(self, key):
        for name, part in zip(self._params, key):
            try:
                hash(part)
            except TypeError:
                return errors.NonDifferentiableInputError(
                    f"argument {name!r} of {self.fn.__name__} is a tuple holding arrays (or other "
                    "unhashable values): tuples of arrays are not yet supported as arguments, "
                    "differentiated or not; pass the arrays as separate arguments"
                )
        return errors.SourcegradError(f"an argument of {self.fn.__name__} is not hashable")

    def _install(self, entry, key):
        """Make `entry`, key's, what the next calls run: at once when none is installed,
        else when key comes to the general path the second time since the last install.
        Installing costs ~0.5 µs (staticmethod.__init__ copies names), so code alternating
        between two signatures does not reinstall on every call (two calls in three take
        the general path, not every call). A stale entry needs no hurry: it checks its own
        global and closure values and hands its calls here."""
        if self._call is self._general or key == self._missed:
            self._call = entry
            self._missed = None
        else:
            self._missed = key

    def _settle(self, compiled, result, args):
        """Fit the finish to what the generated code returned for this signature (see
        `_fitted_conversions`): done once, for every Gradient sharing the compiled code."""
        compiled.converters = self._fitted_conversions(compiled, result, args)
        if compiled.converters is not None:
            compiled.finish = _converting(compiled.converters, self._single)
        compiled.settled = True

    def _entry_for(self, compiled, key, args):
        """This Gradient's fast path for `compiled`'s signature (built once per signature:
        its misses come back here), or the general path where there is none."""
        known = self._entries.get(key)
        if known is not None and known[0] is compiled:
            return known[1]
        still_bound = functools.partial(_still_bound, compiled.dependencies)
        entry = (
            fast_entry(
                args,
                compiled.fn,
                compiled.finish,
                compiled.converters,
                still_bound if compiled.dependencies else None,
                self.with_value,
                self._single,
                self._general,
                self._defaults,
                compiled.source,
                (self._owner, compiled.code) if compiled.code is not None else None,
            )
            or self._general
        )
        self._entries[key] = (compiled, entry)
        return entry

    def _fitted_conversions(self, compiled, result, args):
        """Per gradient, the conversion it needs (None: none), where the first result shows
        the general finish can be left out; None when it cannot.

        A gradient the generated code makes as a new array (a ufunc, a product, a
        reduction: `compiled.fresh`, known from the code) of the input's shape and dtype
        is returned as it is; a numpy scalar for a 0-d array input only needs wrapping.
        Without loops or branches the same statements run on every call of a signature,
        so what the first call returns, every call returns: the checks are made once.
        """
        if compiled.finish is None or not compiled.fresh:
            return None
        grads = result[1] if self.with_value else result
        grads = (grads,) if self._single else tuple(grads)
        if len(grads) != len(self.wrt):
            return None
        others = [result[0]] if self.with_value else []
        converters = []
        for g, i, fresh in zip(grads, self.wrt, compiled.fresh):
            x = args[i]
            distinct = not any(g is o for o in others) and sum(g is h for h in grads) == 1
            if type(x) is float:
                converters.append(None if type(g) is float and fresh else float)
            elif (
                type(x) is np.ndarray
                and x.ndim == 0
                and fresh
                and (type(g) is x.dtype.type or type(g) is float and x.dtype == np.float64)
            ):
                # np.sin of a 0-d array is a numpy scalar (math.cos of one read as a scalar,
                # a float)
                converters.append(np.asarray)
            elif (
                type(x) is np.ndarray
                and fresh
                and distinct
                and type(g) is np.ndarray
                and g.shape == x.shape
                and g.dtype == x.dtype
                and g.base is None
                and g.flags.writeable
            ):
                converters.append(None)
            else:
                return None
            others.append(g)
        return tuple(converters)

    def _finisher(self, args, optimized=None, env=None, unread=False):
        """How to give this signature's gradients their inputs' types (cheap for floats), or
        None when the generated code returns Python floats for Python float inputs."""
        if (
            optimized is not None
            and all(type(args[i]) is float for i in self.wrt)
            and not _has_control_flow(optimized)
        ):  # (a branch could return a numpy float)
            returned = optimized.body[-1].value
            grads = returned.items[1] if self.with_value else returned
            atoms = grads.items if isinstance(grads, Tup) else (grads,)
            if all(
                type(a.value) is float
                if isinstance(a, Const)
                else env.get(a.name) is not None and type(env[a.name].stand_in) is float
                for a in atoms
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
            _users_gradients(optimized, self.with_value)
            if optimized is not None
            else (True,) * len(self.wrt)
            if unread
            else ()
        )
        for k, i in enumerate(self.wrt):
            x = args[i]
            if k < len(users) and users[k] and not isinstance(x, (float, np.generic)):
                converters.append(_copied_like_input(i))
            elif type(x) is float:
                converters.append(lambda g, args: float(g))
            elif isinstance(x, np.generic):
                converters.append(lambda g, args, t=x.dtype.type: t(g))
            elif type(x) is np.ndarray:
                converters.append(_array_finisher(i, x.shape, x.dtype))
            else:
                converters.append(lambda g, args, i=i: _like_input(g, args[i], args))
        if self._single:
            return converters[0]
        return lambda grads, args: _distinct(tuple(c(g, args) for c, g in zip(converters, grads)))

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
                not isinstance(self, JVP)
                and inner.control_flow
                and not self._by_forward_mode(args, inner.control_flow)
            ):
                raise errors.SourcegradError(
                    f"the gradient of {self.inner.fn.__qualname__} has loops or branches, and "
                    "reverse mode over its saved-value stack is not implemented: with respect "
                    "to an array, this derivative is computed column by column (one forward "
                    "sweep per element) and has no generated source of its own. Call it, or "
                    "use sourcegrad.hessian / sourcegrad.hvp"
                )
            return function_to_ir(inner.fn)
        code = _code_of(self.fn)
        by_value = _of_function(_BY_VALUE, self.fn)
        if by_value is not None and by_value[0] is code:
            return _lowered_for_values(by_value[1], self.fn, self._params, args)
        if args is not None and any(_is_function(a) for a in args):
            # a function argument is inlined: IR per function (the key holds it too)
            return _lowered_for_values({}, self.fn, self._params, args)
        known = _of_function(_IR, self.fn)
        if known is None or known[0] is not code:
            try:
                known = (code, _lowered(self.fn))
            except errors.RecursionDepthError:
                if not _static_ints(self._params, args):
                    raise
                by_value = (code, {})  # its recursion unrolls for its int arguments' values
                try:
                    _BY_VALUE[self.fn] = by_value
                except TypeError:
                    pass
                return _lowered_for_values(by_value[1], self.fn, self._params, args)
            try:
                _IR[self.fn] = known
            except TypeError:
                pass
        return known[1]

    @_collector_paused
    def compile(
        self, args: Sequence[Any], key: Optional[tuple] = None, to_transform: bool = False
    ) -> Compiled:
        """Generate, load and cache the gradient for the signature of `args`.

        `to_transform`: the code is for a higher-order transformation to read, so 0-d
        arrays are not read as numpy scalars (`x[()]` is an index it would differentiate)."""
        if self._has_trees(args, to_transform):
            flat, leaves, _ = self._flattened(args)
            self._last = flat.compile(tuple(leaves), None, to_transform)
            return self._last
        key = signature_key(args) if key is None else key
        to_transform = to_transform and bool(_zero_d_arrays(args))
        if to_transform:
            key = key + ("to transform",)
        with self._lock:
            if not _still_valid(self.fn):
                _forget(self.fn)
            cached = self._cached(key)
            if cached is not None:
                self._last = cached
                return cached
            if len(args) != len(self._params):
                raise TypeError(
                    f"{self.fn.__name__}() takes {len(self._params)} arguments, got {len(args)}"
                )
            for i in self.wrt:
                _check_differentiable(
                    self._param_label(i), args[i], complex_ok=not isinstance(self, JVP)
                )
            if self.backend_for(args) == "dask":
                self._check_dask(args, to_transform)
            primal = hoist_loop_invariants(self.ir(args))
            if self.has_aux:
                primal = _output_and_aux(primal)
            elif isinstance(primal.body[-1].value, Tup):
                ret = primal.body[-1]
                raise errors.NonScalarOutputError(
                    f"{'vjp' if self.pullback else 'jvp' if isinstance(self, JVP) else 'grad'}"
                    " needs a function with one output, "
                    f"but {primal.name} returns a tuple of {len(ret.value.items)} values; if "
                    "the others are auxiliary outputs, pass has_aux=True (output first)",
                    ret.loc,
                )
            disk_key, identities = self._disk_key(primal, args, key, to_transform)
            # (values keyed by identity are kept by the template, so their ids stay theirs)
            template_key = (disk_key, tuple(map(id, identities)))
            template = _template(template_key)
            if template is None and cache.directory() and not identities:
                template = self._from_disk(cache.load(disk_key), args)
                if template is not None:
                    try:  # (authentic, but made by code that differs: any fault, a compile)
                        compiled = self._instance(template, primal, key, args)
                    except Exception as exc:
                        cache.fault("entry unusable", f"an entry could not be loaded ({exc!r})")
                    else:
                        _remember(template_key, template)
                        return compiled
                    template = None
            if template is not None:
                return self._instance(template, primal, key, args)
            # a 0-d array is differentiated as the numpy scalar it holds (read once with
            # x[()]): numpy scalar arithmetic costs ~30 ns an operation, a 0-d array's ~250
            unwrapped = set() if to_transform else self._unwrappable(primal, args)
            avals = [aval_of(a[()] if i in unwrapped else a) for i, a in enumerate(args)]
            primal, env = pipeline.specialised(
                primal,
                self.ir(args),
                avals,
                [primal.params[i] for i in self.wrt],
                batch_rows=self.memory_plan is None,
            )
            namer = Namer(reserved=_names_in(primal) | set(TEMPLATE_NAMESPACE) | {"math"})
            optimized, functions = self._differentiate(primal, env, namer, args)
            forward = frozenset(s.target for s in primal.body if isinstance(s, Assign))
            base = self
            while base.inner is not None:
                base = base.inner
            label = (
                self.fn.__qualname__
                if self.inner is None
                else f"{primal.name} (the generated gradient of {base.fn.__qualname__})"
            )
            arrays = frozenset(
                n
                for n, a in env.items()
                if a is not None and isinstance(a.stand_in, np.ndarray) and a.stand_in.ndim > 0
            )
            scalars = frozenset(
                n for n, a in env.items() if a is not None and type(a.stand_in) is float
            )
            matrices = frozenset(
                n
                for n in arrays
                if env[n].stand_in.ndim <= 2 and env[n].stand_in.size <= DOT_MAX_SIZE
            )
            read = {n for stmt in walk(optimized.body) for n in reads_of(stmt)}
            info = SourceInfo(
                inspect.getsourcefile(base.fn) or primal.source_file,
                label,
                self._wrt_names(),
                forward,
                arrays,
                scalars,
                matrices,
                tuple(primal.params[i] for i in sorted(unwrapped) if primal.params[i] in read),
                "forward-mode derivative (JVP)" if isinstance(self, JVP) else "gradient",
                large=frozenset(n for n in arrays if env[n].stand_in.nbytes >= FREE_MIN_BYTES),
            )
            source = generate_module(functions, info, BACKENDS[self.backend_for(args)])
            if self.backend_for(args) == "dask":
                dask_backend.check_source(source, info.file)
            saved = _saved_values(optimized, forward | set(primal.params), env)
            if self.memory_plan is not None:  # what was saved, what recomputed, and why
                saved = checkpointing.manifest(saved, optimized, env)
            finish = (
                self._finisher(args, optimized, env)
                if not self.pullback and not isinstance(self, JVP)
                else self._finisher(args)
            )
            names = [f.name for f in functions]
            # (the template keeps no value of this function's: the IR's free values and
            # dependencies are this function's globals and closure cells)
            template = _Template(
                source,
                optimized.name,
                names,
                saved,
                finish,
                replace(optimized, free={}, dependencies=[]),
                () if self.pullback else _new_gradients(optimized, self.with_value),
                _has_control_flow(optimized),
                identities,
            )
            _remember(template_key, template)
            if cache.directory() and not identities:
                cache.store(disk_key, source, saved, names, template.control_flow)
            return self._instance(template, primal, key, args)

    def _unwrappable(self, primal, args) -> set:
        """Positions of the 0-d numpy arrays the generated code may read as numpy scalars:
        for a plain gradient whose function never indexes, stores into, updates in place
        or calls methods of any value (where a numpy scalar and a 0-d array differ)."""
        if (
            type(self) is not Gradient
            or self.inner is not None
            or self.backend_for(args) not in ("numpy", "numba")
        ):
            return set()
        positions = _zero_d_arrays(args)
        if not positions or any(_differs_for_scalars(s) for s in walk(primal.body)):
            return set()
        return positions

    def _disk_key(self, primal, args, signature, to_transform=False):
        """Everything the generated code depends on, as stable text (see sourcegrad.cache),
        and the free values that only their identity can stand for (not arrays: a list's
        length, say, may have shaped the code), or () where there are none."""
        free, identities = [], []
        for n, v in sorted(primal.free.items()):
            if type(v) is np.ndarray or hasattr(v, "__cuda_array_interface__"):
                free.append((n, repr(analysis.signature_key([v]))))
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
            *(() if self.memory_plan is None else (repr(self.memory_plan),)),
        )
        return text, tuple(identities)

    def _from_disk(self, hit, args):
        """The template of a disk entry (None for none): the generated code and what the
        compiler knew of it; without the IR, the finish is the general one."""
        if hit is None:
            return None
        return _Template(
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
        code is wrapped to compute its result once (`dask_backend.computing`)."""
        backend = self.backend_for(args)
        if backend == "numba":
            source, module = numba_backend.load(
                template.source,
                template.module_name,
                primal.free,
                template.names,
                args,
                self.fn.__qualname__,
            )
        else:
            source = template.source
            module = load(source, template.module_name, primal.free)
        loaded = tuple(getattr(module, n) for n in template.names)
        if backend == "dask":
            loaded = tuple(
                dask_backend.computing(f, template.source, primal.source_file) for f in loaded
            )
        compiled = Compiled(
            source,
            module,
            loaded if len(loaded) > 1 else loaded[0],
            template.saved,
            template.finish,
            tuple(primal.dependencies),
            template.ir,
            template.fresh,
            code=_code_of(self.fn),
            control_flow=template.control_flow,
        )
        self._cache[key] = compiled
        self._last = compiled
        return compiled

    def _check_dask(self, args, to_transform):
        """Refuse what the Dask backend does not run: other transformations than grad and
        value_and_grad, and Dask arrays of unknown shape."""
        if self.inner is not None or to_transform:
            raise dask_backend.refuse_transform("a gradient of a gradient")
        if self.pullback or isinstance(self, JVP):
            raise dask_backend.refuse_transform("vjp" if self.pullback else "jvp")
        dask_backend.check_inputs(args, self._params)

    def _by_forward_mode(self, args, inner_control_flow=None):
        """Whether this gradient of a gradient is computed forward over reverse: true when the
        inner gradient has loops or branches (reverse over its saved-value stack is not
        written) and this one is with respect to one number, so one forward sweep with the
        tangent 1.0 gives the derivative. grad(grad(grad(f))) repeats it."""
        if self.inner is None or self.pullback or isinstance(self, JVP) or not self._single:
            return False
        x = args[self.wrt[0]]
        if not (isinstance(x, (float, int)) or (np.ndim(x) == 0 and hasattr(x, "dtype"))):
            return False
        return (
            inner_control_flow
            if inner_control_flow is not None
            else self.inner.compile(args).control_flow
        )

    def _by_forward_columns(self, args):
        """A gradient of a gradient with loops or branches with respect to an array (say
        grad(grad(f, wrt=0), wrt=1)): reverse over the saved-value stack is not written, so
        the result is computed column by column, one forward sweep per element (as
        jacobian(..., mode="fwd") does). Correct, and n sweeps for n elements."""
        if self.inner is None or self.pullback or isinstance(self, JVP):
            return False
        if not self.inner.compile(args).control_flow:
            return False
        return not self._by_forward_mode(args, True)

    def _forward_columns(self, args):
        self._column_args = args  # so that .source can say why there is none
        grads = tuple(
            _like_input(_forward_jacobian(self.inner, i, self.backend)(*args), args[i], args)
            for i in self.wrt
        )
        result = grads[0] if self._single else grads
        return (self.inner(*args), result) if self.with_value else result

    def _differentiate(self, primal, env, namer, args):
        """(the optimized gradient function, the functions to generate) for this mode."""
        if self._by_forward_mode(args):
            optimized = optimize(
                derivative(primal, self.wrt[0], env, namer, self.with_value), _shapes(env)
            )
            return optimized, [optimized]
        cotangent = namer.fresh("g") if self.pullback else None
        grad_ir = reverse(
            primal,
            list(self.wrt),
            env,
            namer,
            self.value_asked,
            as_tuple=not self._single,
            cotangent=cotangent,
            has_aux=self.has_aux,
            memory_plan=self.memory_plan,
        )
        optimized = optimize(
            grad_ir,
            _shapes(env),
            _dtypes(env),
            keep_residuals=self.pullback,
            backend=self.backend_for(args),
            numbers=_numbers(env),
        )
        if self.pullback:
            fwd, bwd, _ = split_vjp(optimized, cotangent)
            return optimized, [fwd, bwd]
        return optimized, [optimized]

    def backend_for(self, args: Sequence[Any]) -> str:
        """The backend of this signature: the one asked for, or (auto) CuPy for CuPy arrays,
        Dask for Dask arrays."""
        if self.backend != "auto":
            return self.backend
        return (
            "cupy"
            if any(_is_cupy(a) for a in args)
            else "dask"
            if any(dask_backend.is_dask(a) for a in args)
            else "numpy"
        )

    @property
    def source(self) -> str:
        """The generated module's text for the most recent input signature."""
        if self._last is None and self._column_args is not None:
            self.ir(self._column_args)  # raises: computed column by column, no source
        if self._last is None:
            raise errors.SourcegradError(
                f"the gradient of {self.fn.__name__} is generated for the shapes of its inputs; "
                "call it once first, or use sourcegrad.show(f, *example_args)"
            )
        return self._last.source

    @property
    def saved(self) -> list:
        """What the backward keeps from the forward: name, shape, dtype, bytes."""
        if self._last is None:
            raise errors.SourcegradError("call the gradient once first")
        return self._last.saved

    def __repr__(self) -> str:
        return f"<sourcegrad gradient of {self.fn.__qualname__} wrt {self.wrt}>"

    def _repr_markdown_(self):
        """In Jupyter: the generated source, highlighted, and a table of what is saved."""
        from .notebook import gradient_markdown

        return gradient_markdown(self)


def _output_and_aux(fn):
    """fn (returning `(output, aux)`) with its return a `Tup` of the two: a pair returned
    from a variable (several returns) is read back by item, as a value with an adjoint."""
    ret = fn.body[-1]
    value = ret.value
    if isinstance(value, Tup) and len(value.items) == 2:
        return fn
    if not isinstance(value, Var):
        raise errors.SourcegradError(
            f"has_aux=True: {fn.name} must return a pair (output, aux), but returns "
            f"{getattr(value, 'value', value)!r}",
            ret.loc,
        )
    names = Namer(reserved=_names_in(fn))
    output, aux = names.fresh("output"), names.fresh("aux")
    body = fn.body[:-1] + [
        Assign(output, Call("getitem", (value, Const(0))), ret.loc),
        Assign(aux, Call("getitem", (value, Const(1))), ret.loc),
        Return(Tup((Var(output), Var(aux))), ret.loc),
    ]
    return replace(fn, body=body)


def _refuse_trees(what):
    raise errors.NonDifferentiableInputError(
        f"{what} takes arrays and numbers as the differentiated arguments; parameter trees "
        "(lists, tuples, dicts, NamedTuples, dataclasses of arrays) are supported by grad, "
        "value_and_grad and grad_and_aux: pass the leaves as separate arguments"
    )


def _no_trees(gradient, args, what):
    """Parameter trees are not taken by `what` (vjp, jvp): refused where one is
    differentiated; other containers are passed as they are (as before trees)."""
    if any(trees.kind_of(args[i]) != trees.LEAF for i in gradient.wrt if i < len(args)):
        _refuse_trees(what)


class _TreeGradient(Gradient):
    """The gradient of `parent.fn` for one structure of its tree arguments (lists, tuples,
    dicts, NamedTuples, dataclasses: `sourcegrad.trees`), whose parameters are their leaves.

    The front end binds each tree argument to compile-time containers of its leaves, so
    `params["W1"]`, `for W, b in params` and unpacking cost no code and every leaf has its
    own adjoint (`dparams_W1`); the parent flattens the arguments of each call, calls this
    gradient (whose fast entry checks the leaves as any signature's does), and rebuilds the
    gradients in the arguments' structures. Its compiled code is cached under a key holding
    the structures (`TreeDef`s are hashable), and its IR per function and structures."""

    def __init__(self, parent, defs):
        super().__init__(
            parent.fn, parent._wrt_given, parent.value_asked, parent.backend, parent.has_aux
        )
        names, paths, wrt = [], [], []
        for i, (param, treedef) in enumerate(zip(parent._params, defs)):
            leaf_names = [param] if treedef is None else treedef.leaf_names(param)
            if i in parent.wrt:
                if not leaf_names:
                    raise errors.WrtError(
                        f"argument {param!r} of {parent.fn.__name__} holds no "
                        "array or float to differentiate"
                    )
                wrt += range(len(names), len(names) + len(leaf_names))
            paths += [param] if treedef is None else treedef.paths(param)
            names += leaf_names
        self._defs = defs
        self._arguments = tuple(parent._params[i] for i in parent.wrt)
        self._structure = {p: d for p, d in zip(parent._params, defs) if d is not None}
        self._params, self._paths = names, paths
        self.wrt, self._single = tuple(wrt), False
        self._signature, self._defaults = None, ()  # (called with every leaf, by position)
        with _SHARED_LOCK:
            self._cache = _compiled_for(self.fn).setdefault(
                (self.wrt, False, self.value_asked, self.backend, "tree", self.has_aux, defs), {}
            )

    def _has_trees(self, args, to_transform=False) -> bool:
        return False  # (its arguments are the leaves)

    def _param_label(self, i) -> str:
        return self._paths[i]

    def _wrt_names(self) -> tuple:
        return self._arguments

    def _differentiate(self, primal, env, namer, args):
        """As Gradient's, the generated function named after the arguments (`dloss_dparams`),
        not after each leaf."""
        optimized, functions = super()._differentiate(primal, env, namer, args)
        if not self.pullback:
            prefix = "value_and_d" if self.value_asked else "d"
            optimized.name = f"{prefix}{primal.name}_" + "_".join(f"d{a}" for a in self._arguments)
        return optimized, functions

    def ir(self, args: Optional[Sequence[Any]] = None) -> Any:
        code = _code_of(self.fn)
        table = _of_function(_TREE_IR, self.fn)
        if table is None or table[0] is not code:
            table = (code, {})
            try:
                _TREE_IR[self.fn] = table
            except TypeError:
                pass
        primal = table[1].get(self._defs)
        if primal is None or not _still_bound(primal.dependencies):
            primal = table[1][self._defs] = _lowered(self.fn, structure=self._structure)
        self._params = list(primal.params)  # (the front end's leaf names: clear of fn's own)
        return primal

    def __reduce__(self):
        raise TypeError("a _TreeGradient is part of its parent Gradient")

    def __repr__(self):
        return f"<sourcegrad gradient of {self.fn.__qualname__} wrt leaves {self.wrt}>"


def _shapes(env) -> dict:
    """The shapes the signature fixes (arrays' names -> shape), for the optimizer."""
    return {
        n: a.shape
        for n, a in env.items()
        if a is not None and not a.is_python_scalar and hasattr(a.stand_in, "shape")
    }


def _numbers(env) -> frozenset:
    """Names of floating numbers: Python floats and numpy floating scalars."""
    return frozenset(
        n
        for n, a in env.items()
        if a is not None and (type(a.stand_in) is float or isinstance(a.stand_in, np.floating))
    )


def _dtypes(env) -> dict:
    return {n: a.dtype for n, a in env.items() if a is not None and a.dtype is not None}


def _array_finisher(i, shape, dtype):
    """`_like_input` for a numpy input of this signature's shape and dtype, the common case
    (a new array of the input's shape, which only needs checking) first."""

    def finish(g, args):
        if (
            type(g) is np.ndarray
            and g.shape == shape
            and g.dtype == dtype
            and g.base is None
            and g.flags.writeable
        ):
            for a in args:
                if g is a:
                    break
            else:
                return g
        return _like_input(g, args[i], args)

    return finish


def _distinct(grads):
    """Gradients as arrays of their own: generated code may return one array for two inputs
    (the gradients of a and b in sin(a + b) are the same values)."""
    if len(grads) < 2 or not any(g is h for i, g in enumerate(grads) for h in grads[:i]):
        return grads
    out = []
    for g in grads:
        out.append(g.copy() if any(g is h for h in out) and hasattr(g, "copy") else g)
    return tuple(out)


def _converting(converters, single):
    """The finish applying these conversions (None where all are None)."""
    if all(c is None for c in converters):
        return None
    if single:
        convert = converters[0]
        return lambda g, args: convert(g)
    return lambda grads, args: tuple(g if c is None else c(g) for g, c in zip(grads, converters))


def _new_gradients(fn, with_value) -> tuple:
    """For each gradient `fn` returns, whether the statement making it always makes a new
    value (never an input, a view, or a value another name holds). () when `fn` has loops
    or branches: then a statement may run on one call and not on the next."""
    if _has_control_flow(fn) or not isinstance(fn.body[-1], Return):
        return ()
    returned: Any = fn.body[-1].value
    grads = returned.items[1] if with_value else returned
    atoms = grads.items if isinstance(grads, Tup) else (grads,)
    made = {s.target: s for s in fn.body if isinstance(s, Assign)}  # the last writes
    return tuple(
        isinstance(a, Const)
        or (
            isinstance(a, Var)
            and a.name not in fn.params
            and a.name in made
            and not made[a.name].in_place
            and makes_new_value(made[a.name].value)
        )
        for a in atoms
    )


def _users_gradients(fn, with_value) -> tuple:
    """For each gradient `fn` returns, whether it may be (or be a view of) a value the user
    owns: an argument, a global or closure value, a constant, or an item or view of one
    (the gradient of sum(x * TABLE) is TABLE itself). Those are copied before they are
    returned, so that `g *= 0` cannot change the user's data; the rest keep the fast path.

    Flow-insensitive (every assignment of a name counts), so it errs towards a copy."""
    returned = next((s.value for s in reversed(fn.body) if isinstance(s, Return)), None)
    if returned is None:
        return ()
    grads = returned.items[1] if with_value and isinstance(returned, Tup) else returned
    atoms = grads.items if isinstance(grads, Tup) else (grads,)
    assigns = [s for s in walk(fn.body) if isinstance(s, Assign)]
    defined = {s.target for s in assigns}
    owned = set(fn.params) | {n for s in walk(fn.body) for n in reads_of(s)} - defined
    # (what each assignment reads, for those that may pass a value on: computed once, not
    # once a round)
    passing = [
        (s.target, set(reads_of(s)))
        for s in assigns
        if not isinstance(s.value, Call) or not makes_new_value(s.value)
    ]
    changed = True
    while changed:
        changed = False
        for target, reads in passing:
            if target not in owned and not reads.isdisjoint(owned):
                owned.add(target)
                changed = True
    return tuple(
        (isinstance(a, Const) and isinstance(a.value, np.ndarray))
        or (isinstance(a, Var) and a.name in owned)
        for a in atoms
    )


def _copied_like_input(i):
    """`_like_input` for a gradient that may be the user's own array: always a copy."""

    def finish(g, args):
        out = _like_input(g, args[i], args)
        return out.copy() if out is g and hasattr(out, "copy") else out

    return finish


def _zero_d_arrays(args) -> set:
    return {i for i, a in enumerate(args) if type(a) is np.ndarray and a.ndim == 0}


def _differs_for_scalars(stmt) -> bool:
    """Whether a statement may act differently on a numpy scalar than on a 0-d array (an
    index, a store, an in-place update, a method, a buffer written with out=)."""
    value = getattr(stmt, "value", None)
    if isinstance(stmt, Assign) and stmt.in_place:
        return True
    if not isinstance(value, Call):
        return False
    kind = RULES[value.op].spelling.kind
    return kind in ("getitem", "store", "augassign", "augassign_item", "method", "pycall") or any(
        k == "out" for k, _ in value.kwargs
    )


def _has_control_flow(fn) -> bool:
    return any(isinstance(s, (For, While, If, Push)) for s in walk(fn.body))


def _is_cupy(value) -> bool:
    return type(value).__module__.startswith("cupy")


def _names_in(fn) -> set:
    """Every name the function uses (nested statements too): new names must avoid them."""
    names = set(fn.params) | set(fn.user_names) | set(fn.free)
    for stmt in walk(fn.body):
        names.update(writes_of(stmt))
    return names


def _saved_values(fn, forward_names, env):
    """Forward values that backward statements read (the residuals), with why they are kept.

    Each entry: name, shape, dtype, bytes (for the signature compiled), the user line
    that made it (None for a parameter, which costs nothing extra), and the rules
    whose backward reads it.
    """
    made_at = {s.target: s.loc for s in fn.body if isinstance(s, Assign)}
    readers: dict = {}
    for stmt in fn.body:
        if isinstance(stmt, Assign) and stmt.target not in forward_names:
            for n in reads_of(stmt):
                if n in forward_names:
                    rules = readers.setdefault(n, [])
                    for rule in stmt.note.split(", "):
                        if rule and rule not in rules:
                            rules.append(rule)
    out = []
    for name, rules in readers.items():
        aval = env.get(name)
        dtype = getattr(aval, "dtype", None) if aval is not None else None
        shape = aval.shape if aval is not None else None
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize if dtype is not None else 8
        loc = made_at.get(name)
        out.append(
            {
                "name": name,
                "shape": shape,
                "dtype": str(dtype)
                if dtype is not None
                else type(aval.stand_in).__name__
                if aval is not None
                else None,
                "bytes": nbytes,
                "line": loc.line if loc else None,
                "input": name in fn.params,
                "read_by": rules,
            }
        )
    return out


class VJP(Gradient):
    """`vjp(f, wrt)(*args) -> (f(*args), pullback)`; `pullback(cotangent)` gives the gradients.

    The generated module holds two functions: the forward, which returns the value and
    exactly the residuals the backward reads, and the backward, which takes them and a
    cotangent shaped like the output (so the output may be an array).
    """

    pullback = True

    def _has_trees(self, args, to_transform=False) -> bool:
        _no_trees(self, args, "vjp")
        return False

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]]:
        if kwargs or len(args) < len(self._params):
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())
        key = signature_key(args)
        compiled = self._cached(key)
        if compiled is None:
            compiled = self.compile(args, key)
        self._last = compiled
        forward, backward = compiled.fn
        value, residuals = forward(*args)

        def pullback(cotangent):
            # the backward pops the saved-value stack: give each call a copy of it, so a
            # pullback can be called more than once (a Jacobian calls it once per row)
            kept = [list(r) if type(r) is list else r for r in residuals]
            # (the cotangent joins the arguments a gradient must not be: that of x for x)
            return compiled.finish(backward(*kept, cotangent), args + (cotangent,))

        return value, pullback


# --- public functions -------------------------------------------------------------------------

_UNSET: Any = object()


def _wrt_of(wrt, argnums, argnum, default=0):
    """The arguments to differentiate, given as `wrt`, JAX's `argnums` or autograd's
    `argnum` (aliases: an index, a name, or a tuple of them; at most one may be given)."""
    given = [
        (k, v)
        for k, v in (("wrt", wrt), ("argnums", argnums), ("argnum", argnum))
        if v is not _UNSET
    ]
    if len(given) > 1:
        raise errors.WrtError(
            f"{' and '.join(k + '=' for k, _ in given)} are the same "
            "argument (JAX's argnums, autograd's argnum): give one"
        )
    return given[0][1] if given else default


def _jit_backend(backend, jit):
    """The backend `jit=True` asks for: numba's, unless the backend asked for is CuPy's."""
    return "numba" if jit and backend in ("auto", "numpy") else backend


def _made(fn, wrt, with_value, backend, has_aux, kind, plan=None):
    """`kind(fn, ...)`, or a decorator making it when fn is None (`@grad(wrt=1)`)."""
    if fn is None:
        return lambda f: _made(f, wrt, with_value, backend, has_aux, kind, plan)
    if kind is Gradient and has_aux and not with_value:
        return AuxGradient(fn, wrt, backend, plan)
    if plan is not None:  # (checkpointing: sourcegrad.checkpointing)
        return kind(fn, wrt, with_value, backend, has_aux, memory_plan=plan)
    return kind(fn, wrt, with_value, backend, has_aux)


def grad(
    fn: Optional[Callable[..., Any]] = None,
    wrt: Wrt = _UNSET,
    *,
    argnums: Wrt = _UNSET,
    argnum: Wrt = _UNSET,
    has_aux: bool = False,
    backend: str = "auto",
    jit: bool = False,
    checkpoint_loops: Union[int, str, None] = None,
    memory: Union[int, str, None] = None,
) -> Any:
    """The gradient of a scalar-valued numpy function, as generated Python source.

    `grad(f)`, `grad(f, wrt=1)`, `@grad` and `@grad(wrt=("w", "b"))` all work. `wrt`
    is an argument index, an argument name, or a tuple of them (then the result is a
    tuple of gradients); `argnums=` (JAX) and `argnum=` (autograd) are the same. Each
    gradient has its input's shape and dtype.

    `has_aux=True` (as in JAX): f returns `(output, aux)`; only the output is
    differentiated, and the result is `(gradient, aux)`.

    `backend` is "numpy", "cupy", "numba", "dask" or "auto" (the default: CuPy code for CuPy
    arrays, Dask code for Dask arrays, numpy code otherwise); code is generated once per
    backend and input signature. "numba" (or `jit=True` with the numpy or auto backend)
    compiles the numpy code with numba where numba can type it, and runs the numpy code
    after one `JitFallbackWarning` where it cannot (`sourcegrad.numba_backend`).

    `checkpoint_loops=k` (an int, or "sqrt") and `memory=` (bytes, or "min") trade time for
    memory: loops keep a snapshot every k trips and recompute the rest in the backward
    (`sourcegrad.checkpointing`, `sourcegrad.memory_budget`).
    """
    return _made(
        fn,
        _wrt_of(wrt, argnums, argnum),
        False,
        _jit_backend(backend, jit),
        has_aux,
        Gradient,
        memory_plan(checkpoint_loops, memory),
    )


# grad(f) written inside differentiated code is made while compiling (frontend)
grad._sourcegrad_makes_gradient = True  # type: ignore[attr-defined]


def value_and_grad(
    fn: Optional[Callable[..., Any]] = None,
    wrt: Wrt = _UNSET,
    *,
    argnums: Wrt = _UNSET,
    argnum: Wrt = _UNSET,
    has_aux: bool = False,
    backend: str = "auto",
    jit: bool = False,
    checkpoint_loops: Union[int, str, None] = None,
    memory: Union[int, str, None] = None,
) -> Any:
    """Like `grad`, but the result is `(f(*args), gradient)`; with `has_aux=True` (as in
    JAX) it is `((output, aux), gradient)`."""
    return _made(
        fn,
        _wrt_of(wrt, argnums, argnum),
        True,
        _jit_backend(backend, jit),
        has_aux,
        Gradient,
        memory_plan(checkpoint_loops, memory),
    )


def grad_and_aux(
    fn: Optional[Callable[..., Any]] = None,
    wrt: Wrt = _UNSET,
    *,
    argnum: Wrt = _UNSET,
    argnums: Wrt = _UNSET,
    backend: str = "auto",
    jit: bool = False,
) -> Any:
    """autograd's `grad_and_aux`: f returns `(output, aux)`; the result is
    `(gradient of output, aux)`. The same as `grad(f, has_aux=True)`."""
    return _made(
        fn, _wrt_of(wrt, argnums, argnum), False, _jit_backend(backend, jit), True, Gradient
    )


class AuxGradient:
    """`grad(f, has_aux=True)`: `(gradient, aux)` for a function returning `(output, aux)`.

    The generated code returns `(aux, gradient)` (aux where a value goes, so the compiled
    gradient's machinery for a value serves it); this puts the pair in JAX's order."""

    def __init__(self, fn, wrt, backend="auto", memory_plan=None):
        self.gradient = Gradient(fn, wrt, False, backend, has_aux=True, memory_plan=memory_plan)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        aux, gradient = self.gradient(*args, **kwargs)
        return gradient, aux

    @property
    def source(self) -> str:
        return self.gradient.source

    @property
    def saved(self) -> list:
        return self.gradient.saved

    def __repr__(self):
        return f"<sourcegrad gradient of {self.gradient.fn.__qualname__} with aux>"


def elementwise_grad(
    fn: Optional[Callable[..., Any]] = None,
    wrt: Wrt = _UNSET,
    *,
    argnum: Wrt = _UNSET,
    argnums: Wrt = _UNSET,
    backend: str = "auto",
) -> Any:
    """autograd's `elementwise_grad`: the sum of each column of f's Jacobian, in one
    backward pass (the vector-Jacobian product with ones shaped like the output). For a
    function applied elementwise, that is the derivative at each element."""
    if fn is None:
        return lambda f: elementwise_grad(f, wrt, argnum=argnum, argnums=argnums, backend=backend)
    pull = VJP(fn, _wrt_of(wrt, argnums, argnum), False, backend)

    @functools.wraps(fn)
    def gradient(*args, **kwargs):
        value, pullback = pull(*args, **kwargs)
        ones = np.ones_like(value) if hasattr(value, "shape") else type(value)(1.0)
        return pullback(ones)

    gradient.vjp = pull  # type: ignore[attr-defined]
    return gradient


class JVP(Gradient):
    """`jvp(f, primals, tangents) -> (f(*primals), tangent of the output)`, by forward-mode
    source transformation: the generated function takes the primals and one tangent per
    differentiated input and computes each value's tangent right after the value."""

    def _differentiate(self, primal, env, namer, args):
        optimized = optimize(forward_mode(primal, list(self.wrt), env, namer), _shapes(env))
        return optimized, [optimized]

    def _finisher(self, args, optimized=None, env=None, unread=False):
        return lambda result, args: result

    def _has_trees(self, args, to_transform=False) -> bool:
        _no_trees(self, args, "jvp")
        return False

    def __call__(self, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:  # type: ignore[override]
        primals = tuple(primals)
        key = signature_key(primals)
        compiled = self._cached(key)
        if compiled is None:
            compiled = self.compile(primals, key)
        self._last = compiled
        given = [tangents[i] for i in self.wrt]
        value, tangent = compiled.fn(*primals, *given)
        if hasattr(tangent, "copy") and (
            getattr(tangent, "base", None) is not None
            or any(tangent is a for a in (*primals, *given))
        ):
            tangent = tangent.copy()  # the tangent of x for x: the caller's array, or a view
        return value, tangent


_JVPS: OrderedDict = OrderedDict()  # (fn, wrt, backend) -> JVP, the most recent JVPS_KEPT
JVPS_KEPT = 64


def jvp(
    fn: Callable[..., Any],
    primals: Sequence[Any],
    tangents: Sequence[Any],
    *,
    backend: str = "auto",
) -> tuple[Any, Any]:
    """Forward mode: `(f(*primals), J @ tangents)` for the inputs whose tangent is not None.

    `fn` may be a `sourcegrad.grad` object: `jvp(grad(f), (x,), (v,))` is a Hessian-vector
    product computed forward-over-reverse."""
    tangents = tuple(tangents)
    primals = tuple(primals)
    if len(tangents) != len(primals):
        raise errors.WrtError(f"jvp got {len(primals)} primals but {len(tangents)} tangents")
    wrt = tuple(i for i, t in enumerate(tangents) if t is not None)
    if not wrt:
        raise errors.WrtError("jvp needs at least one tangent that is not None")
    key = (fn, wrt, backend)
    made = _JVPS.get(key)
    if made is None:
        made = _JVPS[key] = JVP(fn, wrt, False, backend)
        while len(_JVPS) > JVPS_KEPT:  # (a closure per step must not keep every one)
            _JVPS.popitem(last=False)
    else:
        _JVPS.move_to_end(key)
    return made(primals, tangents)


def hvp(fn: Callable[..., Any], wrt: Wrt = 0) -> Callable[..., Any]:
    """`hvp(f)(*args, v)`: the Hessian of f (with respect to argument `wrt`) times v, without
    forming the Hessian: the forward-mode derivative of the compiled gradient along v."""
    gradient = Gradient(fn, wrt)

    def product(*args_and_v):
        *args, v = args_and_v
        tangents = [None] * len(args)
        tangents[gradient.wrt[0]] = v
        return jvp(gradient, args, tangents)[1]

    return product


def hessian(fn: Callable[..., Any], wrt: Wrt = 0) -> Callable[..., np.ndarray]:
    """`hessian(f)(*args)`: forward over reverse, one Hessian-vector product per input element."""
    product = hvp(fn, wrt)

    def full(*args):
        x = args[wrt if isinstance(wrt, int) else 0]
        size = int(np.prod(np.shape(x), dtype=np.int64))
        rows = []
        with random_draws.same_draws(_generators_of(fn)) as again:
            for i in range(size):
                again()  # each row differentiates the sample the first row drew
                basis = np.zeros(size)
                basis[i] = 1.0
                v = basis.reshape(np.shape(x)) if np.shape(x) else 1.0
                rows.append(np.asarray(product(*args, v)))
        return np.stack(rows).reshape(np.shape(x) + np.shape(x))

    return full


def vjp(
    fn: Optional[Callable[..., Any]] = None,
    wrt: Wrt = _UNSET,
    *,
    argnums: Wrt = _UNSET,
    argnum: Wrt = _UNSET,
    backend: str = "auto",
) -> Any:
    """Reverse mode for any output: `vjp(f)(*args)` returns `(value, pullback)`, and
    `pullback(cotangent)` the gradients (a tuple when `wrt` is a tuple)."""
    wrt = _wrt_of(wrt, argnums, argnum)
    if fn is None:
        return lambda f: VJP(f, wrt, False, backend)
    return VJP(fn, wrt, False, backend)


def jacobian(
    fn: Callable[..., Any], wrt: Wrt = 0, mode: str = "rev", *, backend: str = "auto"
) -> Callable[..., np.ndarray]:
    """`jacobian(f)(*args)`: the Jacobian of f with respect to one argument, shape
    `out.shape + in.shape`: row by row from the pullback (mode="rev", one backward pass per
    output element) or column by column from the JVP (mode="fwd", one per input element)."""
    if isinstance(wrt, (tuple, list)):
        raise errors.WrtError("jacobian takes one wrt argument")
    if mode not in ("rev", "fwd"):
        raise errors.SourcegradError(f"mode must be 'rev' or 'fwd', got {mode!r}")
    if mode == "fwd":
        return _forward_jacobian(fn, wrt, backend)
    pull = VJP(fn, wrt, False, backend)

    def jac(*args):
        value, pullback = pull(*args)
        out_shape = np.shape(value)
        rows = []
        for i in range(int(np.prod(out_shape, dtype=np.int64))):
            basis = np.zeros(int(np.prod(out_shape, dtype=np.int64)))
            basis[i] = 1.0
            rows.append(np.asarray(pullback(basis.reshape(out_shape) if out_shape else 1.0)))
        x = args[pull.wrt[0]]
        return (
            np.stack(rows).reshape(out_shape + np.shape(x))
            if rows
            else np.zeros(out_shape + np.shape(x))
        )

    jac.vjp = pull  # type: ignore[attr-defined]
    return jac


def _forward_jacobian(fn, wrt, backend):
    def jac(*args):
        position = _normalize_wrt(fn, wrt)[0][0]
        x = args[position]
        size = int(np.prod(np.shape(x), dtype=np.int64))
        columns, out_shape = [], ()
        with random_draws.same_draws(_generators_of(fn)) as again:
            for i in range(size):
                again()  # each column differentiates the sample the first column drew
                basis = np.zeros(size)
                basis[i] = 1.0
                tangents = [None] * len(args)
                tangents[position] = basis.reshape(np.shape(x)) if np.shape(x) else 1.0
                value, t_out = jvp(fn, args, tangents, backend=backend)
                out_shape = np.shape(value)
                columns.append(np.asarray(t_out))
        if not columns:
            return np.zeros(np.shape(x))
        return np.stack(columns, axis=-1).reshape(out_shape + np.shape(x))

    return jac


def _generators_of(fn) -> list:
    """The random generators the user's function under `fn` (a function or a gradient of
    one) draws from; [] when it draws none (or its source cannot be read here)."""
    while isinstance(fn, Gradient):
        fn = fn.fn
    try:
        return random_draws.generators_in(function_to_ir(fn))
    except errors.SourcegradError:
        return []


def show(
    fn: Callable[..., Any],
    *args: Any,
    wrt: Wrt = 0,
    backend: str = "auto",
    file: Optional[IO[str]] = None,
) -> str:
    """Print the generated gradient source of `fn` for the signature of `args`."""
    g = fn if isinstance(fn, Gradient) else Gradient(fn, wrt, False, backend)
    source = g.compile(args).source
    print(source, end="", file=file)
    return source


def check_grad(
    fn: Callable[..., Any],
    *args: Any,
    wrt: Wrt = 0,
    eps: float = 1e-6,
    rtol: float = 1e-6,
    atol: float = 1e-8,
) -> float:
    """Compare the compiled gradient with central finite differences; return the max error.

    Raises `GradientCheckError` when any component differs by more than
    `atol + rtol * |numeric|` (after scaling the step for the input's magnitude).
    Otherwise returns the worst component's error as a fraction of that tolerance:
    a float of at most 1.0.
    """
    g = Gradient(fn, wrt)
    with random_draws.same_draws(_generators_of(fn)) as again:  # every call the same sample
        analytic = g(*args)
        analytic = analytic if isinstance(analytic, tuple) and not g._single else (analytic,)
        again()
        numerics = [numeric_grad(fn, args, pos, eps, again) for pos in g.wrt]
    worst = 0.0
    for pos, ana, numeric in zip(g.wrt, analytic, numerics):
        # (a parameter tree is compared leaf by leaf, each named by its path)
        ana_leaves, treedef = trees.flatten(ana)
        labels = treedef.paths(f"argument {pos}")
        for label, ana, numeric in zip(labels, ana_leaves, trees.flatten(numeric)[0]):
            err = np.max(
                np.abs(np.asarray(ana) - numeric) / (atol + rtol * np.abs(numeric) + 1e-300),
                initial=0.0,
            )
            worst = max(worst, float(err))
            if not np.allclose(ana, numeric, rtol=rtol, atol=atol):
                raise GradientCheckError(
                    f"gradient of {fn.__name__} wrt {label} differs from central finite "
                    f"differences:\n  compiled: {np.asarray(ana)!r}\n  numeric:  {numeric!r}"
                )
    return worst


def numeric_grad(
    fn: Callable[..., Any],
    args: Sequence[Any],
    pos: int,
    eps: float = 1e-6,
    before_call: Optional[Callable[[], object]] = None,
) -> Any:
    """Central finite differences of scalar `fn` with respect to argument `pos` (float64);
    for a parameter tree, a tree of them (one per leaf). `before_call()` runs before each
    call of fn (check_grad puts random generators back)."""
    before_call = before_call or (lambda: None)
    x = args[pos]
    if trees.kind_of(x) != trees.LEAF:
        leaves, treedef = trees.flatten(x)

        def at(k):
            def moved(leaf):
                changed = list(leaves)
                changed[k] = leaf
                return fn(*args[:pos], treedef.unflatten(changed), *args[pos + 1 :])

            return moved

        return treedef.unflatten(
            [numeric_grad(at(k), (leaf,), 0, eps, before_call) for k, leaf in enumerate(leaves)]
        )
    base = np.array(x, dtype=np.float64)
    out = np.zeros_like(base)
    flat, out_flat = base.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        step = eps * max(1.0, abs(flat[i]))
        orig = flat[i]
        flat[i] = orig + step
        before_call()
        hi = fn(*_replace(args, pos, base, x))
        flat[i] = orig - step
        before_call()
        lo = fn(*_replace(args, pos, base, x))
        flat[i] = orig
        out_flat[i] = (float(hi) - float(lo)) / (2 * step)
    return float(out) if isinstance(x, float) else out


def _replace(args, pos, value, like):
    v = float(value) if isinstance(like, float) else value.copy()
    return tuple(v if i == pos else a for i, a in enumerate(args))


class GradientCheckError(errors.SourcegradError, AssertionError):
    """The compiled gradient disagrees with finite differences."""
