"""sourcegrad.compile of nn.Modules and torch-style functions: one node whose backward is
generated code; the parameters' .grad equal eager's and torch's; train/eval as torch's;
what cannot be compiled runs eagerly with one warning."""

import inspect
import warnings

import numpy as np
import pytest

import sourcegrad
import sourcegrad as torch
import sourcegrad.nn as nn
import sourcegrad.nn.functional as F


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(4 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = torch.flatten(x, 1)
        x = self.dropout(F.relu(self.fc1(x)))
        return self.fc2(x)


class CharModel(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, 6)
        self.lstm = nn.LSTM(6, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx):
        out, _ = self.lstm(self.embed(idx))
        return self.head(out)


class Block(nn.Module):  # a user-defined submodule, a method and a Sequential
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 5))
        self.scale = 0.5

    def forward(self, x):
        return x + self.scale * self.body(x)


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.out = nn.Linear(5, 3)

    def squash(self, x):
        return x.sigmoid() * 2.0

    def forward(self, x):
        return self.out(self.squash(self.block(x))).log_softmax(dim=1)


def grads(model):
    return [p.grad.numpy().copy() for p in model.parameters()]


def run(model, x, y, loss_fn=F.cross_entropy):
    model.zero_grad()
    out = model(x)
    loss = loss_fn(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    loss.backward()
    return out, loss.item(), grads(model)


def torch_twin(model, make):
    """The same model in real torch, with the same weights."""
    real = pytest.importorskip("torch")
    twin = make(real)
    twin.load_state_dict({k: real.tensor(v.numpy()) for k, v in model.state_dict().items()})
    return real, twin


def test_a_compiled_convnet_is_one_node_with_eager_and_torch_gradients():
    torch.manual_seed(0)
    model = ConvNet()
    compiled = sourcegrad.compile(model)
    x, y = torch.randn(6, 1, 8, 8), torch.tensor([0, 1, 2, 3, 4, 5])
    model.eval()
    out, loss, got = run(compiled, x, y)
    assert type(out.grad_fn).__name__ == "CompiledConvNetForward0Backward"
    assert {type(n).__name__ for n, _ in out.grad_fn.next_functions if n is not None} == {
        "AccumulateGrad"
    }
    _, eager_loss, eager = run(model, x, y)
    assert loss == eager_loss
    for a, b in zip(got, eager):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

    def make(real):
        class Twin(real.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = real.nn.Conv2d(1, 4, 3, padding=1)
                self.fc1 = real.nn.Linear(64, 16)
                self.fc2 = real.nn.Linear(16, 10)

            def forward(self, x):
                x = real.flatten(real.nn.functional.max_pool2d(real.relu(self.conv1(x)), 2), 1)
                return self.fc2(real.relu(self.fc1(x)))

        return Twin()

    real, twin = torch_twin(model, make)
    tout = twin(real.tensor(x.numpy()))
    real.nn.functional.cross_entropy(tout, real.tensor(y.numpy())).backward()
    for a, p in zip(got, twin.parameters()):
        np.testing.assert_allclose(a, p.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_train_mode_draws_eager_dropout_masks_and_eval_turns_them_off():
    torch.manual_seed(0)
    model = ConvNet()
    compiled = sourcegrad.compile(model)
    x, y = torch.randn(6, 1, 8, 8), torch.tensor([0, 1, 2, 3, 4, 5])
    compiled.train()
    assert model.training and model.dropout.training
    torch.manual_seed(3)
    out, loss, got = run(compiled, x, y)
    after = torch.rand(2)  # the generator moved on as eager's would
    torch.manual_seed(3)
    eager_out, eager_loss, eager = run(model, x, y)
    np.testing.assert_array_equal(after.numpy(), torch.rand(2).numpy())
    np.testing.assert_allclose(
        out.detach().numpy(), eager_out.detach().numpy(), rtol=1e-5, atol=1e-6
    )
    for a, b in zip(got, eager):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    compiled.eval()
    first = compiled(x).detach().numpy()
    np.testing.assert_array_equal(first, compiled(x).detach().numpy())
    np.testing.assert_allclose(first, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_compiled_lstm_matches_eager_and_torch():
    torch.manual_seed(0)
    model = CharModel(9, 8)
    compiled = sourcegrad.compile(model)
    idx, tgt = torch.randint(0, 9, (3, 5)), torch.randint(0, 9, (3, 5))
    out, loss, got = run(compiled, idx, tgt)
    assert type(out.grad_fn).__name__ == "CompiledCharModelForward0Backward"
    _, eager_loss, eager = run(model, idx, tgt)
    assert loss == pytest.approx(eager_loss, rel=1e-6)
    for a, b in zip(got, eager):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)

    def make(real):
        class Twin(real.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = real.nn.Embedding(9, 6)
                self.lstm = real.nn.LSTM(6, 8, num_layers=2, batch_first=True)
                self.head = real.nn.Linear(8, 9)

            def forward(self, idx):
                return self.head(self.lstm(self.embed(idx))[0])

        return Twin()

    real, twin = torch_twin(model, make)
    tout = twin(real.tensor(idx.numpy()))
    real.nn.functional.cross_entropy(
        tout.reshape(-1, 9), real.tensor(tgt.numpy()).reshape(-1)
    ).backward()
    for a, p in zip(got, twin.parameters()):
        np.testing.assert_allclose(a, p.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_user_submodules_methods_sequential_and_a_compiled_class():
    torch.manual_seed(0)
    compiled = sourcegrad.compile(Residual)()
    model = compiled._orig_mod
    x, y = torch.randn(4, 5), torch.tensor([0, 1, 2, 0])
    out, loss, got = run(compiled, x, y, F.nll_loss)
    assert type(out.grad_fn).__name__.startswith("CompiledResidual")
    _, eager_loss, eager = run(model, x, y, F.nll_loss)
    assert loss == pytest.approx(eager_loss, rel=1e-6)
    for a, b in zip(got, eager):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    # the parameters are the original's; the state dict's keys are torch's OptimizedModule's
    assert [p is q for p, q in zip(compiled.parameters(), model.parameters())] == [True] * 6
    assert next(iter(compiled.state_dict())) == "_orig_mod.block.body.0.weight"
    assert "def " in compiled.source and "backward" in compiled.source
    model.block.scale = 2.0  # a plain attribute the code was made for: made again
    _, loss2, _ = run(compiled, x, y, F.nll_loss)
    assert loss2 == pytest.approx(run(model, x, y, F.nll_loss)[1], rel=1e-6)


def tanh_layer(x, W, b):
    return torch.tanh(x @ W.t() + b).sum()


def linear_loss(x, W, b, y):
    return F.cross_entropy(torch.relu(F.linear(x, W, b)), y)


def methods_only(x, W):
    return x.matmul(W.t()).tanh().pow(2).mean(dim=1).sum()


@pytest.mark.parametrize("fn", [tanh_layer, linear_loss, methods_only])
def test_torch_style_functions_compile_to_one_node(fn):
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    W = torch.randn(5, 3, requires_grad=True)
    b = torch.randn(5, requires_grad=True)
    args = {
        "tanh_layer": (x, W, b),
        "linear_loss": (x, W, b, torch.tensor([0, 1, 2, 3])),
        "methods_only": (x, W),
    }[fn.__name__]
    compiled = sourcegrad.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no graph break
        out = compiled(*args)
    assert type(out.grad_fn).__name__.startswith("Compiled")
    out.backward()
    got = W.grad.numpy().copy()
    W.grad = None
    fn(*args).backward()
    np.testing.assert_allclose(got, W.grad.numpy(), rtol=1e-5, atol=1e-6)
    real = pytest.importorskip("torch")
    rargs = [real.tensor(a.detach().numpy(), requires_grad=a.requires_grad) for a in args]
    source = {
        "tanh_layer": lambda x, W, b: real.tanh(x @ W.t() + b).sum(),
        "linear_loss": lambda x, W, b, y: real.nn.functional.cross_entropy(
            real.relu(real.nn.functional.linear(x, W, b)), y
        ),
        "methods_only": lambda x, W: x.matmul(W.t()).tanh().pow(2).mean(dim=1).sum(),
    }
    source[fn.__name__](*rargs).backward()
    np.testing.assert_allclose(got, rargs[1].grad.numpy(), rtol=1e-5, atol=1e-6)


class WithBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.fc(x))


def test_batchnorm_eval_compiles_to_one_node():
    torch.manual_seed(0)
    model = WithBatchNorm()
    compiled = sourcegrad.compile(model)
    x = torch.randn(6, 3)
    model.eval()
    out = compiled(x)
    assert type(out.grad_fn).__name__ == "CompiledWithBatchNormForward0Backward"
    np.testing.assert_allclose(
        out.detach().numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-6
    )


class ReadsItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return self.fc(x) * x.sum().item()


def test_a_construct_the_rewriting_does_not_know_runs_eagerly_named():
    torch.manual_seed(0)
    model = ReadsItem()
    compiled = sourcegrad.compile(model)
    x = torch.randn(2, 3)
    with pytest.warns(UserWarning, match=r"graph break: the Tensor method \.item\(\)"):
        out = compiled(x)
    np.testing.assert_array_equal(out.detach().numpy(), model(x).detach().numpy())


class CountsItsCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.fc(x) * self.calls


@pytest.mark.parametrize("calls", [1, 3])
def test_forward_changing_its_modules_attribute_runs_eagerly(calls):
    # `self.calls += 1` was rewritten as `1 += 1` (a SyntaxError out of compile()); now a
    # graph break, the counter counts and each call scales by it as eager's does.
    torch.manual_seed(0)
    model = CountsItsCalls()
    twin = CountsItsCalls()
    twin.load_state_dict(model.state_dict())
    compiled = sourcegrad.compile(model)
    x = torch.randn(2, 3)
    with pytest.warns(UserWarning, match=r"graph break: an assignment to self\.calls"):
        for _ in range(calls):
            out, expected = compiled(x), twin(x)
    assert model.calls == calls
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())


class CallsReadsItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = ReadsItem()

    def forward(self, x):
        return self.inner(x) + 1.0


class TanhThenLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        h = torch.tanh(x)
        return self.fc(h)


def refused_linear(input, weight, bias=None):
    """A lowering of nn.Linear the compiler refuses (a try statement), for a refusal that
    comes from a line of a layer's lowering inlined from the user's line."""
    try:
        return input @ weight.T + bias
    except ValueError:
        return input


def torch_style_reads_item(x):
    y = x * 2.0
    return y * y.sum().item()


def _one_break(call):
    """(what `call()` returns, the one graph-break warning it gave)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    breaks = [w for w in caught if "graph break" in str(w.message)]
    assert len(breaks) == 1, [str(w.message) for w in caught]
    return out, breaks[0]


def _at(fn, text):
    """(file, line) of the line of `fn`'s source holding `text`."""
    lines, first = inspect.getsourcelines(fn)
    return inspect.getsourcefile(fn), first + next(i for i, t in enumerate(lines) if text in t)


@pytest.mark.usefixtures("source_front_end_only")  # (a lowering the compiler refuses)
def test_a_graph_break_warning_points_at_the_users_line(monkeypatch):
    """The warning's location is the user's line that broke, not sourcegrad's: a construct
    the rewriting does not know (in the module's forward, a submodule's, a torch-style
    function), and the compiler refusing a layer's lowering, inlined from the user's line,
    whose own line the message names as where it was raised."""
    from sourcegrad.compiled import lowering

    x = torch.randn(2, 3)
    for model, fn in [(ReadsItem(), ReadsItem.forward), (CallsReadsItem(), ReadsItem.forward)]:
        _, w = _one_break(lambda model=model: sourcegrad.compile(model)(x))
        assert (w.filename, w.lineno) == _at(fn, ".item()")
    compiled = sourcegrad.compile(torch_style_reads_item)
    out, w = _one_break(lambda: compiled(x))
    assert (w.filename, w.lineno) == _at(torch_style_reads_item, ".item()")
    assert compiled.source.endswith(f"({w.filename}:{w.lineno})\n")

    monkeypatch.setattr(lowering, "linear", refused_linear)
    model = TanhThenLinear()
    out, w = _one_break(lambda: sourcegrad.compile(model)(x))
    assert (w.filename, w.lineno) == _at(TanhThenLinear.forward, "self.fc(h)")
    file, line = _at(refused_linear, "try:")
    message = str(w.message)
    assert "UnsupportedSyntaxError: a try statement" in message
    assert message.endswith(f"(raised at {file}:{line}))") and "<sourcegrad.compile" not in message
    np.testing.assert_array_equal(out.detach().numpy(), model(x).detach().numpy())


class Tagger(nn.Module):
    def __init__(self, padding_idx=None):
        super().__init__()
        self.embed = nn.Embedding(7, 4, padding_idx=padding_idx)
        self.lstm = nn.LSTM(4, 5)
        self.fc = nn.Linear(5, 3)

    def forward(self, idx):
        return self.fc(self.lstm(self.embed(idx))[0])


def test_layer_options_the_lowering_lacks_run_eagerly():
    """Embedding's padding row gets no gradient in eager: the unmasked lowering may not
    compute it."""
    torch.manual_seed(0)
    model = Tagger(padding_idx=0)
    compiled = sourcegrad.compile(model)
    idx = torch.tensor([[0, 1], [2, 0], [3, 4]])
    with pytest.warns(UserWarning, match="padding_idx"):
        out = compiled(idx)
    out.sum().backward()
    got = grads(model)
    model.zero_grad()
    model(idx).sum().backward()
    for a, b in zip(got, grads(model)):
        np.testing.assert_array_equal(a, b)


def test_an_unbatched_lstm_input_compiles():
    torch.manual_seed(0)
    model = Tagger()
    compiled = sourcegrad.compile(model)
    idx = torch.tensor([0, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = compiled(idx)
    assert type(out.grad_fn).__name__ == "CompiledTaggerForward0Backward"
    out.sum().backward()
    got = grads(model)
    model.zero_grad()
    eager = model(idx)
    eager.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), eager.detach().numpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(got, grads(model)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_cross_entropy_ignores_ignore_index_as_torch():
    x = torch.randn(4, 3, requires_grad=True)
    y = torch.tensor([0, -100, 2, 1])
    loss = sourcegrad.compile(linear_loss_free)(x, y)
    assert type(loss.grad_fn).__name__ == "CompiledLinearLossFreeBackward"
    loss.backward()
    got = x.grad.numpy().copy()
    x.grad = None
    F.cross_entropy(x, y).backward()
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-6)
    real = pytest.importorskip("torch")
    rx = real.tensor(x.detach().numpy(), requires_grad=True)
    real.nn.functional.cross_entropy(rx, real.tensor(y.numpy())).backward()
    np.testing.assert_allclose(got, rx.grad.numpy(), rtol=1e-6)


def linear_loss_free(x, y):
    return F.cross_entropy(x, y)


def test_a_parameter_removed_after_compiling_makes_the_code_again():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2))

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = model

        def forward(self, x):
            return self.seq(x)

    holder = Holder()
    compiled = sourcegrad.compile(holder)
    x = torch.randn(4, 3)
    np.testing.assert_allclose(compiled(x).detach().numpy(), holder(x).detach().numpy(), rtol=1e-6)
    model[0].bias = None
    np.testing.assert_allclose(compiled(x).detach().numpy(), holder(x).detach().numpy(), rtol=1e-6)


def test_show_prints_a_compiled_modules_forward_and_backward(capsys):
    import os

    from sourcegrad.cli import main

    example = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "digits_convnet.py"
    )
    assert main(["show", f"{example}:ConvNet", "--args", "x=float32(2, 1, 8, 8)"]) == 0
    out = capsys.readouterr().out
    assert "def value_and_dConvNet_forward_0_dconv1_weight" in out
    # (the call is longer than 88 characters: broken as black breaks it)
    assert "sourcegrad.ops.nn_kernels.convolution(\n        x, conv1_weight, conv1_bias" in out
    assert "dfc2_bias = g.sum(axis=0)" in out


class TwoOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return self.fc(x), x.tanh()


@pytest.mark.parametrize("grad_mode", [True, False])
def test_a_forward_returning_a_tuple_is_one_node_with_an_output_each(grad_mode):
    torch.manual_seed(0)
    model = TwoOutputs()
    compiled = sourcegrad.compile(model)
    x = torch.randn(2, 3, requires_grad=True)
    with torch.set_grad_enabled(grad_mode), warnings.catch_warnings():
        warnings.simplefilter("error")  # no graph break
        out = compiled(x)
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_allclose(out[1].detach().numpy(), x.tanh().detach().numpy(), rtol=1e-6)
    if not grad_mode:
        assert out[0].grad_fn is None and out[1].grad_fn is None
        return
    assert out[0].grad_fn is out[1].grad_fn
    assert type(out[0].grad_fn).__name__ == "CompiledTwoOutputsForward0Backward"
    (out[0].sum() * 2 + (out[1] ** 2).sum()).backward()
    got = [x.grad.numpy().copy()] + grads(model)
    x.grad = None
    model.zero_grad()
    a, b = model(x)
    (a.sum() * 2 + (b**2).sum()).backward()
    for g, e in zip(got, [x.grad.numpy()] + grads(model)):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-7)
    x.grad = None
    model.zero_grad()
    compiled(x)[1].sum().backward()  # an output not used: its gradient is zero
    assert model.fc.weight.grad is None or not model.fc.weight.grad.numpy().any()
    np.testing.assert_allclose(x.grad.numpy(), 1 - x.tanh().detach().numpy() ** 2, rtol=1e-5)


class ReadsItsWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x):
        n = self.fc.weight.shape[0]  # an attribute of a parameter, not the parameter
        return (x @ self.fc.weight.t() + self.fc.bias) / n


def test_attributes_and_methods_of_a_parameter():
    torch.manual_seed(0)
    model = ReadsItsWeights()
    x = torch.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = sourcegrad.compile(model)(x)
    assert type(out.grad_fn).__name__ == "CompiledReadsItsWeightsForward0Backward"
    out.sum().backward()
    got = grads(model)
    model.zero_grad()
    model(x).sum().backward()
    for a, b in zip(got, grads(model)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def loss_and_logits(x, W):
    logits = x @ W.t()
    return (logits**2).mean(), logits.tanh()


def test_a_torch_style_function_returning_a_tuple_is_one_node():
    torch.manual_seed(0)
    x, W = torch.randn(4, 3), torch.randn(2, 3, requires_grad=True)
    compiled = sourcegrad.compile(loss_and_logits)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss, aux = compiled(x, W)
    assert loss.grad_fn is aux.grad_fn and loss.shape == ()
    (loss + aux.sum()).backward()
    got = W.grad.numpy().copy()
    W.grad = None
    a, b = loss_and_logits(x, W)
    (a + b.sum()).backward()
    np.testing.assert_allclose(loss.item(), a.item(), rtol=1e-6)
    np.testing.assert_allclose(got, W.grad.numpy(), rtol=1e-5, atol=1e-6)


class PositionalGelu(nn.Module):
    """torch.arange for positions and F.gelu: both lowered (no graph break)."""

    def __init__(self):
        super().__init__()
        self.wpe = nn.Embedding(6, 5)
        self.fc = nn.Linear(5, 3)

    def forward(self, x):
        pos = torch.arange(0, x.size(1), dtype=torch.long)
        return self.fc(F.gelu(x + self.wpe(pos))).mean(dim=1)


def test_arange_and_gelu_are_lowered():
    torch.manual_seed(0)
    compiled = sourcegrad.compile(PositionalGelu())
    model = compiled._orig_mod
    x, y = torch.randn(4, 6, 5), torch.tensor([0, 1, 2, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a graph break warns
        out, loss, got = run(compiled, x, y, F.cross_entropy)
    assert type(out.grad_fn).__name__.startswith("Compiled")
    _, eager_loss, eager = run(model, x, y, F.cross_entropy)
    assert loss == pytest.approx(eager_loss, rel=1e-6)
    for a, b in zip(got, eager):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


class Stack(nn.Module):
    """A loop over an nn.ModuleList of user blocks, a split and a masked_fill: unrolled and
    lowered (no graph break)."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Residual() for _ in range(2)])
        self.out = nn.Linear(5, 6)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x).mean(dim=1, keepdim=True)
        a, b = self.out(x).split(3, dim=1)
        return (a * b).masked_fill(a > 0.5, -1.0)


def test_a_loop_over_a_modulelist_is_unrolled():
    torch.manual_seed(0)
    compiled = sourcegrad.compile(Stack())
    model = compiled._orig_mod
    x, y = torch.randn(4, 5), torch.tensor([0, 1, 2, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a graph break warns
        out, loss, got = run(compiled, x, y, F.cross_entropy)
    assert type(out.grad_fn).__name__.startswith("CompiledStack")
    _, eager_loss, eager = run(model, x, y, F.cross_entropy)
    assert loss == pytest.approx(eager_loss, rel=1e-6)
    for a, b in zip(got, eager):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
