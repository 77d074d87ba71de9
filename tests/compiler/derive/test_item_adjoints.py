"""The adjoint of `x[index]` added where it goes: `d_x[index] += g` into an accumulator the
backward owns, instead of `d_x += unindex(g, x, index)` (a full-size array of zeros per
use, which in a loop over the rows of x costs O(rows^2)). Only for basic indices: an
integer-array index may repeat an element, which `+=` would count once."""

import re

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def rows_loop(x, A):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sum(np.tanh(x[i] * A[i]))
    return s + x[0, 1] * 2.0 + np.sum(x[1:, 2] ** 2)


def windows(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s = s + np.sum(np.sin(x[i : i + 2]) * (i + 1.0))
    return s


def repeated_rows(x):
    s = 0.0
    for i in range(2):
        s = s + np.sum(x[[0, 0, 1]] ** 2 * (i + 1.0))
    return s


def two_reads_of_one_row(x):
    return np.sum(x[0] * x[0]) + np.sum(np.exp(x[0])) + np.sum(x[1] ** 3)


@pytest.fixture
def rng():
    return np.random.default_rng(4)


def _backward(source):
    return source[source.index("# backward") :]


def test_rows_of_a_loop_are_added_in_place(rng):
    x, A = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    g = sourcegrad.grad(rows_loop, wrt=(0, 1))
    dx, dA = g(x, A)
    np.testing.assert_allclose(dx, numeric_grad(rows_loop, (x, A), 0), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(dA, numeric_grad(rows_loop, (x, A), 1), rtol=1e-7, atol=1e-9)
    loop = g.source[g.source.index("for i in reversed") :]
    assert "dx[i] += " in loop and "dA[i] += " in loop
    assert "unindex" not in loop


def test_slices_are_added_in_place(rng):
    x = rng.normal(size=(5, 2))
    g = sourcegrad.grad(windows)
    np.testing.assert_allclose(g(x), numeric_grad(windows, (x,), 0), rtol=1e-7, atol=1e-9)
    assert re.search(r"dx\[i:\w+\] \+= ", g.source) and "unindex" not in g.source


def test_repeated_integer_indices_still_accumulate_every_repetition(rng):
    x = rng.normal(size=(3, 2))
    g = sourcegrad.grad(repeated_rows)
    expected = numeric_grad(repeated_rows, (x,), 0)
    np.testing.assert_allclose(g(x), expected, rtol=1e-7, atol=1e-9)
    # row 0 is read twice per trip: +=, which would count it once, must not be used
    assert "[[0, 0, 1]] +=" not in g.source and "unindex" in g.source


def test_straight_line_reads_of_rows(rng):
    x = rng.normal(size=(3, 4))
    g = sourcegrad.grad(two_reads_of_one_row)
    np.testing.assert_allclose(
        g(x), numeric_grad(two_reads_of_one_row, (x,), 0), rtol=1e-7, atol=1e-9
    )


def test_second_order_through_in_place_item_updates(rng):
    x, A = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    v = rng.normal(size=(4, 3))
    hv = sourcegrad.hvp(rows_loop, wrt=0)(x, A, v)
    g = sourcegrad.grad(rows_loop, wrt=0)
    eps = 1e-6
    expected = (g(x + eps * v, A) - g(x - eps * v, A)) / (2 * eps)
    np.testing.assert_allclose(hv, expected, rtol=1e-6, atol=1e-8)


def test_the_inputs_are_not_written(rng):
    x, A = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    before = x.copy(), A.copy()
    sourcegrad.grad(rows_loop, wrt=(0, 1))(x, A)
    np.testing.assert_array_equal(x, before[0])
    np.testing.assert_array_equal(A, before[1])


def computed_into_rows(a, n):
    rows = np.empty((n, 3))
    s = 0.0
    for t in range(n):
        d = np.multiply(a, t + 1.0, out=rows[t])  # numpy returns the row it wrote
        s = s + np.sum(d * d)
    return s + np.sum(np.sin(rows))


def buffer_updated_in_a_loop(a, n):
    u = a * 1.0
    for t in range(n):
        np.sin(u, out=u)
    return np.sum(u * a)


@pytest.mark.parametrize("fn", [computed_into_rows, buffer_updated_in_a_loop])
def test_out_into_an_item_or_a_buffer_in_a_loop(fn):
    """`out=rows[t]` is `rows[t] = f(...)` whose value is the row; `out=u` in a loop
    updates u every trip (it used to be rejected, and out=rows[t] unsupported)."""
    a = np.array([0.3, -0.2, 0.7])
    value, grad = sourcegrad.value_and_grad(fn)(a, 3)
    assert value == pytest.approx(fn(a, 3), rel=1e-12)
    np.testing.assert_allclose(grad, numeric_grad(fn, (a, 3), 0), rtol=1e-6, atol=1e-9)
