"""The entries of the spatial layers: convolution, resampling (pools and interpolation),
batch norm and constant padding, and the primitives `sourcegrad.compile`'s lowering calls.

The eager ops that record these nodes (`nn.conv_ops`, `nn.pool_ops`, `nn.norm_ops`,
`nn.pad_ops`) and the compiled lowering (`compiled.lowering`) both use the entries here;
the array kernels they run are `nn_kernels`'.

* "convolution": torch's `aten::convolution(input, weight, bias, stride, padding,
  dilation, transposed, output_padding, groups)`. Its VJPs are convolutions again: d input
  is the transposed convolution of g with the same weight (output_padding chosen to give
  back the input's size), and the other way round; d weight is a convolution of the input,
  channels and batch swapped, with g as the kernel (stride and dilation exchanged),
  cropped to the kernel's size; d bias sums g over the batch and spatial dims.
* "resample": y = A x B^T over the last two dims (average pools, adaptive average pools,
  nearest/linear interpolation); its VJP A^T g B.
* "batch_norm_train" (each channel normalised by the batch's mean and biased variance,
  then weight and bias) and "batch_norm_eval" (by given statistics: an affine map).
* "layer_norm": normalised over the trailing axes, then weight and bias (torch's
  NativeLayerNormBackward0); the eager node keeps the forward's normalised x and 1 / std.
* "constant_pad": a negative width crops; the VJP is the same op with the widths negated.
* "max_pool_index", "avg_pool_matrix", "adaptive_pool_matrix", "interpolation_matrix",
  "track_running_stats" (impure), "channel_axes": no gradient.

The VJPs are written with numpy functions, so they run on Tensors under create_graph
(second derivatives). `convolution` and `constant_pad` given a Tensor (a VJP run under
create_graph) are the eager ops, found through the Tensor's numpy protocol
(`__array_function__`: `nn.conv_ops` and `nn.pad_ops` give theirs), which record their
nodes again.

Why one module: the layers' entries are one registry family whose VJPs call one another
(a convolution's VJPs are convolutions, the pools' are resamples) and share the kernels'
shape helpers; split, each part would import the others.

Imports: numpy, the registry, `nn_kernels` and `sourcegrad.runtime` only.
"""

from __future__ import annotations

import math

import numpy as np

from ..runtime import array_module
from . import nn_kernels as K
from .registry import Spelling, alias, defnondiff, defprimitive, defvjp

NoneType = type(None)

__all__ = [
    "convolution",
    "conv_input_grad",
    "conv_weight_grad",
    "normalized",
    "batch_norm_input_grad",
    "batch_norm_train",
    "batch_norm_eval",
    "layer_norm",
    "layer_norm_parts",
    "layer_norm_affine",
    "layer_norm_input_grad",
    "constant_pad",
    "negated",
    "max_pool_index",
    "avg_pool_matrix",
    "adaptive_pool_matrix",
    "interpolation_matrix",
    "track_running_stats",
]


def _of_tensors(fn, *args):
    """fn's eager op on args, some of them Tensors: the one the Tensor's numpy protocol
    (`__array_function__`) gives for fn; it records the node."""
    t = next(v for v in args if _is_tensor(v))
    return type(t).__array_function__(t, fn, (type(t),), args, {})


def _is_tensor(value):
    return hasattr(value, "grad_fn")


# --- convolution -------------------------------------------------------------------------------


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """aten::convolution of arrays, or of Tensors (then the eager op, recorded)."""
    if _is_tensor(input) or _is_tensor(weight) or _is_tensor(bias):
        return _of_tensors(
            convolution,
            input,
            weight,
            bias,
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
        )
    return K.convolution(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )


def conv_input_grad(g, w, x_shape, stride, padding, dilation, transposed, groups):
    """d <g, convolution(x, w)> / d x, for x of shape x_shape (arrays or Tensors)."""
    nd = len(x_shape) - 2
    if transposed:
        y = convolution(g, w, None, stride, padding, dilation, False, (0,) * nd, groups)
        if tuple(np.shape(y)[2:]) == tuple(x_shape[2:]):
            return y
        return y[(slice(None), slice(None)) + tuple(slice(0, n) for n in x_shape[2:])]
    k = np.shape(w)[2:]
    h = np.shape(g)[2:]
    extra = tuple(
        x_shape[2 + i] - ((h[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) + 1)
        for i in range(nd)
    )
    return convolution(g, w, None, stride, padding, dilation, True, extra, groups)


def conv_weight_grad(g, x, w_shape, stride, padding, dilation, transposed, groups):
    """d <g, convolution(x, w)> / d w, for w of shape w_shape (arrays or Tensors).

    With u the convolution's input side and v its output side, dw[o, c, k] =
    sum_{n, p} v[n, o, p] u_padded[n, c, p stride + k dilation]: a convolution of u with
    batch and channels swapped (grouped as the weight is) by the kernel v.
    """
    u, v = (g, x) if transposed else (x, g)
    n, c = np.shape(u)[:2]
    nd = len(w_shape) - 2
    cg = c // groups
    us = tuple(np.shape(u)[2:])
    u2 = np.reshape(np.swapaxes(np.reshape(u, (n, groups, cg) + us), 0, 2), (cg, groups * n) + us)
    v2 = np.swapaxes(v, 0, 1)
    r = convolution(u2, v2, None, dilation, padding, stride, False, (0,) * nd, groups)
    if tuple(np.shape(r)[2:]) != tuple(w_shape[2:]):
        r = r[(slice(None), slice(None)) + tuple(slice(0, kk) for kk in w_shape[2:])]
    return np.swapaxes(r, 0, 1)


defvjp(
    "convolution",
    K.convolution,
    Spelling("module", "sourcegrad.ops.nn_kernels.convolution"),
    lambda g, ans, x, w, b, stride, padding, dilation, transposed, output_padding, groups: (
        conv_input_grad(g, w, np.shape(x), stride, padding, dilation, transposed, groups)
    ),
    lambda g, ans, x, w, b, stride, padding, dilation, transposed, output_padding, groups: (
        conv_weight_grad(g, x, np.shape(w), stride, padding, dilation, transposed, groups)
    ),
    lambda g, ans, x, w, b, stride, padding, dilation, transposed, output_padding, groups: np.sum(
        g, axis=K.channel_axes(np.ndim(g))
    ),
    register_fn=False,
    # bilinear in (x, w), plus the bias per channel
    jvps=(
        lambda t, ans, x, w, b, stride, padding, dilation, transposed, output_padding, groups: (
            convolution(t, w, None, stride, padding, dilation, transposed, output_padding, groups)
        ),
        lambda t, ans, x, w, b, stride, padding, dilation, transposed, output_padding, groups: (
            convolution(x, t, None, stride, padding, dilation, transposed, output_padding, groups)
        ),
        lambda t, ans, x, w, b, stride, padding, dilation, transposed, output_padding, groups: (
            np.zeros_like(ans) + K.per_channel(t, np.ndim(ans))
        ),
    ),
)

# The two helpers the VJPs above call are primitives of generated backward code (for
# `sourcegrad.compile` of a module with a convolution) whose own derivatives are not written
# (a second derivative through them is refused).
for _helper in (conv_input_grad, conv_weight_grad):
    defprimitive(
        _helper.__name__,
        _helper,
        Spelling("module", f"sourcegrad.ops.nn_layers.{_helper.__name__}"),
    )
defnondiff(
    "channel_axes",
    K.channel_axes,
    Spelling("module", "sourcegrad.ops.nn_kernels.channel_axes"),
    params=("ndim",),
)

# the convolution primitive, known to the compiler by its kernel (eager records it by name)
alias(
    "lowered_convolution",
    K.convolution,
    Spelling("module", "sourcegrad.ops.nn_kernels.convolution"),
    like="convolution",
)


# --- pools and interpolation -------------------------------------------------------------------

defvjp(
    "resample",
    K.resample,
    Spelling("module", "sourcegrad.ops.nn_kernels.resample"),
    lambda g, ans, x, a, b: K.resample_adjoint(g, a, b),
    None,
    None,
    register_fn=False,
    linear=(0,),
)


def max_pool_index(x, kernel, stride, padding, dilation, ceil_mode):
    """The advanced index picking each 2-d max pool output's input element (the first
    maximum of its window, as torch's)."""
    out = tuple(
        K.pool_output_size(x.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode)
        for i in range(2)
    )
    return K.max_pool_index(x, kernel, stride, padding, dilation, out)[0]


# a primitive to the compiler: an integer index, no gradient (max_pool2d's is the gather's)
defnondiff(
    "max_pool_index",
    max_pool_index,
    Spelling("module", "sourcegrad.ops.nn_layers.max_pool_index"),
    params=("x", "kernel", "stride", "padding", "dilation", "ceil_mode"),
)


def avg_pool_matrix(x, axis, kernel, stride, padding, ceil_mode, count_include_pad, divisor):
    """The (out, size) matrix averaging x's windows along its spatial axis `axis` (0: rows,
    1: columns) as torch's avg_pool2d divides them (`divisor`: its divisor_override, for the
    rows; the columns' weights are then 1), in x's dtype: eager's AvgPool2DBackward0 resamples
    by these two matrices, and so does the compiled lowering."""
    size = x.shape[x.ndim - 2 + axis]
    out = K.pool_output_size(size, kernel[axis], stride[axis], padding[axis], 1, ceil_mode)
    windows = K.avg_pool_windows(
        size, kernel[axis], stride[axis], padding[axis], ceil_mode, count_include_pad, out
    )
    if divisor is not None and axis == 1:
        divisor = 1
    return K.avg_pool_matrix(windows, size, x.dtype, divisor)


def adaptive_pool_matrix(x, axis, out):
    """The (out, size) matrix of adaptive_avg_pool2d along x's spatial axis `axis`."""
    return K.adaptive_pool_matrix(x.shape[x.ndim - 2 + axis], out, x.dtype)


def interpolation_matrix(x, axis, size, scale_factor, mode, align_corners, recompute):
    """The (out, size) matrix of F.interpolate ("nearest" or "bilinear", 4-d x) along x's
    spatial axis `axis`, as eager's interpolate makes it: the output size from `size` or
    from the scale factor (floor(size * factor)), which, unless `recompute`, sets the
    source positions too."""
    n = x.shape[2 + axis]
    scale = None
    if size is not None:
        out = int(size if isinstance(size, (int, np.integer)) else size[axis])
    else:
        factor = scale_factor if isinstance(scale_factor, (int, float)) else scale_factor[axis]
        out = int(math.floor(float(n) * float(factor)))
        if not recompute:
            scale = float(factor)
    if mode == "nearest":
        return K.nearest_matrix(n, out, scale, x.dtype)
    return K.linear_matrix(n, out, bool(align_corners), scale, x.dtype)


# constants of the compiled lowering's pools (their gradient is the resample's)
defnondiff(
    "avg_pool_matrix",
    avg_pool_matrix,
    Spelling("module", "sourcegrad.ops.nn_layers.avg_pool_matrix"),
    params=(
        "x",
        "axis",
        "kernel",
        "stride",
        "padding",
        "ceil_mode",
        "count_include_pad",
        "divisor",
    ),
)
defnondiff(
    "interpolation_matrix",
    interpolation_matrix,
    Spelling("module", "sourcegrad.ops.nn_layers.interpolation_matrix"),
    params=("x", "axis", "size", "scale_factor", "mode", "align_corners", "recompute"),
)
defnondiff(
    "adaptive_pool_matrix",
    adaptive_pool_matrix,
    Spelling("module", "sourcegrad.ops.nn_layers.adaptive_pool_matrix"),
    params=("x", "axis", "out"),
)


# --- batch norm --------------------------------------------------------------------------------


def normalized(x, eps):
    """(x - mean) / sqrt(var + eps) per channel, the batch's biased variance."""
    axes = K.channel_axes(np.ndim(x))
    centred = x - np.mean(x, axis=axes, keepdims=True)
    var = np.mean(centred * centred, axis=axes, keepdims=True)
    return centred / np.sqrt(var + eps)


def batch_norm_input_grad(g, x, w, eps):
    """d <g, batch_norm_train(x, w, b)> / d x (arrays or Tensors)."""
    axes = K.channel_axes(np.ndim(x))
    centred = x - np.mean(x, axis=axes, keepdims=True)
    invstd = 1.0 / np.sqrt(np.mean(centred * centred, axis=axes, keepdims=True) + eps)
    xhat = centred * invstd
    gw = g if w is None else g * K.per_channel(w, np.ndim(x))
    return invstd * (
        gw
        - np.mean(gw, axis=axes, keepdims=True)
        - xhat * np.mean(gw * xhat, axis=axes, keepdims=True)
    )


def _affine(y, w, b):
    # (isinstance, not `is None`: `compiled.lowering` calls these, and the compiler decides
    # isinstance while compiling where `w is None` of an array would be a run-time test)
    if not isinstance(w, NoneType):
        y = y * K.per_channel(w, y.ndim)
    if not isinstance(b, NoneType):
        y = y + K.per_channel(b, y.ndim)
    return y


def batch_norm_train(x, w, b, eps):
    return _affine(normalized(x, eps), w, b)


def batch_norm_eval(x, w, b, mean, var, eps):
    centred = x - K.per_channel(mean, x.ndim)
    return _affine(centred / np.sqrt(K.per_channel(var, x.ndim) + eps), w, b)


defvjp(
    "batch_norm_train",
    batch_norm_train,
    Spelling("module", "sourcegrad.ops.nn_layers.batch_norm_train"),
    lambda g, ans, x, w, b, eps: batch_norm_input_grad(g, x, w, eps),
    lambda g, ans, x, w, b, eps: np.sum(g * normalized(x, eps), axis=K.channel_axes(np.ndim(x))),
    lambda g, ans, x, w, b, eps: np.sum(g, axis=K.channel_axes(np.ndim(g))),
    register_fn=False,
    # the normalisation's Jacobian is symmetric: its JVP is its VJP, then the weight
    jvps=(
        lambda t, ans, x, w, b, eps: (
            batch_norm_input_grad(t, x, None, eps)
            * (1.0 if w is None else K.per_channel(w, np.ndim(x)))
        ),
        lambda t, ans, x, w, b, eps: K.per_channel(t, np.ndim(x)) * normalized(x, eps),
        lambda t, ans, x, w, b, eps: np.zeros_like(ans) + K.per_channel(t, np.ndim(ans)),
    ),
)
defvjp(
    "batch_norm_eval",
    batch_norm_eval,
    Spelling("module", "sourcegrad.ops.nn_layers.batch_norm_eval"),
    lambda g, ans, x, w, b, mean, var, eps: (
        g * K.per_channel((1.0 if w is None else w) / np.sqrt(var + eps), np.ndim(g))
    ),
    lambda g, ans, x, w, b, mean, var, eps: np.sum(
        g * (x - K.per_channel(mean, np.ndim(x))) / np.sqrt(K.per_channel(var, np.ndim(x)) + eps),
        axis=K.channel_axes(np.ndim(x)),
    ),
    lambda g, ans, x, w, b, mean, var, eps: np.sum(g, axis=K.channel_axes(np.ndim(g))),
    None,
    None,
    register_fn=False,
    jvps=(
        lambda t, ans, x, w, b, mean, var, eps: (
            t * K.per_channel((1.0 if w is None else w) / np.sqrt(var + eps), np.ndim(t))
        ),
        lambda t, ans, x, w, b, mean, var, eps: (
            K.per_channel(t, np.ndim(x))
            * (x - K.per_channel(mean, np.ndim(x)))
            / np.sqrt(K.per_channel(var, np.ndim(x)) + eps)
        ),
        lambda t, ans, x, w, b, mean, var, eps: np.zeros_like(ans) + K.per_channel(t, np.ndim(ans)),
        None,
        None,
    ),
)


# --- layer norm --------------------------------------------------------------------------------


def layer_norm_parts(x, axes, eps):
    """(x - mean) / sqrt(var + eps) over `axes` (the biased variance), and 1 / sqrt(var +
    eps), both keeping the reduced dims. (No name is bound twice: a compiled module inlines
    this at every LayerNorm, and a name bound again is pushed on the generated forward's
    saved-values stack.)"""
    centred = x - trailing_mean(x, len(axes))
    rstd = 1 / np.sqrt(trailing_mean(centred * centred, len(axes)) + eps)
    return centred * rstd, rstd


def trailing_mean(x, k):
    """The mean over x's last k axes, keeping them: a product with ones (BLAS), where numpy's
    reduction costs ~100 ns a row (a GPT's (8, 32, 64): 11 us against 3 us). Written with
    the numpy functions a compiled module reads (it inlines layer_norm_parts: both modes
    compute the same numbers); ones_like, so that a Tensor (a backward under create_graph)
    or a CuPy array gets ones of its own kind."""
    lead = x.shape[: x.ndim - k]
    n = x.shape[-1] if k == 1 else int(np.prod(x.shape[x.ndim - k :]))
    rows = np.reshape(x, lead + (n,))
    return np.reshape(np.matmul(rows, np.ones_like(x, shape=(n,))) / n, lead + (1,) * k)


def layer_norm_parts_of_array(x, k, eps):
    """`layer_norm_parts(x, axes, eps)` of a non-empty float numpy array x normalised over
    its last k axes, of which it has more than k: the same numbers (the same operations in
    the same order), with the statistics written in place and one vector of ones, where
    `layer_norm_parts` (inlined by compiled modules, so written as plain expressions) makes
    a new array at every step: the eager forward's kernel, ~17% fewer instructions at a
    GPT's sizes."""
    lead = x.shape[: x.ndim - k]
    n = math.prod(x.shape[x.ndim - k :])
    ones = np.ones(n, x.dtype)
    kept, rows = lead + (1,) * k, lead + (n,)  # (trailing_mean's shapes: its very products)
    mean = np.matmul(x.reshape(rows), ones)
    mean /= n
    centred = np.subtract(x, mean.reshape(kept))
    var = np.matmul(np.square(centred).reshape(rows), ones)
    var /= n
    var += eps
    rstd = np.sqrt(var, out=var)
    np.divide(1, rstd, out=rstd)
    rstd = rstd.reshape(kept)
    np.multiply(centred, rstd, out=centred)
    return centred, rstd


def layer_norm(x, w, b, axes, eps):
    """torch's layer norm over the trailing `axes`, then weight and bias where given (None:
    `isinstance`, which the compiler decides while compiling, as `_affine`'s)."""
    return layer_norm_affine(layer_norm_parts(x, axes, eps)[0], w, b)


def layer_norm_affine(normed, w, b):
    """normed times the weight, plus the bias, each where given."""
    if isinstance(w, NoneType):
        return _plus_bias(normed, b)
    return _plus_bias(normed * w, b)


def _plus_bias(y, b):
    if isinstance(b, NoneType):
        return y
    return y + b


def _normed_of(x, axes, eps, saved):
    """(x normalised, 1 / std): `saved`, the eager forward's, for an array x; computed from
    x for a Tensor x (a backward under create_graph), so that their derivatives are
    recorded and a second derivative sees them."""
    if saved is None or _is_tensor(x):
        return layer_norm_parts(x, axes, eps)
    return saved


def _leading(ndim, axes):
    """The axes a layer norm's weight is broadcast over (all but the normalised ones)."""
    return tuple(range(ndim - len(axes)))


# The backward's sums over the normalised (trailing) axes and over the others, for arrays:
# products with ones (BLAS), where numpy's reduction costs ~100 ns a row (18 us for a GPT's
# (8, 32, 64), against 2 us). Only the eager node calls them: the compiler differentiates the
# forward's lines itself.


def _mean_trailing(a, axes):
    """np.mean(a, axis=axes, keepdims=True) over a's last len(axes) axes."""
    k = len(axes)
    n = math.prod(a.shape[a.ndim - k :])
    if not (type(a) is np.ndarray and a.dtype in _BLAS_DTYPES and a.size):
        return np.mean(a, axis=axes, keepdims=True)
    sums = np.matmul(a.reshape(-1, n), np.ones(n, a.dtype))
    return (sums / n).reshape(a.shape[: a.ndim - k] + (1,) * k)


def _sum_leading(a, axes):
    """np.sum(a) over all but its last len(axes) axes (a layer norm's weight's gradient)."""
    k = len(axes)
    trailing = a.shape[a.ndim - k :]
    if not (type(a) is np.ndarray and a.dtype in _BLAS_DTYPES and a.size):
        return np.sum(a, axis=_leading(np.ndim(a), axes))
    rows = a.reshape(-1, math.prod(trailing))
    return np.matmul(np.ones(rows.shape[0], a.dtype), rows).reshape(trailing)


_BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def layer_norm_input_grad(g, x, w, axes, eps, saved=None):
    """d <g, layer_norm(x, w, b)> / d x = rstd (gw - mean(gw) - xhat mean(gw xhat)), gw = g w
    (arrays, or Tensors under create_graph)."""
    xhat, rstd = _normed_of(x, axes, eps, saved)
    gw = g if w is None else g * w
    gwx = gw * xhat
    if not all(type(a) is np.ndarray and a.dtype == gwx.dtype for a in (gw, xhat, rstd)):
        mean_gw = np.mean(gw, axis=axes, keepdims=True)
        mean_gwx = np.mean(gwx, axis=axes, keepdims=True)
        return rstd * (gw - mean_gw - xhat * mean_gwx)
    mean_gw = _mean_trailing(gw, axes)
    mean_gwx = _mean_trailing(gwx, axes)
    # the same steps on arrays (the eager backward's case), written into the arrays made here
    out = np.subtract(gw, mean_gw, out=None if w is None else gw)  # (g * w: made here)
    np.multiply(xhat, mean_gwx, out=gwx)
    out -= gwx
    out *= rstd
    return out


defvjp(
    "layer_norm",
    layer_norm,
    Spelling("module", "sourcegrad.ops.nn_layers.layer_norm"),
    lambda g, ans, x, w, b, axes, eps, *, saved=None: layer_norm_input_grad(
        g, x, w, axes, eps, saved
    ),
    lambda g, ans, x, w, b, axes, eps, *, saved=None: _sum_leading(
        g * _normed_of(x, axes, eps, saved)[0], axes
    ),
    lambda g, ans, x, w, b, axes, eps, *, saved=None: _sum_leading(g, axes),
    None,
    None,
    # The compiler reads the forward (`compiled.lowering` calls it) and differentiates its
    # lines; eager records this entry's one node (NativeLayerNormBackward0), which keeps the
    # forward's normalised x and 1 / std (`saved`, a static argument) for its backward.
    register_fn=False,
    # the normalisation's Jacobian is symmetric: its JVP is its VJP, then the weight
    jvps=(
        lambda t, ans, x, w, b, axes, eps, *, saved=None: (
            layer_norm_input_grad(t, x, None, axes, eps, saved) * (1.0 if w is None else w)
        ),
        lambda t, ans, x, w, b, axes, eps, *, saved=None: t * _normed_of(x, axes, eps, saved)[0],
        lambda t, ans, x, w, b, axes, eps, *, saved=None: np.zeros_like(ans) + t,
        None,
        None,
    ),
)


def track_running_stats(input, running_mean, running_var, num_batches_tracked, momentum):
    """nn.BatchNorm's effect in training mode, as eager's: num_batches_tracked += 1, then
    the running statistics moved towards the batch's (momentum None: a cumulative
    average), all in place. An impure primitive: generated code calls it in the forward
    pass (where eager's forward updates them), never in the backward."""
    if num_batches_tracked is not None:
        num_batches_tracked += 1
        if momentum is None:
            momentum = 1.0 / float(num_batches_tracked)
    K.update_running_stats(input, running_mean, running_var, momentum)


defnondiff(
    "track_running_stats",
    track_running_stats,
    Spelling("module", "sourcegrad.ops.nn_layers.track_running_stats"),
    params=("input", "running_mean", "running_var", "num_batches_tracked", "momentum"),
    pure=False,
)


# --- constant padding ------------------------------------------------------------------------


def negated(widths):
    return tuple(-w for w in widths)


def pad_array(x, widths, value=0):
    """x cropped where a width is negative, then padded with `value` where it is positive."""
    k = len(widths) // 2
    crop = [slice(None)] * x.ndim
    grow = [(0, 0)] * x.ndim
    for i in range(k):
        axis = x.ndim - 1 - i
        lo, hi = widths[2 * i], widths[2 * i + 1]
        crop[axis] = slice(max(-lo, 0), x.shape[axis] - max(-hi, 0))
        grow[axis] = (max(lo, 0), max(hi, 0))
    x = x[tuple(crop)]
    if any(g != (0, 0) for g in grow):
        x = array_module(x).pad(x, grow, constant_values=value)
    return x


def constant_pad(input, widths, value=0):
    """The constant pad of an array, or of a Tensor (then the eager op, recorded)."""
    if _is_tensor(input):
        return _of_tensors(constant_pad, input, widths, value)
    return pad_array(input, widths, value)


defvjp(
    "constant_pad",
    pad_array,
    Spelling("module", "sourcegrad.ops.nn_layers.pad_array"),
    lambda g, ans, x, widths, value=0: constant_pad(g, negated(widths), 0),
    register_fn=False,
    jvps=(lambda t, ans, x, widths, value=0: constant_pad(t, widths, 0),),
)
