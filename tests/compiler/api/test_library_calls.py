"""The inlined entry of a gradient calls math's and numpy's C functions as constants of its
closure (api/dispatch.py `_LibraryCalls`): the same numbers, one attribute read less a call."""

import math

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def on_floats(x, y):
    return math.sin(x) * y + math.exp(x * y) / (1.0 + x**2)


def on_arrays(x, y):
    return np.sum(np.tanh(x) * y + np.exp(x * y))


def _reads(entry):
    code = entry.__code__
    return set(code.co_names), set(code.co_freevars)


def test_a_float_gradient_calls_math_functions_from_its_closure():
    g = sourcegrad.grad(on_floats, wrt=(0, 1))
    got = g(0.7, -1.3)
    names, cells = _reads(g.__func__)
    assert {"sin", "exp", "cos"}.isdisjoint(names)
    assert {c.rsplit("_", 2)[-1] for c in cells if "_math_" in c} >= {"sin", "exp", "cos"}
    for k, pos in enumerate((0, 1)):
        assert got[k] == pytest.approx(numeric_grad(on_floats, (0.7, -1.3), pos), rel=1e-7)


@pytest.mark.parametrize("zero_d", [False, True])
def test_numpy_functions_are_bound_and_the_gradient_is_unchanged(zero_d):
    rng = np.random.default_rng(0)
    x, y = (np.array(0.3), np.array(-0.4)) if zero_d else (rng.normal(size=5), rng.normal(size=5))
    g = sourcegrad.grad(on_arrays, wrt=(0, 1))
    for _ in range(2):  # the second call runs the entry
        got = g(x, y)
    names, _ = _reads(g.__func__)
    assert "tanh" not in names and "exp" not in names
    for k, pos in enumerate((0, 1)):
        np.testing.assert_allclose(got[k], numeric_grad(on_arrays, (x, y), pos), rtol=1e-7)
