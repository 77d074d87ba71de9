"""JAX's and autograd's spellings of the compiled API: `argnums=` / `argnum=` (aliases of
`wrt`), `has_aux=True`, `grad_and_aux`, `elementwise_grad`; numbers against central finite
differences (float64)."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def two_args(a, b):
    return np.sum(a * b**2) + np.sum(np.sin(a))


def loss_with_aux(w, X):
    z = X @ w
    loss = np.sum(np.tanh(z) ** 2)
    return loss, z


def aux_from_two_returns(w, X):
    z = X @ w
    if np.sum(z) > 0:
        return np.sum(z**2), (z, 1.0)
    return np.sum(np.sin(z)), (z, 2.0)


def aux_is_not_a_pair(w):
    return np.sum(w), w, w


def elementwise(x):
    return np.tanh(x) * np.exp(-x)


def scalar_elementwise(x):
    return x**3 + 2.0 * x


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    return rng.normal(size=3), rng.normal(size=(5, 3))


@pytest.mark.parametrize("spelling", ["wrt", "argnums", "argnum"])
def test_argnums_and_argnum_are_wrt(spelling):
    a, b = np.array([0.5, -1.0]), np.array([2.0, 0.3])
    da, db = sourcegrad.grad(two_args, **{spelling: (0, 1)})(a, b)
    np.testing.assert_allclose(da, numeric_grad(two_args, (a, b), 0), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(db, numeric_grad(two_args, (a, b), 1), rtol=1e-7, atol=1e-9)
    single = sourcegrad.grad(two_args, **{spelling: 1})(a, b)
    np.testing.assert_allclose(single, numeric_grad(two_args, (a, b), 1), rtol=1e-7, atol=1e-9)
    value, db = sourcegrad.value_and_grad(two_args, **{spelling: 1})(a, b)
    assert value == pytest.approx(two_args(a, b))


def test_argnums_as_a_decorator_and_for_vjp():
    a, b = np.array([0.5, -1.0]), np.array([2.0, 0.3])
    g = sourcegrad.grad(argnums=1)(two_args)
    np.testing.assert_allclose(g(a, b), numeric_grad(two_args, (a, b), 1), rtol=1e-7)
    value, pullback = sourcegrad.vjp(two_args, argnum=0)(a, b)
    np.testing.assert_allclose(pullback(1.0), numeric_grad(two_args, (a, b), 0), rtol=1e-7)


def test_two_spellings_at_once_are_refused():
    with pytest.raises(sourcegrad.WrtError, match="argnums"):
        sourcegrad.grad(two_args, wrt=0, argnums=1)
    with pytest.raises(sourcegrad.WrtError, match="argnum"):
        sourcegrad.value_and_grad(two_args, argnums=0, argnum=1)


def test_has_aux_returns_gradient_and_aux_as_jax_does(data):
    w, X = data
    g, aux = sourcegrad.grad(loss_with_aux, has_aux=True)(w, X)
    np.testing.assert_allclose(
        g, numeric_grad(lambda w, X: loss_with_aux(w, X)[0], (w, X), 0), rtol=1e-7, atol=1e-9
    )
    np.testing.assert_allclose(aux, X @ w)
    (value, aux), g2 = sourcegrad.value_and_grad(loss_with_aux, has_aux=True)(w, X)
    assert value == pytest.approx(loss_with_aux(w, X)[0])
    np.testing.assert_allclose(aux, X @ w)
    np.testing.assert_allclose(g2, g)


def test_has_aux_with_wrt_tuple_and_repeated_calls(data):
    w, X = data
    g = sourcegrad.grad(loss_with_aux, argnums=(0, 1), has_aux=True)
    for _ in range(3):  # the fast entry after the first call
        (dw, dX), aux = g(w, X)
    first = lambda w, X: loss_with_aux(w, X)[0]  # noqa: E731
    np.testing.assert_allclose(dw, numeric_grad(first, (w, X), 0), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(dX, numeric_grad(first, (w, X), 1), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(aux, X @ w)
    assert "return" in g.source


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_has_aux_through_several_returns(data, sign):
    w, X = data
    w = sign * np.abs(w)
    X = np.abs(X)
    g, (z, tag) = sourcegrad.grad(aux_from_two_returns, has_aux=True)(w, X)
    first = lambda w, X: aux_from_two_returns(w, X)[0]  # noqa: E731
    np.testing.assert_allclose(g, numeric_grad(first, (w, X), 0), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(z, X @ w)
    assert tag == (1.0 if sign > 0 else 2.0)


def test_grad_and_aux_is_autograds(data):
    w, X = data
    g, aux = sourcegrad.grad_and_aux(loss_with_aux)(w, X)
    g2, _ = sourcegrad.grad(loss_with_aux, has_aux=True)(w, X)
    np.testing.assert_allclose(g, g2)
    np.testing.assert_allclose(aux, X @ w)


def test_has_aux_needs_a_pair():
    with pytest.raises(sourcegrad.SourcegradError, match="pair"):
        sourcegrad.grad(aux_is_not_a_pair, has_aux=True)(np.ones(2))


def test_elementwise_grad_is_the_derivative_at_each_element():
    x = np.array([-1.0, 0.2, 1.5, 3.0])
    d = sourcegrad.elementwise_grad(elementwise)(x)
    step = 1e-6
    numeric = (elementwise(x + step) - elementwise(x - step)) / (2 * step)
    np.testing.assert_allclose(d, numeric, rtol=1e-7, atol=1e-9)
    assert d.shape == x.shape


def test_elementwise_grad_of_a_number():
    d = sourcegrad.elementwise_grad(scalar_elementwise)(0.7)
    assert d == pytest.approx(3 * 0.7**2 + 2.0, rel=1e-12)


@pytest.mark.parametrize("mode", ["grad", "vjp", "jvp"])
def test_a_returned_pair_without_has_aux_is_refused_located(mode, data):
    """It crashed with AttributeError: 'Tup' object has no attribute 'value'."""
    w, X = data
    with pytest.raises(sourcegrad.NonScalarOutputError, match="has_aux=True") as info:
        if mode == "grad":
            sourcegrad.grad(loss_with_aux)(w, X)
        elif mode == "vjp":
            sourcegrad.vjp(loss_with_aux)(w, X)
        else:
            sourcegrad.jvp(loss_with_aux, (w, X), (w, None))
    assert "test_api_habits.py" in str(info.value) and "return loss, z" in str(info.value)
