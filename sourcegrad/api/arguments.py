"""Which arguments a gradient differentiates, and whether they can be.

`normalize_wrt(fn, wrt)` turns `wrt` (an index, a name, or a tuple of them; JAX's `argnums`
and autograd's `argnum` are the same, `wrt_of`) into positions; `check_differentiable`
refuses an argument that is not a float (an integer, an integer array, a string), naming it;
`check_array_kind` an array whose operators are not ndarray's (np.matrix, a masked array).
Takes Python values; returns positions or raises `WrtError` / `NonDifferentiableInputError`.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Sequence, Union

import numpy as np

from .. import errors

# what `wrt`/`argnums`/`argnum` take: an argument's index or name, or a tuple of them
Wrt = Union[int, str, Sequence[Union[int, str]]]


def normalize_wrt(fn, wrt):
    try:
        if isinstance(fn, (np.ufunc, types.BuiltinFunctionType)):
            raise TypeError  # code in C: nothing to read or trace
        params = list(inspect.signature(fn).parameters)
    except (ValueError, TypeError):  # (numpy before 2.4 gives a ufunc no signature)
        raise errors.SourceNotFoundError(
            f"{fn!r} is not a Python function with source; sourcegrad differentiates functions "
            "written in Python (register a rule for a builtin or numpy function)"
        ) from None
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


def check_differentiable(name, value, complex_ok=False):
    """Refuse a `wrt` argument that is not a float (complex too where `complex_ok`: reverse
    mode differentiates complex inputs, with torch's convention: docs/sharp-bits.md)."""
    if isinstance(value, complex) or np.iscomplexobj(value):
        if complex_ok:
            return
        raise errors.NonDifferentiableInputError(
            f"argument {name!r} is complex: forward mode (jvp, hvp, hessian) with respect to a "
            "complex input is not supported; reverse mode (grad, vjp) differentiates it "
            "(docs/sharp-bits.md, Complex numbers)"
        )
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


def check_array_kind(name, value):
    """Refuse an argument of an ndarray subclass whose operators mean something else than
    ndarray's, which the compiler models: it would differentiate another function."""
    if isinstance(value, np.matrix):
        raise errors.CallArgumentsError(
            f"argument {name!r} is a numpy.matrix, whose `*` is a matrix product and `**` a "
            "matrix power (its results stay 2-d); sourcegrad models numpy's ndarray and would "
            f"differentiate the elementwise function: pass np.asarray({name}) and write `@` "
            "where a product is meant"
        )
    if isinstance(value, np.ma.MaskedArray):
        raise errors.CallArgumentsError(
            f"argument {name!r} is a masked array, whose reductions skip the masked entries; "
            "sourcegrad models numpy's ndarray and would count them: pass "
            f"{name}.filled(0.0) with the mask as an array of its own (np.where(mask, ...))"
        )


class Unset:
    """The default of `wrt`, `argnums` and `argnum`: not given (at most one of the three may
    be, so none can default to 0 itself). Its repr says what leaving it out means, so that
    `help(sourcegrad.grad)` reads `wrt=<argument 0>` rather than `<object object at 0x...>`."""

    __slots__ = ("means",)

    def __init__(self, means: str) -> None:
        self.means = means

    def __repr__(self) -> str:
        return f"<{self.means}>"


UNSET: Any = Unset("argument 0")  # wrt's default
ALIAS: Any = Unset("an alias of wrt")  # argnums' and argnum's


def is_unset(value: Any) -> bool:
    return isinstance(value, Unset)


def wrt_of(wrt, argnums, argnum, default=0):
    """The arguments to differentiate, given as `wrt`, JAX's `argnums` or autograd's
    `argnum` (aliases: an index, a name, or a tuple of them; at most one may be given)."""
    given = [
        (k, v)
        for k, v in (("wrt", wrt), ("argnums", argnums), ("argnum", argnum))
        if not is_unset(v)
    ]
    if len(given) > 1:
        raise errors.WrtError(
            f"{' and '.join(k + '=' for k, _ in given)} are the same "
            "argument (JAX's argnums, autograd's argnum): give one"
        )
    return given[0][1] if given else default


def jit_backend(backend, jit):
    """The backend `jit=True` asks for: numba's, unless the backend asked for is CuPy's."""
    return "numba" if jit and backend in ("auto", "numpy") else backend


def sharing_pairs(updated, args) -> list:
    """The pairs of argument positions `(i, j)` whose arrays must not share memory: `i` a
    parameter the function changes in place (`Compiled.updated`), `j` any other array."""
    arrays = [j for j, a in enumerate(args) if isinstance(a, np.ndarray)]
    return [(i, j) for i, _ in updated if i in arrays for j in arrays if j != i]


def check_distinct(updated, args, label) -> None:
    """Refuse (`AliasedArgumentsError`, located at the update) a call passing an array the
    function changes in place together with another argument sharing its memory (`f(W, W)`,
    `f(W, W[:2])`): Python would change both, the compiled code changes one. `label(i)`
    names argument i."""
    for i, j in sharing_pairs(updated, args):
        if np.may_share_memory(args[i], args[j]):
            raise errors.AliasedArgumentsError(
                f"{label(i)} is changed in place here, and the argument passed for "
                f"{label(j)} shares its memory (the same array, or a view of it): Python "
                "would change both, and the gradient takes them for two arrays. Pass a copy "
                "(np.copy) for one of them, or write the update as a new value (x = x * 2, "
                "not x *= 2)",
                dict(updated)[i],
            )


def label_of(fn) -> str:
    """A callable's name for messages: its qualified name, or its class's (an object with
    `__call__`)."""
    return (
        getattr(fn, "__qualname__", None)
        or getattr(fn, "__name__", None)
        or f"{type(fn).__qualname__} object"
    )


def defaults_of(fn) -> tuple:
    """The default values `fn` binds now ((its positional ones, its keyword-only ones as
    (name, value) pairs)), read from the function its signature comes from (a `functools.wraps`
    wrapper's wrapped function). A Gradient binds a call's left-out arguments from these
    as they were when it was made, so `defaults_changed` tells it when they no longer are."""
    target = inspect.unwrap(fn) if callable(fn) else fn
    positional = getattr(target, "__defaults__", None) or ()
    keywords = getattr(target, "__kwdefaults__", None) or {}
    return tuple(positional), tuple(keywords.items())


def defaults_changed(fn, seen: tuple) -> bool:
    """Whether `fn`'s defaults are other objects than `seen` (`defaults_of` when the Gradient
    was made): `f.__defaults__ = (3.0,)` or `f.__kwdefaults__["k"] = 3.0` after `grad(f)`.
    Compared by identity, as Python binds them (an array default changed in place is the
    same default, read afresh on each call)."""
    (positional, keywords), (seen_positional, seen_keywords) = defaults_of(fn), seen
    return (
        len(positional) != len(seen_positional)
        or len(keywords) != len(seen_keywords)
        or any(a is not b for a, b in zip(positional, seen_positional))
        or any(a != b or v is not w for (a, v), (b, w) in zip(keywords, seen_keywords))
    )


def stale_defaults_error(label):
    return errors.CallArgumentsError(
        f"the default values of {label}'s parameters were changed (its __defaults__ or "
        "__kwdefaults__) after its gradient was made: the gradient binds left-out arguments "
        "from the defaults as they were then, and cannot tell which arguments this call "
        "left out; make the gradient again (sourcegrad.grad(f)) after changing them"
    )
