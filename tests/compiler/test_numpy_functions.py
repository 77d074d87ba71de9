"""numpy functions of sourcegrad/ops/numpy_functions.py in the compiler: gradient, JVP and
Hessian-vector product against central finite differences, per function and variant."""
import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from tests.compiler.fd_check import check_all

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
    return np.sum(np.kron(v, v ** 2) ** 2)


def kron_matrices(x):
    return np.sum(np.kron(x, x[:2, :3]) ** 2)


def cross(c):
    return np.sum(np.cross(c, c ** 2) ** 2) + np.sum(np.cross(c[0], c) * c)


def pad(x):
    return np.sum(np.pad(x, 1) ** 2 * 0.5) + np.sum(np.pad(x, ((1, 0), (2, 1)), constant_values=3.0) ** 3)


def repeat(x):
    return np.sum(np.repeat(x, 2, axis=0) ** 3) + np.sum(np.repeat(x, [1, 0, 2, 3], axis=1) ** 2) + \
        np.sum(np.repeat(x, 3) * np.arange(36.0))


def rotations(x):
    return np.sum(np.rot90(x) ** 2 * W.T) + np.sum(np.rot90(x, 2) * W * x) + \
        np.sum(np.fliplr(x) * W * x) + np.sum(np.flipud(x) ** 3 * W)


def splits(x):
    a, b = np.split(x, 2, axis=1)
    c, d = np.array_split(x, 2)
    e, f = np.hsplit(x, [1])
    g, h, i = np.vsplit(x, 3)
    return np.sum(a * b) + np.sum(c ** 2) + np.sum(f ** 3) + np.sum(g * i)


def dsplit(t):
    a, b = np.dsplit(t, 2)
    return np.sum(a ** 2 * b)


def stacks(x):
    return np.sum(np.hstack([x, x ** 2]) ** 2) + np.sum(np.vstack([x[0], x ** 2]) ** 3) + \
        np.sum(np.dstack([x, x * x]) ** 2) + np.sum(np.column_stack([x[0], x.T]) ** 3) + \
        np.sum(np.hstack([x[0], x[1] ** 2]) ** 2)


def atleast(v):
    return np.sum(np.atleast_2d(v) ** 2) + np.sum(np.atleast_1d(v) ** 3) + \
        np.sum(np.atleast_3d(v) * np.atleast_3d(v))


def linspace(v):
    return np.sum(np.linspace(v[0], 3.4, 5) ** 2) + np.sum(np.linspace(v[1], v[2], 4, endpoint=False) ** 3) + \
        np.sum(np.linspace(v[:2], v[2:], 3) ** 2)


def full(v):
    return np.sum(np.full(3, v[0]) ** 2 * np.arange(3.0)) + np.sum(np.full((2, 2), v[1] * v[2]) ** 2)


def meshgrid(v):
    a, b = np.meshgrid(v, v[:3] ** 2)
    c, d = np.meshgrid(v, v[:2], indexing="ij")
    return np.sum(a * b ** 2) + np.sum(c ** 2 * d)


def select(v):
    return np.sum(np.select([v > 0.5, v < -1.0], [v ** 2, v ** 3], default=v[0]) ** 2)


def elementwise(v):
    return np.sum(np.fmax(v, 0.1) ** 2 + np.fmin(v, 0.2) ** 3 + np.logaddexp2(v, v ** 2) +
                  np.deg2rad(v) ** 2 + np.rad2deg(v) ** 2 + np.degrees(v) * np.radians(v))


def remainders(v):
    return np.sum(np.mod(v, 0.7) ** 2 + np.remainder(v * 3.0, 0.3) ** 2 + np.fmod(v, 0.45) ** 2 +
                  np.fmod(-v, 0.45) ** 2 + np.fmod(v, v[3] * 0.3) ** 2)


def nan_to_num(v):
    return np.sum(np.nan_to_num(v * v) ** 2)


def scalars(v):
    return np.float64(v[0]) ** 2 * v[1].item() + np.sum(np.copy(v) ** 3)


CASES = [
    (diff, X), (diff2, X), (diff_padded, X), (sort, X), (sort_axis, X), (take_along, X),
    (trace, S), (trace3, T), (diag_vector, V), (diag_matrix, X), (diagonal, T),
    (kron_vectors, V), (kron_matrices, X), (cross, C3), (pad, X), (repeat, X), (rotations, X),
    (splits, R.normal(size=(3, 4))), (dsplit, T), (stacks, X), (atleast, V), (linspace, V), (full, V),
    (meshgrid, V), (select, V + np.array([0.0, 0.0, 0.0, 1.0])), (elementwise, V),
    (remainders, R.uniform(0.05, 0.1, size=4) + np.array([0.0, 1.0, 2.0, 3.0])),
    (remainders, -R.uniform(0.05, 0.1, size=4) - np.array([0.0, 1.0, 2.0, 3.0])), (nan_to_num, V),
    (scalars, V),
]


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_matches_finite_differences(f, x):
    check_all(f, x)


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


def pad_reflect(x):
    return np.sum(np.pad(x, 1, mode="reflect"))


def diff3(x):
    return np.sum(np.diff(x, n=3))


def diff2_padded(x):
    return np.sum(np.diff(x, n=2, prepend=1.0))


@pytest.mark.parametrize("f, what", [(pad_reflect, "mode other than 'constant'"),
                                     (diff3, "np.diff with n > 2"),
                                     (diff2_padded, "prepend/append other than numbers")])
def test_variants_without_a_rule_are_refused_in_both_modes(f, what):
    with pytest.raises(errors.NoRuleError, match=what):
        sourcegrad.grad(f)(X)
    if f is not diff3:  # (np.diff with n = 3 and no padding is linear: its JVP is exact)
        with pytest.raises(errors.NoRuleError, match=what):
            sourcegrad.jvp(f, (X,), (np.ones_like(X),))


def complex_intermediate(x):
    return np.sum(np.abs(x * (1 + 2j)))


def complex_variance(x):
    return np.var(x * (1 + 2j))


def test_complex_values_are_differentiated_in_both_modes():
    # (this gave a wrong gradient with only numpy's ComplexWarning, then was refused: issue 19)
    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(sourcegrad.grad(complex_intermediate)(x),
                               np.sign(x) * np.sqrt(5.0))
    np.testing.assert_allclose(sourcegrad.jvp(complex_intermediate, (x,), (np.ones(2),))[1],
                               np.sum(np.sign(x)) * np.sqrt(5.0))


def test_complex_values_through_a_rule_for_real_numbers_are_refused_in_both_modes():
    x = np.array([1.0, -2.0])
    with pytest.raises(errors.NoRuleError, match="complex value") as info:
        sourcegrad.grad(complex_variance)(x)
    assert info.value.loc.line > 0
    with pytest.raises(errors.NoRuleError, match="complex value"):
        sourcegrad.jvp(complex_variance, (x,), (np.ones(2),))