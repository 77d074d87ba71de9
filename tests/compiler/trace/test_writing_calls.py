"""numpy's calls that write into an array (np.copyto, np.fill_diagonal, np.put, np.putmask,
np.place, a.fill, a.sort, a.put, a.flat[i] = v) differentiate where a gradient reaches them.

They have no rule: the source front end refuses them where a differentiated value reaches
one (errors.WritingCallError), and the function is traced, where each call is the store
numpy makes (`compiler/trace/stores.py`). Every gradient here is checked against central
finite differences in float64, numpy's errors are numpy's, and a call on a buffer no
gradient reaches stays with the source front end, run as written.
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import numeric_grad

RNG = np.random.default_rng(7)
X = RNG.uniform(0.1, 1.0, size=(3, 3))
X43 = RNG.uniform(0.1, 1.0, size=(4, 3))


def copyto_whole(x):
    a = np.empty_like(x)
    np.copyto(a, x * 3)
    return np.sum(a * x)


def copyto_where(x):
    a = np.ones((3, 3))
    np.copyto(a, x**2, where=x > 0.5)
    return np.sum(a * x)


def copyto_broadcast_row(x):
    a = x * 2.0
    np.copyto(a, x[0])
    return np.sum(a * np.sin(x))


def fill_diagonal_of_argument_copy(x):
    a = x * 2
    np.fill_diagonal(a, 0.0)
    return np.sum(a * x)


def fill_diagonal_with_values(x):
    a = np.zeros((3, 3))
    np.fill_diagonal(a, x[0])
    return np.sum(a * x)


def fill_diagonal_tall_wrapped(x):
    a = np.zeros((7, 3))
    np.fill_diagonal(a, x[:, 0], wrap=True)
    return np.sum(np.tanh(a))


def fill_diagonal_tall(x):
    a = np.ones((4, 3)) * x[0, 0]
    np.fill_diagonal(a, x[1])
    return np.sum(a * x)


def fill_diagonal_cube(x):
    a = np.zeros((3, 3, 3)) + x[0, 0]
    np.fill_diagonal(a, x[2, 1])
    return np.sum(a**2)


def put_repeated_and_negative(x):
    a = x * 2
    np.put(a, [0, -1, 0], x[1, :])  # position 0 twice: the last write stays
    return np.sum(a * x)


def put_cycled_values(x):
    a = x.copy()
    np.put(a, [1, 2, 5, 7], x[2, :2])  # two values over four positions: repeated
    return np.sum(a**2)


def put_wrapped(x):
    a = x + 0.0
    np.put(a, [10, -11], x[0, 0] * 5, mode="wrap")
    return np.sum(a * x)


def putmask_repeated(x):
    a = x * 1.0
    np.putmask(a, x > 0.5, x[1] * 3)  # values repeated over a's flat positions
    return np.sum(a * x)


def place_values(x):
    a = x * 1.0
    np.place(a, x > 0.5, np.array([1.0, 2.0]) * x[0, 0])
    return np.sum(a * x)


def place_one_value(x):
    a = x * 1.0
    np.place(a, x < 0.5, x[2, 2])
    return np.sum(a * x)


def method_fill(x):
    a = x * 2
    a.fill(x[0, 1])
    return np.sum(a * x)


def method_sort(x):
    a = x * 1.0
    a.sort(axis=1)
    return np.sum(a * np.arange(3.0))


def method_sort_axis0(x):
    a = np.sin(x)
    a.sort(axis=0)
    return np.sum(a * np.arange(9.0).reshape(3, 3))


def method_put(x):
    a = x * 1.0
    a.put([2, 6], x[1, 1])
    return np.sum(a * x)


def flat_write_list(x):
    a = x * 2
    a.flat[[0, 4, 8]] = x[0]
    return np.sum(a * x)


def flat_write_one_position(x):
    z = x.reshape(9) * 1.0
    z.flat[2] = 0.0
    return np.sum(z * x.reshape(9))


def flat_write_slice(x):
    a = x * 2
    a.flat[1::3] = x[2, 0]
    return np.sum(a * x)


def flat_write_mask(x):
    a = x.copy()
    a.flat[x.ravel() > 0.5] = 0.0
    return np.sum(a * x)


CASES = [
    (copyto_whole, X),
    (copyto_where, X),
    (copyto_broadcast_row, X),
    (fill_diagonal_of_argument_copy, X),
    (fill_diagonal_with_values, X),
    (fill_diagonal_tall_wrapped, X),
    (fill_diagonal_tall, X43),
    (fill_diagonal_cube, X),
    (put_repeated_and_negative, X),
    (put_cycled_values, X),
    (put_wrapped, X),
    (putmask_repeated, X),
    (place_values, X),
    (place_one_value, X),
    (method_fill, X),
    (method_sort, X),
    (method_sort_axis0, X),
    (method_put, X),
    (flat_write_list, X),
    (flat_write_one_position, X),
    (flat_write_slice, X),
    (flat_write_mask, X),
]


@pytest.mark.parametrize("fn, x", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_gradient_is_finite_differences(fn, x):
    g = sourcegrad.grad(fn)
    expected = numeric_grad(fn, (x.copy(),), 0)
    np.testing.assert_allclose(g(x), expected, rtol=1e-6, atol=1e-7)
    # a second call with other values: the same code, the gradient of the new point
    y = np.clip(x[::-1] * 0.9 + 0.05, 0.1, 1.0)
    np.testing.assert_allclose(g(y), numeric_grad(fn, (y.copy(),), 0), rtol=1e-6, atol=1e-7)


def test_the_value_is_numpys():
    for fn, x in CASES:
        value, _ = sourcegrad.value_and_grad(fn)(x)
        assert value == pytest.approx(fn(x.copy()), rel=1e-12), fn.__name__


def test_the_argument_is_left_as_it_was():
    x = X.copy()
    sourcegrad.grad(method_sort)(x)
    np.testing.assert_array_equal(x, X)


def test_a_call_no_gradient_reaches_stays_with_the_source_front_end():
    def kernel_energy(w, data):
        k = data @ data.T
        np.fill_diagonal(k, 0.0)  # a data matrix: run as written
        return np.sum((k @ w) ** 2)

    data = RNG.normal(size=(4, 2))
    w = RNG.normal(size=4)
    g = sourcegrad.grad(kernel_energy)
    np.testing.assert_allclose(g(w, data), numeric_grad(kernel_energy, (w, data), 0), rtol=1e-6)
    assert "Traced" not in g.source


def copyto_float_into_ints(x):
    counts = np.zeros(3, dtype=np.int64)
    np.copyto(counts, x[0])
    return np.sum(x)


def fill_with_a_row(x):
    a = x * 1.0
    a.fill(x[0])
    return np.sum(a)


def put_out_of_bounds(x):
    a = x * 1.0
    np.put(a, [9], x[0, 0])
    return np.sum(a)


def fill_diagonal_of_a_vector(x):
    a = x[0] * 1.0
    np.fill_diagonal(a, 1.0)
    return np.sum(a)


@pytest.mark.parametrize(
    "fn, numpys",
    [
        (copyto_float_into_ints, TypeError),
        (fill_with_a_row, ValueError),
        (put_out_of_bounds, IndexError),
        (fill_diagonal_of_a_vector, ValueError),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_numpys_error_is_said(fn, numpys):
    with pytest.raises(numpys) as raised:
        fn(X.copy())
    with pytest.raises(errors.NoRuleError) as refused:
        sourcegrad.grad(fn)(X)
    # the refusal names the user's line and what numpy said running it
    assert type(raised.value).__name__ in str(refused.value)
    assert str(raised.value).split(" ")[0] in str(refused.value)


GLOBAL_BUFFER = np.zeros((3, 3))


def copyto_into_a_global(x):
    np.copyto(GLOBAL_BUFFER, x)
    return np.sum(GLOBAL_BUFFER * x)


def test_a_write_into_an_outside_array_is_refused():
    with pytest.raises(errors.SourcegradError):
        sourcegrad.grad(copyto_into_a_global)(X)
    np.testing.assert_array_equal(GLOBAL_BUFFER, 0.0)
