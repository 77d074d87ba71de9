"""`torch.cross`, `torch.linalg.cross`, `torch.cdist` and `torch.pdist` as eager ops.

Each is one node, as in torch (LinalgCrossBackward0, CdistBackward0), using the
entries of `sourcegrad.ops.nn_losses`. The operands are promoted to torch's result dtype
and their batch dimensions broadcast.

Imports: `ops`/`operands`/`spec`/`tensor` of the eager package and `ops.nn_losses`.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..ops import nn_losses
from . import operands
from .arithmetic import broadcast_error
from .spec import OpSpec, record
from .surface import export
from .tensor import Tensor

_wrap = Tensor._make

CROSS = OpSpec("LinalgCrossBackward0", "linalg_cross", n_arrays=2)
CDIST = OpSpec("CdistBackward0", "cdist", n_arrays=2)


def _float_pair(a, b):
    """Both operands as arrays of one dtype, that dtype, and the Tensors for the node."""
    ad, bd, rd, ra, rb = operands.promote(a, b)
    operands.same_device(a, b)
    return (
        operands.data_of(ad).astype(rd, copy=False),
        operands.data_of(bd).astype(rd, copy=False),
        rd,
        ra,
        rb,
    )


def linalg_cross(input, other, *, dim=-1):
    """input x other along `dim` (of length 3 in both), broadcasting the other dims.

    (No `out=`: a call with it is a TypeError rather than an argument ignored.)"""
    xd, yd, rd, rx, ry = _float_pair(input, other)
    if xd.ndim != yd.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    nd = xd.ndim
    if not -nd <= dim < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})"
        )
    if xd.shape[dim] != 3 or yd.shape[dim] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. "
            f"Got {xd.shape[dim]} and {yd.shape[dim]}"
        )
    try:
        np.broadcast_shapes(xd.shape, yd.shape)
    except ValueError:
        raise broadcast_error(xd.shape, yd.shape) from None
    axis = dim % nd
    out_data = _wrap(operands.result(nn_losses.linalg_cross(xd, yd, axis), rd))
    if operands.needs_grad(rx, ry):
        record(CROSS, out_data, (rx, ry), {"axis": axis})
    return out_data


@export("cross")
def cross(input, other, dim=None):
    """torch.cross: linalg.cross along `dim`; without it, along the first dimension of size 3."""
    if dim is None:
        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass "
            "the dim explicitly or simply use torch.linalg.cross.\nThe default value of dim "
            "will change to agree with that of linalg.cross in a future release.",
            UserWarning,
            stacklevel=2,
        )
        shape = np.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim)


@export("cdist", methods=())
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 (.., P, M) and each of x2 (.., R, M).

    `compute_mode` is accepted and ignored: the distances are always summed directly
    (torch's matrix-product form for large inputs differs only by rounding)."""
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.dtype.is_floating_point:
            raise RuntimeError(
                f"cdist only supports floating-point dtypes, {name} got: {x.dtype._scalar_name}"
            )
    ad, bd, rd, ra, rb = _float_pair(x1, x2)
    p = float(p)
    out = _wrap(operands.result(nn_losses.cdist(ad, bd, p), rd))
    if operands.needs_grad(ra, rb):
        record(CDIST, out, (ra, rb), {"p": p})
    return out


@export("pdist", methods=())
def pdist(input, p=2):
    """torch.pdist / F.pdist: the p-norm distance between each pair of rows i < j of a 2-D
    input, in row-major order of the pairs: cdist of the rows with themselves (one node, the
    CdistBackward0 rule: its gradient at coincident rows is 0, as torch's pdist_backward)
    read at the upper triangle (an index, IndexBackward0)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows, cols = np.triu_indices(input.shape[0], 1)
    x = input.unsqueeze(0)
    return cdist(x, x, p)[0][_wrap(rows.astype(np.int64)), _wrap(cols.astype(np.int64))]
