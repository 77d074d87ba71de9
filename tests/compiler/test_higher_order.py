"""grad(grad(f)): the generated gradient is ordinary Python and is differentiated again."""
import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def cubic_sine(x):
    return np.sin(x) * x ** 3


def two_args(x, y):
    return np.tanh(x * y) * x + np.exp(y) * x ** 2


def looped(x):
    s = 0.0
    for i in range(3):
        s = s + np.sin(x * (i + 1.0))
    return s


def test_second_derivative_matches_closed_form():
    x = 0.7
    expected = -np.sin(x) * x ** 3 + 6 * np.cos(x) * x ** 2 + 6 * x * np.sin(x)
    assert sourcegrad.grad(sourcegrad.grad(cubic_sine))(x) == pytest.approx(expected, rel=1e-12)


def test_third_derivative_matches_finite_differences_of_the_second():
    d2 = sourcegrad.grad(sourcegrad.grad(cubic_sine))
    d3 = sourcegrad.grad(d2)
    assert d3(0.7) == pytest.approx(numeric_grad(d2, (0.7,), 0), rel=1e-7)


def test_mixed_second_derivative():
    dx = sourcegrad.grad(two_args, wrt=0)
    dxdy = sourcegrad.grad(dx, wrt=1)
    assert dxdy(0.3, 0.4) == pytest.approx(numeric_grad(dx, (0.3, 0.4), 1), rel=1e-7)


def test_second_order_source_is_readable_and_free_of_dead_code():
    d2 = sourcegrad.grad(sourcegrad.grad(cubic_sine))
    d2(0.7)
    source = d2.source
    assert "the generated gradient of cubic_sine" in source.splitlines()[0]
    assert "saved" not in source and "None" not in source
    assert len(source.splitlines()) < 30


def test_second_derivative_through_loops_is_forward_over_reverse():
    d1 = sourcegrad.grad(looped)
    assert sourcegrad.grad(d1)(0.7) == pytest.approx(numeric_grad(d1, (0.7,), 0), rel=1e-7)


def test_third_order_through_loops_is_refused_not_wrong():
    with pytest.raises(sourcegrad.SourcegradError, match="loops or branches"):
        sourcegrad.grad(sourcegrad.grad(sourcegrad.grad(looped)))(0.7)
