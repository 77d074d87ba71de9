"""Programs written as outsiders write them, each of which gave a silently wrong gradient
(the outsider probes): checked through both front ends (the source front end and the
trace) against central finite differences in float64, or against a located refusal.
"""

import copy

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import memory_caches

X = np.array([0.3, 1.7, -2.2])


def numeric(fn, x, eps=1e-6):
    """Central differences of the scalar fn at x, each call on a fresh copy."""
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        out[i] = (fn(x.copy() + step) - fn(x.copy() - step)) / (2 * eps)
    return out


def gradient(fn, front_end):
    """sourcegrad.grad(fn) read from its source, or traced (Python runs it on traced values).
    The code compiled for fn before is dropped first: a Gradient of fn reuses the code another
    one compiled, whichever front end made it, so the second front end asked would not run."""
    memory_caches.forget(fn)
    g = sourcegrad.grad(fn)
    g.reads_source = front_end == "source"
    return g


FRONT_ENDS = ["source", "trace"]


# -- casts to integer and boolean dtypes: piecewise constant, no gradient ----------------------
# (the adjoint came back through the cast unchanged, as if `x.astype(int)` were x)


def cast_astype(x):
    return np.sum(x.astype(int) * x**2)


def cast_asarray(x):
    return np.sum(np.asarray(x, dtype=int) * x**2)


def cast_array(x):
    return np.sum(np.array(x, dtype=np.int32) * x**2)


def cast_bool(x):
    return np.sum(x.astype(bool) * np.sin(x))


def cast_in_loop(x):
    s = 0.0
    y = x
    for _ in range(3):
        k = y.astype(np.int64)
        y = y * 1.5 + k
        s = s + np.sum(k * x)
    return s + np.sum(y)


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize("fn", [cast_astype, cast_asarray, cast_array, cast_bool, cast_in_loop])
def test_integer_casts_carry_no_gradient(fn, front_end):
    got = gradient(fn, front_end)(copy.deepcopy(X))
    np.testing.assert_allclose(got, numeric(fn, X), rtol=1e-6, atol=1e-8)


def test_integer_cast_in_forward_mode_and_second_order():
    # the JVP handed the tangent through the cast too, and so did the Hessian built on it
    want = numeric(cast_astype, X)
    tangents = [sourcegrad.jvp(cast_astype, (X,), (e,))[1] for e in np.eye(3)]
    np.testing.assert_allclose(tangents, want, rtol=1e-6, atol=1e-8)
    hessian = sourcegrad.hessian(cast_astype)(X)
    np.testing.assert_allclose(hessian, np.diag(2.0 * X.astype(int)), atol=1e-12)


# -- np.linalg.eigvalsh(a, UPLO="U") reads the upper triangle ----------------------------------
# (its rule took the eigenvectors of the lower one: with triangles that differ, the gradient
# of another matrix's eigenvalues; the gradient is symmetric, as cholesky's and eigh's are)

A = np.array([[2.0, 0.3, -0.4], [0.9, 1.5, 0.2], [-1.1, 0.7, 3.0]])  # triangles differ


def eigenvalues_upper(a):
    return np.sum(np.linalg.eigvalsh(a, UPLO="U") * np.array([1.0, 2.0, 3.0]))


def symmetric_part(m):
    return (m + m.T) / 2


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_eigvalsh_upper_triangle(front_end):
    got = gradient(eigenvalues_upper, front_end)(A.copy())
    np.testing.assert_allclose(got, symmetric_part(numeric(eigenvalues_upper, A)), atol=1e-6)


def test_eigvalsh_upper_triangle_forward_mode():
    want = numeric(eigenvalues_upper, A)
    for i in np.ndindex(A.shape):
        tangent = np.zeros_like(A)
        tangent[i] = tangent[i[::-1]] = 1.0  # a symmetric direction
        got = sourcegrad.jvp(eigenvalues_upper, (A,), (tangent,))[1]
        expected = want[i] + want[i[::-1]] if i[0] != i[1] else want[i]
        np.testing.assert_allclose(got, expected, atol=1e-6)


# -- a dict argument changed in place: refused, as docs/guide/supported.md says ---------------
# (the source front end refused it and handed the function to the trace, which ran it on a
# dict rebuilt from the argument's leaves: the caller's dict never changed, and a count kept
# in it stayed the first call's, so the second call's gradient was the first call's)


def counts_calls(x, state):
    state["n"] = state.get("n", 0) + 1
    return state["n"] * np.sum(x**2)


def running_average(x, state):
    state["m"] = 0.9 * state["m"] + 0.1 * x
    return np.sum(state["m"] * x)


def counts_in_default(x, cache={}):  # noqa: B006 (the mutable default is the point)
    cache["n"] = cache.get("n", 0) + 1
    return cache["n"] * np.sum(x**2)


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize(
    "fn, state",
    [(counts_calls, {}), (running_average, {"m": np.ones(3)}), (counts_in_default, None)],
)
def test_dict_argument_changed_in_place_is_refused(fn, state, front_end):
    args = (X.copy(),) if state is None else (X.copy(), state)
    before = copy.deepcopy(state)
    with pytest.raises(sourcegrad.errors.OutsideChangeError) as caught:
        gradient(fn, front_end)(*args)
    message = str(caught.value)
    assert "test_outsider_probes.py" in message and "changes the dict" in message, message
    assert caught.value.loc is not None, message
    assert "state[" in caught.value.loc.text or "cache[" in caught.value.loc.text, message
    if state is not None:  # (left as it was)
        assert repr(state) == repr(before)


def test_list_argument_item_assigned_is_as_documented():
    # docs/sharp-bits.md: an item of a list argument may be assigned; the caller's list is
    # not changed, as an array argument is not (the gradient is the function's at the list
    # it is given)
    def doubles_first(x, ws):
        ws[0] = ws[0] * 2
        return np.sum(ws[0] * x)

    for front_end in FRONT_ENDS:
        ws = [np.ones(3)]
        got = gradient(doubles_first, front_end)(X.copy(), ws)
        np.testing.assert_allclose(got, 2.0 * np.ones(3))
        np.testing.assert_array_equal(ws[0], np.ones(3))


# -- a real number carrying a gradient into an argument its rule gives none --------------------
# (the result was taken for a constant of it: np.pad's constant_values, np.nan_to_num's nan,
# np.trapezoid's dx, np.interp's left, np.full_like's fill value and np.arange's start all gave
# a zero gradient where finite differences give 2.4, 3.0, 4.9, 0.6, 0.7 and 6.0; np.interp's
# left and right have rules now: tests/compiler/ops/test_outsider_gaps.py; np.pad's one number
# in constant_values too, in both front ends: test_outsider_gaps_s54.py and below)

V = np.array([0.3, 1.7, -2.2, 0.9])


def pad_with(x):
    return np.sum(np.pad(V, 2, constant_values=x[0]) ** 2)


def nan_replaced_by(x):
    y = np.where(x > 1.0, np.nan, x)
    return np.sum(np.nan_to_num(y, nan=x[2] * 3) * V)


TRAPEZOID = getattr(np, "trapezoid", None) or np.trapz  # (numpy 1's name)


def trapezoid_step(x):
    return TRAPEZOID(V**2, dx=x[0] ** 2)


def interp_left(x):
    return np.sum(np.interp(np.array([-5.0, 0.5]), [0.0, 1.0], [1.0, 2.0], left=x[0] ** 2))


def full_like_of(x):
    return np.sum(np.full_like(V, x[0]) * V)


def arange_from(x):
    return np.sum(np.arange(x[0], 3.0, 0.5))


@pytest.mark.parametrize(
    "fn, parameter",
    [
        (nan_replaced_by, "argument 'nan'"),
        (trapezoid_step, "argument 'dx'"),
        (full_like_of, "argument 2"),
        (arange_from, "argument 1"),
    ],
)
def test_gradient_into_an_argument_without_a_rule_is_refused(fn, parameter):
    with pytest.raises(sourcegrad.errors.NoRuleError) as caught:
        sourcegrad.grad(fn)(V.copy())
    message = str(caught.value)
    assert caught.value.loc is not None and "test_outsider_probes.py" in message, message
    assert f"no derivative rule for its {parameter}" in message, message


@pytest.mark.parametrize("fn", [pad_with, nan_replaced_by, interp_left, full_like_of, arange_from])
def test_the_trace_refuses_them_too_or_is_right(fn):
    try:
        got = gradient(fn, "trace")(V.copy())
    except sourcegrad.errors.SourcegradError:
        return  # (refused, located or not: never a wrong number)
    np.testing.assert_allclose(got, numeric(fn, V), rtol=1e-6, atol=1e-8)


def the_same_arguments_off_the_gradient(x):
    # integers, masks and constants in those arguments are no gradient's path; a value that
    # carries a gradient but is not returned is not refused either
    unused = np.pad(V, 1, constant_values=x[0])  # noqa: F841 (computed, never returned)
    n = int(np.sum(x > 0))
    return (
        np.sum(np.pad(x, (1, n), constant_values=0.5) ** 2)
        + np.sum(np.full_like(x, 2.0) * x)
        + np.sum(np.arange(n) * x[:n])
        + np.sum(np.nan_to_num(x, nan=0.0) * V)
    )


@pytest.mark.parametrize("front_end", ["source", "trace"])
def test_integer_and_constant_arguments_still_differentiate(front_end):
    # (the trace ran np.pad of the plain V itself, numpy's dispatch not looking at the traced
    # constant_values, and refused it as an escape: now the call is recorded as the op)
    got = gradient(the_same_arguments_off_the_gradient, front_end)(V.copy())
    np.testing.assert_allclose(got, numeric(the_same_arguments_off_the_gradient, V), atol=1e-6)


@pytest.mark.parametrize("front_end", ["source", "trace"])
def test_pad_of_a_constant_with_values_carrying_a_gradient(front_end):
    got = gradient(pad_with, front_end)(V.copy())
    np.testing.assert_allclose(got, numeric(pad_with, V), rtol=1e-6, atol=1e-8)


# -- the builtins max and min of one iterable ---------------------------------------------------
# (their rule took the arguments for the candidates: `max(x)` of an array compared the array
# with its maximum and raised numpy's ValueError from inside the gradient)

W5 = np.array([0.3, 1.7, -2.2, 0.9, 1.1])


def extremes_of_items(x):
    return max(x) * min(x) + max(x[i] ** 2 for i in range(3)) + min([x[3], x[4] * 2])


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_max_and_min_of_one_iterable(front_end):
    got = gradient(extremes_of_items, front_end)(W5.copy())
    np.testing.assert_allclose(got, numeric(extremes_of_items, W5), atol=1e-8)
    tangents = [sourcegrad.jvp(extremes_of_items, (W5,), (e,))[1] for e in np.eye(5)]
    np.testing.assert_allclose(tangents, numeric(extremes_of_items, W5), atol=1e-8)


def test_max_of_an_array_with_ties_goes_to_the_first_as_python_returns_it():
    np.testing.assert_array_equal(
        sourcegrad.grad(lambda x: max(x))(np.array([1.7, 1.7, 0.2])), [1.0, 0.0, 0.0]
    )


# -- x.flatten(order="F") ----------------------------------------------------------------------
# (its rule ignored the order: the gradient went to the elements at the C-order positions)

M34 = np.arange(1.0, 13.0).reshape(3, 4) / 7.0
WEIGHTS = np.arange(12.0)


def flattened_in_fortran_order(x):
    return np.sum(x.flatten(order="F") ** 3 * WEIGHTS)


def transposed_then_flattened(x):
    return np.sum(x.T.flatten("F") * WEIGHTS)


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize("fn", [flattened_in_fortran_order, transposed_then_flattened])
def test_flatten_in_fortran_order(fn, front_end):
    got = gradient(fn, front_end)(M34.copy())
    np.testing.assert_allclose(got, numeric(fn, M34), rtol=1e-6, atol=1e-8)


def test_flatten_in_memory_order_is_refused():
    def by_memory(x):
        return np.sum(x.flatten("K") * WEIGHTS)

    with pytest.raises(sourcegrad.errors.NoRuleError, match="order='A' or 'K'"):
        sourcegrad.grad(by_memory)(M34.copy())


# -- np.median(..., overwrite_input=True) -------------------------------------------------------
# (numpy partly sorts the array in place: a later read of it saw another order in Python than
# in the gradient, which read it as it was: the gradient of `m * 3 + np.sum(y * w)` went to
# the wrong elements)

V6 = np.array([0.3, 1.7, -2.2, 0.9, 1.1, -0.4])


def median_then_read(x):
    y = x * 2.0
    m = np.median(y, overwrite_input=True)
    return m * 3 + np.sum(y * np.arange(6))


def percentile_of_argument_then_read(x):
    return np.percentile(x, 30, overwrite_input=True) + x[0] * 5


def quantile_overwriting(x):
    return np.quantile(x**2, 0.7, overwrite_input=True)


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize(
    "fn", [median_then_read, percentile_of_argument_then_read, quantile_overwriting]
)
def test_overwrite_input_is_refused(fn, front_end):
    with pytest.raises(sourcegrad.errors.NoRuleError, match="overwrite_input=True"):
        gradient(fn, front_end)(V6.copy())


def test_median_without_overwriting_still_differentiates():
    def median_then_read_copy(x):
        y = x * 2.0
        return np.median(y) * 3 + np.sum(y * np.arange(6))

    for front_end in FRONT_ENDS:
        got = gradient(median_then_read_copy, front_end)(V6.copy())
        np.testing.assert_allclose(got, numeric(median_then_read_copy, V6), atol=1e-6)
