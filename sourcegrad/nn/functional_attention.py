"""`F.scaled_dot_product_attention` and `F.multi_head_attention_forward`, as torch has them.

Both are written with the eager tensor ops (matmul, softmax, masked_fill, ...), so
their gradients come from the ordinary nodes. They follow torch's own Python
reference and `torch.nn.functional.multi_head_attention_forward` step by step:

- masks: a bool `attn_mask` of scaled_dot_product_attention marks the positions
  that *take part* (True = attend); MultiheadAttention's bool masks mark those that
  are *masked out* (True = ignore), and are turned into float masks of 0 and -inf;
  a float mask is added to the scores;
- scaled_dot_product_attention's softmax is torch's "safe" one: a row whose
  scores are all -inf gives zeros (not nan), and so does its gradient;
- multi_head_attention_forward with `need_weights=True` computes the weights
  itself (softmax of q k^T / sqrt(head_dim) + mask: a fully masked row is nan, as
  in torch) and returns them averaged over the heads unless
  `average_attn_weights=False`; with `need_weights=False` it calls
  scaled_dot_product_attention and returns None for the weights.

Inputs are (L, N, E) (MultiheadAttention transposes batch_first inputs before
calling) or unbatched (L, E). `static_k`/`static_v` are not supported.
"""

from __future__ import annotations

import math
import warnings

from ..eager import dtypes, factories, shape_ops, tensor_math
from ..eager.tensor import Tensor
from ..errors import SourcegradError
from .linear_ops import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_NEG_INF = float("-inf")


class UnsupportedAttentionOptionError(SourcegradError, NotImplementedError):
    """An option of torch's attention functions that sourcegrad does not implement."""


def dropout(x, p):
    """Training-mode dropout: zeros with probability p, the rest scaled by 1/(1-p)."""
    keep = (factories.rand(tuple(x.shape), device=x.device) >= p).to(x.dtype)
    return x * (keep / (1 - p)) if p < 1 else x * 0


def _safe_softmax(scores, dim):
    """softmax along dim, with zeros for a row of -inf only (torch's _safe_softmax).

    Such a row is replaced by zeros before the softmax too: its softmax, kept for the
    backward pass, is then finite, and the zero gradient stays zero (not 0 * nan)."""
    masked_rows = (scores == _NEG_INF).all(dim, keepdim=True)
    out = tensor_math.softmax(tensor_math.where(masked_rows, 0.0, scores), dim)
    return tensor_math.where(masked_rows, 0.0, out)


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """softmax(q k^T * scale + mask) v over the last two dims; scale defaults to 1/sqrt(E)."""
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "scaled_dot_product_attention: query, key and value must be at least 2-D"
        )
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{query.shape[-2]}, {query.shape[-1]}] but got: "
            f"[{key.shape[-1]}, {key.shape[-2]}]."
        )
    n_q, n_k = query.shape[-2], key.shape[-2]
    scale_factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    bias = None
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be "
                "set when is_causal=True"
            )
        keep = shape_ops.tril(factories.ones((n_q, n_k), dtype=dtypes.bool, device=query.device))
        bias = factories.zeros((n_q, n_k), dtype=query.dtype, device=query.device).masked_fill(
            ~keep, _NEG_INF
        )
    elif attn_mask is not None:
        if attn_mask.dtype == dtypes.bool:
            bias = factories.zeros(
                tuple(attn_mask.shape), dtype=query.dtype, device=query.device
            ).masked_fill(~attn_mask, _NEG_INF)
        elif attn_mask.dtype.is_floating_point:
            bias = attn_mask
        else:
            raise RuntimeError(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                f"attn_mask.dtype: {attn_mask.dtype._scalar_name.lower()} and  query.dtype: "
                f"{query.dtype._scalar_name.lower()} instead."
            )
    if enable_gqa:
        key = shape_ops.repeat_interleave(key, query.shape[-3] // key.shape[-3], -3)
        value = shape_ops.repeat_interleave(value, query.shape[-3] // value.shape[-3], -3)
    scores = tensor_math.matmul(query, key.transpose(-2, -1)) * scale_factor
    if bias is not None:
        scores = scores + bias
    weights = _safe_softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return tensor_math.matmul(weights, value)


def none_or_dtype(input):
    """The dtype of a mask, or None (torch's F._none_or_dtype)."""
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask as a float one (-inf where True); float masks pass (torch's _canonical_mask)."""
    if mask is None:
        return None
    is_float = mask.dtype.is_floating_point
    if mask.dtype != dtypes.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(
            f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
            "same type for both instead.",
            stacklevel=3,
        )
    if not is_float:
        mask = factories.zeros(
            tuple(mask.shape), dtype=target_type, device=mask.device
        ).masked_fill(mask, _NEG_INF)
    return mask


def _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """torch's _mha_shape_check: is the input batched (3-D) or not (2-D)?"""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be "
                f"3-D but found {key.dim()}-D and {value.dim()}-D tensors "
                "respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be "
                f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                "instead"
            )
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                f"2-D or 3-D but found {attn_mask.dim()}-D tensor instead"
            )
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be "
                f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                "respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be "
                f"`None` or 1-D but found {key_padding_mask.dim()}-D tensor "
                "instead"
            )
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be "
                    f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                    "instead"
                )
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(
                    f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}"
                )
        return False
    raise AssertionError(
        "query should be unbatched 2D or batched 3D tensor but received "
        f"{query.dim()}-D query tensor"
    )


def _pad_last(mask):
    """A zero column appended to a float mask (for bias_k/bias_v and add_zero_attn)."""
    zeros = factories.zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype, device=mask.device)
    return shape_ops.cat([mask, zeros], -1)


def _in_projection(
    query,
    key,
    value,
    in_proj_weight,
    in_proj_bias,
    separate,
    q_proj_weight,
    k_proj_weight,
    v_proj_weight,
):
    if separate:
        weights = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        weights = shape_ops.chunk(in_proj_weight, 3)
    biases = (None,) * 3 if in_proj_bias is None else shape_ops.chunk(in_proj_bias, 3)
    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def multi_head_attention_forward(
    query,
    key,
    value,
    embed_dim_to_check,
    num_heads,
    in_proj_weight,
    in_proj_bias,
    bias_k,
    bias_v,
    add_zero_attn,
    dropout_p,
    out_proj_weight,
    out_proj_bias,
    training=True,
    key_padding_mask=None,
    need_weights=True,
    attn_mask=None,
    use_separate_proj_weight=False,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
    static_k=None,
    static_v=None,
    average_attn_weights=True,
    is_causal=False,
):
    """(attention output, attention weights or None), as torch's function of that name."""
    if static_k is not None or static_v is not None:
        raise UnsupportedAttentionOptionError(
            "sourcegrad: multi_head_attention_forward with static_k or static_v is not supported"
        )
    is_batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask, attn_mask, is_causal = _canonical_masks(
        query, key_padding_mask, attn_mask, is_causal, need_weights
    )
    head_dim = _head_dim(
        key, value, embed_dim, embed_dim_to_check, num_heads, use_separate_proj_weight
    )
    q, k, v = _in_projection(
        query,
        key,
        value,
        in_proj_weight,
        in_proj_bias,
        use_separate_proj_weight,
        q_proj_weight,
        k_proj_weight,
        v_proj_weight,
    )
    attn_mask = _batched_attn_mask(attn_mask, tgt_len, key.shape[0], bsz * num_heads)
    k, v, attn_mask, key_padding_mask = _append_bias_kv(
        k, v, bias_k, bias_v, bsz, attn_mask, key_padding_mask
    )
    # heads into the batch: (N * heads, L, head_dim)
    q, k, v = (t.reshape(t.shape[0], bsz * num_heads, head_dim).transpose(0, 1) for t in (q, k, v))
    if add_zero_attn:
        zeros = factories.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k = shape_ops.cat([k, zeros], 1)
        v = shape_ops.cat([v, zeros], 1)
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    attn_mask = _with_key_padding(attn_mask, key_padding_mask, bsz, num_heads, k.shape[1])
    if not training:
        dropout_p = 0.0
    out_proj = (out_proj_weight, out_proj_bias)
    shape = (tgt_len, bsz, embed_dim, num_heads)
    if need_weights:
        out, weights = _attention_and_weights(
            q, k, v, attn_mask, dropout_p, out_proj, shape, average_attn_weights
        )
        return (out, weights) if is_batched else (out.squeeze(1), weights.squeeze(0))
    out = _fused_attention(q, k, v, attn_mask, dropout_p, is_causal, out_proj, shape)
    return (out if is_batched else out.squeeze(1)), None


def _canonical_masks(query, key_padding_mask, attn_mask, is_causal, need_weights):
    """The float forms of both masks, and whether the causal hint still holds."""
    key_padding_mask = canonical_mask(
        key_padding_mask,
        "key_padding_mask",
        None if attn_mask is None else attn_mask.dtype,
        "attn_mask",
        query.dtype,
    )
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the "
            "Transformer module method `generate_square_subsequent_mask` to "
            "create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # scaled_dot_product_attention makes the causal mask itself
    else:
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    return key_padding_mask, attn_mask, is_causal


def _head_dim(key, value, embed_dim, embed_dim_to_check, num_heads, separate):
    """embed_dim // num_heads, after torch's checks of the embedding and key/value shapes."""
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if separate:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {key.shape[:2]} do not match "
                f"value's {value.shape[:2]}"
            )
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    return head_dim


def _batched_attn_mask(attn_mask, tgt_len, src_len, batch_heads):
    """attn_mask checked, a 2-D one given a batch dim of 1 (None stays None)."""
    if attn_mask is None:
        return None
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(
                f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                f"should be {(tgt_len, src_len)}."
            )
        return attn_mask.unsqueeze(0)
    if tuple(attn_mask.shape) != (batch_heads, tgt_len, src_len):
        raise RuntimeError(
            f"The shape of the 3D attn_mask is {attn_mask.shape}, but should "
            f"be {(batch_heads, tgt_len, src_len)}."
        )
    return attn_mask


def _append_bias_kv(k, v, bias_k, bias_v, bsz, attn_mask, key_padding_mask):
    """bias_k and bias_v appended to the keys and values (and a column to the masks)."""
    if bias_k is not None and bias_v is not None:
        k = shape_ops.cat([k, bias_k.repeat(1, bsz, 1)])
        v = shape_ops.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError(
            "bias_k is set but bias_v is None"
            if bias_k is not None
            else "bias_v is set but bias_k is None"
        )
    return k, v, attn_mask, key_padding_mask


def _with_key_padding(attn_mask, key_padding_mask, bsz, num_heads, src_len):
    """attn_mask plus the key padding mask spread over the heads (N * heads, 1, S)."""
    if key_padding_mask is None:
        return attn_mask
    if tuple(key_padding_mask.shape) != (bsz, src_len):
        raise AssertionError(
            f"expecting key_padding_mask shape of {(bsz, src_len)}, but "
            f"got {key_padding_mask.shape}"
        )
    key_padding_mask = (
        key_padding_mask.reshape(bsz, 1, 1, src_len)
        .expand(-1, num_heads, -1, -1)
        .reshape(bsz * num_heads, 1, src_len)
    )
    return key_padding_mask if attn_mask is None else attn_mask + key_padding_mask


def _attention_and_weights(q, k, v, attn_mask, dropout_p, out_proj, shape, average):
    """need_weights=True: the weights computed here (a fully masked row is nan, as torch's),
    then the output projected; the weights averaged over the heads if `average`."""
    tgt_len, bsz, embed_dim, num_heads = shape
    q_scaled = q * math.sqrt(1.0 / float(q.shape[-1]))
    scores = tensor_math.bmm(q_scaled, k.transpose(-2, -1))
    if attn_mask is not None:
        scores = attn_mask + scores
    weights = tensor_math.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    out = tensor_math.bmm(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, *out_proj).reshape(tgt_len, bsz, -1)
    weights = weights.reshape(bsz, num_heads, tgt_len, k.shape[1])
    if average:
        weights = weights.mean(1)
    return out, weights


def _fused_attention(q, k, v, attn_mask, dropout_p, is_causal, out_proj, shape):
    """need_weights=False: scaled_dot_product_attention per head, then the projection."""
    tgt_len, bsz, embed_dim, num_heads = shape
    src_len, head_dim = k.shape[1], k.shape[2]
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    return linear(out, *out_proj).reshape(tgt_len, bsz, -1)
