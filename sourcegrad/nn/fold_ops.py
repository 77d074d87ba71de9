"""`F.unfold` (im2col) and `F.fold` (col2im), as torch's.

`unfold(input, kernel_size, dilation, padding, stride)` takes (N, C, H, W) (or (C, H, W))
and returns the sliding blocks as columns, (N, C * kh * kw, L): channel-major, then the
kernel offset (row, column), L the block positions in row-major order. `fold` takes such
columns and the output size and sums each column back into its block's positions, (N, C,
H, W) (overlaps add up; it is unfold's adjoint). Both are one gather / scatter-add over the
zero-padded, flattened spatial dims with positions computed by numpy, so the gradients flow
through `index_select` / `index_add`.
"""

from __future__ import annotations

import numpy as np

from ..eager import factories
from .pad_ops import pad

__all__ = ["unfold", "fold"]


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _positions(padded, kernel, dilation, stride, blocks):
    """Flat index into the padded (Hp * Wp) plane of each (kernel offset, block): (kh*kw*L,)."""
    ki = np.arange(kernel[0])[:, None, None, None] * dilation[0]
    kj = np.arange(kernel[1])[None, :, None, None] * dilation[1]
    oi = np.arange(blocks[0])[None, None, :, None] * stride[0]
    oj = np.arange(blocks[1])[None, None, None, :] * stride[1]
    return ((oi + ki) * padded[1] + (oj + kj)).reshape(-1)


def _blocks(size, kernel, dilation, padding, stride):
    return tuple(
        (size[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
        for i in range(2)
    )


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of (N, C, H, W) as columns (N, C * kh * kw, L)."""
    kernel, dilation, padding, stride = map(_pair, (kernel_size, dilation, padding, stride))
    n_dims = input.dim()
    if n_dims < 3:  # torch's kernel indexes dim n_dims (the width of a 3-d input) first
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(n_dims, 1)}, "
            f"{max(n_dims, 1) - 1}], but got {n_dims})"
        )
    if n_dims > 4:
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {list(input.shape)}"
        )
    if not input.is_floating_point() and not input.is_complex():
        raise NotImplementedError(
            f"\"im2col_out_cpu\" not implemented for '{input.dtype._scalar_name}'"
        )
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    n, c, h, w = x.shape
    blocks = _blocks((h, w), kernel, dilation, padding, stride)
    if min(blocks) < 1:
        raise RuntimeError(
            f"Given input with spatial size ({h}, {w}), kernel_size={kernel}, "
            f"dilation={dilation}, padding={padding}, calculated shape of the array of "
            f"sliding blocks as {blocks}, but its components must be at least one."
        )
    if any(padding):
        x = pad(x, (padding[1], padding[1], padding[0], padding[0]))
    padded = (h + 2 * padding[0], w + 2 * padding[1])
    where = factories.tensor(_positions(padded, kernel, dilation, stride, blocks))
    cols = x.reshape(n, c, padded[0] * padded[1]).index_select(2, where)
    cols = cols.reshape(n, c * kernel[0] * kernel[1], blocks[0] * blocks[1])
    return cols if batched else cols.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Columns (N, C * kh * kw, L) summed back into (N, C, H, W)."""
    size, kernel, dilation, padding, stride = map(
        _pair, (output_size, kernel_size, dilation, padding, stride)
    )
    if input.dim() not in (2, 3):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(input.shape)}"
        )
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    n, ck, length = x.shape
    if ck % (kernel[0] * kernel[1]):
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={ck} and kernel_size={kernel}."
        )
    blocks = _blocks(size, kernel, dilation, padding, stride)
    if blocks[0] * blocks[1] != length:
        raise RuntimeError(
            f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={padding}, stride={stride}, expected size of input's dimension 2 to "
            f"match the calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
            f"{blocks[0] * blocks[1]}, but got input.size(2)={length}."
        )
    c = ck // (kernel[0] * kernel[1])
    padded = (size[0] + 2 * padding[0], size[1] + 2 * padding[1])
    where = factories.tensor(_positions(padded, kernel, dilation, stride, blocks))
    out = factories.zeros((n, c, padded[0] * padded[1]), dtype=x.dtype, device=x.device)
    out = out.index_add(2, where, x.reshape(n, c, ck // c * length))
    out = out.reshape(n, c, padded[0], padded[1])
    out = out[:, :, padding[0] : padding[0] + size[0], padding[1] : padding[1] + size[1]]
    return out if batched else out.squeeze(0)
