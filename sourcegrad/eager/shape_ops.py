"""Shape, view, joining and indexing ops.

Views: `view`, `reshape` (when no copy is needed), `transpose`, `permute`,
`squeeze`, `unsqueeze`, `expand`, `select`, slicing, `split`/`unbind` pieces are
numpy views of their input, so they share storage and the version counter, as
in torch. Each view records its base and the steps that took it from the base
(`Extra.view_steps`); an in-place op on a view uses them to find which elements
of the base it changed (`positions`), which is what `CopySlices` needs.

Indexing is decomposed as torch decomposes it, so the nodes match torch's: an
int is a `select` (SelectBackward0), a slice other than `:` is a SliceBackward0,
`None` an UnsqueezeBackward0, and integer-array or boolean-mask indices end in
one IndexBackward0. All of them use the shared table's `getitem` rule.

Imports: `operands`, `spec`, `tensor` and the leaves; not `ops` nor `inplace`
(`diag` writes through the `index_put_` method).

Why one module: the hand-written shape ops of the eager surface; moving them into registry
entries (which generate the surface, as they do for the elementwise ops) is the
redesign's next step (issue 17).
"""

from __future__ import annotations

import warnings

import numpy as np

from .out_arg import write_out
from . import devices, dtypes
from .dual_state import DUAL, any_tangent
from .grad_mode import STATE
from .operands import along_index, cached_spec, return_types, same_device
from .operands import as_tensor as _as_tensor, data_of as _data, needs_grad as _needs_grad
from .operands import result as _result
from .spec import OpSpec, record
from .tensor import DEFAULT_VIEW, MULTI_OUTPUT_VIEW, NO_GRAD_VIEW, Size, Tensor
from .tensor import stale_view_requires_grad

_wrap = Tensor._make

VIEW = OpSpec("ViewBackward0", "reshape", n_arrays=1)
RESHAPE_ALIAS = OpSpec("ReshapeAliasBackward0", "reshape", n_arrays=1)
UNSAFE_VIEW = OpSpec("UnsafeViewBackward0", "reshape", n_arrays=1)
CLONE = OpSpec("CloneBackward0", "positive")
TO_COPY = OpSpec("ToCopyBackward0", "positive")
SQUEEZE_ALL = OpSpec("SqueezeBackward0", "squeeze", n_arrays=1)
SQUEEZE_DIM = OpSpec("SqueezeBackward1", "squeeze", n_arrays=1)
SQUEEZE_DIMS = OpSpec("SqueezeBackward2", "squeeze", n_arrays=1)
SQUEEZE_4 = OpSpec("SqueezeBackward4", "squeeze", n_arrays=1)
UNSQUEEZE = OpSpec("UnsqueezeBackward0", "expand_dims", n_arrays=1)
TRANSPOSE = OpSpec("TransposeBackward0", "swapaxes", n_arrays=1)
T_OP = OpSpec("TBackward0", "T")
PERMUTE = OpSpec("PermuteBackward0", "transpose", n_arrays=1)
EXPAND = OpSpec("ExpandBackward0", "broadcast_to", n_arrays=1)
SELECT = OpSpec("SelectBackward0", "getitem", n_arrays=1)
SLICE = OpSpec("SliceBackward0", "getitem", n_arrays=1)
INDEX = OpSpec("IndexBackward0", "getitem", n_arrays=1)
ALIAS = OpSpec("AliasBackward0", "getitem", n_arrays=1)
CAT = OpSpec("CatBackward0", "concatenate")
STACK = OpSpec("StackBackward0", "stack")
SPLIT = OpSpec("SplitBackward0", "split", n_arrays=1, multi_output=True)
SPLIT_SIZES = OpSpec("SplitWithSizesBackward0", "split", n_arrays=1, multi_output=True)
UNBIND = OpSpec("UnbindBackward0", "unbind", n_arrays=1, multi_output=True)
FLIP = OpSpec("FlipBackward0", "flip", n_arrays=1)
ROLL = OpSpec("RollBackward0", "roll", n_arrays=1)
REPEAT = OpSpec("RepeatBackward0", "tile", n_arrays=1)
TRIL = OpSpec("TrilBackward0", "tril", n_arrays=1)
TRIU = OpSpec("TriuBackward0", "triu", n_arrays=1)
MASKED_FILL = OpSpec("MaskedFillBackward0", "where", edges=(2,))


# --- views -------------------------------------------------------------------------------------


def _view_of(x, data, step, multi_output=False):
    """Wrap `data` (a numpy view of x's data) as a view of x's base.

    `multi_output`: one of several views an op returns (unbind, split), which torch does
    not let an in-place op modify; nor a view made in no_grad mode, or one taken from such.
    """
    out = _wrap(data)
    base = x._base if x._base is not None else x
    vc = x._get_vc()
    out._base = base
    out._vc = vc
    ex = out._get_extra()
    ex.view_steps = (x._extra.view_steps if x._base is not None else ()) + (step,)
    ex.fn_version = vc.value
    creation = (
        (MULTI_OUTPUT_VIEW if multi_output else DEFAULT_VIEW) if STATE.enabled else NO_GRAD_VIEW
    )
    if x._base is not None and creation == DEFAULT_VIEW:
        creation = x._extra.creation  # a view of a view keeps what forbids the first one
    ex.creation = creation
    if (
        creation == NO_GRAD_VIEW
        and not STATE.inference
        and (x._requires_grad or (x._base is not None and x._base._requires_grad))
    ):
        out._requires_grad = True  # as torch's: a leaf-like view, with no grad_fn
    out._inference = x._inference
    return out


def _view(x, data, step, spec, static):
    out = _view_of(x, data, step)
    if (
        STATE.enabled
        and (x._requires_grad or (x._base is not None and stale_view_requires_grad(x)))
        or (DUAL.on and any_tangent((x,)))
    ):
        record(spec, out, (x,), static)
    return out


def apply_steps(array, steps):
    """Replay the view steps on another array of the base's shape."""
    for kind, arg in steps:
        if kind == "index":
            array = array[arg]
        elif kind == "reshape":
            array = array.reshape(arg)
        elif kind == "permute":
            array = array.transpose(arg)
        elif kind == "expand":
            array = np.broadcast_to(array, arg)
        elif kind == "diagonal":
            array = array.diagonal(*arg)
        else:
            raise AssertionError(kind)
    return array


def positions(view):
    """For each element of a view, its flat index in the view's base."""
    base = view._base
    xp = np if type(base._data) is np.ndarray else devices.xp_of(base._data)
    flat = xp.arange(base._data.size).reshape(base._data.shape)
    return apply_steps(flat, view._extra.view_steps)


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def _infer(shape, numel, where="view"):
    shape = list(shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[shape.index(-1)] = numel // known
    total = 1
    for s in shape:
        total *= s
    if total != numel:
        raise RuntimeError(
            f"shape '[{', '.join(str(s) for s in shape)}]' is invalid for input of size {numel}"
        )
    return tuple(shape)


def view(input, *shape):
    if len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
        raise NotImplementedError("sourcegrad: view(dtype) is not supported")
    shape = _infer(_shape_arg(shape), input._data.size)
    try:
        data = np.reshape(input._data, shape, copy=False)
    except ValueError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at "
            "least one dimension spans across two contiguous subspaces). Use "
            ".reshape(...) instead."
        ) from None
    return _view(input, data, ("reshape", shape), VIEW, {"shape": shape})


def reshape(input, *shape):
    """A view when the data allows one (ViewBackward0), else a copy (UnsafeView of Clone)."""
    shape = _infer(_shape_arg(shape), input._data.size)
    try:
        data = np.reshape(input._data, shape, copy=False)
    except ValueError:
        return unsafe_view(contiguous(input), shape)
    # torch views a contiguous input, and takes a strided one by _reshape_alias
    spec = VIEW if input._data.flags.c_contiguous else RESHAPE_ALIAS
    return _view(input, data, ("reshape", shape), spec, {"shape": shape})


def unsafe_view(input, shape):
    """A reshape torch records as UnsafeViewBackward0 (its input is a fresh copy)."""
    shape = tuple(shape)
    out = _wrap(np.reshape(input._data, shape))
    if _needs_grad(input):
        record(UNSAFE_VIEW, out, (input,), {"shape": shape})
    return out


def view_as(input, other):
    return view(input, other._data.shape)


def reshape_as(input, other):
    return reshape(input, other._data.shape)


def flatten(input, start_dim=0, end_dim=-1):
    shape = input._data.shape
    if not shape:
        return reshape(input, (1,))
    n = len(shape)
    start, end = start_dim % n, end_dim % n
    if start == end:
        return input
    size = 1
    for s in shape[start : end + 1]:
        size *= s
    return reshape(input, shape[:start] + (size,) + shape[end + 1 :])


def ravel(input):
    return reshape(input, (-1,))


def unflatten(input, dim, sizes):
    shape = input._data.shape
    dim %= len(shape)
    sizes = list(sizes)
    if -1 in sizes:
        known = int(np.prod([s for s in sizes if s != -1]))
        sizes[sizes.index(-1)] = shape[dim] // known
    return view(input, shape[:dim] + tuple(sizes) + shape[dim + 1 :])


def squeeze(input, dim=None, **kwargs):
    if dim is None and "axis" in kwargs:
        dim = kwargs.pop("axis")
    shape = input._data.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
        spec = SQUEEZE_ALL
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        n = len(shape)
        dims = {d % n for d in dims} if n else set()
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
        spec = SQUEEZE_DIMS if isinstance(dim, (tuple, list)) else SQUEEZE_DIM
    return _view(input, input._data.reshape(new), ("reshape", new), spec, None)


def squeeze4(input, dim):
    """The squeeze torch's matmul uses for a vector @ matrix (SqueezeBackward4)."""
    shape = input._data.shape
    new = shape[:dim] + shape[dim + 1 :] if shape[dim] == 1 else shape
    return _view(input, input._data.reshape(new), ("reshape", new), SQUEEZE_4, None)


def unsqueeze(input, dim):
    n = input._data.ndim + 1
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    dim %= n
    data = np.expand_dims(input._data, dim)
    return _view(input, data, ("reshape", data.shape), UNSQUEEZE, {"axis": dim})


def transpose(input, dim0, dim1):
    n = input._data.ndim
    if n == 0:
        return alias(input)
    d0, d1 = dim0 % n, dim1 % n
    axes = list(range(n))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return _view(
        input,
        input._data.transpose(axes),
        ("permute", tuple(axes)),
        TRANSPOSE,
        {"axis1": d0, "axis2": d1},
    )


swapaxes = swapdims = transpose


def t(input):
    n = input._data.ndim
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    axes = tuple(range(n))[::-1]
    return _view(input, input._data.T, ("permute", axes), T_OP, None)


def permute(input, *dims):
    n = input._data.ndim
    axes = tuple(int(d) % n for d in _shape_arg(dims)) if n else ()
    if sorted(axes) != list(range(n)):
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does "
            "not match the length of the desired ordering of dimensions i.e. "
            f"input.dim() = {n} is not equal to len(dims) = {len(axes)}"
        )
    return _view(input, input._data.transpose(axes), ("permute", axes), PERMUTE, {"axes": axes})


def T(input):
    """x.T: all dimensions reversed (PermuteBackward0), a view even of a 0-d or 1-d tensor."""
    n = input._data.ndim
    if n != 2:
        warnings.warn(_T_0D if n == 0 else _T_ND, UserWarning, stacklevel=3)
    return permute(input, tuple(range(n))[::-1])


_T_ND = (
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
    "deprecated and it will throw an error in a future release. Consider `x.mT` to transpose "
    "batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
    "dimensions of a tensor."
)
_T_0D = "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases."


def mT(input):
    return transpose(input, -2, -1)


def movedim(input, source, destination):
    n = input._data.ndim
    src = [s % n for s in (source if isinstance(source, (tuple, list)) else (source,))]
    dst = [
        d % n for d in (destination if isinstance(destination, (tuple, list)) else (destination,))
    ]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


moveaxis = movedim


def expand(input, *sizes):
    sizes = _shape_arg(sizes)
    shape = input._data.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(sizes)}): the "
            "number of sizes provided "
            f"({len(sizes)}) must be greater or equal to the number of dimensions "
            f"in the tensor ({len(shape)})"
        )
    target = tuple(shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    try:
        data = np.broadcast_to(input._data, target)
    except ValueError:
        raise RuntimeError(
            f"The expanded size of the tensor ({target[-1]}) must match the "
            f"existing size ({shape[-1]}) at non-singleton dimension "
            f"{len(target) - 1}.  Target sizes: {list(sizes)}.  Tensor sizes: "
            f"{list(shape)}"
        ) from None
    if type(data) is np.ndarray and input._data.flags.writeable:
        # numpy hands out a broadcast read-only; torch lets an in-place op write into a view
        # of it whose elements have their own memory (`x.expand(2, 3)[0]`), and refuses one
        # where they do not (devices.writeable)
        data.flags.writeable = True
    return _view(input, data, ("expand", target), EXPAND, {"shape": target})


def expand_as(input, other):
    return expand(input, other._data.shape)


def broadcast_to(input, size):
    return expand(input, size)


def broadcast_tensors(*tensors):
    shape = np.broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def select(input, dim, index):
    shape = input._data.shape
    n = len(shape)
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim %= n
    size = shape[dim]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {dim} with size {size}")
    # the Ellipsis keeps a 0-d result a view (a bare int index would copy it out)
    key = (slice(None),) * dim + (int(index) % size, Ellipsis)
    return _view(input, input._data[key], ("index", key), SELECT, {"index": key})


def _slice(input, dim, s):
    if s.step is not None and s.step <= 0:
        raise ValueError("step must be greater than zero")
    key = (slice(None),) * dim + (s,)
    return _view(input, input._data[key], ("index", key), SLICE, {"index": key})


def narrow(input, dim, start, length):
    dim %= input._data.ndim
    start = int(start) % input._data.shape[dim] if start < 0 else int(start)
    return _slice(input, dim, slice(start, start + int(length)))


def alias(input):
    return _view(input, input._data[()], ("index", ()), ALIAS, {"index": ()})


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
                result = _slice(result, dim, item)
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


def cat(tensors, dim=0, *, out=None, **kwargs):
    if out is not None:
        made = cat(tensors, dim, **kwargs)
        return write_out("cat", out, made, tuple(tensors))
    if "axis" in kwargs:
        dim = kwargs.pop("axis")
    tensors = _tensor_list(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    # torch skips legacy empty 1-D tensors in cat
    kept = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)] or tensors[:1]
    ndim = kept[0]._data.ndim
    if ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    axis = dim % ndim
    datas, rd = _promoted_datas(kept)
    out_t = _wrap(_result(np.concatenate(datas, axis=axis), rd))
    if _needs_grad(*kept):
        record(CAT, out_t, tuple(kept), {"axis": axis})
    return out_t


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None, **kwargs):
    if out is not None:
        made = stack(tensors, dim, **kwargs)
        return write_out("stack", out, made, tuple(tensors))
    if "axis" in kwargs:
        dim = kwargs.pop("axis")
    tensors = _tensor_list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    axis = dim % (tensors[0]._data.ndim + 1)
    datas, rd = _promoted_datas(tensors)
    out_t = _wrap(_result(np.stack(datas, axis=axis), rd))
    if _needs_grad(*tensors):
        record(STACK, out_t, tuple(tensors), {"axis": axis})
    return out_t


def hstack(tensors):
    tensors = [atleast_1d(t) for t in tensors]
    return cat(tensors, 0 if tensors[0]._data.ndim == 1 else 1)


def vstack(tensors):
    return cat([atleast_2d(t) for t in tensors], 0)


row_stack = vstack


def dstack(tensors):
    return cat([atleast_3d(t) for t in tensors], 2)


def column_stack(tensors):
    cols = [reshape(t, (-1, 1)) if t._data.ndim <= 1 else t for t in tensors]
    return hstack(cols)


def atleast_1d(t):
    return reshape(t, (1,)) if t._data.ndim == 0 else t


def atleast_2d(t):
    if t._data.ndim == 0:
        return reshape(t, (1, 1))
    return unsqueeze(t, 0) if t._data.ndim == 1 else t


def atleast_3d(t):
    if t._data.ndim == 0:
        return reshape(t, (1, 1, 1))
    if t._data.ndim == 1:
        return unsqueeze(unsqueeze(t, 0), -1)
    return unsqueeze(t, -1) if t._data.ndim == 2 else t


def _pieces(x, spec, axis, datas, static, multi_output=True):
    lead = (slice(None),) * axis
    outs = [
        _view_of(x, d, ("index", lead + (slice(start, start + d.shape[axis]),)), multi_output)
        for d, start in zip(datas, np.cumsum([0] + [d.shape[axis] for d in datas[:-1]]))
    ]
    if _needs_grad(x):
        record(spec, None, (x,), static, outputs=outs)
    return tuple(outs)


def split(input, split_size_or_sections, dim=0):
    d = input._data
    axis = dim % d.ndim
    n = d.shape[axis]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
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
    datas = np.split(d, bounds, axis=axis)
    return _pieces(
        input, spec, axis, datas, {"indices_or_sections": [int(b) for b in bounds], "axis": axis}
    )


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


def chunk(input, chunks, dim=0):
    n = input._data.shape[dim % input._data.ndim]
    if n == 0:
        # as torch: `chunks` empty pieces (split(0) would give one)
        return split(input, [0] * chunks, dim)
    size = -(-n // chunks)
    return split(input, size, dim)


def unbind(input, dim=0):
    d = input._data
    axis = dim % d.ndim
    outs = []
    for i in range(d.shape[axis]):
        key = (slice(None),) * axis + (i, Ellipsis)
        outs.append(_view_of(input, d[key], ("index", key), multi_output=True))
    if _needs_grad(input):
        record(UNBIND, None, (input,), {"axis": axis}, outputs=outs)
    return tuple(outs)


import builtins as _builtins  # noqa: E402

builtins_sum = _builtins.sum


# --- copies: clone, casts, flips, repeats -----------------------------------------------------------


def clone(input, *, memory_format=None):
    out = _wrap(devices.copy(input._data))
    if _needs_grad(input):
        record(CLONE, out, (input,))
    return out


def contiguous(input, memory_format=None):
    """self when already C-contiguous, else a C-ordered copy (CloneBackward0, as torch)."""
    if input._data.flags.c_contiguous:
        return input
    d = input._data
    out = _wrap(
        np.ascontiguousarray(d) if type(d) is np.ndarray else devices.xp_of(d).ascontiguousarray(d)
    )
    if _needs_grad(input):
        record(CLONE, out, (input,))
    return out


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


def type_as(input, other):
    return to(input, other.dtype)


def flip(input, *dims):
    dims = _shape_arg(dims) if dims else tuple(range(input._data.ndim))
    axis = tuple(d % input._data.ndim for d in dims)
    out = _wrap(np.flip(input._data, axis).copy())
    if _needs_grad(input):
        record(FLIP, out, (input,), {"axis": axis})
    return out


def fliplr(input):
    return flip(input, 1)


def flipud(input):
    return flip(input, 0)


def roll(input, shifts, dims=None):
    out = _wrap(np.roll(input._data, shifts, dims))
    if _needs_grad(input):
        record(ROLL, out, (input,), {"shift": shifts, "axis": dims})
    return out


def repeat(input, *sizes):
    reps = _shape_arg(sizes)
    if len(reps) < input._data.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of "
            "dimensions of tensor"
        )
    out = _wrap(np.tile(input._data, reps))
    if _needs_grad(input):
        record(REPEAT, out, (input,), {"reps": reps})
    return out


def tile(input, dims):
    dims = tuple(dims)
    dims = (1,) * (input._data.ndim - len(dims)) + dims
    return repeat(input, dims)


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


def tril(input, diagonal=0):
    out = _wrap(np.tril(input._data, diagonal))
    if _needs_grad(input):
        record(TRIL, out, (input,), {"k": diagonal})
    return out


def triu(input, diagonal=0):
    out = _wrap(np.triu(input._data, diagonal))
    if _needs_grad(input):
        record(TRIU, out, (input,), {"k": diagonal})
    return out


# --- selection by index arrays (all through the getitem rule) --------------------------------


def pick(input, node_name, key):
    out = _wrap(_result(input._data[key]))
    if _needs_grad(input):
        record(cached_spec(node_name, "getitem", n_arrays=1), out, (input,), {"index": key})
    return out


def gather(input, dim, index, *, sparse_grad=False):
    axis = dim % input._data.ndim
    idx = index_array(index)
    if type(idx) is not type(input._data):
        devices.check_same(input._data, idx)
    return pick(input, "GatherBackward0", along_index(idx, axis, input._data.ndim))


def take_along_dim(input, indices, dim=None):
    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    return gather(input, dim, indices)


def index_select(input, dim, index):
    axis = dim % input._data.ndim if input._data.ndim else 0
    idx = index_array(index).reshape(-1)
    if type(idx) is not type(input._data):
        devices.check_same(input._data, idx)
    return pick(input, "IndexSelectBackward0", (slice(None),) * axis + (idx,))


def take(input, index):
    idx = index_array(index)
    if type(idx) is not type(input._data):
        devices.check_same(input._data, idx)
    flat = reshape(input, (-1,))
    return pick(flat, "TakeBackward0", (idx,))


def masked_select(input, mask):
    same_device(input, mask)
    m = np.broadcast_to(
        index_array(mask), np.broadcast_shapes(input._data.shape, _data(mask).shape)
    )
    x = expand(input, m.shape) if m.shape != input._data.shape else input
    return pick(x, "MaskedSelectBackward0", np.nonzero(m))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal as a view of input (as in torch: writing into it writes into input).

    The gradient goes through the getitem rule with the diagonal's index arrays.
    """
    shape = input._data.shape
    n = len(shape)
    d1, d2 = dim1 % n, dim2 % n
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
    return _view(
        input,
        data,
        ("diagonal", (offset, d1, d2)),
        cached_spec("DiagonalBackward0", "getitem", n_arrays=1),
        {"index": tuple(key)},
    )


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


def trace(input):
    return diagonal(input).sum()


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


def sort(input, dim=-1, descending=False, stable=False):
    d = input._data
    if d.ndim == 0:
        return return_types.sort(
            pick(input, "SortBackward0", ()), _wrap(devices.xp_of(d).zeros((), np.int64))
        )
    axis = dim % d.ndim
    idx = _argsort(-d if descending and d.dtype.kind != "b" else d, axis)
    if descending and d.dtype.kind == "b":
        idx = np.flip(_argsort(d, axis), axis)
    values = pick(input, "SortBackward0", along_index(idx, axis, d.ndim))
    return return_types.sort(values, _wrap(idx.astype(np.int64)))


def _argsort(d, axis):
    """A stable argsort (CuPy's is always stable and takes no `kind`)."""
    if type(d) is np.ndarray:
        return np.argsort(d, axis=axis, kind="stable")
    return d.argsort(axis=axis)


def argsort(input, dim=-1, descending=False, stable=False):
    return sort(input, dim, descending, stable)[1]


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - torch's name
    d = input._data
    axis = dim % d.ndim
    order = _argsort(-d if largest else d, axis)
    idx = np.take(order, devices.xp_of(d).arange(k), axis=axis)
    values = pick(input, "TopkBackward0", along_index(idx, axis, d.ndim))
    return return_types.topk(values, _wrap(idx.astype(np.int64)))


def nonzero(input, *, as_tuple=False):
    nz = np.nonzero(input._data)
    if as_tuple:
        return tuple(_wrap(a.astype(np.int64)) for a in nz)
    return _wrap(
        np.stack(nz, axis=-1).astype(np.int64)
        if nz
        else devices.xp_of(input._data).zeros((0, 0), np.int64)
    )


def argwhere(input):
    return nonzero(input)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    values, inverse, counts = np.unique(input._data, return_inverse=True, return_counts=True)
    out = [_wrap(values)]
    if return_inverse:
        out.append(_wrap(inverse.reshape(input._data.shape).astype(np.int64)))
    if return_counts:
        out.append(_wrap(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)
