"""np.cumprod in the compiler: first derivatives in both modes against finite differences,
exact where the input holds zeros; the Jacobian of its gradient in both modes (its helper
`cumprod_grad` has rules of its own; tests/compiler/derive/test_cumprod_second_order.py
checks them further)."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def f_cumprod(x, z):
    return np.sum(np.cumprod(x, axis=0) * 1.5) + np.sum(np.sin(np.cumprod(z)))


ARGS = (
    np.random.default_rng(0).uniform(0.5, 2.0, size=(3, 4)),
    np.array([[0.7, 1.2], [0.0, 0.9]]),
)  # z holds a zero: the exact formula


def test_cumprod_gradient_matches_finite_differences():
    grads = sourcegrad.grad(f_cumprod, wrt=(0, 1))(*ARGS)
    for pos, g in enumerate(grads):
        np.testing.assert_allclose(g, numeric_grad(f_cumprod, ARGS, pos), rtol=1e-6, atol=1e-8)


def test_cumprod_tangent_matches_finite_differences():
    rng = np.random.default_rng(1)
    tangents = tuple(rng.normal(size=np.shape(a)) for a in ARGS)
    _, t_out = sourcegrad.jvp(f_cumprod, ARGS, tangents)
    eps = 1e-6
    plus = f_cumprod(*(a + eps * t for a, t in zip(ARGS, tangents)))
    minus = f_cumprod(*(a - eps * t for a, t in zip(ARGS, tangents)))
    np.testing.assert_allclose(t_out, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.parametrize("x", [[0.5, 1.5, 2.0], [0.5, 0.0, 2.0]], ids=["no zero", "a zero"])
def test_cumprod_second_derivative_matches_differences_of_the_gradient(mode, x):
    def f(x):
        return np.sum(np.cumprod(x) ** 2)

    x = np.array(x)
    gradient = sourcegrad.grad(f)
    eps = 1e-6
    numeric = [(gradient(x + eps * e) - gradient(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    hessian = sourcegrad.jacobian(gradient, mode=mode)(x)
    np.testing.assert_allclose(hessian, np.array(numeric).T, rtol=1e-6, atol=1e-6)
