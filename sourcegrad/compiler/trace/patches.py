"""numpy's and math's functions that bypass numpy's protocols, replaced while a trace runs.

`np.asarray(t)` and `np.array([t, u])` convert through `__array__`, never asking the traced
value; `np.zeros(3)` takes no traced value at all, yet its array is one the generated code
must make (a buffer later written with traced values: recorded where the user's code calls
it); `math.exp(t)` converts its argument
with `float()`; `np.random.normal(...)` and a generator's draws must be drawn by the
generated code on each call, not fixed at their first sample. While a trace runs in a
thread, these names of the `numpy`, `numpy.random` and `math` modules are wrappers that
hand such calls to the trace (`state.active()`) and call the original otherwise (other
threads, or calls of no traced value where none is needed).

`patched()` installs them (nested traces share one installation: a count) and puts the
originals back. Functions imported by name before the trace (`from numpy import zeros`) are
the originals: their arrays are plain, and a value carrying a gradient written into one is
refused.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
import types
from contextlib import contextmanager

import numpy as np

from ...ops import rule_for_function
from .. import random_draws
from . import state
from .frames import in_a_library, is_user
from .values import Traced

_CONVERTERS = ("asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "array")
# The makers of a buffer the user's code fills (`out = np.zeros(...); out[:, i] = ...`):
# called from the user's code they are ops the trace records, so values carrying a gradient
# written into the buffer are recorded too. Called from a library's code (numpy's own Python
# functions call np.zeros) or from compiled code, they make the plain array it expects; a
# value carrying a gradient written into that is refused, located.
_MAKERS = ("zeros", "ones", "empty", "full")
_LOCK = threading.Lock()
_INSTALLED = {"count": 0, "originals": []}


def _holds_traced(value) -> bool:
    if isinstance(value, Traced):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_traced(v) for v in value)
    return False


def _converter(original, name):
    @functools.wraps(original)
    def convert(obj, *args, **kwargs):
        rec = state.active()
        if rec is None or not _holds_traced(obj):
            return original(obj, *args, **kwargs)
        dtype = args[0] if args else kwargs.get("dtype")
        if isinstance(obj, Traced):
            # an array already: itself (np.array copies: the same values, a new array)
            result = rec.op("copy", (obj,)) if name == "array" else obj
        else:  # a list or tuple holding traced values: stacked
            result = rec.array_of(obj)
        if dtype is not None and np.dtype(dtype) != result.dtype:
            result = result.astype(dtype)
        return result

    return convert


def _maker(original):
    rule = rule_for_function(original)

    @functools.wraps(original)
    def make(*args, **kwargs):
        rec = state.active()
        if rec is None or not _called_by_the_user(sys._getframe(1)):
            return original(*args, **kwargs)
        return rec.op(rule.name, args, kwargs)

    return make


def _called_by_the_user(frame) -> bool:
    code = frame.f_code
    return is_user(code) and not in_a_library(code.co_filename)


def _math(original):
    @functools.wraps(original)
    def call(*args):
        rec = state.active()
        if rec is None or not any(isinstance(a, Traced) for a in args):
            return original(*args)
        rule = rule_for_function(original)
        if rule is None:
            return rec.unmodelled(original, args, {})
        return rec.op(rule.name, args)

    return call


def _draw(original):
    """`np.random.normal(...)` (numpy's global generator): drawn by the generated code."""

    rule = random_draws.function_rule(original)  # (before it is replaced: by identity)

    @functools.wraps(original)
    def draw(*args, **kwargs):
        rec = state.active()
        if rec is None or rule is None:
            return original(*args, **kwargs)
        if original.__name__ in ("default_rng", "RandomState", "Generator"):
            value = original(*args, **kwargs)
            made = rec.draw(rule.name, args, kwargs, value)
            return TracedGenerator(rec, made, value)
        return rec.draw(rule.name, args, kwargs, None, original)

    return draw


class TracedGenerator:
    """A random generator made or read by a traced function: each draw is recorded (the
    generated code draws from the same generator at run time) and drawn now from the real
    generator, as Python would."""

    def __init__(self, rec, atom, generator):
        self._rec, self._atom, self._generator = rec, atom, generator

    def __getattr__(self, name):
        method = getattr(self._generator, name)
        if not callable(method) or name.startswith("_"):
            return method
        rule = random_draws.method_rule(name)

        def draw(*args, **kwargs):
            return self._rec.draw(rule.name, (self,) + args, kwargs, None, method)

        return draw


def ragged(items) -> bool:
    """Whether a list holds traced values and arrays of different shapes (np.array refuses
    them: a list of choices that broadcast, `[x, np.sin(x[0])]`)."""
    shapes = {np.shape(v._value if isinstance(v, Traced) else v) for v in items}
    return (
        _holds_traced(items)
        and len(shapes) > 1
        and not any(isinstance(v, (list, tuple)) for v in items)
    )


def _lists_joined(original):
    """`np.prod([t, u])`: numpy's dispatch looks at an argument, not into a list it holds,
    so a list of traced values would reach `__array__`: it is made an array first (as numpy
    makes it), and the call dispatched on that."""

    @functools.wraps(original)
    def call(*args, **kwargs):
        rec = state.active()
        if rec is not None and any(isinstance(a, list) and ragged(a) for a in args):
            # (np.select's or np.choose's choices of shapes that broadcast: no array holds
            # them; numpy's dispatch finds the traced values in the list: the call is the op)
            return rec.function(original, args, kwargs)
        if rec is not None and any(isinstance(a, (list, tuple)) and _holds_traced(a) for a in args):
            args = tuple(
                rec.array_of(a) if isinstance(a, (list, tuple)) and _holds_traced(a) else a
                for a in args
            )
        if rec is not None and any(isinstance(v, Traced) for v in (*args, *kwargs.values())):
            # (the call is the op, as numpy's dispatch makes it: also where the traced value
            # is an argument numpy's dispatcher does not look at, `np.pad(v, 2,
            # constant_values=t)` of a plain v, which numpy's own code would read as an array)
            return rec.function(original, args, kwargs)
        return original(*args, **kwargs)

    return call


def _library_call(original, rule):
    """A library's Python function the registry has a rule for (`scipy.special.logsumexp`):
    a call of it with traced values is that op, not a trace of the library's own code."""

    @functools.wraps(original)
    def call(*args, **kwargs):
        rec = state.active()
        if rec is None or not any(_holds_traced(a) for a in (*args, *kwargs.values())):
            return original(*args, **kwargs)
        return rec.op(rule.name, args, kwargs)

    return call


# where scipy's public functions are found (besides the modules defining them)
_SCIPY_NAMESPACES = ("scipy.special", "scipy.linalg", "scipy.signal", "scipy.stats")


def library_functions() -> dict:
    """id -> (function, op) of the libraries' Python functions with a rule (scipy's, loaded)."""
    from ...ops import RULES
    from ...ops.registry import load_optional

    load_optional()
    table = {}
    for op in RULES.values():
        fn = op.fn
        if isinstance(fn, types.FunctionType) and (fn.__module__ or "").startswith("scipy"):
            table[id(fn)] = (fn, op)
    return table


def _stats_methods() -> list:
    """The ops that are methods of scipy's distribution objects (`norm.logpdf`): patched on
    the object itself while a trace runs (its attribute shadows the class's method)."""
    from ...ops import RULES

    return [
        op
        for op in RULES.values()
        if isinstance(op.fn, types.MethodType)
        and (type(op.fn.__self__).__module__ or "").startswith("scipy.stats")
    ]


def replace_library_functions(space: dict, undo: list, table: dict) -> None:
    """In a module's globals (or a closure's values), the library functions with a rule
    replaced by `_library_call`s (`from scipy.special import logsumexp` binds the function
    itself, which no patch of scipy's module reaches); `undo` gets what puts them back."""
    for name, value in list(space.items()):
        known = table.get(id(value))
        if known is not None and known[0] is value:
            space[name] = _library_call(value, known[1])
            undo.append((space, name, value))


_MADE: dict = {}  # the scipy modules loaded -> the replacements for them (made once)


def _replacements():
    """(module, name, wrapper) for everything `patched` replaces (made once per set of
    scipy's modules loaded: each wrapper asks the thread's trace when it is called)."""
    key = tuple(sorted(n for n in sys.modules if n.startswith("scipy.")))
    made = _MADE.get(key)
    if made is None:
        _MADE.clear()
        made = _MADE[key] = _made_replacements()
    return made


def _made_replacements():
    out = []
    for name in _CONVERTERS:
        out.append((np, name, _converter(getattr(np, name), name)))
    for name in _MAKERS:
        out.append((np, name, _maker(getattr(np, name))))
    # (numpy's own dict, not dir(np): getattr of a name dir lists imports numpy's lazy
    # submodules, f2py and testing among them, ~0.4 s of the first trace; none is a function)
    for name, value in list(vars(np).items()):
        if (
            name not in _CONVERTERS + _MAKERS
            and not name.startswith("_")
            and callable(value)
            and not isinstance(value, (type, np.ufunc))
        ):
            rule = rule_for_function(value)
            if rule is not None and not rule.sequence_input:
                out.append((np, name, _lists_joined(value)))
    for op in _stats_methods():
        method = op.fn
        out.append((method.__self__, method.__name__, _library_call(method, op)))
    table = library_functions()
    modules = {fn.__module__ for fn, _ in table.values()} | set(_SCIPY_NAMESPACES)
    for module in [sys.modules[n] for n in sorted(modules) if n in sys.modules]:
        for name, value in list(vars(module).items()):  # (not dir: no deprecated names)
            known = table.get(id(value))
            if known is not None and known[0] is value:
                out.append((module, name, _library_call(value, known[1])))
    for name in dir(math):
        value = getattr(math, name)
        if callable(value) and not name.startswith("_") and rule_for_function(value) is not None:
            out.append((math, name, _math(value)))
    for name in dir(np.random):
        value = getattr(np.random, name)
        if callable(value) and not name.startswith("_") and not isinstance(value, type):
            if random_draws.function_rule(value) is not None:
                out.append((np.random, name, _draw(value)))
    return out


def _put_back(owner, name, original):
    """Undo a replacement: a bound method patched on an object is the class's again."""
    if isinstance(original, types.MethodType) and original.__self__ is owner:
        owner.__dict__.pop(name, None)
    else:
        setattr(owner, name, original)


@contextmanager
def originals():
    """numpy's and math's own functions back while the block runs (a gradient called inside
    a traced function compiles and runs as anywhere), the wrappers again after."""
    with _LOCK:
        installed = list(_INSTALLED["originals"])
        wrappers = [(m, n, getattr(m, n)) for m, n, _ in installed]
        for module, name, original in reversed(installed):
            _put_back(module, name, original)
    try:
        yield
    finally:
        with _LOCK:
            for module, name, wrapper in wrappers:
                setattr(module, name, wrapper)


@contextmanager
def patched():
    """The wrappers installed (once for all threads tracing at the same time)."""
    with _LOCK:
        if _INSTALLED["count"] == 0:
            originals = []
            for module, name, wrapper in _replacements():
                originals.append((module, name, getattr(module, name)))
                setattr(module, name, wrapper)
            _INSTALLED["originals"] = originals
        _INSTALLED["count"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _INSTALLED["count"] -= 1
            if _INSTALLED["count"] == 0:
                for module, name, original in reversed(_INSTALLED["originals"]):
                    _put_back(module, name, original)
                _INSTALLED["originals"] = []


__all__ = ["TracedGenerator", "patched"]
