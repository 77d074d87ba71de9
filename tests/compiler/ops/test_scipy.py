"""scipy.special and scipy.stats.norm in the compiler (sourcegrad/ops/scipy_special.py,
scipy_stats.py): gradient, JVP and Hessian-vector product against central finite differences;
scipy's own source is never inlined. Skipped without scipy."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from tests.compiler.fd_check import check_all

special = pytest.importorskip("scipy.special")
stats = pytest.importorskip("scipy.stats")
from scipy.special import logsumexp  # noqa: E402  (the spelling users write)
from scipy.stats import norm  # noqa: E402

R = np.random.default_rng(2)
X = R.normal(size=(3, 4))
P = R.uniform(0.5, 3.0, size=(3, 4))
U = R.uniform(0.1, 0.9, size=(3, 4))


def lse(x):
    return (
        logsumexp(x)
        + np.sum(logsumexp(x, axis=1) ** 2)
        + np.sum(logsumexp(x, axis=0, keepdims=True) * x)
    )


def lse_b(x):
    return np.sum(logsumexp(x, axis=1, b=U) ** 2)


def lse_wrt_b(u):
    return np.sum(special.logsumexp(X, axis=1, b=u) ** 2)


def gammas(p):
    return np.sum(
        special.gammaln(p)
        + special.digamma(p) ** 2
        + special.polygamma(1, p)
        + special.polygamma(2, p)
        + special.gamma(p)
        + special.psi(p)
    )


def sigmoids(x):
    return np.sum(
        special.expit(x) ** 2
        + special.erf(x) ** 3
        + special.erfc(x)
        + special.ndtr(x) ** 2
        + special.log_ndtr(x)
    )


def unit_interval(u):
    return np.sum(
        special.logit(u) ** 2
        + special.erfinv(u - 0.5) ** 2
        + special.xlogy(u, u + 1.0)
        + special.xlog1py(u**2, u)
    )


def softmaxes(x):
    return np.sum(special.softmax(x, axis=1) * X) + np.sum(special.log_softmax(x) ** 2)


def norm_in_x(x):
    return np.sum(
        norm.logpdf(x)
        + norm.pdf(x, 0.3, 2.0) ** 2
        + norm.cdf(x, loc=0.1, scale=1.5) ** 2
        + norm.logcdf(x)
    )


def norm_in_loc(m):
    return np.sum(
        norm.logpdf(X, m, 1.3) + norm.pdf(X, loc=m) + norm.cdf(X, m, 2.0) ** 2 + norm.logcdf(X, m)
    )


def norm_in_scale(s):
    return np.sum(
        norm.logpdf(X, 0.2, s)
        + norm.pdf(X, scale=s) ** 2
        + norm.cdf(X, 0.5, s) ** 2
        + stats.norm.logcdf(X, 0.1, s)
    )


def new_unary(x):
    return np.sum(
        special.erfcinv(x) ** 2
        + special.ndtri(x) ** 2
        + special.erfcx(x)
        + special.log_expit(x)
        + special.rgamma(x + 1.0)
    )


def bessels(p):
    return np.sum(
        special.i0(p)
        + special.i1(p) ** 2
        + special.i0e(p)
        + special.i1e(p) ** 2
        + special.k0(p)
        + special.k1(p) ** 2
        + special.j0(p) * special.j1(p)
        + special.y0(p)
        + special.y1(p) ** 2
    )


def bessels_of_order(p):
    return np.sum(
        special.iv(1.5, p)
        + special.ive(0.5, p) ** 2
        + special.kv(2.5, p)
        + special.jv(1.5, p) ** 2
        + special.jn(2, p)
        + special.yv(0.5, p)
        + special.yn(1, p) ** 2
    )


def incomplete(u):
    return np.sum(
        special.gammainc(2.0, u * 3.0) ** 2
        + special.gammaincc(1.5, u)
        + special.betainc(2.0, 3.0, u) ** 2
        + special.gammasgn(u - 0.5) * u
    )


def betas_in_a(p):
    return np.sum(
        special.beta(p, 1.5)
        + special.betaln(p, P) ** 2
        + special.betaln(2.0, p)
        + special.multigammaln(p + 2.0, 3) ** 2
    )


def elementary(u):
    return np.sum(
        special.expm1(u) ** 2
        + special.log1p(u)
        + special.exp2(u) * special.exp10(u)
        + special.cbrt(u) ** 2
        + special.cosm1(u) ** 2
        + special.sindg(u * 90.0)
        + special.cosdg(u * 90.0) ** 2
        + special.tandg(u * 40.0)
        + special.cotdg(u * 40.0 + 10.0)
        + special.softplus(u - 0.5) ** 2
        + special.entr(u)
    )


def integrals(u):
    return np.sum(
        special.erfi(u) ** 2
        + special.dawsn(u)
        + special.expi(u + 0.5)
        + special.exp1(u + 0.5) ** 2
        + special.spence(u + 0.5)
        + special.ellipk(u)
        + special.ellipe(u) ** 2
        + special.wrightomega(u)
        + special.ndtri_exp(-u - 0.2)
    )


def orders_and_shapes(p):
    return np.sum(
        special.gammaincinv(2.0, p * 0.3)
        + special.gammainccinv(1.5, p * 0.3) ** 2
        + special.expn(2, p)
        + special.zeta(3.0, p) ** 2
        + special.huber(1.0, p - 1.0)
        + special.pseudo_huber(0.7, p - 1.0)
        + special.boxcox(p, 0.5) ** 2
        + special.boxcox1p(p, -0.5)
        + special.inv_boxcox(p, 0.3)
        + special.inv_boxcox1p(p, 0.4) ** 2
        + special.betaincinv(2.0, 3.0, p * 0.3)
        + special.iv(np.array([0.5, 1.5, 2.5, 3.5]), p) ** 2
    )


def two_arguments(p):
    return np.sum(
        special.rel_entr(p, P[::-1])
        + special.rel_entr(P, p)
        + special.kl_div(p, P[::-1]) ** 2
        + special.kl_div(P, p)
        + special.binom(p + 3.0, p)
        + special.binom(5.5, p)
        + special.poch(p, p * 0.5)
        + special.owens_t(p - 1.0, p)
        + special.owens_t(0.3, p - 1.0)
    )


CASES = [
    (elementary, U),
    (integrals, U),
    (orders_and_shapes, P),
    (two_arguments, P),
    (new_unary, U),
    (bessels, P),
    (bessels_of_order, P),
    (incomplete, U),
    (betas_in_a, P),
    (lse, X),
    (lse_b, X),
    (lse_wrt_b, U),
    (gammas, P),
    (sigmoids, X),
    (unit_interval, U),
    (softmaxes, X),
    (norm_in_x, X),
    (norm_in_loc, X * 0.5),
    (norm_in_scale, P),
]


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_matches_finite_differences(f, x):
    check_all(f, x)


def uses_hankel(x):
    return np.sum(special.hankel1e(0.5, x).real)


def in_the_order(v):
    return np.sum(special.iv(v, P))


def test_an_order_parameter_is_refused_not_a_silent_zero():
    with pytest.raises(errors.NoRuleError, match="order"):
        sourcegrad.grad(in_the_order)(1.5)


def uses_spherical_jn(x):
    return np.sum(special.spherical_jn(0, x))  # (a Python function of scipy)


def test_a_scipy_function_without_a_rule_is_refused_naming_scipy():
    with pytest.raises(errors.NoRuleError, match=r"special.hankel1e \(scipy.special\)"):
        sourcegrad.grad(uses_hankel)(P)


def test_scipy_source_is_never_inlined():
    # logsumexp's own source (array-API dispatch, keyword-only parameters) once failed to
    # inline; a Python function of scipy without a rule is refused, not inlined
    assert sourcegrad.grad(lambda_lse)(X).shape == X.shape
    with pytest.raises(errors.NoRuleError, match="scipy"):
        sourcegrad.grad(uses_spherical_jn)(U)


def lambda_lse(x):
    return logsumexp(x)


# scipy.stats beyond norm: the location-scale families (x, shape parameters, loc, scale),
# poisson in mu, dirichlet, multivariate_normal
from scipy.stats import beta, chi2, dirichlet, gamma, multivariate_normal, poisson, t  # noqa: E402

Q = R.uniform(0.2, 0.8, size=(3, 4))
COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
PTS = R.normal(size=(4, 3))
SIMPLEX = R.dirichlet([2.0, 3.0, 4.0], size=2).T  # (3, 2): components first, as scipy's


def t_in_x(x):
    return np.sum(
        t.logpdf(x, 3.0)
        + t.pdf(x, 4.0, 0.5, 2.0) ** 2
        + t.cdf(x, 2.5) ** 2
        + t.logcdf(x, 5.0, scale=1.5)
    )


def t_in_df(d):
    return np.sum(t.logpdf(X, d, 0.1, 1.3) + t.pdf(X, d) ** 2)


def t_in_loc_scale(p):
    return np.sum(
        t.logpdf(X, 3.0, p - 1.0, p)
        + t.cdf(X, 4.0, loc=p - 1.0, scale=p) ** 2
        + t.logcdf(X, 4.0, 0.2, p)
    )


def gamma_all(p):
    return np.sum(
        gamma.logpdf(p * 2.0, 2.0)
        + gamma.pdf(P, p + 1.0, 0.0, 2.0) ** 2
        + gamma.logpdf(P, 2.5, scale=p)
        + gamma.cdf(p, 2.0) ** 2
        + gamma.logcdf(P, 1.5, 0.0, p)
    )


def beta_all(q):
    return np.sum(
        beta.logpdf(q, 2.0, 3.0)
        + beta.pdf(Q, q * 3.0, 2.5) ** 2
        + beta.logpdf(Q, 1.5, q + 1.0)
        + beta.cdf(q, 2.0, 2.0) ** 2
        + beta.logcdf(q, 1.5, 3.0)
    )


def chi2_all(p):
    return np.sum(
        chi2.logpdf(p, 3.0)
        + chi2.pdf(P, p + 2.0) ** 2
        + chi2.cdf(p, 4.0) ** 2
        + chi2.logcdf(P, 3.0, scale=p)
    )


def poisson_in_mu(p):
    return np.sum(
        poisson.logpmf(3.0, p)
        + poisson.pmf(2.0, p) ** 2
        + poisson.cdf(2.0, p) ** 2
        + poisson.logcdf(4.0, p)
    )


def dirichlet_in_alpha(a):
    return (
        dirichlet.logpdf(SIMPLEX[:, 0], a)
        + np.sum(dirichlet.logpdf(SIMPLEX, a) ** 2)
        + np.sum(dirichlet.pdf(SIMPLEX, a))
    )


def mvn_in_x(x):
    return (
        np.sum(multivariate_normal.logpdf(x, PTS[0], COV) ** 2)
        + multivariate_normal.logpdf(x[1], cov=COV)
        + np.sum(multivariate_normal.pdf(x, None, COV))
    )


def mvn_in_mean(m):
    return np.sum(multivariate_normal.logpdf(PTS, m, COV) ** 2) + multivariate_normal.pdf(
        PTS[0], m, COV
    )


def mvn_in_cov(c):
    cov = c @ c.T + np.eye(3)  # symmetric: scipy reads cov through eigh
    return (
        np.sum(multivariate_normal.logpdf(PTS, PTS[1], cov))
        + multivariate_normal.pdf(PTS[2], cov=cov) * 10.0
    )


STATS_CASES = [
    (t_in_x, X),
    (t_in_df, P + 2.0),
    (t_in_loc_scale, P),
    (gamma_all, P),
    (beta_all, Q),
    (chi2_all, P),
    (poisson_in_mu, P),
    (dirichlet_in_alpha, P[0, :3] + 1.0),
    (mvn_in_x, PTS),
    (mvn_in_mean, PTS[3]),
    (mvn_in_cov, COV * 0.5),
]


@pytest.mark.parametrize("f, x", STATS_CASES, ids=[f.__name__ for f, _ in STATS_CASES])
def test_stats_match_finite_differences(f, x):
    check_all(f, x, rtol=1e-5)


def t_cdf_in_df(d):
    return np.sum(t.cdf(X, d))


def poisson_in_k(k):
    return np.sum(poisson.logpmf(k, 2.0))


@pytest.mark.parametrize("f, x", [(t_cdf_in_df, 3.0), (poisson_in_k, 2.0)])
def test_stats_without_a_rule_are_refused(f, x):
    with pytest.raises(errors.NoRuleError):
        sourcegrad.grad(f)(x)


# scipy.linalg: triangular and Cholesky solves, expm, sqrtm, solve_sylvester
from scipy.linalg import cho_factor, cho_solve, expm, solve_sylvester, solve_triangular, sqrtm  # noqa: E402,E501

M3 = R.normal(size=(3, 3))
B3 = R.normal(size=3)
B32 = R.normal(size=(3, 2))
SPD = M3 @ M3.T + 3.0 * np.eye(3)


def triangular_in_a(a):
    return (
        np.sum(solve_triangular(a, B3, lower=True) ** 2)
        + np.sum(solve_triangular(a, B32) * B32)
        + np.sum(solve_triangular(a, B3, trans=1, lower=True, unit_diagonal=True) ** 2)
        + np.sum(solve_triangular(a, B32, trans="T") ** 2)
    )


def triangular_in_b(b):
    return np.sum(solve_triangular(SPD, b, lower=True) ** 2) + np.sum(
        solve_triangular(SPD, b, trans=1) ** 3
    )


def cho_factor_in_a(a):
    c, low = cho_factor(a @ a.T + np.eye(3), lower=True)
    c2, up = cho_factor(a @ a.T + np.eye(3))
    return np.sum(np.tril(c) * M3) + np.sum(np.triu(c2) * M3)


def cho_solve_in_b(b):
    return np.sum(cho_solve(cho_factor(SPD), b) ** 2) + np.sum(
        cho_solve(cho_factor(SPD, lower=True), b) * b
    )


def expm_sqrtm(a):
    return np.sum(expm(a * 0.5) * M3) + np.sum(sqrtm(a @ a.T + np.eye(3)) * M3)


def sylvester(a):
    return np.sum(solve_sylvester(a + 3.0 * np.eye(3), SPD, M3) ** 2) + np.sum(
        solve_sylvester(SPD, a + 3.0 * np.eye(3), a) * M3
    )


LINALG_CASES = [
    (triangular_in_a, SPD),
    (triangular_in_b, B3),
    (triangular_in_b, B32),
    (cho_factor_in_a, M3),
    (cho_solve_in_b, B3),
    (cho_solve_in_b, B32),
    (expm_sqrtm, M3),
    (sylvester, M3),
]


@pytest.mark.parametrize(
    "f, x", LINALG_CASES, ids=[f"{f.__name__}-{np.ndim(x)}" for f, x in LINALG_CASES]
)
def test_scipy_linalg_matches_finite_differences(f, x):
    check_all(f, x, rtol=1e-5)


def cho_solve_in_the_factor(a):
    # (a symmetric input: cho_factor reads one triangle of it)
    return np.sum(cho_solve(cho_factor(a @ a.T + np.eye(3)), B3))


def test_cho_solve_in_its_factor():
    # (was refused; more cases in tests/compiler/ops/test_outsider_gaps.py)
    check_all(cho_solve_in_the_factor, M3, rtol=1e-5)


# scipy.signal: convolve and correlate in every mode, 1-d and 2-d, either input larger
from scipy.signal import convolve, correlate  # noqa: E402

V7 = R.normal(size=7)
H3 = R.normal(size=3)
BIG = R.normal(size=9)
K23 = R.normal(size=(2, 3))


def convolve_in_1(x):
    return (
        np.sum(convolve(x, H3) ** 2)
        + np.sum(convolve(x, H3, mode="same") * x)
        + np.sum(convolve(x, H3, mode="valid") ** 2)
        + np.sum(convolve(x, BIG, "valid") ** 2)
        + np.sum(convolve(H3, x, mode="same") ** 2)
    )


def convolve_in_2(h):
    return (
        np.sum(convolve(V7, h) ** 2)
        + np.sum(convolve(V7, h, mode="same") * V7)
        + np.sum(convolve(V7, h, "valid") ** 3)
    )


def correlate_in_1(x):
    return (
        np.sum(correlate(x, H3) ** 2)
        + np.sum(correlate(x, H3, mode="same") * x)
        + np.sum(correlate(x, H3, mode="valid") ** 2)
        + np.sum(correlate(x, BIG, "valid") ** 2)
    )


def correlate_in_2(h):
    return (
        np.sum(correlate(V7, h) ** 2)
        + np.sum(correlate(V7, h, mode="same") * V7)
        + np.sum(correlate(H3, h, "valid") ** 3)
    )


def two_dimensional(m):
    return (
        np.sum(convolve(m, K23, "same") ** 2)
        + np.sum(correlate(m, K23, "valid") ** 2)
        + np.sum(convolve(K23, m) * convolve(m, K23))
    )


SIGNAL_CASES = [
    (convolve_in_1, V7),
    (convolve_in_2, H3),
    (correlate_in_1, V7),
    (correlate_in_2, H3),
    (two_dimensional, R.normal(size=(4, 5))),
]


@pytest.mark.parametrize("f, x", SIGNAL_CASES, ids=[f.__name__ for f, _ in SIGNAL_CASES])
def test_scipy_signal_matches_finite_differences(f, x):
    check_all(f, x)


# survival functions, quantiles and the families without shape parameters (and lognorm)
from scipy.stats import cauchy, expon, laplace, logistic, lognorm  # noqa: E402


def tails_in_x(x):
    return np.sum(
        norm.sf(x) ** 2
        + norm.logsf(x, 0.3, 1.5)
        + t.sf(x, 3.0) ** 2
        + t.logsf(x, 4.0, 0.1)
        + laplace.logpdf(x, 0.05)
        + laplace.cdf(x) ** 2
        + logistic.logpdf(x)
        + logistic.sf(x, 0.2, 2.0) ** 2
        + cauchy.logpdf(x, 0.1, 0.5)
        + cauchy.logcdf(x)
        + cauchy.pdf(x) ** 2
        + logistic.logsf(x)
    )


def positive_in_x(p):
    return np.sum(
        gamma.sf(p, 2.0) ** 2
        + gamma.logsf(p, 1.5, scale=2.0)
        + chi2.sf(p, 3.0) ** 2
        + expon.logpdf(p)
        + expon.pdf(p, 0.1, 2.0) ** 2
        + expon.cdf(p) ** 2
        + expon.logsf(p, scale=0.7)
        + lognorm.logpdf(p, 0.7)
        + lognorm.pdf(p, 0.5, 0.0, 1.5) ** 2
        + lognorm.cdf(p, 0.8) ** 2
        + lognorm.logsf(p, 0.6)
        + beta.sf(p / 3.0, 2.0, 3.0)
        + beta.logsf(p / 3.0, 1.5, 2.0)
    )


def quantiles(u):
    return np.sum(
        norm.ppf(u) ** 2
        + norm.ppf(u, 1.0, 2.0)
        + t.ppf(u, 4.0) ** 2
        + gamma.ppf(u, 2.0)
        + beta.ppf(u, 2.0, 3.0) ** 2
        + chi2.ppf(u, 3.0)
        + expon.ppf(u, 0.1, 2.0) ** 2
        + laplace.ppf(u)
        + logistic.ppf(u) ** 2
        + cauchy.ppf(u * 0.5 + 0.25)
        + lognorm.ppf(u, 0.5)
    )


def in_loc_scale(p):
    return np.sum(
        norm.ppf(U, p - 1.0, p) ** 2
        + norm.sf(X, p - 1.0, p)
        + laplace.logpdf(X, p - 1.0, p)
        + logistic.cdf(X, p - 1.0, p) ** 2
        + cauchy.logpdf(X, p - 1.0, p)
        + expon.logsf(P, p - 1.0, p)
        + lognorm.logpdf(P + 1.0, 0.5, p - 1.0, p)
    )


def lognorm_in_s(s):
    return np.sum(lognorm.logpdf(P, s) + lognorm.pdf(P, s, 0.1, 2.0) ** 2)


TAIL_CASES = [
    (tails_in_x, X),
    (positive_in_x, P),
    (quantiles, U),
    (in_loc_scale, P),
    (lognorm_in_s, P),
]


@pytest.mark.parametrize("f, x", TAIL_CASES, ids=[f.__name__ for f, _ in TAIL_CASES])
def test_tails_quantiles_and_more_families_match_finite_differences(f, x):
    check_all(f, x, rtol=1e-5)
