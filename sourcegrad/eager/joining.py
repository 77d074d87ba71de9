"""Joining and splitting Tensors: cat, stack, hstack/vstack/dstack/column_stack,
atleast_Nd, split, tensor_split, chunk, unbind; diff (prepend, input and append joined, then
differences of neighbours).

Takes Tensors (and arrays, wrapped); returns the joined Tensor (CatBackward0,
StackBackward0) or the pieces, views of the input that one multi-output node records
(SplitBackward0, UnbindBackward0), which in-place ops may not modify, as in torch.

Imports: `views`, `operands`, `spec`, `tensor`, `surface` and the leaves.
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .operands import as_tensor as _as_tensor
from .operands import needs_grad as _needs_grad
from .operands import result as _result
from .operands import same_device, wrap_dim
from .out_arg import no_keywords, write_out
from .spec import OpSpec, record
from .surface import export
from .tensor import Tensor
from .views import reshape, unsqueeze, view_of

_wrap = Tensor._make

CAT = OpSpec("CatBackward0", "concatenate")
STACK = OpSpec("StackBackward0", "stack")
SPLIT = OpSpec("SplitBackward0", "split", n_arrays=1, multi_output=True)
SPLIT_SIZES = OpSpec("SplitWithSizesBackward0", "split", n_arrays=1, multi_output=True)
UNBIND = OpSpec("UnbindBackward0", "unbind", n_arrays=1, multi_output=True)


# --- joining and splitting ------------------------------------------------------------------


def _promoted_datas(tensors):
    keys = [(t.dtype, dtypes.TIER_DIM) for t in tensors]
    rd = dtypes.result_type(*keys).dtype
    if len({type(t._data) for t in tensors}) > 1:
        same_device(*tensors)
    return [t._data if t._data.dtype == rd else t._data.astype(rd) for t in tensors], rd


def _tensor_list(tensors):
    """cat/stack operands as Tensors (arrays are wrapped; numbers and lists refused, as torch)."""
    out = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            if not hasattr(t, "__array__"):
                raise TypeError(
                    f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}"
                )
            t = _as_tensor(t)
        out.append(t)
    return out


@export("cat", "concat", "concatenate", methods=())
def cat(tensors, dim=0, *, out=None, **kwargs):
    if out is not None:
        made = cat(tensors, dim, **kwargs)
        return write_out("cat", out, made, tuple(tensors))
    if "axis" in kwargs:
        dim = kwargs.pop("axis")
    no_keywords("cat", kwargs)
    tensors = _tensor_list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    # torch skips legacy empty 1-D tensors in cat
    kept = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)] or tensors[:1]
    ndim = kept[0]._data.ndim
    if ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    axis = wrap_dim(dim, ndim)
    datas, rd = _promoted_datas(kept)
    try:
        joined = np.concatenate(datas, axis=axis)
    except ValueError:
        raise _cat_error(kept, axis) from None
    out_t = _wrap(_result(joined, rd))
    if _needs_grad(*kept):
        record(CAT, out_t, tuple(kept), {"axis": axis})
    return out_t


concat = concatenate = cat


def _cat_error(tensors, axis):
    """torch's error for tensors that do not concatenate along axis (numpy's said why)."""
    first = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        shape = t._data.shape
        if len(shape) != len(first):
            return RuntimeError(
                f"Tensors must have same number of dimensions: got {len(first)} and {len(shape)}"
            )
        for d, (a, b) in enumerate(zip(first, shape)):
            if d != axis and a != b:
                return RuntimeError(
                    f"Sizes of tensors must match except in dimension {axis}. Expected size {a} "
                    f"but got size {b} for tensor number {i} in the list."
                )
    return RuntimeError("torch.cat(): the tensors cannot be concatenated")


@export("stack", methods=())
def stack(tensors, dim=0, *, out=None, **kwargs):
    if out is not None:
        made = stack(tensors, dim, **kwargs)
        return write_out("stack", out, made, tuple(tensors))
    if "axis" in kwargs:
        dim = kwargs.pop("axis")
    no_keywords("stack", kwargs)
    tensors = _tensor_list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    axis = wrap_dim(dim, tensors[0]._data.ndim + 1)
    first = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != first:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 "
                f"and {list(t._data.shape)} at entry {i}"
            )
    datas, rd = _promoted_datas(tensors)
    out_t = _wrap(_result(np.stack(datas, axis=axis), rd))
    if _needs_grad(*tensors):
        record(STACK, out_t, tuple(tensors), {"axis": axis})
    return out_t


@export("hstack", methods=())
def hstack(tensors):
    tensors = [atleast_1d(t) for t in tensors]
    return cat(tensors, 0 if tensors[0]._data.ndim == 1 else 1)


@export("vstack", "row_stack", methods=())
def vstack(tensors):
    return cat([atleast_2d(t) for t in tensors], 0)


row_stack = vstack


@export("dstack", methods=())
def dstack(tensors):
    return cat([atleast_3d(t) for t in tensors], 2)


@export("column_stack", methods=())
def column_stack(tensors):
    cols = [reshape(t, (-1, 1)) if t._data.ndim <= 1 else t for t in tensors]
    return hstack(cols)


@export("atleast_1d", methods=())
def atleast_1d(t):
    return reshape(t, (1,)) if t._data.ndim == 0 else t


@export("atleast_2d", methods=())
def atleast_2d(t):
    if t._data.ndim == 0:
        return reshape(t, (1, 1))
    return unsqueeze(t, 0) if t._data.ndim == 1 else t


@export("atleast_3d", methods=())
def atleast_3d(t):
    if t._data.ndim == 0:
        return reshape(t, (1, 1, 1))
    if t._data.ndim == 1:
        return unsqueeze(unsqueeze(t, 0), -1)
    return unsqueeze(t, -1) if t._data.ndim == 2 else t


def _pieces(x, spec, axis, datas, static, multi_output=True):
    lead = (slice(None),) * axis
    outs = []
    start = 0
    for d in datas:  # (a running sum: np.cumsum of a short list costs more than the views)
        stop = start + d.shape[axis]
        outs.append(view_of(x, d, ("index", lead + (slice(start, stop),)), multi_output))
        start = stop
    if _needs_grad(x):
        record(spec, None, (x,), static, outputs=outs)
    return tuple(outs)


@export("split")
def split(input, split_size_or_sections, dim=0):
    d = input._data
    axis = wrap_dim(dim, d.ndim)
    n = d.shape[axis]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size < 0:
            raise RuntimeError(
                f"split expects split_size be non-negative, but got split_size={size}"
            )
        if size == 0 and n != 0:
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
            )
        bounds = list(range(size, n, size)) if size > 0 else []
        spec = SPLIT
    else:
        sizes = list(split_size_or_sections)
        if builtins_sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} "
                f"(input tensor's size at dimension {axis}), but got "
                f"split_sizes={sizes}"
            )
        bounds = list(np.cumsum(sizes)[:-1])
        spec = SPLIT_SIZES
    # the pieces sliced here (np.split's Python costs ~5 us for a GPT's q, k, v)
    lead = (slice(None),) * axis
    edges = [0, *bounds, n]
    datas = [d[lead + (slice(a, b),)] for a, b in zip(edges, edges[1:])]
    return _pieces(
        input, spec, axis, datas, {"indices_or_sections": [int(b) for b in bounds], "axis": axis}
    )


@export("tensor_split")
def tensor_split(input, indices_or_sections, dim=0):
    d = input._data
    axis = dim % d.ndim
    datas = np.array_split(d, indices_or_sections, axis=axis)
    bounds = list(np.cumsum([a.shape[axis] for a in datas])[:-1])
    # torch's tensor_split returns slices, which in-place ops may modify
    return _pieces(
        input,
        SPLIT_SIZES,
        axis,
        datas,
        {"indices_or_sections": [int(b) for b in bounds], "axis": axis},
        multi_output=False,
    )


@export("chunk")
def chunk(input, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = input._data.shape[wrap_dim(dim, input._data.ndim)]
    if n == 0:
        # as torch: `chunks` empty pieces (split(0) would give one)
        return split(input, [0] * chunks, dim)
    size = -(-n // chunks)
    return split(input, size, dim)


@export("unbind")
def unbind(input, dim=0):
    d = input._data
    axis = wrap_dim(dim, d.ndim)
    outs = []
    for i in range(d.shape[axis]):
        key = (slice(None),) * axis + (i, Ellipsis)
        outs.append(view_of(input, d[key], ("index", key), multi_output=True))
    if _needs_grad(input):
        record(UNBIND, None, (input,), {"axis": axis}, outputs=outs)
    return tuple(outs)


import builtins as _builtins  # noqa: E402

builtins_sum = _builtins.sum


@export("diff")
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """torch.diff: `n` differences of neighbours along `dim` of prepend, input and append
    joined (CatBackward0), each a subtraction of two narrowed views (SubBackward0, as torch
    records it; a bool tensor's is logical_xor); as many as there are elements at most."""
    if input._data.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    for name, value in (("prepend", prepend), ("append", append)):
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"diff(): argument '{name}' must be Tensor, not {type(value).__name__}")
        if value is not None and value._data.ndim != input._data.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    joined = [t for t in (prepend, input, append) if t is not None]
    x = cat(joined, dim) if len(joined) > 1 else input.clone() if n == 0 else input
    dim = dim % x._data.ndim
    for _ in range(min(n, x._data.shape[dim])):
        length = x._data.shape[dim]
        later, earlier = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        x = later.logical_xor(earlier) if x.dtype.name == "bool" else later - earlier
    return x
