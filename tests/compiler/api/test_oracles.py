"""Compiled gradients against torch and HIPS autograd, when they are installed."""

import numpy as np
import pytest

import sourcegrad
from tests.compiler.cases import f_logreg, f_mlp


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    W1, b1, W2, b2 = (
        rng.normal(size=(4, 5)),
        rng.normal(size=5),
        rng.normal(size=(5, 3)),
        rng.normal(size=3),
    )
    X, Y = rng.normal(size=(6, 4)), np.eye(3)[[0, 1, 2, 1, 0, 2]]
    ours = sourcegrad.grad(f_mlp, wrt=(0, 1, 2, 3))(W1, b1, W2, b2, X, Y)
    params = [torch.tensor(p, requires_grad=True) for p in (W1, b1, W2, b2)]
    h = torch.tanh(torch.tensor(X) @ params[0] + params[1])
    logits = h @ params[2] + params[3]
    loss = -(torch.tensor(Y) * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()
    loss.backward()
    for mine, p in zip(ours, params):
        np.testing.assert_allclose(mine, p.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_against_hips_autograd():
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    rng = np.random.default_rng(4)
    w, X, y = rng.normal(size=3), rng.normal(size=(8, 3)), rng.choice([-1.0, 1.0], size=8)

    def loss(w, X, y):
        return anp.mean(anp.log(1.0 + anp.exp(-y * (X @ w))))

    np.testing.assert_allclose(
        sourcegrad.grad(f_logreg)(w, X, y), autograd.grad(loss)(w, X, y), rtol=1e-12
    )
