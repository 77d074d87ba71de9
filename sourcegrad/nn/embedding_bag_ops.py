"""`F.embedding_bag`: the sum, mean or max of bags of embedding rows, as torch's.

Takes indices (2-d (B, N): B bags of N; or 1-d with `offsets`, each bag running from its
offset to the next, the last to the end or, with include_last_offset, to the last offset),
the weight (num_embeddings, D), optional per-sample weights (mode='sum' only) and padding
index (its entries belong to no bag); returns (B, D). An empty bag gives zeros. Offsets and
indices are checked as torch checks them (the first offset 0, none past the end or smaller
than the one before, the indices in range), with torch's RuntimeErrors.

Written with the eager ops: the rows are looked up with `F.embedding` (which renormalises
them to max_norm, in place, as torch), summed into their bags with `index_add` (divided by
the bag's size for the mean), or reduced with `max` bag by bag (a tie's gradient to its first row, as torch), so the
gradient reaches the weight and the per-sample weights through those ops' nodes.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..eager import factories, joining
from .embedding_ops import embedding
from .unsupported import UnsupportedOptionError

__all__ = ["embedding_bag"]


def _check_index_dtype(t):
    if t.dtype.name not in ("int64", "int32"):  # (torch: Long or Int only)
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {t.type()} instead (while checking arguments for "
            "embedding_bag)"
        )


def _check_range(flat, weight, mode, padding_idx):
    """torch's refusal of an index outside [0, num_embeddings), its message by the kernel
    torch runs (a float32 sum or mean without padding index has its own)."""
    num_embeddings = weight.shape[0]
    values = np.asarray(flat.detach().cpu().numpy())
    bad = np.flatnonzero((values < 0) | (values >= num_embeddings))
    if not len(bad):
        return
    i = int(bad[0])
    if mode in ("sum", "mean") and padding_idx is None and weight.dtype.name == "float32":
        raise RuntimeError(
            f"Index {i} of input takes value {int(values[i])} which is not in the valid range "
            f"[0, {num_embeddings})"
        )
    raise RuntimeError(
        "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be "
        f"{int(values[i])}"
    )


def _bags(input, offsets, include_last_offset):
    """(flat indices, the bag of each index or -1, the number of bags), torch's checks."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}"
            )
        b, n = input.shape
        return input.reshape(-1), np.repeat(np.arange(b), n), b
    if input.dim() != 1:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    _check_index_dtype(offsets)
    starts = np.asarray(offsets.detach().cpu().numpy(), dtype=np.int64)
    length = input.shape[0]
    # (torch's checks: without them a bag starting after 0, past the end, or before the
    # previous one gave a number where torch refuses)
    if len(starts) and starts[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            f"from position 0. However, got {starts[0]}\n[ torch.{offsets.dtype._tensor_type}{{}} ]"
        )
    if len(starts) and starts[-1] > length:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length {length} but got "
            f"offsets[-1] of {starts[-1]}"
        )
    if np.any(np.diff(starts) < 0):
        raise RuntimeError(
            "Expected i < index_size to be true, but got false.  (Could this error message be "
            "improved?  If so, please report an enhancement request to PyTorch.)"
        )
    ends = np.append(starts[1:], length)
    if include_last_offset:
        starts, ends = starts[:-1], starts[1:]
    bag_of = np.full(length, -1, dtype=np.int64)
    for i, (start, end) in enumerate(zip(starts, ends)):
        bag_of[start:end] = i
    return input, bag_of, len(starts)


def _check_options(mode, scale_grad_by_freq, sparse, per_sample_weights):
    """torch's refusals of option combinations; sourcegrad's of the two it lacks."""
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    if scale_grad_by_freq or sparse:
        raise UnsupportedOptionError(
            "sourcegrad: F.embedding_bag with scale_grad_by_freq=True or sparse=True is not "
            "supported"
        )


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """torch.nn.functional.embedding_bag (see the module docstring)."""
    if not weight.is_floating_point() and input.is_floating_point():
        warnings.warn(
            "Argument order of nn.functional.embedding_bag was changed. Usage "
            "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
            "`embedding_bag(input, weight, ...)`.",
            stacklevel=2,
        )
        weight, input = input, weight
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({input.shape})"
        )
    if weight.dim() != 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}"
        )
    _check_index_dtype(input)
    flat, bag_of, n_bags = _bags(input, offsets, include_last_offset)
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    _check_range(flat, weight, mode, padding_idx)
    _check_options(mode, scale_grad_by_freq, sparse, per_sample_weights)
    rows = embedding(flat, weight, max_norm=max_norm, norm_type=norm_type)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1)
    keep = bag_of >= 0
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += weight.shape[0]
        keep &= np.asarray(flat.detach().cpu().numpy()) != padding_idx
    kept = factories.tensor(np.flatnonzero(keep), device=weight.device)
    rows, bags = rows.index_select(0, kept), bag_of[keep]
    dim = weight.shape[1]
    if mode == "max" and n_bags == 0:
        return factories.zeros((0, dim), dtype=rows.dtype, device=rows.device)
    if mode == "max":
        return joining.stack(
            [
                # (max, not amax: a tie's gradient goes to its first row, as torch's
                # max_indices send it; amax would split it between the tied rows)
                rows[bags == i].max(0).values
                if np.any(bags == i)
                else factories.zeros(dim, dtype=rows.dtype, device=rows.device)
                for i in range(n_bags)
            ]
        ).reshape(n_bags, dim)
    out = factories.zeros((n_bags, dim), dtype=rows.dtype, device=rows.device)
    out = out.index_add(0, factories.tensor(bags, device=weight.device), rows)
    if mode == "mean":
        counts = np.maximum(np.bincount(bags, minlength=n_bags), 1).reshape(-1, 1)
        out = out / factories.tensor(counts.astype(np.float64), dtype=out.dtype, device=out.device)
    return out
