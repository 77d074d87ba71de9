"""numpy functions of sourcegrad/ops/numpy_functions.py in the compiler: gradient, JVP and
Hessian-vector product against central finite differences, per function and variant."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import numeric_grad
from tests.compiler.fd_check import check_all, check_every_argument_to_second_order

R = np.random.default_rng(1)
X = R.normal(size=(3, 4))
V = R.normal(size=4)
S = R.normal(size=(4, 4))
T = R.normal(size=(2, 3, 4))
C3 = R.normal(size=(4, 3))
W = R.normal(size=(3, 4))


def diff(x):
    return np.sum(np.diff(x) ** 2) + np.sum(np.diff(x, axis=0) ** 3)


def diff2(x):
    return np.sum(np.diff(x, n=2) ** 2)


def diff_padded(x):
    return np.sum(np.diff(x, prepend=0.0, append=1.5) ** 2)


def sort(x):
    return np.sum(np.sort(x) * np.arange(4.0) * x)


def sort_axis(x):
    return np.sum(np.sort(x, axis=0) ** 3 * W) + np.sum(np.sort(x, axis=None) * np.arange(12.0))


def take_along(x):
    return np.sum(np.take_along_axis(x, np.argsort(x, axis=1), axis=1) ** 2 * W)


def trace(s):
    return np.trace(s @ s) + s.trace() + np.trace(s, 1) * np.trace(s, -1)


def trace3(t):
    return np.sum(np.trace(t, axis1=1, axis2=2) ** 2)


def diag_vector(v):
    return np.sum(np.diag(v) @ S) + np.sum(np.diag(v, 1) ** 2)


def diag_matrix(x):
    return np.sum(np.diag(x) ** 3) + np.sum(np.diag(x, -1) ** 2)


def diagonal(t):
    return np.sum(np.diagonal(t, 0, 1, 2) ** 3) + np.sum(t.diagonal() ** 2)


def kron_vectors(v):
    return np.sum(np.kron(v, v**2) ** 2)


def kron_matrices(x):
    return np.sum(np.kron(x, x[:2, :3]) ** 2)


def cross(c):
    return np.sum(np.cross(c, c**2) ** 2) + np.sum(np.cross(c[0], c) * c)


def pad(x):
    return np.sum(np.pad(x, 1) ** 2 * 0.5) + np.sum(
        np.pad(x, ((1, 0), (2, 1)), constant_values=3.0) ** 3
    )


def repeat(x):
    return (
        np.sum(np.repeat(x, 2, axis=0) ** 3)
        + np.sum(np.repeat(x, [1, 0, 2, 3], axis=1) ** 2)
        + np.sum(np.repeat(x, 3) * np.arange(36.0))
    )


def rotations(x):
    return (
        np.sum(np.rot90(x) ** 2 * W.T)
        + np.sum(np.rot90(x, 2) * W * x)
        + np.sum(np.fliplr(x) * W * x)
        + np.sum(np.flipud(x) ** 3 * W)
    )


def splits(x):
    a, b = np.split(x, 2, axis=1)
    c, d = np.array_split(x, 2)
    e, f = np.hsplit(x, [1])
    g, h, i = np.vsplit(x, 3)
    return np.sum(a * b) + np.sum(c**2) + np.sum(f**3) + np.sum(g * i)


def dsplit(t):
    a, b = np.dsplit(t, 2)
    return np.sum(a**2 * b)


def stacks(x):
    return (
        np.sum(np.hstack([x, x**2]) ** 2)
        + np.sum(np.vstack([x[0], x**2]) ** 3)
        + np.sum(np.dstack([x, x * x]) ** 2)
        + np.sum(np.column_stack([x[0], x.T]) ** 3)
        + np.sum(np.hstack([x[0], x[1] ** 2]) ** 2)
    )


def atleast(v):
    return (
        np.sum(np.atleast_2d(v) ** 2)
        + np.sum(np.atleast_1d(v) ** 3)
        + np.sum(np.atleast_3d(v) * np.atleast_3d(v))
    )


def linspace(v):
    return (
        np.sum(np.linspace(v[0], 3.4, 5) ** 2)
        + np.sum(np.linspace(v[1], v[2], 4, endpoint=False) ** 3)
        + np.sum(np.linspace(v[:2], v[2:], 3) ** 2)
    )


def full(v):
    return np.sum(np.full(3, v[0]) ** 2 * np.arange(3.0)) + np.sum(
        np.full((2, 2), v[1] * v[2]) ** 2
    )


def meshgrid(v):
    a, b = np.meshgrid(v, v[:3] ** 2)
    c, d = np.meshgrid(v, v[:2], indexing="ij")
    return np.sum(a * b**2) + np.sum(c**2 * d)


def select(v):
    return np.sum(np.select([v > 0.5, v < -1.0], [v**2, v**3], default=v[0]) ** 2)


def elementwise(v):
    return np.sum(
        np.fmax(v, 0.1) ** 2
        + np.fmin(v, 0.2) ** 3
        + np.logaddexp2(v, v**2)
        + np.deg2rad(v) ** 2
        + np.rad2deg(v) ** 2
        + np.degrees(v) * np.radians(v)
    )


def remainders(v):
    return np.sum(
        np.mod(v, 0.7) ** 2
        + np.remainder(v * 3.0, 0.3) ** 2
        + np.fmod(v, 0.45) ** 2
        + np.fmod(-v, 0.45) ** 2
        + np.fmod(v, v[3] * 0.3) ** 2
    )


def median_and_quantiles(x):
    m = x.reshape(3, 4)
    return (
        np.median(x) ** 2
        + np.sum(np.median(m, axis=0) ** 2)
        + np.sum(np.quantile(m, [0.1, 0.75], axis=1) * np.array([[1.0], [2.0]]))
        + np.sum(np.percentile(m, 30.0, axis=1, keepdims=True) * m)
    )


def median_of_an_even_count(x):
    return np.median(x[:10] * x[2:]) ** 3


def average_plain(a):
    return np.average(a) ** 2 + np.sum(np.average(a, axis=0) ** 2)


def average_weighted(a, w):
    return np.average(a, weights=w) ** 2 + np.sum(np.sin(np.average(a, axis=1, weights=w)))


def average_along(a, w):
    return np.sum(np.average(a, axis=1, weights=w) ** 3)


def average_kept(a, w):
    return np.sum(np.average(a, axis=0, weights=w, keepdims=True) ** 2 * a)


def average_returned(a):
    return np.average(a, returned=True)[0]


@pytest.mark.parametrize(
    "f, args",
    [
        (average_plain, (X,)),
        (average_weighted, (X, R.uniform(0.5, 2.0, size=(3, 4)))),
        (average_along, (X, R.uniform(0.5, 2.0, size=4))),
        (average_kept, (X, R.uniform(0.5, 2.0, size=3))),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_average_in_the_array_and_the_weights_to_second_order(f, args):
    for i in range(len(args)):
        got = sourcegrad.grad(f, wrt=i)(*args)
        np.testing.assert_allclose(got, numeric_grad(f, args, i), rtol=1e-6, atol=1e-8)
    check_every_argument_to_second_order(f, args)


def test_average_with_returned_is_refused():
    with pytest.raises(errors.SourcegradError, match="returned=True"):
        sourcegrad.grad(average_returned)(X)


def quantile_nearest(x):
    return np.quantile(x, 0.3, method="nearest")


def quantile_in_q(q, x):
    return np.quantile(x, q)


def test_median_and_quantiles_to_second_order():
    """np.median, np.quantile, np.percentile (linear interpolation): the gradient shared by
    the two order statistics a quantile lies between; its JVP and second derivative too."""
    x = R.normal(size=12)
    for f in (median_and_quantiles, median_of_an_even_count):
        np.testing.assert_allclose(sourcegrad.grad(f)(x), numeric_grad(f, (x,), 0), atol=1e-7)
        check_every_argument_to_second_order(f, (x,))
    with pytest.raises(errors.NoRuleError, match="another method than 'linear'"):
        sourcegrad.grad(quantile_nearest)(x)
    with pytest.raises(errors.NoRuleError, match="np.quantile in q"):
        sourcegrad.grad(quantile_in_q)(0.3, x)


def index_arrays(a):
    # (np.triu_indices & co. make index arrays of a shape: read with a zero gradient)
    upper = a[np.triu_indices(a.shape[0], 1)] ** 2
    lower = a[np.tril_indices_from(a)] * np.arange(6.0)
    return np.sum(upper) + np.sum(lower) + np.sum(a[np.diag_indices(3)] ** 3)


def nan_to_num(v):
    return np.sum(np.nan_to_num(v * v) ** 2)


def scalars(v):
    return np.float64(v[0]) ** 2 * v[1].item() + np.sum(np.copy(v) ** 3)


V7 = R.normal(size=7)
M45 = R.normal(size=(4, 5))
T234 = R.normal(size=(2, 3, 4))


def partition(v):
    return np.sum(np.partition(v, 3) * np.arange(7.0)) + np.sum(np.partition(v * v, (1, 4)) ** 2)


def partition_axes(m):
    return np.sum(np.partition(m, 2, axis=0) * M45) + np.sum(
        np.partition(m, 1, axis=None) * np.arange(20.0)
    )


def rollaxis(t):
    return (
        np.sum(np.rollaxis(t, 2) * np.arange(24.0).reshape(4, 2, 3))
        + np.sum(np.rollaxis(t, 0, 3) ** 2)
        + np.sum(np.rollaxis(t, -1, 1) * t.transpose(0, 2, 1))
    )


def gradient_1d(v):
    return np.sum(np.gradient(v) ** 2) + np.sum(np.gradient(v, 0.5, edge_order=2) * v)


def gradient_2d(m):
    gy, gx = np.gradient(m)
    return (
        np.sum(gy**2)
        + np.sum(gx * m)
        + np.sum(np.gradient(m, 0.5, axis=1) ** 3)
        + np.sum(np.gradient(m * m, 2.0, 0.5, edge_order=2)[1] ** 2)
    )


def einsum_ellipsis(t):
    return (
        np.sum(np.einsum("...ij,jk->...ik", t, M45) ** 2)
        + np.einsum("...i,...i", t, t * 2.0).sum()
        + np.sum(np.einsum("i...->...", t) ** 2)
        + np.sum(np.einsum("...j,j", t, M45[:, 0]) ** 2)
        + np.sum(np.einsum("...ij->...ji", t) * np.swapaxes(T234, 1, 2))
    )


def einsum_sublist_form(t):
    # numpy's sublist form: each operand followed by its labels, then the output's if given
    return (
        np.sum(np.einsum(t, [0, 1, 2], M45, [2, 3], [0, 1, 3]) ** 2)
        + np.sum(np.einsum(t, [Ellipsis, 1, 2], M45, [2, 3]) ** 2)  # implicit output
        + np.einsum(t, [0, 1, 2], t * 2.0, [0, 1, 2])
        + np.sum(np.einsum(t, [30, Ellipsis], [Ellipsis]) ** 2)
        + np.sum(np.einsum(t, (2, 0, 1)) * np.transpose(T234, (1, 2, 0)))
    )


def zero_gradient_reads(v):
    return np.sum(
        v * np.isclose(v, 0.1) + v**2 * np.searchsorted(np.sort(v), 0.0) + v * np.any(v > 0)
    )


XP = np.array([0.0, 0.5, 1.5, 2.0, 3.5])
FP = R.normal(size=5)
WITH_NANS = np.where(R.uniform(size=(4, 5)) < 0.2, np.nan, M45)
H3, H4, LONG = R.normal(size=3), R.normal(size=4), R.normal(size=10)


def nan_reductions(y):
    return (
        np.nansum(y) ** 2
        + np.sum(np.nansum(y, axis=0) ** 2)
        + np.sum(np.nanmean(y, axis=1) ** 2)
        + np.nanmean(y)
        + np.sum(np.nanmax(y, axis=0) ** 2)
        + np.nanmin(y)
        + np.sum(np.ptp(np.nan_to_num(y), axis=1) ** 2)
        + np.ptp(np.nan_to_num(y))
    )


def interp_in_x(x):
    return np.sum(np.interp(x, XP, FP) ** 2)


def interp_in_fp(f):
    return np.sum(np.interp(M45, XP, f) ** 2) + np.sum(
        np.interp(np.array([-1.0, 0.7, 4.0]), XP, f * f)
    )


def trapezoid(y):
    return (
        np.trapezoid(y[0]) ** 2
        + np.sum(np.trapezoid(y, XP, axis=1) ** 2)
        + np.sum(np.trapezoid(y * y, dx=0.3, axis=0))
    )


def convolutions(v):
    return (
        np.sum(np.convolve(v, H3) ** 2)
        + np.sum(np.convolve(v, H4, mode="same") ** 2)
        + np.sum(np.convolve(v, LONG, "same") ** 2)
        + np.sum(np.convolve(H3, v, "same") ** 2)
        + np.sum(np.convolve(v, LONG, "valid") ** 2)
        + np.sum(np.correlate(v, H3) ** 2)
        + np.sum(np.correlate(v, H4, "same") ** 2)
        + np.sum(np.correlate(H4, v, "full") ** 2)
        + np.sum(np.correlate(v, LONG, "valid") ** 2)
    )


def convolutions_in_kernel(h):
    return (
        np.sum(np.convolve(V7, h, "same") ** 2)
        + np.sum(np.correlate(V7, h, "same") ** 2)
        + np.sum(np.correlate(h, V7, "full") ** 2)
    )


CASES = [
    (nan_reductions, WITH_NANS),
    (interp_in_x, R.uniform(0.1, 3.4, size=(4, 5))),
    (interp_in_fp, FP),
    (trapezoid, M45),
    (convolutions, V7),
    (convolutions_in_kernel, H4),
    (partition, V7),
    (partition_axes, M45),
    (rollaxis, T234),
    (gradient_1d, V7),
    (gradient_2d, M45),
    (einsum_ellipsis, T234),
    (einsum_sublist_form, T234),
    (zero_gradient_reads, V7),
    (diff, X),
    (diff2, X),
    (diff_padded, X),
    (sort, X),
    (sort_axis, X),
    (take_along, X),
    (trace, S),
    (trace3, T),
    (diag_vector, V),
    (diag_matrix, X),
    (diagonal, T),
    (kron_vectors, V),
    (kron_matrices, X),
    (cross, C3),
    (pad, X),
    (repeat, X),
    (rotations, X),
    (splits, R.normal(size=(3, 4))),
    (dsplit, T),
    (stacks, X),
    (atleast, V),
    (linspace, V),
    (full, V),
    (meshgrid, V),
    (select, V + np.array([0.0, 0.0, 0.0, 1.0])),
    (elementwise, V),
    (remainders, R.uniform(0.05, 0.1, size=4) + np.array([0.0, 1.0, 2.0, 3.0])),
    (remainders, -R.uniform(0.05, 0.1, size=4) - np.array([0.0, 1.0, 2.0, 3.0])),
    (nan_to_num, V),
    (index_arrays, R.normal(size=(3, 3))),
    (scalars, V),
]


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_matches_finite_differences(f, x):
    check_all(f, x)


def einsum_sublists_two(a, b):
    return np.sum(np.einsum(a, [0, 1], b, [1, 2], [0, 2]) ** 2)


def test_einsum_sublist_form_in_both_operands_to_second_order():
    a, b = R.normal(size=(3, 4)), R.normal(size=(4, 2))
    gradient = sourcegrad.grad(einsum_sublists_two, wrt=(0, 1))
    np.testing.assert_allclose(gradient(a, b)[1], numeric_grad(einsum_sublists_two, (a, b), 1))
    # d/db of the gradient in a, against differences of that gradient
    da = sourcegrad.grad(einsum_sublists_two, wrt=0)
    hvp = sourcegrad.jvp(da, (a, b), (np.zeros_like(a), M45[:, :2]))[1]
    eps = 1e-6
    numeric = (da(a, b + eps * M45[:, :2]) - da(a, b - eps * M45[:, :2])) / (2 * eps)
    np.testing.assert_allclose(hvp, numeric, rtol=1e-6, atol=1e-8)
    dadb = sourcegrad.grad(lambda a, b: np.sum(da(a, b) * a), wrt=1)(a, b)
    numeric = numeric_grad(lambda a, b: np.sum(da(a, b) * a), (a, b), 1)
    np.testing.assert_allclose(dadb, numeric, rtol=1e-6, atol=1e-8)


def einsum_diagonal(a):
    return np.sum(np.einsum("ii->i", a) ** 3)


def einsum_trace(a):
    return np.einsum("ii", np.tanh(a)) * 3.0


def einsum_diagonal_operand(a, b):
    return np.sum(np.einsum("ij,jj,ji->i", a, b, a) ** 2)


def einsum_diagonal_of_three(t, v):
    # (optimize=: the order numpy contracts in, the same values)
    return np.sum(np.sin(np.einsum("iij,j->i", t, v, optimize=True)))


@pytest.mark.parametrize(
    "f, args, on_diagonal",  # (on_diagonal: the argument the einsum reads on a diagonal)
    [
        (einsum_diagonal, (M45[:, :4],), 0),
        (einsum_trace, (M45[:, :4],), 0),
        (einsum_diagonal_operand, (M45[:, :4], M45[:, 1:] * 0.5), 1),
        (einsum_diagonal_of_three, (R.normal(size=(3, 3, 2)), R.normal(size=2)), 0),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_einsum_with_a_label_repeated_in_an_operand_to_second_order(f, args, on_diagonal):
    """An operand read on a diagonal ("ii->i", a trace, "iij"): its gradient is the
    diagonal's, zeros elsewhere; the gradient of that, and its jvp, against differences."""
    for i in range(len(args)):
        got = sourcegrad.grad(f, wrt=i)(*args)
        np.testing.assert_allclose(got, numeric_grad(f, args, i), rtol=1e-6, atol=1e-8)
        if i == on_diagonal:
            assert got[~np.eye(*got.shape[:2], dtype=bool)].size
            assert not got[~np.eye(*got.shape[:2], dtype=bool)].any()
            assert got[np.eye(*got.shape[:2], dtype=bool)].all()
    check_every_argument_to_second_order(f, args)


def einsum_computed_labels(a, labels):
    return np.sum(np.einsum(a, labels) ** 2)


def einsum_label_out_of_range(a):
    return np.sum(np.einsum(a, [0, 60]) ** 2)


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_einsum_sublists_must_be_known_while_compiling():
    with pytest.raises(errors.UnsupportedSyntaxError, match="sublist form"):
        sourcegrad.grad(einsum_computed_labels)(M45, np.array([0, 1]))
    with pytest.raises(errors.UnsupportedSyntaxError, match=r"valid range \[0, 52\)"):
        sourcegrad.grad(einsum_label_out_of_range)(M45)


def gradient_in_spacing(h):
    return np.sum(np.gradient(V7, h))


def gradient_coordinates(v):
    return np.sum(np.gradient(v, np.cumsum(np.ones(7))))


def trapezoid_in_x(x):
    return np.trapezoid(V7, x)


@pytest.mark.parametrize(
    "f, x, what",
    [
        (gradient_in_spacing, 0.5, "in its spacing"),
        (gradient_coordinates, V7, "coordinate arrays"),
        (trapezoid_in_x, np.arange(7.0), "sample points"),
    ],
)
def test_spacing_variants_without_a_rule_are_refused_in_both_modes(f, x, what):
    with pytest.raises(errors.NoRuleError, match=what):
        sourcegrad.grad(f)(x)
    with pytest.raises(errors.NoRuleError, match=what):  # forward mode: never a silent zero
        sourcegrad.jvp(f, (x,), (np.ones_like(x),))


def test_linspace_and_full_carry_gradient():
    # they were constructors without gradient: a silently zero gradient in start and fill value
    def f(x):
        return np.sum(np.linspace(x, 3.4, 5)) + np.sum(np.full(3, x))

    assert sourcegrad.grad(f)(1.0) == pytest.approx(2.5 + 3.0)


def test_sort_sends_each_adjoint_to_its_element():
    x = np.array([3.0, 1.0, 2.0])
    np.testing.assert_array_equal(sourcegrad.grad(lambda_sort)(x), [2.0, 0.0, 1.0])


def lambda_sort(x):
    return np.sum(np.sort(x) * np.arange(3.0))


def pad_linear_ramp(x):
    # (np.pad's gathering modes, reflect among them, have rules: test_numpy_constructs.py)
    return np.sum(np.pad(x, 1, mode="linear_ramp"))


@pytest.mark.parametrize("f, what", [(pad_linear_ramp, "mode other than constant, edge")])
def test_variants_without_a_rule_are_refused_in_both_modes(f, what):
    with pytest.raises(errors.NoRuleError, match=what):
        sourcegrad.grad(f)(X)
    with pytest.raises(errors.NoRuleError, match=what):
        sourcegrad.jvp(f, (X,), (np.ones_like(X),))


def diff3(x):
    return np.sum(np.diff(x, n=3) ** 2)


def diff2_prepended(x):
    return np.sum(np.diff(x, n=2, prepend=1.0) ** 2 * np.arange(1.0, 4.0))


def diff_joined(x, p, q):
    return np.sum(np.sin(np.diff(x, n=2, axis=0, prepend=p, append=q)))


def diff_number_appended(x, q):
    return np.sum(np.cos(np.diff(x, append=q)) * np.arange(1.0, 5.0))


@pytest.mark.parametrize(
    "f, args",
    [
        (diff3, (V7,)),
        (diff2_prepended, (V7[:4],)),
        (diff_joined, (R.normal(size=(3, 4)), R.normal(size=(2, 4)), R.normal(size=(1, 4)))),
        (diff_number_appended, (V7[:4], 0.7)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_diff_of_any_order_with_arrays_prepended_and_appended(f, args):
    """np.diff with n > 2 and with prepend/append (numbers or arrays, differentiated too):
    each argument's gradient, the JVP and the second derivative against differences."""
    for i in range(len(args)):
        got = sourcegrad.grad(f, wrt=i)(*args)
        np.testing.assert_allclose(got, numeric_grad(f, args, i), rtol=1e-6, atol=1e-8)
    check_every_argument_to_second_order(f, args)


def complex_intermediate(x):
    return np.sum(np.abs(x * (1 + 2j)))


def complex_arcsinh(x):  # (np.var of complex values has its rule now: issue 40)
    return np.sum(np.abs(np.arcsinh(x * (1 + 2j))))


def test_complex_values_are_differentiated_in_both_modes():
    # (this gave a wrong gradient with only numpy's ComplexWarning, then was refused: issue 19)
    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(sourcegrad.grad(complex_intermediate)(x), np.sign(x) * np.sqrt(5.0))
    np.testing.assert_allclose(
        sourcegrad.jvp(complex_intermediate, (x,), (np.ones(2),))[1],
        np.sum(np.sign(x)) * np.sqrt(5.0),
    )


def test_complex_values_through_a_rule_for_real_numbers_are_refused_in_both_modes():
    x = np.array([1.0, -2.0])
    with pytest.raises(errors.NoRuleError, match="complex value") as info:
        sourcegrad.grad(complex_arcsinh)(x)
    assert info.value.loc.line > 0
    with pytest.raises(errors.NoRuleError, match="complex value"):
        sourcegrad.jvp(complex_arcsinh, (x,), (np.ones(2),))
