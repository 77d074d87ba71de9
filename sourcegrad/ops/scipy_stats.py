"""scipy.stats: logpdf, pdf, cdf, logcdf, sf, logsf and ppf of norm, t, gamma, beta, chi2, expon,
laplace, logistic, cauchy and lognorm (in x (q), loc, scale and, for logpdf and pdf, the shape
parameters); logpmf, pmf, cdf and logcdf of poisson (in mu);
logpdf and pdf of dirichlet (in x and alpha) and multivariate_normal (in x, mean and cov).

Imported by the registry once the program has imported scipy.stats (`registry._OPTIONAL`).
Each is one primitive (scipy's own source is never inlined); the bound methods are known by
their distribution and function (`registry.rule_for_function`). With z = (x - loc) / scale:
d logpdf = -z / scale dx + z / scale dloc + (z^2 - 1) / scale dscale; pdf is exp(logpdf);
d cdf = pdf (dx - dloc - z dscale); logcdf is log(cdf). The other location-scale families
are the same with their standard density's score D(z) = d log f / dz in place of -z:
dx = D / scale, dloc = -D / scale, dscale = -(D z + 1) / scale. A cdf's derivative in a shape
parameter (an incomplete gamma or beta function's in its parameter) and a discrete variable
(poisson's k) have no rule: differentiating in them raises NoRuleError, never a silent zero.

Why one module: one registry family, loaded only once a program imports scipy.stats. Each
distribution's VJPs are spelled out as lambdas because the compiler reads every VJP as a
template from its source (a factory of closures cannot stand in for them), so the family is
long but flat: one record per distribution and method.
"""

from __future__ import annotations

from scipy import stats

import numpy as np
from scipy import special

from ..runtime import unbroadcast
from . import scipy_special  # (scipy.stats imports scipy.special: its entries too)
from .examples import arg, ex
from .registry import RULES, Spelling, defvjp

no_scipy_rule = scipy_special.no_scipy_rule


def _spelled(dist, name):
    return Spelling("module", f"scipy.stats.{dist}.{name}")


defvjp(
    "scipy_norm_logpdf",
    stats.norm.logpdf,
    _spelled("norm", "logpdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * (x - loc) / (scale * scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * (x - loc) / (scale * scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * ((x - loc) * (x - loc) / (scale * scale) - 1.0) / scale, scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_norm_pdf",
    stats.norm.pdf,
    _spelled("norm", "pdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * ans * (x - loc) / (scale * scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * ans * (x - loc) / (scale * scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * ans * ((x - loc) * (x - loc) / (scale * scale) - 1.0) / scale, scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_norm_cdf",
    stats.norm.cdf,
    _spelled("norm", "cdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.norm.pdf(x, loc, scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.norm.pdf(x, loc, scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.norm.pdf(x, loc, scale) * (x - loc) / scale, scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_norm_logcdf",
    stats.norm.logcdf,
    _spelled("norm", "logcdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.norm.pdf(x, loc, scale) / stats.norm.cdf(x, loc, scale), x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.norm.pdf(x, loc, scale) / stats.norm.cdf(x, loc, scale), loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.norm.pdf(x, loc, scale) / stats.norm.cdf(x, loc, scale) * (x - loc) / scale,
        scale,
    ),
    kind="elementwise",
)

# The other location-scale families (the lambdas spelled out: each is a template).
defvjp(
    "scipy_t_logpdf",
    stats.t.logpdf,
    _spelled("t", "logpdf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g
        * (-(df + 1.0) * ((x - loc) / scale) / (df + ((x - loc) / scale) * ((x - loc) / scale)))
        / scale,
        x,
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g
        * (
            0.5
            * (
                special.digamma(0.5 * (df + 1.0))
                - special.digamma(0.5 * df)
                - 1.0 / df
                - np.log1p(((x - loc) / scale) * ((x - loc) / scale) / df)
                + (df + 1.0)
                * ((x - loc) / scale)
                * ((x - loc) / scale)
                / (df * (df + ((x - loc) / scale) * ((x - loc) / scale)))
            )
        ),
        df,
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g
        * (-(df + 1.0) * ((x - loc) / scale) / (df + ((x - loc) / scale) * ((x - loc) / scale)))
        / scale,
        loc,
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g
        * (
            (-(df + 1.0) * ((x - loc) / scale) / (df + ((x - loc) / scale) * ((x - loc) / scale)))
            * ((x - loc) / scale)
            + 1.0
        )
        / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_t_pdf",
    stats.t.pdf,
    _spelled("t", "pdf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g
        * ans
        * (-(df + 1.0) * ((x - loc) / scale) / (df + ((x - loc) / scale) * ((x - loc) / scale)))
        / scale,
        x,
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g
        * ans
        * (
            0.5
            * (
                special.digamma(0.5 * (df + 1.0))
                - special.digamma(0.5 * df)
                - 1.0 / df
                - np.log1p(((x - loc) / scale) * ((x - loc) / scale) / df)
                + (df + 1.0)
                * ((x - loc) / scale)
                * ((x - loc) / scale)
                / (df * (df + ((x - loc) / scale) * ((x - loc) / scale)))
            )
        ),
        df,
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g
        * ans
        * (-(df + 1.0) * ((x - loc) / scale) / (df + ((x - loc) / scale) * ((x - loc) / scale)))
        / scale,
        loc,
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g
        * ans
        * (
            (-(df + 1.0) * ((x - loc) / scale) / (df + ((x - loc) / scale) * ((x - loc) / scale)))
            * ((x - loc) / scale)
            + 1.0
        )
        / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_t_cdf",
    stats.t.cdf,
    _spelled("t", "cdf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(g * stats.t.pdf(x, df, loc, scale), x),
    lambda g, ans, x, df, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.t.cdf in df"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(-g * stats.t.pdf(x, df, loc, scale), loc),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.t.pdf(x, df, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_t_logcdf",
    stats.t.logcdf,
    _spelled("t", "logcdf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * stats.t.pdf(x, df, loc, scale) / stats.t.cdf(x, df, loc, scale), x
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.t.logcdf in df"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.t.pdf(x, df, loc, scale) / stats.t.cdf(x, df, loc, scale), loc
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.t.pdf(x, df, loc, scale) / stats.t.cdf(x, df, loc, scale) * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_gamma_logpdf",
    stats.gamma.logpdf,
    _spelled("gamma", "logpdf"),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        g * ((a - 1.0) / ((x - loc) / scale) - 1.0) / scale, x
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        g * (np.log(((x - loc) / scale)) - special.digamma(a)), a
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        -g * ((a - 1.0) / ((x - loc) / scale) - 1.0) / scale, loc
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        -g * (((a - 1.0) / ((x - loc) / scale) - 1.0) * ((x - loc) / scale) + 1.0) / scale, scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_gamma_pdf",
    stats.gamma.pdf,
    _spelled("gamma", "pdf"),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        g * ans * ((a - 1.0) / ((x - loc) / scale) - 1.0) / scale, x
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        g * ans * (np.log(((x - loc) / scale)) - special.digamma(a)), a
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        -g * ans * ((a - 1.0) / ((x - loc) / scale) - 1.0) / scale, loc
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        -g * ans * (((a - 1.0) / ((x - loc) / scale) - 1.0) * ((x - loc) / scale) + 1.0) / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_gamma_cdf",
    stats.gamma.cdf,
    _spelled("gamma", "cdf"),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(g * stats.gamma.pdf(x, a, loc, scale), x),
    lambda g, ans, x, a, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.gamma.cdf in a"),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.gamma.pdf(x, a, loc, scale), loc
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.gamma.pdf(x, a, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_gamma_logcdf",
    stats.gamma.logcdf,
    _spelled("gamma", "logcdf"),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        g * stats.gamma.pdf(x, a, loc, scale) / stats.gamma.cdf(x, a, loc, scale), x
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.gamma.logcdf in a"),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.gamma.pdf(x, a, loc, scale) / stats.gamma.cdf(x, a, loc, scale), loc
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        -g
        * stats.gamma.pdf(x, a, loc, scale)
        / stats.gamma.cdf(x, a, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_beta_logpdf",
    stats.beta.logpdf,
    _spelled("beta", "logpdf"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g * ((a - 1.0) / ((x - loc) / scale) - (b - 1.0) / (1.0 - ((x - loc) / scale))) / scale, x
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g * (np.log(((x - loc) / scale)) - special.digamma(a) + special.digamma(a + b)), a
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g * (np.log1p(-((x - loc) / scale)) - special.digamma(b) + special.digamma(a + b)), b
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        -g * ((a - 1.0) / ((x - loc) / scale) - (b - 1.0) / (1.0 - ((x - loc) / scale))) / scale,
        loc,
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        -g
        * (
            ((a - 1.0) / ((x - loc) / scale) - (b - 1.0) / (1.0 - ((x - loc) / scale)))
            * ((x - loc) / scale)
            + 1.0
        )
        / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_beta_pdf",
    stats.beta.pdf,
    _spelled("beta", "pdf"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g
        * ans
        * ((a - 1.0) / ((x - loc) / scale) - (b - 1.0) / (1.0 - ((x - loc) / scale)))
        / scale,
        x,
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g * ans * (np.log(((x - loc) / scale)) - special.digamma(a) + special.digamma(a + b)), a
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g * ans * (np.log1p(-((x - loc) / scale)) - special.digamma(b) + special.digamma(a + b)), b
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        -g
        * ans
        * ((a - 1.0) / ((x - loc) / scale) - (b - 1.0) / (1.0 - ((x - loc) / scale)))
        / scale,
        loc,
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        -g
        * ans
        * (
            ((a - 1.0) / ((x - loc) / scale) - (b - 1.0) / (1.0 - ((x - loc) / scale)))
            * ((x - loc) / scale)
            + 1.0
        )
        / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_beta_cdf",
    stats.beta.cdf,
    _spelled("beta", "cdf"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g * stats.beta.pdf(x, a, b, loc, scale), x
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.beta.cdf in a"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.beta.cdf in b"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.beta.pdf(x, a, b, loc, scale), loc
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.beta.pdf(x, a, b, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_beta_logcdf",
    stats.beta.logcdf,
    _spelled("beta", "logcdf"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g * stats.beta.pdf(x, a, b, loc, scale) / stats.beta.cdf(x, a, b, loc, scale), x
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.beta.logcdf in a"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.beta.logcdf in b"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.beta.pdf(x, a, b, loc, scale) / stats.beta.cdf(x, a, b, loc, scale), loc
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        -g
        * stats.beta.pdf(x, a, b, loc, scale)
        / stats.beta.cdf(x, a, b, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_chi2_logpdf",
    stats.chi2.logpdf,
    _spelled("chi2", "logpdf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * ((0.5 * df - 1.0) / ((x - loc) / scale) - 0.5) / scale, x
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * (0.5 * (np.log(0.5 * ((x - loc) / scale)) - special.digamma(0.5 * df))), df
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * ((0.5 * df - 1.0) / ((x - loc) / scale) - 0.5) / scale, loc
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * (((0.5 * df - 1.0) / ((x - loc) / scale) - 0.5) * ((x - loc) / scale) + 1.0) / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_chi2_pdf",
    stats.chi2.pdf,
    _spelled("chi2", "pdf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * ans * ((0.5 * df - 1.0) / ((x - loc) / scale) - 0.5) / scale, x
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * ans * (0.5 * (np.log(0.5 * ((x - loc) / scale)) - special.digamma(0.5 * df))), df
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * ans * ((0.5 * df - 1.0) / ((x - loc) / scale) - 0.5) / scale, loc
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g
        * ans
        * (((0.5 * df - 1.0) / ((x - loc) / scale) - 0.5) * ((x - loc) / scale) + 1.0)
        / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_chi2_cdf",
    stats.chi2.cdf,
    _spelled("chi2", "cdf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(g * stats.chi2.pdf(x, df, loc, scale), x),
    lambda g, ans, x, df, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.chi2.cdf in df"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.chi2.pdf(x, df, loc, scale), loc
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.chi2.pdf(x, df, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_chi2_logcdf",
    stats.chi2.logcdf,
    _spelled("chi2", "logcdf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * stats.chi2.pdf(x, df, loc, scale) / stats.chi2.cdf(x, df, loc, scale), x
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.chi2.logcdf in df"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.chi2.pdf(x, df, loc, scale) / stats.chi2.cdf(x, df, loc, scale), loc
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g
        * stats.chi2.pdf(x, df, loc, scale)
        / stats.chi2.cdf(x, df, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)

# Survival functions (sf = 1 - cdf), quantiles (ppf, the inverse of cdf in q: 1 / pdf at the
# result) and the families without shape parameters or with lognorm's s.
defvjp(
    "scipy_norm_sf",
    stats.norm.sf,
    _spelled("norm", "sf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.norm.pdf(x, loc, scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.norm.pdf(x, loc, scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.norm.pdf(x, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_norm_logsf",
    stats.norm.logsf,
    _spelled("norm", "logsf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.norm.pdf(x, loc, scale) / stats.norm.sf(x, loc, scale), x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.norm.pdf(x, loc, scale) / stats.norm.sf(x, loc, scale), loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.norm.pdf(x, loc, scale) / stats.norm.sf(x, loc, scale) * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_norm_ppf",
    stats.norm.ppf,
    _spelled("norm", "ppf"),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g / stats.norm.pdf(ans, loc, scale), q),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g, loc),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g * ((ans - loc) / scale), scale),
    kind="elementwise",
)
defvjp(
    "scipy_t_sf",
    stats.t.sf,
    _spelled("t", "sf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(-g * stats.t.pdf(x, df, loc, scale), x),
    lambda g, ans, x, df, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.t.sf in df"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(g * stats.t.pdf(x, df, loc, scale), loc),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * stats.t.pdf(x, df, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_t_logsf",
    stats.t.logsf,
    _spelled("t", "logsf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.t.pdf(x, df, loc, scale) / stats.t.sf(x, df, loc, scale), x
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.t.logsf in df"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * stats.t.pdf(x, df, loc, scale) / stats.t.sf(x, df, loc, scale), loc
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * stats.t.pdf(x, df, loc, scale) / stats.t.sf(x, df, loc, scale) * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_t_ppf",
    stats.t.ppf,
    _spelled("t", "ppf"),
    lambda g, ans, q, df, loc=0.0, scale=1.0: unbroadcast(g / stats.t.pdf(ans, df, loc, scale), q),
    lambda g, ans, q, df, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.t.ppf in df"),
    lambda g, ans, q, df, loc=0.0, scale=1.0: unbroadcast(g, loc),
    lambda g, ans, q, df, loc=0.0, scale=1.0: unbroadcast(g * ((ans - loc) / scale), scale),
    kind="elementwise",
)
defvjp(
    "scipy_gamma_sf",
    stats.gamma.sf,
    _spelled("gamma", "sf"),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(-g * stats.gamma.pdf(x, a, loc, scale), x),
    lambda g, ans, x, a, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.gamma.sf in a"),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        g * stats.gamma.pdf(x, a, loc, scale), loc
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        g * stats.gamma.pdf(x, a, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_gamma_logsf",
    stats.gamma.logsf,
    _spelled("gamma", "logsf"),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.gamma.pdf(x, a, loc, scale) / stats.gamma.sf(x, a, loc, scale), x
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.gamma.logsf in a"),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        g * stats.gamma.pdf(x, a, loc, scale) / stats.gamma.sf(x, a, loc, scale), loc
    ),
    lambda g, ans, x, a, loc=0.0, scale=1.0: unbroadcast(
        g
        * stats.gamma.pdf(x, a, loc, scale)
        / stats.gamma.sf(x, a, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_gamma_ppf",
    stats.gamma.ppf,
    _spelled("gamma", "ppf"),
    lambda g, ans, q, a, loc=0.0, scale=1.0: unbroadcast(
        g / stats.gamma.pdf(ans, a, loc, scale), q
    ),
    lambda g, ans, q, a, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.gamma.ppf in a"),
    lambda g, ans, q, a, loc=0.0, scale=1.0: unbroadcast(g, loc),
    lambda g, ans, q, a, loc=0.0, scale=1.0: unbroadcast(g * ((ans - loc) / scale), scale),
    kind="elementwise",
)
defvjp(
    "scipy_beta_sf",
    stats.beta.sf,
    _spelled("beta", "sf"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.beta.pdf(x, a, b, loc, scale), x
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.beta.sf in a"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.beta.sf in b"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g * stats.beta.pdf(x, a, b, loc, scale), loc
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g * stats.beta.pdf(x, a, b, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_beta_logsf",
    stats.beta.logsf,
    _spelled("beta", "logsf"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.beta.pdf(x, a, b, loc, scale) / stats.beta.sf(x, a, b, loc, scale), x
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.beta.logsf in a"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.beta.logsf in b"),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g * stats.beta.pdf(x, a, b, loc, scale) / stats.beta.sf(x, a, b, loc, scale), loc
    ),
    lambda g, ans, x, a, b, loc=0.0, scale=1.0: unbroadcast(
        g
        * stats.beta.pdf(x, a, b, loc, scale)
        / stats.beta.sf(x, a, b, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_beta_ppf",
    stats.beta.ppf,
    _spelled("beta", "ppf"),
    lambda g, ans, q, a, b, loc=0.0, scale=1.0: unbroadcast(
        g / stats.beta.pdf(ans, a, b, loc, scale), q
    ),
    lambda g, ans, q, a, b, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.beta.ppf in a"),
    lambda g, ans, q, a, b, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.beta.ppf in b"),
    lambda g, ans, q, a, b, loc=0.0, scale=1.0: unbroadcast(g, loc),
    lambda g, ans, q, a, b, loc=0.0, scale=1.0: unbroadcast(g * ((ans - loc) / scale), scale),
    kind="elementwise",
)
defvjp(
    "scipy_chi2_sf",
    stats.chi2.sf,
    _spelled("chi2", "sf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.chi2.pdf(x, df, loc, scale), x
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.chi2.sf in df"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * stats.chi2.pdf(x, df, loc, scale), loc
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * stats.chi2.pdf(x, df, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_chi2_logsf",
    stats.chi2.logsf,
    _spelled("chi2", "logsf"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.chi2.pdf(x, df, loc, scale) / stats.chi2.sf(x, df, loc, scale), x
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.chi2.logsf in df"),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g * stats.chi2.pdf(x, df, loc, scale) / stats.chi2.sf(x, df, loc, scale), loc
    ),
    lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
        g
        * stats.chi2.pdf(x, df, loc, scale)
        / stats.chi2.sf(x, df, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_chi2_ppf",
    stats.chi2.ppf,
    _spelled("chi2", "ppf"),
    lambda g, ans, q, df, loc=0.0, scale=1.0: unbroadcast(
        g / stats.chi2.pdf(ans, df, loc, scale), q
    ),
    lambda g, ans, q, df, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.chi2.ppf in df"),
    lambda g, ans, q, df, loc=0.0, scale=1.0: unbroadcast(g, loc),
    lambda g, ans, q, df, loc=0.0, scale=1.0: unbroadcast(g * ((ans - loc) / scale), scale),
    kind="elementwise",
)
defvjp(
    "scipy_expon_logpdf",
    stats.expon.logpdf,
    _spelled("expon", "logpdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * (-1.0) / scale, x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * (-1.0) / scale, loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * ((-1.0) * ((x - loc) / scale) + 1.0) / scale, scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_expon_pdf",
    stats.expon.pdf,
    _spelled("expon", "pdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * ans * (-1.0) / scale, x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * ans * (-1.0) / scale, loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * ans * ((-1.0) * ((x - loc) / scale) + 1.0) / scale, scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_expon_cdf",
    stats.expon.cdf,
    _spelled("expon", "cdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.expon.pdf(x, loc, scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.expon.pdf(x, loc, scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.expon.pdf(x, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_expon_logcdf",
    stats.expon.logcdf,
    _spelled("expon", "logcdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.expon.pdf(x, loc, scale) / stats.expon.cdf(x, loc, scale), x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.expon.pdf(x, loc, scale) / stats.expon.cdf(x, loc, scale), loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.expon.pdf(x, loc, scale) / stats.expon.cdf(x, loc, scale) * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_expon_sf",
    stats.expon.sf,
    _spelled("expon", "sf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.expon.pdf(x, loc, scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.expon.pdf(x, loc, scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.expon.pdf(x, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_expon_logsf",
    stats.expon.logsf,
    _spelled("expon", "logsf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.expon.pdf(x, loc, scale) / stats.expon.sf(x, loc, scale), x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.expon.pdf(x, loc, scale) / stats.expon.sf(x, loc, scale), loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.expon.pdf(x, loc, scale) / stats.expon.sf(x, loc, scale) * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_expon_ppf",
    stats.expon.ppf,
    _spelled("expon", "ppf"),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g / stats.expon.pdf(ans, loc, scale), q),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g, loc),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g * ((ans - loc) / scale), scale),
    kind="elementwise",
)
defvjp(
    "scipy_laplace_logpdf",
    stats.laplace.logpdf,
    _spelled("laplace", "logpdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * (-np.sign(((x - loc) / scale))) / scale, x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * (-np.sign(((x - loc) / scale))) / scale, loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * ((-np.sign(((x - loc) / scale))) * ((x - loc) / scale) + 1.0) / scale, scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_laplace_pdf",
    stats.laplace.pdf,
    _spelled("laplace", "pdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * ans * (-np.sign(((x - loc) / scale))) / scale, x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * ans * (-np.sign(((x - loc) / scale))) / scale, loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * ans * ((-np.sign(((x - loc) / scale))) * ((x - loc) / scale) + 1.0) / scale, scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_laplace_cdf",
    stats.laplace.cdf,
    _spelled("laplace", "cdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.laplace.pdf(x, loc, scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.laplace.pdf(x, loc, scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.laplace.pdf(x, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_laplace_logcdf",
    stats.laplace.logcdf,
    _spelled("laplace", "logcdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.laplace.pdf(x, loc, scale) / stats.laplace.cdf(x, loc, scale), x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.laplace.pdf(x, loc, scale) / stats.laplace.cdf(x, loc, scale), loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g
        * stats.laplace.pdf(x, loc, scale)
        / stats.laplace.cdf(x, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_laplace_sf",
    stats.laplace.sf,
    _spelled("laplace", "sf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.laplace.pdf(x, loc, scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.laplace.pdf(x, loc, scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.laplace.pdf(x, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_laplace_logsf",
    stats.laplace.logsf,
    _spelled("laplace", "logsf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.laplace.pdf(x, loc, scale) / stats.laplace.sf(x, loc, scale), x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.laplace.pdf(x, loc, scale) / stats.laplace.sf(x, loc, scale), loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g
        * stats.laplace.pdf(x, loc, scale)
        / stats.laplace.sf(x, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_laplace_ppf",
    stats.laplace.ppf,
    _spelled("laplace", "ppf"),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g / stats.laplace.pdf(ans, loc, scale), q),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g, loc),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g * ((ans - loc) / scale), scale),
    kind="elementwise",
)
defvjp(
    "scipy_logistic_logpdf",
    stats.logistic.logpdf,
    _spelled("logistic", "logpdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * (-np.tanh(0.5 * ((x - loc) / scale))) / scale, x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * (-np.tanh(0.5 * ((x - loc) / scale))) / scale, loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * ((-np.tanh(0.5 * ((x - loc) / scale))) * ((x - loc) / scale) + 1.0) / scale, scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_logistic_pdf",
    stats.logistic.pdf,
    _spelled("logistic", "pdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * ans * (-np.tanh(0.5 * ((x - loc) / scale))) / scale, x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * ans * (-np.tanh(0.5 * ((x - loc) / scale))) / scale, loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * ans * ((-np.tanh(0.5 * ((x - loc) / scale))) * ((x - loc) / scale) + 1.0) / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_logistic_cdf",
    stats.logistic.cdf,
    _spelled("logistic", "cdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.logistic.pdf(x, loc, scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.logistic.pdf(x, loc, scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.logistic.pdf(x, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_logistic_logcdf",
    stats.logistic.logcdf,
    _spelled("logistic", "logcdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.logistic.pdf(x, loc, scale) / stats.logistic.cdf(x, loc, scale), x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.logistic.pdf(x, loc, scale) / stats.logistic.cdf(x, loc, scale), loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g
        * stats.logistic.pdf(x, loc, scale)
        / stats.logistic.cdf(x, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_logistic_sf",
    stats.logistic.sf,
    _spelled("logistic", "sf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.logistic.pdf(x, loc, scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.logistic.pdf(x, loc, scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.logistic.pdf(x, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_logistic_logsf",
    stats.logistic.logsf,
    _spelled("logistic", "logsf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.logistic.pdf(x, loc, scale) / stats.logistic.sf(x, loc, scale), x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.logistic.pdf(x, loc, scale) / stats.logistic.sf(x, loc, scale), loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g
        * stats.logistic.pdf(x, loc, scale)
        / stats.logistic.sf(x, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_logistic_ppf",
    stats.logistic.ppf,
    _spelled("logistic", "ppf"),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g / stats.logistic.pdf(ans, loc, scale), q),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g, loc),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g * ((ans - loc) / scale), scale),
    kind="elementwise",
)
defvjp(
    "scipy_cauchy_logpdf",
    stats.cauchy.logpdf,
    _spelled("cauchy", "logpdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g
        * (-2.0 * ((x - loc) / scale) / (1.0 + ((x - loc) / scale) * ((x - loc) / scale)))
        / scale,
        x,
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g
        * (-2.0 * ((x - loc) / scale) / (1.0 + ((x - loc) / scale) * ((x - loc) / scale)))
        / scale,
        loc,
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g
        * (
            (-2.0 * ((x - loc) / scale) / (1.0 + ((x - loc) / scale) * ((x - loc) / scale)))
            * ((x - loc) / scale)
            + 1.0
        )
        / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_cauchy_pdf",
    stats.cauchy.pdf,
    _spelled("cauchy", "pdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g
        * ans
        * (-2.0 * ((x - loc) / scale) / (1.0 + ((x - loc) / scale) * ((x - loc) / scale)))
        / scale,
        x,
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g
        * ans
        * (-2.0 * ((x - loc) / scale) / (1.0 + ((x - loc) / scale) * ((x - loc) / scale)))
        / scale,
        loc,
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g
        * ans
        * (
            (-2.0 * ((x - loc) / scale) / (1.0 + ((x - loc) / scale) * ((x - loc) / scale)))
            * ((x - loc) / scale)
            + 1.0
        )
        / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_cauchy_cdf",
    stats.cauchy.cdf,
    _spelled("cauchy", "cdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.cauchy.pdf(x, loc, scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.cauchy.pdf(x, loc, scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.cauchy.pdf(x, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_cauchy_logcdf",
    stats.cauchy.logcdf,
    _spelled("cauchy", "logcdf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.cauchy.pdf(x, loc, scale) / stats.cauchy.cdf(x, loc, scale), x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.cauchy.pdf(x, loc, scale) / stats.cauchy.cdf(x, loc, scale), loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g
        * stats.cauchy.pdf(x, loc, scale)
        / stats.cauchy.cdf(x, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_cauchy_sf",
    stats.cauchy.sf,
    _spelled("cauchy", "sf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.cauchy.pdf(x, loc, scale), x),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.cauchy.pdf(x, loc, scale), loc),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.cauchy.pdf(x, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_cauchy_logsf",
    stats.cauchy.logsf,
    _spelled("cauchy", "logsf"),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.cauchy.pdf(x, loc, scale) / stats.cauchy.sf(x, loc, scale), x
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.cauchy.pdf(x, loc, scale) / stats.cauchy.sf(x, loc, scale), loc
    ),
    lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
        g * stats.cauchy.pdf(x, loc, scale) / stats.cauchy.sf(x, loc, scale) * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_cauchy_ppf",
    stats.cauchy.ppf,
    _spelled("cauchy", "ppf"),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g / stats.cauchy.pdf(ans, loc, scale), q),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g, loc),
    lambda g, ans, q, loc=0.0, scale=1.0: unbroadcast(g * ((ans - loc) / scale), scale),
    kind="elementwise",
)
defvjp(
    "scipy_lognorm_logpdf",
    stats.lognorm.logpdf,
    _spelled("lognorm", "logpdf"),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        g * (-(1.0 + np.log(((x - loc) / scale)) / (s * s)) / ((x - loc) / scale)) / scale, x
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        g * ((np.log(((x - loc) / scale)) * np.log(((x - loc) / scale)) / (s * s) - 1.0) / s), s
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        -g * (-(1.0 + np.log(((x - loc) / scale)) / (s * s)) / ((x - loc) / scale)) / scale, loc
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        -g
        * (
            (-(1.0 + np.log(((x - loc) / scale)) / (s * s)) / ((x - loc) / scale))
            * ((x - loc) / scale)
            + 1.0
        )
        / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_lognorm_pdf",
    stats.lognorm.pdf,
    _spelled("lognorm", "pdf"),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        g * ans * (-(1.0 + np.log(((x - loc) / scale)) / (s * s)) / ((x - loc) / scale)) / scale, x
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        g * ans * ((np.log(((x - loc) / scale)) * np.log(((x - loc) / scale)) / (s * s) - 1.0) / s),
        s,
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        -g * ans * (-(1.0 + np.log(((x - loc) / scale)) / (s * s)) / ((x - loc) / scale)) / scale,
        loc,
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        -g
        * ans
        * (
            (-(1.0 + np.log(((x - loc) / scale)) / (s * s)) / ((x - loc) / scale))
            * ((x - loc) / scale)
            + 1.0
        )
        / scale,
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_lognorm_cdf",
    stats.lognorm.cdf,
    _spelled("lognorm", "cdf"),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        g * stats.lognorm.pdf(x, s, loc, scale), x
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.lognorm.cdf in s"),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.lognorm.pdf(x, s, loc, scale), loc
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.lognorm.pdf(x, s, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_lognorm_logcdf",
    stats.lognorm.logcdf,
    _spelled("lognorm", "logcdf"),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        g * stats.lognorm.pdf(x, s, loc, scale) / stats.lognorm.cdf(x, s, loc, scale), x
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.lognorm.logcdf in s"),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.lognorm.pdf(x, s, loc, scale) / stats.lognorm.cdf(x, s, loc, scale), loc
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        -g
        * stats.lognorm.pdf(x, s, loc, scale)
        / stats.lognorm.cdf(x, s, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_lognorm_sf",
    stats.lognorm.sf,
    _spelled("lognorm", "sf"),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.lognorm.pdf(x, s, loc, scale), x
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.lognorm.sf in s"),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        g * stats.lognorm.pdf(x, s, loc, scale), loc
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        g * stats.lognorm.pdf(x, s, loc, scale) * ((x - loc) / scale), scale
    ),
    kind="elementwise",
)
defvjp(
    "scipy_lognorm_logsf",
    stats.lognorm.logsf,
    _spelled("lognorm", "logsf"),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        -g * stats.lognorm.pdf(x, s, loc, scale) / stats.lognorm.sf(x, s, loc, scale), x
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.lognorm.logsf in s"),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        g * stats.lognorm.pdf(x, s, loc, scale) / stats.lognorm.sf(x, s, loc, scale), loc
    ),
    lambda g, ans, x, s, loc=0.0, scale=1.0: unbroadcast(
        g
        * stats.lognorm.pdf(x, s, loc, scale)
        / stats.lognorm.sf(x, s, loc, scale)
        * ((x - loc) / scale),
        scale,
    ),
    kind="elementwise",
)
defvjp(
    "scipy_lognorm_ppf",
    stats.lognorm.ppf,
    _spelled("lognorm", "ppf"),
    lambda g, ans, q, s, loc=0.0, scale=1.0: unbroadcast(
        g / stats.lognorm.pdf(ans, s, loc, scale), q
    ),
    lambda g, ans, q, s, loc=0.0, scale=1.0: no_scipy_rule("scipy.stats.lognorm.ppf in s"),
    lambda g, ans, q, s, loc=0.0, scale=1.0: unbroadcast(g, loc),
    lambda g, ans, q, s, loc=0.0, scale=1.0: unbroadcast(g * ((ans - loc) / scale), scale),
    kind="elementwise",
)

# poisson(k, mu, loc): k is discrete (no derivative); d logpmf / d mu = (k - loc) / mu - 1 and
# d cdf / d mu = -pmf(floor(k - loc), mu) (the cdf is an upper incomplete gamma function in mu).
defvjp(
    "scipy_poisson_logpmf",
    stats.poisson.logpmf,
    _spelled("poisson", "logpmf"),
    lambda g, ans, k, mu, loc=0: no_scipy_rule("scipy.stats.poisson in k (a discrete variable)"),
    lambda g, ans, k, mu, loc=0: unbroadcast(g * ((k - loc) / mu - 1.0), mu),
    kind="elementwise",
)
defvjp(
    "scipy_poisson_pmf",
    stats.poisson.pmf,
    _spelled("poisson", "pmf"),
    lambda g, ans, k, mu, loc=0: no_scipy_rule("scipy.stats.poisson in k (a discrete variable)"),
    lambda g, ans, k, mu, loc=0: unbroadcast(g * ans * ((k - loc) / mu - 1.0), mu),
    kind="elementwise",
)
defvjp(
    "scipy_poisson_cdf",
    stats.poisson.cdf,
    _spelled("poisson", "cdf"),
    lambda g, ans, k, mu, loc=0: no_scipy_rule("scipy.stats.poisson in k (a discrete variable)"),
    lambda g, ans, k, mu, loc=0: unbroadcast(-g * stats.poisson.pmf(np.floor(k - loc), mu), mu),
    kind="elementwise",
)
defvjp(
    "scipy_poisson_logcdf",
    stats.poisson.logcdf,
    _spelled("poisson", "logcdf"),
    lambda g, ans, k, mu, loc=0: no_scipy_rule("scipy.stats.poisson in k (a discrete variable)"),
    lambda g, ans, k, mu, loc=0: unbroadcast(
        -g * stats.poisson.pmf(np.floor(k - loc), mu) / stats.poisson.cdf(k, mu, loc), mu
    ),
    kind="elementwise",
)

# dirichlet(x, alpha): x holds the K components along its first axis (scipy's layout), the
# result one value per column. log pdf = sum((alpha - 1) log x) + gammaln(sum alpha)
# - sum gammaln(alpha). x's gradient is the formula's (x is not kept on the simplex).
defvjp(
    "scipy_dirichlet_logpdf",
    stats.dirichlet.logpdf,
    _spelled("dirichlet", "logpdf"),
    lambda g, ans, x, alpha: (
        np.reshape(alpha - 1.0, (-1,) + (1,) * (np.ndim(x) - 1)) * np.expand_dims(g, 0) / x
    ),
    lambda g, ans, x, alpha: (
        np.sum(g) * (special.digamma(np.sum(alpha)) - special.digamma(alpha))
        + np.reshape(np.log(x), (np.shape(x)[0], -1)) @ np.reshape(g, (-1,))
    ),
    jvps=(
        lambda t, ans, x, alpha: np.sum(
            np.reshape(alpha - 1.0, (-1,) + (1,) * (np.ndim(x) - 1)) * t / x, axis=0
        ),
        lambda t, ans, x, alpha: (
            np.sum(t * (special.digamma(np.sum(alpha)) - special.digamma(alpha)))
            + np.tensordot(t, np.log(x), 1)
        ),
    ),
    shape="first_axis_reduced",
)
defvjp(
    "scipy_dirichlet_pdf",
    stats.dirichlet.pdf,
    _spelled("dirichlet", "pdf"),
    lambda g, ans, x, alpha: (
        np.reshape(alpha - 1.0, (-1,) + (1,) * (np.ndim(x) - 1)) * np.expand_dims(g * ans, 0) / x
    ),
    lambda g, ans, x, alpha: (
        np.sum(g * ans) * (special.digamma(np.sum(alpha)) - special.digamma(alpha))
        + np.reshape(np.log(x), (np.shape(x)[0], -1)) @ np.reshape(g * ans, (-1,))
    ),
    jvps=(
        lambda t, ans, x, alpha: (
            ans * np.sum(np.reshape(alpha - 1.0, (-1,) + (1,) * (np.ndim(x) - 1)) * t / x, axis=0)
        ),
        lambda t, ans, x, alpha: (
            ans
            * (
                np.sum(t * (special.digamma(np.sum(alpha)) - special.digamma(alpha)))
                + np.tensordot(t, np.log(x), 1)
            )
        ),
    ),
    shape="first_axis_reduced",
)

# multivariate_normal(x, mean, cov): x holds points along its last axis. With r = x - mean and
# s = cov^-1 r (a solve, per point): d logpdf = -s . dx + s . dmean - (tr(cov^-1 dcov) -
# s^T dcov s) / 2; the cov gradient is symmetric (scipy reads cov through its eigh), so
# differentiate functions of symmetric covariances. mean None (zero) carries no gradient.
defvjp(
    "scipy_multivariate_normal_logpdf",
    stats.multivariate_normal.logpdf,
    _spelled("multivariate_normal", "logpdf"),
    lambda g, ans, x, mean=None, cov=1, allow_singular=False: (
        no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
        if np.ndim(cov) != 2
        else unbroadcast(
            -np.expand_dims(g, -1)
            * np.reshape(
                np.swapaxes(
                    np.linalg.solve(
                        cov,
                        np.swapaxes(
                            np.reshape((x if mean is None else x - mean), (-1, np.shape(cov)[-1])),
                            -1,
                            -2,
                        ),
                    ),
                    -1,
                    -2,
                ),
                np.shape((x if mean is None else x - mean)),
            ),
            x,
        )
    ),
    lambda g, ans, x, mean=None, cov=1, allow_singular=False: (
        no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
        if np.ndim(cov) != 2
        else unbroadcast(
            np.expand_dims(g, -1)
            * np.reshape(
                np.swapaxes(
                    np.linalg.solve(
                        cov,
                        np.swapaxes(
                            np.reshape((x if mean is None else x - mean), (-1, np.shape(cov)[-1])),
                            -1,
                            -2,
                        ),
                    ),
                    -1,
                    -2,
                ),
                np.shape((x if mean is None else x - mean)),
            ),
            mean,
        )
    ),
    lambda g, ans, x, mean=None, cov=1, allow_singular=False: (
        no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
        if np.ndim(cov) != 2
        else -0.5
        * (
            np.sum(g) * np.linalg.inv(cov)
            - np.swapaxes(
                np.reshape(g, (-1, 1))
                * np.swapaxes(
                    np.linalg.solve(
                        cov,
                        np.swapaxes(
                            np.reshape((x if mean is None else x - mean), (-1, np.shape(cov)[-1])),
                            -1,
                            -2,
                        ),
                    ),
                    -1,
                    -2,
                ),
                -1,
                -2,
            )
            @ np.swapaxes(
                np.linalg.solve(
                    cov,
                    np.swapaxes(
                        np.reshape((x if mean is None else x - mean), (-1, np.shape(cov)[-1])),
                        -1,
                        -2,
                    ),
                ),
                -1,
                -2,
            )
        )
    ),
    jvps=(
        lambda t, ans, x, mean=None, cov=1, allow_singular=False: (
            no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
            if np.ndim(cov) != 2
            else -np.sum(
                t
                * np.reshape(
                    np.swapaxes(
                        np.linalg.solve(
                            cov,
                            np.swapaxes(
                                np.reshape(
                                    (x if mean is None else x - mean), (-1, np.shape(cov)[-1])
                                ),
                                -1,
                                -2,
                            ),
                        ),
                        -1,
                        -2,
                    ),
                    np.shape((x if mean is None else x - mean)),
                ),
                axis=-1,
            )
        ),
        lambda t, ans, x, mean=None, cov=1, allow_singular=False: (
            no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
            if np.ndim(cov) != 2
            else np.sum(
                t
                * np.reshape(
                    np.swapaxes(
                        np.linalg.solve(
                            cov,
                            np.swapaxes(
                                np.reshape(
                                    (x if mean is None else x - mean), (-1, np.shape(cov)[-1])
                                ),
                                -1,
                                -2,
                            ),
                        ),
                        -1,
                        -2,
                    ),
                    np.shape((x if mean is None else x - mean)),
                ),
                axis=-1,
            )
        ),
        lambda t, ans, x, mean=None, cov=1, allow_singular=False: (
            no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
            if np.ndim(cov) != 2
            else -0.5
            * (
                np.sum(np.linalg.inv(cov) * t)
                - np.reshape(
                    np.sum(
                        (
                            np.swapaxes(
                                np.linalg.solve(
                                    cov,
                                    np.swapaxes(
                                        np.reshape(
                                            (x if mean is None else x - mean),
                                            (-1, np.shape(cov)[-1]),
                                        ),
                                        -1,
                                        -2,
                                    ),
                                ),
                                -1,
                                -2,
                            )
                            @ t
                        )
                        * np.swapaxes(
                            np.linalg.solve(
                                cov,
                                np.swapaxes(
                                    np.reshape(
                                        (x if mean is None else x - mean), (-1, np.shape(cov)[-1])
                                    ),
                                    -1,
                                    -2,
                                ),
                            ),
                            -1,
                            -2,
                        ),
                        axis=-1,
                    ),
                    np.shape(ans),
                )
            )
        ),
    ),
    shape="linalg",
)
defvjp(
    "scipy_multivariate_normal_pdf",
    stats.multivariate_normal.pdf,
    _spelled("multivariate_normal", "pdf"),
    lambda g, ans, x, mean=None, cov=1, allow_singular=False: (
        no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
        if np.ndim(cov) != 2
        else unbroadcast(
            -np.expand_dims(g * ans, -1)
            * np.reshape(
                np.swapaxes(
                    np.linalg.solve(
                        cov,
                        np.swapaxes(
                            np.reshape((x if mean is None else x - mean), (-1, np.shape(cov)[-1])),
                            -1,
                            -2,
                        ),
                    ),
                    -1,
                    -2,
                ),
                np.shape((x if mean is None else x - mean)),
            ),
            x,
        )
    ),
    lambda g, ans, x, mean=None, cov=1, allow_singular=False: (
        no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
        if np.ndim(cov) != 2
        else unbroadcast(
            np.expand_dims(g * ans, -1)
            * np.reshape(
                np.swapaxes(
                    np.linalg.solve(
                        cov,
                        np.swapaxes(
                            np.reshape((x if mean is None else x - mean), (-1, np.shape(cov)[-1])),
                            -1,
                            -2,
                        ),
                    ),
                    -1,
                    -2,
                ),
                np.shape((x if mean is None else x - mean)),
            ),
            mean,
        )
    ),
    lambda g, ans, x, mean=None, cov=1, allow_singular=False: (
        no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
        if np.ndim(cov) != 2
        else -0.5
        * (
            np.sum(g * ans) * np.linalg.inv(cov)
            - np.swapaxes(
                np.reshape(g * ans, (-1, 1))
                * np.swapaxes(
                    np.linalg.solve(
                        cov,
                        np.swapaxes(
                            np.reshape((x if mean is None else x - mean), (-1, np.shape(cov)[-1])),
                            -1,
                            -2,
                        ),
                    ),
                    -1,
                    -2,
                ),
                -1,
                -2,
            )
            @ np.swapaxes(
                np.linalg.solve(
                    cov,
                    np.swapaxes(
                        np.reshape((x if mean is None else x - mean), (-1, np.shape(cov)[-1])),
                        -1,
                        -2,
                    ),
                ),
                -1,
                -2,
            )
        )
    ),
    jvps=(
        lambda t, ans, x, mean=None, cov=1, allow_singular=False: (
            no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
            if np.ndim(cov) != 2
            else -ans
            * np.sum(
                t
                * np.reshape(
                    np.swapaxes(
                        np.linalg.solve(
                            cov,
                            np.swapaxes(
                                np.reshape(
                                    (x if mean is None else x - mean), (-1, np.shape(cov)[-1])
                                ),
                                -1,
                                -2,
                            ),
                        ),
                        -1,
                        -2,
                    ),
                    np.shape((x if mean is None else x - mean)),
                ),
                axis=-1,
            )
        ),
        lambda t, ans, x, mean=None, cov=1, allow_singular=False: (
            no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
            if np.ndim(cov) != 2
            else ans
            * np.sum(
                t
                * np.reshape(
                    np.swapaxes(
                        np.linalg.solve(
                            cov,
                            np.swapaxes(
                                np.reshape(
                                    (x if mean is None else x - mean), (-1, np.shape(cov)[-1])
                                ),
                                -1,
                                -2,
                            ),
                        ),
                        -1,
                        -2,
                    ),
                    np.shape((x if mean is None else x - mean)),
                ),
                axis=-1,
            )
        ),
        lambda t, ans, x, mean=None, cov=1, allow_singular=False: (
            no_scipy_rule("scipy.stats.multivariate_normal with a cov that is not a matrix")
            if np.ndim(cov) != 2
            else -0.5
            * ans
            * (
                np.sum(np.linalg.inv(cov) * t)
                - np.reshape(
                    np.sum(
                        (
                            np.swapaxes(
                                np.linalg.solve(
                                    cov,
                                    np.swapaxes(
                                        np.reshape(
                                            (x if mean is None else x - mean),
                                            (-1, np.shape(cov)[-1]),
                                        ),
                                        -1,
                                        -2,
                                    ),
                                ),
                                -1,
                                -2,
                            )
                            @ t
                        )
                        * np.swapaxes(
                            np.linalg.solve(
                                cov,
                                np.swapaxes(
                                    np.reshape(
                                        (x if mean is None else x - mean), (-1, np.shape(cov)[-1])
                                    ),
                                    -1,
                                    -2,
                                ),
                            ),
                            -1,
                            -2,
                        ),
                        axis=-1,
                    ),
                    np.shape(ans),
                )
            )
        ),
    ),
    shape="linalg",
)


# Example inputs for the registry's test grid (ops/examples.py): per distribution, where its
# points lie, its shape parameters' domains, and whether loc and scale are tried (they move
# a bounded support past the points otherwise); ppf takes probabilities.
_DISTRIBUTIONS = {
    "norm": ("normal", (), True),
    "t": ("normal", ("large",), True),
    "logistic": ("normal", (), True),
    "cauchy": ("normal", (), True),
    "laplace": ("away_from_zero", (), False),
    "gamma": ("positive", ("positive",), False),
    "chi2": ("positive", ("large",), False),
    "expon": ("positive", (), False),
    "lognorm": ("positive", ("positive",), False),
    "beta": ("prob", ("positive", "positive"), False),
}


def _distribution_examples(dist, method):
    points, shapes, moved = _DISTRIBUTIONS[dist]
    x = arg(3, 4, domain="prob" if method == "ppf" else points)
    # (a distribution function's gradient in a shape parameter is refused: those are constants)
    density = method in ("logpdf", "pdf")
    params = [arg(4, domain=d) if density else 3.0 for d in shapes]
    variants = [ex(x, *params)]
    if moved:
        variants.append(ex(x, *params, loc=arg(4, domain="unit"), scale=arg(domain="positive")))
    else:
        variants.append(ex(x, *params, scale=arg(4, domain="large")))
    return variants


EXAMPLES = {
    f"scipy_{dist}_{method}": _distribution_examples(dist, method)
    for dist in _DISTRIBUTIONS
    for method in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf")
    if f"scipy_{dist}_{method}" in RULES
}
_COUNTS = np.array([[0, 1, 3, 2], [5, 0, 1, 4], [2, 2, 7, 1]])
EXAMPLES.update(
    {
        **{
            f"scipy_poisson_{m}": [ex(_COUNTS, arg(4, domain="large"))]
            for m in ("logpmf", "pmf", "cdf", "logcdf")
        },
        **{
            f"scipy_dirichlet_{m}": [ex(arg(3, 2, domain="simplex"), arg(3, domain="large"))]
            for m in ("logpdf", "pdf")
        },
        **{
            f"scipy_multivariate_normal_{m}": [
                ex(arg(4, 3), arg(3), arg(3, 3, domain="spd")),
                ex(arg(3), arg(3), arg(3, 3, domain="spd")),
            ]
            for m in ("logpdf", "pdf")
        },
    }
)
