"""numpy functions on Tensors (`__array_ufunc__`, `__array_function__`).

This is what lets the rule table's lambdas run on Tensors under
`create_graph=True`: `np.exp(t)`, `np.sum(t, axis=0, keepdims=True)`,
`np.broadcast_to(t, shape)`, `np.where(c, t, 0.0)`, `np.add.at(out, index, t)`
and the rest that the rules and `sourcegrad.runtime` use become Tensor ops, and
so are recorded.

Takes the ops' numpy forms from `surface.NUMPY` (the registry entries whose torch names
say numpy dispatches to them, with their `@numpy_form` adapters, and the `@export(numpy=...)`
of the other ops), adds the adapters of numpy functions that are not an op's (np.where,
np.concatenate, np.zeros_like, np.shape, ...), linalg's and fft's. Returns the two entry
points `methods.py` installs as the Tensor's numpy protocol.

A numpy function with no entry here falls back to numpy itself on the tensors'
arrays (a tensor that requires grad refuses, as `np.asarray` on it does), and
a ufunc's array result is wrapped back into a Tensor, as torch does.

Imports: the op modules (tensor_math, shape_ops, inplace, factories), `out_arg`, `surface`,
`tensor` and the leaves.
"""

from __future__ import annotations

import numpy as np

from .. import errors
from ..ops.shape import taken_index
from . import (
    cholesky,
    composites,
    factories,
    fft,
    inplace,
    joining,
    linalg,
    messages,
    out_arg,
    shape_ops,
    surface,
    tensor_math,
    torch_extras,  # noqa: F401 - its ops' numpy functions (np.rot90)
    vector_ops,
    views,
)
from .devices import DEVICE_TYPES
from .operands import wrap_array as _as_tensor
from .tensor import Tensor

_wrap = Tensor._make


def _rint(x):
    return tensor_math.round(x)


def _floor_divide(x, y):
    # torch's derivatives write this as `div(rounding_mode="floor")`, whose gradient is
    # zero; `x // y` itself (tensor_math.floor_divide) has none, as in torch
    return tensor_math.div(x, y, rounding_mode="floor")


# the ufuncs whose Tensor op is not the one their numpy name's surface gives (the ops'
# own are added from `surface.NUMPY` below)
UFUNCS = {
    np.positive: lambda x: x,
    np.fabs: tensor_math.abs,
    np.rint: _rint,
    np.floor_divide: _floor_divide,
    # the registry's torch_sign computes torch's sign (0 at NaN), not np.sign itself, so no
    # entry names np.sign: the VJPs that call it (abs, norms) on Tensors, when the graph is
    # recorded for a double backward, get torch.sign, as torch's own derivatives (sgn) do
    np.sign: tensor_math.sign,
}

_REDUCE = {
    np.add: tensor_math.sum,
    np.multiply: tensor_math.prod,
    np.maximum: tensor_math.amax,
    np.minimum: tensor_math.amin,
    np.logical_and: tensor_math.all,
    np.logical_or: tensor_math.any,
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


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def _ufunc_into(ufunc, method, inputs, kwargs, outs):
    """A ufunc with Tensors among its out=: numpy computes into copies of their arrays (where=
    keeps their values where it is False), which are then written into the Tensors with
    torch's out= checks and a version bump. numpy wrote into the arrays themselves, behind
    the version counter: `y = x * w; np.multiply(w, 5, out=w)` then backward gave x.grad 5,
    the gradient of a product with the new w, with no error."""
    copies = tuple(np.array(_plain(o)) if isinstance(o, Tensor) else o for o in outs)
    plain = dict(kwargs, out=copies)
    getattr(ufunc, method)(*_plain(inputs), **_plain_kwargs(plain))
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    for o, c in zip(outs, copies):
        if isinstance(o, Tensor):
            out_arg.write_out(name, o, _wrap(c), inputs)
    return outs[0] if len(outs) == 1 else outs


def _ufunc_at(ufunc, inputs):
    """`np.<ufunc>.at(tensor, index, values)` other than add's (index_put_): numpy on a copy
    of the tensor's array, written back with a version bump (it wrote into the array itself,
    unseen by a backward that saved the tensor)."""
    target = inputs[0]
    copy = np.array(_plain(target))
    ufunc.at(copy, *_plain(inputs[1:]))
    out_arg.write_out(f"{ufunc.__name__}.at", target, _wrap(copy), inputs[1:])


def array_ufunc(ufunc, method, inputs, kwargs):
    fn = UFUNCS.get(ufunc)
    if method == "__call__" and fn is not None and not kwargs:
        return fn(*inputs)
    if method == "at" and ufunc is np.add:
        out, index = inputs[0], inputs[1]
        values = inputs[2] if len(inputs) > 2 else 1
        # (numpy's index: a list is one array of positions along the first axis, a tuple one
        # index per axis; index_put_'s list is torch's, one per axis: np.add.at(a, [0, 1], v)
        # added v to a[0, 1] alone, not to rows 0 and 1)
        if not isinstance(index, tuple):
            index = (index,)
        if isinstance(out, Tensor):
            inplace.index_put_(out, index, values, accumulate=True)
            return None
    outs = kwargs.get("out")
    if outs is not None and any(isinstance(o, Tensor) for o in _as_tuple(outs)):
        return _ufunc_into(ufunc, method, inputs, kwargs, _as_tuple(outs))
    if method == "at" and isinstance(inputs[0], Tensor):
        return _ufunc_at(ufunc, inputs)
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


def _where(condition, x=None, y=None):
    if x is None and y is None:
        return tensor_math.where(condition)
    return tensor_math.where(condition, x, y)


def _into(name, out, made, inputs, kw=None):
    """`made`, or written into numpy's out= where given (a Tensor, with torch's checks: these
    forms took out= and dropped it, `np.clip(t, 0, 1, out=t)` leaving t unclipped); numpy's
    keywords a form does not implement (`kw`, where=, casting=, ...) are refused."""
    if kw:
        raise errors.UnsupportedAPIError(
            f"np.{name}(tensor, {', '.join(f'{k}=...' for k in kw)}): sourcegrad's numpy form "
            f"of {name} on a Tensor does not take {', '.join(kw)}"
        )
    return made if out is None else out_arg.write_out(name, out, made, inputs)


def _clip(a, a_min=None, a_max=None, out=None, **kw):
    a_min = kw.pop("min", a_min)
    a_max = kw.pop("max", a_max)
    made = tensor_math.clamp(_as_tensor(a), a_min, a_max)
    return _into("clip", out, made, (a, a_min, a_max), kw)


def _concatenate(arrays, axis=0, out=None, **kw):
    made = shape_ops.cat([_as_tensor(a) for a in arrays], axis)
    return _into("concatenate", out, made, tuple(arrays), kw)


def _stack(arrays, axis=0, out=None, **kw):
    made = shape_ops.stack([_as_tensor(a) for a in arrays], axis)
    return _into("stack", out, made, tuple(arrays), kw)


def _take(a, indices, axis=None, out=None, mode="raise"):
    return _into("take", out, _taken(a, indices, axis, mode), (a,))


def _taken(a, indices, axis, mode):
    a = _as_tensor(a)
    if axis is None:
        a, axis = shape_ops.reshape(a, (-1,)), 0
    if isinstance(indices, (int, np.integer)):
        # (modes wrap and clip read an index out of range as numpy does: clip reads -1 as 0)
        return shape_ops.select(a, axis, int(taken_index(int(indices), a._data, axis, mode)))
    idx = indices._data if isinstance(indices, Tensor) else indices
    if type(idx) not in DEVICE_TYPES:
        idx = np.asarray(list(idx) if isinstance(idx, range) else idx)
    idx = taken_index(idx, a._data, axis, mode)
    return shape_ops.pick(a, "IndexBackward0", (slice(None),) * (axis % a._data.ndim) + (idx,))


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
    return _into("all", out, tensor_math.all(a, axis, keepdims), (a,), kw)


def _any(a, axis=None, out=None, keepdims=False, **kw):
    return _into("any", out, tensor_math.any(a, axis, keepdims), (a,), kw)


def _argmax(a, axis=None, out=None, keepdims=False):
    return _into("argmax", out, tensor_math.argmax(a, axis, keepdims), (a,))


def _argmin(a, axis=None, out=None, keepdims=False):
    return _into("argmin", out, tensor_math.argmin(a, axis, keepdims), (a,))


def _round(a, decimals=0, out=None):
    # (torch's round(decimals=0) refuses integers, numpy's np.round(ints) keeps them)
    made = tensor_math.round(a) if decimals == 0 else tensor_math.round(a, decimals=decimals)
    return _into("round", out, made, (a,))


def _take_along_axis(arr, indices, axis):
    return shape_ops.gather(_as_tensor(arr), axis, indices)


def _copy(a, order="K", subok=False):
    return shape_ops.clone(_as_tensor(a))


def _nonzero(a):
    return shape_ops.nonzero(a, as_tuple=True)


def _stacking(fn):
    """np.hstack / vstack / dstack / column_stack of Tensors (and arrays): torch's function."""

    def numpy_form(tup, *, dtype=None, casting="same_kind"):
        return fn([_as_tensor(t) for t in tup])

    return numpy_form


def _kron(a, b):
    return composites.kron(_as_tensor(a), _as_tensor(b))


def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """np.cross of Tensors: torch.linalg.cross along the vectors' axis, with numpy's axisa,
    axisb and axisc moving them last first (axis, given, sets all three)."""
    a, b = _as_tensor(a), _as_tensor(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = views.movedim(a, axisa, -1), views.movedim(b, axisb, -1)
    # (numpy broadcasts operands of different ranks: the lower one gets leading 1s)
    n = max(a.dim(), b.dim())
    a = shape_ops.reshape(a, (1,) * (n - a.dim()) + tuple(a.shape))
    b = shape_ops.reshape(b, (1,) * (n - b.dim()) + tuple(b.shape))
    return views.movedim(vector_ops.linalg_cross(a, b), -1, axisc)


# the numpy functions on Tensors that are not an op's numpy form (those come from
# `surface.NUMPY` below): eager-only ops with numpy's signature, factories, shape reads
FUNCTIONS = {
    np.where: _where,
    np.clip: _clip,
    np.concatenate: _concatenate,
    np.stack: _stack,
    np.take: _take,
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
    np.kron: _kron,
    np.cross: _cross,
    np.hstack: _stacking(joining.hstack),
    np.vstack: _stacking(joining.vstack),
    np.dstack: _stacking(joining.dstack),
    np.column_stack: _stacking(joining.column_stack),
}


def _add_surface():
    """The numpy functions of the surface's ops (`surface.NUMPY`: the registry's entries whose
    torch names say so, `Torch.numpy`, and the `@export(numpy=...)` of eager-only ops): a
    ufunc dispatches through `__array_ufunc__`, another function (np.sinc, np.sum) through
    `__array_function__`."""
    for fn, op in surface.NUMPY.items():
        (UFUNCS if isinstance(fn, np.ufunc) else FUNCTIONS).setdefault(fn, op)


_add_surface()
FUNCTIONS.update(linalg.NUMPY)  # np.linalg.inv(tensor), ...
FUNCTIONS.update(cholesky.NUMPY)  # np.linalg.cholesky(tensor)
FUNCTIONS.update(fft.NUMPY)  # np.fft.fft(tensor), np.real(tensor), ...
UFUNCS.update(fft.UFUNCS)


# numpy functions with no entry that write into their first argument
_WRITE_FIRST = {np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis}


def array_function(func, args, kwargs):
    fn = FUNCTIONS.get(func)
    if fn is not None:
        return fn(*args, **kwargs)
    out = kwargs.get("out")
    if func in _WRITE_FIRST and args and isinstance(args[0], Tensor):
        return _written_into(
            func, args[0], lambda a: func(a, *_plain(args[1:]), **_plain_kwargs(kwargs))
        )
    if isinstance(out, Tensor):
        rest = {k: v for k, v in kwargs.items() if k != "out"}
        return _written_into(
            func, out, lambda a: func(*_plain(args), out=a, **_plain_kwargs(rest)), out
        )
    return func(*_plain(args), **_plain_kwargs(kwargs))


def _written_into(func, target, call, result_is_target=None):
    """numpy's `func` writing into the Tensor `target` (np.copyto, np.put, np.putmask, np.place,
    np.fill_diagonal, np.put_along_axis, out=): on a copy of its array, written back with
    copy_ (torch's checks, a version bump). numpy wrote into the array itself, behind the
    version counter: `y = x * w; np.copyto(w, 5)` then backward gave x.grad 5, the gradient of
    a product with the new w, where the product computed had 1."""
    copy = np.array(_plain(target))
    result = call(copy)
    inplace.copy_(target, _wrap(copy))
    return result_is_target if result_is_target is not None else result
