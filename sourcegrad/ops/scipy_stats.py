"""scipy.stats.norm: logpdf, pdf, cdf, logcdf in x, loc and scale.

Imported by the registry once the program has imported scipy.stats (`registry._OPTIONAL`).
Each is one primitive (scipy's own source is never inlined); the bound methods are known by
their distribution and function (`registry.rule_for_function`). With z = (x - loc) / scale:
d logpdf = -z / scale dx + z / scale dloc + (z^2 - 1) / scale dscale; pdf is exp(logpdf);
d cdf = pdf (dx - dloc - z dscale); logcdf is log(cdf).
"""
from __future__ import annotations

from scipy import stats

from ..runtime import unbroadcast
from . import scipy_special  # noqa: F401  (scipy.stats imports scipy.special: its entries too)
from .registry import TEMPLATE_NAMESPACE, Spelling, defvjp

TEMPLATE_NAMESPACE.update(stats=stats)


def _spelled(name):
    return Spelling("module", f"scipy.stats.norm.{name}")


defvjp("scipy_norm_logpdf", stats.norm.logpdf, _spelled("logpdf"),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * (x - loc) / (scale * scale), x),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * (x - loc) / (scale * scale), loc),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * ((x - loc) * (x - loc) / (scale * scale) - 1.0) / scale, scale),
       kind="elementwise")
defvjp("scipy_norm_pdf", stats.norm.pdf, _spelled("pdf"),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * ans * (x - loc) / (scale * scale), x),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * ans * (x - loc) / (scale * scale), loc),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * ans * ((x - loc) * (x - loc) / (scale * scale) - 1.0) / scale, scale),
       kind="elementwise")
defvjp("scipy_norm_cdf", stats.norm.cdf, _spelled("cdf"),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.norm.pdf(x, loc, scale), x),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.norm.pdf(x, loc, scale), loc),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.norm.pdf(x, loc, scale) * (x - loc) / scale, scale),
       kind="elementwise")
defvjp("scipy_norm_logcdf", stats.norm.logcdf, _spelled("logcdf"),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * stats.norm.pdf(x, loc, scale) / stats.norm.cdf(x, loc, scale), x),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.norm.pdf(x, loc, scale) / stats.norm.cdf(x, loc, scale), loc),
       lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * stats.norm.pdf(x, loc, scale) / stats.norm.cdf(x, loc, scale) * (x - loc) / scale, scale),
       kind="elementwise")
