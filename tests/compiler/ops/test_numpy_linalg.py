"""np.linalg in the compiler: each function's gradient, JVP and Hessian-vector product against
central finite differences (sourcegrad/ops/numpy_linalg.py), batched where numpy batches; the
variants with no rule raise a located NoRuleError."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from tests.compiler.fd_check import check_all

R = np.random.default_rng(0)
A = R.normal(size=(3, 3)) * 0.5 + np.eye(3) * 2.0  # well conditioned
AB = R.normal(size=(2, 3, 3)) * 0.5 + np.eye(3) * 2.0
W = R.normal(size=(3, 3))
b = R.normal(size=3)
BM = R.normal(size=(3, 2))
TALL = R.normal(size=(5, 3))
WIDE = R.normal(size=(3, 5))
TALLB = R.normal(size=(2, 4, 3))
x5 = R.normal(size=5)
M34 = R.normal(size=(3, 4))
T234 = R.normal(size=(2, 3, 4))


def inv(A):
    return np.sum(np.linalg.inv(A) * W)


def solve_vector(A):
    return np.sum(np.linalg.solve(A, b) * np.arange(3.0))


def solve_vector_rhs(b, A):
    return np.sum(np.linalg.solve(A, b) ** 2)


def solve_matrix(A):
    return np.sum(np.linalg.solve(A, BM) ** 2)


def solve_matrix_rhs(BM, A):
    return np.sum(np.linalg.solve(A, BM) ** 2)


def solve_batched_vector_rhs(b, AB):
    return np.sum(np.linalg.solve(AB, b) ** 2)


def solve_batched_matrix_rhs(BM, AB):
    return np.sum(np.linalg.solve(AB, BM) ** 3)


def det(A):
    return np.linalg.det(A) ** 2


def det_batched(A):
    return np.sum(np.linalg.det(A) * np.arange(1.0, 1.0 + A.shape[0]))


def slogdet(A):
    sign, logdet = np.linalg.slogdet(A)
    return sign * logdet


def slogdet_index(A):
    return np.sum(np.linalg.slogdet(A)[1] ** 2)


def cholesky(X):
    L = np.linalg.cholesky(X @ np.swapaxes(X, -1, -2) + np.eye(3))
    return np.sum(L * W)


def cholesky_upper(X):
    # the upper factor (numpy 2's upper=True): U = L^T, its own rule (was NoRuleError)
    S = X @ np.swapaxes(X, -1, -2) + np.eye(3)
    return np.sum(np.linalg.cholesky(S, upper=True) * W)


def eigh_values(X):
    w, V = np.linalg.eigh(X + np.swapaxes(X, -1, -2))
    return np.sum(w * np.arange(3.0))


def eigh_vectors(X):
    w, V = np.linalg.eigh(X + np.swapaxes(X, -1, -2))
    return np.sum((V * V[..., 0:1, :]) * W) + np.sum(w**2)


def eigvalsh(X):
    return np.sum(np.linalg.eigvalsh(X + np.swapaxes(X, -1, -2)) ** 3)


def svd_values(X):
    return np.sum(np.linalg.svd(X, compute_uv=False) ** 3)


def svd_all(X):
    U, s, Vh = np.linalg.svd(X, full_matrices=False)
    return np.sum(U[..., 0, :] ** 3) + np.sum(s * s) + np.sum(Vh[..., :, 0] ** 3)


def svd_square(X):
    U, s, Vh = np.linalg.svd(X)
    return np.sum(U[0] * Vh[:, 1]) + np.sum(np.log(s))


def pinv(X):
    return np.sum(np.linalg.pinv(X) ** 2)


def matrix_power(A):
    return np.sum(np.linalg.matrix_power(A, 3) * W)


def matrix_power_zero(A):
    return np.sum(np.linalg.matrix_power(A, 0) * W) + np.sum(A * A)


def matrix_power_negative(A):
    return np.sum(np.linalg.matrix_power(A, -2) * W)


def qr(X):
    Q, R = np.linalg.qr(X)
    return np.sum(Q[..., 0] ** 3) + np.sum(R * R[..., 0:1, :])


def qr_r(X):
    return np.sum(np.linalg.qr(X)[1] ** 3)


def norm(x):
    return np.linalg.norm(x)


def norm_1(x):
    return np.linalg.norm(x, 1)


def norm_inf(x):
    return np.linalg.norm(x, np.inf) + np.linalg.norm(x, -np.inf)


def norm_3(x):
    return np.linalg.norm(x, 3)


def norm_fro(M):
    return np.linalg.norm(M, "fro") ** 3


def norm_nuc(M):
    return np.linalg.norm(M, "nuc") ** 2


def norm_axis(M):
    return np.sum(np.linalg.norm(M, axis=0) * np.arange(M.shape[-1])) + np.sum(
        np.linalg.norm(M, 1, axis=-1) ** 2
    )


def norm_keepdims(M):
    return np.sum(M / np.linalg.norm(M, axis=-1, keepdims=True) * np.arange(M.shape[-1]))


def norm_matrix_axes(T):
    return np.sum(np.linalg.norm(T, axis=(1, 2)) ** 3) + np.sum(
        np.linalg.norm(T, "nuc", axis=(-2, -1))
    )


BT = R.normal(size=5)
BT2 = R.normal(size=(5, 2))


def lstsq_in_a(a):
    x, res, rank, s = np.linalg.lstsq(a, BT)
    return np.sum(x**2) + np.sum(res) * 0.3 + np.sum(s**2) * 0.1


def lstsq_matrix_rhs(a):
    x, res, rank, s = np.linalg.lstsq(a, BT2)
    return np.sum(x * x[::-1]) + np.sum(res**2) * 0.3


def lstsq_in_b(b):
    x, res, rank, s = np.linalg.lstsq(TALL, b)
    return np.sum(x**3) + np.sum(res) * 0.5


def lstsq_square(a):
    return np.sum(np.linalg.lstsq(a, b)[0] ** 2)


def array_api_functions(x):
    return (
        np.sum(np.linalg.trace(x) ** 2)
        + np.sum(np.linalg.diagonal(x, offset=1) ** 2)
        + np.sum(np.linalg.matrix_transpose(x) ** 3)
        + np.sum(np.linalg.vecdot(x, x * 2.0) ** 2)
        + np.sum(np.linalg.outer(x[0, 0], x[1, 1]) ** 2)
    )


CASES = [
    (array_api_functions, (T234,)),
    (lstsq_in_a, (TALL,)),
    (lstsq_matrix_rhs, (TALL,)),
    (lstsq_in_b, (BT,)),
    (lstsq_in_b, (BT2,)),
    (lstsq_square, (A,)),
    (inv, (A,)),
    (inv, (AB,)),
    (solve_vector, (A,)),
    (solve_vector_rhs, (b, A)),
    (solve_matrix, (A,)),
    (solve_matrix_rhs, (BM, A)),
    (solve_batched_vector_rhs, (b, AB)),
    (solve_batched_matrix_rhs, (BM, AB)),
    (solve_matrix, (AB,)),
    (det, (A,)),
    (det_batched, (AB,)),
    (slogdet, (A,)),
    (slogdet_index, (AB,)),
    (cholesky, (A,)),
    (cholesky, (AB,)),
    (cholesky_upper, (A,)),
    (cholesky_upper, (AB,)),
    (eigh_values, (A,)),
    (eigh_vectors, (A,)),
    (eigh_vectors, (AB,)),
    (eigvalsh, (A,)),
    (svd_values, (TALL,)),
    (svd_values, (WIDE,)),
    (svd_values, (TALLB,)),
    (svd_all, (TALL,)),
    (svd_all, (WIDE,)),
    (svd_all, (TALLB,)),
    (svd_square, (A,)),
    (pinv, (TALL,)),
    (pinv, (WIDE,)),
    (matrix_power, (A,)),
    (matrix_power, (AB,)),
    (matrix_power_zero, (A,)),
    (matrix_power_negative, (A,)),
    (qr, (TALL,)),
    (qr, (A,)),
    (qr, (TALLB,)),
    (qr_r, (TALL,)),
    (norm, (x5,)),
    (norm_1, (x5,)),
    (norm_inf, (x5,)),
    (norm_3, (x5,)),
    (norm, (M34,)),
    (norm_fro, (M34,)),
    (norm_nuc, (M34,)),
    (norm_axis, (M34,)),
    (norm_keepdims, (M34,)),
    (norm, (T234,)),
    (norm_matrix_axes, (T234,)),
]


@pytest.mark.parametrize(
    "f, args", CASES, ids=[f"{f.__name__}-{'x'.join(map(str, a[0].shape))}" for f, a in CASES]
)
def test_matches_finite_differences(f, args):
    check_all(f, *args)


def svd_full(X):
    U, s, Vh = np.linalg.svd(X)
    return np.sum(U)


def qr_wide(X):
    Q, R = np.linalg.qr(X)
    return np.sum(R)


def lstsq_wide(X):
    return np.sum(np.linalg.lstsq(X, b)[0])


@pytest.mark.parametrize(
    "f, x, what",
    [
        (svd_full, TALL, "full_matrices=True of a non-square matrix"),
        (qr_wide, WIDE, "more columns than rows"),
        (lstsq_wide, WIDE, "more columns than rows"),
    ],
)
def test_variants_without_a_rule_are_refused_where_they_are_used(f, x, what):
    with pytest.raises(errors.NoRuleError, match=what) as info:
        sourcegrad.grad(f)(x)
    assert info.value.loc is not None and info.value.loc.line > 0
    with pytest.raises(errors.NoRuleError, match=what):  # forward mode too
        sourcegrad.jvp(f, (x,), (np.ones_like(x),))


def test_an_unused_part_of_a_tuple_result_gets_a_zero_adjoint():
    # only log|det| is used: the adjoint of the sign part is zeros (no NaN, nothing wrong)
    def f(A):
        sign, logdet = np.linalg.slogdet(A)
        return logdet

    np.testing.assert_allclose(sourcegrad.grad(f)(A), np.linalg.inv(A).T, rtol=1e-12)


MA, MB, MC = R.normal(size=(3, 4)), R.normal(size=(4, 5)), R.normal(size=(5, 2))
VA, VC = R.normal(size=3), R.normal(size=2)


def multi_dot_middle(x):
    return (
        np.sum(np.linalg.multi_dot([MA, x, MC]) ** 2)
        + np.linalg.multi_dot([VA, MA, x, MC, VC])
        + np.sum(np.linalg.multi_dot([x.T, MA.T]) ** 2)
    )


def multi_dot_ends(v):
    return np.linalg.multi_dot([v, MA, MB, MC, VC]) ** 2


@pytest.mark.parametrize("f, x", [(multi_dot_middle, MB), (multi_dot_ends, VA)])
def test_multi_dot_first_order_and_forward_mode(f, x):
    assert sourcegrad.check_grad(f, x) <= 1.0
    t = R.normal(size=np.shape(x))
    eps = 1e-6
    np.testing.assert_allclose(
        sourcegrad.jvp(f, (x,), (t,))[1], (f(x + eps * t) - f(x - eps * t)) / (2 * eps), rtol=1e-6
    )


def multi_dot_twice(x):
    # x in two places: the second derivative crosses between them (multi_dot_grad_operands)
    return np.sum(np.linalg.multi_dot([x, x.T, MA, MB]) ** 2)


def multi_dot_mixed(s, x):
    return np.sum(np.linalg.multi_dot([MA, s * x, MC]) ** 2)


@pytest.mark.parametrize(
    "f, x", [(multi_dot_middle, MB), (multi_dot_ends, VA), (multi_dot_twice, M34)]
)
def test_multi_dot_second_order(f, x):
    # the Hessian in reverse over reverse and forward over reverse, and an HVP, against
    # central differences of the compiled gradient (multi_dot_grad's own VJPs and JVPs)
    gradient = sourcegrad.grad(f)
    eps = 1e-6
    columns = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = eps
        e = e.reshape(x.shape)
        columns.append((gradient(x + e) - gradient(x - e)) / (2 * eps))
    numeric = np.stack(columns, axis=-1).reshape(x.shape + x.shape)
    scale = np.max(np.abs(numeric))
    for mode in ("rev", "fwd"):
        hess = sourcegrad.jacobian(gradient, mode=mode)(x)
        np.testing.assert_allclose(hess, numeric, rtol=1e-6, atol=1e-6 * scale)
    np.testing.assert_allclose(sourcegrad.hessian(f)(x), numeric, rtol=1e-6, atol=1e-6 * scale)
    check_all(f, x)


def test_multi_dot_mixed_second_derivative():
    ds = sourcegrad.grad(multi_dot_mixed, wrt=0)
    dsdx = sourcegrad.grad(ds, wrt=1)(0.7, MB)
    eps = 1e-6
    numeric = np.zeros_like(MB)
    for i in np.ndindex(MB.shape):
        e = np.zeros_like(MB)
        e[i] = eps
        numeric[i] = (ds(0.7, MB + e) - ds(0.7, MB - e)) / (2 * eps)
    np.testing.assert_allclose(dsdx, numeric, rtol=1e-6, atol=1e-6)


# np.linalg.eig / eigvals: complex results, differentiated through a real loss of them
EIG_C = R.normal(size=(4, 4))
EIG_CB = R.normal(size=(2, 3, 3))
GENERAL = R.normal(size=(4, 4))  # complex eigenvalues (two conjugate pairs or one)
_P = np.eye(4) + 0.3 * np.random.default_rng(11).normal(size=(4, 4))
REAL_EIGS = _P @ np.diag([0.5, 1.5, 2.5, 3.5]) @ np.linalg.inv(_P)  # real ones, well apart


def eigvals_abs(A):
    return np.sum(np.abs(np.linalg.eigvals(A)) * np.arange(1.0, 5.0))


def eigvals_parts(A):
    w = np.linalg.eigvals(A)
    return np.sum(np.real(w) ** 2 + np.imag(w) * np.arange(4.0))


def eig_both(A):
    w, V = np.linalg.eig(A)
    return np.sum(np.abs(V) ** 2 * EIG_C) + np.sum(np.real(w) * np.arange(4.0))


def eig_vectors(A):
    return np.sum(np.abs(np.linalg.eig(A)[1]) * EIG_C)


def eig_batched(A):
    w, V = np.linalg.eig(A)
    return np.sum(np.abs(V) ** 2 * EIG_CB) + np.sum(np.abs(w))


@pytest.mark.parametrize("f", [eigvals_abs, eigvals_parts, eig_both, eig_vectors])
@pytest.mark.parametrize("A", [GENERAL, REAL_EIGS], ids=["complex_eigenvalues", "real_ones"])
def test_eig_against_finite_differences(f, A):
    # numpy's results are complex for GENERAL, and real for REAL_EIGS up to numpy 2.4 (complex
    # with zero imaginary parts from 2.5): the same compiled rules either way
    assert np.iscomplexobj(np.linalg.eigvals(GENERAL))
    assert np.all(np.imag(np.linalg.eigvals(REAL_EIGS)) == 0)
    assert sourcegrad.check_grad(f, A) <= 1.0
    t = R.normal(size=A.shape)
    eps = 1e-6
    np.testing.assert_allclose(
        sourcegrad.jvp(f, (A,), (t,))[1], (f(A + eps * t) - f(A - eps * t)) / (2 * eps), rtol=1e-6
    )


def test_eig_batched():
    assert sourcegrad.check_grad(eig_batched, R.normal(size=(2, 3, 3))) <= 1.0


def test_eigvals_of_a_complex_matrix_has_torchs_gradient():
    def f(Z):
        return np.sum(np.abs(np.linalg.eigvals(Z)))

    Z = R.normal(size=(3, 3)) + 1j * R.normal(size=(3, 3))
    eps = 1e-6
    numeric = np.zeros_like(Z)
    for i in np.ndindex(Z.shape):
        e = np.zeros_like(Z)
        e[i] = eps
        numeric[i] = (f(Z + e) - f(Z - e)) / (2 * eps) + 1j * (f(Z + 1j * e) - f(Z - 1j * e)) / (
            2 * eps
        )  # dL/dRe + 1j dL/dIm: torch's convention
    np.testing.assert_allclose(sourcegrad.grad(f)(Z), numeric, rtol=1e-6, atol=1e-8)


def test_eig_refuses_a_loss_that_depends_on_the_eigenvectors_phases():
    def f(A):
        return np.sum(np.real(np.linalg.eig(A)[1]) * EIG_C)

    with pytest.raises(errors.NoRuleError, match="up to multiplication by e\\^\\{i phi\\}"):
        sourcegrad.grad(f)(GENERAL)


def test_eig_at_repeated_eigenvalues():
    # (docs/sharp-bits.md) eigvals' gradient of a symmetric function of them is right at a
    # repeated eigenvalue of a diagonalisable matrix; the eigenvectors' is nan there
    D = np.diag([1.0, 1.0, 2.0])

    def squares(A):
        return np.sum(np.abs(np.linalg.eigvals(A)) ** 2)

    np.testing.assert_allclose(sourcegrad.grad(squares)(D), 2.0 * D, atol=1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        assert np.all(np.isnan(sourcegrad.grad(eig_vectors)(np.diag([1.0, 1.0, 2.0, 3.0]))))
