"""numpy functions on Tensors (`__array_ufunc__`, `__array_function__`).

This is what lets the rule table's lambdas run on Tensors under
`create_graph=True`: `np.exp(t)`, `np.sum(t, axis=0, keepdims=True)`,
`np.broadcast_to(t, shape)`, `np.where(c, t, 0.0)`, `np.add.at(out, index, t)`
and the rest that the rules and `sourcegrad.runtime` use become Tensor ops, and
so are recorded. Each entry adapts numpy's signature to the Tensor op; those of the
registry's entries with torch names (`ops.REGISTERED`) are added from them.

A numpy function with no entry here falls back to numpy itself on the tensors'
arrays (a tensor that requires grad refuses, as `np.asarray` on it does), and
a ufunc's array result is wrapped back into a Tensor, as torch does.

Imports: the op modules (ops, shape_ops, inplace, factories), `tensor` and the
leaves; `methods.py` installs its entry points as the Tensor's numpy protocol.
"""

from __future__ import annotations

import numpy as np

from . import factories, fft, inplace, linalg, messages, ops, shape_ops
from .devices import DEVICE_TYPES
from .tensor import Tensor

_wrap = Tensor._make


def _rint(x):
    return ops.round(x)


def _floor_divide(x, y):
    # torch's derivatives write this as `div(rounding_mode="floor")`, whose gradient is
    # zero; `x // y` itself (ops.floor_divide) has none, as in torch
    return ops.div(x, y, rounding_mode="floor")


UFUNCS = {
    np.add: ops.add,
    np.subtract: ops.sub,
    np.multiply: ops.mul,
    np.true_divide: ops.div,
    np.power: ops.pow,
    np.float_power: ops.float_power,
    np.positive: lambda x: x,
    np.fabs: ops.abs,
    np.square: ops.square,
    np.rint: _rint,
    np.fmax: ops.fmax,
    np.fmin: ops.fmin,
    np.equal: ops.eq,
    np.not_equal: ops.ne,
    np.less: ops.lt,
    np.less_equal: ops.le,
    np.greater: ops.gt,
    np.greater_equal: ops.ge,
    np.logical_and: ops.logical_and,
    np.logical_or: ops.logical_or,
    np.logical_xor: ops.logical_xor,
    np.logical_not: ops.logical_not,
    np.bitwise_and: ops.bitwise_and,
    np.bitwise_or: ops.bitwise_or,
    np.bitwise_xor: ops.bitwise_xor,
    np.invert: ops.bitwise_not,
    np.matmul: ops.matmul,
    np.floor_divide: _floor_divide,
    np.remainder: ops.remainder,
    np.isnan: ops.isnan,
    np.isinf: ops.isinf,
    np.isfinite: ops.isfinite,
}

_REDUCE = {
    np.add: ops.sum,
    np.multiply: ops.prod,
    np.maximum: ops.amax,
    np.minimum: ops.amin,
    np.logical_and: ops.all,
    np.logical_or: ops.any,
}


def _plain(value):
    if isinstance(value, Tensor):
        if type(value._data) in DEVICE_TYPES:  # a GPU tensor's array stays on the GPU
            if value._requires_grad:
                raise RuntimeError(messages.NUMPY_REQUIRES_GRAD)
            return value._data
        return value.__array__()
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def array_ufunc(ufunc, method, inputs, kwargs):
    fn = UFUNCS.get(ufunc)
    if method == "__call__" and fn is not None and not kwargs:
        return fn(*inputs)
    if method == "at" and ufunc is np.add:
        out, index = inputs[0], inputs[1]
        values = inputs[2] if len(inputs) > 2 else 1
        if isinstance(out, Tensor):
            inplace.index_put_(out, index, values, accumulate=True)
            return None
    if method == "reduce" and ufunc in _REDUCE and len(inputs) == 1:
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        if not kwargs:
            return _REDUCE[ufunc](inputs[0], axis, keepdims)
    # no Tensor version: numpy on the arrays, the result wrapped back like torch does
    result = getattr(ufunc, method)(*_plain(inputs), **_plain_kwargs(kwargs))
    if isinstance(result, np.ndarray) or type(result) in DEVICE_TYPES:
        return _wrap(result)
    if isinstance(result, tuple):
        return tuple(
            _wrap(r) if isinstance(r, np.ndarray) or type(r) in DEVICE_TYPES else r for r in result
        )
    return result


def _plain_kwargs(kwargs):
    return {k: _plain(v) for k, v in kwargs.items()}


# --- numpy functions with numpy's signatures ------------------------------------------------


def _sum(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    return ops.sum(a, axis, keepdims, dtype=dtype)


def _mean(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    return ops.mean(a, axis, keepdims, dtype=dtype)


def _prod(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    return ops.prod(a, axis, keepdims, dtype=dtype)


def _max(a, axis=None, out=None, keepdims=False, **kw):
    if axis is None and not keepdims:
        return ops.max(a)
    return ops.amax(a, () if axis is None else axis, keepdims)


def _min(a, axis=None, out=None, keepdims=False, **kw):
    if axis is None and not keepdims:
        return ops.min(a)
    return ops.amin(a, () if axis is None else axis, keepdims)


def _var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    return ops.var(a, axis, keepdim=keepdims, correction=ddof)


def _std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    return ops.std(a, axis, keepdim=keepdims, correction=ddof)


def _cumsum(a, axis=None, dtype=None, out=None):
    if axis is None:
        return ops.cumsum(shape_ops.reshape(a, (-1,)), 0, dtype=dtype)
    return ops.cumsum(a, axis, dtype=dtype)


def _cumprod(a, axis=None, dtype=None, out=None):
    if axis is None:
        return ops.cumprod(shape_ops.reshape(a, (-1,)), 0, dtype=dtype)
    return ops.cumprod(a, axis, dtype=dtype)


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    return shape_ops.reshape(_as_tensor(a), shape if shape is not None else newshape)


def _transpose(a, axes=None):
    a = _as_tensor(a)
    if axes is None:
        axes = tuple(range(a._data.ndim))[::-1]
    return shape_ops.permute(a, axes)


def _swapaxes(a, axis1, axis2):
    return shape_ops.transpose(_as_tensor(a), axis1, axis2)


def _moveaxis(a, source, destination):
    return shape_ops.movedim(_as_tensor(a), source, destination)


def _expand_dims(a, axis):
    a = _as_tensor(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    n = a._data.ndim + len(axes)
    for ax in sorted(x % n for x in axes):
        a = shape_ops.unsqueeze(a, ax)
    return a


def _squeeze(a, axis=None):
    return shape_ops.squeeze(_as_tensor(a), axis)


def _ravel(a, order="C"):
    return shape_ops.reshape(_as_tensor(a), (-1,))


def _broadcast_to(array, shape, subok=False):
    return shape_ops.expand(
        _as_tensor(array), tuple(shape) if not isinstance(shape, int) else (shape,)
    )


def _where(condition, x=None, y=None):
    if x is None and y is None:
        return ops.where(condition)
    return ops.where(condition, x, y)


def _clip(a, a_min=None, a_max=None, out=None, **kw):
    a_min = kw.pop("min", a_min)
    a_max = kw.pop("max", a_max)
    return ops.clamp(_as_tensor(a), a_min, a_max)


def _concatenate(arrays, axis=0, out=None, **kw):
    return shape_ops.cat([_as_tensor(a) for a in arrays], axis)


def _stack(arrays, axis=0, out=None, **kw):
    return shape_ops.stack([_as_tensor(a) for a in arrays], axis)


def _take(a, indices, axis=None, out=None, mode="raise"):
    a = _as_tensor(a)
    if axis is None:
        a, axis = shape_ops.reshape(a, (-1,)), 0
    if isinstance(indices, (int, np.integer)):
        return shape_ops.select(a, axis, int(indices))
    idx = indices._data if isinstance(indices, Tensor) else indices
    if type(idx) not in DEVICE_TYPES:
        idx = np.asarray(list(idx) if isinstance(idx, range) else idx)
    return shape_ops.pick(a, "IndexBackward0", (slice(None),) * (axis % a._data.ndim) + (idx,))


def _flip(m, axis=None):
    m = _as_tensor(m)
    if axis is None:
        return shape_ops.flip(m)
    return shape_ops.flip(m, axis if isinstance(axis, (tuple, list)) else (axis,))


def _roll(a, shift, axis=None):
    if isinstance(shift, np.ndarray):
        shift = tuple(int(s) for s in shift) if shift.ndim else int(shift)
    return shape_ops.roll(_as_tensor(a), shift, axis)


def _tile(A, reps):
    return shape_ops.tile(_as_tensor(A), (reps,) if isinstance(reps, int) else reps)


def _tril(m, k=0):
    return shape_ops.tril(_as_tensor(m), k)


def _triu(m, k=0):
    return shape_ops.triu(_as_tensor(m), k)


def _outer(a, b, out=None):
    return ops.outer(_as_tensor(a), _as_tensor(b))


def _dot(a, b, out=None):
    a, b = _as_tensor(a), _as_tensor(b)
    if a._data.ndim == 0 or b._data.ndim == 0:
        return ops.mul(a, b)
    if b._data.ndim <= 2:
        return ops.matmul(a, b)
    raise NotImplementedError("sourcegrad: np.dot on N-d Tensors is not supported")


def _like(factory, maker):
    def fn(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
        a = _as_tensor(a)
        if shape is not None:
            return maker(shape, dtype=dtype or a.dtype, device=a.device)
        return factory(a, dtype=dtype)

    return fn


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return factories.full_like(_as_tensor(a), fill_value, dtype=dtype)


def _shape(a):
    return tuple(a._data.shape)


def _ndim(a):
    return a._data.ndim


def _size(a, axis=None):
    return a._data.size if axis is None else a._data.shape[axis]


def _all(a, axis=None, out=None, keepdims=False, **kw):
    return ops.all(a, axis, keepdims)


def _any(a, axis=None, out=None, keepdims=False, **kw):
    return ops.any(a, axis, keepdims)


def _argmax(a, axis=None, out=None, keepdims=False):
    return ops.argmax(a, axis, keepdims)


def _argmin(a, axis=None, out=None, keepdims=False):
    return ops.argmin(a, axis, keepdims)


def _round(a, decimals=0, out=None):
    return ops.round(a, decimals=decimals)


def _take_along_axis(arr, indices, axis):
    return shape_ops.gather(_as_tensor(arr), axis, indices)


def _copy(a, order="K", subok=False):
    return shape_ops.clone(_as_tensor(a))


def _nonzero(a):
    return shape_ops.nonzero(a, as_tuple=True)


def _as_tensor(a):
    if isinstance(a, Tensor):
        return a
    return _wrap(a if type(a) in DEVICE_TYPES else np.asarray(a))


FUNCTIONS = {
    np.sum: _sum,
    np.mean: _mean,
    np.prod: _prod,
    np.max: _max,
    np.amax: _max,
    np.min: _min,
    np.amin: _min,
    np.var: _var,
    np.std: _std,
    np.cumsum: _cumsum,
    np.cumprod: _cumprod,
    np.reshape: _reshape,
    np.transpose: _transpose,
    np.swapaxes: _swapaxes,
    np.moveaxis: _moveaxis,
    np.expand_dims: _expand_dims,
    np.squeeze: _squeeze,
    np.ravel: _ravel,
    np.broadcast_to: _broadcast_to,
    np.where: _where,
    np.clip: _clip,
    np.concatenate: _concatenate,
    np.stack: _stack,
    np.take: _take,
    np.flip: _flip,
    np.roll: _roll,
    np.tile: _tile,
    np.tril: _tril,
    np.triu: _triu,
    np.outer: _outer,
    np.dot: _dot,
    np.zeros_like: _like(factories.zeros_like, factories.zeros),
    np.ones_like: _like(factories.ones_like, factories.ones),
    np.empty_like: _like(factories.empty_like, factories.empty),
    np.full_like: _full_like,
    np.shape: _shape,
    np.ndim: _ndim,
    np.size: _size,
    np.all: _all,
    np.any: _any,
    np.argmax: _argmax,
    np.argmin: _argmin,
    np.round: _round,
    np.around: _round,
    np.take_along_axis: _take_along_axis,
    np.copy: _copy,
    np.nonzero: _nonzero,
}


def _from_registry():
    """The numpy functions of the registry's entries whose torch names say so
    (`Torch.numpy`): a ufunc dispatches through `__array_ufunc__`, another function
    (np.sinc) through `__array_function__`."""
    for op in dict.fromkeys(ops.REGISTERED.values()):
        fn = op.entry.fn
        if op.entry.torch.numpy:
            (UFUNCS if isinstance(fn, np.ufunc) else FUNCTIONS)[fn] = op


_from_registry()
FUNCTIONS.update(linalg.NUMPY)  # np.linalg.inv(tensor), ...
FUNCTIONS.update(fft.NUMPY)  # np.fft.fft(tensor), np.real(tensor), ...
UFUNCS.update(fft.UFUNCS)


def array_function(func, args, kwargs):
    fn = FUNCTIONS.get(func)
    if fn is not None:
        return fn(*args, **kwargs)
    return func(*_plain(args), **_plain_kwargs(kwargs))
