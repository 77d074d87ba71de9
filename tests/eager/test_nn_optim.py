"""`sourcegrad.nn.functional` and `sourcegrad.optim`: losses, activations, SGD and Adam."""

import math

import numpy as np
import pytest

import sourcegrad as torch
import sourcegrad.nn.functional as F


def test_functional_nodes():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    assert F.relu(x).grad_fn.name() == "ReluBackward0"
    assert F.softmax(x, dim=1).grad_fn.name() == "SoftmaxBackward0"
    assert F.log_softmax(x, dim=1).grad_fn.name() == "LogSoftmaxBackward0"
    ce = F.cross_entropy(x, torch.tensor([0, 2]))
    assert ce.grad_fn.name() == "NllLossBackward0"
    assert ce.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
    mse = F.mse_loss(x, torch.zeros_like(x))
    assert mse.grad_fn.name() == "MseLossBackward0"
    assert mse.grad_fn.next_functions[1] == (None, 0)
    W = torch.ones(4, 3, requires_grad=True)
    b = torch.zeros(4, requires_grad=True)
    lin = F.linear(x, W, b)
    assert lin.grad_fn.name() == "AddmmBackward0"
    assert [f.name() for f, _ in lin.grad_fn.next_functions] == [
        "torch::autograd::AccumulateGrad",
        "torch::autograd::AccumulateGrad",
        "TBackward0",
    ]


def test_cross_entropy_values():
    logits = torch.tensor([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]], requires_grad=True)
    target = torch.tensor([0, 1])
    loss = F.cross_entropy(logits, target)
    z = logits.detach().numpy().astype(np.float64)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    assert loss.item() == pytest.approx(-(logp[0, 0] + logp[1, 1]) / 2, rel=1e-6)
    loss.backward()
    p = np.exp(logp)
    p[[0, 1], [0, 1]] -= 1
    np.testing.assert_allclose(logits.grad.numpy(), p / 2, rtol=1e-5)
    assert F.cross_entropy(logits, target, reduction="none").shape == (2,)
    assert F.cross_entropy(logits, torch.tensor([0, -100])).item() == pytest.approx(
        -logp[0, 0], rel=1e-6
    )
    soft = F.cross_entropy(logits, torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    assert soft.item() == pytest.approx(loss.item(), rel=1e-6)


def test_mse_loss_and_reductions():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = torch.tensor([1.0, 0.0, 0.0])
    assert F.mse_loss(a, b).item() == pytest.approx(13 / 3)
    assert F.mse_loss(a, b, reduction="sum").item() == 13.0
    assert F.mse_loss(a, b, reduction="none").tolist() == [0.0, 4.0, 9.0]
    F.mse_loss(a, b).backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.0, 4 / 3, 2.0], rtol=1e-6)


def _fit(make_optimizer, steps=200):
    torch.manual_seed(0)
    X = torch.randn(32, 3)
    true_w = torch.tensor([[1.5], [-2.0], [0.5]])
    Y = X @ true_w + 0.1
    w = torch.zeros(3, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    opt = make_optimizer([w, b])
    for _ in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(X @ w + b, Y)
        loss.backward()
        opt.step()
    return loss.item(), w, opt


@pytest.mark.parametrize(
    "make",
    [
        lambda p: torch.optim.SGD(p, lr=0.1),
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4),
        lambda p: torch.optim.Adam(p, lr=0.05),
        lambda p: torch.optim.Adam(p, lr=0.05, amsgrad=True, weight_decay=1e-4),
    ],
)
def test_optimizers_fit_a_linear_model(make):
    loss, w, _ = _fit(make)
    assert loss < 1e-3
    np.testing.assert_allclose(w.detach().numpy().ravel(), [1.5, -2.0, 0.5], atol=0.05)


def test_zero_grad_and_parameter_versions():
    p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    opt = torch.optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    assert p.grad.tolist() == [2.0, 4.0]
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 1.6], rtol=1e-6)
    assert p._version == 1
    opt.zero_grad()
    assert p.grad is None
    (p * p).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]


def test_adam_first_step_matches_the_formula():
    p = torch.tensor([1.0, -1.0], requires_grad=True)
    opt = torch.optim.Adam([p], lr=0.1)
    (p * torch.tensor([3.0, 0.5])).sum().backward()
    opt.step()
    # with bias correction the first Adam step is lr * sign(grad) (up to eps)
    np.testing.assert_allclose(p.detach().numpy(), [0.9, -1.1], rtol=1e-6)
    assert opt.state[p]["step"] == 1 and math.isclose(opt.param_groups[0]["lr"], 0.1)
