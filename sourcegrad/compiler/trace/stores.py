"""numpy's calls that write into an array, as the stores the trace models.

`np.copyto(a, v)`, `np.fill_diagonal(a, v)`, `np.put(a, ind, v)`, `np.place(a, mask, v)`,
`np.putmask(a, mask, v)`, the methods `a.fill(v)`, `a.sort()`, `a.put(ind, v)` and a write
through `a.flat[i] = v` change `a` in place and have no derivative rule of their own. On a
traced `a` each is written here as what numpy does, in the operations the trace records:
a store `a[index] = value` (an update in place of `a`, so the names sharing its memory see
it, as numpy's do) of values computed by ops with rules (`np.where`, a gather). So their
gradients are those of the stores, and a value carrying a gradient may reach them.

Takes traced values (and plain ones beside them); each function returns None, as numpy's
do, or raises numpy's error where numpy would raise. `FUNCTIONS` and `METHODS` say which
call each one stands for (the recorder looks them up before refusing a call with no rule).

Imports: numpy and the package's values (`Traced`, to tell a traced operand from a plain
one; operations on it dispatch to its recorder themselves).
"""

from __future__ import annotations

import numpy as np

from .values import Traced


def _plain(value):
    """The concrete value of this run (a traced value's), or the value itself."""
    return value._value if isinstance(value, Traced) else value


def _size(value) -> int:
    return int(np.size(_plain(value)))


def _shape(value) -> tuple:
    return tuple(np.shape(_plain(value)))


def _dtype(value):
    return np.asarray(_plain(value)).dtype


def _as_one_value(value):
    """The number a fill writes (numpy takes any one-element value)."""
    if _size(value) != 1:
        raise ValueError("setting an array element with a sequence.")  # (numpy's words)
    return np.reshape(value, ())


def _repeated(values, count):
    """`values` flattened and repeated to `count` items, as a write through `a.flat` or
    np.place repeats a shorter list (a gather, so each item's gradient adds up)."""
    flat = np.ravel(values)
    size = _size(values)
    if size == count:
        return flat
    if size == 0:
        raise ValueError("cannot write from an empty array of values")
    return flat[np.arange(count) % size]


def _flat_index(shape, positions):
    """The index of `a[...]` reaching the flat (C order) `positions` of an array of `shape`:
    numpy's np.unravel_index of plain positions, the same arithmetic on traced ones."""
    if isinstance(positions, Traced):  # positions computed by the code: the same arithmetic
        index = []
        stride = int(np.prod(shape))
        for length in shape:
            stride //= length
            index.append((positions // stride) % length)
        return tuple(index)
    return np.unravel_index(positions, shape)


def _write_flat(a, positions, values):
    """`a.flat[positions] = values`: values repeated over the positions, as numpy repeats."""
    count = _size(positions)
    if count == 0:
        return
    if _size(values) == 1:
        a[_flat_index(a.shape, positions)] = np.reshape(values, ())
    else:
        a[_flat_index(a.shape, positions)] = _repeated(values, count)


def _flat_positions(ind, size, mode):
    """np.put's and a.flat's positions (negative ones from the end, as numpy reads them),
    checked in numpy's words, or wrapped or clipped (`mode`)."""
    if isinstance(ind, slice):
        return np.arange(size)[ind]
    positions = np.ravel(ind if isinstance(ind, Traced) else np.asarray(ind, dtype=np.intp))
    if mode == "wrap":
        return positions % size
    if mode == "clip":
        return np.clip(positions, 0, size - 1)
    if mode != "raise":
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    plain = np.asarray(_plain(positions))  # (checked on this run's values, as numpy checks)
    outside = plain[(plain < -size) | (plain >= size)]
    if outside.size:
        raise IndexError(f"index {int(outside[0])} is out of bounds for axis 0 with size {size}")
    return np.where(positions < 0, positions + size, positions)


def copyto(dst, src, casting="same_kind", where=True):
    """np.copyto(dst, src, casting, where): `dst[...] = src` (where `where` holds)."""
    source_dtype = _dtype(src)
    if not np.can_cast(source_dtype, dst.dtype, casting=casting):
        raise TypeError(
            f"Cannot cast scalar from {source_dtype!r} to {dst.dtype!r} according to the rule "
            f"{casting!r}"
        )
    if where is True:
        dst[...] = src
    else:
        dst[...] = np.where(where, src, dst)


def fill_diagonal(a, val, wrap=False):
    """np.fill_diagonal(a, val, wrap): numpy writes `a.flat[:end:step] = val`."""
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    shape = a.shape
    end = None
    if a.ndim == 2:
        step = shape[1] + 1
        if not wrap:  # (a tall matrix: the diagonal ends at the last column)
            end = shape[1] * shape[1]
    else:
        if any(length != shape[0] for length in shape):
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(shape[:-1]).sum())
    _write_flat(a, np.arange(_size(a))[:end:step], val)


def put(a, ind, v, mode="raise"):
    """np.put(a, ind, v, mode): `a.flat[ind] = v`."""
    _write_flat(a, _flat_positions(ind, _size(a), mode), v)


def _mask_of_a(mask, a, what):
    if _size(mask) != _size(a):
        raise ValueError(f"{what}: mask and data must be the same size")
    if _shape(mask) != _shape(a):  # (numpy reads the mask in a's flat order)
        mask = np.reshape(mask, _shape(a))
    return mask if _dtype(mask) == np.bool_ else mask != 0


def putmask(a, mask, values):
    """np.putmask(a, mask, values): `a[...] = where(mask, values, a)`, values repeated over
    a's flat positions."""
    mask = _mask_of_a(mask, a, "putmask")
    if _size(values) != 1:
        values = np.reshape(_repeated(values, _size(a)), _shape(a))
    else:
        values = np.reshape(values, ())
    a[...] = np.where(mask, values, a)


def place(arr, mask, vals):
    """np.place(arr, mask, vals): the elements mask picks take vals in turn (repeated)."""
    mask = _mask_of_a(mask, arr, "place")
    if _size(vals) == 1:
        arr[...] = np.where(mask, np.reshape(vals, ()), arr)
        return
    count = int(np.count_nonzero(mask))  # (a traced mask's count: checked on every call)
    if count and _size(vals) == 0:
        raise ValueError("Cannot insert from an empty array!")
    if count:
        arr[mask] = _repeated(vals, count)


def fill(a, value):
    """a.fill(value)."""
    a[...] = _as_one_value(value)


def sort(a, axis=-1, kind=None, order=None):
    """a.sort(axis, kind): `a[...] = np.sort(a, axis)`."""
    if order is not None:
        raise ValueError("order= sorts structured arrays, which sourcegrad does not model")
    a[...] = np.sort(a, axis=axis, kind=kind)


def flat_store(a, index, value):
    """`a.flat[index] = value` (a boolean index picks the flat positions where it holds)."""
    if isinstance(index, tuple):
        raise IndexError("unsupported iterator index")
    if not isinstance(index, slice) and _dtype(index) == np.bool_ and np.ndim(_plain(index)) > 0:
        index = np.flatnonzero(index)
    _write_flat(a, _flat_positions(index, _size(a), "raise"), value)


FUNCTIONS = {
    np.copyto: copyto,
    np.fill_diagonal: fill_diagonal,
    np.put: put,
    np.putmask: putmask,
    np.place: place,
}

METHODS = {
    "fill": fill,
    "sort": sort,
    "put": put,
}
