"""torch's top-level spellings of `nn.functional` (`torch.conv2d`, `torch.layer_norm`,
`torch.batch_norm`, `torch.embedding`, `torch.dropout`, `torch.max_pool2d`, ...), which
PyTorch code calls as `torch.<name>`: `sourcegrad/__init__` exports this module's `__all__`.

Takes torch's top-level (aten) signatures; returns what the `nn.functional` implementation
returns: one implementation per function, this module only maps the arguments. Where the
signatures agree (conv, pixel_shuffle, prelu, ...) the name is the `nn.functional` function
itself; where they differ, a small adapter says how:

* the norms take `cudnn_enable(d)` (ignored) and batch_norm / instance_norm their weight and
  bias before the running statistics;
* embedding takes the weight first, and padding_idx=-1 for none;
* dropout and its in-place form take `train` (required), max pooling `stride=[]` for the
  kernel size and returns no indices, adaptive_max_pool1d returns (values, indices);
* the losses take `reduction` as torch's enum (0 none, 1 mean, 2 sum), and, as torch's
  Python bindings of them do, give the unreduced loss (0) when it is not passed: the aten
  schema's default (1, mean) is not the one `torch.<loss>` applies;
* selu_, celu_, rrelu_ are the in-place activations.

Imports: `nn.functional` only.
"""

from __future__ import annotations

import warnings

from . import functional as F

# the same signature as nn.functional's: the function itself
conv1d = F.conv1d
conv2d = F.conv2d
conv3d = F.conv3d
conv_transpose1d = F.conv_transpose1d
conv_transpose2d = F.conv_transpose2d
conv_transpose3d = F.conv_transpose3d
avg_pool1d = F.avg_pool1d
adaptive_avg_pool1d = F.adaptive_avg_pool1d
bilinear = F.bilinear
channel_shuffle = F.channel_shuffle
hardshrink = F.hardshrink
pixel_shuffle = F.pixel_shuffle
pixel_unshuffle = F.pixel_unshuffle
prelu = F.prelu
rms_norm = F.rms_norm
threshold_ = F.threshold_

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(reduction):
    """torch's Reduction enum (the top-level losses') as nn.functional's string."""
    if isinstance(reduction, str):  # (torch's top-level functions refuse it: an int is needed)
        raise TypeError(f"reduction must be an int (0 none, 1 mean, 2 sum), not {reduction!r}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def celu(input, alpha=1.0):
    """torch.celu."""
    return F.celu(input, alpha)


def celu_(input, alpha=1.0):
    """torch.celu_: celu in place."""
    return F.celu(input, alpha, inplace=True)


def selu(input):
    """torch.selu."""
    return F.selu(input)


def selu_(input):
    """torch.selu_: selu in place."""
    return F.selu(input, inplace=True)


def rrelu(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """torch.rrelu (a generator other than the default one is not supported)."""
    _default_generator(generator, "rrelu")
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """torch.rrelu_: rrelu in place."""
    _default_generator(generator, "rrelu_")
    return F.rrelu(input, lower, upper, training, inplace=True)


def _default_generator(generator, name):
    if generator is not None:
        raise NotImplementedError(f"torch.{name}(generator=...) is not supported: seed instead")


def threshold(input, threshold, value):
    """torch.threshold: value where input <= threshold."""
    return F.threshold(input, threshold, value)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool1d (stride=[]: the kernel size; no indices)."""
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool2d (stride=[]: the kernel size; no indices)."""
    return F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def adaptive_max_pool1d(input, output_size):
    """torch.adaptive_max_pool1d: (values, indices), as torch's top-level function."""
    return F.adaptive_max_pool1d_with_indices(input, output_size, return_indices=True)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """torch.layer_norm (cudnn_enable has no effect)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """torch.group_norm (cudnn_enabled has no effect)."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(
    input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled
):
    """torch.batch_norm: weight and bias come before the running statistics."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(
    input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled
):
    """torch.instance_norm: weight and bias come before the running statistics."""
    return F.instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding: the weight first; a negative padding_idx is none (F.embedding has
    made a negative index count from the end before it calls this in torch)."""
    padding = None if padding_idx is None or padding_idx < 0 else padding_idx
    return F.embedding(
        indices, weight, padding, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse
    )


def dropout(input, p, train):
    """torch.dropout(input, p, train)."""
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    """torch.dropout_: dropout in place."""
    return F.dropout(input, p, train, inplace=True)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """torch.binary_cross_entropy_with_logits (reduction: torch's enum)."""
    return F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=_reduction(reduction), pos_weight=pos_weight
    )


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.cosine_embedding_loss (reduction: torch's enum)."""
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """torch.hinge_embedding_loss (reduction: torch's enum)."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def kl_div(input, target, reduction=0, *, log_target=False):
    """torch.kl_div (reduction: torch's enum; 0 by default; 1, the mean over all elements, without
    nn.functional's warning about it: torch's top-level function gives none)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="reduction: 'mean' divides")
        return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.margin_ranking_loss (reduction: torch's enum)."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """torch.poisson_nll_loss (every argument required, reduction: torch's enum)."""
    return F.poisson_nll_loss(
        input, target, log_input, full, eps=eps, reduction=_reduction(reduction)
    )


def triplet_margin_loss(
    anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=0
):
    """torch.triplet_margin_loss (reduction: torch's enum)."""
    return F.triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction)
    )


def ctc_loss(
    log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False
):
    """torch.ctc_loss (reduction: torch's enum)."""
    return F.ctc_loss(
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank,
        reduction=_reduction(reduction),
        zero_infinity=zero_infinity,
    )


__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "avg_pool1d",
    "batch_norm",
    "bilinear",
    "binary_cross_entropy_with_logits",
    "celu",
    "celu_",
    "channel_shuffle",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "cosine_embedding_loss",
    "ctc_loss",
    "dropout",
    "dropout_",
    "embedding",
    "group_norm",
    "hardshrink",
    "hinge_embedding_loss",
    "instance_norm",
    "kl_div",
    "layer_norm",
    "margin_ranking_loss",
    "max_pool1d",
    "max_pool2d",
    "pixel_shuffle",
    "pixel_unshuffle",
    "poisson_nll_loss",
    "prelu",
    "rms_norm",
    "rrelu",
    "rrelu_",
    "selu",
    "selu_",
    "threshold",
    "threshold_",
    "triplet_margin_loss",
]
