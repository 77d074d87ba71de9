"""Pooling and interpolation: max/avg/adaptive-avg pools and `interpolate`, with torch's nodes.

* Max pools pick one input element per output (the first maximum of its window), so
  `max_pool2d` is a gather (MaxPool2DWithIndicesBackward0) through the index that
  `kernels.max_pool_index` finds; its VJP is the table's `getitem` rule (a scatter-add),
  differentiable again. `max_pool1d` is torch's: a 2-d pool of the input unsqueezed
  (SqueezeBackward1 over MaxPool2DWithIndicesBackward0).
* Average pools, adaptive average pools and nearest/linear/bilinear interpolation are
  separable linear maps: y = A x B^T over the last two dims, with constant matrices built
  from the geometry (`kernels.*_matrix`). One entry, "resample" (`ops.nn_layers`), serves them all under
  torch's node names (AvgPool2DBackward0, AdaptiveAvgPool2DBackward0,
  UpsampleNearest2DBackward0, UpsampleBilinear2DBackward0, ...); its VJP A^T g B is
  written with numpy's matmul, so it runs on Tensors under create_graph.
* `adaptive_avg_pool2d` to 1x1 is a mean over the last two dims (MeanBackward1), as torch.

Imports: numpy, `ops.nn_kernels`, `unsupported` and the eager tensor_math.
"""

from __future__ import annotations

import math

import numpy as np

from ..eager import devices, operands, shape_ops, tensor_math
from ..eager.spec import record
from ..eager.tensor import Tensor
from ..ops import nn_kernels as K
from ..ops.nn_layers import avg_pool_matrix, interpolation_matrix
from .unsupported import UnsupportedOptionError

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "interpolate",
    "resample",
    "checked_output_size",
]

_wrap = Tensor._make


def resample(input, a, b, node_name):
    """a @ input @ b^T over the last two dims (input @ b^T when `a` is None), recorded."""
    xp = devices.xp_of(input._data)
    dtype = input._data.dtype
    a = None if a is None else xp.asarray(a, dtype=dtype)
    b = xp.asarray(b, dtype=dtype)
    out = _wrap(operands.result(K.resample(input._data, a, b)))
    if operands.needs_grad(input):
        record(
            operands.cached_spec(node_name, "resample", n_arrays=3, edges=(0,)), out, (input, a, b)
        )
    return out


def _pair(value, n, name):
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(f"{name} must either be a single int, or a tuple of {n} ints")
    return value


def _pool_args(input, kernel_size, stride, padding, dilation, nd, name):
    kernel = _pair(kernel_size, nd, f"{name}: kernel_size")
    stride = (
        kernel
        if stride is None or (not isinstance(stride, int) and len(stride) == 0)
        else _pair(stride, nd, f"{name}: stride")
    )
    padding = _pair(padding, nd, f"{name}: padding")
    dilation = _pair(dilation, nd, f"{name}: dilation")
    x = input._data
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input"
        )
    if any(k <= 0 for k in kernel):
        raise RuntimeError(
            "kernel size should be greater than zero, but got "
            + " ".join(f"k{'HW'[i] if nd == 2 else 'W'}: {k}" for i, k in enumerate(kernel))
        )
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    check_dilation_and_padding(kernel, padding, dilation, "HW" if nd == 2 else "W")
    return kernel, stride, padding, dilation


def check_dilation_and_padding(kernel, padding, dilation, letters):
    """torch's last checks of a pool's arguments (any dimension count; `letters` name the
    dimensions in its message: "W", "HW", "THW")."""
    if any(d <= 0 for d in dilation):
        raise RuntimeError(
            "dilation should be greater than zero, but got "
            + " ".join(f"dilation{letters[i]}: {d}" for i, d in enumerate(dilation))
        )
    for k, p, d in zip(kernel, padding, dilation):
        if p < 0 or p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(
                "pad should be at most half of effective kernel size, but got "
                f"pad={p}, kernel_size={k} and dilation={d}"
            )


def checked_output_size(x, kernel, stride, padding, dilation, ceil_mode):
    """The pooled spatial sizes of x, torch's error where one is not positive."""
    nd = len(kernel)
    spatial = x.shape[x.ndim - nd :]
    out = tuple(
        K.pool_output_size(spatial[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode)
        for i in range(nd)
    )
    if any(o <= 0 for o in out):
        c = x.shape[x.ndim - nd - 1]
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, (c,) + spatial))}). "
            f"Calculated output size: ({'x'.join(map(str, (c,) + out))}). "
            "Output size is too small"
        )
    return out


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    kernel, stride, padding, dilation = _pool_args(
        input, kernel_size, stride, padding, dilation, 2, "max_pool2d"
    )
    x = input._data
    out = checked_output_size(x, kernel, stride, padding, dilation, ceil_mode)
    batched = x.ndim == 4
    index, flat = K.max_pool_index(
        x if batched else x[None], kernel, stride, padding, dilation, out
    )
    if not batched:  # drop the batch axis from the index (torch pools a 3-d input as it is)
        index = tuple(i.reshape(i.shape[1:]) for i in index[1:])
        flat = flat.reshape(flat.shape[1:])
    y = shape_ops.pick(input, "MaxPool2DWithIndicesBackward0", index)
    if return_indices:
        xp = devices.xp_of(x)
        full = xp.broadcast_to(flat, y._data.shape).astype(np.int64)
        return y, _wrap(xp.ascontiguousarray(full))
    return y


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    kernel, stride, padding, dilation = _pool_args(
        input, kernel_size, stride, padding, dilation, 1, "max_pool1d"
    )
    x = shape_ops.unsqueeze(input, -2)
    out = max_pool2d(
        x, (1,) + kernel, (1,) + stride, (0,) + padding, (1,) + dilation, ceil_mode, return_indices
    )
    if return_indices:
        return shape_ops.squeeze(out[0], -2), shape_ops.squeeze(out[1], -2)
    return shape_ops.squeeze(out, -2)


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    kernel, stride, padding, _ = _pool_args(input, kernel_size, stride, padding, 1, 2, "avg_pool2d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    x = input._data
    out = checked_output_size(x, kernel, stride, padding, (1, 1), ceil_mode)
    if x.dtype.kind in "iub":
        rows, cols = (
            K.avg_pool_windows(
                x.shape[x.ndim - 2 + i],
                kernel[i],
                stride[i],
                padding[i],
                ceil_mode,
                count_include_pad,
                out[i],
            )
            for i in range(2)
        )
        return _int_avg_pool(x, rows, cols, divisor_override)
    # (the matrices sourcegrad.compile's lowering averages by: the same numbers)
    a, b = (
        avg_pool_matrix(
            x, i, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
        )
        for i in range(2)
    )
    return resample(input, a, b, "AvgPool2DBackward0")


def _int_avg_pool(x, rows, cols, divisor_override):
    """An integer average pool as torch's: the exact window sums divided, rounded toward zero."""
    xp = devices.xp_of(x)
    ones = [
        K.avg_pool_matrix(w, n, x.dtype, 1) for w, n in ((rows, x.shape[-2]), (cols, x.shape[-1]))
    ]
    sums = K.resample(x, xp.asarray(ones[0]), xp.asarray(ones[1]))
    if divisor_override is not None:
        divisor = np.full((len(rows), len(cols)), divisor_override, np.int64)
    else:
        divisor = np.outer([r[2] for r in rows], [c[2] for c in cols])
    divisor = xp.asarray(divisor).astype(x.dtype)
    return _wrap((xp.sign(sums) * (xp.abs(sums) // divisor)).astype(x.dtype))


def _refuse_integers(input, name):
    if input._data.dtype.kind in "iub":
        raise NotImplementedError(f"\"{name}\" not implemented for '{input.dtype._scalar_name}'")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    if input._data.ndim not in (2, 3):
        raise RuntimeError(
            f"avg_pool1d() Expected 2D or 3D input tensor, but got {list(input._data.shape)}"
        )
    kernel = _pair(kernel_size, 1, "avg_pool1d: kernel_size")
    stride = kernel if stride is None else _pair(stride, 1, "avg_pool1d: stride")
    x = shape_ops.unsqueeze(input, -2)
    y = avg_pool2d(
        x,
        (1,) + kernel,
        (1,) + stride,
        (0,) + _pair(padding, 1, "padding"),
        ceil_mode,
        count_include_pad,
    )
    return shape_ops.squeeze(y, -2)


def _adaptive_size(output_size, spatial, name):
    n = len(spatial)
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        output_size = (output_size,) * n
    output_size = tuple(output_size)
    if len(output_size) != n:
        raise RuntimeError(f"{name}: output_size must be {n}")
    return tuple(spatial[i] if s is None else int(s) for i, s in enumerate(output_size))


def adaptive_avg_pool2d(input, output_size):
    x = input._data
    if x.ndim not in (3, 4):
        raise RuntimeError(
            f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(x.shape)}"
        )
    out = _adaptive_size(output_size, x.shape[-2:], "adaptive_avg_pool2d")
    if any(o < 0 for o in out):
        raise RuntimeError(
            "adaptive_avg_pool2d: elements of output_size must be greater than "
            "or equal to 0 but received {" + ", ".join(map(str, out)) + "}"
        )
    if out == (1, 1):
        return tensor_math.mean(input, (-1, -2), True)
    _refuse_integers(input, "adaptive_avg_pool2d")
    a = K.adaptive_pool_matrix(x.shape[-2], out[0], x.dtype)
    b = K.adaptive_pool_matrix(x.shape[-1], out[1], x.dtype)
    return resample(input, a, b, "AdaptiveAvgPool2DBackward0")


def adaptive_avg_pool1d(input, output_size):
    if input._data.ndim not in (2, 3):
        raise RuntimeError(
            f"adaptive_avg_pool1d() argument 'input' (position 1) must be 2D or "
            f"3D, but got {input._data.ndim}D"
        )
    out = _adaptive_size(output_size, input._data.shape[-1:], "adaptive_avg_pool1d")
    y = adaptive_avg_pool2d(shape_ops.unsqueeze(input, -2), (1,) + out)
    return shape_ops.squeeze(y, -2)


# --- interpolate ------------------------------------------------------------------------------

_NAMES = {
    ("nearest", 1): "UpsampleNearest1DBackward0",
    ("nearest", 2): "UpsampleNearest2DBackward0",
    ("linear", 1): "UpsampleLinear1DBackward0",
    ("bilinear", 2): "UpsampleBilinear2DBackward0",
}


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """torch.nn.functional.interpolate for modes nearest (1-d, 2-d), linear, bilinear, area."""
    x = input._data
    nd = x.ndim - 2
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear"
        )
    if align_corners is None:
        align_corners = False
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    spatial = x.shape[2:]
    if size is not None:
        out = (size,) * nd if isinstance(size, (int, np.integer)) else tuple(size)
        if len(out) != nd:
            raise ValueError(
                "Input and output must have the same number of spatial dimensions, "
                f"but got input with spatial dimensions of {list(spatial)} and "
                f"output size of {size}. Please provide input tensor in (N, C, d1, "
                "d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
            )
        out = tuple(int(o) for o in out)
    elif scale_factor is not None:
        factors = (
            (scale_factor,) * nd if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        )
        if len(factors) != nd:
            raise ValueError(
                "Input and scale_factor must have the same number of spatial "
                f"dimensions, but got input with spatial dimensions of "
                f"{list(spatial)} and scale_factor of shape {scale_factor}. Please "
                "provide input tensor in (N, C, d1, d2, ...,dK) format and "
                "scale_factor in (s1, s2, ...,sK) format."
            )
        out = tuple(int(math.floor(float(n) * float(f))) for n, f in zip(spatial, factors))
    else:
        raise ValueError("either size or scale_factor should be defined")
    if antialias:
        raise UnsupportedOptionError("sourcegrad: F.interpolate(antialias=True) is not supported")
    if mode == "area":
        return adaptive_avg_pool2d(input, out) if nd == 2 else adaptive_avg_pool1d(input, out)
    if mode == "bilinear" and nd != 2 or mode == "linear" and nd != 1:
        raise NotImplementedError(
            f"Got {x.ndim}D input, but {mode} mode needs {3 if mode == 'linear' else 4}D input"
        )
    name = _NAMES.get((mode, nd))
    if name is None:
        raise UnsupportedOptionError(
            f"sourcegrad: F.interpolate(mode={mode!r}) on a {x.ndim}-d "
            "input is not supported (nearest and area on 3-d and 4-d "
            "inputs, linear on 3-d, bilinear on 4-d are)"
        )
    _refuse_integers(input, f"upsample_{mode}{nd}d")
    mats = [  # (the lowering's matrices too: the same numbers compiled)
        interpolation_matrix(x, i, size, scale_factor, mode, align_corners, recompute_scale_factor)
        for i in range(nd)
    ]
    return resample(input, mats[0] if nd == 2 else None, mats[-1], name)
