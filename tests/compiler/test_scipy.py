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
    return logsumexp(x) + np.sum(logsumexp(x, axis=1) ** 2) + \
        np.sum(logsumexp(x, axis=0, keepdims=True) * x)


def lse_b(x):
    return np.sum(logsumexp(x, axis=1, b=U) ** 2)


def lse_wrt_b(u):
    return np.sum(special.logsumexp(X, axis=1, b=u) ** 2)


def gammas(p):
    return np.sum(special.gammaln(p) + special.digamma(p) ** 2 + special.polygamma(1, p) +
                  special.polygamma(2, p) + special.gamma(p) + special.psi(p))


def sigmoids(x):
    return np.sum(special.expit(x) ** 2 + special.erf(x) ** 3 + special.erfc(x) +
                  special.ndtr(x) ** 2 + special.log_ndtr(x))


def unit_interval(u):
    return np.sum(special.logit(u) ** 2 + special.erfinv(u - 0.5) ** 2 +
                  special.xlogy(u, u + 1.0) + special.xlog1py(u ** 2, u))


def softmaxes(x):
    return np.sum(special.softmax(x, axis=1) * X) + np.sum(special.log_softmax(x) ** 2)


def norm_in_x(x):
    return np.sum(norm.logpdf(x) + norm.pdf(x, 0.3, 2.0) ** 2 +
                  norm.cdf(x, loc=0.1, scale=1.5) ** 2 + norm.logcdf(x))


def norm_in_loc(m):
    return np.sum(norm.logpdf(X, m, 1.3) + norm.pdf(X, loc=m) + norm.cdf(X, m, 2.0) ** 2 +
                  norm.logcdf(X, m))


def norm_in_scale(s):
    return np.sum(norm.logpdf(X, 0.2, s) + norm.pdf(X, scale=s) ** 2 +
                  norm.cdf(X, 0.5, s) ** 2 + stats.norm.logcdf(X, 0.1, s))


def new_unary(x):
    return np.sum(special.erfcinv(x) ** 2 + special.ndtri(x) ** 2 + special.erfcx(x) +
                  special.log_expit(x) + special.rgamma(x + 1.0))


def bessels(p):
    return np.sum(special.i0(p) + special.i1(p) ** 2 + special.i0e(p) + special.i1e(p) ** 2 +
                  special.k0(p) + special.k1(p) ** 2 + special.j0(p) * special.j1(p) +
                  special.y0(p) + special.y1(p) ** 2)


def bessels_of_order(p):
    return np.sum(special.iv(1.5, p) + special.ive(0.5, p) ** 2 + special.kv(2.5, p) +
                  special.jv(1.5, p) ** 2 + special.jn(2, p) + special.yv(0.5, p) +
                  special.yn(1, p) ** 2)


def incomplete(u):
    return np.sum(special.gammainc(2.0, u * 3.0) ** 2 + special.gammaincc(1.5, u) +
                  special.betainc(2.0, 3.0, u) ** 2 + special.gammasgn(u - 0.5) * u)


def betas_in_a(p):
    return np.sum(special.beta(p, 1.5) + special.betaln(p, P) ** 2 +
                  special.betaln(2.0, p) + special.multigammaln(p + 2.0, 3) ** 2)


CASES = [(new_unary, U), (bessels, P), (bessels_of_order, P), (incomplete, U), (betas_in_a, P),
         (lse, X), (lse_b, X), (lse_wrt_b, U), (gammas, P), (sigmoids, X),
         (unit_interval, U), (softmaxes, X), (norm_in_x, X), (norm_in_loc, X * 0.5),
         (norm_in_scale, P)]


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
