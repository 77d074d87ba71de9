"""`np.add.at(x, index, values)` and `np.subtract.at`: scatter-adds, a repeated index adding
each time (an update in place of x, as the compiler treats `x[index] += values`)."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import numeric_grad
from tests.compiler.fd_check import check_every_argument_to_second_order

INDEX = np.array([0, 1, 1, 2, 0])
X = np.array([0.5, -1.2, 2.0, 0.3, 0.9])
Y = np.array([0.1, 0.2, 0.3])


def scatter(x):
    out = np.zeros(3)
    np.add.at(out, INDEX, x)
    return np.sum(out**2)


def into_a_copy(x, y):
    z = y * 1.0
    np.add.at(z, INDEX, x**2)
    np.subtract.at(z, np.array([2, 2]), 0.5 * x[:2])
    return np.sum(np.sin(z))


def at_pairs(x, y):
    z = np.outer(y, y[:2])
    np.add.at(z, (np.array([0, 0, 1]), np.array([1, 1, 0])), x[:3])
    return np.sum(z**3)


def in_a_loop(x):
    acc = np.zeros(3)
    for k in range(2):
        np.add.at(acc, INDEX, x * (k + 1.0))
    return np.sum(acc**2)


def a_number_added(x):
    out = np.zeros(3)
    np.add.at(out, INDEX, 2.0)
    np.add.at(out, np.array([1]), x[0])
    return np.sum(out * x[:3])


CASES = [(scatter, (X,)), (into_a_copy, (X, Y)), (at_pairs, (X, Y)), (in_a_loop, (X,))]
CASES += [(a_number_added, (X,))]


@pytest.mark.parametrize("f, args", CASES, ids=[f.__name__ for f, _ in CASES])
@pytest.mark.parametrize("backend", ["numpy", "numba"])
# (under numba the scatter is the runtime's helper, which numba cannot type: the numpy code
# runs after one JitFallbackWarning, by design)
@pytest.mark.filterwarnings("ignore::sourcegrad.errors.JitFallbackWarning")
def test_scatter_adds_match_finite_differences(f, args, backend):
    if backend == "numba":
        pytest.importorskip("numba")
    for i in range(len(args)):
        got = sourcegrad.grad(f, wrt=i, backend=backend)(*args)
        np.testing.assert_allclose(got, numeric_grad(f, args, i), rtol=1e-6, atol=1e-8)
    if backend == "numpy" and f is not in_a_loop:
        check_every_argument_to_second_order(f, args)
    elif backend == "numpy":  # (reverse over a loop's reverse: forward over reverse instead)
        gradient = sourcegrad.grad(f)
        numeric = np.stack([numeric_grad(lambda v: gradient(v)[k], args, 0) for k in range(5)])
        np.testing.assert_allclose(sourcegrad.hessian(f)(*args), numeric, rtol=1e-6, atol=1e-8)


def test_second_derivative_of_a_scatter_add():
    h = sourcegrad.hessian(scatter)(X)
    gradient = sourcegrad.grad(scatter)
    numeric = np.stack([numeric_grad(lambda v: gradient(v)[k], (X,), 0) for k in range(X.size)])
    np.testing.assert_allclose(h, numeric, rtol=1e-6, atol=1e-8)


def view_read_after(x):
    out = np.zeros(3)
    first = out[:2]
    np.add.at(out, INDEX, x)
    return np.sum(first)


def maximum_at(x):
    out = np.ones(3)
    np.maximum.at(out, INDEX, x)
    return np.sum(out)


def test_a_view_read_after_the_scatter_and_other_ufuncs_are_refused():
    # numpy changes `first` too: the compiler, which makes the update a new value, refuses
    with pytest.raises(errors.UnsupportedSyntaxError, match="changed in place"):
        sourcegrad.grad(view_read_after)(X)
    # (np.multiply.at has a rule: tests/compiler/ops/test_numpy_constructs.py)
    with pytest.raises(errors.NoRuleError, match=r"np\.maximum\.at\(\) has no derivative rule"):
        sourcegrad.grad(maximum_at)(X)
