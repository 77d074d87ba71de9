"""numpy constructs met in others' code that the compiler used to refuse: functools.partial,
divmod, ufunc.at (add, subtract, multiply), sum/mean with where=, nancumsum/nancumprod,
np.choose, x.flat reads, ufunc.reduce/accumulate/outer, np.pad's mirroring modes and
np.piecewise.

Each is checked on both front ends against central finite differences in float64: from the
source with the cross-check on (`check=True`: the same call traced too, the two gradients
compared), and traced alone (through a `*args` wrapper, which the source front end hands to
the trace). What stays refused is refused as a `SourcegradError` naming the construct, with
the file, line and line text.
"""

import functools

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import numeric_grad
from sourcegrad.ops.numpy_functions import piecewise_by_masks
from tests.compiler.fd_check import check_all

X = np.array([0.5, -1.2, 2.0, 0.3, 0.9, 1.7])
Y = np.array([0.7, 0.4, 1.3, 2.1, -0.8, 0.6])
INDEX = np.array([0, 1, 1, 2, 0, 1])
MASK = np.array([[True, False, True], [False, True, True]])


def helper(a, b):
    return np.sin(a) * b


def apply(fn, x):
    return fn(x)


def partial_of_a_user_function(x):
    scaled = functools.partial(helper, b=2.0)
    return np.sum(scaled(x) ** 2)


def partial_of_numpy(x):
    column_sums = functools.partial(np.sum, axis=0)
    return np.sum(column_sums(x.reshape(2, 3) ** 2) ** 2)


def partial_passed_around(x):
    return np.sum(apply(functools.partial(helper, b=3.0), x) ** 2)


def divmod_builtin(x):
    q, r = divmod(x, 0.7)
    q2, r2 = divmod(2.0, x[0] + 3.0)
    return np.sum(r**2 + q * x) + r2 * q2


def np_divmod(x, y):
    q, r = np.divmod(y + 3.0, x + 2.5)
    return np.sum(r**2 * q)


def add_at(x):
    out = np.zeros(3)
    np.add.at(out, INDEX, x)
    np.subtract.at(out, np.array([2, 2]), x[:2] ** 2)
    return np.sum(out**2)


def multiply_at_unique(x):
    out = np.ones(3) + x[:3]
    np.multiply.at(out, np.array([0, 1, 2]), x[3:])
    return np.sum(out**2)


def multiply_at_repeated(x):
    out = x[:3] * 2.0
    np.multiply.at(out, INDEX, x)
    return np.sum(out**2)


def multiply_at_with_a_zero(x):
    # (a zero value at a repeated index: the others' product is taken without dividing)
    out = x[:3] * 2.0
    np.multiply.at(out, INDEX, x * np.array([1.0, 0.0, 1.0, 1.0, 1.0, 1.0]))
    return np.sum(out**2)


def multiply_at_pairs(x):
    out = np.outer(x[:3], x[3:5])
    np.multiply.at(out, (np.array([0, 0, 2]), np.array([1, 1, 0])), x[:3])
    return np.sum(np.sin(out))


def sum_where(x):
    m = x.reshape(2, 3)
    return np.sum(np.sum(m**2, axis=0, where=MASK) ** 2) + np.sum(np.sin(x), where=MASK.ravel())


def mean_where(x):
    m = x.reshape(2, 3)
    rows = np.mean(m**2, axis=1, where=MASK, keepdims=True)
    return np.sum(rows**2) + m.mean(where=MASK) + m.sum(0, where=MASK)[1]


def nancumsum(x):
    return np.sum(np.nancumsum(x.reshape(2, 3), axis=1) ** 2) + np.sum(np.nancumsum(x) * Y)


def nancumprod(x):
    return np.sum(np.nancumprod(x.reshape(2, 3), axis=0) * Y.reshape(2, 3)) + np.sum(
        np.nancumprod(x)
    )


def choose(x):
    picks = np.array([0, 1, 0, 2, 1, 0])
    clipped = np.choose(np.array([0, 5, -1, 1, 1, 0]), [x, x**2], mode="clip")
    return np.sum(np.choose(picks, [x, x**2, np.sin(x[0])]) ** 2) + np.sum(clipped * Y)


def select_broadcast(x):
    # (choices of shapes that broadcast: the trace passes them as a list, as no array holds
    # them; it used to refuse the call)
    return np.sum(np.select([x > 0, x < -1], [x, np.sin(x[0])]) ** 2)


def flat_reads(x):
    m = x.reshape(2, 3)
    return (
        m.flat[4] * 3.0
        + np.sum(m.flat[np.array([0, 2, 2])] ** 2)
        + np.sum(x.reshape(3, 2).T.flat[1:4] ** 3)
    )


def ufunc_reduce(x):
    # (reduce without an axis works along axis 0, as numpy's does)
    return np.sum(np.add.reduce(x.reshape(2, 3)) ** 2) + np.sum(
        np.multiply.reduce(x.reshape(3, 2), 1) ** 2
    )


def ufunc_accumulate(x):
    m = x.reshape(2, 3)
    return np.sum(np.add.accumulate(m) ** 2) + np.sum(np.multiply.accumulate(m, axis=1))


def ufunc_outer(x):
    return (
        np.sum(np.multiply.outer(x, x[:2]) ** 2)
        + np.sum(np.add.outer(x.reshape(2, 3), x[:2]) ** 2)
        + np.sum(np.subtract.outer(x, x[:3]) ** 3)
    )


def pad_modes(x):
    m = x.reshape(2, 3)
    weights = np.arange(1.0, 12.0)
    return (
        np.sum(np.pad(m, 2, mode="edge") ** 2 * np.arange(42.0).reshape(6, 7))
        + np.sum(np.pad(x, (3, 2), mode="reflect") ** 2 * weights)
        + np.sum(np.pad(x, (3, 2), mode="symmetric") ** 2 * weights)
        + np.sum(np.pad(m, ((1, 2), (4, 0)), "wrap") ** 2 * np.arange(35.0).reshape(5, 7))
    )


def piecewise(x):
    pieces = [lambda v, a: v**3 * a, 2.0, lambda v, a: a * np.cos(v)]
    return np.sum(np.piecewise(x, [x < 0, x > 1.0], pieces, 1.5) ** 2) + np.sum(
        np.piecewise(x, x > 0.4, [np.exp, lambda v: -v])
    )


ONE_ARGUMENT = [
    partial_of_a_user_function,
    partial_of_numpy,
    partial_passed_around,
    divmod_builtin,
    add_at,
    multiply_at_unique,
    multiply_at_repeated,
    multiply_at_with_a_zero,
    multiply_at_pairs,
    sum_where,
    mean_where,
    nancumsum,
    nancumprod,
    choose,
    select_broadcast,
    flat_reads,
    ufunc_reduce,
    ufunc_accumulate,
    ufunc_outer,
    pad_modes,
]


def traced_only(fn):
    """fn behind a `*args` wrapper: the source front end hands the whole call to the trace."""

    def wrapper(*args):
        return fn(*args)

    return wrapper


class TracedPair:
    """fn of two arguments as an object with `__call__`: traced as a whole."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x, y):
        return self.fn(x, y)


@pytest.mark.parametrize("fn", ONE_ARGUMENT, ids=lambda fn: fn.__name__)
def test_read_from_the_source_and_traced_alike(fn):
    gradient = sourcegrad.grad(fn, check=True)
    got = gradient(X.copy())
    assert gradient.traced == ""  # (read from the source; check=True compared the trace's)
    np.testing.assert_allclose(got, numeric_grad(fn, (X.copy(),), 0), rtol=1e-6, atol=1e-8)
    traced = sourcegrad.grad(traced_only(fn))
    np.testing.assert_allclose(traced(X.copy()), got, rtol=1e-9, atol=1e-12)
    assert traced.traced != ""


@pytest.mark.parametrize(
    "fn",
    [f for f in ONE_ARGUMENT if not f.__name__.startswith("multiply_at")],
    ids=lambda fn: fn.__name__,
)
def test_forward_mode_and_second_order(fn):
    check_all(fn, X.copy())


@pytest.mark.parametrize("fn", [multiply_at_repeated, multiply_at_with_a_zero])
def test_multiply_at_forward_mode_and_its_second_derivative_in_x_alone(fn):
    t = np.cos(np.arange(6.0))
    _, tangent = sourcegrad.jvp(fn, (X.copy(),), (t,))
    numeric = (fn(X + 1e-6 * t) - fn(X - 1e-6 * t)) / 2e-6
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6, atol=1e-8)

    def scaled_into(x, v):
        out = x * 2.0
        np.multiply.at(out, INDEX[:3], v)
        return np.sum(out**3)

    args = (X[:3].copy(), Y[:3].copy())
    h = sourcegrad.hessian(scaled_into)(*args)
    gradient = sourcegrad.grad(scaled_into)
    numeric_h = np.stack(
        [numeric_grad(lambda v: gradient(v, args[1])[k], args[:1], 0) for k in range(3)]
    )
    np.testing.assert_allclose(h, numeric_h, rtol=1e-6, atol=1e-8)


def test_the_second_derivative_of_multiply_at_in_its_values_is_refused():
    with pytest.raises(errors.NoRuleError, match="multiply_at_partials"):
        sourcegrad.hessian(multiply_at_repeated)(X.copy())


def test_divmod_in_both_arguments():
    for wrt in (0, 1):
        gradient = sourcegrad.grad(np_divmod, wrt=wrt, check=True)
        np.testing.assert_allclose(
            gradient(X.copy(), Y.copy()),
            numeric_grad(np_divmod, (X.copy(), Y.copy()), wrt),
            rtol=1e-6,
            atol=1e-8,
        )
        traced = sourcegrad.grad(TracedPair(np_divmod), wrt=wrt)
        got = traced(X.copy(), Y.copy())
        assert traced.traced != ""
        np.testing.assert_allclose(
            got, numeric_grad(np_divmod, (X.copy(), Y.copy()), wrt), rtol=1e-6, atol=1e-8
        )


def test_nan_elements_get_a_zero_gradient():
    x = X.copy()
    x[2] = np.nan
    finite = ~np.isnan(x)
    for fn in (nancumsum, nancumprod):
        for made in (sourcegrad.grad(fn, check=True), sourcegrad.grad(traced_only(fn))):
            got = made(x.copy())
            assert got[2] == 0.0
            np.testing.assert_allclose(
                got[finite], numeric_grad(fn, (x.copy(),), 0)[finite], rtol=1e-6, atol=1e-8
            )


def test_piecewise_is_traced_and_matches_finite_differences():
    gradient = sourcegrad.grad(piecewise)
    np.testing.assert_allclose(
        gradient(X.copy()), numeric_grad(piecewise, (X.copy(),), 0), rtol=1e-6, atol=1e-8
    )
    assert "piecewise" in gradient.traced or "lambda" in gradient.traced


@pytest.mark.parametrize(
    "x, condlist, funclist",
    [
        (X, X < 0, [np.square, np.sin]),
        (X, [X < 0, X > 1.0], [np.square, 2.0, np.cos]),
        # (an array of masks: its items are the conditions)
        (X.reshape(2, 3), np.array([MASK, ~MASK]), [np.exp, np.negative]),
        (X.reshape(2, 3), [X.reshape(2, 3) > 0.4], [np.exp, np.negative]),
    ],
)
def test_piecewise_by_masks_is_numpys_piecewise(x, condlist, funclist):
    np.testing.assert_array_equal(
        piecewise_by_masks(x, condlist, funclist), np.piecewise(x, condlist, funclist)
    )


# -- what stays refused: located -----------------------------------------------------------


def pad_mean(x):
    return np.sum(np.pad(x, 2, mode="mean"))


def subtract_accumulate(x):
    return np.sum(np.subtract.accumulate(x))


def vectorized(x):
    return np.sum(np.vectorize(lambda v: v**2)(x))


@pytest.mark.parametrize(
    "fn, error, named, line",
    [
        (pad_mean, errors.NoRuleError, "np.pad with a mode other than", "np.pad(x, 2, mode="),
        (subtract_accumulate, errors.NoRuleError, "accumulate", "np.subtract.accumulate(x)"),
        (vectorized, errors.SourcegradError, "np.vectorize", "np.vectorize(lambda v"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_refusals_name_the_construct_and_its_line(fn, error, named, line):
    with pytest.raises(error) as raised:
        sourcegrad.grad(fn)(X.copy())
    message = str(raised.value)
    assert named in message
    assert f"{__file__}:" in message
    assert line in message
