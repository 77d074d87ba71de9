"""Views of Tensors and the view machinery: view, reshape, flatten, squeeze, unsqueeze,
transpose, t, permute, movedim, expand, select, narrow, and `contiguous`.

Views are numpy views of their input, so they share storage and the version counter, as
in torch. Each view records its base and the steps that took it from the base
(`Extra.view_steps`); an in-place op on a view uses them to find which elements
of the base it changed (`positions`), which is what `CopySlices` needs.

Takes Tensors and torch's shape arguments; returns views (`view_of`, `record_view`) whose
nodes use the registry's shape rules. The registry's shape entries (reshape, ravel,
transpose, swapaxes, moveaxis, expand_dims, squeeze, broadcast_to) are `@implements`d here
with their numpy call forms at the end.

Imports: `operands`, `spec`, `tensor`, `surface` and the leaves.

Why one module: the view machinery (`view_of`, `record_view`, `positions`) and the views
made with it are read together.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import devices, dtypes
from .dual_state import DUAL, any_tangent
from .grad_mode import STATE
from .operands import needs_grad as _needs_grad
from .operands import wrap_array, wrap_dim
from .spec import OpSpec, record_one
from .surface import export, implements, numpy_form
from .tensor import (
    DEFAULT_VIEW,
    MULTI_OUTPUT_VIEW,
    NO_GRAD_VIEW,
    Size,
    Tensor,
    stale_view_requires_grad,
)

_wrap = Tensor._make

CLONE = OpSpec("CloneBackward0", "positive")
VIEW = OpSpec.of("reshape", n_arrays=1)
RESHAPE_ALIAS = OpSpec("ReshapeAliasBackward0", "reshape", n_arrays=1)
UNSAFE_VIEW = OpSpec("UnsafeViewBackward0", "reshape", n_arrays=1)
SQUEEZE_ALL = OpSpec.of("squeeze", n_arrays=1)
SQUEEZE_DIM = OpSpec("SqueezeBackward1", "squeeze", n_arrays=1)
SQUEEZE_DIMS = OpSpec("SqueezeBackward2", "squeeze", n_arrays=1)
SQUEEZE_4 = OpSpec("SqueezeBackward4", "squeeze", n_arrays=1)
UNSQUEEZE = OpSpec.of("expand_dims", n_arrays=1)
TRANSPOSE = OpSpec.of("swapaxes", n_arrays=1)
T_OP = OpSpec("TBackward0", "T")
PERMUTE = OpSpec.of("transpose", n_arrays=1)
EXPAND = OpSpec.of("broadcast_to", n_arrays=1)
SELECT = OpSpec("SelectBackward0", "getitem", n_arrays=1)
SLICE = OpSpec("SliceBackward0", "getitem", n_arrays=1)
ALIAS = OpSpec("AliasBackward0", "getitem", n_arrays=1)


# --- views -------------------------------------------------------------------------------------


def view_of(x, data, step, multi_output=False):
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


def record_view(x, data, step, spec, static):
    out = view_of(x, data, step)
    if (
        STATE.enabled
        and (x._requires_grad or (x._base is not None and stale_view_requires_grad(x)))
        or (DUAL.on and any_tangent((x,)))
    ):
        record_one(spec, out, x, static)
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
        elif kind == "real":  # (of a complex base: fft.real; of the positions, themselves)
            array = array.real
        elif kind == "imag":
            array = array.imag
        elif kind == "as_real":  # (fft.view_as_real; positions: each part at its element's)
            array = _as_real(array)
        elif kind == "as_complex":  # (fft.view_as_complex; positions: the real part's)
            array = _as_complex(array)
        else:
            raise AssertionError(kind)
    return array


def _as_real(array):
    if array.dtype.kind != "c":
        return array[..., None].repeat(2, axis=-1)
    re = array.real
    xp = np if type(array) is np.ndarray else devices.xp_of(array)
    return xp.lib.stride_tricks.as_strided(re, array.shape + (2,), re.strides + (re.itemsize,))


def _as_complex(array):
    if array.dtype.kind != "f":
        return array[..., 0]
    if array.strides[-1] != array.itemsize:
        array = array.copy()  # (a tangent laid out otherwise: its values are what count)
    return array.view(np.complex64 if array.dtype == np.float32 else np.complex128)[..., 0]


def positions(view):
    """For each element of a view, its flat index in the view's base."""
    base = view._base
    xp = np if type(base._data) is np.ndarray else devices.xp_of(base._data)
    flat = xp.arange(base._data.size).reshape(base._data.shape)
    return apply_steps(flat, view._extra.view_steps)


def shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = shape[0]
    if type(shape) is tuple and all(type(s) is int for s in shape):
        return shape  # (the common call, x.view(b, t, c): a few microseconds a view less)
    return tuple(int(s) for s in shape)


def _infer(shape, numel, where="view"):
    if -1 not in shape and math.prod(shape) == numel:
        return tuple(shape)
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


@export(methods=("view",))
def view(input, *shape):
    if len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
        raise NotImplementedError("sourcegrad: view(dtype) is not supported")
    shape = _infer(shape_arg(shape), input._data.size)
    try:
        data = input._data.reshape(shape, copy=False)
    except ValueError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at "
            "least one dimension spans across two contiguous subspaces). Use "
            ".reshape(...) instead."
        ) from None
    return record_view(input, data, ("reshape", shape), VIEW, {"shape": shape})


def view_known(input, shape):
    """`input.view(shape)` for a tuple of ints `shape` of input's size that a C-contiguous
    input's data takes without a copy (F.linear's rows and back): ViewBackward0, without
    view's parsing and checks (a few microseconds, twice each linear of a GPT's)."""
    return record_view(
        input, input._data.reshape(shape), ("reshape", shape), VIEW, {"shape": shape}
    )


@implements("reshape")
def reshape(input, *shape):
    """A view when the data allows one (ViewBackward0), else a copy (UnsafeView of Clone)."""
    shape = _infer(shape_arg(shape), input._data.size)
    try:
        data = np.reshape(input._data, shape, copy=False)
    except ValueError:
        return unsafe_view(contiguous(input), shape)
    # torch views a contiguous input, and takes a strided one by _reshape_alias
    spec = VIEW if input._data.flags.c_contiguous else RESHAPE_ALIAS
    return record_view(input, data, ("reshape", shape), spec, {"shape": shape})


def unsafe_view(input, shape):
    """A reshape torch records as UnsafeViewBackward0 (its input is a fresh copy)."""
    shape = tuple(shape)
    out = _wrap(np.reshape(input._data, shape))
    if _needs_grad(input):
        record_one(UNSAFE_VIEW, out, input, {"shape": shape})
    return out


@export(methods=("view_as",))
def view_as(input, other):
    return view(input, other._data.shape)


@export(methods=("reshape_as",))
def reshape_as(input, other):
    return reshape(input, other._data.shape)


@export("flatten")
def flatten(input, start_dim=0, end_dim=-1):
    shape = input._data.shape
    if not shape:
        return reshape(input, (1,))
    n = len(shape)
    start, end = wrap_dim(start_dim, n), wrap_dim(end_dim, n)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    size = 1
    for s in shape[start : end + 1]:
        size *= s
    return reshape(input, shape[:start] + (size,) + shape[end + 1 :])


@implements("ravel")
def ravel(input):
    return reshape(input, (-1,))


@export("unflatten")
def unflatten(input, dim, sizes):
    shape = input._data.shape
    dim %= len(shape)
    sizes = list(sizes)
    if -1 in sizes:
        known = int(np.prod([s for s in sizes if s != -1]))
        sizes[sizes.index(-1)] = shape[dim] // known
    return view(input, shape[:dim] + tuple(sizes) + shape[dim + 1 :])


@implements("squeeze")
def squeeze(input, dim=None, **kwargs):
    if dim is None and "axis" in kwargs:
        dim = kwargs.pop("axis")
    if kwargs:  # (out=, or a keyword torch's squeeze does not take: it was dropped)
        raise TypeError(f"squeeze() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return squeezed(input, dim, (SQUEEZE_ALL, SQUEEZE_DIM, SQUEEZE_DIMS))


def squeezed(input, dim, specs):
    """squeeze's view, its node one of `specs` (all dims, one dim, a tuple of dims): the
    out-of-place op's or the in-place one's (inplace.squeeze_)."""
    shape = input._data.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
        spec = specs[0]
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        n = len(shape)
        dims = {wrap_dim(d, n) for d in dims}
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
        spec = specs[2] if isinstance(dim, (tuple, list)) else specs[1]
    return record_view(input, input._data.reshape(new), ("reshape", new), spec, None)


def squeeze4(input, dim):
    """The squeeze torch's matmul uses for a vector @ matrix (SqueezeBackward4)."""
    shape = input._data.shape
    new = shape[:dim] + shape[dim + 1 :] if shape[dim] == 1 else shape
    return record_view(input, input._data.reshape(new), ("reshape", new), SQUEEZE_4, None)


@implements("expand_dims")
def unsqueeze(input, dim):
    return unsqueezed(input, dim, UNSQUEEZE)


def unsqueezed(input, dim, spec):
    """unsqueeze's view, with `spec`'s node (UnsqueezeBackward0, or 1 for unsqueeze_)."""
    n = input._data.ndim + 1
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    dim %= n
    data = np.expand_dims(input._data, dim)
    return record_view(input, data, ("reshape", data.shape), spec, {"axis": dim})


@implements("swapaxes")
def transpose(input, dim0, dim1):
    return transposed(input, dim0, dim1, TRANSPOSE)


def transposed(input, dim0, dim1, spec):
    """transpose's view, with `spec`'s node (TransposeBackward0, or 1 for transpose_)."""
    n = input._data.ndim
    if n == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return alias(input)
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    axes = list(range(n))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return record_view(
        input,
        input._data.transpose(axes),
        ("permute", tuple(axes)),
        spec,
        {"axis1": d0, "axis2": d1},
    )


swapaxes = swapdims = transpose


@export("t")
def t(input):
    return t_view(input, T_OP)


def t_view(input, spec):
    """t's view, with `spec`'s node (TBackward0, or 1 for t_)."""
    n = input._data.ndim
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    axes = tuple(range(n))[::-1]
    return record_view(input, input._data.T, ("permute", axes), spec, None)


@implements("transpose")
def permute(input, *dims):
    n = input._data.ndim
    given = shape_arg(dims)
    if len(given) != n:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does "
            "not match the length of the desired ordering of dimensions i.e. "
            f"input.dim() = {n} is not equal to len(dims) = {len(given)}"
        )
    axes = tuple(wrap_dim(int(d), n) for d in given) if n else ()
    if len(set(axes)) != len(axes):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    if sorted(axes) != list(range(n)):
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does "
            "not match the length of the desired ordering of dimensions i.e. "
            f"input.dim() = {n} is not equal to len(dims) = {len(axes)}"
        )
    return record_view(
        input, input._data.transpose(axes), ("permute", axes), PERMUTE, {"axes": axes}
    )


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


@implements("moveaxis")
def movedim(input, source, destination):
    n = input._data.ndim
    src = [wrap_dim(s, n) for s in (source if isinstance(source, (tuple, list)) else (source,))]
    dst = [
        wrap_dim(d, n)
        for d in (destination if isinstance(destination, (tuple, list)) else (destination,))
    ]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


moveaxis = movedim


@export(methods=("expand",))
def expand(input, *sizes):
    sizes = shape_arg(sizes)
    shape = input._data.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(sizes)}): the "
            "number of sizes provided "
            f"({len(sizes)}) must be greater or equal to the number of dimensions "
            f"in the tensor ({len(shape)})"
        )
    for i, s in enumerate(sizes[:lead]):
        if s == -1:
            raise RuntimeError(
                f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                f"dimension {i}"
            )
    target = tuple(shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    try:
        data = np.broadcast_to(input._data, target)
    except ValueError:
        # the last dimension that does not match (torch checks from the last one)
        i = next(
            i
            for i in range(len(target) - 1, lead - 1, -1)
            if shape[i - lead] != 1 and shape[i - lead] != target[i]
        )
        raise RuntimeError(
            f"The expanded size of the tensor ({target[i]}) must match the "
            f"existing size ({shape[i - lead]}) at non-singleton dimension "
            f"{i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
            f"{list(shape)}"
        ) from None
    return _expanded(input, data, target)


def expand_to(input, shape):
    """`input.expand(shape)` for a tuple `shape` that input's broadcasts to (matmul's batch
    shape): ExpandBackward0, without expand's parsing and checks. Where the shape is input's
    own (a batched product of operands of one batch shape: each of an attention's), a plain
    view of the array (np.broadcast_to is ~3 us of Python)."""
    d = input._data
    if type(d) is np.ndarray and d.shape == shape:
        return _expanded(input, d.view(), shape)
    return _expanded(input, np.broadcast_to(d, shape), shape)


def _expanded(input, data, target):
    if type(data) is np.ndarray and input._data.flags.writeable:
        # numpy hands out a broadcast read-only; torch lets an in-place op write into a view
        # of it whose elements have their own memory (`x.expand(2, 3)[0]`), and refuses one
        # where they do not (devices.writeable)
        data.flags.writeable = True
    return record_view(input, data, ("expand", target), EXPAND, {"shape": target})


@export(methods=("expand_as",))
def expand_as(input, other):
    return expand(input, other._data.shape)


@implements("broadcast_to")
def broadcast_to(input, size):
    return expand(input, size)


@export("broadcast_tensors", methods=())
def broadcast_tensors(*tensors):
    shape = np.broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


@export("select")
def select(input, dim, index):
    shape = input._data.shape
    n = len(shape)
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, n)
    size = shape[dim]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {dim} with size {size}")
    # the Ellipsis keeps a 0-d result a view (a bare int index would copy it out)
    key = (slice(None),) * dim + (int(index) % size, Ellipsis)
    return record_view(input, input._data[key], ("index", key), SELECT, {"index": key})


def slice_dim(input, dim, s):
    if s.step is not None and s.step <= 0:
        raise ValueError("step must be greater than zero")
    key = (slice(None),) * dim + (s,)
    return record_view(input, input._data[key], ("index", key), SLICE, {"index": key})


@export("narrow")
def narrow(input, dim, start, length):
    dim %= input._data.ndim
    start = int(start) % input._data.shape[dim] if start < 0 else int(start)
    return slice_dim(input, dim, slice(start, start + int(length)))


def alias(input):
    return record_view(input, input._data[()], ("index", ()), ALIAS, {"index": ()})


@export(methods=("contiguous",))
def contiguous(input, memory_format=None):
    """self when already C-contiguous, else a C-ordered copy (CloneBackward0, as torch)."""
    if input._data.flags.c_contiguous:
        return input
    d = input._data
    out = _wrap(
        np.ascontiguousarray(d) if type(d) is np.ndarray else devices.xp_of(d).ascontiguousarray(d)
    )
    if _needs_grad(input):
        record_one(CLONE, out, input)
    return out


# --- numpy's call forms --------------------------------------------------------------------------


@numpy_form("reshape")
def np_reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    return reshape(wrap_array(a), shape if shape is not None else newshape)


@numpy_form("transpose")
def np_transpose(a, axes=None):
    a = wrap_array(a)
    if axes is None:
        axes = tuple(range(a._data.ndim))[::-1]
    return permute(a, axes)


@numpy_form("swapaxes")
def np_swapaxes(a, axis1, axis2):
    return transpose(wrap_array(a), axis1, axis2)


@numpy_form("moveaxis")
def np_moveaxis(a, source, destination):
    return movedim(wrap_array(a), source, destination)


@numpy_form("expand_dims")
def np_expand_dims(a, axis):
    a = wrap_array(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    n = a._data.ndim + len(axes)
    for ax in sorted(x % n for x in axes):
        a = unsqueeze(a, ax)
    return a


@numpy_form("squeeze")
def np_squeeze(a, axis=None):
    return squeeze(wrap_array(a), axis)


@numpy_form("ravel")
def np_ravel(a, order="C"):
    return reshape(wrap_array(a), (-1,))


@numpy_form("broadcast_to")
def np_broadcast_to(array, shape, subok=False):
    return expand(wrap_array(array), tuple(shape) if not isinstance(shape, int) else (shape,))
