"""Self-updates in loop and branch bodies (`s = s - (s * 2.0 - s)`, `s -= E(s)`) against
central finite differences in float64.

The statement's target is also its operand, so inside a loop or branch its adjoint is an
accumulator that the statement's own backward updates while other parts of the same
backward still read it. A rewrite that looks through a part's computation (`-d_s` added
as `d_s - ...`, `(-d_s) * 2.0` added as `- d_s * 2.0`) must not read the accumulator
again after it changed (the reliability issue's reproducers: gradient -2.0 where it is 0).
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def _check(fn, *args, wrt=0):
    grads = sourcegrad.grad(fn, wrt=wrt)(*args)
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    grads = grads if isinstance(wrt, tuple) else (grads,)
    for pos, g in zip(positions, grads):
        expected = numeric_grad(fn, args, pos)
        assert np.shape(g) == np.shape(args[pos])
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)
    return grads


# -- the reproducers ------------------------------------------------------------------


def for_sub_of_difference(s):
    for i in range(1):
        s = s - (s * 2.0 - s)
    return s


def if_isub_of_sum(s, c):
    if c > 0:
        s -= s * 2.0 + s
    return s


def else_isub_of_square(x, c):
    if c > 0:
        x = x * 3.0
    else:
        x -= x * x - x
    return x


def test_loop_self_update_gradient_is_zero():
    g = sourcegrad.grad(for_sub_of_difference)(1.5)
    assert g == 0.0  # s - (2s - s) is 0 * s
    _check(for_sub_of_difference, 1.5)


def test_branch_isub_of_sum():
    _check(if_isub_of_sum, 1.5, 1.0)
    _check(if_isub_of_sum, 1.5, -1.0)


def test_else_isub_of_square():
    _check(else_isub_of_square, 1.5, -1.0)
    _check(else_isub_of_square, 1.5, 1.0)


# -- variants: loops, branches, nesting, every augmented operator -----------------------------


def while_sub_of_difference(s):
    i = 0
    while i < 3:
        s = s - (s * 2.0 - s) + s * 0.5
        i = i + 1
    return s


def for_square_plus_self(s):
    for i in range(2):
        s = s * s + s
    return s


def nested_loops(s):
    for i in range(2):
        for j in range(2):
            s = s - (s * 0.5 - s * s)
    return s


def loop_then_branch(s, c):
    for i in range(3):
        if c > i:
            s -= s * 2.0 - s * s
        else:
            s += s * 0.5 + 1.0
    return s


def iadd_of_self(s):
    for i in range(2):
        s += s * 2.0 - s
    return s


def imul_of_self(s):
    for i in range(2):
        s *= s * 2.0 - s
    return s


def idiv_of_self(s):
    for i in range(2):
        s /= s * 2.0 + s
    return s


def negated_product(s):
    for i in range(2):
        s = s - (-s) * 3.0 - s
    return s


def branch_negated_product(s, c):
    if c > 0:
        s = s + (-s) * (s - 2.0)
    return s


def two_self_updates(s, t):
    for i in range(2):
        s = s - (s * t - s)
        t -= t * s + t
    return s * t


@pytest.mark.parametrize(
    "fn",
    [
        while_sub_of_difference,
        for_square_plus_self,
        nested_loops,
        iadd_of_self,
        imul_of_self,
        idiv_of_self,
        negated_product,
    ],
)
def test_float_loop_self_updates(fn):
    _check(fn, 0.7)


@pytest.mark.parametrize("c", [-1.0, 1.5, 5.0])
def test_loop_with_branch_self_updates(c):
    _check(loop_then_branch, 0.6, c)
    _check(branch_negated_product, 0.6, c)


def test_two_coupled_self_updates():
    _check(two_self_updates, 0.6, 0.3, wrt=(0, 1))


# arrays: the same bodies (the helpers are inlined), weighted so every element counts
def sum_while(x):
    return np.sum(while_sub_of_difference(x) * np.arange(1.0, 5.0))


def sum_square_plus_self(x):
    return np.sum(for_square_plus_self(x) * np.arange(1.0, 5.0))


def sum_nested(x):
    return np.sum(nested_loops(x) * np.arange(1.0, 5.0))


def sum_iadd(x):
    return np.sum(iadd_of_self(x) * np.arange(1.0, 5.0))


def sum_imul(x):
    return np.sum(imul_of_self(x) * np.arange(1.0, 5.0))


def sum_idiv(x):
    return np.sum(idiv_of_self(x) * np.arange(1.0, 5.0))


def sum_negated_product(x):
    return np.sum(negated_product(x) * np.arange(1.0, 5.0))


@pytest.mark.parametrize(
    "fn",
    [
        sum_while,
        sum_square_plus_self,
        sum_nested,
        sum_iadd,
        sum_imul,
        sum_idiv,
        sum_negated_product,
    ],
)
def test_array_loop_self_updates(fn):
    _check(fn, np.array([0.5, -0.4, 0.3, 0.6]))


def array_for_sub_of_difference(x):
    for i in range(2):
        x = x - (x * 2.0 - x)
    return np.sum(x * x)


def array_else_isub(x, c):
    if c > 0:
        x = x * 3.0
    else:
        x -= x * x - x
    return np.sum(x * np.arange(1.0, 5.0))


def array_if_isub(x, c):
    for i in range(2):
        if c > 0:
            x -= x * 2.0 + x
        x += np.tanh(x) * x
    return np.sum(x)


@pytest.mark.parametrize("c", [-1.0, 1.0])
def test_array_branch_self_updates(c):
    x = np.array([0.7, -0.4, 0.3, 1.1])
    _check(array_for_sub_of_difference, x)
    _check(array_else_isub, x, c)
    _check(array_if_isub, x * 0.2, c)


# -- a loop whose adjoint enters as a constant (`return 0.5 * x`) ------------------------------
# The reverse pass first tries to keep the constant out of the loop body; when that fails
# it undoes the attempt, and the names of the attempt are free again. A name the attempt
# gave a temporary (`dx = ... + 0.75`) then named the accumulator, and what the temporary
# was computed from was taken for the accumulator's value (fuzz 0-176: 1.57 for 2.78).


def constant_seed_isub(x):
    for i in range(2):
        x = np.tanh(x) * 1.5
        x -= (x - x * 1.5) - x * 0.5
    return 0.5 * x


def constant_seed_sub(x):
    for i in range(3):
        x = x - (x * 2.0 - x * np.tanh(x))
    return 2.0 * x


def constant_seed_branch(x, c):
    for i in range(2):
        if c > 0:
            x = np.sin(x) - (x * 1.5 - x)
    return 0.5 * x


def constant_seed_array(x):
    for i in range(2):
        x = np.tanh(x) * 1.5
        x -= (x - x * 1.5) - x * 0.5
    return 0.5 * np.sum(x)


def test_constant_adjoint_into_a_loop_with_self_updates():
    _check(constant_seed_isub, -0.23)
    _check(constant_seed_isub, 0.4)
    _check(constant_seed_sub, 0.3)
    _check(constant_seed_branch, 0.3, 1.0)
    _check(constant_seed_branch, 0.3, -1.0)
    _check(constant_seed_array, np.array([-0.23, 0.4, 0.1]))


# -- the same bodies in forward mode and differentiated twice ---------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        for_sub_of_difference,
        while_sub_of_difference,
        for_square_plus_self,
        nested_loops,
        negated_product,
    ],
)
def test_forward_mode_self_updates(fn):
    x = 0.7
    _, tangent = sourcegrad.jvp(fn, (x,), (1.0,))
    np.testing.assert_allclose(tangent, numeric_grad(fn, (x,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", [for_square_plus_self, nested_loops, imul_of_self])
def test_second_derivative_of_self_updates(fn):
    # the gradient's own accumulators are self-updates in loops (`d_s = d_s - ...`)
    first = sourcegrad.grad(fn)
    second = sourcegrad.grad(first)(0.7)
    np.testing.assert_allclose(
        second, numeric_grad(first, (0.7,), 0, eps=1e-5), rtol=1e-5, atol=1e-7
    )
