"""`F.embedding`: the rows of a weight at integer indices (torch's EmbeddingBackward0, one
registry entry, `ops.nn.embedding`), with padding_idx and max_norm's renormalisation in place.

Apart from `nn.functional` so that `embedding_bag_ops`, which looks its bags' rows up with
it, and `nn.functional`, which re-exports both, import it without a cycle.

Imports: the eager tensor modules and the registry's nn entries.
"""

from __future__ import annotations

from ..eager import operands, shape_ops, tensor_math
from ..eager.spec import OpSpec, record
from ..eager.tensor import Tensor
from ..ops import nn as ops_nn
from .unsupported import UnsupportedOptionError

__all__ = ["embedding"]

_wrap = Tensor._make
EMBEDDING = OpSpec("EmbeddingBackward0", "embedding", n_arrays=2, edges=(0,))


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """weight[input]; rows at padding_idx get no gradient, scale_grad_by_freq divides each
    row's gradient by how often input uses it. max_norm renormalises in place."""
    if sparse:
        raise UnsupportedOptionError(
            "sourcegrad: F.embedding with sparse=True is not supported (sparse gradients)"
        )
    if input._data.dtype.kind not in "iu":
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the "
            "following scalar types: Long, Int; but got "
            f"{input.type()} instead (while checking arguments for embedding)"
        )
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= n:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    if input._data.size and not (0 <= input._data.min() and input._data.max() < n):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    # (the indices copied: the node's gradient is that of the rows this forward read)
    indices = input._data.copy()
    out = _wrap(ops_nn.embedding(weight._data, indices))
    if operands.needs_grad(weight):
        options = {"padding_idx": padding_idx}
        if scale_grad_by_freq:
            options["scale_grad_by_freq"] = True
        record(EMBEDDING, out, (weight, indices), options)
    return out


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """Scale the rows input refers to down to norm max_norm, in place and without grad."""
    from ..eager.grad_mode import no_grad

    with no_grad():
        rows = shape_ops.unique(input.reshape(-1))
        norms = tensor_math.norm(weight[rows], norm_type, dim=1, keepdim=True)
        scale = tensor_math.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = weight[rows] * scale
