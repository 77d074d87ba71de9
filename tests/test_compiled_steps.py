"""Training steps with `sourcegrad.compile(model)` as the eager benchmark runs them (the
models of bench/eager_models.py, made smaller): each step's loss and every parameter's
gradient are torch's, a repeated step compiles nothing again, and the compiled node
behaves as an eager node does (torch's error for an argument modified in place before the
backward, or for a second backward without retain_graph)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

real = pytest.importorskip("torch")  # (the oracle: the [oracle] extra)

import sourcegrad  # noqa: E402
import sourcegrad.nn.functional as F  # noqa: E402
from sourcegrad.api.gradient import VJP  # noqa: E402
from sourcegrad.bench import eager_models  # noqa: E402
from sourcegrad.bench.eager import torch_models  # noqa: E402

SMALL = {  # (model's arguments, optimizer, input (shape, kind, high), target's)
    "MLP": ((16, 24, 5), "sgd", ((6, 16), "float", None), ((6,), "int", 5)),
    "LSTMLM": ((11, 6, 8), "adam", ((3, 5), "int", 11), ((3, 5), "int", 11)),
    "GPT": ((13, 8, 2, 2, 16), "adamw", ((2, 8), "int", 13), ((2, 8), "int", 13)),
}


def _optimizer(lib, models, kind, model):
    """The optimizer of `lib` (sourcegrad or torch); `models`: eager_models run with it."""
    if kind == "sgd":
        return lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if kind == "adam":
        return lib.optim.Adam(model.parameters(), lr=1e-2)
    return models.gpt_optimizer(model, lr=1e-2)


def _batch(spec, rng):
    shape, kind, high = spec
    if kind == "int":
        return rng.integers(0, high, size=shape)
    return rng.normal(size=shape).astype(np.float32)


def _step(model, opt, x, y):
    """bench's train_step, keeping the gradients before the optimizer's step."""
    opt.zero_grad(set_to_none=True)
    logits = model(x)
    loss = (sourcegrad if isinstance(x, sourcegrad.Tensor) else real).nn.functional.cross_entropy(
        logits.reshape(-1, logits.size(-1)), y.reshape(-1)
    )
    loss.backward()
    grads = [p.grad.numpy().copy() for p in opt.param_groups[0]["params"]]
    grads += [p.grad.numpy().copy() for g in opt.param_groups[1:] for p in g["params"]]
    opt.step()
    return loss.item(), grads


@pytest.mark.no_cross_check
@pytest.mark.parametrize("name", list(SMALL))
def test_compiled_training_steps_are_torchs_and_compile_once(name, monkeypatch):
    compiles = []
    real_compile = VJP.compile
    monkeypatch.setattr(
        VJP, "compile", lambda self, *a, **k: compiles.append(1) or real_compile(self, *a, **k)
    )
    args, kind, xspec, yspec = SMALL[name]
    theirs = torch_models()
    real.manual_seed(0)
    reference = getattr(theirs, name)(*args)
    model = getattr(eager_models, name)(*args)
    model.load_state_dict(
        {k: sourcegrad.tensor(v.numpy()) for k, v in reference.state_dict().items()}
    )
    ref_opt = _optimizer(real, theirs, kind, reference)
    opt = _optimizer(sourcegrad, eager_models, kind, model)
    compiled = sourcegrad.compile(model)
    rng = np.random.default_rng(1)
    for step in range(3):
        xs, ys = _batch(xspec, rng), _batch(yspec, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (a graph break would run it eagerly)
            loss, grads = _step(compiled, opt, sourcegrad.tensor(xs), sourcegrad.tensor(ys))
        expected, expected_grads = _step(reference, ref_opt, real.tensor(xs), real.tensor(ys))
        assert type(compiled(sourcegrad.tensor(xs)).grad_fn).__name__.startswith("Compiled")
        np.testing.assert_allclose(loss, expected, rtol=1e-5, err_msg=f"step {step}")
        for i, (g, e) in enumerate(zip(grads, expected_grads)):
            np.testing.assert_allclose(g, e, rtol=2e-4, atol=2e-6, err_msg=f"step {step}, {i}")
        if step == 0:
            made = len(compiles)
    # the first step made the rewriting and its generated code; the others reuse them
    assert compiled.compiles == 1
    assert len(compiles) == made


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
def test_a_linear_layer_on_a_3d_input_folds_its_rows_and_keeps_torchs_numbers(bias):
    """(the lowering multiplies the rows as one matrix: its gradients against torch's and
    central finite differences, in float64)"""
    layer = sourcegrad.nn.Linear(4, 3, bias=bias).double()
    ref = real.nn.Linear(4, 3, bias=bias).double()
    ref.load_state_dict({k: real.tensor(_np(v)) for k, v in layer.state_dict().items()})
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 4))
    mine = sourcegrad.tensor(x, requires_grad=True)
    theirs = real.tensor(x, requires_grad=True)
    weights = rng.normal(size=(2, 5, 3))
    out = sourcegrad.compile(layer)(mine)
    assert type(out.grad_fn).__name__ == "CompiledLinearForward0Backward"
    (out * sourcegrad.tensor(weights)).sum().backward()
    (ref(theirs) * real.tensor(weights)).sum().backward()
    np.testing.assert_allclose(_np(out), ref(theirs).detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(_np(mine.grad), theirs.grad.numpy(), rtol=1e-12)
    for p, q in zip(layer.parameters(), ref.parameters()):
        np.testing.assert_allclose(_np(p.grad), q.grad.numpy(), rtol=1e-12)

    def loss(w):  # the weight's gradient by central differences
        return float(np.sum((x @ w.T + (_np(layer.bias) if bias else 0.0)) * weights))

    w, h = _np(layer.weight).copy(), 1e-6
    fd = np.zeros_like(w)
    for idx in np.ndindex(w.shape):
        up, down = w.copy(), w.copy()
        up[idx] += h
        down[idx] -= h
        fd[idx] = (loss(up) - loss(down)) / (2 * h)
    np.testing.assert_allclose(_np(layer.weight.grad), fd, rtol=1e-6, atol=1e-8)


class Two(sourcegrad.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = sourcegrad.nn.Linear(3, 2)

    def forward(self, x):
        return sourcegrad.tanh(self.fc(x))


@pytest.mark.parametrize("input_grad", [True, False], ids=["input requires grad", "not"])
def test_an_argument_modified_in_place_before_the_backward_raises_as_torch(input_grad):
    """torch saves the weight for the backward only where the input needs a gradient
    (grad_input = g @ W); so does the generated backward, and the node checks the
    versions of the arguments it reads."""
    sourcegrad.manual_seed(0)  # (the weights: the same in any order the tests run)
    model = Two()
    ref = real.nn.Linear(3, 2)
    ref.load_state_dict({k[3:]: real.tensor(_np(v)) for k, v in model.state_dict().items()})
    data = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    out = sourcegrad.compile(model)(sourcegrad.tensor(data, requires_grad=input_grad))
    ref_out = real.tanh(ref(real.tensor(data, requires_grad=input_grad)))
    with sourcegrad.no_grad(), real.no_grad():
        model.fc.weight.mul_(2.0)
        ref.weight.mul_(2.0)
    if not input_grad:  # (the weight's gradient reads x and the tanh's value only)
        out.sum().backward()
        ref_out.sum().backward()
        for p, q in zip(model.parameters(), ref.parameters()):
            # (float32: torch's and numpy's products may round apart in the last bits)
            np.testing.assert_allclose(_np(p.grad), q.grad.numpy(), rtol=1e-5, atol=1e-7)
        return
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ref_out.sum().backward()


def test_a_second_backward_needs_retain_graph_as_torchs():
    model = Two()
    compiled = sourcegrad.compile(model)
    x = sourcegrad.randn(4, 3)
    out = compiled(x)
    out.sum().backward(retain_graph=True)
    once = _np(model.fc.weight.grad).copy()
    out.sum().backward()
    np.testing.assert_allclose(_np(model.fc.weight.grad), 2 * once, rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.sum().backward()


def test_an_output_changed_in_place_leaves_the_backwards_values_alone():
    """An output is a Tensor of its own: `out.add_(1)` before the backward is recorded on
    it, and the generated backward still reads the values it computed."""
    model = Two().double()
    expected = Two().double()
    expected.load_state_dict(model.state_dict())
    x = sourcegrad.randn(4, 3, dtype=sourcegrad.float64)
    zeros = sourcegrad.zeros(4, 2, dtype=sourcegrad.float64)
    out = sourcegrad.compile(model)(x)
    out.add_(1.0)
    F.mse_loss(out, zeros).backward()
    F.mse_loss(expected(x) + 1.0, zeros).backward()
    for p, q in zip(model.parameters(), expected.parameters()):
        np.testing.assert_allclose(_np(p.grad), _np(q.grad), rtol=1e-12)


class FeedForward(sourcegrad.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = sourcegrad.nn.Linear(4, 6)
        self.gelu = sourcegrad.nn.GELU()

    def forward(self, x):
        return F.gelu(self.gelu(self.fc(x)))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_compiled_gelu_reuses_the_forwards_cdf_with_torchs_gradients(dtype):
    model = FeedForward().to(getattr(sourcegrad, dtype))
    ref = real.nn.Sequential(real.nn.Linear(4, 6), real.nn.GELU(), real.nn.GELU())
    ref = ref.to(getattr(real, dtype))
    ref[0].load_state_dict({k[3:]: real.tensor(_np(v)) for k, v in model.state_dict().items()})
    data = np.random.default_rng(0).normal(size=(3, 5, 4)) * 2
    x = sourcegrad.tensor(data, dtype=getattr(sourcegrad, dtype), requires_grad=True)
    theirs = real.tensor(data, dtype=getattr(real, dtype), requires_grad=True)
    compiled = sourcegrad.compile(model)
    out = compiled(x)
    (out * out).sum().backward()
    expected = ref(theirs)
    (expected * expected).sum().backward()
    rtol = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(_np(out), expected.detach().numpy(), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(_np(x.grad), theirs.grad.numpy(), rtol=rtol, atol=rtol)
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(_np(p.grad), q.grad.numpy(), rtol=rtol, atol=rtol)
    backward = compiled.source.split("_backward(")[1].splitlines()
    code = [line.split("#")[0] for line in backward]  # (comments quote the source)
    assert not any("normal_cdf(" in line for line in code)  # (the forward's CDF, kept)


def test_a_second_derivative_through_the_generated_backward_raises():
    """create_graph gives the first derivative's values; differentiating them again would
    need the generated backward's own derivative, which it has not: an error, as torch's
    @once_differentiable, not gradients that silently lack that term."""
    model = Two().double()
    x = sourcegrad.randn(4, 3, dtype=sourcegrad.float64, requires_grad=True)
    compiled = sourcegrad.compile(model)
    (gx,) = sourcegrad.autograd.grad(compiled(x).sum(), x, create_graph=True)
    (expected,) = sourcegrad.autograd.grad(model(x).sum(), x)
    np.testing.assert_allclose(_np(gx), _np(expected), rtol=1e-12)
    assert gx.requires_grad
    with pytest.raises(RuntimeError, match="cannot be differentiated again"):
        (gx * gx).sum().backward()
