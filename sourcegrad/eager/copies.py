"""Copies of Tensors: clone, to (dtype and device casts), type_as, flip, fliplr, flipud,
roll, repeat, tile, tril, triu.

Takes Tensors; returns new Tensors (a fresh copy each) recorded with the registry's rules;
the registry's entries among them (flip, roll, tile, tril, triu, fliplr, flipud) are
`@implements`d here, with their numpy call forms at the end.

Imports: `views` (shape arguments, the clone node), `operands`, `spec`, `tensor`, `surface`
and the leaves.
"""

from __future__ import annotations

import numpy as np

from . import devices, dtypes
from .operands import needs_grad as _needs_grad
from .operands import wrap_array
from .spec import OpSpec, record
from .surface import export, implements, numpy_form
from .tensor import Tensor
from .views import CLONE, shape_arg

_wrap = Tensor._make

TO_COPY = OpSpec("ToCopyBackward0", "positive")
FLIP = OpSpec.of("flip", n_arrays=1)
ROLL = OpSpec.of("roll", n_arrays=1)
REPEAT = OpSpec.of("tile", n_arrays=1)
TRIL = OpSpec.of("tril", n_arrays=1)
TRIU = OpSpec.of("triu", n_arrays=1)


# --- copies: clone, casts, flips, repeats -----------------------------------------------------------


@export("clone")
def clone(input, *, memory_format=None):
    out = _wrap(devices.copy(input._data))
    if _needs_grad(input):
        record(CLONE, out, (input,))
    return out


@export(methods=("to",))
def to(input, *args, **kwargs):
    """x.to(dtype) / x.to('cuda') / x.to(other): the same tensor if nothing changes.

    A change of dtype or device makes a copy whose grad_fn is ToCopyBackward0, through
    which the gradient comes back to the input's dtype and device.
    """
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    dev = None
    for a in args:
        if isinstance(a, dtypes.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif isinstance(a, (str, devices.device)) or (
            isinstance(a, int) and not isinstance(a, bool)
        ):
            dev = devices.as_device(a)
        elif a is None:
            continue
        else:
            dtype = dtypes.as_dtype(a)
    if kwargs.get("device") is not None:
        dev = devices.as_device(kwargs.pop("device"))
    d = input.dtype if dtype is None else dtypes.as_dtype(dtype)
    moves = dev is not None and not devices.same_place(input._data, dev)
    if d is input.dtype and not moves:
        return clone(input) if copy else input
    return _cast(input, d, dev if moves else None)


def _cast(input, d, dev=None):
    data = input._data if d is input.dtype else input._data.astype(d.dtype)
    if dev is not None:
        data = devices.to_device(data, dev)
    out = _wrap(data)
    if _needs_grad(input) and (d.is_floating_point or d.is_complex):
        record(TO_COPY, out, (input,))
    return out


@export(methods=("type_as",))
def type_as(input, other):
    return to(input, other.dtype)


@implements("flip")
def flip(input, *dims):
    dims = shape_arg(dims) if dims else tuple(range(input._data.ndim))
    axis = tuple(d % input._data.ndim for d in dims)
    out = _wrap(np.flip(input._data, axis).copy())
    if _needs_grad(input):
        record(FLIP, out, (input,), {"axis": axis})
    return out


@implements("np_fliplr")
def fliplr(input):
    return flip(input, 1)


@implements("np_flipud")
def flipud(input):
    return flip(input, 0)


@implements("roll")
def roll(input, shifts, dims=None):
    out = _wrap(np.roll(input._data, shifts, dims))
    if _needs_grad(input):
        record(ROLL, out, (input,), {"shift": shifts, "axis": dims})
    return out


@export(methods=("repeat",))
def repeat(input, *sizes):
    reps = shape_arg(sizes)
    if len(reps) < input._data.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of "
            "dimensions of tensor"
        )
    out = _wrap(np.tile(input._data, reps))
    if _needs_grad(input):
        record(REPEAT, out, (input,), {"reps": reps})
    return out


@implements("tile")
def tile(input, dims):
    dims = tuple(dims)
    dims = (1,) * (input._data.ndim - len(dims)) + dims
    return repeat(input, dims)


@implements("tril")
def tril(input, diagonal=0):
    out = _wrap(np.tril(input._data, diagonal))
    if _needs_grad(input):
        record(TRIL, out, (input,), {"k": diagonal})
    return out


@implements("triu")
def triu(input, diagonal=0):
    out = _wrap(np.triu(input._data, diagonal))
    if _needs_grad(input):
        record(TRIU, out, (input,), {"k": diagonal})
    return out


# --- numpy's call forms --------------------------------------------------------------------------


@numpy_form("flip")
def np_flip(m, axis=None):
    m = wrap_array(m)
    if axis is None:
        return flip(m)
    return flip(m, axis if isinstance(axis, (tuple, list)) else (axis,))


@numpy_form("roll")
def np_roll(a, shift, axis=None):
    if isinstance(shift, np.ndarray):
        shift = tuple(int(s) for s in shift) if shift.ndim else int(shift)
    return roll(wrap_array(a), shift, axis)


@numpy_form("tile")
def np_tile(A, reps):
    return tile(wrap_array(A), (reps,) if isinstance(reps, int) else reps)


@numpy_form("tril")
def np_tril(m, k=0):
    return tril(wrap_array(m), k)


@numpy_form("triu")
def np_triu(m, k=0):
    return triu(wrap_array(m), k)
