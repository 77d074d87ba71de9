"""Compiled programs of the outsider probes of session 54: the exponent's gradient of
`x ** y` at a zero base, through both front ends (the source front end and the trace), against
torch's number there (finite differences cannot reach it: x ** y is infinite) and finite
differences in float64 elsewhere.
"""

import copy

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import memory_caches

FRONT_ENDS = ["source", "trace"]
BASE = np.array([0.0, 2.0, 0.0, 0.5])
EXPONENT = np.array([-1.0, 1.5, 2.0, 3.0])


def gradient(fn, front_end, wrt):
    """sourcegrad.grad(fn, wrt) from its source or from a trace (the code compiled for fn
    before is dropped first, so that the front end asked runs)."""
    memory_caches.forget(fn)
    g = sourcegrad.grad(fn, wrt)
    g.reads_source = front_end == "source"
    return g


def power_sum(x, y):
    return np.sum(x**y)


def numpy_power_times(x, y):
    return np.sum(np.power(x, y) * y)


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_exponent_gradient_at_a_zero_base(front_end):
    # d/dy 0 ** y = 0 ** y log 0: -inf for y < 0 (inf * -inf; it was NaN, inf * log 1), 0 for
    # y >= 0; elsewhere x ** y log x
    with np.errstate(divide="ignore", invalid="ignore"):
        got = gradient(power_sum, front_end, 1)(BASE.copy(), EXPONENT.copy())
    assert got[0] == -np.inf
    assert got[2] == 0.0
    np.testing.assert_allclose(got[[1, 3]], (BASE**EXPONENT * np.log(BASE))[[1, 3]], rtol=1e-12)


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_exponent_gradient_through_np_power(front_end):
    with np.errstate(divide="ignore", invalid="ignore"):
        got = gradient(numpy_power_times, front_end, 1)(BASE.copy(), EXPONENT.copy())
    assert got[0] == np.inf  # y * (-inf) + 0 ** -1, y = -1
    assert got[2] == 0.0
    x, y = np.array([0.7, 2.0]), np.array([1.5, -0.5])
    eps = 1e-6
    want = [
        (numpy_power_times(x, y + eps * e) - numpy_power_times(x, y - eps * e)) / (2 * eps)
        for e in np.eye(2)
    ]
    np.testing.assert_allclose(
        gradient(numpy_power_times, front_end, 1)(copy.deepcopy(x), y.copy()), want, rtol=1e-6
    )
