"""Adjoints of values held in nested containers built inside the function.

Regression: a tuple inside a list (`pairs = [(x, x)]`) was a compile-time tuple of atoms
with no name, so the list's adjoint stopped at it and x got a zero gradient, silently;
`for W, b in params` over a list of tuples and `a, b = params[0]` lost it the same way.
Every case is checked against central finite differences (float64), in reverse and
forward mode.
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def tuple_in_list(x):
    pairs = [(x, x)]
    return np.sum(pairs[0][0])


def both_items_of_a_tuple_in_a_list(x):
    pairs = [(x, 3.0 * x)]
    return np.sum(pairs[0][0] * pairs[0][1])


def loop_over_list_of_tuples(x):
    params = [(x, 2.0 * x), (x * x, x)]
    s = 0.0
    for W, b in params:
        s = s + np.sum(W * b)
    return s


def unpack_an_item(x):
    params = [(x, 2.0 * x)]
    a, b = params[0]
    return np.sum(a * np.sin(b))


def tuple_in_tuple_indexed_at_run_time(x):
    nested = ((x, 2.0 * x), (np.exp(x), x))
    s = 0.0
    for i in range(2):
        s = s + np.sum(nested[i][0] * nested[i][1])
    return s


def appended_tuples(x):
    pairs = []
    for k in range(3):
        pairs.append((x * (k + 1.0), np.cos(x)))
    s = 0.0
    for a, b in pairs:
        s = s + np.sum(a * b)
    return s


def list_in_list(x):
    rows = [[x, 2.0 * x], [x**2]]
    return np.sum(rows[0][1] * rows[1][0]) + np.sum(rows[0][0])


def tuple_of_list_indexed_by_loop(x):
    t = ([x, x * x], np.tanh(x))
    s = 0.0
    for j in range(2):
        s = s + np.sum(t[0][j] * t[1])
    return s


def enumerate_list_of_tuples(x, y):
    layers = [(x, y), (y, x)]
    s = 0.0
    for i, (a, b) in enumerate(layers):
        s = s + (i + 1.0) * np.sum(a * b**2)
    return s


def zip_of_tuples(x, y):
    ws = [(x, y)]
    bs = [(y, x)]
    s = 0.0
    for (a, b), (c, d) in zip(ws, bs):
        s = s + np.sum(a * c + b * d**3)
    return s


CASES = [
    tuple_in_list,
    both_items_of_a_tuple_in_a_list,
    loop_over_list_of_tuples,
    unpack_an_item,
    tuple_in_tuple_indexed_at_run_time,
    appended_tuples,
    list_in_list,
    tuple_of_list_indexed_by_loop,
]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_gradient_reaches_items_of_nested_containers(fn):
    x = np.array([0.3, -1.2, 2.0])
    g = sourcegrad.grad(fn)(x)
    np.testing.assert_allclose(g, numeric_grad(fn, (x,), 0), rtol=1e-7, atol=1e-9)
    assert np.any(g != 0.0)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_forward_mode_through_nested_containers(fn):
    x = np.array([0.3, -1.2, 2.0])
    v = np.array([1.0, -0.5, 0.25])
    _, tangent = sourcegrad.jvp(fn, (x,), (v,))
    np.testing.assert_allclose(tangent, numeric_grad(fn, (x,), 0) @ v, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("fn", [enumerate_list_of_tuples, zip_of_tuples], ids=lambda f: f.__name__)
def test_two_inputs_through_nested_containers(fn):
    x, y = np.array([0.5, -1.0]), np.array([1.5, 0.25])
    dx, dy = sourcegrad.grad(fn, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(dx, numeric_grad(fn, (x, y), 0), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(dy, numeric_grad(fn, (x, y), 1), rtol=1e-7, atol=1e-9)


def test_the_list_keeps_the_users_name():
    g = sourcegrad.grad(loop_over_list_of_tuples)
    g(np.array([1.0, 2.0]))
    assert "params = [(x, 2.0 * x), (x * x, x)]" in g.source


def tuple_of_a_variable_changed_later(x):
    h = x
    for i in range(2):
        h = h * 2.0
    t = (h, 1.0)
    for i in range(2):
        h = h * 3.0
    return np.sum(t[0] * x) + np.sum(h)


def dict_of_a_variable_changed_later(x):
    h = x
    for i in range(2):
        h = h * 2.0
    t = {"a": h}
    for i in range(2):
        h = h * 3.0
    return np.sum(t["a"] * x) + np.sum(h)


def loop_over_a_tuple_whose_variable_changes(x):
    h = x
    for i in range(2):
        h = h * 2.0
    for a, b in ((h, x), (x, h)):
        h = h * 3.0
        x = x + a * b
    return np.sum(x) + np.sum(h)


@pytest.mark.parametrize(
    "fn",
    [
        tuple_of_a_variable_changed_later,
        dict_of_a_variable_changed_later,
        loop_over_a_tuple_whose_variable_changes,
    ],
    ids=lambda f: f.__name__,
)
def test_a_container_holds_its_variables_values_when_it_was_made(fn):
    """Regression: a compile-time tuple (or dict) held the *name* of a variable, so a later
    assignment changed what it held: value 216 instead of 120, gradient 72 instead of 40."""
    x = np.array([1.0, 2.0])
    value, g = sourcegrad.value_and_grad(fn)(x)
    assert value == pytest.approx(fn(x.copy()), rel=1e-12)
    np.testing.assert_allclose(g, numeric_grad(fn, (x,), 0), rtol=1e-7, atol=1e-9)
