"""Indexing on Tensors: `x[index]` (getitem), gather, index_select, take, masked_select,
diagonal, diag, trace, masked_fill, sort, argsort, topk, median, nanmedian, kthvalue,
nonzero, unique, repeat_interleave.

Indexing is decomposed as torch decomposes it, so the nodes match torch's: an
int is a `select` (SelectBackward0), a slice other than `:` is a SliceBackward0,
`None` an UnsqueezeBackward0, and integer-array or boolean-mask indices end in
one IndexBackward0. All of them use the registry's `getitem` rule.

Takes Tensors and indices; returns Tensors (views where torch's are). `diag` writes through
the `index_put_` method (not an import of `inplace`).

Imports: `views`, `operands`, `spec`, `tensor`, `surface` and the leaves.
"""

from __future__ import annotations

import numpy as np

from . import devices
from .operands import along_index, cached_spec, return_types, same_device, wrap_dim
from .operands import data_of as _data
from .operands import needs_grad as _needs_grad
from .operands import result as _result
from .spec import OpSpec, record
from .surface import export
from .tensor import Tensor
from .views import alias, expand, record_view, reshape, select, slice_dim, unsqueeze

_wrap = Tensor._make

INDEX = OpSpec("IndexBackward0", "getitem", n_arrays=1)
MASKED_FILL = OpSpec("MaskedFillBackward0", "where", edges=(2,))


# --- indexing ----------------------------------------------------------------------------------


def index_array(item):
    """An advanced-index item (Tensor, list, ndarray) as an integer or boolean ndarray."""
    a = (
        item._data
        if isinstance(item, Tensor)
        else (item if type(item) in devices.DEVICE_TYPES else np.asarray(item))
    )
    if a.dtype.kind not in "biu":
        if a.size == 0:
            return a.astype(np.int64)
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return a


def _is_int(item):
    if isinstance(item, (bool, np.bool_)):
        return False
    if isinstance(item, (int, np.integer)):
        return True
    return isinstance(item, Tensor) and item._data.ndim == 0 and item._data.dtype.kind in "iu"


def _dims_used(item):
    if item is None or item is Ellipsis:
        return 0
    if isinstance(item, (slice, int, np.integer)):
        return 1
    a = index_array(item)
    return a.ndim if a.dtype == np.bool_ else 1


def decompose_index(x, index, skip_full_slices=True):
    """Apply the basic part of `index` (selects, slices, unsqueezes) to x, as torch does.

    Returns the resulting tensor and the advanced index that remains for it (or None).
    A slice that takes a whole dimension (`:`, `0:n`) is skipped, as torch skips it,
    unless `skip_full_slices` is false (`x[:]` alone is a SliceBackward0 in torch).
    """
    if not isinstance(index, tuple):
        index = (index,)
    ndim = x._data.ndim
    specified = 0
    for item in index:
        specified += _dims_used(item)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    result = x
    dim = 0
    advanced = {}
    for item in index:
        if item is None:
            result = unsqueeze(result, dim)
            dim += 1
        elif item is Ellipsis:
            dim += ndim - specified
        elif _is_int(item):
            result = select(result, dim, int(item))
        elif isinstance(item, slice):
            size = result._data.shape[dim] if dim < result._data.ndim else 0
            if not (skip_full_slices and item.indices(size) == (0, size, 1)):
                result = slice_dim(result, dim, item)
            dim += 1
        else:
            a = index_array(item)
            if type(a) is not type(x._data) and type(a) in devices.DEVICE_TYPES:
                raise RuntimeError(
                    "indices should be either on cpu or on the same device as the "
                    f"indexed tensor ({x.device})"
                )
            if a.dtype == np.bool_:
                if a.ndim == 0:
                    # x[True] adds a dimension of 1; x[False] one of 0
                    result = unsqueeze(result, dim)
                    if not a:
                        advanced[dim] = np.zeros(0, np.int64)
                    dim += 1
                    continue
                shape = result._data.shape[dim : dim + a.ndim]
                if a.shape != shape:
                    raise IndexError(
                        f"The shape of the mask {list(a.shape)} at index {dim} does "
                        f"not match the shape of the indexed tensor {list(shape)}"
                    )
                for k, nz in enumerate(np.nonzero(a)):
                    advanced[dim + k] = nz
                dim += a.ndim
            else:
                size = result._data.shape[dim]
                if a.size and (a.max() >= size or a.min() < -size):
                    bad = a.max() if a.max() >= size else a.min()
                    raise IndexError(
                        f"index {bad} is out of bounds for dimension {dim} with size {size}"
                    )
                advanced[dim] = a
                dim += 1
    if not advanced:
        return result, None
    last = max(advanced)
    key = tuple(advanced.get(d, slice(None)) for d in range(last + 1))
    return result, key


def getitem(input, index):
    result, key = decompose_index(input, index, skip_full_slices=not isinstance(index, slice))
    if key is None:
        if result is input:
            return alias(input)
        return result
    out = _wrap(_result(result._data[key]))
    if _needs_grad(result):
        record(INDEX, out, (result,), {"index": key})
    return out


# --- selection by index arrays (all through the getitem rule) --------------------------------


def pick(input, node_name, key):
    out = _wrap(_result(input._data[key]))
    if _needs_grad(input):
        record(cached_spec(node_name, "getitem", n_arrays=1), out, (input,), {"index": key})
    return out


@export("gather")
def gather(input, dim, index, *, sparse_grad=False):
    axis = wrap_dim(dim, input._data.ndim)
    if isinstance(index, Tensor) and index._data.dtype not in (np.int64, np.int32):
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    if isinstance(index, Tensor) and input._data.ndim and index._data.ndim != input._data.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    idx = index_array(index)
    if type(idx) is not type(input._data):
        devices.check_same(input._data, idx)
    return pick(input, "GatherBackward0", along_index(idx, axis, input._data.ndim))


@export("take_along_dim")
def take_along_dim(input, indices, dim=None):
    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    return gather(input, dim, indices)


@export("index_select")
def index_select(input, dim, index):
    axis = dim % input._data.ndim if input._data.ndim else 0
    idx = index_array(index).reshape(-1)
    if type(idx) is not type(input._data):
        devices.check_same(input._data, idx)
    return pick(input, "IndexSelectBackward0", (slice(None),) * axis + (idx,))


@export("take")
def take(input, index):
    idx = index_array(index)
    if type(idx) is not type(input._data):
        devices.check_same(input._data, idx)
    flat = reshape(input, (-1,))
    return pick(flat, "TakeBackward0", (idx,))


@export("masked_select")
def masked_select(input, mask):
    same_device(input, mask)
    m = np.broadcast_to(
        index_array(mask), np.broadcast_shapes(input._data.shape, _data(mask).shape)
    )
    x = expand(input, m.shape) if m.shape != input._data.shape else input
    return pick(x, "MaskedSelectBackward0", np.nonzero(m))


@export("diagonal")
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal as a view of input (as in torch: writing into it writes into input).

    The gradient goes through the getitem rule with the diagonal's index arrays.
    """
    shape = input._data.shape
    n = len(shape)
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    size = max(0, min(shape[d1] - max(-offset, 0), shape[d2] - max(offset, 0)))
    others = [a for a in range(n) if a not in (d1, d2)]
    k = len(others) + 1
    key = [None] * n
    xp = devices.xp_of(input._data)
    diag = xp.arange(size)
    key[d1] = (diag + max(-offset, 0)).reshape((1,) * (k - 1) + (size,))
    key[d2] = (diag + max(offset, 0)).reshape((1,) * (k - 1) + (size,))
    for j, a in enumerate(others):
        s = [1] * k
        s[j] = shape[a]
        key[a] = xp.arange(shape[a]).reshape(s)
    data = input._data.diagonal(offset, d1, d2)
    if type(data) is np.ndarray and input._data.flags.writeable:
        # numpy hands out the diagonal read-only; writing through it is safe where its
        # elements have their own memory (devices.writeable says)
        data.flags.writeable = True
    return record_view(
        input,
        data,
        ("diagonal", (offset, d1, d2)),
        cached_spec("DiagonalBackward0", "getitem", n_arrays=1),
        {"index": tuple(key)},
    )


@export("diag")
def diag(input, diagonal_=0):
    if input._data.ndim == 1:
        n = input._data.shape[0] + abs(diagonal_)
        xp = devices.xp_of(input._data)
        out = _wrap(xp.zeros((n, n), input._data.dtype))
        rows = xp.arange(input._data.shape[0]) + max(-diagonal_, 0)
        cols = xp.arange(input._data.shape[0]) + max(diagonal_, 0)
        out.index_put_((rows, cols), input)  # inplace.index_put_, installed by methods.py
        return out
    return diagonal(input, diagonal_)


@export("trace")
def trace(input):
    return diagonal(input).sum()


@export("masked_fill")
def masked_fill(input, mask, value):
    m = index_array(mask)
    if isinstance(value, Tensor) and value._data.ndim == 0 and not value._requires_grad:
        value = value.item()
    d = input._data
    v = value._data if isinstance(value, Tensor) else value
    if type(m) is not type(d) or (type(v) is not type(d) and hasattr(v, "dtype")):
        devices.check_same(m, v, d)
    out = _wrap(_result(np.where(m, v, d), d.dtype))
    if _needs_grad(input):
        record(MASKED_FILL, out, (m, value, input))
    return out


@export("sort")
def sort(input, dim=-1, descending=False, stable=False):
    d = input._data
    if d.ndim == 0:
        return return_types.sort(
            pick(input, "SortBackward0", ()), _wrap(devices.xp_of(d).zeros((), np.int64))
        )
    axis = dim % d.ndim
    idx = _descending_order(d, axis) if descending else _argsort(d, axis)
    values = pick(input, "SortBackward0", along_index(idx, axis, d.ndim))
    return return_types.sort(values, _wrap(idx.astype(np.int64)))


def _descending_order(d, axis):
    """The stable descending order along axis, NaN first (torch's: NaN is the largest), equal
    elements in their first order. The stable ascending order of the reversed slices,
    reversed: no `-d`, which kept NaN last and wraps unsigned (and INT_MIN) values."""
    order = _argsort(np.flip(d, axis), axis)
    return (d.shape[axis] - 1) - np.flip(order, axis)


def _argsort(d, axis):
    """A stable argsort (CuPy's is always stable and takes no `kind`)."""
    if type(d) is np.ndarray:
        return np.argsort(d, axis=axis, kind="stable")
    return d.argsort(axis=axis)


def _order_statistic(input, dim, keepdim, position, name):
    """The element at `position(n, nans)` of each slice along `dim` in sorted order (stable,
    NaN last; `nans`: the NaNs of each slice), as torch gives it: for dim None a 0-d value
    whose gradient the elements equal to it share (`<name>Backward0`, the rule of max; a
    NaN's goes to the first NaN, where torch shares it among the NaNs), else (values,
    indices), each value's gradient at its index (`<name>Backward1`; kthvalue's is
    KthvalueBackward0)."""
    d = input._data
    xp = devices.xp_of(d)
    flat = xp.reshape(d, -1) if dim is None else d
    axis = 0 if dim is None or d.ndim == 0 else dim % d.ndim
    line = flat if flat.ndim else xp.reshape(flat, (1,))
    order = _argsort(line, axis)
    nans = xp.isnan(line).sum(axis=axis, keepdims=True) if line.dtype.kind in "fc" else 0
    k = xp.broadcast_to(xp.asarray(position(line.shape[axis], nans)), order.take([0], axis).shape)
    if (k < 0).any() or (k >= line.shape[axis]).any():
        raise RuntimeError(f"{name.lower()}(): selected number k out of range for dimension {axis}")
    idx = xp.take_along_axis(order, k.astype(order.dtype), axis)  # (keeping the dim)
    node = f"{name}Backward{0 if name == 'Kthvalue' else 1}"
    if dim is None:
        value = _wrap(_result(flat[idx.reshape(())]))
        if _needs_grad(input) and not xp.isnan(value._data):
            record(
                cached_spec(f"{name}Backward0", "max", n_arrays=1),
                value,
                (input,),
                {"axis": None, "keepdims": False},
            )
            return value
        return pick(reshape(input, (-1,)), f"{name}Backward0", (idx.reshape(()),))
    if d.ndim == 0:
        values = pick(input, node, ())
        return getattr(return_types, name.lower())(values, _wrap(xp.zeros((), np.int64)))
    index = along_index(idx, axis, d.ndim)
    if not keepdim:
        index = tuple(i.squeeze(axis) for i in index)
        idx = idx.squeeze(axis)
    values = pick(input, node, index)
    return getattr(return_types, name.lower())(values, _wrap(idx.astype(np.int64)))


@export("median")
def median(input, dim=None, keepdim=False):
    """The lower of the two middle values (NaN where a slice has one); along `dim`, with its
    index."""
    return _order_statistic(
        input, dim, keepdim, lambda n, nans: np.where(nans > 0, n - nans, (n - 1) // 2), "Median"
    )


@export("nanmedian")
def nanmedian(input, dim=None, keepdim=False):
    """median of the values that are not NaN (NaN where all are)."""
    return _order_statistic(
        input, dim, keepdim, lambda n, nans: np.maximum((n - nans - 1) // 2, 0), "Nanmedian"
    )


@export("kthvalue")
def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest element along `dim` (1-based) and its index."""
    return _order_statistic(input, dim, keepdim, lambda n, nans: np.asarray(k - 1), "Kthvalue")


@export("argsort")
def argsort(input, dim=-1, descending=False, stable=False):
    return sort(input, dim, descending, stable)[1]


@export("topk")
def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - torch's name
    d = input._data
    axis = dim % d.ndim
    order = _descending_order(d, axis) if largest else _argsort(d, axis)
    idx = np.take(order, devices.xp_of(d).arange(k), axis=axis)
    values = pick(input, "TopkBackward0", along_index(idx, axis, d.ndim))
    return return_types.topk(values, _wrap(idx.astype(np.int64)))


@export("nonzero")
def nonzero(input, *, as_tuple=False):
    nz = np.nonzero(input._data)
    if as_tuple:
        return tuple(_wrap(a.astype(np.int64)) for a in nz)
    return _wrap(
        np.stack(nz, axis=-1).astype(np.int64)
        if nz
        else devices.xp_of(input._data).zeros((0, 0), np.int64)
    )


@export("argwhere")
def argwhere(input):
    return nonzero(input)


@export("unique")
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    # equal_nan=False: torch keeps every NaN apart (NaN != NaN), numpy's default merges them;
    # dim: the unique slices along it (rows for dim=0), each one element of the inverse
    values, inverse, counts = np.unique(
        input._data, return_inverse=True, return_counts=True, axis=dim, equal_nan=False
    )
    out = [_wrap(values)]
    if return_inverse:
        shape = input._data.shape if dim is None else (-1,)
        out.append(_wrap(inverse.reshape(shape).astype(np.int64)))
    if return_counts:
        out.append(_wrap(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


@export("repeat_interleave")
def repeat_interleave(input, repeats, dim=None):
    if dim is None:
        input, dim = reshape(input, (-1,)), 0
    d = input._data
    axis = dim % d.ndim
    xp = devices.xp_of(d)
    reps = _data(repeats) if isinstance(repeats, Tensor) else repeats
    if xp is not np and hasattr(reps, "tolist"):
        reps = reps.tolist()  # CuPy's repeat takes an int or a list of them
    idx = xp.repeat(xp.arange(d.shape[axis]), reps)
    return index_select(input, axis, _wrap(idx))
