"""Array kernels of the spatial layers: convolution, pooling geometry, resampling matrices.

Everything here takes arrays (numpy, or CuPy: the array module is the input's, through
`runtime.array_module`) and plain Python shapes, and returns arrays; nothing records a
graph. The eager ops of `conv_ops`, `pool_ops`, `norm_ops` and `pad_ops` call them and
attach the nodes.

* `convolution` is torch's `aten::convolution` on arrays (N, C, *spatial), 1 to 3 spatial
  dims: a correlation by im2col (a strided view of the padded input, then one batched
  matrix product per group), or, `transposed`, its adjoint (a matrix product, then each
  kernel offset's columns added back at its strided place, col2im).
* `pool_output_size` is torch's `pooling_output_shape` (ceil_mode included).
* `max_pool_index` gives, for each output of a max pool, the advanced index of its input
  element (the first maximum of the window, a NaN winning, as torch's kernel picks it).
* `avg_pool_matrix`, `adaptive_pool_matrix`, `nearest_matrix`, `linear_matrix`: one
  (out, in) matrix per spatial dim; average pools and nearest/linear interpolation are
  separable, so y = A x B^T over the last two axes (`resample`).

Imports: numpy and `sourcegrad.runtime` only.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..runtime import array_module

__all__ = [
    "convolution",
    "conv_output_size",
    "pool_output_size",
    "max_pool_index",
    "avg_pool_windows",
    "avg_pool_matrix",
    "adaptive_pool_matrix",
    "nearest_matrix",
    "linear_matrix",
    "resample",
    "channel_axes",
    "per_channel",
    "update_running_stats",
]


def channel_axes(ndim):
    """The axes a per-channel statistic of an (N, C, *spatial) array reduces over."""
    return (0,) + tuple(range(2, ndim))


def per_channel(v, ndim):
    """A (C,) vector shaped (1, C, 1, ...) to broadcast over an ndim-dimensional array."""
    return np.reshape(v, (1, -1) + (1,) * (ndim - 2))


def update_running_stats(x, running_mean, running_var, momentum):
    """BatchNorm's running statistics after the training batch x (N, C, *), written into
    the arrays `running_mean` and `running_var` (either may be None) in place:
    running = momentum stat + (1 - momentum) running, the variance's statistic unbiased
    (n / (n - 1)). As torch's CPU kernel: float32 statistics computed in float64."""
    axes = channel_axes(x.ndim)
    x = x.astype(np.float64) if x.dtype == np.float32 else x
    n = x.size // x.shape[1] if x.shape[1] else 0
    mean = x.mean(axis=axes)
    stats = [(running_mean, mean)]
    if running_var is not None:
        var = ((x - per_channel(mean, x.ndim)) ** 2).mean(axis=axes)
        stats.append((running_var, var * (n / max(n - 1, 1))))
    for running, stat in stats:
        if running is not None:
            running[...] = (momentum * stat + (1 - momentum) * running.astype(stat.dtype)).astype(
                running.dtype
            )


# --- convolution ------------------------------------------------------------------------------


def conv_output_size(size, kernel, stride, padding, dilation):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _windows(x, kernel, stride, dilation, out):
    """A view (N, C, *out, *kernel) of x's windows (no copy; never written to)."""
    nd = len(kernel)
    st = x.strides
    shape = x.shape[:2] + tuple(out) + tuple(kernel)
    strides = (
        st[:2]
        + tuple(st[2 + i] * stride[i] for i in range(nd))
        + tuple(st[2 + i] * dilation[i] for i in range(nd))
    )
    return array_module(x).lib.stride_tricks.as_strided(x, shape, strides)


def _correlate(x, w, stride, padding, dilation, groups):
    """y[n, o, p] = sum_{c, k} w[o, c, k] x_padded[n, g(o) C/G + c, p * stride + k * dilation]."""
    xp = array_module(x)
    nd = x.ndim - 2
    if any(padding):
        x = xp.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    n, c = x.shape[:2]
    o = w.shape[0]
    kernel = w.shape[2:]
    out = tuple(
        conv_output_size(x.shape[2 + i], kernel[i], stride[i], 0, dilation[i]) for i in range(nd)
    )
    cg, og = c // groups, o // groups
    k = math.prod(kernel)
    p = math.prod(out)
    win = _windows(x, kernel, stride, dilation, out).reshape((n, groups, cg) + out + kernel)
    # (G, N, *out, Cg, *kernel): one row per output position, its window's values in a row
    order = (1, 0) + tuple(range(3, 3 + nd)) + (2,) + tuple(range(3 + nd, 3 + 2 * nd))
    cols = win.transpose(order).reshape(groups, n * p, cg * k)
    wm = w.reshape(groups, og, cg * k).transpose(0, 2, 1)
    y = xp.matmul(cols, wm)  # (G, N * P, Og)
    y = y.reshape((groups, n) + out + (og,))
    y = y.transpose((1, 0, 2 + nd) + tuple(range(2, 2 + nd)))
    return y.reshape((n, o) + out)


def _correlate_adjoint(x, w, stride, padding, dilation, output_padding, groups):
    """The transposed convolution: x (N, Cin, *h), w (Cin, Cout/G, *kernel)."""
    xp = array_module(x)
    nd = x.ndim - 2
    n, cin = x.shape[:2]
    h = x.shape[2:]
    cog = w.shape[1]
    kernel = w.shape[2:]
    cig = cin // groups
    k = math.prod(kernel)
    p = math.prod(h)
    xm = x.reshape((n, groups, cig, p)).transpose(1, 0, 3, 2).reshape(groups, n * p, cig)
    cols = xp.matmul(xm, w.reshape(groups, cig, cog * k))  # (G, N * P, Cog * K)
    cols = cols.reshape((groups, n) + h + (cog,) + kernel)
    order = (1, 0, 2 + nd) + tuple(range(3 + nd, 3 + 2 * nd)) + tuple(range(2, 2 + nd))
    cols = cols.transpose(order).reshape((n, groups * cog) + kernel + h)
    full = tuple(
        (h[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 + output_padding[i]
        for i in range(nd)
    )
    buf = xp.zeros((n, groups * cog) + full, dtype=cols.dtype)
    for offset in itertools.product(*(range(kk) for kk in kernel)):
        at = tuple(
            slice(
                offset[i] * dilation[i],
                offset[i] * dilation[i] + (h[i] - 1) * stride[i] + 1,
                stride[i],
            )
            for i in range(nd)
        )
        buf[(slice(None), slice(None)) + at] += cols[(slice(None), slice(None)) + offset]
    crop = tuple(slice(padding[i], full[i] - padding[i]) for i in range(nd))
    return buf[(slice(None), slice(None)) + crop]


def convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    """torch's aten::convolution on arrays; the arguments are already checked and tuples."""
    if transposed:
        y = _correlate_adjoint(x, w, stride, padding, dilation, output_padding, groups)
    else:
        y = _correlate(x, w, stride, padding, dilation, groups)
    if b is not None:
        y = y + per_channel(b, y.ndim)
    if not y.flags.c_contiguous:
        y = array_module(y).ascontiguousarray(y)
    return y


# --- pooling ----------------------------------------------------------------------------------


def pool_output_size(size, kernel, stride, padding, dilation, ceil_mode):
    """torch's pooling_output_shape."""
    out = (
        size + 2 * padding - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    ) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def max_pool_index(x, kernel, stride, padding, dilation, out):
    """For each output of a max pool of x (N, C, *spatial), the index of its input element.

    Returns (index, flat): `index` is an advanced index into x (a tuple of broadcasting
    integer arrays, shaped like the output) and `flat` the position of the element within
    each (n, c) plane, what torch's `return_indices` gives.
    """
    xp = array_module(x)
    nd = x.ndim - 2
    spatial = x.shape[2:]
    # padding and the part of the last (ceil_mode) window past the input never win
    after = tuple(
        (out[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - spatial[i] - padding[i]
        for i in range(nd)
    )
    widths = ((0, 0), (0, 0)) + tuple((padding[i], max(after[i], 0)) for i in range(nd))
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    padded = xp.pad(x, widths, constant_values=low) if any(sum(w) for w in widths[2:]) else x
    win = _windows(padded, kernel, stride, dilation, out)
    win = win.reshape(x.shape[:2] + tuple(out) + (-1,))
    best = xp.argmax(win, axis=-1)  # the first maximum; numpy and CuPy put a NaN first
    offsets = xp.unravel_index(best, tuple(kernel))
    index = [
        xp.arange(x.shape[0]).reshape((-1,) + (1,) * (nd + 1)),
        xp.arange(x.shape[1]).reshape((1, -1) + (1,) * nd),
    ]
    flat = 0
    for i in range(nd):
        shape = [1] * (nd + 2)
        shape[2 + i] = out[i]
        pos = xp.arange(out[i]).reshape(shape) * stride[i] - padding[i] + offsets[i] * dilation[i]
        index.append(pos)
        flat = flat * spatial[i] + pos
    return tuple(index), flat


def avg_pool_windows(size, kernel, stride, padding, ceil_mode, count_include_pad, out):
    """Per output: (start, end) of its window inside the input, and torch's divisor for it."""
    windows = []
    for i in range(out):
        start = i * stride - padding
        end = min(start + kernel, size + padding)
        pool = end - start
        start, end = max(start, 0), min(end, size)
        windows.append((start, end, pool if count_include_pad else max(end - start, 1)))
    return windows


def avg_pool_matrix(windows, size, dtype, divisor=None):
    """(out, size): row i averages the window of output i, as torch divides it.

    With `divisor` (a part of torch's divisor_override) every weight is 1 / divisor."""
    m = np.zeros((len(windows), size), dtype)
    for i, (start, end, count) in enumerate(windows):
        m[i, start:end] = 1.0 / (count if divisor is None else divisor)
    return m


def adaptive_pool_matrix(size, out, dtype):
    """(out, size): row i averages input [floor(i size / out), ceil((i + 1) size / out))."""
    m = np.zeros((out, size), dtype)
    for i in range(out):
        start = (i * size) // out
        end = -((-(i + 1) * size) // out)
        m[i, start:end] = 1.0 / (end - start)
    return m


def nearest_matrix(size, out, scale, dtype):
    """(out, size) of 0/1: torch's nearest source index, computed in float32 as its kernel."""
    m = np.zeros((out, size), dtype)
    if out == size:
        src = np.arange(out)
    elif out == 2 * size:
        src = np.arange(out) >> 1
    else:
        s = np.float32(1.0 / scale) if scale else np.float32(size) / np.float32(out)
        src = np.minimum(np.floor(np.arange(out, dtype=np.float32) * s).astype(np.int64), size - 1)
    m[np.arange(out), src] = 1.0
    return m


def linear_matrix(size, out, align_corners, scale, dtype):
    """(out, size): torch's linear interpolation weights (two per row), in its precision."""
    ft = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    if align_corners:
        s = ft(size - 1) / ft(out - 1) if out > 1 else ft(0)
    else:
        s = ft(1.0 / scale) if scale else ft(size) / ft(out)
    m = np.zeros((out, size), dtype)
    for i in range(out):
        if align_corners:
            src = s * ft(i)
        else:
            src = max(s * (ft(i) + ft(0.5)) - ft(0.5), ft(0))
        i0 = min(int(math.floor(src)), size - 1)
        lam = min(max(src - ft(i0), ft(0)), ft(1))
        i1 = i0 + (1 if i0 < size - 1 else 0)
        m[i, i0] += ft(1) - lam
        m[i, i1] += lam
    return m


def resample(x, a, b):
    """a @ x @ b^T over x's last two axes (x @ b^T when `a` is None): a separable linear map.

    Written with numpy functions only, so that it runs on Tensors too (a VJP under
    create_graph calls it with Tensors)."""
    y = x if a is None else np.matmul(a, x)
    return np.matmul(y, np.swapaxes(b, -1, -2))


def resample_adjoint(g, a, b):
    """The adjoint of `resample(., a, b)`: a^T @ g @ b."""
    y = g if a is None else np.matmul(np.swapaxes(a, -1, -2), g)
    return np.matmul(y, b)
