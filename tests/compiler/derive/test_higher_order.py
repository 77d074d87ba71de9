"""grad(grad(f)): the generated gradient is ordinary Python and is differentiated again."""

import ast

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def cubic_sine(x):
    return np.sin(x) * x**3


def two_args(x, y):
    return np.tanh(x * y) * x + np.exp(y) * x**2


def looped(x):
    s = 0.0
    for i in range(3):
        s = s + np.sin(x * (i + 1.0))
    return s


def test_second_derivative_matches_closed_form():
    x = 0.7
    expected = -np.sin(x) * x**3 + 6 * np.cos(x) * x**2 + 6 * x * np.sin(x)
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


def branchy(x):
    """Loops, a branch on the input, a while loop with a data-dependent trip count."""
    s = 0.0
    for i in range(4):
        if x * i > 1.0:
            s = s + np.sin(x) * x
        else:
            s = s + x**3 / (i + 1.0)
    t = x
    while t < 5.0:
        t = t * 1.5 + np.cos(t)
    return s + np.exp(-t * 0.1) * x


def early_return(x):
    acc = x
    for i in range(5):
        acc = np.tanh(acc) * x + 0.1
        if acc > 0.8:
            return acc * x**2
    return np.log(1.0 + acc**2)


def stacked(x, w):
    """A loop over rows of an array argument that is not differentiated."""
    h = x
    for row in w:
        h = np.sum(np.sin(row * h)) + h * 0.5
    return h * h


CONTROL_FLOW = [
    (branchy, (0.7,)),
    (branchy, (0.2,)),
    (branchy, (0.45,)),
    (early_return, (0.9,)),
    (early_return, (0.3,)),
    (stacked, (0.6, np.array([[0.3, -0.2], [0.5, 0.1], [0.9, -0.4]]))),
]


@pytest.mark.parametrize("fn,args", CONTROL_FLOW, ids=lambda v: getattr(v, "__name__", ""))
def test_second_and_third_derivatives_through_loops_and_branches(fn, args):
    d1 = sourcegrad.grad(fn)
    d2 = sourcegrad.grad(d1)
    d3 = sourcegrad.grad(d2)
    assert d2(*args) == pytest.approx(numeric_grad(d1, args, 0), rel=1e-6, abs=1e-8)
    assert d3(*args) == pytest.approx(numeric_grad(d2, args, 0), rel=1e-5, abs=1e-7)
    # a fourth order works the same way: each level is generated code again
    d4 = sourcegrad.grad(d3)
    assert d4(*args) == pytest.approx(numeric_grad(d3, args, 0), rel=1e-4, abs=1e-6)


def test_higher_order_through_loops_with_a_zero_dim_input_keeps_its_type():
    x = np.array(0.7)
    d2 = sourcegrad.grad(sourcegrad.grad(branchy))(x)
    assert type(d2) is np.float64  # (a 0-d array's: a numpy scalar, as numpy's ufuncs give)
    assert float(d2) == pytest.approx(sourcegrad.grad(sourcegrad.grad(branchy))(0.7), rel=1e-12)


def test_value_and_grad_of_a_gradient_through_loops():
    d1 = sourcegrad.grad(looped)
    value, d2 = sourcegrad.value_and_grad(d1)(0.7)
    assert value == pytest.approx(d1(0.7), rel=1e-12)
    assert d2 == pytest.approx(numeric_grad(d1, (0.7,), 0), rel=1e-7)


def test_second_order_source_through_loops_is_readable():
    d2 = sourcegrad.grad(sourcegrad.grad(looped))
    d2(0.7)
    source = d2.source
    assert "def ddlooped_dx_dx(x):" in source
    assert "forward-mode" not in source.splitlines()[0]
    # tangents of placeholders and of loop-index arithmetic are literal zeros
    assert "zeros_adjoint" not in source
    assert "return dx_dot" in source
    assert len(source.splitlines()) < 50
    # no dead statements: every name the function assigns is read afterwards
    tree = ast.parse(source)
    stored = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    } - {"i", "k"}  # loop counters
    loaded = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    assert stored <= loaded, stored - loaded


def test_second_derivative_through_loops_is_forward_over_reverse():
    d1 = sourcegrad.grad(looped)
    assert sourcegrad.grad(d1)(0.7) == pytest.approx(numeric_grad(d1, (0.7,), 0), rel=1e-7)


def mixed(x, w):
    s = 0.0
    for i in range(2):
        if x > 0.1:
            s = s + np.sum(np.sin(w * x))
        else:
            s = s + np.sum(w**2) * x
    return s


@pytest.mark.parametrize("x", [0.5, -0.3])
def test_mixed_array_second_derivative_through_loops_by_forward_columns(x):
    args = (x, np.array([0.3, -0.7, 1.1]))
    d1 = sourcegrad.grad(mixed, wrt=0)
    d1w = sourcegrad.grad(d1, wrt=1)
    np.testing.assert_allclose(d1w(*args), numeric_grad(d1, args, 1), rtol=1e-7)
    dxx, dxw = sourcegrad.grad(d1, wrt=(0, 1))(*args)
    assert dxx == pytest.approx(numeric_grad(d1, args, 0), rel=1e-6, abs=1e-9)
    np.testing.assert_allclose(dxw, d1w(*args), rtol=1e-12)
    value, g = sourcegrad.value_and_grad(d1, wrt=1)(*args)
    assert value == d1(*args)
    # there is no single generated source for it, and asking says why
    with pytest.raises(sourcegrad.SourcegradError, match="column by column"):
        d1w.source
