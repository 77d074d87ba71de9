"""The nn layers a rewritten forward calls, as source text (`module`'s rewriting).

`layer_call(module, leaf, args, t)` gives the numpy call computing `module(*args)` for
the layers known here (`_lowering.linear(x, fc1_weight, fc1_bias)`; `args` and the
result are source texts; `leaf(name)` names the module's parameter or buffer `name`),
or None for any other module; what it cannot compile raises `GraphBreak`. For nn.RNN,
nn.LSTM and nn.GRU it first writes a function of that module into the Translation `t`
(`recurrence`): layers and directions unrolled as straight-line calls of
`lowering.*_direction`, each with its loop over time.

Imports nothing of sourcegrad at import time (the nn classes when called).
"""

from __future__ import annotations

import functools


class GraphBreak(Exception):
    """A construct the rewriting cannot compile: the call runs eagerly. `where`: the user's
    (file, line) it stands at, where the rewriting knows it (the warning points there)."""

    where: tuple | None = None


def layer_call(module, leaf, args, t, input_is_fresh=False):
    """Source text of the numpy call computing `module(*args)` (args: source texts), or None
    when the module is not one of the layers known here. `leaf(name)` is the argument name
    of the module's parameter or buffer `name` ("None" where it is None); what the code is
    made for goes to the Translation `t` (`guard`, `rng`, `stateful`). `input_is_fresh`:
    the input is an array only this call reads (a Sequential's layer's result), so a
    layer's `inplace=True` changes nothing anyone else sees (DCGAN's BatchNorm, ReLU(True))."""
    cls = type(module)
    write = _writers().get(cls)
    if write is None:
        return None
    if has_hooks(module):  # (the generated code would skip them: a Sequential's children)
        raise GraphBreak(f"the hooks of a {cls.__name__}")
    if getattr(module, "inplace", False) and not input_is_fresh:
        raise GraphBreak(f"{cls.__name__}(inplace=True)")
    return write(module, leaf, args, t)


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


def _encoder(module, leaf, args, t):
    """nn.TransformerEncoder called on its input alone: its layers, then its norm."""
    if len(args) > 1:
        raise GraphBreak("TransformerEncoder called with masks")
    from .. import nn

    x = args[0]
    for i, layer in enumerate(module.layers):
        if type(layer) is not nn.TransformerEncoderLayer:  # (a subclass has its own forward)
            raise GraphBreak(f"a {type(layer).__name__} in a TransformerEncoder")
        layer_leaf = functools.partial(_child_leaf, leaf, f"layers.{i}")
        x = layer_call(layer, layer_leaf, [x], t)
    if module.norm is not None:
        x = layer_call(module.norm, functools.partial(_child_leaf, leaf, "norm"), [x], t)
        if x is None:
            raise GraphBreak(f"a {type(module.norm).__name__} as a TransformerEncoder's norm")
    return x


def _encoder_layer(module, leaf, args, t):
    """nn.TransformerEncoderLayer on its input alone, without dropout (in eval mode, or p = 0)
    and with relu or gelu: `lowering.transformer_encoder_layer`. Anything else (masks, the
    dropout's draws, another activation, its parts with hooks) runs eagerly."""
    from .. import nn

    if len(args) > 1:
        raise GraphBreak("TransformerEncoderLayer called with masks")
    attn = module.self_attn
    parts = (attn, attn.out_proj, module.linear1, module.linear2, module.norm1, module.norm2)
    if any(has_hooks(m) for m in parts + (module.dropout, module.dropout1, module.dropout2)):
        raise GraphBreak("the hooks of a TransformerEncoderLayer's part")
    if not attn._qkv_same_embed_dim or attn.bias_k is not None or attn.add_zero_attn:
        raise GraphBreak("a MultiheadAttention with kdim/vdim, bias_kv or add_zero_attn")
    rates = (attn.dropout, module.dropout.p, module.dropout1.p, module.dropout2.p)
    if module.training and any(p > 0 for p in rates):
        raise GraphBreak("TransformerEncoderLayer's dropout in training mode")
    activation = {id(nn.functional.relu): "relu", id(nn.functional.gelu): "gelu"}.get(
        id(module.activation)
    )
    if activation is None:
        raise GraphBreak(f"TransformerEncoderLayer's activation {module.activation!r}")
    for obj, attr in ((module, "norm_first"), (module, "activation"), (attn, "batch_first"),
                      (attn, "num_heads"), (attn, "dropout")):  # fmt: skip
        t.guard.append((obj, attr, getattr(obj, attr)))
    for part in (module.dropout, module.dropout1, module.dropout2):
        t.guard.append((part, "p", part.p))
    for norm in (module.norm1, module.norm2):
        t.guard.append((norm, "eps", norm.eps))

    def pair(name):
        return f"({leaf(name + '.weight')}, {leaf(name + '.bias')})"

    def norm(name):
        m = getattr(module, name)
        return (
            f"({tuple(m.normalized_shape)!r}, {leaf(name + '.weight')}, "
            f"{leaf(name + '.bias')}, {m.eps!r})"
        )

    attention = (
        f"({leaf('self_attn.in_proj_weight')}, {leaf('self_attn.in_proj_bias')}, "
        f"{leaf('self_attn.out_proj.weight')}, {leaf('self_attn.out_proj.bias')})"
    )
    return (
        f"{L}.transformer_encoder_layer({args[0]}, {attention}, {pair('linear1')}, "
        f"{pair('linear2')}, {norm('norm1')}, {norm('norm2')}, {attn.num_heads!r}, "
        f"{attn.batch_first!r}, {module.norm_first!r}, {activation!r})"
    )


def _recurrent(module, leaf, args, t):
    if len(args) > 2:
        raise GraphBreak(f"{type(module).__name__} called with more than (input, hx)")
    for attr in ("mode", "num_layers", "bidirectional", "batch_first", "dropout"):
        t.guard.append((module, attr, getattr(module, attr)))
    if module.training and module.dropout and module.num_layers > 1:
        t.rng = True
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
