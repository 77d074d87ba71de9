"""nn.Transformer, TransformerEncoder(Layer), TransformerDecoder(Layer) against torch.

The modules are built in both libraries with the same arguments (float64), torch's weights
copied in through state_dict; outputs and the gradients wrt the inputs and every parameter
must agree to ~1e-9. Dropout is 0 (its random masks differ) except where only its effect
is compared.
"""

import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(1738)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """torch on one thread: its thread pool only slows such small ops down on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


D, H, FF = 8, 2, 16


def copy_weights(src, dst):
    state = {k: sg.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)
    assert sorted(dst.state_dict()) == sorted(src.state_dict())


def _weights(lib, t):
    return lib.tensor(np.cos(np.arange(t.numel()) * 0.37).reshape(tuple(t.shape)))


def _run(lib, module, inputs, call):
    """(output, grads of the inputs, grads of the parameters) of sum(out * fixed weights)."""
    ts = [lib.tensor(a, requires_grad=True) for a in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = call(lib, module, *ts)
    (out * _weights(lib, out)).sum().backward()
    grads = [t.grad for t in ts] + [p.grad for p in module.parameters()]
    return [out.detach().numpy()] + [None if g is None else g.numpy() for g in grads]


def _assert_close(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if a is None or b is None:
            assert a is None and b is None
            continue
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def _both(make, inputs, call):
    """Build with each library, copy torch's weights into sourcegrad's, compare."""
    torch.manual_seed(0)
    theirs_module = make(torch)
    ours_module = make(sg)
    copy_weights(theirs_module, ours_module)
    theirs = _run(torch, theirs_module, inputs, call)
    ours = _run(sg, ours_module, inputs, call)
    _assert_close(ours, theirs)
    return ours


def _activation(lib, kind):
    return {
        "relu": "relu",
        "gelu": "gelu",
        "F.gelu": lib.nn.functional.gelu,
        "GELU module": lib.nn.GELU(),
        "lambda": lambda x: lib.tanh(x) * 2,
    }[kind]


def _seq(batch_first, n=3, length=5):
    return R.standard_normal((n, length, D) if batch_first else (length, n, D))


def _padding(n, length, lib):
    pad = np.zeros((n, length), bool)
    pad[0, -2:] = True
    pad[1, -1:] = True
    return lib.tensor(pad)


MASKS = ["none", "causal", "causal flag", "bool", "padding", "causal+padding"]


def _encoder_call(mask_kind, length, n, mask_arg="src_mask"):
    """A layer's forward takes src_mask, TransformerEncoder's mask."""

    def call(lib, module, src):
        kw = {}
        if mask_kind in ("causal", "causal+padding"):
            kw[mask_arg] = lib.nn.Transformer.generate_square_subsequent_mask(
                length, dtype=lib.float64
            )
        if mask_kind == "causal flag":
            kw[mask_arg] = lib.nn.Transformer.generate_square_subsequent_mask(
                length, dtype=lib.float64
            )
            kw["is_causal"] = True
        if mask_kind == "bool":
            kw[mask_arg] = lib.tensor(np.triu(np.ones((length, length), bool), 1))
        if mask_kind in ("padding", "causal+padding"):
            kw["src_key_padding_mask"] = _padding(n, length, lib)
        return module(src, **kw)

    return call


@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "norm_first"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq-first", "batch_first"])
def test_encoder_layer(mask_kind, norm_first, batch_first):
    def make(lib):
        return lib.nn.TransformerEncoderLayer(
            D, H, FF, dropout=0.0, norm_first=norm_first, batch_first=batch_first,
            dtype=lib.float64,
        )  # fmt: skip

    _both(make, [_seq(batch_first)], _encoder_call(mask_kind, 5, 3))


@pytest.mark.parametrize("activation", ["relu", "gelu", "F.gelu", "GELU module", "lambda"])
def test_encoder_layer_activations(activation):
    def make(lib):
        layer = lib.nn.TransformerEncoderLayer(
            D, H, FF, dropout=0.0, activation=_activation(lib, activation), dtype=lib.float64
        )
        return layer

    _both(make, [_seq(False)], _encoder_call("none", 5, 3))
    assert (
        torch.nn.TransformerEncoderLayer(
            D, H, activation=_activation(torch, activation)
        ).activation_relu_or_gelu
        == sg.nn.TransformerEncoderLayer(
            D, H, activation=_activation(sg, activation)
        ).activation_relu_or_gelu
    )


def test_unbatched_encoder_and_decoder_layers():
    def enc(lib):
        return lib.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, dtype=lib.float64)

    _both(enc, [R.standard_normal((5, D))], lambda lib, m, x: m(x))

    def dec(lib):
        return lib.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, dtype=lib.float64)

    _both(dec, [R.standard_normal((4, D)), R.standard_normal((6, D))], lambda lib, m, t, s: m(t, s))


def _decoder_call(mask_kind, tgt_len, src_len, n):
    def call(lib, module, tgt, memory):
        kw = {}
        if mask_kind in ("causal", "causal+padding", "causal flag"):
            kw["tgt_mask"] = lib.nn.Transformer.generate_square_subsequent_mask(
                tgt_len, dtype=lib.float64
            )
        if mask_kind == "causal flag":
            kw["tgt_is_causal"] = True
        if mask_kind == "bool":
            kw["memory_mask"] = lib.tensor(R_MASK[:tgt_len, :src_len])
        if mask_kind in ("padding", "causal+padding"):
            kw["tgt_key_padding_mask"] = _padding(n, tgt_len, lib)
            kw["memory_key_padding_mask"] = _padding(n, src_len, lib)
        return module(tgt, memory, **kw)

    return call


R_MASK = np.random.default_rng(5).random((8, 8)) > 0.7
R_MASK[:, 0] = False  # every query attends to something


@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "norm_first"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq-first", "batch_first"])
def test_decoder_layer(mask_kind, norm_first, batch_first):
    def make(lib):
        return lib.nn.TransformerDecoderLayer(
            D, H, FF, dropout=0.0, norm_first=norm_first, batch_first=batch_first,
            dtype=lib.float64, activation="gelu",
        )  # fmt: skip

    tgt = _seq(batch_first, length=4)
    memory = _seq(batch_first, length=6)
    _both(make, [tgt, memory], _decoder_call(mask_kind, 4, 6, 3))


@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding"])
def test_encoder_and_decoder_stacks(mask_kind):
    def make_encoder(lib):
        layer = lib.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, dtype=lib.float64)
        norm = lib.nn.LayerNorm(D, dtype=lib.float64)
        return lib.nn.TransformerEncoder(layer, 2, norm=norm, enable_nested_tensor=False)

    _both(make_encoder, [_seq(False)], _encoder_call(mask_kind, 5, 3, "mask"))

    def make_decoder(lib):
        layer = lib.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, dtype=lib.float64)
        return lib.nn.TransformerDecoder(layer, 3)

    call = _decoder_call(mask_kind, 4, 6, 3)
    _both(make_decoder, [_seq(False, length=4), _seq(False, length=6)], call)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer(batch_first, norm_first):
    def make(lib):
        return lib.nn.Transformer(
            d_model=D, nhead=H, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=FF,
            dropout=0.0, batch_first=batch_first, norm_first=norm_first, dtype=lib.float64,
        )  # fmt: skip

    def call(lib, module, src, tgt):
        mask = module.generate_square_subsequent_mask(4, dtype=lib.float64)
        return module(
            src,
            tgt,
            tgt_mask=mask,
            src_key_padding_mask=_padding(3, 5, lib),
            memory_key_padding_mask=_padding(3, 5, lib),
        )

    _both(make, [_seq(batch_first, length=5), _seq(batch_first, length=4)], call)


def test_state_dict_names_and_repr_are_torchs():
    t = torch.nn.Transformer(D, H, 1, 1, FF)
    s = sg.nn.Transformer(D, H, 1, 1, FF)
    assert list(s.state_dict()) == list(t.state_dict())
    assert [tuple(v.shape) for v in s.state_dict().values()] == [
        tuple(v.shape) for v in t.state_dict().values()
    ]
    layer = sg.nn.TransformerEncoderLayer(D, H, FF)
    assert repr(layer).replace("NonDynamicallyQuantizableLinear", "Linear") == repr(
        torch.nn.TransformerEncoderLayer(D, H, FF)
    ).replace("NonDynamicallyQuantizableLinear", "Linear")


def test_generate_square_subsequent_mask():
    for lib in (sg, torch):
        m = lib.nn.Transformer.generate_square_subsequent_mask(4)
        assert str(m.dtype) == "torch.float32"
    np.testing.assert_array_equal(
        sg.nn.Transformer.generate_square_subsequent_mask(5, dtype=sg.float64).numpy(),
        torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64).numpy(),
    )


@pytest.mark.parametrize(
    "kw",
    [
        {"batch_first": True},
        {"batch_first": False},
        {"batch_first": True, "norm_first": True},
        {"batch_first": True, "activation": "lambda"},
        {"batch_first": True, "nhead": 1},
    ],
    ids=["fast", "seq-first", "norm_first", "custom activation", "odd heads"],
)
def test_encoder_nested_tensor_warning_and_inference_padding(kw):
    """torch's warning when its nested-tensor path cannot be used; in eval mode without
    gradients, where it is used, the padded positions come out as zeros, in both."""
    outputs = []
    for lib in (torch, sg):
        args = dict(kw)
        nhead = args.pop("nhead", H)
        if args.get("activation") == "lambda":
            args["activation"] = _activation(lib, "lambda")
        torch.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(D, nhead, FF, dtype=lib.float64, **args)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            encoder = lib.nn.TransformerEncoder(layer, 2)
        outputs.append([str(w.message) for w in caught])
        if lib is torch:
            theirs_encoder = encoder
        else:
            copy_weights(theirs_encoder, encoder)
    assert outputs[0] == outputs[1]
    src = _seq(kw["batch_first"])
    n = 3
    results = []
    for lib, model in ((torch, theirs_encoder), (sg, encoder)):
        model.eval()
        with lib.no_grad():
            results.append(model(lib.tensor(src), src_key_padding_mask=_padding(n, 5, lib)).numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-9, atol=1e-11)


def test_subclassed_layers_override_blocks():
    """Models subclass the layers and replace their blocks (a pre-norm block with a scaled
    residual, say): the overrides are what runs, in both."""

    def make(lib):
        class ScaledResidual(lib.nn.TransformerEncoderLayer):
            def _ff_block(self, x):
                return 0.5 * super()._ff_block(x)

        layer = ScaledResidual(D, H, FF, dropout=0.0, batch_first=True, dtype=lib.float64)
        return lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    _both(make, [_seq(True)], _encoder_call("causal", 5, 3, "mask"))


def test_errors_as_torch():
    for lib in (torch, sg):
        model = lib.nn.Transformer(D, H, 1, 1, FF)
        with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
            model(lib.zeros(5, 3, D), lib.zeros(4, 2, D))
        with pytest.raises(RuntimeError, match="feature number of src and tgt must be equal"):
            model(lib.zeros(5, 3, D), lib.zeros(4, 3, D + 1))
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
            lib.nn.TransformerEncoderLayer(D, H, activation="tanh")


def test_dropout_in_training_mode_changes_the_output_and_eval_does_not():
    layer = sg.nn.TransformerEncoderLayer(D, H, FF, dropout=0.5, dtype=sg.float64)
    x = sg.tensor(_seq(False))
    a, b = layer(x), layer(x)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())


# --- scaled_dot_product_attention ------------------------------------------------------------


def test_sdpa_dropout_p():
    """dropout_p=1 drops everything (zeros, in both); 0 < p < 1 keeps the expectation."""
    q = R.standard_normal((2, 3, 4))
    for lib in (sg, torch):
        t = lib.tensor(q)
        out = lib.nn.functional.scaled_dot_product_attention(t, t, t, dropout_p=1.0)
        np.testing.assert_array_equal(out.numpy(), np.zeros_like(q))
    t = sg.tensor(np.ones((1, 4000, 1)))
    v = sg.tensor(np.ones((1, 4000, 1)))
    out = sg.nn.functional.scaled_dot_product_attention(t[:, :1], t, v, dropout_p=0.3)
    assert abs(out.item() - 1.0) < 0.1


@pytest.mark.parametrize("lengths", [(4, 4), (3, 6), (6, 3)])
def test_sdpa_is_causal_with_gradients(lengths):
    lq, lk = lengths
    arrays = [
        R.standard_normal((2, 2, lq, 4)),
        R.standard_normal((2, 2, lk, 4)),
        R.standard_normal((2, 2, lk, 3)),
    ]

    def run(lib):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = lib.nn.functional.scaled_dot_product_attention(*ts, is_causal=True)
        (out * _weights(lib, out)).sum().backward()
        return [out.detach().numpy()] + [t.grad.numpy() for t in ts]

    _assert_close(run(sg), run(torch))
