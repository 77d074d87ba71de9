"""torch's functions, Tensor methods and nn layers written as numpy code the compiler reads.

`sourcegrad.compile` of an `nn.Module` or of a function written with Tensor methods
(`module`) rewrites the user's forward so that each torch call it knows becomes
a call of a function here (`F.linear(x, w, b)` -> `linear(x, w, b)`, `x.view(n, -1)` ->
`tensor_view(x, n, -1)`, `self.fc1(x)` -> `linear(x, fc1_weight, fc1_bias)`); the
compiler then inlines these functions like any user function and differentiates them
with the registry's rules. They take numpy arrays and static arguments (ints, tuples,
strings) and compute what the eager op computes, with torch's argument names.

Takes: numpy arrays. Gives: numpy arrays. Imports numpy, `ops` (the primitives it calls,
`max_pool_index` and `track_running_stats` among them, are `ops.nn_layers`') and
`nn.composites`: the LSTM and GRU cells are the eager layers' own functions, given the
registry's numpy functions (`composites.lstm_cell(..., opnn.sigmoid, np.tanh)`); batch norm,
layer norm and cross_entropy are the registry's functions that eager's nodes compute.
`linear` is `input @ weight.T + bias` here (eager records one addmm node; the compiler
differentiates the product and the sum itself, and prints them as they read).

`FUNCTIONS` and `METHODS` are the tables the rewriting reads: a torch function's name (as
`torch.<name>` or `nn.functional.<name>`) or a Tensor method's name -> the function here.

Why one module: the code the rewriting writes, which users read (`model.source`), names
each of these functions `_lowering.<name>`, one namespace for all of torch's spellings; each
is a few lines of numpy over the registry's entries (the kernels and rules live in `ops`).
"""

from __future__ import annotations

import numpy as np

from ..nn import composites
from ..ops import nn as opnn
from ..ops import nn_kernels as K
from ..ops import nn_layers
from ..ops.nn_layers import (
    adaptive_pool_matrix,
    avg_pool_matrix,
    interpolation_matrix,
    max_pool_index,
    track_running_stats,
)

# `x is None` of an array is a run-time comparison to the compiler; isinstance is decided
# while compiling
NoneType = type(None)


def _is_float(dtype):
    """Whether `dtype` is a float one (decided while compiling): an integer input to a
    layer that eager refuses, or computes otherwise (AvgPool2d of int64 gave 0s), is a
    refusal, and the call runs eagerly."""
    return dtype == np.float64 or dtype == np.float32 or dtype == np.float16


def _pair(value):
    return (value, value) if isinstance(value, int) else value


# --- activations and elementwise functions ---------------------------------------------------


def relu(input):
    return opnn.relu(input)


def sigmoid(input):
    return opnn.sigmoid(input)


def tanh(input):
    return np.tanh(input)


def softmax(input, dim):
    return opnn.softmax(input, dim)


def log_softmax(input, dim):
    return opnn.log_softmax(input, dim)


def leaky_relu(input, negative_slope=0.01):
    return opnn.leaky_relu(input, negative_slope)


def gelu(input):
    """x times the normal CDF of x (the registry's gelu forward, as eager's), written as
    that product so that the backward reuses the forward's CDF (saved), where gelu's own
    rule computes it again: ~14 passes over the array and their temporaries, a GPT's
    costliest lines of the backward. (The CDF in x's dtype: a half-precision x's is
    float32; the cast of the CDF, which the backward keeps anyway, not of the product.)"""
    return input * opnn.normal_cdf(input).astype(input.dtype, copy=False)


def silu(input):
    return input * opnn.sigmoid(input)


# --- layers ------------------------------------------------------------------------------------


def linear(input, weight, bias=None):
    """input @ weight.T + bias. An input of more than 2 dims has its leading dims folded
    into rows first (as torch's matmul folds them): one matrix product forward, and the
    weight's gradient one product too (not a product per batch item, then summed).

    Written without local names: the compiler inlines this at every layer under the same
    names, and a name bound again is pushed on the generated forward's saved-values stack
    (the backward of `rows + bias` reads `rows` for its shape: every layer's product was
    kept to the end of the backward)."""
    assert input.dtype == weight.dtype, "the input's dtype is the weight's"  # (else: eager's)
    if np.ndim(input) > 2:  # (the rank is known when compiling: one branch is read)
        return np.reshape(
            _linear_rows(np.reshape(input, (-1, np.shape(input)[-1])), weight, bias),
            np.shape(input)[:-1] + (np.shape(weight)[0],),
        )
    return _linear_rows(input, weight, bias)


def _linear_rows(input, weight, bias):
    if isinstance(bias, NoneType):
        return input @ weight.T
    return input @ weight.T + bias


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    assert input.dtype == weight.dtype, "the input's dtype is the weight's"  # (else: eager's)
    return K.convolution(
        input, weight, bias, _pair(stride), _pair(padding), _pair(dilation), False, (0, 0), groups
    )


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    assert input.dtype == weight.dtype, "the input's dtype is the weight's"  # (else: eager's)
    return K.convolution(
        input, weight, bias, (stride,), (padding,), (dilation,), False, (0,), groups
    )


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    assert np.ndim(input) == 4, "conv_transpose2d's batched input"  # (else: eager's own path)
    assert input.dtype == weight.dtype, "the input's dtype is the weight's"
    return K.convolution(
        input,
        weight,
        bias,
        _pair(stride),
        _pair(padding),
        _pair(dilation),
        True,
        _pair(output_padding),
        groups,
    )


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    kernel = _pair(kernel_size)
    step = kernel if stride is None else _pair(stride)
    return input[max_pool_index(input, kernel, step, _pair(padding), _pair(dilation), ceil_mode)]


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Eager's avg_pool2d: the registry's resample by the two averaging matrices."""
    assert np.ndim(input) >= 3, "avg_pool2d's input rank"  # (else: eager's error)
    assert np.ndim(input) <= 4, "avg_pool2d's input rank"
    assert _is_float(input.dtype), "a floating input"  # (an integer one: eager's)
    kernel = _pair(kernel_size)
    step = kernel if isinstance(stride, NoneType) else _pair(stride)
    pad = _pair(padding)
    a = avg_pool_matrix(input, 0, kernel, step, pad, ceil_mode, count_include_pad, divisor_override)
    b = avg_pool_matrix(input, 1, kernel, step, pad, ceil_mode, count_include_pad, divisor_override)
    return _resample(input, a, b)


def adaptive_avg_pool2d(input, output_size):
    """Eager's adaptive_avg_pool2d: a mean for (1, 1), else the resample by its matrices."""
    assert np.ndim(input) >= 3, "adaptive_avg_pool2d's input rank"
    assert np.ndim(input) <= 4, "adaptive_avg_pool2d's input rank"
    assert _is_float(input.dtype), "a floating input"
    out = _pair(output_size)
    rows = np.shape(input)[-2] if isinstance(out[0], NoneType) else out[0]
    cols = np.shape(input)[-1] if isinstance(out[1], NoneType) else out[1]
    if rows == 1 and cols == 1:
        return np.mean(input, axis=(-1, -2), keepdims=True)
    a = adaptive_pool_matrix(input, 0, rows)
    b = adaptive_pool_matrix(input, 1, cols)
    return _resample(input, a, b)


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
):
    """Eager's F.interpolate of a 4-d input, nearest or bilinear: the resample by its two
    matrices (what eager refuses, or does otherwise, runs eagerly)."""
    assert np.ndim(input) == 4, "interpolate's 4-d input"
    assert _is_float(input.dtype), "a floating input"
    assert mode == "nearest" or mode == "bilinear", "interpolate's mode"
    assert isinstance(size, NoneType) != isinstance(scale_factor, NoneType), "size or scale"
    assert mode == "bilinear" or isinstance(align_corners, NoneType), "align_corners"
    shared = (size, scale_factor, mode, align_corners, recompute_scale_factor)
    a = interpolation_matrix(input, 0, *shared)
    b = interpolation_matrix(input, 1, *shared)
    return _resample(input, a, b)


def _resample(input, a, b):
    """a @ x @ b^T over the last two axes, as eager's resample node computes it (the products
    in its order: the same numbers); the compiler differentiates the two products."""
    return np.matmul(np.matmul(a, input), np.swapaxes(b, -1, -2))


# The generator compiled dropout draws from: generated code keeps the object it was compiled
# with, so this one stays, and `module` copies the eager default generator's state
# into it before a call and back after (the masks eager's dropout would draw, in its order).
DROPOUT_RNG = np.random.default_rng(0)


def dropout(input, p=0.5, training=True):
    """Eager's dropout, drawing from eager's stream (see DROPOUT_RNG)."""
    if not training or p == 0:
        return input
    keep = DROPOUT_RNG.random(input.shape) >= p
    return input * (keep / (1 - p)).astype(input.dtype)


def arange(start, end=None, step=1, dtype=None):
    """torch.arange of Python numbers: int64 for integers, as torch (a dtype= other than an
    integer one is left to eager code)."""
    if isinstance(end, NoneType):
        return np.arange(0, start, step)
    return np.arange(start, end, step)


def embedding(input, weight):
    # the registry's entry, as eager's F.embedding: its gradient a one-hot product with g's
    # rows where that is small (a GPT's token and position tables: ~4x faster than the
    # bincount of `weight[input]`'s adjoint), the same numbers in both modes
    return opnn.embedding(weight, input)


def flatten(input, start_dim=0, end_dim=-1):
    shape = input.shape
    end = end_dim % len(shape)
    return np.reshape(input, shape[:start_dim] + (-1,) + shape[end + 1 :])


def batch_norm_eval(input, running_mean, running_var, weight, bias, eps):
    assert _is_float(input.dtype), "a floating input"  # (an integer one: eager's error)
    return nn_layers.batch_norm_eval(input, weight, bias, running_mean, running_var, eps)


def batch_norm_train(
    input,
    running_mean,
    running_var,
    num_batches_tracked,
    weight,
    bias,
    momentum,
    eps,
    min_rank,
    max_rank,
):
    """BatchNorm in training mode: each channel normalised by the batch's own mean and
    biased variance; the running statistics (None: not tracked) updated as eager's."""
    # (what eager refuses is not computed here: the call then runs eagerly, and raises)
    assert np.ndim(input) >= min_rank, "BatchNorm's input rank"
    assert np.ndim(input) <= max_rank, "BatchNorm's input rank"
    assert np.size(input) > np.shape(input)[1], "more than 1 value per channel"
    assert _is_float(input.dtype), "a floating input"
    if not isinstance(running_mean, NoneType):
        track_running_stats(input, running_mean, running_var, num_batches_tracked, momentum)
    return nn_layers.batch_norm_train(input, weight, bias, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    assert _is_float(input.dtype), "a floating input"  # (an integer one: eager's error)
    axes = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    return nn_layers.layer_norm(input, weight, bias, axes, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Eager's F.group_norm, step by step (the same numbers): each group of channels and the
    spatial dims normalised by its mean and biased variance, then weight and bias."""
    assert _is_float(input.dtype), "a floating input"
    shape = np.shape(input)
    assert shape[1] % num_groups == 0, "channels divisible by num_groups"  # (else: eager's)
    grouped = np.reshape(input, (shape[0], num_groups, -1))
    mean = np.mean(grouped, axis=-1, keepdims=True)
    centred = grouped - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    out = np.reshape(centred * opnn.rsqrt(var + eps), shape)
    affine_shape = (1, shape[1]) + (1,) * (len(shape) - 2)
    if not isinstance(weight, NoneType):
        out = out * np.reshape(weight, affine_shape)
    if not isinstance(bias, NoneType):
        out = out + np.reshape(bias, affine_shape)
    return out


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None
):
    """Eager's F.scaled_dot_product_attention without dropout (a dropout_p other than 0 is
    a graph break, `module`): softmax(q k^T * scale + mask) v, a row masked whole giving
    zeros (torch's _safe_softmax)."""
    assert dropout_p == 0.0, "scaled_dot_product_attention's dropout"
    n_q, n_k = np.shape(query)[-2], np.shape(key)[-2]
    if isinstance(scale, NoneType):
        scale = 1.0 / np.shape(query)[-1] ** 0.5  # (a Python float: q's dtype stays)
    scores = np.matmul(query, np.swapaxes(key, -1, -2)) * scale
    if is_causal:
        assert isinstance(attn_mask, NoneType), "an attn_mask with is_causal=True"
        scores = np.where(np.tri(n_q, n_k, dtype=bool), scores, -np.inf)
    elif not isinstance(attn_mask, NoneType):
        if attn_mask.dtype == np.bool_:
            scores = np.where(attn_mask, scores, -np.inf)
        else:
            scores = scores + attn_mask
    masked_rows = np.all(scores == -np.inf, axis=-1, keepdims=True)
    weights = opnn.softmax(np.where(masked_rows, 0.0, scores), -1)
    return np.matmul(np.where(masked_rows, 0.0, weights), value)


def self_attention(x, in_weight, in_bias, out_weight, out_bias, num_heads, batch_first):
    """nn.MultiheadAttention's forward on (x, x, x) without masks, dropout or weights (what a
    TransformerEncoderLayer calls), step by step as eager's: the packed in-projection, the
    heads, scaled_dot_product_attention, the out-projection."""
    assert np.ndim(x) == 3, "a batched input"
    if batch_first:
        x = np.swapaxes(x, 0, 1)
    length, batch, embed = np.shape(x)
    head = embed // num_heads
    w_q, w_k, w_v = chunk(in_weight, 3)
    if isinstance(in_bias, NoneType):
        b_q, b_k, b_v = None, None, None
    else:
        b_q, b_k, b_v = chunk(in_bias, 3)
    heads = (batch, num_heads, length, head)
    out = scaled_dot_product_attention(
        _heads(linear(x, w_q, b_q), heads),
        _heads(linear(x, w_k, b_k), heads),
        _heads(linear(x, w_v, b_v), heads),
    )
    out = np.reshape(np.transpose(out, (2, 0, 1, 3)), (length * batch, embed))
    out = np.reshape(linear(out, out_weight, out_bias), (length, batch, -1))
    if batch_first:
        out = np.swapaxes(out, 0, 1)
    return out


def multi_head_attention(
    query,
    key,
    value,
    attention,
    num_heads,
    batch_first,
    key_padding_mask,
    need_weights,
    attn_mask,
    average_attn_weights,
    is_causal,
    scales,
):
    """nn.MultiheadAttention's forward (its packed in-projection, no bias_kv, zero_attn or
    dropout: those run eagerly), step by step as eager's (`nn.functional_attention`):
    `attention` the (in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias),
    `scales` the (need_weights=True, need_weights=False) scales of q, Python floats as
    eager computes them. Bool masks become float ones (-inf where True), a key padding
    mask is added to attn_mask per batch item; need_weights=True returns the softmax's
    weights (averaged over the heads unless average_attn_weights=False; a row masked
    whole is nan, as eager's), False the output of scaled_dot_product_attention and None.
    What eager refuses or warns about is a refusal: the call then runs eagerly."""
    # (long: eager's MultiheadAttention.forward and multi_head_attention_forward in their
    # order, read side by side with them; the masks' branches decided while compiling)
    in_weight, in_bias, out_weight, out_bias = attention
    assert np.ndim(query) == 3, "a batched query"  # (an unbatched one: eager's own path)
    assert np.ndim(key) == 3, "a batched key"
    assert np.shape(key) == np.shape(value), "key's shape is value's"
    # (nested ifs, each decided while compiling: the compiler's shapes of `a and b` read
    # both sides)
    if not isinstance(attn_mask, NoneType):
        if not isinstance(key_padding_mask, NoneType):
            assert attn_mask.dtype == key_padding_mask.dtype, "masks of one dtype"  # (eager warns)
    key_padding_mask = _float_mask(key_padding_mask, query)
    if is_causal:
        assert not isinstance(attn_mask, NoneType), "is_causal with an attn_mask"
    causal = False
    if is_causal:
        if isinstance(key_padding_mask, NoneType):
            if not need_weights:
                causal = True  # (scaled_dot_product_attention's causal mask, as eager's)
    if causal:
        attn_mask = None
    else:
        attn_mask = _float_mask(attn_mask, query)
    if batch_first:
        query, key, value = (
            np.swapaxes(query, 0, 1),
            np.swapaxes(key, 0, 1),
            np.swapaxes(value, 0, 1),
        )
    length, batch, embed = np.shape(query)
    source = np.shape(key)[0]
    assert embed == np.shape(in_weight)[1], "the query's embedding size"
    head = embed // num_heads
    w_q, w_k, w_v = chunk(in_weight, 3)
    if isinstance(in_bias, NoneType):
        b_q, b_k, b_v = None, None, None
    else:
        b_q, b_k, b_v = chunk(in_bias, 3)
    q = _heads(linear(query, w_q, b_q), (batch, num_heads, length, head))
    k = _heads(linear(key, w_k, b_k), (batch, num_heads, source, head))
    v = _heads(linear(value, w_v, b_v), (batch, num_heads, source, head))
    if not isinstance(attn_mask, NoneType):
        if np.ndim(attn_mask) == 2:
            assert np.shape(attn_mask) == (length, source), "the 2-D attn_mask's shape"
            attn_mask = np.reshape(attn_mask, (1, 1, length, source))
        else:
            assert np.ndim(attn_mask) == 3, "a 2-D or 3-D attn_mask"
            assert np.shape(attn_mask) == (batch * num_heads, length, source), "its shape"
            attn_mask = np.reshape(attn_mask, (batch, num_heads, length, source))
    if not isinstance(key_padding_mask, NoneType):
        assert np.shape(key_padding_mask) == (batch, source), "key_padding_mask's shape"
        padding = np.reshape(key_padding_mask, (batch, 1, 1, source))
        if isinstance(attn_mask, NoneType):
            attn_mask = padding
        else:
            attn_mask = attn_mask + padding
    if need_weights:
        scores = np.matmul(q * scales[0], np.swapaxes(k, -1, -2))
        if not isinstance(attn_mask, NoneType):
            scores = attn_mask + scores
        weights = opnn.softmax(scores, -1)
        out = np.matmul(weights, v)
    else:
        out = scaled_dot_product_attention(q, k, v, attn_mask, 0.0, causal, scales[1])
    out = np.reshape(np.transpose(out, (2, 0, 1, 3)), (length * batch, embed))
    out = np.reshape(linear(out, out_weight, out_bias), (length, batch, -1))
    if batch_first:
        out = np.swapaxes(out, 0, 1)
    if not need_weights:
        return out, None
    if average_attn_weights:
        return out, np.mean(weights, axis=1)
    return out, weights


def _float_mask(mask, query):
    """MultiheadAttention's float form of a mask: a bool one -inf where True, 0 elsewhere;
    a float one as it is (of the query's dtype: another runs eagerly)."""
    # (one return: the compiler reads the code after a return taken while compiling)
    if isinstance(mask, NoneType):
        out = None
    elif mask.dtype == np.bool_:
        out = np.where(mask, -np.inf, 0.0).astype(query.dtype)
    else:
        assert mask.dtype == query.dtype, "a float mask of the query's dtype"
        out = mask
    return out


def _heads(projected, heads):
    """(L, N, E) -> (N, heads, L, E / heads), through eager's (N * heads, L, E / heads)."""
    batch, num_heads, length, head = heads
    return np.reshape(np.swapaxes(np.reshape(projected, (length, -1, head)), 0, 1), heads)


def transformer_encoder_layer(
    x,
    attention,
    linear1,
    linear2,
    norm1,
    norm2,
    num_heads,
    batch_first,
    norm_first,
    activation,
    src_mask=None,
    key_padding_mask=None,
    is_causal=False,
    scales=None,
):
    """nn.TransformerEncoderLayer's forward without dropout: `attention` the
    (in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias) of its self_attn,
    `linear1`, `linear2` (weight, bias) pairs, `norm1`, `norm2` (normalized_shape, weight,
    bias, eps), `activation` "relu" or "gelu"; with masks (or is_causal) its self-attention
    is `multi_head_attention`'s, need_weights=False (`scales` its scales)."""
    if isinstance(src_mask, NoneType) and isinstance(key_padding_mask, NoneType) and not is_causal:
        if norm_first:
            x = x + self_attention(layer_norm(x, *norm1), *attention, num_heads, batch_first)
            return x + _feed_forward(layer_norm(x, *norm2), linear1, linear2, activation)
        x = layer_norm(x + self_attention(x, *attention, num_heads, batch_first), *norm1)
        return layer_norm(x + _feed_forward(x, linear1, linear2, activation), *norm2)
    if norm_first:
        h = layer_norm(x, *norm1)
        x = x + _masked_attention(h, h, attention, num_heads, batch_first, src_mask,
                                  key_padding_mask, is_causal, scales)  # fmt: skip
        return x + _feed_forward(layer_norm(x, *norm2), linear1, linear2, activation)
    x = layer_norm(
        x + _masked_attention(x, x, attention, num_heads, batch_first, src_mask,
                              key_padding_mask, is_causal, scales),
        *norm1,
    )  # fmt: skip
    return layer_norm(x + _feed_forward(x, linear1, linear2, activation), *norm2)


def _masked_attention(x, memory, attention, num_heads, batch_first, mask, padding, causal, scales):
    """A transformer layer's attention of x to memory (need_weights=False): its output."""
    out, _ = multi_head_attention(
        x, memory, memory, attention, num_heads, batch_first, padding, False, mask, True,
        causal, scales,
    )  # fmt: skip
    return out


def transformer_decoder_layer(
    x,
    memory,
    attentions,
    linear1,
    linear2,
    norms,
    num_heads,
    batch_first,
    norm_first,
    activation,
    masks,
    causal,
    scales,
):
    """nn.TransformerDecoderLayer's forward without dropout: `attentions` the self_attn's
    and the multihead_attn's (in_proj_weight, in_proj_bias, out_proj.weight,
    out_proj.bias), `norms` norm1..norm3's (normalized_shape, weight, bias, eps), `masks`
    (tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask), `causal`
    (tgt_is_causal, memory_is_causal); the attentions `multi_head_attention`'s,
    need_weights=False."""
    tgt_mask, memory_mask, tgt_padding, memory_padding = masks
    shared = (num_heads, batch_first)
    if norm_first:
        h = layer_norm(x, *norms[0])
        x = x + _masked_attention(h, h, attentions[0], *shared, tgt_mask, tgt_padding,
                                  causal[0], scales)  # fmt: skip
        h = layer_norm(x, *norms[1])
        x = x + _masked_attention(h, memory, attentions[1], *shared, memory_mask,
                                  memory_padding, causal[1], scales)  # fmt: skip
        return x + _feed_forward(layer_norm(x, *norms[2]), linear1, linear2, activation)
    own = _masked_attention(x, x, attentions[0], *shared, tgt_mask, tgt_padding, causal[0], scales)
    x = layer_norm(x + own, *norms[0])
    cross = _masked_attention(x, memory, attentions[1], *shared, memory_mask, memory_padding,
                              causal[1], scales)  # fmt: skip
    x = layer_norm(x + cross, *norms[1])
    return layer_norm(x + _feed_forward(x, linear1, linear2, activation), *norms[2])


def _feed_forward(x, linear1, linear2, activation):
    h = linear(x, *linear1)
    h = relu(h) if activation == "relu" else gelu(h)
    return linear(h, *linear2)


# nn.RNN, nn.LSTM and nn.GRU: `module` writes each module's forward as a function
# calling these, its layers and directions unrolled (each keeps its own weights and shapes):
# recurrence_input, initial_state, one *_direction per layer and direction, then
# recurrence_output and final_state.


def recurrence_input(input, batch_first, input_size, weight_ih):
    """The input as (L, N, H_in): batch_first swapped, an unbatched (L, H_in) given N = 1."""
    # (what eager refuses is not computed here: the call then runs eagerly, and raises)
    assert np.ndim(input) >= 2, "a 2-d or 3-d input"
    assert np.ndim(input) <= 3, "a 2-d or 3-d input"
    assert np.shape(input)[-1] == input_size, "input.size(-1) == input_size"
    assert input.dtype == weight_ih.dtype, "the input's dtype is the weights'"
    # (one return: code after a return taken at compile time is still read)
    if np.ndim(input) == 2:
        x = np.expand_dims(input, 1)
    elif batch_first:
        x = np.swapaxes(input, 0, 1)
    else:
        x = input
    return x


def initial_state(input, hx, x, states, size):
    """h_0 (or c_0) as (layers * directions, N, size): zeros for None; a given one checked
    (eager raises torch's error where its shape differs) and given its batch dim."""
    if isinstance(hx, NoneType):
        state = np.zeros((states, x.shape[1], size), dtype=x.dtype)
    else:
        assert np.ndim(hx) == np.ndim(input), "hx's rank is the input's"
        state = hx
        if np.ndim(input) == 2:
            state = np.expand_dims(hx, 1)
        assert np.shape(state)[0] == states, "hx's shape"
        assert np.shape(state)[1] == x.shape[1], "hx's shape"
        assert np.shape(state)[2] == size, "hx's shape"
    return state


def recurrence_output(input, x, batch_first):
    """The last layer's outputs (L, N, H) in the input's layout."""
    output = x
    if np.ndim(input) == 2:
        output = x[:, 0]
    elif batch_first:
        output = np.swapaxes(x, 0, 1)
    return output


def final_state(input, states):
    """h_n (or c_n): the last states of each layer and direction, stacked."""
    stacked = np.stack(states)
    if np.ndim(input) == 2:
        stacked = stacked[:, 0]
    return stacked


def lstm_direction(x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, hidden_size):
    """One LSTM layer in one direction over x (L, N, I): (outputs, h_n, c_n). The input's
    projection is one product for the whole sequence (read backwards for the reverse
    direction); the loop over time steps is a loop of the generated code. b_hh is 0.0
    for a module without biases (b_ih None). With biases and no projection: the registry's
    lstm_layer, one primitive with its backward through time."""
    if isinstance(w_hr, NoneType) and not isinstance(b_ih, NoneType):
        return opnn.lstm_layer(x, h, c, w_ih, w_hh, b_ih, b_hh, reverse)
    projected = linear(x, w_ih, b_ih)
    if reverse:
        projected = projected[::-1]
    out, h_n, c_n = lstm_steps(projected, h, c, w_hh, b_hh, w_hr, hidden_size)
    if reverse:
        out = out[::-1]
    return out, h_n, c_n


def gru_direction(x, h, w_ih, w_hh, b_ih, b_hh, reverse, hidden_size):
    """One GRU layer in one direction: (outputs, h_n)."""
    projected = linear(x, w_ih, b_ih)
    if reverse:
        projected = projected[::-1]
    out, h_n = gru_steps(projected, h, w_hh, b_hh, hidden_size)
    if reverse:
        out = out[::-1]
    return out, h_n


def rnn_direction(x, h, w_ih, w_hh, b_ih, b_hh, reverse, nonlinearity):
    """One Elman RNN layer in one direction: (outputs, h_n)."""
    projected = linear(x, w_ih, b_ih)
    if reverse:
        projected = projected[::-1]
    out, h_n = rnn_steps(projected, h, w_hh, b_hh, nonlinearity == "relu")
    if reverse:
        out = out[::-1]
    return out, h_n


def lstm_cell(gates, c, H):
    """ATen's LSTM cell on the gates (i, f, g, o): (h, c)."""
    i, f, g, o = gates[:, :H], gates[:, H : 2 * H], gates[:, 2 * H : 3 * H], gates[:, 3 * H :]
    return composites.lstm_cell(i, f, g, o, c, opnn.sigmoid, np.tanh)


def lstm_steps(projected, h, c, w_hh, b_hh, w_hr, H):
    outs = []
    for t in range(projected.shape[0]):
        gates = h @ w_hh.T + b_hh + projected[t]
        h, c = lstm_cell(gates, c, H)
        if not isinstance(w_hr, NoneType):  # proj_size (known when compiling)
            h = h @ w_hr.T
        outs.append(h)
    return np.stack(outs), h, c


def gru_steps(projected, h, w_hh, b_hh, H):
    """ATen's GRU cell, gates r, z, n: h' = (h - n) z + n."""
    outs = []
    for t in range(projected.shape[0]):
        gi = projected[t]
        gh = h @ w_hh.T + b_hh
        h = composites.gru_cell(
            gi[:, :H],
            gi[:, H : 2 * H],
            gi[:, 2 * H :],
            gh[:, :H],
            gh[:, H : 2 * H],
            gh[:, 2 * H :],
            h,
            opnn.sigmoid,
            np.tanh,
        )
        outs.append(h)
    return np.stack(outs), h


def rnn_steps(projected, h, w_hh, b_hh, relu):
    outs = []
    for t in range(projected.shape[0]):
        preactivation = projected[t] + (h @ w_hh.T + b_hh)
        if relu:  # (known when compiling: one activation is in the loop)
            h = opnn.relu(preactivation)
        else:
            h = np.tanh(preactivation)
        outs.append(h)
    return np.stack(outs), h


# --- losses ----------------------------------------------------------------------------------


def cross_entropy(input, target, *, ignore_index=-100, reduction="mean"):
    """Class indices of a batch of rows (N, C); a target of ignore_index counts for nothing
    and the mean is over the others, as torch's."""
    # the registry's nll_loss (eager's NllLossBackward0) on log_softmax, as eager's; its
    # forward read by the compiler, which differentiates the pick itself
    logp = opnn.log_softmax(input, 1)
    picked = logp[opnn.nll_index(np.shape(logp), target, ignore_index)]
    return opnn.nll_of_picked(logp, picked, target, None, reduction, ignore_index)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """F.pairwise_distance: the registry's vector_norm of x1 - x2 + eps over the last dim,
    as eager's (a Siamese net's distance)."""
    assert _is_float(x1.dtype), "a floating input"  # (an integer one: eager's error)
    return opnn.vector_norm(x1 - x2 + eps, p, -1, keepdim)


def mse_loss(input, target, *, reduction="mean"):
    return opnn.mse_loss(input, target, reduction)


# --- shapes and reductions -------------------------------------------------------------------


def cat(tensors, dim=0):
    return np.concatenate(tensors, axis=dim)


def stack(tensors, dim=0):
    return np.stack(tensors, axis=dim)


def matmul(input, other):
    return input @ other


def bmm(input, mat2):
    assert np.ndim(input) == 3, "bmm's batch of matrices"  # (else: eager's error)
    assert np.ndim(mat2) == 3, "bmm's batch of matrices"
    return input @ mat2


def clamp(input, min=None, max=None):  # noqa: A002 - torch's names
    """The registry's clip (torch's clamp: its gradient passes at the bounds)."""
    assert not (isinstance(min, NoneType) and isinstance(max, NoneType)), "a bound"
    return np.clip(input, min, max)


def clamp_min(input, min):  # noqa: A002
    return np.clip(input, min, None)


def clamp_max(input, max):  # noqa: A002
    return np.clip(input, None, max)


def chunk(input, chunks, dim=0):
    """torch.chunk: pieces of ceil(size / chunks) along dim (the last one shorter, and
    fewer pieces where those fill the dim first)."""
    return tensor_split(input, -(-np.shape(input)[dim] // chunks), dim)


def max_with_indices(input, dim=None, keepdim=False):
    """torch.max(x, dim) / x.max(dim): (values, indices), the first maximum's index (a NaN
    first, as torch's); the values picked at those indices, so that the gradient goes to
    that one element, as eager's (not shared among ties). `x.max()` and `torch.max(x, y)`
    are eager's to do (their gradients share ties): a refusal, the call runs eagerly."""
    assert isinstance(dim, int), "max/min over a dim"
    indices = np.argmax(input, axis=dim, keepdims=True)
    return _picked(input, indices, dim, keepdim)


def min_with_indices(input, dim=None, keepdim=False):
    """torch.min(x, dim) / x.min(dim): (values, indices), as `max_with_indices`."""
    assert isinstance(dim, int), "max/min over a dim"
    indices = np.argmin(input, axis=dim, keepdims=True)
    return _picked(input, indices, dim, keepdim)


def _picked(input, indices, dim, keepdim):
    assert np.ndim(input) > 0, "max/min of a 0-d tensor over a dim"  # (eager's own path)
    values = np.take_along_axis(input, indices, axis=dim)
    if keepdim:
        return values, indices
    return np.squeeze(values, axis=dim), np.squeeze(indices, axis=dim)


def argmax(input, dim=None, keepdim=False):
    """torch.argmax: int64 indices (of the flattened input for dim=None, as torch's)."""
    if isinstance(dim, NoneType):
        assert not keepdim, "argmax(keepdim=True) without a dim"  # (eager's shape)
        return np.argmax(input)
    return np.argmax(input, axis=dim, keepdims=keepdim)


def argmin(input, dim=None, keepdim=False):
    if isinstance(dim, NoneType):
        assert not keepdim, "argmin(keepdim=True) without a dim"
        return np.argmin(input)
    return np.argmin(input, axis=dim, keepdims=keepdim)


def tensor_t(self):
    return self.T


def tensor_view(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], tuple):
        return np.reshape(self, shape[0])
    return np.reshape(self, shape)


def tensor_expand(self, *sizes):
    """Tensor.expand: -1 keeps a dim's size, new dims lead (a ViT's class token
    `self.cls.expand(n, -1, -1)`): the product with ones of the sizes (-1 as 1, which
    broadcasts to the dim's own size), x * 1 being x; the gradient sums back over the
    expanded dims. A size the dim cannot take is numpy's refusal (eager's error)."""
    if len(sizes) == 1 and isinstance(sizes[0], tuple):
        return self * np.ones(_expanded_ones(np.ndim(self), sizes[0]), dtype=self.dtype)
    return self * np.ones(_expanded_ones(np.ndim(self), sizes), dtype=self.dtype)


def _expanded_ones(ndim, sizes):
    # (written without a choice per size: the compiler's shapes of a conditional expression
    # in a comprehension were the dim's own size where the size was given)
    lead = len(sizes) - ndim
    assert lead >= 0, "expand's sizes"  # (else: eager's error)
    return tuple(sizes[:lead]) + tuple([abs(size) for size in sizes[lead:]])


def tensor_size(self, dim=None):
    if isinstance(dim, NoneType):
        return self.shape
    return self.shape[dim]


def tensor_sum(self, dim=None, keepdim=False):
    return np.sum(self, axis=dim, keepdims=keepdim)


def tensor_mean(self, dim=None, keepdim=False):
    return np.mean(self, axis=dim, keepdims=keepdim)


def tensor_unsqueeze(self, dim):
    return np.expand_dims(self, dim)


def tensor_squeeze(self, dim=None):
    return np.squeeze(self, axis=dim)


def tensor_permute(self, *dims):
    return np.transpose(self, dims)


def tensor_transpose(self, dim0, dim1):
    return np.swapaxes(self, dim0, dim1)


def tensor_contiguous(self):
    return self


def tensor_split(self, split_size, dim=0):
    """Tensor.split into pieces of split_size along dim (the last one shorter)."""
    n = self.shape[dim]
    if n % split_size == 0:
        return np.split(self, n // split_size, axis=dim)
    return np.split(self, list(range(split_size, n, split_size)), axis=dim)


def tensor_cumsum(self, dim):
    return np.cumsum(self, axis=dim)


def tensor_masked_fill(self, mask, value):
    return np.where(mask, value, self)


def tensor_pow(self, exponent):
    return self**exponent


def tensor_dim(self):
    return self.ndim


FUNCTIONS = {
    f.__name__: f
    for f in (
        relu,
        sigmoid,
        tanh,
        softmax,
        log_softmax,
        leaky_relu,
        gelu,
        silu,
        linear,
        conv1d,
        conv2d,
        conv_transpose2d,
        max_pool2d,
        avg_pool2d,
        adaptive_avg_pool2d,
        interpolate,
        dropout,
        embedding,
        flatten,
        layer_norm,
        group_norm,
        scaled_dot_product_attention,
        cross_entropy,
        mse_loss,
        pairwise_distance,
        cat,
        stack,
        matmul,
        bmm,
        clamp,
        clamp_min,
        clamp_max,
        chunk,
        arange,
        argmax,
        argmin,
    )
}
# torch.max(x, dim) and torch.min(x, dim): (values, indices)
FUNCTIONS["max"] = max_with_indices
FUNCTIONS["min"] = min_with_indices

METHODS = {
    "t": tensor_t,
    "view": tensor_view,
    "reshape": tensor_view,
    "size": tensor_size,
    "expand": tensor_expand,
    "sum": tensor_sum,
    "mean": tensor_mean,
    "unsqueeze": tensor_unsqueeze,
    "squeeze": tensor_squeeze,
    "permute": tensor_permute,
    "transpose": tensor_transpose,
    "contiguous": tensor_contiguous,
    "pow": tensor_pow,
    "split": tensor_split,
    "masked_fill": tensor_masked_fill,
    "dim": tensor_dim,
    "flatten": flatten,
    "matmul": matmul,
    "bmm": bmm,
    "clamp": clamp,
    "clip": clamp,
    "clamp_min": clamp_min,
    "clamp_max": clamp_max,
    "chunk": chunk,
    "cumsum": tensor_cumsum,
    "relu": relu,
    "sigmoid": sigmoid,
    "tanh": tanh,
    "softmax": softmax,
    "log_softmax": log_softmax,
    "max": max_with_indices,
    "min": min_with_indices,
    "argmax": argmax,
    "argmin": argmin,
}
