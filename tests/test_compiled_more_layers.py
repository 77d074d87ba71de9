"""sourcegrad.compile of models in the styles people publish, beyond the basic layers: a
ResNet's blocks inside Sequentials with average pools, a DCGAN generator (transposed
convolutions, batch norm, ReLU(inplace=True)), attention by chunk and
scaled_dot_product_attention, a seq2seq decoder's bmm, clamps, GroupNorm, cumsum, a
U-Net's upsampling (Upsample, UpsamplingBilinear2d, F.interpolate) and a TransformerEncoder
(post- and pre-norm layers, relu and gelu, batch first or not). Each
compiles to one node (no graph break) whose numbers are eager's, in train and eval mode.

And the hooks of a layer inside a Sequential: the generated code would skip them, so such a
model runs eagerly (it gave the numbers without the hook, silently)."""

import warnings

import numpy as np
import pytest

import sourcegrad
import sourcegrad as torch
import sourcegrad.nn as nn
import sourcegrad.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return F.relu(out)


class SmallResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 16, 2))
        self.pool = nn.AvgPool2d(2, ceil_mode=True, count_include_pad=False)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer1(out)
        side = F.avg_pool2d(out, out.size(3)).view(out.size(0), -1)
        return self.head(self.pool(out)) + side.sum(1, keepdim=True)


class Generator(nn.Module):  # DCGAN's
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(8, 16, 4, 1, 0, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(True),
            nn.ConvTranspose2d(16, 8, 4, 2, 1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(True),
            nn.ConvTranspose2d(8, 3, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Attention(nn.Module):
    def __init__(self, d=16, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm = nn.GroupNorm(2, d)

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(B, T, self.heads, C // self.heads).permute(0, 2, 1, 3)
        k = k.reshape(B, T, self.heads, C // self.heads).permute(0, 2, 1, 3)
        v = v.reshape(B, T, self.heads, C // self.heads).permute(0, 2, 1, 3)
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        masked = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3)
        y = (causal + masked).permute(0, 2, 1, 3).reshape(B, T, C)
        y = self.proj(y)
        return self.norm(y.transpose(1, 2)).transpose(1, 2).cumsum(1)


class AttnDecoder(nn.Module):  # the seq2seq tutorial's attention step
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(12, 8)
        self.attn = nn.Linear(16, 10)
        self.combine = nn.Linear(16, 8)

    def forward(self, token, hidden, encoder_outputs):
        embedded = self.emb(token).view(1, 1, -1)
        weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
        applied = torch.bmm(weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
        out = torch.cat((embedded[0], applied[0]), 1)
        out = self.combine(out).clamp(min=-0.5, max=0.5) + torch.clip(out, -0.2, 0.3).sum()
        return out.clamp_min(-0.4) * hidden[0].clamp_max(hidden[0].mean())


class Decoder(nn.Module):  # a U-Net's upsampling path
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.GroupNorm(4, 8)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.smooth = nn.UpsamplingBilinear2d(scale_factor=1.5)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        h = self.smooth(self.up(F.silu(self.norm(self.conv(x)))))
        h = F.interpolate(h, size=(5, 7), mode="bilinear", align_corners=False)
        return self.out(h)


class EncoderClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.pre_norm = nn.TransformerEncoderLayer(16, 4, 24, activation="gelu", norm_first=True)
        self.fc = nn.Linear(16, 3)

    def forward(self, tokens):
        h = self.encoder(self.emb(tokens))
        h = self.pre_norm(h.transpose(0, 1)).transpose(0, 1)  # (sequence first)
        return self.fc(h.mean(dim=1))


def _inputs(rng):
    def t(*shape):
        return torch.tensor(rng.normal(size=shape).astype(np.float32))

    mask = torch.tensor(rng.random((5, 5)) > 0.3)
    mask[2] = False  # a row masked whole: zeros, as torch's
    return {
        SmallResNet: (t(2, 3, 9, 9),),
        Generator: (t(2, 8, 1, 1),),
        Attention: (t(2, 5, 16), mask),
        AttnDecoder: (torch.tensor([3]), t(1, 1, 8), t(10, 8)),
        Decoder: (t(2, 3, 4, 3),),
        EncoderClassifier: (torch.tensor(rng.integers(0, 20, (2, 6))),),
    }


def _step(model, args):
    model.zero_grad(set_to_none=True)
    out = model(*args)
    weights = torch.tensor(np.linspace(-1.0, 1.0, out.numel()).astype(np.float32))
    (out * weights.reshape(out.shape)).sum().backward()
    grads = {
        n.replace("_orig_mod.", ""): p.grad.numpy().copy() for n, p in model.named_parameters()
    }
    return out, grads


@pytest.mark.parametrize(
    "cls", [SmallResNet, Generator, Attention, AttnDecoder, Decoder, EncoderClassifier]
)
@pytest.mark.parametrize("training", [True, False])
def test_published_style_models_compile_to_one_node_with_eagers_numbers(cls, training):
    torch.manual_seed(0)
    model = cls()
    if cls is EncoderClassifier and training:
        model.pre_norm.dropout.p = model.pre_norm.dropout1.p = model.pre_norm.dropout2.p = 0.0
        model.pre_norm.self_attn.dropout = 0.0
    args = _inputs(np.random.default_rng(0))[cls]
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model.train(training)
    eager_out, eager_grads = _step(model, args)
    eager_state = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    compiled = sourcegrad.compile(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a graph break warns
        out, grads = _step(compiled, args)
    assert type(out.grad_fn).__name__ == f"Compiled{cls.__name__}Forward0Backward"
    assert out.dtype == eager_out.dtype
    np.testing.assert_allclose(out.detach().numpy(), eager_out.detach().numpy(), 1e-5, 1e-6)
    assert grads.keys() == eager_grads.keys()
    for name, g in grads.items():  # (float32: sums in another order, to its precision)
        scale = np.abs(eager_grads[name]).max()
        np.testing.assert_allclose(g, eager_grads[name], 1e-4, 1e-5 * scale, err_msg=name)
    for name, value in model.state_dict().items():  # running statistics as eager's
        np.testing.assert_allclose(value.numpy(), eager_state[name], 1e-5, 1e-6, err_msg=name)


def test_the_generator_matches_torch():
    real = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = Generator()
    initial = {
        k.replace("main.", "", 1): real.tensor(v.numpy()) for k, v in model.state_dict().items()
    }
    (z,) = _inputs(np.random.default_rng(1))[Generator]
    out, grads = _step(sourcegrad.compile(model), (z,))
    twin = real.nn.Sequential(
        real.nn.ConvTranspose2d(8, 16, 4, 1, 0, bias=False),
        real.nn.BatchNorm2d(16),
        real.nn.ReLU(True),
        real.nn.ConvTranspose2d(16, 8, 4, 2, 1, bias=False),
        real.nn.BatchNorm2d(8),
        real.nn.ReLU(True),
        real.nn.ConvTranspose2d(8, 3, 4, 2, 1, bias=False),
        real.nn.Tanh(),
    )
    twin.load_state_dict(initial)
    tout = twin(real.tensor(z.numpy()))
    weights = real.tensor(np.linspace(-1.0, 1.0, tout.numel()).astype(np.float32))
    (tout * weights.reshape(tout.shape)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), 1e-4, 1e-5)
    for (name, g), p in zip(grads.items(), twin.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), 1e-3, 1e-5, err_msg=name)
    for name, value in model.state_dict().items():  # the running statistics after the step
        theirs = twin.state_dict()[name.replace("main.", "", 1)].numpy()
        np.testing.assert_allclose(value.numpy(), theirs, 1e-5, 1e-6, err_msg=name)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))

    def forward(self, x):
        return self.seq(x)


def test_a_hook_on_a_layer_inside_a_sequential_runs_eagerly():
    torch.manual_seed(0)
    model = Outer()
    compiled = sourcegrad.compile(model)
    x = torch.ones(2, 3)
    before = compiled(x).sum().item()
    assert before == model(x).sum().item()
    model.seq[0].register_forward_hook(lambda module, args, out: out * 10)
    with pytest.warns(UserWarning, match="the hooks of a Linear"):
        hooked = compiled(x).sum().item()  # (added after compiling: made again, and breaks)
    assert hooked == model(x).sum().item() != before


def test_an_inplace_activation_on_a_sequentials_own_input_stays_eager():
    # (the caller's tensor is changed in place, as eager changes it)
    model = nn.Sequential(nn.ReLU(inplace=True), nn.Linear(3, 2))
    x = torch.tensor([[-1.0, 2.0, -3.0]])
    with pytest.warns(UserWarning, match=r"ReLU\(inplace=True\)"):
        sourcegrad.compile(model)(x)
    assert x.numpy().tolist() == [[0.0, 2.0, 0.0]]


class TopLevelEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(5, 3))

    def forward(self, idx):
        return torch.embedding(self.weight, idx) * 2 + F.embedding(idx, self.weight)


def test_torchs_top_level_spelling_with_other_positions_is_not_lowered_as_functionals():
    # torch.embedding(weight, indices) is F.embedding(input, weight) the other way round
    model = TopLevelEmbedding()
    idx = torch.tensor([0, 3, 3])
    with pytest.warns(UserWarning, match="torch.embedding"):
        out = sourcegrad.compile(model)(idx)
    np.testing.assert_array_equal(out.detach().numpy(), model(idx).detach().numpy())


def test_an_encoder_layers_dropout_in_training_mode_runs_eagerly():
    torch.manual_seed(0)
    model = EncoderClassifier()  # (pre_norm has torch's default dropout, 0.1)
    (tokens,) = _inputs(np.random.default_rng(0))[EncoderClassifier]
    with pytest.warns(UserWarning, match="TransformerEncoderLayer's dropout in training mode"):
        sourcegrad.compile(model)(tokens)


class Linear(nn.Module):  # a user's module named as nn's, returning its input
    def forward(self, x):
        return x


def test_an_inplace_activation_after_a_users_module_of_a_layers_name_stays_eager():
    model = nn.Sequential(Linear(), nn.ReLU(inplace=True))
    x = torch.tensor([[-1.0, 2.0, -3.0]])
    with pytest.warns(UserWarning, match=r"ReLU\(inplace=True\)"):
        sourcegrad.compile(model)(x)
    assert x.numpy().tolist() == [[0.0, 2.0, 0.0]]  # (eager's: the caller's tensor changed)
