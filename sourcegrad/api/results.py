"""Gradients given their inputs' types: the last step of every call.

The generated code returns what numpy makes (a numpy scalar for a 0-d result, an input
itself for the gradient of `sum(a * b)` with respect to `a`, one array for two inputs).
`like_input` and the finishers here return each gradient with its input's type, shape and
dtype, in memory of its own, checking first for the common case (a new array that already
fits) so that the fast path costs a few type tests.

An array "of its own" is one no other object refers to (`owns_memory`): a new numpy array
(no `base`), or an array the numba variant allocated and returned, which numba hands over
with its allocation record as `base` (copying those would cost a pass over every gradient
on every call: a third of the time of a large RNN's compiled gradient).
"""

from __future__ import annotations

import numpy as np

from ..compiler import Traced, is_dask, like_dask_input


def like_input(g, x, args):
    """Give a gradient its input's type, shape and dtype, in memory of its own.

    Generated code may return an input itself (the gradient of sum(a * b) with
    respect to a is b) or a read-only broadcast view; those are copied.
    """
    if type(g) is Traced or type(x) is Traced:  # (generated code run in a trace: recorded)
        return g if np.shape(g) == np.shape(x) else np.broadcast_to(g, np.shape(x))
    if isinstance(x, np.generic):
        return x.dtype.type(g)
    if isinstance(x, float):
        return float(g)
    if isinstance(x, complex):  # (a Python complex input: its gradient, torch's convention)
        return complex(g)
    if is_dask(x):
        return like_dask_input(g, x)
    if is_cupy(x):
        import cupy  # type: ignore[import-untyped, import-not-found]

        g = cupy.asarray(g, dtype=x.dtype)
        if g.shape != x.shape:
            g = cupy.broadcast_to(g, x.shape)
        return g.copy() if g.base is not None or any(g is a for a in args) else g
    if type(x) is np.ndarray and x.ndim == 0:  # (a numpy scalar, as numpy's ufuncs return)
        return np.asarray(g, dtype=x.dtype)[()]
    dtype = x.dtype
    if (
        type(g) is np.ndarray
        and g.dtype == dtype
        and g.shape == x.shape
        and g.flags.writeable
        and owns_memory(g)
        and not any(g is a for a in args)
    ):
        return g
    g = np.asarray(g, dtype=dtype)
    if g.shape != x.shape:
        g = np.broadcast_to(g, x.shape)
    if not g.flags.writeable or not owns_memory(g) or any(g is a for a in args):
        g = g.copy()
    return g


def owns_memory(g) -> bool:
    """Whether no object but the array `g` refers to its memory: a numpy array with no
    `base`, or one numba allocated (its `base` numba's `_MemInfo` record, whose `parent` is
    None for memory numba allocated, not an argument's, and whose `refcount` counts the
    arrays holding it: 1 is `g` alone, not a view of a buffer another result holds)."""
    base = getattr(g, "base", None)
    if base is None:
        return True
    return (
        type(base).__name__ == "_MemInfo"
        and type(base).__module__ == "_nrt_python"
        and base.parent is None
        and base.refcount == 1
    )


def array_finisher(i, shape, dtype):
    """`like_input` for a numpy input of this signature's shape and dtype, the common case
    (a new array of the input's shape, which only needs checking) first."""
    if shape == ():  # (the gradient of a 0-d array is a numpy scalar: `like_input`)
        return lambda g, args: like_input(g, args[i], args)

    def finish(g, args):
        if (
            type(g) is np.ndarray
            and g.shape == shape
            and g.dtype == dtype
            and g.flags.writeable
            and owns_memory(g)
        ):
            for a in args:
                if g is a:
                    break
            else:
                return g
        return like_input(g, args[i], args)

    return finish


def distinct(grads):
    """Gradients as arrays of their own: generated code may return one array for two inputs
    (the gradients of a and b in sin(a + b) are the same values)."""
    # (ids in a set: comparing each pair cost ~15 µs a call for a GPT's 29 gradients)
    if len(grads) < 2 or len(set(map(id, grads))) == len(grads):
        return grads
    out = []
    for g in grads:
        out.append(g.copy() if any(g is h for h in out) and hasattr(g, "copy") else g)
    return tuple(out)


def converting(converters, single):
    """The finish applying these conversions (None where all are None)."""
    if all(c is None for c in converters):
        return None
    if single:
        convert = converters[0]
        return lambda g, args: convert(g)
    return lambda grads, args: tuple(g if c is None else c(g) for g, c in zip(grads, converters))


def copied_like_input(i):
    """`like_input` for a gradient that may be the user's own array: always a copy."""

    def finish(g, args):
        out = like_input(g, args[i], args)
        return out.copy() if out is g and hasattr(out, "copy") else out

    return finish


def is_cupy(value) -> bool:
    return type(value).__module__.startswith("cupy")
