"""Eager programs written as outsiders write them (the probes of session 54), each of which gave
a result that differed from torch's: checked against torch (CPU), the oracle for eager mode.
"""

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

BACKENDS = [torch, sg]


def _array(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


# -- b ** e at b = 0, e < 0: d/de of inf is -inf ---------------------------------------------
# (the exponent's rule took log(np.where(b, b, 1)): inf * log 1 = NaN where torch gives
# inf * log 0 = -inf)


def _power_grads(T):
    b = T.tensor([0.0, 2.0, 0.0, -2.0, 0.0], dtype=T.float64, requires_grad=True)
    e = T.tensor([-1.0, -1.0, 2.0, 2.0, 0.0], dtype=T.float64, requires_grad=True)
    (b**e).sum().backward()
    return _array(b.grad), _array(e.grad)


def test_power_exponent_gradient_at_a_zero_base_is_torchs():
    with np.errstate(divide="ignore", invalid="ignore"):  # (0 ** -1: the forward's own)
        got, want = _power_grads(sg), _power_grads(torch)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert got[1][0] == -np.inf  # was NaN


def test_power_of_a_python_zero_and_two_to_a_tensor():
    def grads(T, base):
        e = T.tensor([-1.0, 0.5, 2.0], dtype=T.float64, requires_grad=True)
        (base**e).sum().backward()
        return _array(e.grad)

    with np.errstate(divide="ignore"):
        for base in (0.0, 2.0):
            np.testing.assert_allclose(grads(sg, base), grads(torch, base), rtol=1e-15)


def test_power_exponent_second_derivative_keeps_float64():
    # (the rule's masked log must stay in the exponent's dtype under create_graph: a Python
    # base made it torch's default float32, a relative error of 3e-9)
    def second(T):
        a = T.tensor([-0.59, 0.59, -0.91, -0.24], dtype=T.float64, requires_grad=True)
        (g,) = T.autograd.grad(T.pow(2.0, a).sum(), a, create_graph=True)
        (h,) = T.autograd.grad(g.sum(), a)
        return _array(g), _array(h)

    for g, w in zip(second(sg), second(torch)):
        np.testing.assert_allclose(g, w, rtol=1e-15)


# -- the second derivative of a vector norm where x or the norm is 0 --------------------------
# (the rule divided by np.where(norm == 0, 1, norm) and raised a masked |x| to p - 1: their
# derivatives there were the seed itself (p = 2, x = 0) or 0, where torch's are NaN)


@pytest.mark.parametrize("x", [[0.0, 3.0, 4.0], [0.0, 0.0, 0.0], [0.0, -2.0, 1.0]])
@pytest.mark.parametrize("p", [2, 3, 4, 0.5, 0.3, -1, -2, 1.2, 1.5, 2.5, 5.5])
def test_vector_norm_second_derivative_is_torchs(x, p):
    def second(T):
        t = T.tensor(x, dtype=T.float64, requires_grad=True)
        (g,) = T.autograd.grad(T.linalg.vector_norm(t, ord=p), t, create_graph=True)
        (g * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum().backward()
        return _array(g), _array(t.grad)

    with np.errstate(divide="ignore", invalid="ignore"):
        got, want = second(sg), second(torch)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def test_vector_norm_second_derivative_at_zero_was_the_seed():
    t = sg.zeros(3, dtype=sg.float64, requires_grad=True)
    (g,) = sg.autograd.grad(sg.linalg.vector_norm(t), t, create_graph=True)
    (g * sg.tensor([1.0, 2.0, 3.0], dtype=sg.float64)).sum().backward()
    assert np.isnan(_array(t.grad)).all()  # was [1, 2, 3]; torch's NaN


def test_vector_norm_first_derivative_over_a_dim_with_a_zero_row():
    data = np.array([[0.0, 0.0, 0.0], [3.0, 0.0, -4.0]])
    grads = []
    for T in BACKENDS:
        t = T.tensor(data, dtype=T.float64, requires_grad=True)
        for p in (2, 0.5, 1.5, 3):
            T.linalg.vector_norm(t, ord=p, dim=1, keepdim=True).sum().backward()
        grads.append(_array(t.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    assert np.isfinite(grads[0]).all()
