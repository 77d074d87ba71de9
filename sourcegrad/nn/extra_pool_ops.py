"""`F.adaptive_max_pool1d/2d`, `F.lp_pool1d/2d` and `F.local_response_norm`, as torch's.

adaptive_max_pool2d(input, output_size, return_indices) takes (N, C, H, W) or (C, H, W) and
returns the max of each adaptive window (rows floor(i H / out) to ceil((i + 1) H / out),
likewise columns), with the flat H * W index of each max when return_indices; the 1-d form
pools (N, C, L) or (C, L). The maxima are found with numpy (the first one in a tie, a NaN
before any number, as torch's kernel) and gathered, so the gradient goes to that one element
as torch's backward sends it (`amax` would split it among ties).

lp_pool and local_response_norm are torch's compositions of avg_pool, pow and pad, written
with the same eager ops (sourcegrad's avg_pool2d serves the 3-d avg_pool torch uses for
local_response_norm on 4-d and larger inputs: the window runs over channels only).
"""

from __future__ import annotations

import math

import numpy as np

from ..eager import factories, tensor_math
from .pad_ops import pad
from .pool_ops import avg_pool1d, avg_pool2d

__all__ = [
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "local_response_norm",
]


def _windows(size, out):
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _adaptive_max(input, output_size, name, spatial):
    """(maxima, flat indices) over the last `spatial` dims (1 or 2)."""
    if input.dim() not in (spatial + 1, spatial + 2):
        if spatial == 1:
            raise RuntimeError(
                f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for "
                f"argument #1 'self' (while checking arguments for {name})"
            )
        raise RuntimeError(f"{name}(): Expected 3D or 4D tensor, but got: {list(input.shape)}")
    sizes = tuple(input.shape[-spatial:])
    outs = (
        tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * spatial
    )
    if len(outs) != spatial:
        if spatial == 1:
            raise RuntimeError(
                f"{name}() argument 'output_size' should contain one int (got {len(outs)})"
            )
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be 2")
    outs = tuple(s if o is None else o for s, o in zip(sizes, outs))
    lead = tuple(input.shape[:-spatial])
    data = np.asarray(input.detach().cpu().numpy()).reshape(lead + (-1,))
    rows = _windows(sizes[0], outs[0])
    cols = _windows(sizes[1], outs[1]) if spatial == 2 else [(0, 1)]
    width = sizes[1] if spatial == 2 else 1
    index = np.empty(lead + (len(rows) * len(cols),), dtype=np.int64)
    k = 0
    for r0, r1 in rows:
        for c0, c1 in cols:
            flat = (np.arange(r0, r1)[:, None] * width + np.arange(c0, c1)[None, :]).reshape(-1)
            window = data[..., flat]
            # (a NaN is the maximum, as torch's kernel takes it; argmax takes the first)
            nan = np.isnan(window)
            pick = np.where(nan.any(-1), nan.argmax(-1), window.argmax(-1)) if flat.size else 0
            index[..., k] = flat[pick]
            k += 1
    where = factories.tensor(index, device=input.device)
    flat_input = input.reshape(lead + (-1,))
    out = flat_input.gather(len(lead), where).reshape(lead + outs)
    return out, where.reshape(lead + outs)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, "adaptive_max_pool1d", 1)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, "adaptive_max_pool2d", 2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    out, index = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, index) if return_indices else out


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out, index = adaptive_max_pool2d_with_indices(input, output_size)
    return (out, index) if return_indices else out


def _lp(out, norm_type, window):
    return (tensor_math.sign(out) * tensor_math.relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p), as torch: avg_pool1d of x^p times the window."""
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp(out, norm_type, kernel_size)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p), as torch: avg_pool2d of x^p times the window."""
    kh, kw = kernel_size if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * 2
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp(out, norm_type, kw * kh)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    sizes = tuple(input.shape)
    rest = math.prod(sizes[2:])
    div = div.reshape(sizes[0], 1, sizes[1], rest)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).reshape(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div
