"""More in-place Tensor methods, on `inplace.py`'s protocol: fill_diagonal_, addcmul_,
addcdiv_, lerp_, atan2_ (arctan2_), masked_scatter_ (and masked_scatter), put_ (and put),
set_; and sum_to_size.

Takes Tensors (and numbers where torch does); returns self for the in-place ones, as torch.
Each write goes through `inplace.py` (its version counter, leaf and view checks, the node
recorded): atan2_ through `inplace.apply` with the registry's arctan2 rule; fill_diagonal_,
masked_scatter_ and put_ as an `index_put_` (IndexPutBackward0 here, FillDiagonal/
MaskedScatter/PutBackward0 in torch: the same gradients); addcmul_, addcdiv_ and lerp_ as a
`copy_` of the out-of-place composite (`composites.py`), whose ops carry the gradient.
`set_(source)` makes self share source's memory (later writes through either are seen by
the other, as torch's) and its version counter (torch's stays self's own); what it cannot model (a storage, an offset/size/stride, a graph
through it) is refused. Argument errors are torch's.

Imports: `inplace`, `composites`, `elementwise`, `shape_ops`, `operands`, `grad_mode`,
`messages`, `surface`, `tensor`, `errors`; only `eager/__init__` imports it.
"""

from __future__ import annotations

import numpy as np

from .. import errors
from . import composites, elementwise, inplace, messages, shape_ops
from .grad_mode import STATE
from .operands import promote
from .shape_ops import index_array
from .surface import export
from .tensor import Tensor


def _composite_(self, result):
    """Write the out-of-place `result` (computed from self's old values) into self: torch's
    shape and cast checks, then copy_ (whose node passes the gradient on to result's graph)."""
    inplace._check_shapes(self, result._data.shape)
    inplace._check_cast(self, result._data.dtype)
    return inplace.copy_(self, result)


@export(methods=("addcmul_",))
def addcmul_(self, tensor1, tensor2, *, value=1):
    return _composite_(self, composites.addcmul(self, tensor1, tensor2, value=value))


@export(methods=("addcdiv_",))
def addcdiv_(self, tensor1, tensor2, *, value=1):
    return _composite_(self, composites.addcdiv(self, tensor1, tensor2, value=value))


@export(methods=("lerp_",))
def lerp_(self, end, weight):
    return _composite_(self, composites.lerp(self, end, weight))


@export(methods=("atan2_", "arctan2_"))
def atan2_(self, other):
    """In-place atan2: the registry's arctan2 rule (Atan2Backward0), written into self."""
    if promote(self, other, True)[2].kind == "c":
        elementwise.atan2(self, other)  # raises torch's NotImplementedError for complex
    op = elementwise.atan2
    return inplace._binary_(self, other, op.spec, op.np_fn, to_float=True)


@export(methods=("fill_diagonal_",))
def fill_diagonal_(self, fill_value, wrap=False):
    """The main diagonal (all indices equal) set to fill_value; for a tall matrix with `wrap`,
    the diagonal starts again every columns + 1 rows, as torch's (and numpy's)."""
    d = self._data
    if d.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if d.ndim > 2 and len(set(d.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()  # (torch takes a Scalar: a 0-d tensor is read as one)
    if d.ndim > 2:
        return inplace.index_put_(
            self, (np.arange(d.shape[0]),) * d.ndim, fill_value, _overlap=False
        )
    rows, cols = d.shape
    main = np.arange(min(rows, cols))
    inplace.index_put_(self, (main, main), fill_value, _overlap=False)
    if wrap and rows > cols + 1:
        # the rows below the first diagonal and its blank row: a second write, as torch's (its
        # version goes up by two)
        flat = np.arange((cols + 1) * cols, rows * cols, cols + 1)
        inplace.index_put_(self, np.unravel_index(flat, d.shape), fill_value, _overlap=False)
    return self


def _bool_mask(mask, name):
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        got = mask.dtype._scalar_name if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype {got}")


@export(methods=("masked_scatter_",))
def masked_scatter_(self, mask, source):
    """self's elements where mask (broadcast to self's shape) is True, in row-major order, set
    to source's first elements."""
    _bool_mask(mask, "masked_scatter_")
    if source.dtype is not self.dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got"
            f"{self.dtype._scalar_name} and {source.dtype._scalar_name}"
        )
    m = shape_ops.expand(mask, tuple(self._data.shape))  # torch's errors where it cannot
    if self._data.ndim == 0:  # (one element: a 1-element view of it takes the write)
        masked_scatter_(shape_ops.view(self, (1,)), shape_ops.reshape(m, (1,)), source)
        return self
    key = np.nonzero(index_array(m))
    if source.numel() < len(key[0]):
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return inplace.index_put_(self, key, source.reshape(-1)[: len(key[0])])


@export("masked_scatter")
def masked_scatter(input, mask, source):
    """The out-of-place form: input and mask broadcast together (as torch's)."""
    _bool_mask(mask, "masked_scatter_")
    shape = np.broadcast_shapes(tuple(input._data.shape), tuple(mask._data.shape))
    return masked_scatter_(shape_ops.clone(shape_ops.expand(input, shape)), mask, source)


@export(methods=("put_",))
def put_(self, index, source, accumulate=False):
    """self, seen as one dimension (row-major), with source written (or, with `accumulate`,
    added) at `index` (negative indices count from the end)."""
    if not isinstance(index, Tensor) or index._data.dtype != np.int64:
        got = index.dtype._scalar_name if isinstance(index, Tensor) else type(index).__name__
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {got}")
    if source.dtype is not self.dtype:
        raise RuntimeError(
            "put_(): self and source expected to have the same dtype, but got self.dtype = "
            f"{self.dtype._scalar_name} and source.dtype = {source.dtype._scalar_name}"
        )
    if index.numel() != source.numel():
        raise IndexError(
            "put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
        )
    n = self.numel()
    idx = np.asarray(index_array(index)).reshape(-1)
    bad = idx[(idx >= n) | (idx < -n)]
    if bad.size:
        raise IndexError(
            f"out of range: tried to access index {bad[0]} on a tensor of {n} elements."
        )
    if self._data.ndim == 0:
        # (one element: a 1-element view of it takes the write)
        inplace.index_put_(
            shape_ops.view(self, (1,)), (idx % max(n, 1),), source.reshape(-1), accumulate
        )
        return self
    key = np.unravel_index(idx % max(n, 1), self._data.shape)
    return inplace.index_put_(self, tuple(key), source.reshape(-1), accumulate)


@export("put")
def put(input, index, source, accumulate=False):
    return put_(shape_ops.clone(input), index, source, accumulate)


@export(methods=("sum_to_size",))
def sum_to_size(self, *size):
    """self summed over the dimensions broadcasting expands from `size` to self's shape."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    shape = tuple(self._data.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s not in (1, t) for s, t in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1
    )
    if not dims:
        return self
    return self.sum(dims, keepdim=True).reshape(size)


@export(methods=("set_",))
def set_(self, source=None, *args, **kwargs):
    """`a.set_(b)`: a takes b's shape and shares its memory (a write through either is seen by
    the other) and its version counter (bumped: unlike torch, which keeps a's own, a write
    through a makes a backward that saved b refuse, rather than read the new values). Refused: the other forms (no
    source, a storage, offset/size/stride), a view as self, and a graph through it (torch's
    node for it has no derivative: `grad_fn=<NotImplemented>`)."""
    if not isinstance(source, Tensor) or args or kwargs:
        raise errors.UnsupportedAPIError(
            "Tensor.set_: sourcegrad models only `a.set_(b)` with b a Tensor (a then shares "
            "b's memory); set_() of no source, of a storage, or with offset/size/stride is not "
            "supported: build the tensor you need with view/reshape/as_strided of an existing one"
        )
    if source.dtype is not self.dtype:
        raise RuntimeError(
            f"Could not set tensor of type {source.dtype._c_name} to a tensor of type "
            f"{self.dtype._c_name}"
        )
    if STATE.enabled:
        if self._base is None and self._grad_fn is None and self._requires_grad:
            raise RuntimeError(messages.LEAF_INPLACE)
        if self._requires_grad or source._requires_grad:
            raise errors.UnsupportedAPIError(
                "Tensor.set_ with a tensor that requires grad (self or source): torch records "
                "a node with no derivative (grad_fn=<NotImplemented>), which sourcegrad does not "
                "model; use b directly, or a.set_(b.detach()) under torch.no_grad()"
            )
    if self._base is not None:
        raise errors.UnsupportedAPIError(
            "Tensor.set_ on a view: sourcegrad cannot move a view onto other memory (its "
            "base would keep its own); call set_ on a tensor that is not a view (a clone)"
        )
    if self._inference and not STATE.inference:
        raise RuntimeError(messages.INFERENCE_INPLACE)
    self._data = source._data  # the same array: writes through either reach both
    # one version counter for both, as a view's with its base: torch keeps two, so that a
    # write through self after `c = (x * b).sum()` changed the b backward reads without a
    # trace (x.grad the new b, silently); here backward refuses it, as for a view of b
    self._vc = source._get_vc()
    self._vc.value += 1
    return self
