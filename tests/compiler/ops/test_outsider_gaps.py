"""Compiler gaps outsiders found: np.interp with left, right, period and repeated sample points;
slice assignment and deletion on Python lists; scipy's cho_solve in its factor; np.median's
overwrite_input; try/except whose body raises only for later data. Gradients against central
finite differences in float64 (both front ends where they differ), refusals located."""

import types

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from tests.compiler.fd_check import check_all

R = np.random.default_rng(7)
FRONT_ENDS = ["source", "trace"]


def gradient(fn, front_end, wrt=0):
    """sourcegrad.grad(fn) read from its source, or traced: of a copy of fn for the trace
    (the code compiled for fn is cached per function, whichever front end made it)."""
    if front_end == "trace":
        fn = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__)
    g = sourcegrad.grad(fn, wrt=wrt)
    g.reads_source = front_end == "source"
    return g


def close(ours, numeric):
    scale = max(1.0, float(np.max(np.abs(numeric))))
    np.testing.assert_allclose(ours, numeric, rtol=1e-6, atol=1e-6 * scale)


# -- np.interp ---------------------------------------------------------------------------------
# (many points inside, some outside [xp[0], xp[-1]], none on a sample point: a kink)

XP = np.array([0.0, 0.4, 0.4, 1.0, 1.5, 1.5, 2.0])  # repeated sample points
XQ = np.concatenate([R.uniform(0.01, 1.99, size=20), [-0.7, -0.1, 2.3, 3.1]])
XQ = XQ[np.min(np.abs(XQ[:, None] - XP[None, :]), axis=1) > 1e-3]
FP = R.normal(size=7)


def interp_fp(fp):
    return np.sum(np.interp(XQ, XP, fp) ** 2 * np.arange(len(XQ)))


def interp_x(x):
    return np.sum(np.interp(x, XP, FP) ** 3)


def interp_fp_left_right(fp):
    return np.sum(np.interp(XQ, XP, fp * fp, left=-0.5, right=fp[2]) ** 2)


def interp_x_and_fp(fp):
    return np.sum(np.interp(XQ * fp[1], XP, np.sin(fp)) ** 2)


def interp_period(fp):
    # period 1.7: xp and x wrap around, xp sorted again; left and right are ignored
    return np.sum(np.interp(XQ * 3.0 - 2.0, XP, fp**2, left=5.0, period=1.7) ** 2)


def interp_period_x(x):
    return np.sum(np.sin(np.interp(x, XP, FP, period=-1.7)))


def interp_left_value(v):
    return np.sum(np.interp(XQ, XP, FP, left=v[0] ** 2, right=v[1] * 3.0) ** 2)


def interp_lists(a):
    # xp and fp Python lists, x a Python float
    return np.interp(0.3, [0.0, 1.0, 1.0, 2.0], [a[0], a[1] * a[0], a[2], 1.0]) + np.interp(
        1.0, [0.0, 1.0, 1.0], [a[0], a[1], a[2]]
    )


def interp_at_the_last_repeated_point(fp):
    # x == xp[-1] with xp[-2] == xp[-1]: numpy gives fp[-1] (it was nan)
    return np.sum(np.interp(np.array([2.0, 0.4, 1.5]), XP, fp) * np.array([1.0, 2.0, 3.0]))


@pytest.mark.parametrize(
    "fn, x",
    [
        (interp_fp, FP),
        (interp_x, XQ),
        (interp_fp_left_right, FP),
        (interp_x_and_fp, FP),
        (interp_period, FP),
        (interp_period_x, XQ + 0.013),  # (-0.7 % 1.7 is a sample point)
        (interp_left_value, np.array([0.7, -1.2])),
        (interp_lists, np.array([0.3, -0.8, 1.4])),
        (interp_at_the_last_repeated_point, FP),
    ],
)
def test_interp_gradient_jvp_and_hvp(fn, x):
    check_all(fn, x.copy())


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_interp_both_front_ends(front_end):
    for fn, x in [(interp_period, FP), (interp_x_and_fp, FP), (interp_lists, FP[:3])]:
        close(gradient(fn, front_end)(x.copy()), numeric_grad(fn, (x.copy(),), 0))


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_interp_left_traced_is_right(front_end):
    # (np.interp of plain x, xp and fp is not numpy's dispatch to the traced value: numpy's C
    # code took float(left), which the trace refused, located; the trace now records a call
    # with a traced argument numpy's dispatch does not look at as the op, as the source does)
    v = np.array([0.7, -1.2])
    close(
        gradient(interp_left_value, front_end)(v.copy()), numeric_grad(interp_left_value, (v,), 0)
    )


def interp_xp(xp):
    return np.sum(np.interp(XQ, xp, FP))


def test_interp_in_xp_is_refused():
    with pytest.raises(sourcegrad.errors.NoRuleError, match="np.interp in xp") as caught:
        sourcegrad.grad(interp_xp)(XP.copy())
    assert "test_outsider_gaps.py" in str(caught.value)


# -- slice assignment and deletion on a Python list --------------------------------------------
# (`lst[1:3] = [a, b]` raised TypeError from the backward's zero_at: a list slice's adjoint)

A = R.normal(size=3)
B = R.normal(size=3)


def list_slice(a, b):
    lst = [a, b, a * b, a + b]
    lst[1:3] = [a * 2.0, np.sin(b)]
    return np.sum(lst[0] * lst[1] * lst[2] * lst[3])


def list_extended_slice(a, b):
    lst = [a, b, a * b, a + b]
    lst[::2] = [b * b, a * 3.0]
    return np.sum(lst[0] * lst[1] * lst[2] * lst[3])


def list_slice_emptied(a, b):
    lst = [a, b, a * b, a + b]
    lst[1:3] = []
    return np.sum(lst[0] * lst[1]) * len(lst)


def list_slice_grown(a, b):
    lst = [a, b, a * b, a + b]
    lst[-3:-2] = (a, a * a, np.cos(b))  # (a tuple, negative bounds)
    return np.sum(lst[0] * lst[1] * lst[2] * lst[3] * lst[4]) + len(lst)


def list_slice_from_itself(a, b):
    lst = [a, b, a * b]
    lst[1:] = lst[:2]
    lst[-1:] = [lst[0] * lst[1]]
    return np.sum(lst[0] * lst[1] * lst[2])


def list_slice_in_a_loop(a, b):
    lst = [a, b, a * b]
    for i in range(2):
        lst[i : i + 2] = [lst[i + 1] * 2.0, lst[i] * a]
    return np.sum(lst[0] * lst[1] * lst[2])


def list_slice_of_array_rows(a, b):
    lst = [a, b, a * b]
    lst[:2] = np.stack([b, a * a])  # (an array's rows become the items)
    return np.sum(lst[0] * lst[1] * lst[2])


def list_deletions(a, b):
    lst = [a, b, a * b, a + b, a - b]
    del lst[1]
    del lst[::2]
    return np.sum(lst[0] * lst[-1]) + len(lst)


def list_slice_deleted(a, b):
    lst = [a, b, a * b, a + b]
    del lst[1:3]
    return np.sum(lst[0] * lst[-1] ** 2)


LIST_CASES = [
    list_slice,
    list_extended_slice,
    list_slice_emptied,
    list_slice_grown,
    list_slice_from_itself,
    list_slice_in_a_loop,
    list_slice_of_array_rows,
    list_deletions,
    list_slice_deleted,
]


@pytest.mark.parametrize("fn", LIST_CASES)
def test_list_slice_writes_gradient_jvp_and_hvp(fn):
    check_all(fn, A.copy(), B.copy())


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize("fn", LIST_CASES)
def test_list_slice_writes_in_both_arguments_and_front_ends(fn, front_end):
    for wrt in (0, 1):
        got = gradient(fn, front_end, wrt)(A.copy(), B.copy())
        close(got, numeric_grad(fn, (A.copy(), B.copy()), wrt))


def list_extended_slice_of_the_wrong_length(a, b):
    lst = [a, b, a * b]
    lst[::2] = [a]
    return np.sum(lst[0])


def test_an_extended_slice_of_the_wrong_length_raises_as_python_does():
    with pytest.raises(ValueError, match="extended slice of size 2"):
        sourcegrad.grad(list_extended_slice_of_the_wrong_length)(A.copy(), B.copy())


# -- scipy.linalg.cho_solve in its factor ------------------------------------------------------
# (refused with a message pointing elsewhere: now the factor's adjoint, on the triangle read)

scipy_linalg = pytest.importorskip("scipy.linalg")
cho_solve, cho_factor = scipy_linalg.cho_solve, scipy_linalg.cho_factor
solve_triangular = scipy_linalg.solve_triangular

N = 4
M0 = R.normal(size=(N, N))
SPD = M0 @ M0.T + N * np.eye(N)
LOWER = np.linalg.cholesky(SPD) + np.triu(R.normal(size=(N, N)), 1)  # (garbage above)
UPPER = LOWER.T.copy()
Y = R.normal(size=N)
YS = R.normal(size=(N, 2))


def cho_solve_lower(c):
    alpha = cho_solve((c, True), Y)
    return np.sum(alpha**2) + np.sum(np.sin(cho_solve((c, True), YS)))


def cho_solve_upper(c):
    t = (c, False)
    return np.sum(cho_solve(t, YS) ** 2)


def cho_solve_and_right_side(c):
    return np.sum(cho_solve((c, True), np.sin(c[:, 0])) * Y)


def cho_solve_of_cho_factor(k):
    a = k @ k.T + N * np.eye(N)  # (symmetric: cho_factor reads one triangle of it)
    return np.sum(cho_solve(cho_factor(a), Y) ** 2) + np.sum(
        cho_solve(cho_factor(a, lower=True), YS) * YS
    )


def solve_triangular_in_l(c):
    return np.sum(solve_triangular(c, YS, lower=True) ** 2) + np.sum(
        solve_triangular(c, Y, trans=1) ** 3
    )


@pytest.mark.parametrize(
    "fn, x",
    [
        (cho_solve_lower, LOWER),
        (cho_solve_upper, UPPER),
        (cho_solve_and_right_side, LOWER),
        (cho_solve_of_cho_factor, M0),
        (solve_triangular_in_l, LOWER + 2.0 * np.eye(N)),
    ],
)
def test_cho_solve_in_its_factor(fn, x):
    check_all(fn, x.copy())


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_cho_solve_both_front_ends(front_end):
    for fn, x in [
        (cho_solve_lower, LOWER),
        (cho_solve_upper, UPPER),
        (cho_solve_of_cho_factor, M0),
    ]:
        close(gradient(fn, front_end)(x.copy()), numeric_grad(fn, (x.copy(),), 0))


P = R.uniform(-2.0, 2.0, size=(7, 1))
TARGETS = np.sin(2.0 * P[:, 0]) + 0.1 * R.normal(size=7)


def gp_negative_log_likelihood(log_params):
    # a Gaussian process's marginal likelihood in its kernel's log hyperparameters
    variance, length, noise = np.exp(log_params)
    d2 = (P - P.T) ** 2
    k = variance * np.exp(-0.5 * d2 / length**2) + noise * np.eye(len(P))
    L = np.linalg.cholesky(k)
    alpha = cho_solve((L, True), TARGETS)
    return 0.5 * TARGETS @ alpha + np.sum(np.log(np.diag(L)))


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_gp_marginal_likelihood_in_the_hyperparameters(front_end):
    theta = np.array([0.3, -0.4, -1.5])
    got = gradient(gp_negative_log_likelihood, front_end)(theta.copy())
    close(got, numeric_grad(gp_negative_log_likelihood, (theta.copy(),), 0))


def test_gp_marginal_likelihood_jvp_and_hvp():
    check_all(gp_negative_log_likelihood, np.array([0.3, -0.4, -1.5]))


# -- np.median(x, overwrite_input=True), its result discarded ----------------------------------
# (numpy partly sorts x in place; the gradient read x as it was: [0, 1, 2, 3, 4] where finite
# differences give [2, 0, 1, 4, 3]. The call's own rule refuses only a result that is used.)

X5 = np.array([3.0, 1.0, 2.0, 5.0, 4.0])


def median_discarded(x):
    np.median(x, overwrite_input=True)
    return np.sum(x * np.arange(x.size))


def median_named_but_unused(x):
    m = np.median(x, overwrite_input=True)  # noqa: F841
    return np.sum(x * np.arange(x.size))


def quantile_of_a_view(x):
    y = x * 2.0
    part = y[1:]
    np.quantile(part, 0.3, overwrite_input=True)
    return np.sum(y * np.arange(x.size))


def percentile_in_a_loop(x):
    total = 0.0
    for _ in range(2):
        total = total + np.sum(x * np.arange(x.size))
        np.percentile(x, 40.0, overwrite_input=True)
    return total


def median_of_data_not_differentiated(w, data):
    np.median(data, overwrite_input=True)
    return np.sum(w * data)


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize(
    "fn", [median_discarded, median_named_but_unused, quantile_of_a_view, percentile_in_a_loop]
)
def test_overwrite_input_then_read_is_refused(fn, front_end):
    with pytest.raises(sourcegrad.errors.NoRuleError, match="overwrite_input=True") as caught:
        gradient(fn, front_end)(X5.copy())
    message = str(caught.value)
    assert "test_outsider_gaps.py" in message and "read afterwards" in message, message


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_overwrite_input_of_data_without_gradient_then_read_is_refused(front_end):
    # (the gradient in w is the data numpy reordered: refused too, not the data as passed)
    with pytest.raises(sourcegrad.errors.NoRuleError, match="'data' holds"):
        gradient(median_of_data_not_differentiated, front_end)(np.arange(5.0), X5.copy())


def median_of_a_copy(x):
    y = x * 1.0
    np.median(y.copy(), overwrite_input=True)
    return np.sum(y * np.arange(x.size)) + np.median(x * x)


def median_last_read(x):
    y = x * 2.0
    s = np.sum(y**2)
    np.median(y, overwrite_input=True)
    return s


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize("fn", [median_of_a_copy, median_last_read])
def test_overwrite_input_without_a_later_read_is_differentiated(fn, front_end):
    close(gradient(fn, front_end)(X5.copy()), numeric_grad(fn, (X5.copy(),), 0))


# -- try/except whose body raises only for some call's data ------------------------------------
# (the trace made code for the path its run took: traced where nothing raised, a call whose
# data made np.linalg.cholesky raise gave LinAlgError from the generated code, unlocated;
# traced where it raised, a call on which nothing raises got the except path's gradient,
# [2, 4] where finite differences give [1.16, 1.46]; under np.errstate(invalid="raise"),
# nan where Python takes the except path)

POSITIVE = np.array([1.0, 2.0])
NEGATIVE = np.array([-1.0, -2.0])


def cholesky_or_else(x):
    try:
        y = np.linalg.cholesky(np.outer(x, x) + np.diag(x))
        r = np.sum(y)
    except np.linalg.LinAlgError:
        r = np.sum(x**2)
    return r


def sqrt_raising_or_else(x):
    try:
        r = np.sum(np.log(x))
        with np.errstate(invalid="raise"):
            r = r + np.sum(np.sqrt(x - 1.0))
    except FloatingPointError:
        r = np.sum(x**2)
    return r


def raise_or_else(x):
    try:
        if x[0] < 0:
            raise ValueError("negative")
        r = np.sum(np.sqrt(np.abs(x)) * x)
    except ValueError:
        r = np.sum(x**2)
    return r


def cholesky_uncaught(x):
    try:
        n = len(x)
    except TypeError:
        n = 1
    return np.sum(np.linalg.cholesky(np.outer(x, x) + np.diag(x))) * n


CAUGHT = [
    (cholesky_or_else, POSITIVE, NEGATIVE, "np.linalg.cholesky raised LinAlgError"),
    (sqrt_raising_or_else, np.array([2.0, 3.0]), np.array([0.5, 3.0]), "np.sqrt raised Floating"),
]


@pytest.mark.parametrize("fn, fine, raising, message", CAUGHT)
@pytest.mark.parametrize("order", ["fine first", "raising first"])
def test_a_caught_exception_is_refused_in_either_order(fn, fine, raising, message, order):
    g = sourcegrad.grad(fn)
    for x in (fine, raising) if order == "fine first" else (raising, fine):
        if x is raising:
            with pytest.raises(sourcegrad.errors.UnsupportedSyntaxError, match=message) as caught:
                g(x.copy())
            assert "test_outsider_gaps.py" in str(caught.value)
            assert "caught the exception" in str(caught.value)
        else:
            close(g(x.copy()), numeric_grad(fn, (x.copy(),), 0))


def test_a_raise_decided_by_an_if_is_followed_on_each_call():
    g = sourcegrad.grad(raise_or_else)
    for x in (POSITIVE, NEGATIVE, POSITIVE, NEGATIVE):
        close(g(x.copy()), numeric_grad(raise_or_else, (x.copy(),), 0))


def test_an_exception_python_raises_too_is_python_s():
    g = sourcegrad.grad(cholesky_uncaught)
    close(g(POSITIVE.copy()), numeric_grad(cholesky_uncaught, (POSITIVE.copy(),), 0))
    # (as on a first call: the trace's exception, with the source front end's refusal, located)
    with pytest.raises(sourcegrad.errors.UnsupportedSyntaxError, match="raised LinAlgError"):
        g(NEGATIVE.copy())
    close(g(POSITIVE.copy()), numeric_grad(cholesky_uncaught, (POSITIVE.copy(),), 0))


def index_or_else(x, table):
    try:
        r = x * table[int(np.sum(x > 0))]
    except IndexError:
        r = x * 0.5
    return np.sum(r**2)


def test_a_guarded_path_with_a_list_argument_is_traced_again():
    # (a list argument makes the gradient flatten its arguments: its guard miss raised
    # AttributeError, the tree gradient's leaf paths having taken the name of the traced paths)
    g = sourcegrad.grad(index_or_else)
    table = [1.0, 2.0]
    for x in (np.array([-1.0, 2.0]), np.array([1.0, 2.0]), np.array([-1.0, -2.0])):
        close(g(x.copy(), table), numeric_grad(index_or_else, (x.copy(), table), 0))


def sqrt_under_raise(x):
    try:
        with np.errstate(all="raise"):
            r = np.sum(np.sqrt(x) * x)
    except FloatingPointError:
        r = np.sum(x)
    return r


def test_raise_modes_hold_only_where_python_computes():
    # (the backward of sqrt at 0 divides by zero, which Python's run never computes: the
    # gradient is numpy's inf there, as before, not a FloatingPointError)
    g = sourcegrad.grad(sqrt_under_raise)
    x = np.array([1.0, 4.0])
    close(g(x.copy()), numeric_grad(sqrt_under_raise, (x.copy(),), 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        got = g(np.array([0.0, 4.0]))
    assert np.isinf(got[0]) or np.isnan(got[0])
    np.testing.assert_allclose(got[1], 1.5 * np.sqrt(4.0))


@pytest.mark.parametrize("fn, fine, raising, message", CAUGHT)
def test_vjp_and_jvp_refuse_a_caught_exception_too(fn, fine, raising, message):
    vjp = sourcegrad.vjp(fn)
    value, pullback = vjp(fine.copy())
    close(pullback(1.0), numeric_grad(fn, (fine.copy(),), 0))
    with pytest.raises(sourcegrad.errors.UnsupportedSyntaxError, match=message):
        vjp(raising.copy())  # (traced where nothing raised: traced again on this call)
    t = np.array([0.3, -0.7])
    _, tangent = sourcegrad.jvp(fn, (fine.copy(),), (t,))
    close(tangent, numeric_grad(fn, (fine.copy(),), 0) @ t)
    with pytest.raises(sourcegrad.errors.UnsupportedSyntaxError, match=message):
        sourcegrad.jvp(fn, (raising.copy(),), (t,))
