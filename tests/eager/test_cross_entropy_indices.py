"""cross_entropy's path for a training step's loss (class indices within range, mean or
sum, no weights: `functional_loss._cross_entropy_of_indices`): taken, the general path's
numbers bit for bit, torch's values, gradients and nodes; and every case it leaves to the
general path (ignored or out-of-range targets, weights, smoothing) still as torch."""

from __future__ import annotations

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.eager import tensor_math
from sourcegrad.nn import functional_loss

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)


def _loss(lib, x, t, requires_grad=True, **kwargs):
    xs = lib.tensor(x, requires_grad=requires_grad)
    loss = lib.nn.functional.cross_entropy(xs.reshape(-1, x.shape[-1]), lib.tensor(t), **kwargs)
    if requires_grad:
        loss.backward()
    return loss, xs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("ignore_index", [-100, 3])
def test_indices_in_range_take_the_path_and_match_torch(
    monkeypatch, dtype, reduction, ignore_index
):
    x = R.standard_normal((4, 6, 7)).astype(dtype)
    t = R.integers(0, 7, 24)
    t[:5] = 3  # (an ignore_index within [0, C) among the targets: those rows do not count)

    def refused(*args, **kwargs):
        raise AssertionError("the general path's log_softmax ran")

    monkeypatch.setattr(tensor_math, "log_softmax", refused)
    ours, xs = _loss(sg, x, t, reduction=reduction, ignore_index=ignore_index)
    theirs, xt = _loss(torch, x, t, reduction=reduction, ignore_index=ignore_index)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **tol)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), **tol)
    assert ours.dtype == sg.float32 if dtype == "float32" else sg.float64
    assert type(ours.grad_fn).__name__ == "NllLossBackward0"
    log_softmax = ours.grad_fn.next_functions[0][0]
    assert type(log_softmax).__name__ == "LogSoftmaxBackward0"
    assert type(log_softmax.next_functions[0][0]).__name__ == "ViewBackward0"


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_the_path_gives_the_general_paths_numbers(monkeypatch, reduction):
    """The loss bit for bit; the gradient (softmax - one-hot from the softmax the forward
    kept, not the exp of the log-probabilities) to float32's last bit."""
    x = R.standard_normal((256, 65)).astype(np.float32)
    t = R.integers(0, 65, 256)
    fast, xf = _loss(sg, x, t, reduction=reduction)
    monkeypatch.setattr(functional_loss, "_cross_entropy_of_indices", lambda *a: None)
    general, xg = _loss(sg, x, t, reduction=reduction)
    np.testing.assert_array_equal(fast.detach().numpy(), general.detach().numpy())
    scale = 1 / 256 if reduction == "mean" else 1.0
    np.testing.assert_allclose(xf.grad.numpy(), xg.grad.numpy(), rtol=1e-6, atol=1e-7 * scale)


def test_the_backward_uses_the_kept_softmax_not_an_exp(monkeypatch):
    """The fused backward's point: no exp over the (N, C) log-probabilities (the rule's
    LogSoftmaxBackward0 takes one), and the numbers stay torch's."""
    x = R.standard_normal((64, 9)).astype(np.float32)
    t = R.integers(0, 9, 64)
    xs = sg.tensor(x, requires_grad=True)
    loss = sg.nn.functional.cross_entropy(xs, sg.tensor(t))
    real_exp = np.exp
    shapes = []

    def exp(a, *args, **kwargs):
        shapes.append(np.shape(a))
        return real_exp(a, *args, **kwargs)

    monkeypatch.setattr(np, "exp", exp)
    loss.backward()
    monkeypatch.undo()
    assert (64, 9) not in shapes
    xt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.cross_entropy(xt, torch.tensor(t)).backward()
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_the_fused_nodes_keep_torchs_rules():
    """Backward twice raises torch's error (the kept softmax is released with the graph);
    retain_graph allows it; create_graph takes the rule (a Hessian-vector product as torch's)."""
    x = R.standard_normal((8, 5)).astype(np.float32)
    t = R.integers(0, 5, 8)
    xs = sg.tensor(x, requires_grad=True)
    loss = sg.nn.functional.cross_entropy(xs, sg.tensor(t))
    loss.backward(retain_graph=True)
    first = xs.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(xs.grad.numpy(), 2 * first, rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    results = []
    for lib in (sg, torch):
        xl = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(xl, lib.tensor(t), reduction="sum")
        (g,) = lib.autograd.grad(loss, xl, create_graph=True)
        (g * g).sum().backward()
        results.append((g.detach().numpy(), xl.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)


def test_without_grad_no_node_is_made():
    x = R.standard_normal((5, 4)).astype(np.float32)
    t = R.integers(0, 4, 5)
    loss, _ = _loss(sg, x, t, requires_grad=False)
    assert loss.grad_fn is None and not loss.requires_grad
    with sg.no_grad():
        loss = sg.nn.functional.cross_entropy(sg.tensor(x, requires_grad=True), sg.tensor(t))
    assert loss.grad_fn is None
    expected = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(loss.numpy(), expected.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "case", ["ignored -100", "weight", "label_smoothing", "none", "uint8 targets"]
)
def test_cases_left_to_the_general_path_match_torch(case):
    x = R.standard_normal((6, 5)).astype(np.float32)
    t = R.integers(0, 5, 6)
    kwargs = {}
    if case == "ignored -100":
        t[2] = -100
    elif case == "weight":
        kwargs["weight"] = np.linspace(0.5, 2, 5).astype(np.float32)
    elif case == "label_smoothing":
        kwargs["label_smoothing"] = 0.2
    elif case == "none":
        kwargs["reduction"] = "none"
    else:
        t = t.astype(np.uint8)
    results = []
    for lib in (sg, torch):
        args = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        xs = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(xs, lib.tensor(t), **args)
        loss.sum().backward()
        results.append((loss.detach().numpy(), xs.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", [5, -1])
def test_a_target_out_of_range_raises_torchs_error(bad):
    x = R.standard_normal((3, 5)).astype(np.float32)
    t = np.array([0, bad, 1])
    with pytest.raises(IndexError) as theirs:
        torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t))
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds") as ours:
        sg.nn.functional.cross_entropy(sg.tensor(x, requires_grad=True), sg.tensor(t))
    assert str(theirs.value).startswith(str(ours.value)[:10])
