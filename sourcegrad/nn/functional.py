"""`sourcegrad.nn.functional`: activations and losses, with torch's nodes.

`cross_entropy` is `nll_loss(log_softmax(x, 1), target)` (NllLossBackward0 over
LogSoftmaxBackward0, as torch records it); `mse_loss` is MseLossBackward0;
`linear` with a bias on a matrix is AddmmBackward0 over a TBackward0 of the
weight. Class-index targets work for inputs of shape (C,) and (N, C), and for
(N, C, d1, ...) by moving the class dimension last; probability targets and
label smoothing are written with plain tensor ops (so their nodes differ from
torch's).
"""
from __future__ import annotations

import numpy as np

from ..eager import devices, factories, ops, shape_ops
from ..eager import inplace as _inplace_ops
from ..eager.ops import _needs_grad, _result
from ..eager.spec import OpSpec, record
from ..eager.tensor import Tensor
from .. import rules_torch as rt

_wrap = Tensor._make

NLL_LOSS = OpSpec("NllLossBackward0", "nll_loss", n_arrays=2, edges=(0,))
MSE_LOSS = OpSpec("MseLossBackward0", "mse_loss", n_arrays=2)


def _reduction(size_average, reduce, reduction):
    """torch's legacy size_average/reduce flags, folded into `reduction`."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def relu(input, inplace=False):
    return _inplace_ops.relu_(input) if inplace else ops.relu(input)


def relu_(input):
    return _inplace_ops.relu_(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        return _inplace_ops.leaky_relu_(input, negative_slope)
    return ops.leaky_relu(input, negative_slope)


def sigmoid(input):
    return ops.sigmoid(input)


def tanh(input):
    return ops.tanh(input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return ops.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return ops.log_softmax(input, dim, dtype)


def linear(input, weight, bias=None):
    """input @ weight.T + bias (AddmmBackward0 for a matrix input with a bias, as torch)."""
    wt = shape_ops.t(weight)
    if input._data.ndim == 2:
        return ops.addmm(bias, input, wt) if bias is not None else ops.mm(input, wt)
    out = ops.matmul(input, wt)
    return out + bias if bias is not None else out


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    if input._data.ndim > 2:
        # (N, C, d1, ...): classes last, then one row per position
        c = input._data.shape[1]
        moved = shape_ops.movedim(input, 1, -1).reshape(-1, c)
        out = nll_loss(moved, target.reshape(-1), weight, ignore_index=ignore_index,
                       reduction=reduction)
        return out.reshape(target.shape) if reduction == "none" else out
    t = target._data
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {target.dtype._scalar_name}")
    w = weight._data if isinstance(weight, Tensor) else weight
    ops.same_device(input, target, weight)
    out = _wrap(_result(rt.nll_loss(input._data, t, w, reduction, ignore_index)))
    if _needs_grad(input):
        record(NLL_LOSS, out, (input, target),
               {"weight": w, "reduction": reduction, "ignore_index": ignore_index})
    return out


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    reduction = _reduction(size_average, reduce, reduction)
    class_dim = 0 if input._data.ndim == 1 else 1
    logp = ops.log_softmax(input, class_dim)
    if target._data.dtype.kind == "f":
        # probability targets (with optional smoothing): plain tensor ops
        c = input._data.shape[class_dim]
        probs = target * (1 - label_smoothing) + label_smoothing / c if label_smoothing else target
        if weight is not None:
            shape = [1] * input._data.ndim
            shape[class_dim] = c
            probs = probs * weight.reshape(shape)
        losses = -(probs * logp).sum(class_dim)
        return _reduce(losses, reduction, input._data.shape[0] if input._data.ndim > 1 else 1)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return loss
    c = input._data.shape[class_dim]
    smooth = -logp.sum(class_dim) if weight is None else -(logp * weight.reshape(
        [c if i == class_dim else 1 for i in range(input._data.ndim)])).sum(class_dim)
    valid = (target != ignore_index)
    smooth = smooth * valid
    if reduction == "mean":
        denom = valid.sum() if weight is None else (weight[target.clamp(min=0)] * valid).sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / c)


def _reduce(losses, reduction, n):
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _reduction(size_average, reduce, reduction)
    xd, yd, rd, rx, ry = ops._promote(input, target)
    out = _wrap(_result(rt.mse_loss(xd, yd, reduction), rd))
    if _needs_grad(rx, ry):
        record(MSE_LOSS, out, (rx, ry), {"reduction": reduction})
    return out


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce((input - target).abs(), reduction, 0)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    # torch clamps the logs at -100
    losses = -(target * input.log().clamp(min=-100) + (1 - target) * (1 - input).log()
               .clamp(min=-100))
    if weight is not None:
        losses = losses * weight
    return _reduce(losses, reduction, 0)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    reduction = _reduction(size_average, reduce, reduction)
    log_sig = -ops.logaddexp(factories.zeros_like(input), -input)
    log_one_minus = -ops.logaddexp(factories.zeros_like(input), input)
    pos = target * log_sig * (pos_weight if pos_weight is not None else 1)
    losses = -(pos + (1 - target) * log_one_minus)
    if weight is not None:
        losses = losses * weight
    return _reduce(losses, reduction, 0)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero elements with probability p and scale the rest by 1/(1-p) (MulBackward0, as torch)."""
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0
    keep = factories._rng().random(input._data.shape) >= p
    mask = _wrap(devices.to_device((keep / (1 - p)).astype(input._data.dtype), input.device))
    return input.mul_(mask) if inplace else input * mask


def one_hot(tensor, num_classes=-1):
    t = tensor._data
    n = int(t.max()) + 1 if num_classes == -1 else num_classes
    return _wrap(devices.xp_of(t).eye(n, dtype=np.int64)[t])


def normalize(input, p=2.0, dim=1, eps=1e-12):
    norm = ops.norm(input, p, dim, keepdim=True).clamp_min(eps)
    return input / norm.expand_as(input)


def softplus(input, beta=1.0, threshold=20.0):
    scaled = input * beta
    return ops.where(scaled > threshold, input, ops.log1p(ops.exp(scaled)) / beta)


def gelu(input, approximate="none"):
    if approximate == "tanh":
        inner = 0.7978845608028654 * (input + 0.044715 * input ** 3)
        return 0.5 * input * (1 + ops.tanh(inner))
    return 0.5 * input * (1 + ops.erf(input * 0.7071067811865476))


def silu(input, inplace=False):
    return input * ops.sigmoid(input)


def elu(input, alpha=1.0, inplace=False):
    return ops.where(input > 0, input, alpha * ops.expm1(input))
