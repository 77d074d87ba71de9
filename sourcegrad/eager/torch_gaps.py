"""torch functions published training code calls that the eager surface lacked: as_strided,
block_diag, cartesian_prod, combinations, tril_indices / triu_indices, histc, isin, cov,
corrcoef, det / slogdet / logdet / matrix_power (torch's top-level and method spellings of
torch.linalg's), deg2rad / rad2deg, index_copy and index_reduce (scatter_reduce along one dim).

The differentiable ones are made of differentiable ops (indexing, cat, stack, meshgrid,
matmul, the linalg entries), so their gradients are those ops' own, exact and to every
order; the node torch records is the last op's, not torch's single node. as_strided is a
read-only copy of the elements it names (torch's is a view: a write into it raises rather
than not reaching the input), and is refused where it would read storage outside a
contiguous input (a view's base): there the result would depend on memory sourcegrad does
not lay out as torch does. histc, isin and the index helpers give no gradient, as torch's.

Imports: numpy, `factories`, `joining`, `linalg`, `operands`, `surface`, `tensor`; the
Tensor methods the functions call are installed by `methods.py` before any of them runs.
"""

from __future__ import annotations

import collections
import itertools
import math
import warnings

import numpy as np

from ..errors import UnsupportedAPIError
from . import linalg
from .dtypes import FROM_NUMPY
from .factories import zeros
from .joining import cat, stack
from .operands import result
from .surface import export
from .tensor import Tensor

_wrap = Tensor._make


def _integers(values):
    return _wrap(result(np.asarray(values, dtype=np.int64), np.int64))


# --- as_strided ---------------------------------------------------------------------------------


@export("as_strided")
def as_strided(input, size, stride, storage_offset=None):
    """The elements of input's storage at storage_offset + sum(i_k * stride_k), as a tensor of
    `size`: a read-only copy here (see the module doc), gradients summed where elements
    repeat, as torch's AsStridedBackward0 sums them."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(
            "as_strided: Negative strides are not supported at the moment, got strides: "
            f"{list(stride)}"
        )
    own_offset = input.storage_offset()
    offset = own_offset if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    numel = input.numel()
    if not input.is_contiguous():
        raise UnsupportedAPIError(
            "sourcegrad: as_strided of a non-contiguous tensor is not supported (torch reads "
            "its storage, which sourcegrad does not lay out as torch does); call "
            ".contiguous() first"
        )
    # storage index of each result element, relative to input's first element
    flat = np.full(size, offset - own_offset, np.int64)
    for axis, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[axis] = n
        flat = flat + (np.arange(n) * s).reshape(shape)
    if flat.size and (flat.min() < 0 or flat.max() >= numel):
        if own_offset == 0 and input._base is None:  # (the storage is input's: torch's error)
            itemsize = input._data.dtype.itemsize
            needed = (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))) * itemsize
            raise RuntimeError(
                f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                f"{offset}, and itemsize {itemsize} requiring a storage size of {needed} are "
                f"out of bounds for storage of size {numel * itemsize}"
            )
        raise UnsupportedAPIError(
            "sourcegrad: as_strided reading storage outside the tensor (a view's base) is not "
            "supported; call it on the base tensor"
        )
    out = input.reshape(-1)[_integers(flat)]
    out._data.flags.writeable = False  # (a copy standing for torch's view)
    return out


# --- combinatorics ------------------------------------------------------------------------------


def _one_dimensional(t):
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


@export("cartesian_prod", methods=())
def cartesian_prod(*tensors):
    """The cartesian product of 1-d tensors, one row per combination (the last varies
    fastest); one tensor is returned as it is, as torch's."""
    for t in tensors:
        _one_dimensional(t)
    if len(tensors) == 1:
        return tensors[0]
    n = len(tensors)
    grids = []
    for axis, t in enumerate(tensors):
        shape = [1] * n
        shape[axis] = t.shape[0]
        grids.append(t.reshape(shape).expand(*(u.shape[0] for u in tensors)).reshape(-1))
    return stack(grids, 1)


@export("combinations", methods=())
def combinations(input, r=2, with_replacement=False):
    """The r-element combinations of a 1-d tensor's elements, in itertools' order."""
    _one_dimensional(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    make = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    picks = np.array(list(make(range(input.shape[0]), r)), np.int64).reshape(-1, r)
    return input[_integers(picks)]


def _triangle_indices(row, col, offset, dtype, lower):
    name = "tril_indices" if lower else "triu_indices"
    if dtype is not None and np.dtype(dtype.dtype).kind not in "iu":
        raise NotImplementedError(f"\"{name}\" not implemented for '{dtype._scalar_name}'")
    rows, cols = np.indices((row, col))
    keep = cols - rows <= offset if lower else cols - rows >= offset
    found = np.stack([rows[keep], cols[keep]])
    kind = np.int64 if dtype is None else dtype.dtype
    return _wrap(result(found.astype(kind), kind))


@export("tril_indices", methods=())
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, column) indices of the lower triangle of a row x col matrix, on and below
    diagonal `offset`, row by row (2 x N)."""
    return _triangle_indices(row, col, offset, dtype, True)


@export("triu_indices", methods=())
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, column) indices of the upper triangle, on and above diagonal `offset`."""
    return _triangle_indices(row, col, offset, dtype, False)


@export("block_diag", methods=())
def block_diag(*tensors):
    """The tensors (0, 1 or 2-d) on the diagonal of one matrix, zeros elsewhere."""
    blocks = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(
                "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input "
                f"{i} has {t.dim()} dimensions"
            )
        blocks.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not blocks:
        return zeros((1, 0))
    dtype = FROM_NUMPY[np.result_type(*(b._data.dtype for b in blocks))]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        h, w = b.shape
        pieces = [zeros((h, left), dtype=dtype), b.to(dtype)]
        pieces.append(zeros((h, width - left - w), dtype=dtype))
        rows.append(cat(pieces, 1))
        left += w
    return cat(rows, 0)


# --- counting and membership (no gradient) ------------------------------------------------------


@export("histc")
def histc(input, bins=100, min=0, max=0):  # noqa: A002 - torch's parameter names
    """The histogram of input's elements in `bins` equal bins over [min, max] (the data's range
    where min == max); elements outside are left out, max counts in the last bin."""
    d = input._data
    if d.dtype.kind not in "fc":
        raise NotImplementedError(
            f"\"histogram_cpu\" not implemented for '{input.dtype._scalar_name}'"
        )
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    low, high = float(min), float(max)
    if low > high:
        raise RuntimeError("torch.histc: max must be larger than min")
    if low == high and d.size:
        low, high = float(np.min(d)), float(np.max(d))
    if low == high:
        low, high = low - 1, high + 1
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{low}, {high}] is not finite")
    x = d.reshape(-1).astype(np.float64)
    x = x[(x >= low) & (x <= high)]
    # torch's bin: (x - min) * bins / (max - min), max itself in the last bin
    position = np.minimum(((x - low) * bins / (high - low)).astype(np.int64), bins - 1)
    counts = np.bincount(position, minlength=bins).astype(d.dtype)
    return _wrap(result(counts, d.dtype))


@export("isin", methods=())
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` is in `test_elements` (tensors or scalars)."""
    values = elements._data if isinstance(elements, Tensor) else np.asarray(elements)
    tests = test_elements._data if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    found = np.isin(values, tests, assume_unique=assume_unique, invert=invert)
    return _wrap(result(np.asarray(found), np.bool_))


# --- statistics ---------------------------------------------------------------------------------


@export("cov")
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance of input's rows (variables) over its columns (observations), with
    integer frequency and real observation weights, torch's formula."""
    if input.dim() > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{input.dim()} dimensions"
        )
    x = input if input.dim() == 2 else input.reshape(1, -1)
    observations = x.shape[1]
    weights = None
    if fweights is not None:
        weights = fweights
    if aweights is not None:
        weights = aweights if weights is None else weights * aweights
    if weights is None:
        average = x.mean(1)
        weight_sum = x.new_full((), float(observations))
    else:
        weight_sum = weights.sum()
        average = (x * weights).sum(1) / weight_sum
    if weights is not None and aweights is not None and correction != 0:
        norm_factor = weight_sum - correction * (weights * aweights).sum() / weight_sum
    else:
        norm_factor = weight_sum - correction
    if float(norm_factor._data) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0", stacklevel=2)
        norm_factor = norm_factor.clamp(min=0)
    centred = x - average.unsqueeze(1)
    weighted = centred if weights is None else centred * weights
    c = weighted @ centred.transpose(0, 1).conj() / norm_factor
    return c.squeeze()


@export("corrcoef")
def corrcoef(input):
    """Pearson's correlation coefficients of input's rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.unsqueeze(1)
    c = c / stddev.unsqueeze(0)
    return c.clamp(-1, 1) if c._data.dtype.kind != "c" else c


# --- torch's spellings of torch.linalg's --------------------------------------------------------


@export("det")
def det(input):
    """torch.det / Tensor.det: linalg.det."""
    return linalg.det(input)


_slogdet = collections.namedtuple("slogdet", ("sign", "logabsdet"))


@export("slogdet")
def slogdet(input):
    """torch.slogdet / Tensor.slogdet: linalg.slogdet's (sign, logabsdet)."""
    sign, logabsdet = linalg.slogdet(input)
    return _slogdet(sign, logabsdet)


@export("logdet")
def logdet(input):
    """log(det(input)): nan where the determinant is negative, -inf where it is 0; the
    gradient is logabsdet's where the determinant is positive, 0 elsewhere (torch's)."""
    sign, logabsdet = linalg.slogdet(input)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_sign = np.log(sign._data.astype(logabsdet._data.dtype))  # (0, nan or -inf)
    positive = _wrap(result(sign._data > 0, np.bool_))
    return logabsdet.where(positive, _wrap(result(log_sign)))


@export("matrix_power")
def matrix_power(input, n):
    """torch.matrix_power / Tensor.matrix_power: linalg.matrix_power."""
    return linalg.matrix_power(input, n)


@export("deg2rad")
def deg2rad(input):
    """Degrees to radians (times pi / 180)."""
    return input * (math.pi / 180)


@export("rad2deg")
def rad2deg(input):
    """Radians to degrees (times 180 / pi)."""
    return input * (180 / math.pi)


@export("index_copy")
def index_copy(input, dim, index, source):
    """input with the slices at `index` along dim replaced by source's, as an index
    assignment on a copy (source's gradient is the incoming one at those slices, input's is 0
    there)."""
    out = input.clone()
    key = (slice(None),) * (dim % max(input.dim(), 1)) + (index,)
    out[key] = source
    return out


@export(methods=("index_copy_",))
def index_copy_(self, dim, index, source):
    key = (slice(None),) * (dim % max(self.dim(), 1)) + (index,)
    self[key] = source
    return self


@export("index_reduce")
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """input with source's slices reduced (prod, mean, amax, amin) into the slices at
    `index` along dim: scatter_reduce with the index spread over source's other dims, so its
    values and gradients (prod's zeros included) are scatter_reduce's, which are torch's."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(
            "index_reduce_(): Expected dtype int32/int64 for index but got: "
            f"{index.dtype._scalar_name}"
        )
    if index.dim() > 1:
        raise IndexError(
            f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.dim()} "
            f"with type: {index.dtype._scalar_name} and size: {list(index.shape)}"
        )
    axis = dim % max(input.dim(), 1)
    n = index.numel()
    if source.dim() and source.shape[axis] != n:
        raise RuntimeError(
            f"index_reduce_(): Number of indices ({n}) should be equal to source.size(dim): "
            f"({source.shape[axis]}), for dim: {dim}"
        )
    if n and (index._data.min() < -input.shape[axis] or index._data.max() >= input.shape[axis]):
        raise IndexError("index out of range in self")
    positions = np.asarray(index._data).reshape(-1) % input.shape[axis]
    shape = [1] * source.dim()
    shape[axis] = n
    spread = np.broadcast_to(positions.reshape(shape), tuple(source.shape))
    return input.scatter_reduce(axis, _integers(spread), source, reduce, include_self=include_self)


@export(methods=("index_reduce_",))
def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    # (prod's node saves its input: a clone, which the copy below does not change)
    own = (
        self.clone() if reduce == "prod" and (self.requires_grad or source.requires_grad) else self
    )
    return self.copy_(index_reduce(own, dim, index, source, reduce, include_self=include_self))
