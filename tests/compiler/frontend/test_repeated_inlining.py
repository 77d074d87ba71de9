"""A helper called twice: each inlining's values stay its own.

Regressions (silently wrong values and gradients, before): the callee's names are
prefixed with its name in every inlining, so (1) its first straight-line value took the
same name in both (`inner_a`), and the second call overwrote what the first returned
(`outer` below: value 39 for 19, gradient [15, 27] for [7, 11]); (2) a value the callee
returns from a variable of its loops was that variable, which the second call
reassigned (value 54 for 30). Checked against central finite differences (float64)."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def double(x):
    a = x * 2.0
    return a


def twice_straight(x):
    p = double(x)
    q = double(3.0 * x)
    return np.sum(p * x) + np.sum(q * 0.5)


def doubled_in_a_loop(x):
    h = x
    for i in range(2):
        h = h * 2.0
    return h


def twice_with_a_loop(x):
    a = doubled_in_a_loop(x)
    b = doubled_in_a_loop(3.0 * x)
    return np.sum(a * x) + np.sum(b * 0.5)


def pair_from_a_loop(x):
    h = x
    for i in range(2):
        h = np.sin(h)
    return h, {"h": h}


def twice_with_containers(x):
    a, da = pair_from_a_loop(x)
    b, db = pair_from_a_loop(2.0 * x)
    return np.sum(a * db["h"]) + np.sum(da["h"] * b**2)


def twice_in_a_loop(x):
    s = 0.0
    for k in range(3):
        p = double(x * (k + 1.0))
        q = doubled_in_a_loop(p)
        s = s + np.sum(p * q)
    return s


@pytest.mark.parametrize(
    "fn",
    [twice_straight, twice_with_a_loop, twice_with_containers, twice_in_a_loop],
    ids=lambda f: f.__name__,
)
def test_each_call_of_a_helper_keeps_its_value(fn):
    x = np.array([0.7, -1.3, 2.0])
    value, g = sourcegrad.value_and_grad(fn)(x)
    assert value == pytest.approx(fn(x), rel=1e-12)
    np.testing.assert_allclose(g, numeric_grad(fn, (x,), 0), rtol=1e-7, atol=1e-9)
    _, tangent = sourcegrad.jvp(fn, (x,), (np.ones(3),))
    np.testing.assert_allclose(tangent, numeric_grad(fn, (x,), 0).sum(), rtol=1e-7)


def recursive(x, n):
    h = x
    for i in range(2):
        h = h * 2.0
    if n > 0:
        y = recursive(x * 3.0, n - 1)
        return np.sum(h * x) + y
    return np.sum(h * x)


def recursion_of_depth_two(x):
    return recursive(x, 2)


def test_an_unrolled_recursion_keeps_each_levels_variables():
    """Regression: the inner call's loop variable was the outer call's (same prefix), so
    the outer read the inner's value after it returned (value 2340 for 1820)."""
    x = np.array([1.0, 2.0])
    value, g = sourcegrad.value_and_grad(recursion_of_depth_two)(x)
    assert value == pytest.approx(recursion_of_depth_two(x), rel=1e-12)
    np.testing.assert_allclose(g, numeric_grad(recursion_of_depth_two, (x,), 0), rtol=1e-7)
    value, g = sourcegrad.value_and_grad(recursive)(x, 3)  # lowered per int value
    assert value == pytest.approx(recursive(x, 3), rel=1e-12)
    np.testing.assert_allclose(g, numeric_grad(recursive, (x, 3), 0), rtol=1e-7)
