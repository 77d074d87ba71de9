"""The gradient objects: `Gradient` and its kinds, and how a call runs.

`Gradient(fn, wrt, ...)` is what `grad` returns: a callable that, on its first call with a
given input signature, compiles (`Compiling`, `sourcegrad.api.compiling`) and installs
a fast entry (`sourcegrad.api.dispatch`) that later calls of that signature go straight to. Its
kinds: `VJP` (a forward and a backward function: `vjp`), `JVP` (forward mode: `jvp`), and
`_TreeGradient` (the gradient for one structure of parameter-tree arguments, called with
their leaves). `forward_jacobian` builds a Jacobian column by column from JVPs.

Why one module: the kinds refer to one another — a gradient's pullback inside
differentiated code is a VJP of it, a gradient of a gradient with loops is computed by
columns of JVPs, a tree argument's call goes to a `_TreeGradient` — so they are defined
together rather than tied by a cycle of imports.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import linecache
import os
import re
import types
from collections import OrderedDict
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import compiler, errors, trees
from ..compiler import BACKENDS, Traced, function_run_by, signature_key
from ..runtime import GuardMiss
from . import as_floats, cross_check, memory_caches, results
from .arguments import (
    Wrt,
    check_distinct,
    defaults_changed,
    defaults_of,
    jit_backend,
    label_of,
    normalize_wrt,
    sharing_pairs,
    stale_defaults_error,
)
from .compiling import Compiling
from .dispatch import fast_entry


def _without_source(fn) -> errors.SourceNotFoundError | None:
    """The refusal of a gradient of what cannot be called (given when the gradient is made,
    not deep inside its first call), or None. A callable without Python source to read (a
    function typed at the prompt, an object with `__call__`, a function a C decorator
    wraps) is traced (`compiler.trace`)."""
    if not callable(fn):
        return errors.SourceNotFoundError(
            f"{fn!r} is not callable; sourcegrad differentiates Python functions and other "
            "callables"
        )
    return None


def _pullback_function(gradient, argnum, count):
    """`(g, ans, a0, ..., a{count-1}) -> gradient.run_generated_pullback(argnum, g, (a0, ...))`,
    with as many parameters as the call has arguments; its source is put in linecache."""
    params = ", ".join(f"a{i}" for i in range(count))
    name = "pullback_of_" + re.sub(r"\W", "_", getattr(gradient.fn, "__name__", "f"))
    text = (
        f"def {name}(g, ans, {params}):\n"
        f"    return gradient.run_generated_pullback({argnum}, g, ({params},))\n"
    )
    filename = f"<sourcegrad: the pullback of {name[12:]}, argument {argnum}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope = {"gradient": gradient}
    exec(compile(text, filename, "exec"), scope)  # noqa: S102
    return scope[name]


def _run(compiled, args, function=None):
    """The generated function (`function`, or compiled.fn) on `args`, under the
    floating-point errors the traced function made raise around its operations
    (`Trace.raising`)."""
    function = compiled.fn if function is None else function
    trace = compiled.trace
    if trace is None or not trace.raising:
        return function(*args)
    with np.errstate(**dict.fromkeys(trace.raising, "raise")):
        return function(*args)


def _may_be_caught(compiled, error) -> bool:
    """Is `error`, raised by code made from a trace, one the function's own try statement
    may catch (or one of the floating-point errors it asked for)?"""
    trace = compiled.trace
    return (
        trace is not None
        and (trace.catches or bool(trace.raising))
        and not isinstance(error, (errors.SourcegradError, GuardMiss))
    )


class Gradient(Compiling, staticmethod):
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
        if any(type(a) is Traced for a in (g, *args)):  # (generated code run in a trace)
            return self.run_generated_pullback(argnum, g, args)
        pulls = self.__dict__.setdefault("_pullbacks", {})
        if argnum not in pulls:
            pulls[argnum] = VJP(self, argnum, False, self.backend)
        _, pullback = pulls[argnum](*args)
        return pullback(g)

    def derivative(self, kind, argnum, count):
        """This gradient's VJP for its argument `argnum` as a Python function of `(g, ans, a0,
        ..., a{count-1})` that runs the VJP's generated forward and backward functions
        (`run_generated_pullback`): where the gradient's own gradient is differentiated again
        (a third derivative, egrad(egrad(egrad(f)))), the source front end lowers the
        run-time pullback to a traced call of it, so the trace records the generated code's
        numpy operations. None for a JVP, or a gradient of several arguments."""
        if kind != "vjp" or self.with_value or not self._single:
            return None
        made = self.__dict__.setdefault("_derivatives", {})
        key = (argnum, count)
        if key not in made:
            made[key] = _pullback_function(self, argnum, count)
        return made[key]

    def run_generated_pullback(self, argnum, g, args):
        """pullback_of_gradient's result, computed by calling the VJP's generated numpy
        functions directly (on traced values, too: what they do is recorded)."""
        pulls = self.__dict__.setdefault("_generated_pullbacks", {})
        if argnum not in pulls:
            pulls[argnum] = VJP(self, argnum, False, "numpy")
        made = pulls[argnum]
        concrete = tuple(a._value if type(a) is Traced else a for a in args)
        key = signature_key(concrete)
        recorder = compiler.active_trace()
        # (compiled with the trace suspended: only the generated code's run is recorded)
        with recorder.suspended() if recorder is not None else contextlib.nullcontext():
            compiled = made._cached(key) or made.compile(concrete, key)
        if compiled.trace is not None or compiled.complex_sites:
            raise errors.NoRuleError(
                f"a third derivative through the gradient of {self._label}: its VJP was traced "
                "or may be complex, so its generated code is not run again here"
            )
        forward, backward = compiled.fn
        _, residuals = forward(*args)
        return backward(*_given(residuals, g, compiled.handed))

    pullback = False  # VJP: compile a forward and a backward function instead of one
    traces_allowed = True  # a function the source front end refuses is traced
    reads_source = True  # the source front end first (False: every function traced)
    forward_mode = False  # JVP: forward-mode source transformation instead of reverse
    # VJP: its backward takes the residuals in a list it empties (`HandingVJP`)
    hands_over = False
    # a 0-d array argument may be read as the numpy scalar it holds (see `_unwrappable`):
    # for a plain gradient only
    reads_zero_d_as_scalars = True
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
        self.memory_plan = memory_plan  # compiler.MemoryPlan: recompute, not save
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
        refused = None if self.inner is not None else _without_source(fn)
        if refused is not None:
            raise refused  # (raised when it is made: a short traceback, not the compiler's)
        if backend not in BACKENDS and backend != "auto":
            raise errors.SourcegradError(
                f"unknown backend {backend!r}; choose one of auto, {', '.join(BACKENDS)}"
            )
        self.fn = fn
        self._wrt_given = wrt
        self.wrt, self._single = normalize_wrt(fn, wrt)
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
        # (what they were made from: a call after `f.__defaults__ = ...` is refused, not bound
        # from the old values: `defaults_changed`)
        self._defaults_seen = defaults_of(fn)
        # compiled code is shared by every Gradient of the same function, wrt and backend
        with memory_caches.SHARED_LOCK:
            self._cache = memory_caches.compiled_for(fn).setdefault(
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
        self._owner = function_run_by(fn)  # whose __code__ the compiled code was built from
        self._lock = memory_caches.SHARED_LOCK
        self._last: memory_caches.Compiled | None = None
        self._general = self._general_call  # (one bound method, held while it is the call)
        # signature key -> (memory_caches.Compiled, its fast path for this Gradient, whether that path
        # computes float64 scalars as Python floats)
        self._entries: dict = {}
        self._column_args = None
        # fn's __name__, __doc__, ...: a Gradient is named as the function it differentiates
        self._names = {
            name: getattr(fn, name) for name in functools.WRAPPER_ASSIGNMENTS if hasattr(fn, name)
        }
        self._call = self._general
        self._missed = None  # the signature that last came to the general path past an entry
        self._flat: dict = {}  # the TreeDefs of tree arguments -> their _TreeGradient
        self._traces: dict = {}  # signature key -> the Trace its code came from, or None
        # the cross-check (api/cross_check.py): off unless asked for, or SOURCEGRAD_CHECK=1
        self.check = os.environ.get("SOURCEGRAD_CHECK") == "1"
        self._checked: set = set()
        self._paths: dict = {}  # signature key -> the compiled paths of a traced function

    # -- calling -------------------------------------------------------------------------------

    # `g(...)` calls `g._call`: the general path below until a signature is compiled, then
    # the generated entry of the signature called last (sourcegrad.api.dispatch), which checks
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
        self._check_defaults()
        if kwargs or len(args) < len(self._params):  # keywords, or defaults to fill in
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())
        if any(type(a) is Traced for a in args):  # called inside a traced function
            return compiler.active_trace().gradient_call(self, args)
        if self.check and self._unchecked(args):  # the first call of a signature: both ways
            return cross_check.checked(self, args, self._general_call)
        if self._has_trees(args):
            flat, leaves, defs = self._flattened(args)
            result = flat._call(*leaves)
            self._last = flat._last
            _store_arguments(flat._last, leaves, args)  # (the caller's own trees, as given)
            return self._unflattened(result, defs)
        key = signature_key(args)
        compiled = self._cached(key)
        if compiled is None:
            if self._by_forward_columns(args):
                return self._forward_columns(args)
            compiled = self.compile(args, key)
        self._last = compiled
        if compiled.updated:
            check_distinct(compiled.updated, args, self._param_label)
        if compiled.complex_sites:  # (a power of a negative Python number: compiler.PowerSite)
            compiler.check_power_operands(compiled.complex_sites, args, self._label)
        try:
            if compiled.trace is not None and not compiled.trace.same_statics(args):
                raise GuardMiss("other objects than the trace's")
            _store_arguments(compiled, args)
            result = _run(compiled, args)
        except GuardMiss:  # code made from a trace, another path taken: traced for it
            compiled = self._other_path(compiled, key, args)
            _store_arguments(compiled, args)
            result = _run(compiled, args)
        except Exception as error:
            if not _may_be_caught(compiled, error):
                raise
            compiled = self._traced_again(compiled, key, args)
            _store_arguments(compiled, args)
            result = compiled.fn(*args)  # (Python's run raised nothing here: see there)
        if compiled.complex_sites:
            result = self._real_result(compiled, compiled.fn, args, result)
        if not compiled.settled:
            self._settle(compiled, result, args)
        entry = self._entry_for(compiled, key, args)
        self._install(entry, key)
        if self._entries[key][2] and as_floats.finite(result):
            # float64 scalars computed as Python floats: the first call's numbers are the next
            # calls' (the math module may round a sine differently from numpy in the last bit)
            return entry(*args)
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
                        f"argument {self._params[i]!r} of {self._label}: {exc}"
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

    def _check_defaults(self) -> None:
        """Refuse a call after fn's defaults were rebound: the entries and `_signature` bind
        left-out arguments from the old ones, and a call coming back from an entry has them
        filled in already (which it left out cannot be told)."""
        if self._signature is not None and defaults_changed(self.fn, self._defaults_seen):
            raise stale_defaults_error(self._label)

    def _checking_defaults(self, still_valid):
        """`still_valid` (an entry's check of its dependencies, or None), also False once fn's
        defaults were rebound, so that the entry, which binds the old ones, hands its calls
        to the general path (`_check_defaults`)."""
        if not self._defaults:
            return still_valid

        def unchanged():
            return not defaults_changed(self.fn, self._defaults_seen) and (
                still_valid is None or still_valid()
            )

        return unchanged

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
            or (compiled.dependencies and not memory_caches.still_bound(compiled.dependencies))
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
                    f"argument {name!r} of {self._label} is a tuple holding arrays (or other "
                    "unhashable values): tuples of arrays are not yet supported as arguments, "
                    "differentiated or not; pass the arrays as separate arguments"
                )
        return errors.SourcegradError(f"an argument of {self._label} is not hashable")

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
            compiled.finish = results.converting(compiled.converters, self._single)
        compiled.settled = True

    def _unchecked(self, args) -> bool:
        """Is this the first call of its signature the cross-check sees (then marked seen)?"""
        if type(self) is not Gradient or self.inner is not None or not self.reads_source:
            return False  # (a gradient of a gradient, a tree's leaves, vjp, jvp: not checked)
        try:
            key = signature_key(args)
            if key in self._checked:
                return False
            self._checked.add(key)
        except TypeError:  # (an unhashable argument: the general path says so)
            return False
        return True

    def _path_for(self, compiled, key, args):
        """The code of a traced signature whose guards `args` pass: `compiled`, or another
        path's (traced for them if none is). Its forward runs the guards, so it is run once
        here on these arguments (a VJP's or JVP's call: they have no entry of their own)."""
        if not compiled.trace.checked_per_call:
            return compiled
        if self._passes(compiled, args):
            return compiled
        return self._other_path(compiled, key, args)

    def _traced_again(self, compiled, key, args):
        """Code made from a trace with a try statement (or raise modes of np.errstate) raised
        on `args`: Python may catch that exception there, so a trace of this call decides.
        The trace raises Python's own exception, or refuses a caught one, located
        (`compiler.trace.exceptions`); where it raises nothing, its code runs without the
        raise modes (the exception came from where Python computes nothing: the backward)."""
        self._cache.pop(key, None)
        try:
            again = self.compile(args, key)
        except BaseException:
            self._cache.setdefault(key, compiled)  # (still the code for the other data)
            raise
        return again  # (traced for these arguments: their path)

    def _passes(self, compiled, args) -> bool:
        """Do `args` take the path `compiled` was traced for (its objects, its guards)?"""
        if not compiled.trace.same_statics(args):
            return False
        if not compiled.trace.guards:  # (no decision to check: not run for nothing)
            return True
        first = compiled.fn[0] if isinstance(compiled.fn, tuple) else compiled.fn
        try:
            if self.forward_mode:  # (a JVP's code takes the tangents too: zeros)
                first(*args, *(np.zeros_like(args[i]) for i in self.wrt))
            else:
                first(*args)
        except GuardMiss:
            return False
        return True

    def _other_path(self, missed, key, args):
        """The code of this signature for the path `args` take, where `missed`'s guards
        (a trace's decisions) failed: one traced before for it, or a new trace."""
        paths = self._paths.setdefault(key, [])
        if missed not in paths:
            paths.append(missed)
        for compiled in reversed(paths):
            if compiled is not missed and self._passes(compiled, args):
                self._cache[key] = compiled
                return compiled
        self._cache.pop(key, None)
        compiled = self.compile(args, key)
        paths.append(compiled)
        return compiled

    @property
    def _label(self) -> str:
        """The differentiated callable as messages name it (`Loss.__call__` of an object)."""
        return label_of(self.fn)

    @property
    def traced(self) -> str:
        """Why the code for the signature called last was made from a trace (the source
        front end's refusal), or "" where it was read from the source."""
        trace = getattr(self._last, "trace", None)
        return trace.why if trace is not None else ""

    def _entry_for(self, compiled, key, args):
        """This Gradient's fast path for `compiled`'s signature (built once per signature:
        its misses come back here), or the general path where there is none (or where each
        call's results are checked: `_real_result`)."""
        known = self._entries.get(key)
        if known is not None and known[0] is compiled:
            return known[1]
        if compiled.trace is not None and compiled.trace.checked_per_call:
            # (its guards' misses are handled on the general path: `_other_path`)
            self._entries[key] = (compiled, self._general, False)
            return self._general
        still_bound = functools.partial(memory_caches.still_bound, compiled.dependencies)
        distinct = sharing_pairs(compiled.updated, args)
        checking = self._checking(compiled, args) if compiled.complex_sites else None
        entry = (
            fast_entry(
                args,
                checking or compiled.fn,
                compiled.finish,
                compiled.converters,
                self._checking_defaults(still_bound if compiled.dependencies else None),
                self.with_value,
                self._single,
                self._general,
                self._defaults,
                None if checking else compiled.source,
                (self._owner, compiled.code) if compiled.code is not None else None,
                distinct,
            )
            or self._general
        )
        twin = None
        if (
            entry is not self._general
            and checking is None
            and not distinct
            and compiled.trace is None
        ):  # float64 scalars computed as Python floats (from the source front end's IR)
            twin = as_floats.twin(self, compiled, args, entry)
        self._entries[key] = (compiled, twin or entry, twin is not None)
        return twin or entry

    def _checking(self, compiled, args):
        """The generated function with `_general_call`'s checks of a power of a Python number
        around it (`compiler.PowerSite`), under its parameters' names (the fast entry calls it as
        it calls the generated function: well under a microsecond more a call, where the
        general path costs several), for arguments of `args`' signature."""
        sites, function, label = compiled.complex_sites, compiled.fn, self._label
        code = function.__code__ if hasattr(function, "__code__") else function.py_func.__code__
        params = ", ".join(code.co_varnames[: code.co_argcount])
        operands = [site for site in sites if site.operands is not None and site.kind != "numpy"]
        # (without an aux or a complex input, every number returned must be real)
        whole = not self.has_aux and not any(_is_complex(a) for a in args)
        is_real = compiler.is_real

        def run(args):
            if operands:
                compiler.check_power_operands(operands, args, label)
            result = function(*args)
            if whole and is_real(result):
                return result
            return self._real_result(compiled, function, args, result)

        namespace: dict = {"run": run}
        exec(f"def {code.co_name}({params}):\n    return run(({params},))\n", namespace)
        return namespace[code.co_name]

    def _real_result(self, compiled, function, args, result):
        """`result` of `function(*args)` (of compiled code with `complex_sites`), checked: where
        it holds a complex number, a power of a negative Python number made it, which Python
        computes as a complex number (refused, located: `compiler.complex_power_error`) and
        np.power as nan: then `function` runs again on numpy floats, and computes numpy's
        numbers (in a function that draws no random numbers: a second run would draw others).
        What is checked is real whatever the function computes: the value (a gradient's
        output is real) and the gradients of real inputs (their adjoints' real parts); not the
        aux of has_aux, nor the gradient of a complex input."""

        def checked(result):
            grads = result[1] if self.with_value else result
            parts = [
                g
                for g, i in zip(_as_tuple(grads, self._single), self.wrt)
                if not _is_complex(args[i])
            ]
            if self.value_asked:
                parts.append(result[0][0] if self.has_aux else result[0])
            return parts

        if not compiler.holds_complex(checked(result)):
            return result
        return _numpy_result(compiled, function, args, self.fn, checked)

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
                # a 0-d array's gradient is a numpy scalar of its dtype (np.sin of one is
                # already; math.cos of one read as a scalar is a float)
                converters.append(None if type(g) is x.dtype.type else x.dtype.type)
            elif (
                type(x) is np.ndarray
                and fresh
                and distinct
                and type(g) is np.ndarray
                and g.shape == x.shape
                and g.dtype == x.dtype
                and g.flags.writeable
                and results.owns_memory(g)
            ):
                converters.append(None)
            else:
                return None
            others.append(g)
        return tuple(converters)

    def _by_forward_columns(self, args):
        """A gradient of a gradient with loops or branches with respect to an array (say
        grad(grad(f, wrt=0), wrt=1)): reverse over the saved-value stack is not written, so
        the result is computed column by column, one forward sweep per element (as
        jacobian(..., mode="fwd") does). Correct, and n sweeps for n elements."""
        if self.inner is None or self.pullback or self.forward_mode:
            return False
        if not self.inner.compile(args).control_flow:
            return False
        return not self._by_forward_mode(args, True)

    def _forward_columns(self, args):
        self._column_args = args  # so that .source can say why there is none
        grads = tuple(
            results.like_input(forward_jacobian(self.inner, i, self.backend)(*args), args[i], args)
            for i in self.wrt
        )
        result = grads[0] if self._single else grads
        return (self.inner(*args), result) if self.with_value else result

    def backend_for(self, args: Sequence[Any]) -> str:
        """The backend of this signature: the one asked for, or (auto) CuPy for CuPy arrays,
        Dask for Dask arrays."""
        if self.backend != "auto":
            return self.backend
        return (
            "cupy"
            if any(results.is_cupy(a) for a in args)
            else "dask"
            if any(compiler.is_dask(a) for a in args)
            else "numpy"
        )

    @property
    def source(self) -> str:
        """The generated module's text for the most recent input signature."""
        if self._last is None and self._column_args is not None:
            self.ir(self._column_args)  # raises: computed column by column, no source
        if self._last is None:
            raise errors.SourcegradError(
                f"the gradient of {self._label} is generated for the shapes of its inputs; "
                "call it once first, or use sourcegrad.show(f, *example_args)"
            )
        return self._last.source

    @property
    def saved(self) -> list:
        """What the backward keeps from the forward: name, shape, dtype, bytes."""
        if self._last is None:
            raise errors.SourcegradError("call the gradient once first")
        return self._last.saved

    def saved_bytes(self, *args: Any, trips: Optional[int] = None) -> int:
        """The most bytes the backward keeps from the forward at once, for arguments of the
        shapes and dtypes of `args` (compiled for them if need be, not run): the manifest's
        (`saved`) values made once, each value kept per trip of a loop times the loop's
        trips, or what a memory plan keeps instead; not the inputs (they are the caller's).
        `trips` is the trip count of a loop known only when it runs (a `while` loop):
        without it such a loop is refused, naming its line."""
        self._check_defaults()
        if len(args) < len(self._params):  # defaults to fill in
            bound = self._signature.bind(*args)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())
        return compiler.saved_bytes(self.compile(tuple(args)).saved, trips)

    def __repr__(self) -> str:
        return f"<sourcegrad gradient of {self._label} wrt {self.wrt}>"

    def _repr_markdown_(self):
        """In Jupyter: the generated source, highlighted, and a table of what is saved."""
        from ..notebook import gradient_markdown

        return gradient_markdown(self)

    def _repr_html_(self):
        """In Jupyter (which prefers it to the Markdown): the same, highlighted here."""
        from ..notebook import gradient_html

        return gradient_html(self)


def _store_arguments(compiled, args, whole=None) -> None:
    """Where the traced function stores its arguments into objects outliving the call
    (`net.params = params`), store this call's (`args`: the code's; `whole`: the function's
    own, where the code is given a tree's leaves), as Python would: the code made from the
    trace does not. Such code has no fast entry (`Trace.checked_per_call`)."""
    trace = compiled.trace if compiled is not None else None
    if trace is not None and trace.stores:
        trace.replay(args, whole)


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

    reads_zero_d_as_scalars = False

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
                        f"argument {param!r} of {parent._label} holds no "
                        "array or float to differentiate"
                    )
                wrt += range(len(names), len(names) + len(leaf_names))
            paths += [param] if treedef is None else treedef.paths(param)
            names += leaf_names
        self._defs = defs
        self._arguments = tuple(parent._params[i] for i in parent.wrt)
        self._structure = {p: d for p, d in zip(parent._params, defs) if d is not None}
        # (`_leaf_paths`: `_paths` is the compiled paths of a traced function, `_other_path`)
        self._params, self._leaf_paths = names, paths
        self.wrt, self._single = tuple(wrt), False
        self._signature, self._defaults = None, ()  # (called with every leaf, by position)
        with memory_caches.SHARED_LOCK:
            self._cache = memory_caches.compiled_for(self.fn).setdefault(
                (self.wrt, False, self.value_asked, self.backend, "tree", self.has_aux, defs), {}
            )

    def _has_trees(self, args, to_transform=False) -> bool:
        return False  # (its arguments are the leaves)

    def _param_label(self, i) -> str:
        return self._leaf_paths[i]

    def _wrt_names(self) -> tuple:
        return self._arguments

    def _function_name(self, primal):
        """The generated function named after the arguments (`dloss_dparams`), not after
        each leaf."""
        prefix = "value_and_d" if self.value_asked else "d"
        return f"{prefix}{primal.name}_" + "_".join(f"d{a}" for a in self._arguments)

    def ir(self, args: Optional[Sequence[Any]] = None) -> Any:
        code = memory_caches.code_of(self.fn)
        table = memory_caches.of_function(memory_caches.TREE_IR, self.fn)
        if table is None or table[0] is not code:
            table = (code, {})
            try:
                memory_caches.TREE_IR[self.fn] = table
            except TypeError:
                pass
        primal = table[1].get(self._defs)
        if primal is None or not memory_caches.still_bound(primal.dependencies):
            primal = table[1][self._defs] = memory_caches.lowered(
                self.fn, structure=self._structure
            )
        self._params = list(primal.params)  # (the front end's leaf names: clear of fn's own)
        return primal

    def __reduce__(self):
        raise TypeError("a _TreeGradient is part of its parent Gradient")

    def __repr__(self):
        return f"<sourcegrad gradient of {self._label} wrt leaves {self.wrt}>"


class VJP(Gradient):
    """`vjp(f, wrt)(*args) -> (f(*args), pullback)`; `pullback(cotangent)` gives the gradients.

    The generated module holds two functions: the forward, which returns the value and
    exactly the residuals the backward reads, and the backward, which takes them and a
    cotangent shaped like the output (so the output may be an array).
    """

    reads_zero_d_as_scalars = False
    pullback = True

    def _has_trees(self, args, to_transform=False) -> bool:
        _no_trees(self, args, "vjp")
        return False

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, Callable[..., Any]]:
        self._check_defaults()
        if kwargs or len(args) < len(self._params):
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())
        if any(type(a) is Traced for a in args):  # (generated code run in a trace)
            return self.generated_on_traced(args)
        return self.keyed(signature_key(args), args)

    def generated_on_traced(self, args):
        """`(value, pullback)` by calling the generated numpy forward and backward directly
        on traced values (compiled, with the trace suspended, for their concrete values'
        signature and, where traced, path), so that the trace records their operations: a
        traced call's VJP (`ops.traced_call`) met where a fourth derivative traces generated
        code. Refused where that code is numba's, updates its arguments or may go complex."""
        concrete = tuple(a._value if type(a) is Traced else a for a in args)
        key = signature_key(concrete)
        recorder = compiler.active_trace()
        with recorder.suspended() if recorder is not None else contextlib.nullcontext():
            compiled = self._cached(key) or self.compile(concrete, key)
            if compiled.trace is not None:  # (a trace's decisions: these values' path)
                compiled = self._path_for(compiled, key, concrete)
        forward, backward = compiled.fn
        if (
            compiled.complex_sites
            or compiled.updated
            or not isinstance(forward, types.FunctionType)
        ):
            raise errors.NoRuleError(
                f"the VJP of {self._label}, met inside a traced call (a fourth derivative "
                "through a gradient called inside differentiated code), is numba's, updates "
                "its arguments or may compute complex numbers: not differentiated here"
            )
        value, residuals = forward(*args)

        def pullback(cotangent):
            return backward(*_given(residuals, cotangent, compiled.handed))

        return value, pullback

    def keyed(self, key, args) -> tuple[Any, Callable[..., Any]]:
        """The call on `args` (one for each parameter, in order), whose `signature_key` is
        `key`: for a caller that computed the key already (a compiled module's call keys its
        arguments to find its region: a GPT's 32 arrays cost ~10 µs a key)."""
        compiled = self._cached(key)
        if compiled is None:
            compiled = self.compile(args, key)
        if compiled.trace is not None:  # (a trace's decisions: this call's path)
            compiled = self._path_for(compiled, key, args)
        self._last = compiled
        if compiled.updated:
            check_distinct(compiled.updated, args, self._param_label)
        forward, backward = compiled.fn
        if compiled.complex_sites:
            compiler.check_power_operands(compiled.complex_sites, args, self._label)
        _store_arguments(compiled, args)
        try:
            value, residuals = _run(compiled, args, forward)
        except Exception as exc:  # numba refusing these arguments' types: the numpy code runs
            if _may_be_caught(compiled, exc):
                compiled = self._traced_again(compiled, key, args)
                forward, backward = compiled.fn
                _store_arguments(compiled, args)
            else:
                forward, backward = _numpy_functions(compiled, exc, self._label, forward, args)
            value, residuals = forward(*args)
        if compiled.complex_sites and compiler.holds_complex(value):
            value, residuals = _numpy_result(compiled, forward, args, self.fn, lambda r: r[0])

        def pullback(cotangent, retain=True):
            nonlocal residuals
            if residuals is None:
                raise errors.SourcegradError(
                    f"the pullback of {self._label} was called with retain=False before: "
                    "its residuals were handed to that backward, which freed them"
                )
            if _shape(cotangent) != _shape(value):
                # (numpy would broadcast a cotangent of another shape, or fail in the
                # generated code's arithmetic; JAX refuses it the same way)
                raise errors.ShapeError(
                    f"the cotangent given to the pullback of {self._label} has shape "
                    f"{_shape(cotangent)}, but the function's output has shape "
                    f"{_shape(value)}: a vector-Jacobian product takes a cotangent shaped "
                    "like the output"
                )
            kept = _given(residuals, cotangent, compiled.handed)
            if not retain and compiled.handed and not compiled.complex_sites:
                residuals = None  # (where complex, the backward may run again on them)
            try:
                grads = backward(*kept)
            except Exception as exc:  # numba refusing the cotangent's type: as numpy code
                numpy_forward, numpy_backward = _numpy_functions(
                    compiled, exc, self._label, backward, kept
                )
                grads = numpy_backward(*numpy_forward(*args)[1], cotangent)
            if compiled.complex_sites:

                def checked(grads):
                    pairs = zip(_as_tuple(grads, self._single), self.wrt)
                    return [g for g, i in pairs if not _is_complex(args[i])]

                if compiler.holds_complex(checked(grads)):
                    kept = _given(residuals, cotangent, compiled.handed)
                    grads = _numpy_result(compiled, backward, kept, self.fn, checked)
            # (the cotangent joins the arguments a gradient must not be: that of x for x)
            return compiled.finish(grads, args + (cotangent,))

        # (what it reads: a compiled region checks their versions, as torch its saved tensors)
        pullback.residuals = residuals  # type: ignore[attr-defined]
        return value, pullback


class HandingVJP(VJP):
    """A VJP whose pullback may give up its residuals: `pullback(cotangent, retain=False)`
    hands them to the backward, which frees each array after its last use (the backward's
    own arrays reuse that memory, as torch's backward frees saved tensors unless
    retain_graph), and the pullback cannot be called again. For a caller that holds no
    other reference to them (a compiled region's node drops `pullback.residuals`)."""

    hands_over = True


def _numpy_functions(compiled, exc, label, called, args):
    """The numpy code's functions of `compiled`, where numba refused the call `called(*args)`
    of one of its numba functions (`exc`) for argument types other than it compiled it for
    (a cotangent or a tangent of another type than the value or primal); `exc` raised again
    where it is not numba's refusal."""
    if not compiler.numba_refused(exc, called, args):
        raise exc
    functions = compiled.fn if isinstance(compiled.fn, tuple) else (compiled.fn,)
    found = compiler.numba_numpy_functions(compiled.module, functions, exc, label)
    return found if isinstance(compiled.fn, tuple) else found[0]


def _numpy_result(compiled, function, args, fn, checked):
    """`function(*args)` again on numpy floats, where its first run made a complex number
    (in `checked(result)`, what must be real) that only np.power's backward makes
    (`Gradient._real_result`); the located error where Python's `**` or math.pow made it,
    where fn draws random numbers, or where the numbers stay complex."""
    error = compiler.complex_power_error(compiled.complex_sites, label_of(fn))
    if error is None and compiler.generators_of(fn):
        error = errors.ComplexValueError(
            "np.power of a negative Python float to a fractional power is nan, but the "
            "backward computed it as Python computes `**` (a complex number), and this "
            "function draws random numbers, so it cannot be run again on numpy floats: pass "
            "numpy values (np.float64, arrays)",
            compiled.complex_sites[0].loc,
        )
    if error is not None:
        raise error
    result = function(*compiler.numpy_numbers(args))
    if compiler.holds_complex(checked(result)):
        raise errors.ComplexValueError(
            f"the gradient of {label_of(fn)} came out complex for real inputs",
            compiled.complex_sites[0].loc,
        )
    return result


def _is_complex(x) -> bool:
    return isinstance(x, complex) or getattr(getattr(x, "dtype", None), "kind", "") == "c"


def _as_tuple(grads, single):
    return (grads,) if single else tuple(grads)


def _shape(x):
    """np.shape, without its call for an ndarray (a pullback checks its cotangent per call)."""
    return x.shape if type(x) is np.ndarray else np.shape(x)


def _given(residuals, cotangent, handed):
    """The arguments of a VJP's backward: the residuals and the cotangent, or (`handed`,
    `Compiled.handed`) a list of the residuals, which the backward empties, and the
    cotangent. The backward pops the saved-value stacks: each call gets copies of them, so
    a pullback can be called more than once (a Jacobian calls it once per row)."""
    given = [r if type(r) is np.ndarray else _copied_stack(r) for r in residuals]
    return [given, cotangent] if handed else given + [cotangent]


def _copied_stack(residual):
    """A copy of a saved-value stack (a list, or numba's typed list: `numba_backend`), the
    residual itself otherwise."""
    if type(residual) is list:
        return list(residual)
    if type(residual).__module__ == "numba.typed.typedlist":
        return residual.copy()
    return residual


class JVP(Gradient):
    """`jvp(f, primals, tangents) -> (f(*primals), tangent of the output)`, by forward-mode
    source transformation: the generated function takes the primals and one tangent per
    differentiated input and computes each value's tangent right after the value."""

    reads_zero_d_as_scalars = False
    forward_mode = True

    def _finisher(self, args, generated=None, unread=False):
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
        if compiled.trace is not None:  # (a trace's decisions: this call's path)
            compiled = self._path_for(compiled, key, primals)
        self._last = compiled
        if compiled.updated:
            check_distinct(compiled.updated, primals, self._param_label)
        given = [tangents[i] for i in self.wrt]
        if compiled.complex_sites:
            compiler.check_power_operands(compiled.complex_sites, primals, self._label)
        for i, t in zip(self.wrt, given):
            if _shape(t) != _shape(primals[i]):
                raise errors.ShapeError(
                    f"the tangent of argument {self._params[i]!r} of {self._label} "
                    f"has shape {_shape(t)}, but the argument has shape {_shape(primals[i])}: "
                    "a Jacobian-vector product takes tangents shaped like their primals"
                )
        _store_arguments(compiled, primals)
        try:
            value, tangent = _run(compiled, (*primals, *given))
        except Exception as exc:  # numba refusing these types: the numpy code runs
            if _may_be_caught(compiled, exc):
                compiled = self._traced_again(compiled, key, primals)
                _store_arguments(compiled, primals)
                numpy_function = compiled.fn
            else:
                numpy_function = _numpy_functions(
                    compiled, exc, self._label, compiled.fn, (*primals, *given)
                )
            value, tangent = numpy_function(*primals, *given)
        if compiled.complex_sites and compiler.holds_complex((value, tangent)):
            value, tangent = _numpy_result(
                compiled, compiled.fn, (*primals, *given), self.fn, lambda r: r
            )
        if hasattr(tangent, "copy") and (
            not results.owns_memory(tangent) or any(tangent is a for a in (*primals, *given))
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
    jit: bool = False,
) -> tuple[Any, Any]:
    """Forward mode: `(f(*primals), J @ tangents)` for the inputs whose tangent is not None.

    `fn` may be a `sourcegrad.grad` object: `jvp(grad(f), (x,), (v,))` is a Hessian-vector
    product computed forward-over-reverse. `backend` and `jit` as for `grad` (under numba
    the function is compiled for tangents of their primals' types)."""
    backend = jit_backend(backend, jit)
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


def forward_jacobian(fn, wrt, backend):
    def jac(*args):
        position = normalize_wrt(fn, wrt)[0][0]
        x = args[position]
        size = int(np.prod(np.shape(x), dtype=np.int64))
        columns, out_shape = [], ()
        with compiler.same_draws(compiler.generators_of(fn)) as again:
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
