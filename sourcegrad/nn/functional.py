"""`sourcegrad.nn.functional`: activations, losses and the layers' functions.

Where torch has a single node for a function and the rule table has a rule, the
node is torch's; the other functions (gelu's tanh form, elu, softplus, hardtanh,
embedding, bilinear, ...) are written with tensor ops, so their values and
gradients are torch's but their grad_fn names are those of the last op used.

Why one module: it is torch's `torch.nn.functional` namespace, so users find each name
where torch has it; the families that grew large live apart (`functional_loss`,
`functional_attention`, `conv_ops`, `pool_ops`, `norm_ops`, `pad_ops`), re-exported here.

The losses live in `functional_loss`, `functional_margin_loss` (the multi-class and
multi-label margin losses) and `functional_ctc` (ctc_loss), imported here under their torch names;
`linear` in `linear_ops` (AddmmBackward0 with a bias on a matrix, over a TBackward0 of
the weight), `layer_norm` in `norm_ops` (NativeLayerNormBackward0).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..eager import devices, factories, operands, shape_ops, tensor_math
from ..eager import inplace as _inplace_ops
from ..eager.composites import cosine_similarity, pairwise_distance  # noqa: F401 (torch's too)
from ..eager.spec import OpSpec, record
from ..eager.tensor import Tensor
from ..eager.vector_ops import pdist  # noqa: F401 (torch's too)
from ..ops import nn as ops_nn

# convolution, pooling, padding, interpolation and batch norm: a module per family
from .conv_ops import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,  # noqa: F401
    conv_transpose3d,
)
from .embedding_bag_ops import embedding_bag  # noqa: F401
from .embedding_ops import embedding  # noqa: F401
from .extra_pool_ops import (  # noqa: F401
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    local_response_norm,
    lp_pool1d,
    lp_pool2d,
)
from .fold_ops import fold, unfold  # noqa: F401
from .functional_attention import (
    canonical_mask as _canonical_mask,
)
from .functional_attention import (
    multi_head_attention_forward,  # noqa: F401
    scaled_dot_product_attention,
)
from .functional_attention import (
    none_or_dtype as _none_or_dtype,
)
from .functional_ctc import ctc_loss  # noqa: F401
from .functional_loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,  # noqa: F401
    cosine_embedding_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from .functional_margin_loss import (  # noqa: F401
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    triplet_margin_with_distance_loss,
)
from .instance_norm_ops import instance_norm  # noqa: F401
from .linear_ops import linear  # noqa: F401
from .norm_ops import batch_norm, layer_norm  # noqa: F401
from .pad_ops import pad  # noqa: F401
from .pool3d_ops import avg_pool3d, max_pool3d  # noqa: F401
from .pool_ops import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,  # noqa: F401
    avg_pool2d,
    interpolate,
    max_pool1d,
    max_pool2d,
)
from .shuffle_ops import channel_shuffle, pixel_shuffle, pixel_unshuffle  # noqa: F401
from .unsupported import UnsupportedOptionError

_wrap = Tensor._make


def relu(input, inplace=False):
    return _inplace_ops.relu_(input) if inplace else tensor_math.relu(input)


def relu_(input):
    return _inplace_ops.relu_(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        return _inplace_ops.leaky_relu_(input, negative_slope)
    return tensor_math.leaky_relu(input, negative_slope)


def sigmoid(input):
    return tensor_math.sigmoid(input)


def tanh(input):
    return tensor_math.tanh(input)


def _get_softmax_dim(name, ndim, stacklevel):
    """torch's legacy implicit dim (with its deprecation warning)."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call "
        "to include dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return tensor_math.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return tensor_math.log_softmax(input, dim, dtype)


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
        raise RuntimeError(
            f"{name}: Expected {batched_ndim - 1}D or {batched_ndim}D input, "
            f"but received a {nd}D input. Note that {name} exists to provide "
            "channel-wise dropout on inputs with spatial dimensions; use "
            "dropout for other inputs."
        )
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


_ALPHA_DROP = 1.7580993408473766  # -alpha' of SELU: the value a dropped unit takes, unscaled


def _alpha_dropout(input, p, training, inplace, feature):
    """torch's alpha dropout: units kept with probability 1 - p (one draw per (sample,
    channel) for feature dropout), dropped ones set to SELU's saturation value, and all
    mapped by a x + b with a, b keeping zero mean and unit variance (torch's _dropout_impl;
    MulBackward0 and AddBackward0, as its)."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0) if inplace else input * 0
    nd = input._data.ndim
    if feature and nd < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type {input.dtype._scalar_name}"
        )
    shape = input._data.shape[:2] + (1,) * (nd - 2) if feature else input._data.shape
    keep = (factories.rand(shape, device=input.device) >= p).to(input.dtype)
    a = 1.0 / math.sqrt((_ALPHA_DROP * _ALPHA_DROP * p + 1) * (1 - p))
    b = (keep - 1) * (_ALPHA_DROP * a) + _ALPHA_DROP * a * p
    return input.mul_(keep * a).add_(b) if inplace else input * (keep * a) + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, True)


def one_hot(tensor, num_classes=-1):
    """(..., num_classes) int64 with a 1 at each class index (torch's checks and messages)."""
    t = tensor._data
    if t.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if t.size == 0 and num_classes == -1:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    if t.size and int(t.min()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    n = int(t.max()) + 1 if num_classes == -1 else num_classes
    if t.size and int(t.max()) >= n:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return _wrap(devices.xp_of(t).eye(n, dtype=np.int64)[t])


def normalize(input, p=2.0, dim=1, eps=1e-12):
    norm = tensor_math.norm(input, p, dim, keepdim=True).clamp_min(eps)
    return input / norm.expand_as(input)


# --- activations written with tensor ops ------------------------------------------------------
#
# Where a branch can overflow (exp of a large input), its input is clamped first so that
# the branch `where` discards carries a zero gradient rather than 0 * inf = nan.


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as torch)."""
    scaled = input * beta
    smooth = tensor_math.log1p(tensor_math.exp(tensor_math.clamp(scaled, max=threshold))) / beta
    return tensor_math.where(scaled > threshold, input, smooth)


def gelu(input, approximate="none"):
    if approximate == "tanh":
        inner = 0.7978845608028654 * (input + 0.044715 * input**3)
        return 0.5 * input * (1 + tensor_math.tanh(inner))
    if approximate != "none":
        raise RuntimeError("approximate argument must be either none or tanh.")
    if isinstance(input, Tensor) and input._data.dtype.kind == "f":
        return tensor_math.gelu(input)
    return 0.5 * input * (1 + tensor_math.erf(input * 0.7071067811865476))


def _activation(fn, input, inplace, *args):
    """fn(input, *args); with inplace=True the result is written into input, as torch does.

    In place, the value is computed from a clone: the graph then saves the clone, not
    `input`, whose version the write moves (else backward would refuse the saved value).
    """
    if not inplace:
        return fn(input, *args)
    return input.copy_(fn(input.clone(), *args))


def _silu(x):
    return x * tensor_math.sigmoid(x)


def silu(input, inplace=False):
    return _activation(_silu, input, inplace)


def _mish(x):
    return x * tensor_math.tanh(softplus(x))


def mish(input, inplace=False):
    return _activation(_mish, input, inplace)


def _elu(x, alpha, scale=1.0, input_scale=1.0):
    # exp of the clamped input: the branch `where` drops must not overflow (0 * inf = nan)
    negative = alpha * tensor_math.expm1(tensor_math.clamp(x, max=0) * input_scale)
    out = tensor_math.where(x > 0, x, negative)
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
    return tensor_math.where(inside, x, tensor_math.clamp(x.detach(), min_val, max_val))


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
    return tensor_math.where(x > threshold, x, value)


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
    return tensor_math.where(tensor_math.abs(input) > lambd, input, 0.0)


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return tensor_math.where(
        input > lambd, input - lambd, tensor_math.where(input < -lambd, input + lambd, 0.0)
    )


def softsign(input):
    return input / (tensor_math.abs(input) + 1)


def tanhshrink(input):
    return input - tensor_math.tanh(input)


def logsigmoid(input):
    return -softplus(-input)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    return tensor_math.softmax(-input, dim, dtype)


def glu(input, dim=-1):
    if input._data.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input._data.shape[dim] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {dim % input.ndim} "
            f"is size {input._data.shape[dim]}"
        )
    a, b = shape_ops.chunk(input, 2, dim)
    return a * tensor_math.sigmoid(b)


def prelu(input, weight):
    """x where x > 0, else weight * x, with weight over the channel dimension (dim 1)."""
    w = weight
    if weight.numel() != 1:
        if input._data.ndim < 2 or input._data.shape[1] != weight.numel():
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers "
                f"= {weight.numel()} and channel size = "
                f"{input._data.shape[1] if input._data.ndim >= 2 else 1}."
            )
        w = weight.reshape([-1] + [1] * (input._data.ndim - 2))
    return tensor_math.where(input > 0, input, w * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU with a random slope in [lower, upper] per element when training."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slopes = factories.empty_like(input.detach()).uniform_(lower, upper)
    return _activation(lambda x: tensor_math.where(x >= 0, x, x * slopes), input, inplace)


# --- layers' functional forms -----------------------------------------------------------------


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o], as matrix products."""
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    # (N, I) @ (O, I, J) -> (O, N, J); times x2 and summed over J -> (O, N)
    y = (tensor_math.matmul(x1, weight) * x2).sum(-1).t()
    if bias is not None:
        y = y + bias
    return y.reshape(tuple(lead) + (weight.shape[0],))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(tuple(normalized_shape))
    dims = tuple(range(input.ndim - k, input.ndim))
    if eps is None:
        eps = float(np.finfo(input._data.dtype).eps)
    out = input * tensor_math.rsqrt((input * input).mean(dims, keepdim=True) + eps)
    return out * weight if weight is not None else out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise (N, C, *) over each group of C // num_groups channels and the spatial dims."""
    n, c = input.shape[0], input.shape[1]
    if c % num_groups != 0:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by "
            f"num_groups, but got input of shape {input.shape} and "
            f"num_groups={num_groups}"
        )
    grouped = input.reshape(n, num_groups, -1)
    mean = grouped.mean(-1, keepdim=True)
    centred = grouped - mean
    var = (centred * centred).mean(-1, keepdim=True)
    out = (centred * tensor_math.rsqrt(var + eps)).reshape(input.shape)
    affine_shape = [1, c] + [1] * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(affine_shape)
    if bias is not None:
        out = out + bias.reshape(affine_shape)
    return out
