"""The multi-class and multi-label margin losses of `torch.nn.functional`, and the triplet
loss with a user's distance: multi_margin_loss, multilabel_margin_loss,
multilabel_soft_margin_loss, triplet_margin_with_distance_loss.

Each is composed of eager tensor ops (gather, clamp_min, masked_fill, sums), so its values
and gradients are torch's and the autograd graph is the ops' own: torch records single
nodes MultiMarginLossBackward0 and MultilabelMarginLossBackward0 for the first two, which
have no entry in the op registry; the grad_fn here is that of the last op (a division or a
reduction). multilabel_soft_margin_loss and triplet_margin_with_distance_loss are
composed in torch as well, in the same order as here. The checks (target dtype, sizes,
ranges, p, weight) raise torch's exception types with torch's messages.
"""

from __future__ import annotations

import numpy as np

from ..eager import devices, factories, operands, tensor_math
from ..eager.composites import pairwise_distance
from .functional_loss import reduction_of

__all__ = [
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "triplet_margin_with_distance_loss",
]


def _reduced(losses, reduction):
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


def _check_long_target(target):
    if target._data.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype._scalar_name}")


def _check_vector_or_matrix(input):
    if input.dim() > 2 or (input.dim() == 2 and input.shape[1] == 0) or input.dim() == 0:
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(input.shape)}"
        )


def multi_margin_loss(
    input,
    target,
    p=1,
    margin=1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """sum over i != y of max(0, margin - x[y] + x[i])**p (times weight[y]), divided by
    the number of classes C, for each sample of input (N, C) or (C,) with class y."""
    reduction = reduction_of(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _check_vector_or_matrix(input)
    _check_long_target(target)
    rows = input.reshape(1, -1) if input.dim() == 1 else input
    n, c = rows.shape
    if target.numel() != n or (input.dim() == 2 and target.dim() != 1):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number "
            f"of input samples (batch size). Expected target size [{n}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}."
        )
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    classes = target._data.reshape(-1)
    if ((classes < 0) | (classes >= c)).any():
        raise RuntimeError("target out of range")
    operands.same_device(input, target)
    column = target.reshape(n, 1)
    terms = (margin - rows.gather(1, column) + rows).clamp_min(0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight.to(rows.dtype)[target.reshape(-1)].reshape(n, 1)
    own_class = (
        factories.zeros(n, c, dtype=target.dtype, device=input.device).scatter(1, column, 1).bool()
    )
    losses = terms.masked_fill(own_class, 0).sum(1) / c
    if input.dim() == 1:
        losses = losses.reshape(tuple(target.shape))
    return _reduced(losses, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])),
    divided by C; a row of target lists its classes up to the first -1."""
    reduction = reduction_of(size_average, reduce, reduction)
    _check_vector_or_matrix(input)
    _check_long_target(target)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}"
        )
    labels = target._data.reshape(-1, input.shape[-1])
    c = labels.shape[1]
    if ((labels < -1) | (labels >= c)).any():
        raise RuntimeError("argument #2 'target' is out of range")
    pairs = _target_pairs(devices.host(labels), c)
    rows = input.reshape(-1, c)
    # margins[n, j, i] = 1 - (x[n, j] - x[n, i]) for every pair of classes; `pairs` counts
    # how often (j a listed target, i not a target) is in the sum, duplicates included
    margins = (1 - rows.unsqueeze(2) + rows.unsqueeze(1)).clamp_min(0)
    weights = factories.tensor(pairs, dtype=rows.dtype, device=input.device)
    losses = (margins * weights).sum((1, 2)) / c
    if input.dim() == 1:
        losses = losses.reshape(())
    return _reduced(losses, reduction)


def _target_pairs(labels, c):
    """counts[n, j, i]: how often class j is listed before row n's first -1 (times 1 when
    class i is not listed), the pairs multilabel_margin_loss sums over."""
    listed_before_end = np.cumprod(labels != -1, axis=1).astype(bool)
    counts = np.zeros((labels.shape[0], c), dtype=np.float64)
    rows, cols = np.nonzero(listed_before_end)
    np.add.at(counts, (rows, labels[rows, cols]), 1.0)
    is_target = counts > 0
    return counts[:, :, None] * ~is_target[:, None, :]


def _log_sigmoid(x):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), torch's stable form (exact for large
    |x|; minimum's tie rule gives the gradient 1/2 at 0, sigmoid(0))."""
    stable = tensor_math.log1p(tensor_math.exp(-x.abs()))
    return tensor_math.minimum(x, factories.zeros_like(x)) - stable


def multilabel_soft_margin_loss(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """The mean over classes of -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), per sample."""
    if size_average is not None or reduce is not None:
        reduction = reduction_of(size_average, reduce, reduction)
    loss = -(target * _log_sigmoid(input) + (1 - target) * _log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduced(loss, reduction)


def triplet_margin_with_distance_loss(
    anchor,
    positive,
    negative,
    *,
    distance_function=None,
    margin=1.0,
    swap=False,
    reduction="mean",
):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d a user's distance
    (pairwise_distance by default); `swap` takes the smaller of d(a, n) and d(p, n)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same "
            f"number of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and "
            f"negative {n_dim}D inputs"
        )
    distance = distance_function if distance_function is not None else pairwise_distance
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = tensor_math.minimum(dist_neg, distance(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    return _reduced(loss, reduction)
