"""Lists passed to numpy's array functions (`np.mean([...])` of a comprehension, a list
built by append in a loop): made arrays first, as numpy makes them
(`compiler/specialise/list_operands.py`). The gradients were wrong by the list's length (np.mean) or
raised inside the compiler."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def mean_of_comprehension(x):
    return np.mean([xi**2 for xi in x])


def sum_of_comprehension(x):
    return np.sum([xi**2 for xi in x])


def mean_of_appended(x):
    ys = []
    for i in range(3):
        ys.append(x[i] ** 2)
    return np.mean(ys) + len(ys)


def mean_of_appended_to_length(x):
    ys = []
    for i in range(len(x)):
        ys.append(x[i] ** 2)
    return np.mean(ys)


def dot_of_comprehension(x):
    return np.dot([xi * 2 for xi in x], x)


def norm_of_comprehension(x):
    return np.linalg.norm([xi * 2 for xi in x])


def max_of_comprehension(x):
    return np.max([xi**2 for xi in x])


def square_of_comprehension(x):
    return np.sum(np.square([xi * 2 for xi in x]))


def prod_of_comprehension(x):
    return np.prod([xi for xi in x])


def cumsum_in_a_loop(x):
    total = 0.0
    for k in range(2):
        total = total + np.cumsum([xi * (k + 1) for xi in x])[-1]
    return total


def sum_of_list_of_arrays(x):
    return np.sum(np.var([x, x**2], axis=0))


CASES = [
    mean_of_comprehension,
    sum_of_comprehension,
    mean_of_appended,
    mean_of_appended_to_length,
    dot_of_comprehension,
    norm_of_comprehension,
    max_of_comprehension,
    square_of_comprehension,
    prod_of_comprehension,
    cumsum_in_a_loop,
    sum_of_list_of_arrays,
]
X = np.array([0.5, -1.2, 2.0, 0.3])


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_numpy_functions_of_lists_match_finite_differences(f):
    got = sourcegrad.grad(f)(X)
    np.testing.assert_allclose(got, numeric_grad(f, (X,), 0), rtol=1e-6, atol=1e-8)
    t = np.array([0.3, -0.1, 0.7, 0.2])
    eps = 1e-6
    numeric = (f(X + eps * t) - f(X - eps * t)) / (2 * eps)
    np.testing.assert_allclose(sourcegrad.jvp(f, (X,), (t,))[1], numeric, rtol=1e-6)


def test_the_lists_gradient_is_the_arrays_split_into_items():
    g = sourcegrad.grad(mean_of_comprehension)
    g(X)
    # (the array's gradient, 1/4 each, split back into the list's items: np.array's rule)
    assert "unstack_list(np.broadcast_to(1.0 / 4, (4,)), items, 0)" in g.source
