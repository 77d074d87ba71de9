"""sourcegrad.compile of what published models use and the lowering broke on before:
`x.max(dim)` / `torch.max(x, dim)` / `.min` / `.argmax` (PointNet's max over points),
nn.MultiheadAttention with masks (bool and float, need_weights either way, batch_first
either way), nn.TransformerDecoderLayer / TransformerDecoder / Transformer, Tensor.expand
and a local named as a parameter (a ViT's `cls = self.cls.expand(...)`), in-place index
writes on arrays made inside forward, F.pairwise_distance (a Siamese net). Each model is one node whose numbers, dtype,
running statistics and gradients are eager's, in train and eval mode (float64: the
gradients to 1e-6 relative), or it says why it runs eagerly (a graph break's warning) and
gives eager's numbers or eager's error: an integer input to a layer eager refuses (or, for
AvgPool2d, computes otherwise: the compiled code gave zeros), a write into forward's own
argument (eager refuses it on a leaf that requires grad; the compiled code changed the
caller's array), dropout in training mode."""

import warnings

import numpy as np
import pytest

import sourcegrad
import sourcegrad as torch
import sourcegrad.nn as nn
import sourcegrad.nn.functional as F

# --- helpers ---------------------------------------------------------------------------------


def _flat_outputs(out):
    if isinstance(out, tuple):
        return [o for item in out for o in _flat_outputs(item)]
    return [out] if out is not None else []


def _step(model, args):
    model.zero_grad(set_to_none=True)
    outs = _flat_outputs(model(*args))
    loss = 0.0
    for i, o in enumerate(outs):
        if o.dtype.is_floating_point:
            w = np.linspace(-1.0, 1.0 + i, o.numel()).reshape(tuple(o.shape))
            loss = loss + (o * torch.tensor(w.astype(o.detach().numpy().dtype))).sum()
    loss.backward()
    grads = {
        n.replace("_orig_mod.", ""): p.grad.numpy().copy()
        for n, p in model.named_parameters()
        if p.grad is not None
    }
    return outs, grads


def _check_one_node(model, args, training, rtol=1e-6):
    """The compiled model is one node with eager's numbers, dtypes, buffers and gradients."""
    model.train(training)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(1)
    eager_outs, eager_grads = _step(model, args)
    eager_state = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    compiled = sourcegrad.compile(model)
    torch.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a graph break warns
        outs, grads = _step(compiled, args)
    name = type(model).__name__
    for o, e in zip(outs, eager_outs, strict=True):
        if o.dtype.is_floating_point:
            assert type(o.grad_fn).__name__ == f"Compiled{name}Forward0Backward"
        assert o.dtype == e.dtype
        assert tuple(o.shape) == tuple(e.shape)
        np.testing.assert_allclose(o.detach().numpy(), e.detach().numpy(), rtol, 1e-12)
    assert grads.keys() == eager_grads.keys()
    for n, g in grads.items():
        scale = np.abs(eager_grads[n]).max()
        np.testing.assert_allclose(g, eager_grads[n], rtol, 1e-12 + 1e-9 * scale, err_msg=n)
    for n, value in model.state_dict().items():
        np.testing.assert_allclose(value.numpy(), eager_state[n], rtol, 1e-12, err_msg=n)
    return compiled


def _f64(rng, *shape):
    return torch.tensor(rng.normal(size=shape))


# --- 1. max / min / argmax -------------------------------------------------------------------


class Reductions(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 6)
        self.bn = nn.BatchNorm1d(2)

    def forward(self, x):
        h = self.bn(self.fc(x).view(-1, 2, 3))
        a = h.max(2).values + h.min(dim=1)[0].sum(1, keepdim=True)
        v, i = torch.max(h, 1)
        w, j = torch.min(h, 2, keepdim=True)
        b = h.max(dim=1)[0] * 2 + torch.max(h, 2, True).values.sum() + h.min(1).values
        # the indices select (h.argmax, torch.argmin, the pairs' and .indices)
        h = h.masked_fill(h.argmax(2, keepdim=True) == 1, 0.5)
        h = h.masked_fill(torch.argmin(h, 1, keepdim=True) == i.unsqueeze(1), -0.5)
        h = h.masked_fill((h.max(2).indices == 2).unsqueeze(2), 0.25) + (h.argmax(1) == 0).sum()
        return a.sum(1) + v.sum(1) + w.sum((1, 2)) + b.sum(1) + h.sum((1, 2))


@pytest.mark.parametrize("training", [True, False])
def test_max_min_and_argmax_over_a_dim_compile_with_eagers_gradients_at_ties(training):
    torch.manual_seed(0)
    model = Reductions().double()
    with torch.no_grad():  # two equal units: ties, whose gradient goes to the first, as eager's
        model.fc.weight[1] = model.fc.weight[0]
        model.fc.bias[1] = model.fc.bias[0]
    x = torch.tensor(np.round(np.random.default_rng(0).normal(size=(5, 4)), 1))
    _check_one_node(model, (x,), training)


class PointNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 8, 1)
        self.bn1 = nn.BatchNorm1d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        return F.log_softmax(self.fc(x.view(-1, 8)), dim=1)


@pytest.mark.parametrize("training", [True, False])
def test_pointnets_max_over_points_is_one_node(training):
    torch.manual_seed(0)
    x = _f64(np.random.default_rng(0), 3, 3, 7)
    _check_one_node(PointNet().double(), (x,), training)


def test_max_of_two_tensors_or_of_everything_runs_eagerly():
    class Both(nn.Module):
        def forward(self, x, y):
            return torch.max(x, y) + x.max()

    x, y = torch.tensor([1.0, 3.0]), torch.tensor([2.0, 2.0])
    with pytest.warns(UserWarning, match="max/min over a dim"):
        out = sourcegrad.compile(Both())(x, y)
    assert out.numpy().tolist() == [5.0, 6.0]


# --- 2. MultiheadAttention -------------------------------------------------------------------


class Attend(nn.Module):
    def __init__(self, batch_first, need_weights, average, is_causal=False):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=batch_first)
        self.fc = nn.Linear(8, 3)
        self.need_weights, self.average, self.is_causal = need_weights, average, is_causal

    def forward(self, q, kv, attn_mask, padding):
        out, weights = self.attn(
            q,
            kv,
            kv,
            key_padding_mask=padding,
            need_weights=self.need_weights,
            attn_mask=attn_mask,
            average_attn_weights=self.average,
            is_causal=self.is_causal,
        )
        if self.need_weights:
            return self.fc(out), weights
        return self.fc(out)


def _masks(kind, rng, n=2, heads=2, length=4, source=5):
    """(attn_mask, key_padding_mask) of one kind; no row masked whole where the weights are
    returned (eager's are nan there)."""
    keep = rng.random((length, source)) > 0.4
    keep[:, 0] = True
    pad = np.zeros((n, source), dtype=bool)
    pad[0, -2:] = True
    if kind == "none":
        return None, None
    if kind == "bool":
        return torch.tensor(~keep), torch.tensor(pad)
    if kind == "float":
        return torch.tensor(np.where(keep, rng.normal(size=keep.shape), -np.inf)), torch.tensor(
            np.where(pad, -np.inf, 0.0)
        )
    if kind == "attn_only_3d":
        return torch.tensor(rng.normal(size=(n * heads, length, source))), None
    if kind == "padding_only":
        return None, torch.tensor(pad)
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["none", "bool", "float", "attn_only_3d", "padding_only"])
@pytest.mark.parametrize(
    "batch_first,need_weights,average",
    [(False, False, True), (True, True, True), (False, True, False)],
)
def test_multihead_attention_with_masks_is_one_node(kind, batch_first, need_weights, average):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = Attend(batch_first, need_weights, average).double()
    q, kv = (_f64(rng, 4, 2, 8), _f64(rng, 5, 2, 8))
    if batch_first:
        q, kv = q.transpose(0, 1).contiguous(), kv.transpose(0, 1).contiguous()
    attn_mask, padding = _masks(kind, rng)
    _check_one_node(model, (q, kv, attn_mask, padding), training=kind != "none")


def test_a_key_masked_whole_gives_eagers_zeros_and_the_causal_hint_eagers_numbers():
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    x = _f64(rng, 4, 2, 8)
    pad = torch.tensor(np.array([[True] * 4, [False] * 4]))  # batch item 0: every key masked
    _check_one_node(Attend(False, False, True).double(), (x, x, None, pad), training=True)
    causal = nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    model = Attend(False, False, True, is_causal=True).double()
    _check_one_node(model, (x, x, causal, None), training=False)


def test_attention_dropout_in_training_and_mixed_mask_dtypes_run_eagerly():
    torch.manual_seed(0)
    rng = np.random.default_rng(2)
    x = _f64(rng, 4, 2, 8)
    model = Attend(False, True, True).double()
    model.attn.dropout = 0.2
    with pytest.warns(UserWarning, match="MultiheadAttention's dropout in training mode"):
        sourcegrad.compile(model)(x, x, None, None)
    model.attn.dropout = 0.0
    attn_mask, _ = _masks("float", rng, source=4)
    _, padding = _masks("bool", rng, source=4)
    with pytest.warns(UserWarning, match="masks of one dtype"):  # (eager warns it deprecated)
        out = sourcegrad.compile(model)(x, x, attn_mask, padding)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager = model(x, x, attn_mask, padding)
    np.testing.assert_array_equal(out[0].detach().numpy(), eager[0].detach().numpy())


# --- 3. TransformerDecoderLayer, TransformerDecoder, Transformer -----------------------------


class Seq2Seq(nn.Module):
    def __init__(self, dropout=0.0, batch_first=True, norm_first=False):
        super().__init__()
        self.src_emb = nn.Embedding(11, 8)
        self.tgt_emb = nn.Embedding(11, 8)
        self.tf = nn.Transformer(8, 2, 1, 2, 16, dropout, batch_first=batch_first,
                                 norm_first=norm_first)  # fmt: skip
        self.out = nn.Linear(8, 11)
        self.batch_first = batch_first

    def forward(self, src, tgt, tgt_mask, src_pad):
        if not self.batch_first:
            src, tgt = src.t(), tgt.t()
        h = self.tf(
            self.src_emb(src),
            self.tgt_emb(tgt),
            tgt_mask=tgt_mask,
            src_key_padding_mask=src_pad,
            memory_key_padding_mask=src_pad,
        )
        return self.out(h)


def _seq2seq_args(rng):
    pad = torch.tensor(np.array([[False] * 5, [False] * 3 + [True] * 2]))
    return (
        torch.tensor(rng.integers(0, 11, (2, 5))),
        torch.tensor(rng.integers(0, 11, (2, 4))),
        nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64),
        pad,
    )


@pytest.mark.parametrize(
    "batch_first,norm_first", [(True, False), pytest.param(False, True, marks=pytest.mark.long)]
)
def test_a_seq2seq_transformer_is_one_node_in_training(batch_first, norm_first):
    torch.manual_seed(0)
    model = Seq2Seq(0.0, batch_first, norm_first).double()
    _check_one_node(model, _seq2seq_args(np.random.default_rng(0)), training=True)


@pytest.mark.long
def test_a_seq2seq_transformer_with_dropout_is_one_node_in_eval_mode():
    torch.manual_seed(0)
    model = Seq2Seq(0.1, batch_first=False).double()  # (no nested tensor: batch_first False)
    _check_one_node(model, _seq2seq_args(np.random.default_rng(1)), training=False)


class Decode(nn.Module):
    def __init__(self, norm_first, activation):
        super().__init__()
        layer = nn.TransformerDecoderLayer(8, 2, 12, 0.1, activation, norm_first=norm_first)
        self.decoder = nn.TransformerDecoder(layer, 2, nn.LayerNorm(8))
        self.layer = nn.TransformerDecoderLayer(8, 4, 12, 0.0, batch_first=True)

    def forward(self, tgt, memory, tgt_mask, memory_mask, memory_padding):
        h = self.decoder(
            tgt, memory, tgt_mask, memory_mask=memory_mask, memory_key_padding_mask=memory_padding
        )
        return self.layer(h.transpose(0, 1), memory.transpose(0, 1), tgt_is_causal=False)


@pytest.mark.parametrize(
    "norm_first,activation",
    [(False, "relu"), pytest.param(True, "gelu", marks=pytest.mark.long)],
)
def test_a_transformer_decoder_with_masks_is_one_node_in_eval_mode(norm_first, activation):
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    model = Decode(norm_first, activation).double()
    tgt_mask = torch.tensor(np.triu(np.ones((4, 4), dtype=bool), 1))
    memory_mask = torch.tensor(rng.normal(size=(4, 5)))
    padding = torch.tensor(np.where(rng.random((2, 5)) > 0.7, -np.inf, 0.0))
    args = (_f64(rng, 4, 2, 8), _f64(rng, 5, 2, 8), tgt_mask, memory_mask, padding)
    _check_one_node(model, args, training=False)


def test_a_decoders_dropout_in_training_runs_eagerly_with_eagers_draws():
    torch.manual_seed(0)
    rng = np.random.default_rng(4)
    model = Decode(False, "relu").double()
    args = (_f64(rng, 4, 2, 8), _f64(rng, 5, 2, 8), None, None, None)
    torch.manual_seed(5)
    eager = model(*args)
    torch.manual_seed(5)
    with pytest.warns(UserWarning, match="TransformerDecoderLayer's dropout in training mode"):
        out = sourcegrad.compile(model)(*args)
    np.testing.assert_array_equal(out.detach().numpy(), eager.detach().numpy())


def test_an_encoders_padding_mask_in_eval_mode_runs_eagerly():
    # (eager's encoder may run a padded batch as a nested tensor there: zeros at the pads)
    torch.manual_seed(0)
    model = Encode(batch_first=True).double().eval()
    x = _f64(np.random.default_rng(5), 2, 4, 8)
    pad = torch.tensor(np.array([[False] * 4, [False, False, True, True]]))
    with pytest.warns(UserWarning, match="nested tensor"):
        out = sourcegrad.compile(model)(x, None, pad)
    np.testing.assert_array_equal(out.detach().numpy(), model(x, None, pad).detach().numpy())


class Encode(nn.Module):
    def __init__(self, batch_first=False):
        super().__init__()
        layer = nn.TransformerEncoderLayer(8, 2, 12, 0.0, batch_first=batch_first)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=batch_first)

    def forward(self, x, mask, padding):
        return self.encoder(x, mask=mask, src_key_padding_mask=padding)


@pytest.mark.parametrize("training", [True, False])
def test_a_transformer_encoder_with_masks_is_one_node(training):
    torch.manual_seed(0)
    rng = np.random.default_rng(6)
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    padding = torch.tensor(np.where(np.array([[0, 0, 0, 1], [0, 0, 0, 0]]), -np.inf, 0.0))
    _check_one_node(Encode().double(), (_f64(rng, 4, 2, 8), mask, padding), training)


# --- 4. integer inputs to layers -------------------------------------------------------------

_INTEGERS = torch.tensor(np.arange(2 * 3 * 6 * 6).reshape(2, 3, 6, 6))


@pytest.mark.parametrize(
    "make,x",
    [
        (lambda: nn.Conv2d(3, 2, 3), _INTEGERS),
        (lambda: nn.Conv1d(3, 2, 3), _INTEGERS[:, :, 0]),
        (lambda: nn.ConvTranspose2d(3, 2, 3), _INTEGERS),
        (lambda: nn.AvgPool2d(2), _INTEGERS),
        (lambda: nn.AdaptiveAvgPool2d(1), _INTEGERS),
        (lambda: nn.AdaptiveAvgPool2d(2), _INTEGERS),
        (lambda: nn.Upsample(scale_factor=2), _INTEGERS),
        (lambda: nn.MaxPool2d(2), _INTEGERS),
        (lambda: nn.Linear(6, 2), _INTEGERS),
        (lambda: nn.LayerNorm(6), _INTEGERS),
        (lambda: nn.GroupNorm(1, 3), _INTEGERS),
        (lambda: nn.BatchNorm2d(3), _INTEGERS),
        (lambda: nn.BatchNorm2d(3).eval(), _INTEGERS),
        (lambda: nn.Conv2d(3, 2, 3), _INTEGERS.double()),
    ],
)
def test_an_integer_input_gives_eagers_error_or_numbers(make, x):
    def outcome(f):
        try:
            y = f(x)
        except Exception as exc:  # noqa: BLE001 - the error is what is compared
            return type(exc), str(exc)
        return y.dtype, y.numpy().tolist()

    torch.manual_seed(0)
    module = make()
    eager = outcome(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = outcome(sourcegrad.compile(module))
    assert compiled == eager


def test_avg_pool_of_integers_gave_zeros_compiled():
    x = _INTEGERS
    with pytest.warns(UserWarning, match="a floating input"):
        out = sourcegrad.compile(nn.AvgPool2d(2))(x)
    assert out.dtype == torch.int64
    assert out.flatten()[:4].tolist() == [3, 5, 7, 15]  # (compiled: [0, 0, 0, 0])


# --- 5. in-place index writes ----------------------------------------------------------------


class Writes(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.g = nn.Linear(4, 2)

    def forward(self, x, mask):
        y = self.fc(x)
        y[:, 0] = 0
        out = self.fc(x) * 2
        out[mask] = 3.0
        z = self.fc(x) + 1.0
        z[..., :2] += self.g(x)
        return y + out + z


@pytest.mark.parametrize("training", [True, False])
def test_index_writes_on_arrays_made_in_forward_are_one_node(training):
    torch.manual_seed(0)
    rng = np.random.default_rng(7)
    mask = torch.tensor(rng.random((3, 4)) > 0.5)
    _check_one_node(Writes().double(), (_f64(rng, 3, 4), mask), training)


class WriteInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = x.view(-1, 4)  # (a view of the caller's tensor)
        y[:, 0] = 0
        return self.fc(x)


def test_a_write_into_forwards_argument_runs_eagerly():
    torch.manual_seed(0)
    model = WriteInput()
    x = torch.ones(3, 4)
    with pytest.warns(UserWarning, match="in-place write to an argument"):
        out = sourcegrad.compile(model)(x)
    assert x.numpy()[:, 0].tolist() == [0.0, 0.0, 0.0]  # eager's: the caller's tensor changed
    np.testing.assert_array_equal(out.detach().numpy(), model(x).detach().numpy())
    leaf = torch.ones(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        sourcegrad.compile(model)(leaf)  # eager's error (compiled: the leaf changed, silently)
    assert leaf.detach().numpy().min() == 1.0


class WriteParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))

    def forward(self, x):
        self.w[0] = 2.0
        return x * self.w


def test_a_write_into_a_parameter_runs_eagerly():
    with pytest.warns(UserWarning, match=r"in-place write to self\.w"):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            sourcegrad.compile(WriteParameter())(torch.ones(3))


# --- published-style models ------------------------------------------------------------------


class ViT(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.proj = nn.Conv2d(3, d, 4, 4)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, 5, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, 2, 16, 0.0, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 4)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)
        cls = self.cls.expand(x.shape[0], -1, -1)  # (a local named as the parameter)
        x = torch.cat((cls, x), dim=1) + self.pos
        return self.head(self.norm(self.enc(x))[:, 0])


class CharGPT(nn.Module):
    def __init__(self, d=8, T=6):
        super().__init__()
        self.tok = nn.Embedding(11, d)
        self.key = nn.Linear(d, d, bias=False)
        self.query = nn.Linear(d, d, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(T, T)))
        self.head = nn.Linear(d, 11)

    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx)
        k, q = self.key(x), self.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        return self.head(F.softmax(wei, dim=-1) @ x)


class Siamese(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 4, 3), nn.ReLU(inplace=True), nn.MaxPool2d(2), nn.Conv2d(4, 8, 3)
        )
        self.fc = nn.Sequential(nn.Linear(8, 16), nn.ReLU(inplace=True), nn.Linear(16, 8))

    def forward_once(self, x):
        out = self.cnn(x)
        return self.fc(out.view(out.size()[0], -1))

    def forward(self, a, b):
        return F.pairwise_distance(self.forward_once(a), self.forward_once(b))


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("cls", [ViT, CharGPT, Siamese])
def test_published_style_models_are_one_node(cls, training):
    torch.manual_seed(0)
    rng = np.random.default_rng(8)
    if cls is ViT:
        model, args = ViT().double(), (_f64(rng, 2, 3, 8, 8),)
    elif cls is CharGPT:
        model, args = CharGPT().double(), (torch.tensor(rng.integers(0, 11, (2, 6))),)
    else:
        model, args = Siamese().double(), (_f64(rng, 2, 1, 8, 8), _f64(rng, 2, 1, 8, 8))
    _check_one_node(model, args, training)


def test_a_none_argument_is_a_constant_of_the_code():
    # (an LSTM's hx=None: zeros, as without it; a mask None: `mask is None` decided while
    # compiling)
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4).double()
    x = _f64(np.random.default_rng(9), 5, 2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, (h, c) = sourcegrad.compile(lstm)(x, None)
    assert type(out.grad_fn).__name__ == "CompiledLSTMForward0Backward"
    eager, (eh, ec) = lstm(x, None)
    np.testing.assert_allclose(out.detach().numpy(), eager.detach().numpy(), 1e-12, 1e-12)
    np.testing.assert_allclose(c.detach().numpy(), ec.detach().numpy(), 1e-12, 1e-12)


def test_compiled_multihead_attention_matches_torch():
    real = pytest.importorskip("torch")
    torch.manual_seed(0)
    rng = np.random.default_rng(10)
    model = Attend(True, True, False).double()
    q, kv = _f64(rng, 2, 4, 8), _f64(rng, 2, 5, 8)
    attn_mask, padding = _masks("bool", rng)
    out, weights = sourcegrad.compile(model)(q, kv, attn_mask, padding)
    twin = real.nn.MultiheadAttention(8, 2, batch_first=True, dtype=real.float64)
    twin.load_state_dict({k: real.tensor(v.numpy()) for k, v in model.attn.state_dict().items()})
    t_out, t_weights = twin(
        real.tensor(q.numpy()),
        real.tensor(kv.numpy()),
        real.tensor(kv.numpy()),
        key_padding_mask=real.tensor(padding.numpy()),
        attn_mask=real.tensor(attn_mask.numpy()),
        average_attn_weights=False,
    )
    fc = model.fc
    t_out = t_out.detach().numpy() @ fc.weight.detach().numpy().T + fc.bias.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), t_out, 1e-10, 1e-12)
    np.testing.assert_allclose(weights.detach().numpy(), t_weights.detach().numpy(), 1e-10, 1e-12)
