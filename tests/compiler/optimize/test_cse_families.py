"""Common-subexpression elimination shares a value between two spellings of one
computation (`math.cos(x)` and `np.cos(x)`), never between computations that only share
derivative rules: min borrows max's rules, a tuple a list's (fuzz seed 41-1846: np.amin
was read as np.amax, a silently wrong gradient)."""

import numpy as np

import sourcegrad
from sourcegrad.api import numeric_grad


def max_and_min(x):
    return np.amax(x.reshape(1, 3)) + 2.0 * np.amin(x.reshape(1, 3)) + 3.0 * np.min(x)


def tuple_and_list(x):
    a, b = np.sin(x), np.cos(x)
    t = (a, b)
    items = [a, b]
    items.append(a * b)
    return np.sum(t[0] * items[2]) + np.sum(items[1])


def test_min_is_not_max():
    x = np.array([1.7, 4.1, -1.2])
    g = sourcegrad.grad(max_and_min)
    np.testing.assert_allclose(g(x), numeric_grad(max_and_min, (x,), 0), rtol=1e-7)
    assert "np.amin(" in g.source and "np.amax(" in g.source


def test_a_tuple_is_not_a_list():
    x = np.linspace(0.1, 1.0, 4)
    np.testing.assert_allclose(
        sourcegrad.grad(tuple_and_list)(x), numeric_grad(tuple_and_list, (x,), 0), rtol=1e-7
    )


def constant_in_one_branch(x, c):
    y = np.sin(np.sum(x))
    n = 0
    while y < 0.0 and n < 2:  # y's type is joined over trips: not known statically
        y = np.sin(np.abs(np.sum(x)))
        n += 1
    t = (y if np.sum(x) < -0.2 else 0.25) * 1.0
    return y + t * t


def test_a_value_unknown_in_one_branch_is_not_the_other_branchs_constant():
    """The shape analysis took `t` as the constant 0.25 (the branch not taken), because
    'unknown' and 'not assigned here' were the same None (fuzz 61-1282)."""
    x = np.array([[1.0, -1.7, -1.8], [-1.1, -1.2, -0.2]])
    g = sourcegrad.grad(constant_in_one_branch)
    np.testing.assert_allclose(
        g(x, 0.0), numeric_grad(constant_in_one_branch, (x, 0.0), 0), rtol=1e-6
    )
