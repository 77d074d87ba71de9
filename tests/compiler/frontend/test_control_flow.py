"""Control flow, calls, closures and mutation: compiled gradients agree with finite differences."""

import math

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from tests.compiler.control_cases import CONTROL_CASES

IDS = [f"{c[0].__name__}-{i}" for i, c in enumerate(CONTROL_CASES)]


@pytest.mark.parametrize("fn, make_args, wrt", CONTROL_CASES, ids=IDS)
def test_gradient_matches_finite_differences(fn, make_args, wrt):
    args = make_args(np.random.default_rng(0))
    grads = sourcegrad.grad(fn, wrt=wrt)(*args)
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    grads = grads if isinstance(wrt, tuple) else (grads,)
    for pos, g in zip(positions, grads):
        expected = numeric_grad(fn, args, pos)
        assert np.shape(g) == np.shape(args[pos])
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


def test_at_least_forty_functions():
    assert len({c[0] for c in CONTROL_CASES}) >= 40


def rank_changes_in_loop(x, W):
    h = x
    for i in range(3):
        h = np.tanh(h @ W)
        if i == 1:
            h = h.reshape(1, 3)  # h is (3,) on some trips and (1, 3) on others
    return np.sum(h)


def test_a_rank_known_only_at_run_time():
    """matmul's VJP picks its formula by the operands' ranks; when a variable's rank changes
    between trips the formula is chosen at run time, and the reshape's backward reads the
    old shape (restored), not the new one."""
    x = np.array([0.3, -0.5, 0.8])
    W = np.array([[0.5, -0.2, 0.1], [0.3, 0.4, -0.6], [0.2, 0.1, 0.9]])
    gradient = sourcegrad.grad(rank_changes_in_loop, wrt=(0, 1))
    dx, dW = gradient(x, W)
    np.testing.assert_allclose(dx, numeric_grad(rank_changes_in_loop, (x, W), 0), rtol=1e-7)
    np.testing.assert_allclose(dW, numeric_grad(rank_changes_in_loop, (x, W), 1), rtol=1e-7)
    assert "vjp_at_run_time('matmul_op', 0" in gradient.source
    v = np.array([1.0, -2.0, 0.5])
    _, tangent = sourcegrad.jvp(rank_changes_in_loop, (x, W), (v, None))
    assert tangent == pytest.approx(np.dot(dx, v), rel=1e-10)


def rnn_with_decay(W, U, xs, h):
    for x_t in xs:
        h = np.tanh(W @ h + U @ x_t)
        W = W * 0.9  # dW is scaled inside the loop: its outer products cannot be batched
    return np.sum(h**2)


def test_rank_one_updates_of_a_loop_become_one_matrix_product():
    rng = np.random.default_rng(3)
    W, U = rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(4, 3))
    xs, h = rng.normal(size=(5, 3)), rng.normal(size=4)
    gradient = sourcegrad.grad(rnn_with_decay, wrt=(0, 1))
    dW, dU = gradient(W, U, xs, h)
    np.testing.assert_allclose(dW, numeric_grad(rnn_with_decay, (W, U, xs, h), 0), rtol=1e-6)
    np.testing.assert_allclose(dU, numeric_grad(rnn_with_decay, (W, U, xs, h), 1), rtol=1e-6)
    source = gradient.source
    # U @ x_t for every step is one product before the loop, and dU one product after it
    # (the rows of xs themselves: x_t is not saved); dW is read in the loop: per step
    assert "U_xs = xs.dot(U.T)" in source and "dU = d_U_xs.T.dot(xs)" in source
    assert "saved.append(x_t)" not in source
    assert "np.outer" in source


def parameter_rebound_in_a_branch(x0, x1, x2):
    for i in range(2):
        if i % 2 == 0:
            continue
        x2 = np.tanh(x0)
    if np.sum(np.array([x2, x0])) < 1.0:
        x1 = x1 * x0  # the parameter's one assignment: x1 held the argument before it
    return x2 * x1


def test_a_parameter_rebound_once_is_read_where_the_backward_needs_it():
    """The adjoint of x2 is the final x1; it was read after the branch's reverse had
    restored x1 to the argument (a parameter assigned once did not count as overwritten)."""
    args = (0.47194484345894305, 0.4791225510265242, -0.18193876560701153)
    grads = sourcegrad.grad(parameter_rebound_in_a_branch, wrt=(0, 1, 2))(*args)
    for i, g in enumerate(grads):
        assert g == pytest.approx(
            numeric_grad(parameter_rebound_in_a_branch, args, i), rel=1e-7, abs=1e-9
        )


def minus_itself_twice(x):
    y = np.sin(x)
    if np.sum(y) < 10.0:
        x = x - (x + x)  # d_x_old = d_x_new - 2 d_x_new
    return np.sum(x * y) + np.sum(x)


def minus_itself_scalar(x):
    y = math.sin(x)
    if y < 10.0:
        x = x - (x + x)
    return x * y + x


@pytest.mark.parametrize(
    "fn, x", [(minus_itself_twice, np.array([0.3, -0.7, 1.1])), (minus_itself_scalar, 0.4)]
)
def test_a_negated_adjoint_is_not_read_after_its_accumulator_changes(fn, x):
    got = sourcegrad.grad(fn)(x)
    np.testing.assert_allclose(got, numeric_grad(fn, (x,), 0), rtol=1e-7, atol=1e-10)
