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

The rules are written once per family, as templates: each method's rules in terms of z, the
score and the density (`_RULES`), dirichlet's and multivariate_normal's logpdf rules with the
factor `w` that makes them the pdf's (w = ans: d pdf = pdf d logpdf; w = 1 drops out). A
distribution gives its parts once, its score and its shape parameters' (`_distribution`), and
`ops.expand` writes each rule out with them put in: a lambda reading as if written by hand
(`inspect.getsource(ops.get("scipy_t_logpdf").vjps[0])` prints it), so the generated code is
that of a hand-written rule.

Why one module: one registry family, loaded only once a program imports scipy.stats.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from ..runtime import unbroadcast
from . import scipy_special  # (scipy.stats imports scipy.special: its entries too)
from .examples import arg, ex
from .expand import expand
from .registry import Spelling, defvjp

no_scipy_rule = scipy_special.no_scipy_rule


def _spelled(dist, name):
    return Spelling("module", f"scipy.stats.{dist}.{name}")


def _written(rules, params, what, names, **parts):
    """`rules` written out with `parts` put in (`ops.expand`), labelled "<what> <name>"."""
    return tuple(expand(r, params, f"{what} {n}", **parts) for r, n in zip(rules, names))


# norm's logpdf, pdf, cdf and logcdf, written by hand (as one writes the normal's: (x - loc) /
# (scale * scale)); the family's templates below write out its sf, logsf and ppf.
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

# The location-scale families: each method's rules in x (q for ppf), loc and scale, in
# z = (x - loc) / scale, the score D (`score`), the density at x (`pdf`), the cdf and sf there,
# and the density at the quantile (`pdf_at_ans`). The pdf's are the logpdf's with w = ans.
_RULES = {
    "logpdf": (
        lambda g, ans, x, loc, scale, score, w: unbroadcast(g * w * score / scale, x),
        lambda g, ans, x, loc, scale, score, w: unbroadcast(-g * w * score / scale, loc),
        lambda g, ans, x, loc, scale, z, score, w: unbroadcast(
            -g * w * (score * z + 1.0) / scale, scale
        ),
    ),
    "cdf": (
        lambda g, ans, x, loc, scale, pdf: unbroadcast(g * pdf, x),
        lambda g, ans, x, loc, scale, pdf: unbroadcast(-g * pdf, loc),
        lambda g, ans, x, loc, scale, z, pdf: unbroadcast(-g * pdf * z, scale),
    ),
    "logcdf": (
        lambda g, ans, x, loc, scale, pdf, cdf: unbroadcast(g * pdf / cdf, x),
        lambda g, ans, x, loc, scale, pdf, cdf: unbroadcast(-g * pdf / cdf, loc),
        lambda g, ans, x, loc, scale, z, pdf, cdf: unbroadcast(-g * pdf / cdf * z, scale),
    ),
    "sf": (
        lambda g, ans, x, loc, scale, pdf: unbroadcast(-g * pdf, x),
        lambda g, ans, x, loc, scale, pdf: unbroadcast(g * pdf, loc),
        lambda g, ans, x, loc, scale, z, pdf: unbroadcast(g * pdf * z, scale),
    ),
    "logsf": (
        lambda g, ans, x, loc, scale, pdf, sf: unbroadcast(-g * pdf / sf, x),
        lambda g, ans, x, loc, scale, pdf, sf: unbroadcast(g * pdf / sf, loc),
        lambda g, ans, x, loc, scale, z, pdf, sf: unbroadcast(g * pdf / sf * z, scale),
    ),
    "ppf": (
        lambda g, ans, q, loc, scale, pdf_at_ans: unbroadcast(g / pdf_at_ans, q),
        lambda g, ans, q, loc, scale: unbroadcast(g, loc),
        lambda g, ans, q, loc, scale: unbroadcast(g * ((ans - loc) / scale), scale),
    ),
}
_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf")
# in a shape parameter (`shape`): the logpdf's is its score; the other methods have no rule
_SHAPE_RULES = (
    lambda g, ans, shape, score, w: unbroadcast(g * w * score, shape),
    lambda g, ans, message: no_scipy_rule(message),
)


def _distribution(dist, score, **shape_scores):
    """Register the seven methods of the location-scale family scipy.stats.`dist`, given its
    score `score(z, *shapes)` and its shape parameters' scores (`score` None: sf, logsf and ppf
    only, norm's others being written by hand)."""
    shapes = "".join(f"{name}, " for name in shape_scores)
    for method in _METHODS[4:] if score is None else _METHODS:
        point = "q" if method == "ppf" else "x"
        params = f"g, ans, {point}, {shapes}loc=0.0, scale=1.0"
        what = f"scipy.stats.{dist}.{method} in"
        parts = dict(
            z="(x - loc) / scale",
            score=score,
            w="ans" if method == "pdf" else 1,
            pdf=f"stats.{dist}.pdf(x, {shapes}loc, scale)",
            cdf=f"stats.{dist}.cdf(x, {shapes}loc, scale)",
            sf=f"stats.{dist}.sf(x, {shapes}loc, scale)",
            pdf_at_ans=f"stats.{dist}.pdf(ans, {shapes}loc, scale)",
        )
        x_rule, loc_rule, scale_rule = _RULES["logpdf" if method == "pdf" else method]
        density = method in ("logpdf", "pdf")
        rules = [expand(x_rule, params, f"{what} {point}", **parts)]
        for name, shape_score in shape_scores.items():
            if density:
                bound = {**parts, "shape": name, "score": shape_score}
            else:
                bound = {"message": repr(f"{what} {name}")}
            rules.append(
                expand(_SHAPE_RULES[0 if density else 1], params, f"{what} {name}", **bound)
            )
        rules += _written((loc_rule, scale_rule), params, what, ("loc", "scale"), **parts)
        method_fn = getattr(getattr(stats, dist), method)
        defvjp(
            f"scipy_{dist}_{method}", method_fn, _spelled(dist, method), *rules, kind="elementwise"
        )


_distribution("norm", None)
_distribution(
    "t",
    lambda z, df: -(df + 1.0) * z / (df + z * z),
    df=lambda z, df: (
        0.5
        * (
            special.digamma(0.5 * (df + 1.0))
            - special.digamma(0.5 * df)
            - 1.0 / df
            - np.log1p(z * z / df)
            + (df + 1.0) * z * z / (df * (df + z * z))
        )
    ),
)
_distribution(
    "gamma",
    lambda z, a: (a - 1.0) / z - 1.0,
    a=lambda z, a: np.log(z) - special.digamma(a),
)
_distribution(
    "beta",
    lambda z, a, b: (a - 1.0) / z - (b - 1.0) / (1.0 - z),
    a=lambda z, a, b: np.log(z) - special.digamma(a) + special.digamma(a + b),
    b=lambda z, a, b: np.log1p(-z) - special.digamma(b) + special.digamma(a + b),
)
_distribution(
    "chi2",
    lambda z, df: (0.5 * df - 1.0) / z - 0.5,
    df=lambda z, df: 0.5 * (np.log(0.5 * z) - special.digamma(0.5 * df)),
)
_distribution("expon", lambda z: -1.0)
_distribution("laplace", lambda z: -np.sign(z))
_distribution("logistic", lambda z: -np.tanh(0.5 * z))
_distribution("cauchy", lambda z: -2.0 * z / (1.0 + z * z))
_distribution(
    "lognorm",
    lambda z, s: -(1.0 + np.log(z) / (s * s)) / z,
    s=lambda z, s: (np.log(z) * np.log(z) / (s * s) - 1.0) / s,
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
# - sum gammaln(alpha). x's gradient is the formula's (x is not kept on the simplex). The
# logpdf's rules and JVPs (w = 1) and the pdf's (w = ans):
_DIRICHLET = (
    lambda g, ans, x, alpha, w: (
        np.reshape(alpha - 1.0, (-1,) + (1,) * (np.ndim(x) - 1)) * np.expand_dims(g * w, 0) / x
    ),
    lambda g, ans, x, alpha, w: (
        np.sum(g * w) * (special.digamma(np.sum(alpha)) - special.digamma(alpha))
        + np.reshape(np.log(x), (np.shape(x)[0], -1)) @ np.reshape(g * w, (-1,))
    ),
)
_DIRICHLET_JVPS = (
    lambda t, ans, x, alpha, w: (
        w * np.sum(np.reshape(alpha - 1.0, (-1,) + (1,) * (np.ndim(x) - 1)) * t / x, axis=0)
    ),
    lambda t, ans, x, alpha, w: (
        w
        * (
            np.sum(t * (special.digamma(np.sum(alpha)) - special.digamma(alpha)))
            + np.tensordot(t, np.log(x), 1)
        )
    ),
)
for _method, _w in (("logpdf", 1), ("pdf", "ans")):
    _what = f"scipy.stats.dirichlet.{_method} in"
    defvjp(
        f"scipy_dirichlet_{_method}",
        getattr(stats.dirichlet, _method),
        _spelled("dirichlet", _method),
        *_written(_DIRICHLET, "g, ans, x, alpha", _what, ("x", "alpha"), w=_w),
        jvps=_written(_DIRICHLET_JVPS, "t, ans, x, alpha", _what, ("x (JVP)", "alpha (JVP)"), w=_w),
        shape="first_axis_reduced",
    )

# multivariate_normal(x, mean, cov): x holds points along its last axis. With r = x - mean and
# s = cov^-1 r (a solve, per point): d logpdf = -s . dx + s . dmean - (tr(cov^-1 dcov) -
# s^T dcov s) / 2; the cov gradient is symmetric (scipy reads cov through its eigh), so
# differentiate functions of symmetric covariances. mean None (zero) carries no gradient. The
# logpdf's rules and JVPs (w = 1) and the pdf's (w = ans), refused for a cov not a matrix:
_MULTIVARIATE_NORMAL = (
    lambda g, ans, x, mean, cov, r, s, w, message: (
        no_scipy_rule(message)
        if np.ndim(cov) != 2
        else unbroadcast(-np.expand_dims(g * w, -1) * np.reshape(s, np.shape(r)), x)
    ),
    lambda g, ans, x, mean, cov, r, s, w, message: (
        no_scipy_rule(message)
        if np.ndim(cov) != 2
        else unbroadcast(np.expand_dims(g * w, -1) * np.reshape(s, np.shape(r)), mean)
    ),
    lambda g, ans, x, mean, cov, s, w, message: (
        no_scipy_rule(message)
        if np.ndim(cov) != 2
        else -0.5
        * (
            np.sum(g * w) * np.linalg.inv(cov)
            - np.swapaxes(np.reshape(g * w, (-1, 1)) * s, -1, -2) @ s
        )
    ),
)
_MULTIVARIATE_NORMAL_JVPS = (
    lambda t, ans, x, mean, cov, r, s, w, message: (
        no_scipy_rule(message)
        if np.ndim(cov) != 2
        else -w * np.sum(t * np.reshape(s, np.shape(r)), axis=-1)
    ),
    lambda t, ans, x, mean, cov, r, s, w, message: (
        no_scipy_rule(message)
        if np.ndim(cov) != 2
        else w * np.sum(t * np.reshape(s, np.shape(r)), axis=-1)
    ),
    lambda t, ans, x, mean, cov, s, w, message: (
        no_scipy_rule(message)
        if np.ndim(cov) != 2
        else -0.5
        * w
        * (np.sum(np.linalg.inv(cov) * t) - np.reshape(np.sum((s @ t) * s, axis=-1), np.shape(ans)))
    ),
)
_SOLVED = dict(  # r and s, one solve per point (as a rule spells them: in full, each time)
    r=lambda x, mean: x if mean is None else x - mean,
    s=lambda cov, r: np.swapaxes(
        np.linalg.solve(cov, np.swapaxes(np.reshape(r, (-1, np.shape(cov)[-1])), -1, -2)), -1, -2
    ),
    message=repr("scipy.stats.multivariate_normal with a cov that is not a matrix"),
)
for _method, _w in (("logpdf", 1), ("pdf", "ans")):
    _what = f"scipy.stats.multivariate_normal.{_method} in"
    _params = "ans, x, mean=None, cov=1, allow_singular=False"
    _names = ("x", "mean", "cov")
    defvjp(
        f"scipy_multivariate_normal_{_method}",
        getattr(stats.multivariate_normal, _method),
        _spelled("multivariate_normal", _method),
        *_written(_MULTIVARIATE_NORMAL, f"g, {_params}", _what, _names, w=_w, **_SOLVED),
        jvps=_written(_MULTIVARIATE_NORMAL_JVPS, f"t, {_params}", _what, _names, w=_w, **_SOLVED),
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
    for method in _METHODS
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
