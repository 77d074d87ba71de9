"""Derivative rules for torch.nn's single-node losses, `linalg.cross` and `cdist`.

Entries of the op registry (`sourcegrad.ops.RULES`), as `ops.nn`'s,
one VJP lambda per input, written with `np.` functions so that the eager engine
can call them on arrays and, under `create_graph=True`, on Tensors. Each forward
function takes numpy arrays and computes what torch's kernel computes (the same
clamps, the same branches at the kinks), and each VJP is torch's backward formula:

- `smooth_l1_loss` / `huber_loss`: the gradient of |d| is clipped to +-1 (+-delta);
- `binary_cross_entropy`: the logs are clamped at -100 and the input gradient's
  denominator x (1 - x) at 1e-12, as torch's; the target gradient is -logit(x);
- `binary_cross_entropy_with_logits`: log-sigmoid computed stably, pos_weight
  scaling the positive term; `weight` and `pos_weight` get no gradient (torch
  refuses them requiring grad, and so does `nn.functional_loss`);
- `xlogy`: x log y, 0 where x is (torch.xlogy: kl_div's target term);
- `linalg_cross`: a x b along one axis of length 3, with broadcasting;
- `cdist`: p-norm distances between the rows of two batches of row sets.

`reduction` is "none", "mean" or "sum"; a mean divides by the element count.

- `nll_loss2d`: nll_loss of an (N, C, H, W) input against (N, H, W) class indices
  (torch's NllLoss2DBackward0; the weights' scale is `ops.nn.nll_scale`'s).

Imports: numpy, the registry, `ops.nn` and `runtime` only (it sits below the eager engine).
"""

from __future__ import annotations

import numpy as np

from ..runtime import unbroadcast, unindex
from .nn import nll_of_picked, nll_scale
from .registry import Spelling, defvjp

__all__ = [
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "nll_loss2d",
    "xlogy",
    "linalg_cross",
    "cdist",
]


def _defvjp(name, fn, *vjps, **options):
    """`defvjp` under this module's spelling."""
    return defvjp(
        name, fn, Spelling("module", f"sourcegrad.ops.nn_losses.{fn.__name__}"), *vjps, **options
    )


# --- helpers (shapes and scales; the VJPs call them on arrays or on Tensors) -----------------


def reduce_loss(losses, reduction):
    if reduction == "none":
        return losses
    return np.sum(losses) if reduction == "sum" else np.mean(losses)


def loss_scale(g, losses_like, reduction):
    """The gradient each element's loss receives: g, over the element count for a mean."""
    return g / np.size(losses_like) if reduction == "mean" else g


def weighted(grad, weight):
    return grad if weight is None else grad * weight


def log_sigmoid(x):
    # min(x, 0) - log1p(exp(-|x|)): no overflow for either sign
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def rotate(x, shift, axis):
    """x's entries along `axis` (length 3) taken in the order (shift, shift+1, shift+2) mod 3."""
    return np.take(x, [shift % 3, (shift + 1) % 3, (shift + 2) % 3], axis=axis)


def pair_differences(x1, x2):
    """d[..., p, r, :] = x1[..., p, :] - x2[..., r, :]."""
    return np.expand_dims(x1, -2) - np.expand_dims(x2, -3)


def cdist_pair_grad(g, ans, x1, x2, p):
    """d cdist / d (x1[p] - x2[r]) times g, for each pair (p, r), as torch's cdist_backward."""
    d = pair_differences(x1, x2)
    gd = np.expand_dims(g, -1)
    dist = np.expand_dims(ans, -1)
    if p == 0:
        return np.zeros_like(d)
    if p == np.inf:
        return gd * np.sign(d) * (np.abs(d) == dist)
    # sign(d) |d|^(p-1) / dist^(p-1), zero where d or dist is (|d| = 0 kept out of the power)
    ad = np.abs(d)
    scaled = (
        np.sign(d)
        * np.where(ad == 0, 1.0, ad) ** (p - 1)
        / np.where(dist == 0, 1.0, dist) ** (p - 1)
    )
    return np.where(dist == 0, 0.0, gd * scaled)


def nll2d_index(shape, target, ignore_index=-100):
    """The advanced index that picks x[n, target[n, h, w], h, w] (ignored targets: class 0)."""
    n, _, h, w = shape
    t = np.where(target == ignore_index, 0, target)
    return (
        np.arange(n).reshape(n, 1, 1),
        t,
        np.arange(h).reshape(1, h, 1),
        np.arange(w).reshape(1, 1, w),
    )


# --- forward functions (numpy in, numpy out) -------------------------------------------------


def smooth_l1_loss(x, y, reduction="mean", beta=1.0):
    d = np.abs(x - y)
    return reduce_loss(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def huber_loss(x, y, reduction="mean", delta=1.0):
    d = np.abs(x - y)
    return reduce_loss(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def binary_cross_entropy(x, y, weight=None, reduction="mean"):
    with np.errstate(divide="ignore"):  # log(0) is -inf, clamped to -100 as torch does
        losses = (y - 1) * np.maximum(np.log1p(-x), -100.0) - y * np.maximum(np.log(x), -100.0)
    return reduce_loss(weighted(losses, weight), reduction)


def binary_cross_entropy_with_logits(x, y, weight=None, pos_weight=None, reduction="mean"):
    log_sig = log_sigmoid(x)
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight - 1) * y + 1)
    return reduce_loss(weighted((1 - y) * x - log_sig, weight), reduction)


def nll_loss2d(x, target, weight=None, reduction="mean", ignore_index=-100):
    return nll_of_picked(
        x,
        x[nll2d_index(np.shape(x), target, ignore_index)],
        target,
        weight,
        reduction,
        ignore_index,
    )


def xlogy(x, y):
    """x log y, and 0 where x == 0 (unless y is nan), as torch.xlogy."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(y))


def linalg_cross(x, y, axis=-1):
    return rotate(x, 1, axis) * rotate(y, 2, axis) - rotate(x, 2, axis) * rotate(y, 1, axis)


def cdist(x1, x2, p=2.0):
    d = np.abs(pair_differences(x1, x2))
    if p == np.inf:
        return np.max(d, axis=-1)
    if p == 0:
        return np.sum(d != 0, axis=-1).astype(d.dtype)
    if p == 1:
        return np.sum(d, axis=-1)
    if p == 2:
        return np.sqrt(np.sum(d * d, axis=-1))
    return np.sum(d**p, axis=-1) ** (1.0 / p)


# --- the rules -------------------------------------------------------------------------------

_defvjp(
    "smooth_l1_loss",
    smooth_l1_loss,
    lambda g, ans, x, y, reduction="mean", beta=1.0: unbroadcast(
        loss_scale(g, x - y, reduction) * np.clip((x - y) / beta, -1.0, 1.0), x
    ),
    lambda g, ans, x, y, reduction="mean", beta=1.0: unbroadcast(
        -loss_scale(g, x - y, reduction) * np.clip((x - y) / beta, -1.0, 1.0), y
    ),
    jvps=(
        lambda t, ans, x, y, reduction="mean", beta=1.0: reduce_loss(
            np.clip((x - y) / beta, -1.0, 1.0) * t, reduction
        ),
        lambda t, ans, x, y, reduction="mean", beta=1.0: reduce_loss(
            -np.clip((x - y) / beta, -1.0, 1.0) * t, reduction
        ),
    ),
)
_defvjp(
    "huber_loss",
    huber_loss,
    lambda g, ans, x, y, reduction="mean", delta=1.0: unbroadcast(
        loss_scale(g, x - y, reduction) * np.clip(x - y, -delta, delta), x
    ),
    lambda g, ans, x, y, reduction="mean", delta=1.0: unbroadcast(
        -loss_scale(g, x - y, reduction) * np.clip(x - y, -delta, delta), y
    ),
    jvps=(
        lambda t, ans, x, y, reduction="mean", delta=1.0: reduce_loss(
            np.clip(x - y, -delta, delta) * t, reduction
        ),
        lambda t, ans, x, y, reduction="mean", delta=1.0: reduce_loss(
            -np.clip(x - y, -delta, delta) * t, reduction
        ),
    ),
)
_defvjp(
    "binary_cross_entropy",
    binary_cross_entropy,
    lambda g, ans, x, y, weight=None, reduction="mean": unbroadcast(
        weighted(loss_scale(g, x, reduction) * (x - y) / np.maximum((1 - x) * x, 1e-12), weight), x
    ),
    lambda g, ans, x, y, weight=None, reduction="mean": unbroadcast(
        weighted(-loss_scale(g, x, reduction) * np.log(x / (1 - x)), weight), y
    ),
    None,
    jvps=(
        lambda t, ans, x, y, weight=None, reduction="mean": reduce_loss(
            weighted((x - y) / np.maximum((1 - x) * x, 1e-12) * t, weight), reduction
        ),
        lambda t, ans, x, y, weight=None, reduction="mean": reduce_loss(
            weighted(-np.log(x / (1 - x)) * t, weight), reduction
        ),
        None,
    ),
)
_defvjp(
    "binary_cross_entropy_with_logits",
    binary_cross_entropy_with_logits,
    lambda g, ans, x, y, weight=None, pos_weight=None, reduction="mean": unbroadcast(
        weighted(
            loss_scale(g, x, reduction)
            * (
                sigmoid(x) - y
                if pos_weight is None
                else (pos_weight * y + 1 - y) * sigmoid(x) - pos_weight * y
            ),
            weight,
        ),
        x,
    ),
    lambda g, ans, x, y, weight=None, pos_weight=None, reduction="mean": unbroadcast(
        weighted(
            loss_scale(g, x, reduction)
            * (-x if pos_weight is None else log_sigmoid(-x) - pos_weight * log_sigmoid(x)),
            weight,
        ),
        y,
    ),
    None,
    None,
    jvps=(
        lambda t, ans, x, y, weight=None, pos_weight=None, reduction="mean": reduce_loss(
            weighted(
                t
                * (
                    sigmoid(x) - y
                    if pos_weight is None
                    else (pos_weight * y + 1 - y) * sigmoid(x) - pos_weight * y
                ),
                weight,
            ),
            reduction,
        ),
        lambda t, ans, x, y, weight=None, pos_weight=None, reduction="mean": reduce_loss(
            weighted(
                t * (-x if pos_weight is None else log_sigmoid(-x) - pos_weight * log_sigmoid(x)),
                weight,
            ),
            reduction,
        ),
        None,
        None,
    ),
)
_defvjp(
    "nll_loss2d",
    nll_loss2d,
    lambda g, ans, x, target, weight=None, reduction="mean", ignore_index=-100: unindex(
        nll_scale(g, target, weight, reduction, ignore_index),
        x,
        nll2d_index(np.shape(x), target, ignore_index),
    ),
    None,
    linear=(0,),
)
_defvjp(
    "xlogy",
    xlogy,
    lambda g, ans, x, y: unbroadcast(g * xlogy(x != 0, y), x),
    lambda g, ans, x, y: unbroadcast(g * x / y, y),
    kind="elementwise",
)
_defvjp(
    "linalg_cross",
    linalg_cross,
    lambda g, ans, x, y, axis=-1: unbroadcast(linalg_cross(y, g, axis), x),
    lambda g, ans, x, y, axis=-1: unbroadcast(linalg_cross(g, x, axis), y),
    linear="multi",
)
_defvjp(
    "cdist",
    cdist,
    lambda g, ans, x1, x2, p=2.0: unbroadcast(
        np.sum(cdist_pair_grad(g, ans, x1, x2, p), axis=-2), x1
    ),
    lambda g, ans, x1, x2, p=2.0: unbroadcast(
        -np.sum(cdist_pair_grad(g, ans, x1, x2, p), axis=-3), x2
    ),
    jvps=(
        lambda t, ans, x1, x2, p=2.0: np.sum(
            cdist_pair_grad(np.ones_like(ans), ans, x1, x2, p) * np.expand_dims(t, -2), axis=-1
        ),
        lambda t, ans, x1, x2, p=2.0: (
            -np.sum(
                cdist_pair_grad(np.ones_like(ans), ans, x1, x2, p) * np.expand_dims(t, -3), axis=-1
            )
        ),
    ),
)
