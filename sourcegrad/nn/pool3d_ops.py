"""3-d pools: `F.max_pool3d` and `F.avg_pool3d`, with torch's checks, messages and nodes.

Takes a (C, D, H, W) or (N, C, D, H, W) Tensor and torch's pool arguments; returns what
torch returns. No derivative is written here:

* `max_pool3d` picks one input element per output (the first maximum of its window, as
  torch's kernel), found by the registry's `nn_kernels.max_pool_index` for any number of
  spatial dims: a gather (MaxPool3DWithIndicesBackward0) whose VJP is the `getitem` rule's
  scatter-add, differentiable again. `return_indices` gives each maximum's flat position in
  its (D, H, W) volume, as torch.
* `avg_pool3d` is separable: torch's divisor of a window (its element count, with or
  without the padding, or divisor_override) is the product of one count per spatial dim,
  so the pool is the depth average (the "resample" entry applied along D) followed by the
  height/width average (the entry again, AvgPool3DBackward0), with the per-dim matrices
  `ops.nn_layers.avg_pool_matrix` builds for avg_pool2d. Both steps are linear maps, and
  so are their VJPs. Integer inputs are averaged exactly and rounded toward zero, as torch.

Imports: numpy, `ops.nn_kernels`, the eager package and `pool_ops` (its resample and size
helpers).
"""

from __future__ import annotations

import numpy as np

from ..eager import devices
from ..eager.indexing import pick
from ..eager.tensor import Tensor
from ..eager.views import movedim
from ..ops import nn_kernels as K
from .pool_ops import check_dilation_and_padding, checked_output_size, resample

__all__ = ["max_pool3d", "avg_pool3d"]

_wrap = Tensor._make
_LETTERS = "THW"


def _triple(value, name, what):
    if isinstance(value, (int, np.integer)):
        return (int(value),) * 3
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * 3
    if len(value) != 3:
        raise RuntimeError(f"{name}: {what}")
    return value


def _args(input, kernel_size, stride, padding, dilation, name):
    """torch's checks of a 3-d pool's arguments, in its order; the four triples."""
    either = "either " if name == "max_pool3d" else ""
    kernel = _triple(
        kernel_size, name, f"kernel_size must {either}be a single int, or a tuple of three ints"
    )
    if stride is None or (not isinstance(stride, (int, np.integer)) and len(stride) == 0):
        stride = kernel
    else:
        stride = _triple(
            stride, name, f"stride must {either}be omitted, a single int, or a tuple of three ints"
        )
    padding = _triple(
        padding, name, f"padding must {either}be a single int, or a tuple of three ints"
    )
    dilation = _triple(
        dilation, name, f"dilation must {either}be a single int, or a tuple of three ints"
    )
    if input._data.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    # (torch checks the stride first: an omitted one, the kernel's, of a zero kernel says so)
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(
            "kernel size should be greater than zero, but got "
            + " ".join(f"k{_LETTERS[i]}: {k}" for i, k in enumerate(kernel))
        )
    check_dilation_and_padding(kernel, padding, dilation, _LETTERS)
    return kernel, stride, padding, dilation


def _refuse_bool(input, kernel_name):
    if input._data.dtype.kind == "b":
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for 'Bool'")


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """torch.nn.functional.max_pool3d (see the module docstring)."""
    kernel, stride, padding, dilation = _args(
        input, kernel_size, stride, padding, dilation, "max_pool3d"
    )
    _refuse_bool(input, "max_pool3d")
    x = input._data
    out = checked_output_size(x, kernel, stride, padding, dilation, ceil_mode)
    batched = x.ndim == 5
    index, flat = K.max_pool_index(
        x if batched else x[None], kernel, stride, padding, dilation, out
    )
    if not batched:  # drop the batch axis from the index (a 4-d input is pooled as it is)
        index = tuple(i.reshape(i.shape[1:]) for i in index[1:])
        flat = flat.reshape(flat.shape[1:])
    y = pick(input, "MaxPool3DWithIndicesBackward0", index)
    if return_indices:
        xp = devices.xp_of(x)
        full = xp.broadcast_to(flat, y._data.shape).astype(np.int64)
        return y, _wrap(xp.ascontiguousarray(full))
    return y


def _matrices(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, dtype):
    """The (out, size) averaging matrix of each spatial dim (divisor_override in the first's
    weights, the others' weights 1) and the windows they average."""
    mats, windows = [], []
    for i in range(3):
        size = x.shape[x.ndim - 3 + i]
        out = K.pool_output_size(size, kernel[i], stride[i], padding[i], 1, ceil_mode)
        w = K.avg_pool_windows(
            size, kernel[i], stride[i], padding[i], ceil_mode, count_include_pad, out
        )
        divisor = None if divisor_override is None else (divisor_override if i == 0 else 1)
        mats.append(K.avg_pool_matrix(w, size, dtype, divisor))
        windows.append(w)
    return mats, windows


def _int_avg_pool3d(x, windows, divisor_override):
    """torch's integer average: the exact window sums divided, rounded toward zero."""
    xp = devices.xp_of(x)
    ones = [xp.asarray(K.avg_pool_matrix(w, n, x.dtype, 1)) for w, n in zip(windows, x.shape[-3:])]
    depth = xp.moveaxis(xp.matmul(ones[0], xp.moveaxis(x, -3, -2)), -2, -3)
    sums = K.resample(depth, ones[1], ones[2])
    if divisor_override is not None:
        divisor = np.full(tuple(len(w) for w in windows), divisor_override, np.int64)
    else:
        counts = [np.array([c for _, _, c in w]) for w in windows]
        divisor = np.einsum("i,j,k->ijk", *counts)
    divisor = xp.asarray(divisor).astype(x.dtype)
    return _wrap((xp.sign(sums) * (xp.abs(sums) // divisor)).astype(x.dtype))


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """torch.nn.functional.avg_pool3d (see the module docstring)."""
    kernel, stride, padding, _ = _args(input, kernel_size, stride, padding, 1, "avg_pool3d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _refuse_bool(input, "avg_pool3d_out_frame")
    x = input._data
    spatial = x.shape[-3:]
    if any(s < k for s, k in zip(spatial, kernel)):  # (torch compares the unpadded sizes)
        raise RuntimeError(
            "input image (T: {} H: {} W: {}) smaller than kernel size (kT: {} kH: {} kW: {})".format(
                *spatial, *kernel
            )
        )
    checked_output_size(x, kernel, stride, padding, (1, 1, 1), ceil_mode)
    mats, windows = _matrices(
        x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, x.dtype
    )
    if x.dtype.kind in "iu":
        return _int_avg_pool3d(x, windows, divisor_override)
    # the depth average: (.., D, H, W) -> (.., H, W, D) -> averaged along its last axis
    moved = movedim(input, -3, -1)
    depth = resample(moved, None, mats[0], "AvgPool3DBackward0")
    depth = movedim(depth, -1, -3)
    return resample(depth, mats[1], mats[2], "AvgPool3DBackward0")
