"""vjp and jacobian: reverse mode for array outputs, a forward and a backward function."""

import numpy as np
import pytest

import sourcegrad


def layer(x, W):
    return np.tanh(W @ x) * 2.0


def looped(x):
    h = x
    for i in range(3):
        h = np.sin(h) * 1.5
    return h


def branchy(x):
    if np.sum(x) > 0:
        return x**2
    return -x


def numeric_jacobian(f, args, pos, eps=1e-6):
    x = np.array(args[pos], dtype=float)
    out = np.asarray(f(*args))
    J = np.zeros(out.shape + x.shape)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        a_hi = list(args)
        a_lo = list(args)
        a_hi[pos], a_lo[pos] = hi, lo
        J[(...,) + idx] = (np.asarray(f(*a_hi)) - np.asarray(f(*a_lo))) / (2 * eps)
    return J


@pytest.mark.parametrize(
    "fn, args",
    [
        (layer, (np.array([0.1, 0.2, 0.3]), np.arange(6.0).reshape(2, 3) / 10)),
        (looped, (np.array([0.1, 0.2, 0.3]),)),
        (branchy, (np.array([0.5, -0.2]),)),
        (branchy, (np.array([-0.5, 0.2]),)),
    ],
)
def test_jacobian_matches_finite_differences(fn, args):
    numeric = numeric_jacobian(fn, args, 0)
    for mode in ("rev", "fwd"):
        J = sourcegrad.jacobian(fn, mode=mode)(*args)
        np.testing.assert_allclose(J, numeric, rtol=1e-6, atol=1e-8)


def test_vjp_returns_value_and_a_reusable_pullback():
    x, W = np.array([0.1, 0.2, 0.3]), np.arange(6.0).reshape(2, 3) / 10
    value, pullback = sourcegrad.vjp(layer, wrt=(0, 1))(x, W)
    np.testing.assert_allclose(value, layer(x, W))
    J = numeric_jacobian(layer, (x, W), 0)
    for ct in (np.array([1.0, 0.0]), np.array([0.3, -2.0])):
        dx, dW = pullback(ct)
        np.testing.assert_allclose(dx, ct @ J, rtol=1e-6, atol=1e-9)
        assert dW.shape == W.shape


def test_vjp_source_has_a_forward_and_a_backward_that_share_only_residuals():
    g = sourcegrad.vjp(looped)
    g(np.array([0.1, 0.2]))
    source = g.source
    assert "def value_and_dlooped_dx_forward(x):" in source
    assert "def value_and_dlooped_dx_backward(h, saved, g):" in source
    assert "return h, (h, saved)" in source


def either_side(x, y):
    if np.sum(x) > 0.0:
        z = np.exp(x) * y  # z and its parts exist on one side only
    else:
        z = x * y
    return np.sum(z)


def counted(x, n):
    s = 0.5
    for i in range(n):
        s = s * x[i] + 1.0
    return s


@pytest.mark.parametrize(
    "f, args",
    [
        (either_side, (np.array([0.3, -0.1]), 0.7)),
        (either_side, (np.array([-0.3, -0.1]), 0.7)),
        (counted, (np.array([0.3, 0.6]), 2)),
        (counted, (np.array([0.3, 0.6]), 0)),  # no trip: the loop's counter never exists
    ],
)
def test_vjp_of_values_made_on_one_side_of_a_branch_or_in_a_loop_of_no_trips(f, args):
    """The forward hands the backward what it reads; a value made in a branch not taken, or
    a loop counter of a loop of no trips, does not exist (the forward raised
    UnboundLocalError returning it): None stands for it, and the backward never reads it."""
    value, pullback = sourcegrad.vjp(f)(*args)
    assert value == f(*args)
    np.testing.assert_allclose(pullback(1.0), sourcegrad.grad(f)(*args), rtol=1e-13)
    np.testing.assert_allclose(pullback(1.0), numeric_jacobian(f, args, 0), rtol=1e-6, atol=1e-9)
