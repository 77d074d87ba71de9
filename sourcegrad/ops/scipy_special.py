"""scipy.special: logsumexp, gammaln, gamma, digamma (psi), polygamma, expit, logit, erf, erfc,
erfinv, xlogy, xlog1py, ndtr, log_ndtr, softmax, log_softmax.

Imported by the registry once the program has imported scipy.special (`registry._OPTIONAL`):
scipy is optional. A scipy function is one primitive with its rule, so the compiler never
inlines scipy's own source (`from scipy.special import logsumexp` differentiates). Generated
code calls them as `scipy.special.<name>`.
"""
from __future__ import annotations

import numpy as np
import scipy.special as special

from .. import errors
from ..runtime import unbroadcast
from .registry import TEMPLATE_NAMESPACE, Spelling, defnondiff, defvjp

TEMPLATE_NAMESPACE.update(special=special)


def _spelled(name):
    return Spelling("module", f"scipy.special.{name}")


def no_scipy_rule(what):
    """Called by a rule template, with constants, when the gradient is made: a variant with no
    formula here."""
    raise errors.NoRuleError(f"{what} has no derivative rule")


TEMPLATE_NAMESPACE.update(no_scipy_rule=no_scipy_rule)
defnondiff("no_scipy_rule", no_scipy_rule,
           Spelling("module", "sourcegrad.ops.scipy_special.no_scipy_rule"))

# logsumexp(a, axis, b, keepdims) = log(sum(b exp(a))): its gradient in a is b exp(a - ans)
# (softmax, for b None), in b exp(a - ans); both with g put back along the reduced axes.
defvjp("scipy_logsumexp", special.logsumexp, _spelled("logsumexp"),
       lambda g, ans, a, axis=None, b=None, keepdims=False, return_sign=False: (
           no_scipy_rule("scipy.special.logsumexp(return_sign=True)") if return_sign else
           unbroadcast((g if keepdims or axis is None else np.expand_dims(g, axis)) * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))), a) if b is None else
           unbroadcast((g if keepdims or axis is None else np.expand_dims(g, axis)) * b * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))), a)),
       None,
       lambda g, ans, a, axis=None, b=None, keepdims=False, return_sign=False: unbroadcast((g if keepdims or axis is None else np.expand_dims(g, axis)) * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))), b),
       jvps=(lambda t, ans, a, axis=None, b=None, keepdims=False, return_sign=False: np.sum(t * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))), axis=axis, keepdims=keepdims) if b is None else np.sum(t * b * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))), axis=axis, keepdims=keepdims),
             None,
             lambda t, ans, a, axis=None, b=None, keepdims=False, return_sign=False: np.sum(t * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))), axis=axis, keepdims=keepdims)))

# Elementwise functions (their JVPs are their VJPs with g the tangent).
_UNARY = {
    "gammaln": lambda g, ans, x: g * special.digamma(x),
    "gamma": lambda g, ans, x: g * ans * special.digamma(x),
    "digamma": lambda g, ans, x: g * special.polygamma(1, x),
    "expit": lambda g, ans, x: g * ans * (1.0 - ans),
    "logit": lambda g, ans, x: g / (x * (1.0 - x)),
    "erf": lambda g, ans, x: g * 1.1283791670955126 * np.exp(-x * x),
    "erfc": lambda g, ans, x: -g * 1.1283791670955126 * np.exp(-x * x),
    "erfinv": lambda g, ans, x: g * 0.886226925452758 * np.exp(ans * ans),
    "ndtr": lambda g, ans, x: g * 0.3989422804014327 * np.exp(-0.5 * x * x),
    "log_ndtr": lambda g, ans, x: g * 0.3989422804014327 * np.exp(-0.5 * x * x - ans),
}
for _name, _vjp in _UNARY.items():
    defvjp(f"scipy_{_name}", getattr(special, _name), _spelled(_name), _vjp, kind="elementwise")
# polygamma(n, x): the next polygamma in x; n is an integer order
defvjp("scipy_polygamma", special.polygamma, _spelled("polygamma"),
       None,
       lambda g, ans, n, x: g * special.polygamma(n + 1, x), kind="elementwise")
# xlogy(x, y) = x log y and xlog1py(x, y) = x log1p(y), 0 where x is 0
defvjp("scipy_xlogy", special.xlogy, _spelled("xlogy"),
       lambda g, ans, x, y: unbroadcast(g * np.log(y), x),
       lambda g, ans, x, y: unbroadcast(g * x / y, y), kind="elementwise")
defvjp("scipy_xlog1py", special.xlog1py, _spelled("xlog1py"),
       lambda g, ans, x, y: unbroadcast(g * np.log1p(y), x),
       lambda g, ans, x, y: unbroadcast(g * x / (1.0 + y), y), kind="elementwise")
# softmax and log_softmax along axis (None: all of x)
defvjp("scipy_softmax", special.softmax, _spelled("softmax"),
       lambda g, ans, x, axis=None: ans * (g - np.sum(g * ans, axis=axis, keepdims=True)),
       jvps=(lambda t, ans, x, axis=None: ans * (t - np.sum(t * ans, axis=axis, keepdims=True)),))
defvjp("scipy_log_softmax", special.log_softmax, _spelled("log_softmax"),
       lambda g, ans, x, axis=None: g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True),
       jvps=(lambda t, ans, x, axis=None: t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True),))
