"""`sourcegrad.nn.functional`: activations, losses and the layers' functions.

Where torch has a single node for a function and the rule table has a rule, the
node is torch's; the other functions (gelu, elu, softplus, hardtanh, layer_norm,
embedding, bilinear, ...) are written with tensor ops, so their values and
gradients are torch's but their grad_fn names are those of the last op used.

`cross_entropy` is `nll_loss(log_softmax(x, 1), target)` (NllLossBackward0 over
LogSoftmaxBackward0, as torch records it); `mse_loss` is MseLossBackward0;
`linear` with a bias on a matrix is AddmmBackward0 over a TBackward0 of the
weight. Class-index targets work for inputs of shape (C,) and (N, C), and for
(N, C, d1, ...) by moving the class dimension last; probability targets and
label smoothing are written with plain tensor ops (so their nodes differ from
torch's).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..eager import devices, factories, operands, ops, shape_ops
from ..eager import inplace as _inplace_ops
from ..eager.spec import OpSpec, record
from ..eager.tensor import Tensor
from ..ops import nn as rt
from ..errors import SourcegradError

_wrap = Tensor._make

NLL_LOSS = OpSpec("NllLossBackward0", "nll_loss", n_arrays=2, edges=(0,))
MSE_LOSS = OpSpec("MseLossBackward0", "mse_loss", n_arrays=2)


class UnsupportedOptionError(SourcegradError, NotImplementedError):
    """An option of a torch.nn function that sourcegrad does not implement."""


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


def _get_softmax_dim(name, ndim, stacklevel):
    """torch's legacy implicit dim (with its deprecation warning)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return ops.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
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
    out = _wrap(operands.result(rt.nll_loss(input._data, t, w, reduction, ignore_index)))
    if operands.needs_grad(input):
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
    xd, yd, rd, rx, ry = operands.promote(input, target)
    out = _wrap(operands.result(rt.mse_loss(xd, yd, reduction), rd))
    if operands.needs_grad(rx, ry):
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


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero elements with probability p and scale the rest by 1/(1-p) (MulBackward0, as torch)."""
    _check_p(p)
    if not training or p == 0:
        return input
    if p == 1:
        return input.mul_(0) if inplace else input * 0
    keep = factories.numpy_rng().random(input._data.shape) >= p
    mask = _wrap(devices.to_device((keep / (1 - p)).astype(input._data.dtype), input.device))
    return input.mul_(mask) if inplace else input * mask


def _channel_dropout(input, p, training, inplace, batched_ndim, name):
    """Dropout1d/2d/3d: one draw per (sample, channel), broadcast over the spatial dims."""
    _check_p(p)
    nd = input._data.ndim
    if nd not in (batched_ndim, batched_ndim - 1):
        raise RuntimeError(f"{name}: Expected {batched_ndim - 1}D or {batched_ndim}D input, "
                           f"but received a {nd}D input. Note that {name} exists to provide "
                           "channel-wise dropout on inputs with spatial dimensions; use "
                           "dropout for other inputs.")
    if not training or p == 0:
        return input
    lead = 2 if nd == batched_ndim else 1
    shape = input._data.shape[:lead] + (1,) * (nd - lead)
    keep = (factories.rand(shape, device=input.device) >= p).to(input.dtype)
    mask = keep / (1 - p) if p < 1 else keep * 0
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout(input, p, training, inplace, 3, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout(input, p, training, inplace, 4, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout(input, p, training, inplace, 5, "dropout3d")


def one_hot(tensor, num_classes=-1):
    t = tensor._data
    n = int(t.max()) + 1 if num_classes == -1 else num_classes
    return _wrap(devices.xp_of(t).eye(n, dtype=np.int64)[t])


def normalize(input, p=2.0, dim=1, eps=1e-12):
    norm = ops.norm(input, p, dim, keepdim=True).clamp_min(eps)
    return input / norm.expand_as(input)


# --- activations written with tensor ops ------------------------------------------------------
#
# Where a branch can overflow (exp of a large input), its input is clamped first so that
# the branch `where` discards carries a zero gradient rather than 0 * inf = nan.

def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as torch)."""
    scaled = input * beta
    smooth = ops.log1p(ops.exp(ops.clamp(scaled, max=threshold))) / beta
    return ops.where(scaled > threshold, input, smooth)


def gelu(input, approximate="none"):
    if approximate == "tanh":
        inner = 0.7978845608028654 * (input + 0.044715 * input ** 3)
        return 0.5 * input * (1 + ops.tanh(inner))
    if approximate != "none":
        raise RuntimeError("approximate argument must be either none or tanh.")
    return 0.5 * input * (1 + ops.erf(input * 0.7071067811865476))


def _activation(fn, input, inplace, *args):
    """fn(input, *args); with inplace=True the result is written into input, as torch does.

    In place, the value is computed from a clone: the graph then saves the clone, not
    `input`, whose version the write moves (else backward would refuse the saved value).
    """
    if not inplace:
        return fn(input, *args)
    return input.copy_(fn(input.clone(), *args))


def _silu(x):
    return x * ops.sigmoid(x)


def silu(input, inplace=False):
    return _activation(_silu, input, inplace)


def _mish(x):
    return x * ops.tanh(softplus(x))


def mish(input, inplace=False):
    return _activation(_mish, input, inplace)


def _elu(x, alpha, scale=1.0, input_scale=1.0):
    # exp of the clamped input: the branch `where` drops must not overflow (0 * inf = nan)
    negative = alpha * ops.expm1(ops.clamp(x, max=0) * input_scale)
    out = ops.where(x > 0, x, negative)
    return out * scale if scale != 1.0 else out


def elu(input, alpha=1.0, inplace=False):
    return _activation(_elu, input, inplace, alpha)


def celu(input, alpha=1.0, inplace=False):
    return _activation(_elu, input, inplace, alpha, 1.0, 1.0 / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    return _activation(_elu, input, inplace, _SELU_ALPHA, _SELU_SCALE)


def _hardtanh(x, min_val, max_val):
    inside = (x > min_val) & (x < max_val)
    return ops.where(inside, x, ops.clamp(x.detach(), min_val, max_val))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val) whose gradient is 0 at the bounds themselves (as torch)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _activation(_hardtanh, input, inplace, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def _threshold_fn(x, threshold, value):
    return ops.where(x > threshold, x, value)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return _activation(_threshold_fn, input, inplace, threshold, value)


def threshold_(input, threshold, value):
    return _activation(_threshold_fn, input, True, threshold, value)


def _hardsigmoid(x):
    return _hardtanh(x + 3, 0.0, 6.0) / 6


def hardsigmoid(input, inplace=False):
    return _activation(_hardsigmoid, input, inplace)


def _hardswish(x):
    return x * _hardsigmoid(x)


def hardswish(input, inplace=False):
    return _activation(_hardswish, input, inplace)


def hardshrink(input, lambd=0.5):
    return ops.where(ops.abs(input) > lambd, input, 0.0)


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return ops.where(input > lambd, input - lambd, ops.where(input < -lambd, input + lambd, 0.0))


def softsign(input):
    return input / (ops.abs(input) + 1)


def tanhshrink(input):
    return input - ops.tanh(input)


def logsigmoid(input):
    return -softplus(-input)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    return ops.softmax(-input, dim, dtype)


def glu(input, dim=-1):
    if input._data.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input._data.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.ndim} "
                           f"is size {input._data.shape[dim]}")
    a, b = shape_ops.chunk(input, 2, dim)
    return a * ops.sigmoid(b)


def prelu(input, weight):
    """x where x > 0, else weight * x, with weight over the channel dimension (dim 1)."""
    w = weight
    if weight.numel() != 1:
        if input._data.ndim < 2 or input._data.shape[1] != weight.numel():
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers "
                f"= {weight.numel()} and channel size = "
                f"{input._data.shape[1] if input._data.ndim >= 2 else 1}.")
        w = weight.reshape([-1] + [1] * (input._data.ndim - 2))
    return ops.where(input > 0, input, w * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU with a random slope in [lower, upper] per element when training."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slopes = factories.empty_like(input.detach()).uniform_(lower, upper)
    return _activation(lambda x: ops.where(x >= 0, x, x * slopes), input, inplace)


# --- layers' functional forms -----------------------------------------------------------------

def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o], as matrix products."""
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    # (N, I) @ (O, I, J) -> (O, N, J); times x2 and summed over J -> (O, N)
    y = (ops.matmul(x1, weight) * x2).sum(-1).t()
    if bias is not None:
        y = y + bias
    return y.reshape(tuple(lead) + (weight.shape[0],))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """weight[input]; rows at padding_idx get no gradient. max_norm renormalises in place."""
    if scale_grad_by_freq or sparse:
        raise UnsupportedOptionError("sourcegrad: F.embedding with scale_grad_by_freq=True or "
                                     "sparse=True is not supported")
    if input._data.dtype.kind not in "iu":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{input.type()} instead (while checking arguments for embedding)")
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= n:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    out = weight[input]
    if padding_idx is None:
        return out
    at_pad = (input == padding_idx).unsqueeze(-1)
    return ops.where(at_pad, weight.detach()[input], out)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """Scale the rows input refers to down to norm max_norm, in place and without grad."""
    from ..eager.grad_mode import no_grad
    with no_grad():
        rows = shape_ops.unique(input.reshape(-1))
        norms = ops.norm(weight[rows], norm_type, dim=1, keepdim=True)
        scale = ops.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = weight[rows] * scale


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over the last len(normalized_shape) dims, then affine."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if tuple(input.shape[input.ndim - k:]) != normalized_shape or input.ndim < k:
        expected = "[*, " + ", ".join(str(d) for d in normalized_shape) + "]"
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"{expected}, but got input of size{list(input.shape)}")
    dims = tuple(range(input.ndim - k, input.ndim))
    mean = input.mean(dims, keepdim=True)
    centred = input - mean
    var = (centred * centred).mean(dims, keepdim=True)
    out = centred * ops.rsqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(tuple(normalized_shape))
    dims = tuple(range(input.ndim - k, input.ndim))
    if eps is None:
        eps = float(np.finfo(input._data.dtype).eps)
    out = input * ops.rsqrt((input * input).mean(dims, keepdim=True) + eps)
    return out * weight if weight is not None else out


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return ops.norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    n1 = ops.norm(x1, 2, dim).clamp_min(eps)
    n2 = ops.norm(x2, 2, dim).clamp_min(eps)
    return (x1 * x2).sum(dim) / (n1 * n2)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise (N, C, *) over each group of C // num_groups channels and the spatial dims."""
    n, c = input.shape[0], input.shape[1]
    if c % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {input.shape} and "
                           f"num_groups={num_groups}")
    grouped = input.reshape(n, num_groups, -1)
    mean = grouped.mean(-1, keepdim=True)
    centred = grouped - mean
    var = (centred * centred).mean(-1, keepdim=True)
    out = (centred * ops.rsqrt(var + eps)).reshape(input.shape)
    affine_shape = [1, c] + [1] * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(affine_shape)
    if bias is not None:
        out = out + bias.reshape(affine_shape)
    return out
