"""Constant factors of the backward carried along a chain and applied once
(optimize.algebra.sink_scalar_factors): `d * 2.0`, `-d`, `d * math.log(2.0)`, `d / (2.0 * v)` are
not array operations of their own; `a + -b` is `a - b`."""

import math

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def scaled_chain(x):
    v = np.exp2(x)  # ln 2
    v = np.log10(v + 2.0)  # 1 / ln 10
    v = np.square(v)  # 2
    v = np.reciprocal(v + 1)  # -1
    v = np.sqrt(v)  # 1 / 2
    return np.sum(np.cos(v))  # -1


def softmax_loss(z, y):
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(y * log_p, axis=1))


def read_twice(x):
    d = 3.0 * np.sin(x)
    return np.sum(d * x) + np.sum(np.exp(d))


def factor_into_a_loop(x, n):
    v = np.sqrt(x)
    s = 0.0
    for i in range(n):
        s = s + np.sum(v * (i + 1.0))
    return s


def scalar_part(x):
    return 2.0 * np.sum(np.sin(x) * 0.5) ** 2 + np.sum(-np.cos(x))


def _array_ops_in_backward(source):
    backward = source[source.index("# backward") :]
    return [line for line in backward.splitlines() if "= " in line and "#" in line]


def test_a_chain_applies_its_constants_once():
    x = np.linspace(0.1, 0.9, 7)
    g = sourcegrad.grad(scaled_chain)
    np.testing.assert_allclose(g(x), numeric_grad(scaled_chain, (x,), 0), rtol=1e-6)
    lines = g.source.splitlines()
    assert sum("constant factors" in line for line in lines) == 1
    backward = g.source[g.source.index("# backward") :]
    assert "-d" not in backward and "* 2.0" not in backward and "(2.0 *" not in backward


def test_a_negation_meets_a_sum_as_a_subtraction():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(4, 3))
    y = np.eye(3)[[0, 2, 1, 1]]
    g = sourcegrad.grad(softmax_loss)
    np.testing.assert_allclose(
        g(z, y), numeric_grad(softmax_loss, (z, y), 0), rtol=1e-6, atol=1e-10
    )
    assert "d_log_p.sum(axis=1, keepdims=True)" in g.source  # no -d_log_p array
    backward = g.source[g.source.index("# backward") :]
    # (the softmax's contribution folded into the subtraction that adds it: one statement)
    assert "dz = d_log_p - d_log_p.sum(axis=1, keepdims=True)" in backward
    assert "-d" not in backward.replace("dz = d_log_p - dz", "")


def test_a_value_read_twice_keeps_its_factor():
    x = np.linspace(-1.0, 1.0, 5)
    g = sourcegrad.grad(read_twice)
    np.testing.assert_allclose(g(x), numeric_grad(read_twice, (x,), 0), rtol=1e-6)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_factor_is_applied_before_a_loop_reads_the_value(n):
    x = np.linspace(0.2, 1.0, 4)
    g = sourcegrad.grad(factor_into_a_loop)
    np.testing.assert_allclose(
        g(x, n), numeric_grad(factor_into_a_loop, (x, n), 0), rtol=1e-6, atol=1e-10
    )


def test_scalars_and_float32():
    x = np.linspace(-1.0, 1.0, 5)
    g = sourcegrad.grad(scalar_part)
    np.testing.assert_allclose(g(x), numeric_grad(scalar_part, (x,), 0), rtol=1e-6)
    x32 = x.astype(np.float32)
    g32 = sourcegrad.grad(scaled_chain)(np.linspace(0.1, 0.9, 7).astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(
        g32, sourcegrad.grad(scaled_chain)(np.linspace(0.1, 0.9, 7)), rtol=1e-5
    )
    assert sourcegrad.grad(scalar_part)(x32).dtype == np.float32


def test_second_order_through_carried_factors():
    x = np.linspace(0.1, 0.9, 5)
    v = np.linspace(-1.0, 1.0, 5)
    hv = sourcegrad.hvp(scaled_chain)(x, v)
    g = sourcegrad.grad(scaled_chain)
    eps = 1e-6
    np.testing.assert_allclose(
        hv, (g(x + eps * v) - g(x - eps * v)) / (2 * eps), rtol=1e-6, atol=1e-9
    )
    H = sourcegrad.hessian(scaled_chain)(x)
    np.testing.assert_allclose(H @ v, hv, rtol=1e-9, atol=1e-12)


def test_a_pullback_with_carried_factors_is_reusable():
    x = np.linspace(0.1, 0.9, 5)
    value, pullback = sourcegrad.vjp(scaled_chain)(x)
    first, second = pullback(1.0), pullback(2.0)
    np.testing.assert_allclose(first, sourcegrad.grad(scaled_chain)(x), rtol=1e-12)
    np.testing.assert_allclose(second, 2.0 * first, rtol=1e-12)


def damped(k, c):
    x, v, t = 1.0, 0.0, 0.0
    while t < 0.5:
        a = -k * x - c * v
        x = x + 0.1 * v
        v = v + 0.1 * a
        t = t + 0.1
    return x * x + v * v


def test_a_negated_factor_of_a_product_is_a_subtraction():
    g = sourcegrad.grad(damped, wrt=(0, 1))
    dk, dc = g(4.0, 0.5)
    assert dk == pytest.approx(numeric_grad(damped, (4.0, 0.5), 0), rel=1e-6)
    assert dc == pytest.approx(numeric_grad(damped, (4.0, 0.5), 1), rel=1e-6)
    source = g.source
    backward = source[source.index("# backward") :]
    assert "dc -= d_a * v" in backward and "= -d_a" not in backward, backward


def clips_negated(x):
    return np.sum(-np.clip(x, -1.0, 1.0)) + np.sum(-np.clip(x, -2.0, 2.0))


def clips(x):
    return np.sum(np.clip(x, -1.0, 1.0) + np.clip(x, -2.0, 2.0))


@pytest.mark.parametrize("fn", [clips_negated, clips])
def test_boolean_masks_carry_no_factor(fn):
    # clip's adjoint is g * (x == ans), a boolean mask times g: carried as the mask with the
    # factor, two masks were added as booleans (a logical or: 1 where the gradient is 2)
    # and a negated one raised TypeError
    x = np.array([0.5, 1.5, 3.0, -0.7])
    g = sourcegrad.grad(fn)
    got = g(x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, numeric_grad(fn, (x,), 0), rtol=1e-7)
    sign = -1.0 if fn is clips_negated else 1.0
    np.testing.assert_array_equal(got, sign * np.array([2.0, 1.0, 0.0, 2.0]))


def float_mix(x, y):
    return math.sin(x) * y + math.exp(x * y) / (1.0 + x**2)


def test_numbers_carry_their_factors_too():
    # on Python floats a negation is an operation of its own: -a / b * 2.0 * x is
    # a / b * x, then one product by -2.0 where the parts are added
    g = sourcegrad.grad(float_mix, wrt=(0, 1))
    dx, dy = g(0.7, -1.3)
    assert "-exp" not in g.source and "* -2.0" in g.source, g.source
    assert dx == pytest.approx(numeric_grad(float_mix, (0.7, -1.3), 0), rel=1e-8)
    assert dy == pytest.approx(numeric_grad(float_mix, (0.7, -1.3), 1), rel=1e-8)


def power_scaled(x):
    # the backward scales by 1.5 * sin(0.25) (a constant of constants) and negates (cos)
    t = 1.5 * (2.0 + np.cos(x)) ** np.sin(0.25)
    return np.sum(t + 0.5 * t)


@pytest.mark.parametrize("x", [0.3, np.float64(0.3), np.array([0.3, -1.1])])
def test_a_factor_that_carries_factors_keeps_them(x):
    # (fuzz reuse-21: the 1.5 of c = 1.5 * sin(0.25) was dropped when c scaled a value)
    g = sourcegrad.grad(power_scaled)
    np.testing.assert_allclose(g(x), numeric_grad(power_scaled, (x,), 0), rtol=1e-7)
