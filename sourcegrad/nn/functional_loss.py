"""The loss functions of `sourcegrad.nn.functional`, with torch's semantics and nodes.

Each takes (input, target, ...) Tensors and torch's options (`reduction` "none",
"mean" or "sum", and the legacy `size_average`/`reduce` flags folded into it;
`weight`, `ignore_index`, `label_smoothing`, `pos_weight`, `log_target`, ...) and
returns the loss Tensor.

Where torch records a single node, so does this module, with torch's name:
MseLossBackward0, SmoothL1LossBackward0, HuberLossBackward0, NllLossBackward0,
BinaryCrossEntropyBackward0, BinaryCrossEntropyWithLogitsBackward0 (entries in
`sourcegrad.ops.nn` and `sourcegrad.ops.nn_losses`). Where torch composes
tensor ops (l1_loss, kl_div, cross_entropy's probability targets and label
smoothing, cosine_embedding_loss), this module composes the same ops in the same
order, so the last nodes' names are torch's too (MeanBackward0 over AbsBackward0
for l1_loss, DivBackward0 over SumBackward0 for kl_div's batchmean, ...).

Class-index targets work for inputs of shape (C,), (N, C) and (N, C, d1, ...)
(the last viewed as (N, C, H, W) for NllLoss2DBackward0, as torch does).

Why one module: torch.nn.functional's losses share the reduction and weighting helpers
(`_reduce`, `_weighted`, `_pointwise`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..eager import factories, operands, tensor_math
from ..eager.composites import pairwise_distance
from ..eager.dual_state import DUAL
from ..eager.grad_mode import STATE, no_grad
from ..eager.node import RELEASED, RuleNode
from ..eager.reductions import LOG_SOFTMAX
from ..eager.spec import OpSpec, record
from ..eager.tensor import Tensor
from ..ops import nn as ops_nn
from ..ops import nn_losses

__all__ = [
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "cosine_embedding_loss",
]

_wrap = Tensor._make

NLL_LOSS = OpSpec("NllLossBackward0", "nll_loss", n_arrays=2, edges=(0,))
NLL_LOSS2D = OpSpec("NllLoss2DBackward0", "nll_loss2d", n_arrays=2, edges=(0,))
MSE_LOSS = OpSpec("MseLossBackward0", "mse_loss", n_arrays=2)
SMOOTH_L1_LOSS = OpSpec("SmoothL1LossBackward0", "smooth_l1_loss", n_arrays=2)
HUBER_LOSS = OpSpec("HuberLossBackward0", "huber_loss", n_arrays=2)
BCE = OpSpec("BinaryCrossEntropyBackward0", "binary_cross_entropy", n_arrays=3, edges=(0, 1))
BCE_LOGITS = OpSpec(
    "BinaryCrossEntropyWithLogitsBackward0",
    "binary_cross_entropy_with_logits",
    n_arrays=4,
    edges=(0, 1),
)
XLOGY = OpSpec("XlogyBackward0", "xlogy")

_REDUCTIONS = ("none", "mean", "sum")


def reduction_of(size_average, reduce, reduction, allowed=_REDUCTIONS):
    """torch's legacy size_average/reduce flags folded into `reduction`, which is checked."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(losses, reduction):
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


def _warn_size(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input "
            f"size ({input.shape}). This will likely lead to incorrect results due "
            "to broadcasting. Please ensure they have the same size.",
            stacklevel=3,
        )


def _not_differentiable(fn_name, arg_name, value):
    if isinstance(value, Tensor) and operands.grad_required(value):
        raise RuntimeError(
            f"The function '{fn_name}' is not differentiable with respect to "
            f"argument '{arg_name}'. This input cannot have requires_grad True."
        )


def _array(value, dtype):
    """A weight's array in the loss's dtype (None stays None)."""
    if value is None:
        return None
    return operands.data_of(value).astype(dtype, copy=False)


def _pointwise(spec, fn, input, target, reduction, **static):
    """A loss with one node over both inputs (mse, smooth_l1, huber)."""
    xd, yd, rd, rx, ry = operands.promote(input, target)
    operands.same_device(input, target)
    try:
        losses = fn(xd, yd, reduction, *static.values())
    except ValueError as e:
        raise tensor_math.broadcast_error(np.shape(xd), np.shape(yd)) or e from e
    out = _wrap(operands.result(losses, rd))
    if operands.needs_grad(rx, ry):
        record(spec, out, (rx, ry), {"reduction": reduction, **static})
    return out


# --- regression losses -----------------------------------------------------------------------


def _weighted(losses, weight, input, reduction, mean_over_weight):
    """torch 2.6+'s weighted regression losses, composed of tensor ops as torch composes them.

    mse_loss and l1_loss divide a mean by the weights' sum; huber_loss takes a plain mean."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    losses = losses * weight
    if reduction == "none":
        return losses
    if reduction == "sum" or not mean_over_weight:
        return _reduce(losses, reduction)
    return losses.sum() / weight.sum()


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = reduction_of(size_average, reduce, reduction)
    _warn_size(input, target)
    if weight is not None:
        return _weighted((input - target) ** 2, weight, input, reduction, True)
    return _pointwise(MSE_LOSS, ops_nn.mse_loss, input, target, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = reduction_of(size_average, reduce, reduction)
    _warn_size(input, target)
    losses = (input - target).abs()
    if weight is not None:
        return _weighted(losses, weight, input, reduction, True)
    return _reduce(losses, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = reduction_of(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:  # torch's own fallback: plain l1
        return l1_loss(input, target, reduction=reduction)
    _warn_size(input, target)
    return _pointwise(
        SMOOTH_L1_LOSS, nn_losses.smooth_l1_loss, input, target, reduction, beta=float(beta)
    )


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    reduction = reduction_of(None, None, reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_size(input, target)
    if weight is not None:
        return _weighted(huber_loss(input, target, "none", delta), weight, input, reduction, False)
    return _pointwise(
        HUBER_LOSS, nn_losses.huber_loss, input, target, reduction, delta=float(delta)
    )


# --- classification losses -------------------------------------------------------------------


def _check_targets(input, target, weight, ignore_index):
    """torch's checks of class-index targets: dtype, sizes, weight size, bounds."""
    t = target._data
    if t.dtype not in (np.int64, np.uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {target.dtype._scalar_name}"
        )
    x = input._data
    if x.ndim <= 2 and t.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if x.ndim >= 2 and t.shape[:1] != x.shape[:1]:
        raise ValueError(
            f"Expected input batch_size ({x.shape[0]}) to match target "
            f"batch_size ({t.shape[0] if t.ndim else 1})."
        )
    if x.ndim > 2 and t.shape[1:] != x.shape[2:]:
        expected = [x.shape[0]] + list(x.shape[2:])
        raise RuntimeError(f"Expected target size {expected}, got {list(t.shape)}")
    c = x.shape[1] if x.ndim >= 2 else x.shape[0]
    if weight is not None and weight.numel() != c:
        raise RuntimeError(
            f"weight tensor should be defined either for all {c} classes or no "
            f"classes but got weight tensor of shape: {list(weight.shape)}"
        )
    bad = (t != ignore_index) & ((t < 0) | (t >= c))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].reshape(-1)[0])} is out of bounds.")


def nll_loss(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
):
    reduction = reduction_of(size_average, reduce, reduction)
    _check_targets(input, target, weight, ignore_index)
    _not_differentiable("nll_loss", "weight", weight)
    tensor_math.same_device(input, target, weight)
    w = _array(weight, input._data.dtype)
    if input._data.ndim > 2:
        return _nll_loss_nd(input, target, w, reduction, ignore_index)
    out = _wrap(
        operands.result(ops_nn.nll_loss(input._data, target._data, w, reduction, ignore_index))
    )
    if operands.needs_grad(input):
        record(
            NLL_LOSS,
            out,
            (input, target),
            {"weight": w, "reduction": reduction, "ignore_index": ignore_index},
        )
    return out


def _nll_loss_nd(input, target, w, reduction, ignore_index):
    """(N, C, d1, ...) as torch does it: viewed as (N, C, H, W), NllLoss2DBackward0, viewed back."""
    shape = tuple(input.shape)
    if len(shape) == 3:
        input, target = input.reshape(shape + (1,)), target.reshape(tuple(target.shape) + (1,))
    elif len(shape) > 4:
        input, target = input.reshape(shape[0], shape[1], 1, -1), target.reshape(shape[0], 1, -1)
    out = _wrap(
        operands.result(nn_losses.nll_loss2d(input._data, target._data, w, reduction, ignore_index))
    )
    if operands.needs_grad(input):
        record(
            NLL_LOSS2D,
            out,
            (input, target),
            {"weight": w, "reduction": reduction, "ignore_index": ignore_index},
        )
    if reduction == "none" and len(shape) != 4:
        return out.reshape((shape[0],) + shape[2:])
    return out


def _class_shape(weight, ndim, class_dim):
    """weight viewed to broadcast along the class dimension."""
    return weight.reshape([-1 if i == class_dim else 1 for i in range(ndim)])


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """log_softmax then nll_loss; probability targets and label smoothing as torch composes them."""
    reduction = reduction_of(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if weight is None and not label_smoothing and reduction != "none":
        loss = _cross_entropy_of_indices(input, target, reduction, ignore_index)
        if loss is not None:
            return loss
    ndim = input._data.ndim
    class_dim = 0 if ndim == 1 else 1
    c = input._data.shape[class_dim]
    logp = tensor_math.log_softmax(input, class_dim)
    if tuple(input.shape) == tuple(target.shape):
        return _cross_entropy_probs(logp, target, weight, reduction, label_smoothing, class_dim)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return loss
    if weight is not None:
        smooth = -(logp * _class_shape(weight, ndim, class_dim)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    ignored = target == ignore_index
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "mean":
        if weight is not None:
            denom = weight[target.masked_fill(ignored, 0)].masked_fill(ignored, 0).sum()
        else:
            denom = (~ignored).sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * loss + smooth * (label_smoothing / c)


def _cross_entropy_of_indices(input, target, reduction, ignore_index):
    """cross_entropy of a batch (N, C) of logits and N class indices all within [0, C),
    mean or sum, no class weights: what a training step's loss is, made without the general
    path's checks that cannot fail here and its dispatch through log_softmax and nll_loss
    (a small model's loss cost ~4x torch's that way). The same numpy functions on the same
    arrays give the same loss, bit for bit, and the same two nodes (NllLossBackward0 over
    LogSoftmaxBackward0) as the general path; their backward is `_LossNllNode`'s and
    `_LossLogSoftmaxNode`'s (softmax - one-hot, from the softmax the forward kept). None
    where that path is needed: a target out of range (its IndexError) or negative (-100,
    ignored), another layout or dtype, a Tensor subclass, forward-mode AD, arrays off the
    host. (A target equal to an ignore_index within [0, C) is one the registry's nll_loss
    skips; such a loss keeps the registry's nodes.)"""
    x, t = input._data, target._data
    if (
        type(input) is not Tensor
        or type(target) is not Tensor
        or type(x) is not np.ndarray
        or type(t) is not np.ndarray
        or x.ndim != 2
        or x.dtype.kind != "f"
        or t.dtype != np.int64
        or t.shape != x.shape[:1]
        or not t.size
        or DUAL.on
    ):
        return None
    n, c = x.shape
    if t.min() < 0 or t.max() >= c:  # (the general path raises or ignores)
        return None
    if 0 <= ignore_index < c or not operands.grad_required(input):
        logp = _wrap(operands.result(ops_nn.log_softmax(x, 1)))
        loss = ops_nn.nll_loss(logp._data, t, None, reduction, ignore_index)
        out = _wrap(operands.result(loss))
        if operands.grad_required(input):
            record(LOG_SOFTMAX, logp, (input,), {"axis": 1})
            static = {"weight": None, "reduction": reduction, "ignore_index": ignore_index}
            record(NLL_LOSS, out, (logp, target), static)
        return out
    # every target counts: nll_loss's sum of the picked log-probabilities, its own way
    logp_data, probs = ops_nn.log_softmax_and_softmax(x, 1)
    total = -np.sum(logp_data[np.arange(n), t])
    logp = _wrap(logp_data)
    out = _wrap(operands.result(total / x.dtype.type(n) if reduction == "mean" else total))
    record(_LOSS_LOG_SOFTMAX, logp, (input,), {"axis": 1})._probs = probs
    static = {"weight": None, "reduction": reduction, "ignore_index": ignore_index}
    record(_LOSS_NLL, out, (logp, target), static)._target = t
    return out


class _LossNllNode(RuleNode):
    """NllLossBackward0 of `_cross_entropy_of_indices` (every target counted, no weights): on
    the engine's plain path (a host gradient, no create_graph) its gradient is written
    directly: zeros but -g (over N for a mean) at each row's target, as the registry's
    nll_grad writes it, without that rule's checks for ignored targets and weights. Under
    create_graph, or for another gradient, the rule runs as on any RuleNode."""

    __slots__ = ("_target",)

    def apply(self, grads):
        g = grads[0]
        if type(g) is not np.ndarray or STATE.enabled or self._state == RELEASED:
            return super().apply(grads)
        if self._versions is not None:
            self._unpack_args(False)  # (raises torch's error if the saved input was changed)
        if self.next_functions[0][0] is None:
            return [None]
        m = self._metas[0]
        t = self._target
        out = np.zeros(m.shape, m.dtype)
        share = g / m.dtype.type(t.size) if self._static["reduction"] == "mean" else g
        out[np.arange(t.size), t] = -share
        return [out]

    def release(self):
        super().release()
        self._target = None


class _LossLogSoftmaxNode(RuleNode):
    """LogSoftmaxBackward0 of `_cross_entropy_of_indices`: keeps the softmax its forward
    computed (`_probs`), so that its backward is g - softmax * sum(g) without the rule's
    exp of the saved log-probabilities. Under create_graph, or for a gradient off the host,
    the rule runs as on any RuleNode."""

    __slots__ = ("_probs",)

    def apply(self, grads):
        g = grads[0]
        probs = self._probs
        if type(g) is not np.ndarray or STATE.enabled or probs is None:
            return super().apply(grads)
        self._unpack_ans(False)  # (raises torch's error if the saved result was changed)
        if self.next_functions[0][0] is None:
            return [None]
        sums = np.matmul(g, np.ones(g.shape[-1], g.dtype))[:, None]
        gi = np.multiply(probs, sums)
        np.subtract(g, gi, out=gi)
        m = self._metas[0]
        return [gi if gi.dtype == m.dtype else gi.astype(m.dtype)]

    def release(self):
        super().release()
        self._probs = None


# (torch's names, in the module of every other node class: `node.node_class`)
_NODE_CLASS_BODY = {"__slots__": (), "__module__": RuleNode.__module__}
_LOSS_LOG_SOFTMAX = OpSpec.of("log_softmax", n_arrays=1)
_LOSS_LOG_SOFTMAX.node_cls = type("LogSoftmaxBackward0", (_LossLogSoftmaxNode,), _NODE_CLASS_BODY)
_LOSS_NLL = OpSpec("NllLossBackward0", "nll_loss", n_arrays=2, edges=(0,))
_LOSS_NLL.node_cls = type("NllLossBackward0", (_LossNllNode,), _NODE_CLASS_BODY)


def _cross_entropy_probs(logp, target, weight, reduction, label_smoothing, class_dim):
    if target._data.dtype.kind != "f":
        raise RuntimeError(
            "Expected floating point type for target with class probabilities, "
            f"got {target.dtype._scalar_name}"
        )
    c = logp._data.shape[class_dim]
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / c
    terms = logp * target
    if weight is not None:
        terms = terms * _class_shape(weight, logp.dim(), class_dim)
    if reduction == "none":
        return -terms.sum(class_dim)
    if reduction == "sum":
        return -terms.sum()
    return -terms.sum() / (logp.numel() // c)


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    reduction = reduction_of(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input "
            f"size ({input.shape}) is deprecated. Please ensure they have the same "
            "size."
        )
    _not_differentiable("binary_cross_entropy", "weight", weight)
    if isinstance(target, Tensor) and target.dtype != input.dtype:
        raise RuntimeError(
            f"Found dtype {target.dtype._scalar_name} but expected {input.dtype._scalar_name}"
        )
    xd, yd, rd, rx, ry = operands.promote(input, target)
    tensor_math.same_device(input, target, weight)
    # (written as "not inside": a nan is refused too, as torch's check refuses it)
    if (~((xd >= 0) & (xd <= 1))).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    if (~((yd >= 0) & (yd <= 1))).any():
        raise RuntimeError("all elements of target should be between 0 and 1")
    w = _array(weight, rd)
    out = _wrap(operands.result(nn_losses.binary_cross_entropy(xd, yd, w, reduction), rd))
    if operands.needs_grad(rx, ry):
        record(BCE, out, (rx, ry, w), {"reduction": reduction})
    return out


def _check_logits_target(input, target):
    """torch's refusals of an integer or bool target (its arithmetic on the target fails)."""
    if not isinstance(target, Tensor) or target.is_floating_point():
        return
    if target.dtype.name == "bool":
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    if input.is_floating_point():
        raise RuntimeError(
            f"result type {input.dtype._scalar_name} can't be cast to the desired output type "
            f"{target.dtype._scalar_name}"
        )


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    reduction = reduction_of(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    _not_differentiable("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    _check_logits_target(input, target)
    xd, yd, rd, rx, ry = operands.promote(input, target)
    tensor_math.same_device(input, target, weight, pos_weight)
    w, pw = _array(weight, rd), _array(pos_weight, rd)
    out = _wrap(
        operands.result(nn_losses.binary_cross_entropy_with_logits(xd, yd, w, pw, reduction), rd)
    )
    if operands.needs_grad(rx, ry):
        record(BCE_LOGITS, out, (rx, ry, w, pw), {"reduction": reduction})
    return out


# --- divergences and embeddings --------------------------------------------------------------


def _xlogy(x, y):
    """torch.xlogy (XlogyBackward0): kl_div's target log target term."""
    xd, yd, rd, rx, ry = operands.promote(x, y, to_float=True)
    out = _wrap(operands.result(nn_losses.xlogy(xd, yd), rd))
    if operands.needs_grad(rx, ry):
        record(XLOGY, out, (rx, ry))
    return out


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise target (log target - input), with input given as log-probabilities."""
    reduction = reduction_of(size_average, reduce, reduction, _REDUCTIONS + ("batchmean",))
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the "
            "support size.'batchmean' divides only by the batch size, and aligns with "
            "the KL div math definition.'mean' will be changed to behave the same as "
            "'batchmean' in the next major release.",
            stacklevel=2,
        )
    if log_target:
        losses = tensor_math.exp(target) * (target - input)
    else:
        losses = _xlogy(target, target) - target * input
    if reduction == "batchmean":
        return losses.sum() / input.shape[0] if input.dim() != 0 else losses.sum()
    return _reduce(losses, reduction)


def cosine_embedding_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    """1 - cos(x1, x2) where target is 1, max(0, cos - margin) where it is -1."""
    reduction = reduction_of(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() not in (1, 2):
        raise RuntimeError(
            f"cosine_embedding_loss: Expected 1D or 2D input tensors, but got "
            f"{input1.dim()}D and {input2.dim()}D"
        )
    dim = input1.dim() - 1
    eps = 1e-12
    prod_sum = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod_sum / (mag1 * mag2).sqrt()
    zeros = factories.zeros_like(cos)
    pos = 1 - cos
    neg = (cos - margin).clamp_min(0)
    output = tensor_math.where(target == 1, pos, zeros) + tensor_math.where(
        target == -1, neg, zeros
    )
    return _reduce(output, reduction)


# --- ranking, margin and likelihood losses, composed of tensor ops as torch composes them ------


def margin_ranking_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    """max(0, -target * (input1 - input2) + margin)."""
    reduction = reduction_of(size_average, reduce, reduction)
    if not (input1.dim() == input2.dim() == target.dim()):
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got "
            f"sizes: input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} "
        )
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    """input where target is 1, max(0, margin - input) where it is -1."""
    reduction = reduction_of(size_average, reduce, reduction)
    zeros = factories.zeros_like(input)
    output_margin = tensor_math.where(target != 1, (margin - input).clamp_min(0), zeros)
    output_self = tensor_math.where(target != -1, input, zeros)
    return _reduce(output_margin + output_self, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input))."""
    reduction = reduction_of(size_average, reduce, reduction)
    return _reduce(tensor_math.log1p(tensor_math.exp(-input * target)), reduction)


def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    """exp(input) - target * input (log_input), or input - target * log(input + eps); with
    `full`, Stirling's approximation of log(target!) where target > 1."""
    reduction = reduction_of(size_average, reduce, reduction)
    if log_input:
        loss = tensor_math.exp(input) - target * input
    else:
        loss = input - target * tensor_math.log(input + eps)
    if full:
        stirling = (
            target * tensor_math.log(target) - target + 0.5 * tensor_math.log(2 * math.pi * target)
        ).masked_fill(target <= 1, 0)
        loss = loss + stirling
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(var) + (input - target)^2 / var) (+ 0.5 log(2 pi) with `full`), var raised
    to eps without a gradient through the clamp (as torch)."""
    if isinstance(var, (int, float)):
        var = factories.full_like(input, float(var))
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):  # one variance per row
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (tensor_math.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the p-norm distance
    (`swap`: the smaller of d(anchor, negative) and d(positive, negative))."""
    reduction = reduction_of(size_average, reduce, reduction)
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(
            f"The anchor, positive, and negative tensors are expected to have the same "
            f"number of dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and "
            f"negative {dims[2]}D inputs"
        )

    d_positive = pairwise_distance(anchor, positive, p, eps)
    d_negative = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_negative = tensor_math.minimum(d_negative, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_positive - d_negative).clamp_min(0), reduction)
