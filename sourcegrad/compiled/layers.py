"""The nn layers a rewritten forward calls, as source text (`module`'s rewriting).

`layer_call(module, leaf, args, t)` gives the numpy call computing `module(*args)` for
the layers known here (`_lowering.linear(x, fc1_weight, fc1_bias)`; `args` and the
result are source texts; `leaf(name)` names the module's parameter or buffer `name`),
or None for any other module; what it cannot compile raises `GraphBreak`. For nn.RNN,
nn.LSTM and nn.GRU it first writes a function of that module into the Translation `t`
(`recurrence`): layers and directions unrolled as straight-line calls of
`lowering.*_direction`, each with its loop over time.

The attention and transformer layers (MultiheadAttention, TransformerEncoder(Layer),
TransformerDecoder(Layer), Transformer) take their masks by keyword: `bound_arguments`
binds a call's texts to the layer's forward, defaults written out; a layer reading an
argument several times (a decoder's memory) is written as a function of its own
(`_function`), each argument's text evaluated once.

Imports nothing of sourcegrad at import time (the nn classes when called).

Why one module: each writer is a few lines turning one nn class's attributes into the
call of its lowering, and they compose (a Sequential's children, a Transformer's encoder
and decoder, their layers): one table (`_writers`) over one set of helpers.
"""

from __future__ import annotations

import functools
import inspect
import math


class GraphBreak(Exception):
    """A construct the rewriting cannot compile: the call runs eagerly. `where`: the user's
    (file, line) it stands at, where the rewriting knows it (the warning points there)."""

    where: tuple | None = None


def layer_call(module, leaf, args, t, input_is_fresh=False, keywords=None):
    """Source text of the numpy call computing `module(*args)` (args: source texts), or None
    when the module is not one of the layers known here. `leaf(name)` is the argument name
    of the module's parameter or buffer `name` ("None" where it is None); what the code is
    made for goes to the Translation `t` (`guard`, `rng`, `stateful`). `input_is_fresh`:
    the input is an array only this call reads (a Sequential's layer's result), so a
    layer's `inplace=True` changes nothing anyone else sees (DCGAN's BatchNorm, ReLU(True)).
    `keywords`: {name: source text} of the call's keyword arguments (`bound_arguments`)."""
    cls = type(module)
    write = _writers().get(cls)
    if write is None:
        return None
    if has_hooks(module):  # (the generated code would skip them: a Sequential's children)
        raise GraphBreak(f"the hooks of a {cls.__name__}")
    if getattr(module, "inplace", False) and not input_is_fresh:
        raise GraphBreak(f"{cls.__name__}(inplace=True)")
    return write(module, leaf, bound_arguments(module, args, keywords or {}), t)


def has_hooks(module):
    """Whether `module` has forward or backward hooks of its own, which only its eager call
    runs. (No generator: a compiled module's call asks this of every module it holds.)"""
    return bool(
        getattr(module, "_forward_hooks", None)
        or getattr(module, "_forward_pre_hooks", None)
        or getattr(module, "_backward_hooks", None)
        or getattr(module, "_backward_pre_hooks", None)
    )


L = "_lowering"  # the lowering module's name in the generated code


@functools.lru_cache(maxsize=1)
def _writers():
    """nn layer class -> the function writing its call (the nn classes, imported when first
    asked: this module imports nothing of sourcegrad at import time)."""
    from .. import nn

    table = {
        nn.Linear: _linear,
        nn.Conv1d: _conv,
        nn.Conv2d: _conv,
        nn.ConvTranspose2d: _conv_transpose2d,
        nn.MaxPool2d: _max_pool2d,
        nn.Dropout: _dropout,
        nn.Flatten: _flatten,
        nn.Embedding: _embedding,
        nn.Identity: lambda module, leaf, args, t: args[0],
        nn.LeakyReLU: _leaky_relu,
        nn.Softmax: _softmax,
        nn.LogSoftmax: _softmax,
        nn.LayerNorm: _layer_norm,
        nn.GroupNorm: _group_norm,
        nn.AvgPool2d: _avg_pool2d,
        nn.AdaptiveAvgPool2d: _adaptive_avg_pool2d,
        nn.Upsample: _upsample,
        nn.UpsamplingNearest2d: _upsample,
        nn.UpsamplingBilinear2d: _upsample,
        nn.Sequential: _sequential,
        nn.TransformerEncoderLayer: _encoder_layer,
        nn.TransformerEncoder: _encoder,
        nn.MultiheadAttention: _mha,
        nn.TransformerDecoderLayer: _decoder_layer,
        nn.TransformerDecoder: _decoder,
        nn.Transformer: _transformer,
    }
    for cls in (nn.ReLU, nn.Tanh, nn.Sigmoid, nn.GELU, nn.SiLU):
        table[cls] = _activation
    for cls in (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d):
        table[cls] = _batch_norm
    for cls in (nn.RNN, nn.LSTM, nn.GRU):
        table[cls] = _recurrent
    return table


def _linear(module, leaf, args, t):
    return f"{L}.linear({args[0]}, {leaf('weight')}, {leaf('bias')})"


def _conv(module, leaf, args, t):
    name = type(module).__name__
    if module.padding_mode != "zeros" or isinstance(module.padding, str):
        raise GraphBreak(
            f"{name}(padding={module.padding!r}, padding_mode={module.padding_mode!r})"
        )
    fn = "conv2d" if name == "Conv2d" else "conv1d"
    one = (lambda v: v[0]) if name == "Conv1d" else tuple
    return (
        f"{L}.{fn}({args[0]}, {leaf('weight')}, {leaf('bias')}, {one(module.stride)!r}, "
        f"{one(module.padding)!r}, {one(module.dilation)!r}, {module.groups!r})"
    )


def _conv_transpose2d(module, leaf, args, t):
    if len(args) > 1:
        raise GraphBreak("ConvTranspose2d called with an output_size")
    return (
        f"{L}.conv_transpose2d({args[0]}, {leaf('weight')}, {leaf('bias')}, "
        f"{tuple(module.stride)!r}, {tuple(module.padding)!r}, "
        f"{tuple(module.output_padding)!r}, {module.groups!r}, {tuple(module.dilation)!r})"
    )


def _max_pool2d(module, leaf, args, t):
    if module.return_indices:
        raise GraphBreak("MaxPool2d(return_indices=True)")
    return (
        f"{L}.max_pool2d({args[0]}, {module.kernel_size!r}, {module.stride!r}, "
        f"{module.padding!r}, {module.dilation!r}, {module.ceil_mode!r})"
    )


def _dropout(module, leaf, args, t):
    if module.training and module.p > 0:
        t.rng = True
    return f"{L}.dropout({args[0]}, {module.p!r}, {module.training!r})"


def _flatten(module, leaf, args, t):
    return f"{L}.flatten({args[0]}, {module.start_dim!r}, {module.end_dim!r})"


def _embedding(module, leaf, args, t):
    if (
        module.max_norm is not None
        or module.padding_idx is not None
        or module.scale_grad_by_freq
        or module.sparse
    ):
        raise GraphBreak("Embedding(padding_idx=, max_norm=, scale_grad_by_freq= or sparse=)")
    return f"{L}.embedding({args[0]}, {leaf('weight')})"


_ACTIVATIONS = {
    "ReLU": "relu",
    "Tanh": "tanh",
    "Sigmoid": "sigmoid",
    "GELU": "gelu",
    "SiLU": "silu",
}


def _activation(module, leaf, args, t):
    name = type(module).__name__
    if name == "GELU" and module.approximate != "none":
        raise GraphBreak("GELU(approximate='tanh')")
    return f"{L}.{_ACTIVATIONS[name]}({args[0]})"


def _leaky_relu(module, leaf, args, t):
    return f"{L}.leaky_relu({args[0]}, {module.negative_slope!r})"


def _softmax(module, leaf, args, t):
    name = type(module).__name__
    if module.dim is None:
        raise GraphBreak(f"{name}(dim=None)")
    fn = "softmax" if name == "Softmax" else "log_softmax"
    return f"{L}.{fn}({args[0]}, {module.dim!r})"


def _layer_norm(module, leaf, args, t):
    return (
        f"{L}.layer_norm({args[0]}, {tuple(module.normalized_shape)!r}, "
        f"{leaf('weight')}, {leaf('bias')}, {module.eps!r})"
    )


def _group_norm(module, leaf, args, t):
    return (
        f"{L}.group_norm({args[0]}, {module.num_groups!r}, {leaf('weight')}, "
        f"{leaf('bias')}, {module.eps!r})"
    )


def _avg_pool2d(module, leaf, args, t):
    return (
        f"{L}.avg_pool2d({args[0]}, {module.kernel_size!r}, {module.stride!r}, "
        f"{module.padding!r}, {module.ceil_mode!r}, {module.count_include_pad!r}, "
        f"{module.divisor_override!r})"
    )


def _adaptive_avg_pool2d(module, leaf, args, t):
    return f"{L}.adaptive_avg_pool2d({args[0]}, {module.output_size!r})"


def _upsample(module, leaf, args, t):
    return (
        f"{L}.interpolate({args[0]}, {module.size!r}, {module.scale_factor!r}, "
        f"{module.mode!r}, {module.align_corners!r}, {module.recompute_scale_factor!r})"
    )


_BATCH_NORM_RANKS = {"BatchNorm1d": (2, 3), "BatchNorm2d": (4, 4), "BatchNorm3d": (5, 5)}


def _batch_norm(module, leaf, args, t):
    for attr in ("momentum", "eps", "track_running_stats"):  # baked into the code
        t.guard.append((module, attr, getattr(module, attr)))
    if module.training or module.running_mean is None:
        tracked = module.training and module.track_running_stats
        t.stateful = t.stateful or tracked
        ranks = _BATCH_NORM_RANKS[type(module).__name__]
        stats = (
            [leaf(n) for n in ("running_mean", "running_var", "num_batches_tracked")]
            if tracked
            else ["None"] * 3
        )
        return (
            f"{L}.batch_norm_train({args[0]}, {', '.join(stats)}, {leaf('weight')}, "
            f"{leaf('bias')}, {module.momentum!r}, {module.eps!r}, {ranks[0]}, {ranks[1]})"
        )
    return (
        f"{L}.batch_norm_eval({args[0]}, {leaf('running_mean')}, "
        f"{leaf('running_var')}, {leaf('weight')}, {leaf('bias')}, {module.eps!r})"
    )


def bound_arguments(module, args, keywords):
    """The source texts of every argument of `module(*args, **keywords)` in its forward's
    order, defaults (None, True, False) written out: the attention and transformer layers,
    called with masks by keyword. Another layer called with keywords is a graph break."""
    if type(module) not in _keyword_layers():
        if keywords:
            raise GraphBreak(f"keyword arguments to a {type(module).__name__}")
        return args
    signature = inspect.signature(type(module).forward)
    try:
        bound = signature.bind(
            None, *map(_Text, args), **{k: _Text(v) for k, v in keywords.items()}
        )
    except TypeError as exc:  # (eager raises it)
        raise GraphBreak(f"{type(module).__name__}'s arguments ({exc})") from None
    bound.apply_defaults()
    texts = []
    for value in list(bound.arguments.values())[1:]:
        if not isinstance(value, _Text) and not isinstance(value, (bool, type(None))):
            raise GraphBreak(f"{type(module).__name__}'s default {value!r}")
        texts.append(value.text if isinstance(value, _Text) else repr(value))
    return texts


class _Text:
    """A source text among a call's arguments (apart from a default's value)."""

    def __init__(self, text):
        self.text = text


@functools.lru_cache(maxsize=1)
def _keyword_layers():
    from .. import nn

    return frozenset(
        {
            nn.MultiheadAttention,
            nn.TransformerEncoderLayer,
            nn.TransformerEncoder,
            nn.TransformerDecoderLayer,
            nn.TransformerDecoder,
            nn.Transformer,
        }
    )


def _static_flag(text, what):
    """An is_causal argument written as a constant (the rewriting decides with it), else a
    graph break."""
    if text not in ("None", "True", "False"):
        raise GraphBreak(f"{what} given as {text} (not a constant)")
    return text


def _function(t, module, leaf, inputs, given, write):
    """The call, on the source texts `given`, of a function written into the Translation
    `t` computing `write(inner_leaf)` (its body's source text) on its arguments `inputs`
    (names) and the module's leaves that the text names: a layer whose input is read
    several times (a decoder's memory, a mask: each argument's text evaluated once). An
    argument given as None is a constant of the function (`mask is None` decided while
    compiling), not one of its parameters."""
    passed = {}

    def inner(name):
        outer = leaf(name)
        if outer == "None":
            return "None"
        if name not in passed:
            passed[name] = (f"leaf_{len(passed)}", outer)
        return passed[name][0]

    body = write(inner)
    name = f"{type(module).__name__}_{len(t.chunks)}"
    taken = [(n, text) for n, text in zip(inputs, given, strict=True) if text != "None"]
    nones = "".join(f"    {n} = None\n" for n, text in zip(inputs, given) if text == "None")
    params = [n for n, _ in taken] + [p for p, _ in passed.values()]
    t.chunks.append(f"def {name}({', '.join(params)}):\n{nones}{body}")
    args = [text for _, text in taken] + [outer for _, outer in passed.values()]
    return f"{name}({', '.join(args)})"


def _attention_parts(module, prefix=""):
    """GraphBreak for what the lowering of a MultiheadAttention does not do; guards."""
    if not module._qkv_same_embed_dim or module.bias_k is not None or module.add_zero_attn:
        raise GraphBreak("a MultiheadAttention with kdim/vdim, bias_kv or add_zero_attn")
    if has_hooks(module) or has_hooks(module.out_proj):
        raise GraphBreak("the hooks of a MultiheadAttention or its out_proj")


def _scales(attn):
    """The q scales of eager's need_weights=True and scaled_dot_product_attention paths."""
    head = attn.head_dim
    return (math.sqrt(1.0 / float(head)), 1 / math.sqrt(head))


def _attention_text(leaf, prefix):
    return (
        f"({leaf(prefix + 'in_proj_weight')}, {leaf(prefix + 'in_proj_bias')}, "
        f"{leaf(prefix + 'out_proj.weight')}, {leaf(prefix + 'out_proj.bias')})"
    )


def _guard_attention(t, attn):
    for attr in ("batch_first", "num_heads", "dropout", "embed_dim", "add_zero_attn"):
        t.guard.append((attn, attr, getattr(attn, attr)))


def _mha(module, leaf, args, t):
    """nn.MultiheadAttention (masks bool or float, need_weights either way): the lowering's
    `multi_head_attention`; its dropout in training mode runs eagerly."""
    query, key, value, padding, need_weights, attn_mask, average, is_causal = args
    _attention_parts(module)
    if module.training and module.dropout > 0:
        raise GraphBreak("MultiheadAttention's dropout in training mode")
    _guard_attention(t, module)
    return (
        f"{L}.multi_head_attention({query}, {key}, {value}, {_attention_text(leaf, '')}, "
        f"{module.num_heads!r}, {module.batch_first!r}, {padding}, {need_weights}, "
        f"{attn_mask}, {average}, {is_causal}, {_scales(module)!r})"
    )


def _encoder(module, leaf, args, t):
    """nn.TransformerEncoder: its layers, then its norm; with masks, a function of its own
    (each mask's text read once). Where eager's would pack a padded batch into a nested
    tensor (eval mode, a key padding mask) it runs eagerly."""
    from .. import nn

    src, mask, padding, is_causal = args
    is_causal = _static_flag(is_causal, "TransformerEncoder's is_causal")
    first = module.layers[0] if len(module.layers) else None
    if type(first) is not nn.TransformerEncoderLayer:
        raise GraphBreak("a TransformerEncoder of other layers")
    if padding != "None" and getattr(module, "use_nested_tensor", False) and not first.training:
        raise GraphBreak("TransformerEncoder's key padding mask in eval mode (a nested tensor)")
    t.guard.append((module, "use_nested_tensor", getattr(module, "use_nested_tensor", False)))
    t.guard.append((first, "training", first.training))
    # (a mask equal to the causal one gives the same numbers as is_causal: None is False)
    causal = "True" if is_causal == "True" else "False"

    def write(inner):
        lines = ["    x = src"]
        for i, layer in enumerate(module.layers):
            if type(layer) is not nn.TransformerEncoderLayer:  # (a subclass: its own forward)
                raise GraphBreak(f"a {type(layer).__name__} in a TransformerEncoder")
            layer_leaf = functools.partial(_child_leaf, inner, f"layers.{i}")
            text = layer_call(layer, layer_leaf, ["x", "mask", "padding", causal], t)
            lines.append(f"    x = {text}")
        if module.norm is not None:
            norm_leaf = functools.partial(_child_leaf, inner, "norm")
            text = layer_call(module.norm, norm_leaf, ["x"], t)
            if text is None:
                raise GraphBreak(f"a {type(module.norm).__name__} as a TransformerEncoder's norm")
            lines.append(f"    x = {text}")
        return "\n".join(lines + ["    return x"])

    if mask == "None" and padding == "None" and causal == "False":  # (the layers in a row)
        x = src
        for i, layer in enumerate(module.layers):
            if type(layer) is not nn.TransformerEncoderLayer:
                raise GraphBreak(f"a {type(layer).__name__} in a TransformerEncoder")
            layer_leaf = functools.partial(_child_leaf, leaf, f"layers.{i}")
            x = layer_call(layer, layer_leaf, [x, "None", "None", "False"], t)
        if module.norm is not None:
            x = layer_call(module.norm, functools.partial(_child_leaf, leaf, "norm"), [x], t)
            if x is None:
                raise GraphBreak(f"a {type(module.norm).__name__} as a TransformerEncoder's norm")
        return x
    return _function(t, module, leaf, ["src", "mask", "padding"], [src, mask, padding], write)


def _activation_name(module, what):
    from .. import nn

    activation = {id(nn.functional.relu): "relu", id(nn.functional.gelu): "gelu"}.get(
        id(module.activation)
    )
    if activation is None:
        raise GraphBreak(f"{what}'s activation {module.activation!r}")
    return activation


def _no_dropout(module, rates, what):
    if module.training and any(p > 0 for p in rates):
        # (eager's draws in its order of the attention's and the layer's dropouts: not
        # the compiled dropout's stream)
        raise GraphBreak(f"{what}'s dropout in training mode")


def _encoder_layer(module, leaf, args, t):
    """nn.TransformerEncoderLayer without dropout (in eval mode, or p = 0) and with relu or
    gelu: `lowering.transformer_encoder_layer`, masks bool or float. Anything else (the
    dropout's draws, another activation, its parts with hooks) runs eagerly."""
    x, mask, padding, is_causal = args
    is_causal = _static_flag(is_causal, "TransformerEncoderLayer's is_causal")
    attn = module.self_attn
    parts = (attn, attn.out_proj, module.linear1, module.linear2, module.norm1, module.norm2)
    if any(has_hooks(m) for m in parts + (module.dropout, module.dropout1, module.dropout2)):
        raise GraphBreak("the hooks of a TransformerEncoderLayer's part")
    _attention_parts(attn)
    rates = (attn.dropout, module.dropout.p, module.dropout1.p, module.dropout2.p)
    _no_dropout(module, rates, "TransformerEncoderLayer")
    activation = _activation_name(module, "TransformerEncoderLayer")
    t.guard.append((module, "norm_first", module.norm_first))
    t.guard.append((module, "activation", module.activation))
    _guard_attention(t, attn)
    for part in (module.dropout, module.dropout1, module.dropout2):
        t.guard.append((part, "p", part.p))
    for norm in (module.norm1, module.norm2):
        t.guard.append((norm, "eps", norm.eps))
    text = (
        f"{L}.transformer_encoder_layer({x}, {_attention_text(leaf, 'self_attn.')}, "
        f"{_pair_text(leaf, 'linear1')}, {_pair_text(leaf, 'linear2')}, "
        f"{_norm_text(module, leaf, 'norm1')}, {_norm_text(module, leaf, 'norm2')}, "
        f"{attn.num_heads!r}, {attn.batch_first!r}, {module.norm_first!r}, {activation!r}"
    )
    if mask == "None" and padding == "None" and is_causal in ("None", "False"):
        return text + ")"
    return text + f", {mask}, {padding}, {is_causal == 'True'}, {_scales(attn)!r})"


def _pair_text(leaf, name):
    return f"({leaf(name + '.weight')}, {leaf(name + '.bias')})"


def _norm_text(module, leaf, name):
    m = getattr(module, name)
    return (
        f"({tuple(m.normalized_shape)!r}, {leaf(name + '.weight')}, "
        f"{leaf(name + '.bias')}, {m.eps!r})"
    )


def _decoder_layer(module, leaf, args, t):
    """nn.TransformerDecoderLayer without dropout and with relu or gelu:
    `lowering.transformer_decoder_layer`, masks bool or float."""
    x, memory, tgt_mask, memory_mask, tgt_padding, memory_padding, tgt_causal, memory_causal = args
    tgt_causal = _static_flag(tgt_causal, "TransformerDecoderLayer's tgt_is_causal")
    memory_causal = _static_flag(memory_causal, "TransformerDecoderLayer's memory_is_causal")
    attns = (module.self_attn, module.multihead_attn)
    norms = (module.norm1, module.norm2, module.norm3)
    dropouts = (module.dropout, module.dropout1, module.dropout2, module.dropout3)
    if any(has_hooks(m) for m in (module.linear1, module.linear2) + norms + dropouts):
        raise GraphBreak("the hooks of a TransformerDecoderLayer's part")
    for attn in attns:
        _attention_parts(attn)
        _guard_attention(t, attn)
    if attns[0].num_heads != attns[1].num_heads or attns[0].batch_first != attns[1].batch_first:
        raise GraphBreak("a TransformerDecoderLayer's attentions of other heads or layouts")
    _no_dropout(
        module, [a.dropout for a in attns] + [d.p for d in dropouts], "TransformerDecoderLayer"
    )
    activation = _activation_name(module, "TransformerDecoderLayer")
    t.guard.append((module, "norm_first", module.norm_first))
    t.guard.append((module, "activation", module.activation))
    for part in dropouts:
        t.guard.append((part, "p", part.p))
    for norm in norms:
        t.guard.append((norm, "eps", norm.eps))
    attentions = (
        f"({_attention_text(leaf, 'self_attn.')}, {_attention_text(leaf, 'multihead_attn.')})"
    )
    norm_texts = ", ".join(_norm_text(module, leaf, f"norm{i}") for i in (1, 2, 3))
    causal = (tgt_causal == "True", memory_causal == "True")
    return (
        f"{L}.transformer_decoder_layer({x}, {memory}, {attentions}, "
        f"{_pair_text(leaf, 'linear1')}, {_pair_text(leaf, 'linear2')}, ({norm_texts}), "
        f"{attns[0].num_heads!r}, {attns[0].batch_first!r}, {module.norm_first!r}, "
        f"{activation!r}, ({tgt_mask}, {memory_mask}, {tgt_padding}, {memory_padding}), "
        f"{causal!r}, {_scales(attns[0])!r})"
    )


def _decoder(module, leaf, args, t):
    """nn.TransformerDecoder: its layers (each reading the memory and the masks: a function
    of its own), then its norm."""
    from .. import nn

    tgt, memory, tgt_mask, memory_mask, tgt_padding, memory_padding, tgt_causal, mem_causal = args
    tgt_causal = _static_flag(tgt_causal, "TransformerDecoder's tgt_is_causal")
    mem_causal = _static_flag(mem_causal, "TransformerDecoder's memory_is_causal")
    # (tgt_is_causal=None: eager's detection of a causal mask, whose numbers are the mask's)
    flags = ["True" if tgt_causal == "True" else "False", mem_causal]
    inputs = ["tgt", "memory", "tgt_mask", "memory_mask", "tgt_padding", "memory_padding"]

    def write(inner):
        lines = ["    x = tgt"]
        for i, layer in enumerate(module.layers):
            if type(layer) is not nn.TransformerDecoderLayer:
                raise GraphBreak(f"a {type(layer).__name__} in a TransformerDecoder")
            layer_leaf = functools.partial(_child_leaf, inner, f"layers.{i}")
            text = layer_call(layer, layer_leaf, ["x"] + inputs[1:] + flags, t)
            lines.append(f"    x = {text}")
        if module.norm is not None:
            text = layer_call(module.norm, functools.partial(_child_leaf, inner, "norm"), ["x"], t)
            if text is None:
                raise GraphBreak(f"a {type(module.norm).__name__} as a TransformerDecoder's norm")
            lines.append(f"    x = {text}")
        return "\n".join(lines + ["    return x"])

    given = [tgt, memory, tgt_mask, memory_mask, tgt_padding, memory_padding]
    return _function(t, module, leaf, inputs, given, write)


def _transformer(module, leaf, args, t):
    """nn.Transformer: eager's checks, its encoder, then its decoder on the memory."""
    src, tgt, src_mask, tgt_mask, memory_mask, src_pad, tgt_pad, mem_pad = args[:8]
    src_causal, tgt_causal, mem_causal = args[8:]
    for attr in ("batch_first", "d_model"):
        t.guard.append((module, attr, getattr(module, attr)))
    batch = 0 if module.batch_first else 1
    inputs = ["src", "tgt", "src_mask", "tgt_mask", "memory_mask", "src_pad", "tgt_pad", "mem_pad"]

    def write(inner):
        encoder_leaf = functools.partial(_child_leaf, inner, "encoder")
        decoder_leaf = functools.partial(_child_leaf, inner, "decoder")
        memory = layer_call(
            module.encoder, encoder_leaf, ["src", "src_mask", "src_pad", src_causal], t
        )
        out = layer_call(
            module.decoder,
            decoder_leaf,
            ["tgt", "memory", "tgt_mask", "memory_mask", "tgt_pad", "mem_pad"]
            + [tgt_causal, mem_causal],
            t,
        )
        if memory is None or out is None:
            raise GraphBreak("a Transformer's custom encoder or decoder")
        return (
            # (eager's checks: its error where they fail)
            "    assert np.ndim(src) != 3 or np.shape(src)[%d] == np.shape(tgt)[%d], 'batch'\n"
            "    assert np.shape(src)[-1] == %d, 'd_model'\n"
            "    assert np.shape(tgt)[-1] == %d, 'd_model'\n"
            "    memory = %s\n"
            "    return %s" % (batch, batch, module.d_model, module.d_model, memory, out)
        )

    given = [src, tgt, src_mask, tgt_mask, memory_mask, src_pad, tgt_pad, mem_pad]
    return _function(t, module, leaf, inputs, given, write)


def _recurrent(module, leaf, args, t):
    if len(args) > 2:
        raise GraphBreak(f"{type(module).__name__} called with more than (input, hx)")
    for attr in ("mode", "num_layers", "bidirectional", "batch_first", "dropout"):
        t.guard.append((module, attr, getattr(module, attr)))
    if module.training and module.dropout and module.num_layers > 1:
        t.rng = True
    if len(args) == 2 and args[1] == "None":  # (`lstm(x, None)`: zeros, as without hx)
        args = args[:1]
    name, params = recurrence(module, t, len(args) == 2)
    return f"{name}({', '.join(list(args) + [leaf(p) for p in params])})"


def _sequential(module, leaf, args, t):
    """Each child's call on the last one's result: a layer known here, or a user-defined
    module whose forward is rewritten (`t.user_module_call`: a ResNet's blocks)."""
    x, fresh = args[0], False
    for name, child in module._modules.items():
        child_leaf = functools.partial(_child_leaf, leaf, name)
        text = layer_call(child, child_leaf, [x], t, input_is_fresh=fresh)
        if text is None:
            text = t.user_module_call(child, child_leaf, [x])
        x, fresh = text, type(child) in _writers() and type(child).__name__ in _FRESH_RESULTS
    return x


# layers whose result is a new array, never their input or a view of it (nn's own classes:
# a user's module of the same name may return its input)
_FRESH_RESULTS = frozenset(
    {"Linear", "Conv1d", "Conv2d", "ConvTranspose2d", "LayerNorm", "GroupNorm"}
    | set(_BATCH_NORM_RANKS)
)


def _child_leaf(leaf, child, name):
    return leaf(f"{child}.{name}")


def recurrence(module, t, with_hx):
    """Write the forward of the nn.RNN, nn.LSTM or nn.GRU `module` into the Translation
    `t` as a function of (input[, hx], its parameters): its layers and directions
    unrolled, each direction's time loop a loop (`lowering.*_direction`). Gives the
    function's name and the names of the parameters it takes after the input."""
    lstm = module.mode == "LSTM"
    directions = ("", "_reverse") if module.bidirectional else ("",)
    states = module.num_layers * len(directions)
    hidden = module.hidden_size
    out_size = module.proj_size if lstm and module.proj_size else hidden
    params = [n for n, p in module._parameters.items() if p is not None]

    def given(name):
        if name in params:
            return name
        return "0.0" if name.startswith("bias_hh") else "None"  # (see lstm_direction)

    name = f"{module.mode.split('_')[0].lower()}_{len(t.chunks)}"
    hx = ("hx[0]", "hx[1]") if lstm else ("hx",)
    hx = hx if with_hx else ("None", "None")
    lines = [
        f"def {name}(input, {'hx, ' if with_hx else ''}{', '.join(params)}):",
        f"    x = {L}.recurrence_input(input, {module.batch_first!r}, {module.input_size!r}, "
        "weight_ih_l0)",
        f"    h_0 = {L}.initial_state(input, {hx[0]}, x, {states}, {out_size})",
    ]
    if lstm:
        lines.append(f"    c_0 = {L}.initial_state(input, {hx[1]}, x, {states}, {hidden})")
    h_n, c_n = [], []
    for layer in range(module.num_layers):
        outs = []
        for d, suffix in enumerate(directions):
            k = layer * len(directions) + d
            tag = f"l{layer}{suffix}"
            weights = ", ".join(
                given(f"{kind}_{tag}") for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            )
            reverse = bool(suffix)
            if lstm:
                lines.append(
                    f"    out_{tag}, h_{tag}, c_{tag} = {L}.lstm_direction(x, h_0[{k}], c_0[{k}], "
                    f"{weights}, {given(f'weight_hr_{tag}')}, {reverse}, {hidden})"
                )
            elif module.mode == "GRU":
                lines.append(
                    f"    out_{tag}, h_{tag} = {L}.gru_direction(x, h_0[{k}], {weights}, "
                    f"{reverse}, {hidden})"
                )
            else:
                lines.append(
                    f"    out_{tag}, h_{tag} = {L}.rnn_direction(x, h_0[{k}], {weights}, "
                    f"{reverse}, {module.nonlinearity!r})"
                )
            outs.append(f"out_{tag}")
            h_n.append(f"h_{tag}")
            c_n.append(f"c_{tag}")
        joined = outs[0] if len(outs) == 1 else f"np.concatenate(({', '.join(outs)}), axis=2)"
        lines.append(f"    x = {joined}")
        if module.training and module.dropout and layer < module.num_layers - 1:
            lines.append(f"    x = {L}.dropout(x, {float(module.dropout)!r}, True)")
    lines.append(f"    output = {L}.recurrence_output(input, x, {module.batch_first!r})")
    h_text = f"{L}.final_state(input, ({', '.join(h_n)},))"
    if lstm:
        c_text = f"{L}.final_state(input, ({', '.join(c_n)},))"
        lines.append(f"    return output, ({h_text}, {c_text})")
    else:
        lines.append(f"    return output, {h_text}")
    t.chunks.append("\n".join(lines))
    return name, params
