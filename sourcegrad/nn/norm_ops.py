"""`F.batch_norm` (NativeBatchNormBackward0), with torch's running-statistics update, and
`F.layer_norm` (NativeLayerNormBackward0).

Two primitives of the registry (`ops.nn_layers`), both under torch's node name:

* "batch_norm_train": normalise each channel of (N, C, *) by the batch's own mean and
  biased variance, then weight and bias. The VJPs are the textbook ones,
  dx = invstd (gw - mean(gw) - xhat mean(gw xhat)) with gw = g weight, written with
  numpy functions so that they run on Tensors under create_graph (second derivatives).
* "batch_norm_eval": normalise by given statistics (the running ones): an affine map.

When training with running statistics, they are updated in place without a graph (and,
as torch's kernel writes them, without moving their version counters):
running = momentum stat + (1 - momentum) running, the variance's statistic unbiased
(n / (n - 1)), float32 statistics computed in float64 as torch's CPU kernel does.

"layer_norm" normalises over the trailing dims; its node keeps the forward's normalised
input and 1 / std (the entry's static `saved`), as torch's keeps its mean and rstd, so that
the backward computes no statistic again. An input that is not a real floating-point array
of one dtype with its weight and bias goes through the composite of Tensor ops
(`nn.composites.layer_norm`), whose nodes and errors are those ops'.

Imports: numpy, `ops` (the entries, their kernels), the eager ops, `nn.composites`.
"""

from __future__ import annotations

import numpy as np

from ..eager import operands, tensor_math
from ..eager.spec import OpSpec, record
from ..eager.tensor import Tensor
from ..ops.nn_kernels import update_running_stats
from ..ops.nn_layers import (
    batch_norm_eval,
    batch_norm_train,
    layer_norm_affine,
    layer_norm_parts,
    layer_norm_parts_of_array,
)
from . import composites

__all__ = ["batch_norm", "layer_norm"]

_wrap = Tensor._make


TRAIN = OpSpec("NativeBatchNormBackward0", "batch_norm_train", n_arrays=3)
EVAL = OpSpec("NativeBatchNormBackward0", "batch_norm_eval", n_arrays=5, edges=(0, 1, 2))
LAYER_NORM = OpSpec("NativeLayerNormBackward0", "layer_norm", n_arrays=3)


def _data(t):
    return None if t is None else t._data


def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    """torch.nn.functional.batch_norm over dim 1 of an (N, C, *) input."""
    x = input._data
    if x.ndim < 2:
        raise ValueError(f"Expected 2D or more input (got {x.ndim}D input)")
    if x.dtype.kind not in "fc":
        raise NotImplementedError(
            f"\"batch_norm\" not implemented for '{input.dtype._scalar_name}'"
        )
    c = x.shape[1]
    for name, t in (
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ):
        if t is not None and tuple(t._data.shape) != (c,):
            raise RuntimeError(f"{name} should contain {c} elements not {t._data.size}")
    operands.same_device(input, weight, bias, running_mean, running_var)
    n = x.size // c if c else 0
    if training and n == 1:
        raise ValueError(
            "Expected more than 1 value per channel when training, got input "
            f"size torch.Size({list(x.shape)})"
        )
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if operands.grad_required(t):
            raise RuntimeError(
                f"The function 'native_batch_norm' is not differentiable with "
                f"respect to argument '{name}'. This input cannot have "
                "requires_grad True."
            )
    if training:
        out = _wrap(batch_norm_train(x, _data(weight), _data(bias), eps))
        if operands.needs_grad(input, weight, bias):
            record(TRAIN, out, (input, weight, bias), {"eps": eps})
        # (written into the buffers' arrays: their version counters do not move, as torch's)
        update_running_stats(x, _data(running_mean), _data(running_var), momentum)
        return out
    if running_mean is None or running_var is None:
        raise RuntimeError(
            f"running_{'mean' if running_mean is None else 'var'} must be "
            "defined in evaluation mode"
        )
    # copies: a later training step updates the running statistics in place
    mean, var = running_mean._data.copy(), running_var._data.copy()
    out = _wrap(batch_norm_eval(x, _data(weight), _data(bias), mean, var, eps))
    if operands.needs_grad(input, weight, bias):
        record(EVAL, out, (input, weight, bias, mean, var), {"eps": eps})
    return out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over the last len(normalized_shape) dims, then affine."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    x = input._data
    shape = x.shape
    if shape[len(shape) - k :] != normalized_shape or len(shape) < k:
        expected = "[*, " + ", ".join(str(d) for d in normalized_shape) + "]"
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"{expected}, but got input of size{list(shape)}"
        )
    axes = tuple(range(len(shape) - k, len(shape)))
    w, b = _data(weight), _data(bias)
    if x.dtype.kind != "f" or any(a is not None and a.dtype != x.dtype for a in (w, b)):
        return composites.layer_norm(
            input, axes, weight, bias, eps, _mean_keepdim, tensor_math.rsqrt
        )
    operands.same_device(input, weight, bias)
    if type(x) is np.ndarray and x.size and len(shape) > k:
        normed, rstd = layer_norm_parts_of_array(x, k, eps)  # (the same numbers, faster)
    else:
        normed, rstd = layer_norm_parts(x, axes, eps)
    if w is not None and b is not None and type(normed) is np.ndarray:
        # layer_norm_affine's normed * w + b, the bias added into the product (the same
        # numbers, one array of the input's size fewer)
        out = normed * w
        out += b
    else:
        out = layer_norm_affine(normed, w, b)
    result = _wrap(out)
    if operands.needs_grad(input, weight, bias):
        # (without weight and bias the result is `normed` itself, which the user may write
        # into: the backward then computes the statistics again from the saved input)
        saved = None if out is normed else (normed, rstd)
        static = {"axes": axes, "eps": eps, "saved": saved}
        record(LAYER_NORM, result, (input, weight, bias), static)
    return result


def _mean_keepdim(x, dims):
    return x.mean(dims, keepdim=True)
