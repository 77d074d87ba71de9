"""scipy.special: logsumexp, gammaln, gamma, rgamma, gammasgn, digamma (psi), polygamma, beta,
betaln, betainc, gammainc, gammaincc, multigammaln, expit, log_expit, logit, erf, erfc, erfcx,
erfinv, erfcinv, xlogy, xlog1py, ndtr, log_ndtr, ndtri, softmax, log_softmax, the Bessel
functions i0, i1, i0e, i1e, iv, ive, k0, k1, kv, j0, j1, jn, jv, y0, y1, yn, yv (in x; an
order or shape parameter has no rule: differentiating in it raises NoRuleError).

Imported by the registry once the program has imported scipy.special (`registry._OPTIONAL`):
scipy is optional. A scipy function is one primitive with its rule, so the compiler never
inlines scipy's own source (`from scipy.special import logsumexp` differentiates). Generated
code calls them as `scipy.special.<name>`.

Why one module: its rules are registered together, once the program imports scipy.special
(one optional import), and share their helpers (`no_scipy_rule`, the Bessel functions'
asymptotic coefficients).
"""

from __future__ import annotations

import numpy as np
import scipy.special as special

from .. import errors
from ..runtime import unbroadcast
from .examples import arg, ex
from .registry import Spelling, defnondiff, defvjp, mark, torch


def _spelled(name):
    return Spelling("module", f"scipy.special.{name}")


def no_scipy_rule(what):
    """Called by a rule template, with constants, when the gradient is made: a variant with no
    formula here."""
    raise errors.NoRuleError(f"{what} has no derivative rule")


defnondiff(
    "no_scipy_rule", no_scipy_rule, Spelling("module", "sourcegrad.ops.scipy_special.no_scipy_rule")
)

# logsumexp(a, axis, b, keepdims) = log(sum(b exp(a))): its gradient in a is b exp(a - ans)
# (softmax, for b None), in b exp(a - ans); both with g put back along the reduced axes.
defvjp(
    "scipy_logsumexp",
    special.logsumexp,
    _spelled("logsumexp"),
    lambda g, ans, a, axis=None, b=None, keepdims=False, return_sign=False: (
        no_scipy_rule("scipy.special.logsumexp(return_sign=True)")
        if return_sign
        else unbroadcast(
            (g if keepdims or axis is None else np.expand_dims(g, axis))
            * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))),
            a,
        )
        if b is None
        else unbroadcast(
            (g if keepdims or axis is None else np.expand_dims(g, axis))
            * b
            * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))),
            a,
        )
    ),
    None,
    lambda g, ans, a, axis=None, b=None, keepdims=False, return_sign=False: unbroadcast(
        (g if keepdims or axis is None else np.expand_dims(g, axis))
        * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))),
        b,
    ),
    jvps=(
        lambda t, ans, a, axis=None, b=None, keepdims=False, return_sign=False: (
            np.sum(
                t * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))),
                axis=axis,
                keepdims=keepdims,
            )
            if b is None
            else np.sum(
                t
                * b
                * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))),
                axis=axis,
                keepdims=keepdims,
            )
        ),
        None,
        lambda t, ans, a, axis=None, b=None, keepdims=False, return_sign=False: np.sum(
            t * np.exp(a - (ans if keepdims or axis is None else np.expand_dims(ans, axis))),
            axis=axis,
            keepdims=keepdims,
        ),
    ),
)


def _asymptotic_coefficients(order, terms):
    """a_k of the expansion exp(-x) I_order(x) ~ (2 pi x)^-1/2 sum_k a_k x^-k, k = 0 .. terms."""
    out, a = [], 1.0
    for k in range(terms + 1):
        out.append(a)
        a *= -(4 * order * order - (2 * k + 1) ** 2) / ((k + 1) * 8)
    return out


# (i0e - i1e)(x) ~ (2 pi x)^-1/2 sum_k c_k x^-k: the k = 0 terms cancel, so the sum starts at
# k = 1; 20 terms are exact to rounding from x = 30 on
_GAP_SERIES = tuple(
    a - b for a, b in zip(_asymptotic_coefficients(0, 20), _asymptotic_coefficients(1, 20))
)[1:]


def bessel_i_gap(x):
    """i0e(x) - i1e(x) for x >= 0, exact to rounding element by element: the two agree to
    log10(2x) digits, so from x = 30 on it is their asymptotic expansions' difference, summed
    (i0e's and i1e's derivatives are made of it)."""
    large = np.maximum(x, 30.0)
    series = 0.0 * large
    for c in reversed(_GAP_SERIES):
        series = (series + c) / large
    series = series / np.sqrt(6.283185307179586 * large)
    return np.where(x < 30.0, special.i0e(x) - special.i1e(x), series)


# its derivative: d(i0e - i1e)/dx = (i1e - i0e) - (i0e - i1e - i1e / x) = i1e / x - 2 (i0e - i1e)
defvjp(
    "bessel_i_gap",
    bessel_i_gap,
    Spelling("module", "sourcegrad.ops.scipy_special.bessel_i_gap"),
    lambda g, ans, x: g * (special.i1e(x) / x - 2.0 * ans),
    kind="elementwise",
)

# Elementwise functions (their JVPs are their VJPs with g the tangent).
_UNARY = {
    "gammaln": (
        lambda g, ans, x: g * special.digamma(x),
        torch("LgammaBackward0", "lgamma", inplace=("lgamma_",), special=("gammaln",)),
    ),
    "gamma": lambda g, ans, x: g * ans * special.digamma(x),
    "digamma": (
        lambda g, ans, x: g * special.zeta(2.0, x),
        torch("DigammaBackward0", "digamma", inplace=("digamma_",), special=("digamma", "psi")),
    ),
    "expit": lambda g, ans, x: g * ans * (1.0 - ans),
    "logit": (
        lambda g, ans, x: g / (x * (1.0 - x)),
        torch("LogitBackward0", "logit", inplace=("logit_",), special=("logit",)),
    ),
    "erf": lambda g, ans, x: g * 1.1283791670955126 * np.exp(-x * x),
    "erfc": (
        lambda g, ans, x: -g * 1.1283791670955126 * np.exp(-x * x),
        torch("ErfcBackward0", "erfc", inplace=("erfc_",), special=("erfc",)),
    ),
    "erfinv": (
        lambda g, ans, x: g * 0.886226925452758 * np.exp(ans * ans),
        torch("ErfinvBackward0", "erfinv", inplace=("erfinv_",), special=("erfinv",)),
    ),
    "ndtr": (
        lambda g, ans, x: g * 0.3989422804014327 * np.exp(-0.5 * x * x),
        torch("MulBackward1", special=("ndtr",)),
    ),
    "log_ndtr": (
        lambda g, ans, x: g * 0.3989422804014327 * np.exp(-0.5 * x * x - ans),
        torch("SpecialLogNdtrBackward0", special=("log_ndtr",)),
    ),
    # d erfcinv = -sqrt(pi)/2 exp(erfcinv^2); d ndtri = sqrt(2 pi) exp(ndtri^2 / 2)
    "erfcinv": lambda g, ans, x: -g * 0.886226925452758 * np.exp(ans * ans),
    "ndtri": (
        lambda g, ans, x: g * 2.5066282746310002 * np.exp(0.5 * ans * ans),
        torch("SpecialNdtriBackward0", special=("ndtri",)),
    ),
    "erfcx": (
        lambda g, ans, x: g * (2.0 * x * ans - 1.1283791670955126),
        torch("SpecialErfcxBackward0", special=("erfcx",)),
    ),
    "log_expit": lambda g, ans, x: g * special.expit(-x),
    "rgamma": lambda g, ans, x: -g * ans * special.digamma(x),
    # the modified Bessel functions: I0' = I1, I1' = I0 - I1 / x (1/2 at 0), the latter written
    # exp(|x|) (i0e(x) - i1e(x) / x) with the exponentially scaled functions: I0 and I1 overflow
    # together at |x| > 709.78, where their difference gave nan (inf - inf) and this gives inf,
    # as I0' = I1 does there (below, both are exact to rounding element by element: checked
    # against mpmath in tests/compiler/ops/test_written_for_autograd.py). The scaled ones
    # (exp(-|x|) I) add -sign(x) times themselves: i0e' = -sign(x) (i0e - i1e)(|x|) and
    # i1e' = (i0e - i1e)(|x|) - i1e(x) / x, with that difference computed without losing the
    # digits the two share (`bessel_i_gap`; i1e - i0e itself lost log10(2|x|) of them).
    # K0' = -K1, K1' = -(K0 + K2) / 2.
    "i0": (
        lambda g, ans, x: g * special.i1(x),
        torch("I0Backward0", "i0", inplace=("i0_",), special=("i0",)),
    ),
    "i1": (
        lambda g, ans, x: (
            g
            * np.where(
                x == 0.0,
                0.5,
                np.exp(np.abs(x)) * (special.i0e(x) - special.i1e(x) / np.where(x == 0.0, 1.0, x)),
            )
        ),
        torch("SpecialI1Backward0", special=("i1",)),
    ),
    "i0e": (
        lambda g, ans, x: -g * np.sign(x) * bessel_i_gap(np.abs(x)),
        torch("SpecialI0EBackward0", special=("i0e",)),
    ),
    "i1e": (
        lambda g, ans, x: (
            g
            * np.where(
                x == 0.0,
                0.5,
                bessel_i_gap(np.abs(x)) - ans / np.where(x == 0.0, 1.0, x),
            )
        ),
        torch("SpecialI1EBackward0", special=("i1e",)),
    ),
    "k0": (
        lambda g, ans, x: -g * special.k1(x),
        torch(None, special=("modified_bessel_k0",)),
    ),
    "k1": (
        lambda g, ans, x: -g * 0.5 * (special.k0(x) + special.kv(2.0, x)),
        torch(None, special=("modified_bessel_k1",)),
    ),
    # the Bessel functions of the first and second kind: J0' = -J1, J1' = (J0 - J2) / 2
    "j0": (
        lambda g, ans, x: -g * special.j1(x),
        torch(None, special=("bessel_j0",)),
    ),
    "j1": (
        lambda g, ans, x: g * 0.5 * (special.j0(x) - special.jv(2.0, x)),
        torch(None, special=("bessel_j1",)),
    ),
    "y0": (
        lambda g, ans, x: -g * special.y1(x),
        torch(None, special=("bessel_y0",)),
    ),
    "y1": (
        lambda g, ans, x: g * 0.5 * (special.y0(x) - special.yv(2.0, x)),
        torch(None, special=("bessel_y1",)),
    ),
    # exponentials, logarithms and trigonometry in degrees (pi / 180 = 0.017453292519943295)
    "expm1": lambda g, ans, x: g * (ans + 1.0),
    "log1p": lambda g, ans, x: g / (1.0 + x),
    "exp2": lambda g, ans, x: g * ans * 0.6931471805599453,
    "exp10": lambda g, ans, x: g * ans * 2.302585092994046,
    "cbrt": lambda g, ans, x: g / (3.0 * ans * ans),
    "cosm1": lambda g, ans, x: -g * np.sin(x),
    "sindg": lambda g, ans, x: g * 0.017453292519943295 * special.cosdg(x),
    "cosdg": lambda g, ans, x: -g * 0.017453292519943295 * special.sindg(x),
    "tandg": lambda g, ans, x: g * 0.017453292519943295 * (1.0 + ans * ans),
    "cotdg": lambda g, ans, x: -g * 0.017453292519943295 * (1.0 + ans * ans),
    "softplus": lambda g, ans, x: g * special.expit(x),
    "entr": (
        lambda g, ans, x: -g * (np.log(x) + 1.0),
        torch("SpecialEntrBackward0", special=("entr",)),
    ),
    # integrals: erfi' = 2/sqrt(pi) exp(x^2), Dawson's F' = 1 - 2 x F, Ei' = e^x / x,
    # E1' = -e^-x / x, Li2 (spence)' = log(x) / (1 - x), the complete elliptic integrals
    "erfi": lambda g, ans, x: g * 1.1283791670955126 * np.exp(x * x),
    "dawsn": lambda g, ans, x: g * (1.0 - 2.0 * x * ans),
    "expi": lambda g, ans, x: g * np.exp(x) / x,
    "exp1": lambda g, ans, x: -g * np.exp(-x) / x,
    "spence": lambda g, ans, x: g * np.log(x) / (1.0 - x),
    "ellipk": lambda g, ans, x: g * (special.ellipe(x) - (1.0 - x) * ans) / (2.0 * x * (1.0 - x)),
    "ellipe": lambda g, ans, x: g * (ans - special.ellipk(x)) / (2.0 * x),
    "wrightomega": lambda g, ans, x: g * ans / (1.0 + ans),
    # ndtri(exp(y)): exp(y) / phi(ans)
    "ndtri_exp": lambda g, ans, x: g * 2.5066282746310002 * np.exp(x + 0.5 * ans * ans),
}
for _name, _rule in _UNARY.items():
    _vjp, _torch = _rule if isinstance(_rule, tuple) else (_rule, None)
    defvjp(
        f"scipy_{_name}",
        getattr(special, _name),
        _spelled(_name),
        _vjp,
        kind="elementwise",
        torch=_torch,
    )
# erf and erfc are holomorphic (scipy computes them of complex values): their rules hold for
# complex z as they are (ops/complex_values.py; torch has no erf of complex values)
mark("complex", "scipy_erf", "scipy_erfc")
# polygamma(n, x): the next polygamma in x; n is an integer order
defvjp(
    "scipy_polygamma",
    special.polygamma,
    _spelled("polygamma"),
    lambda g, ans, n, x: no_scipy_rule("scipy.special.polygamma in its order n"),
    lambda g, ans, n, x: g * (-1.0) ** n * special.gamma(n + 2.0) * special.zeta(n + 2.0, x),
    kind="elementwise",
    # (x.polygamma(n) takes its order second: eager.special makes that method)
    torch=torch("PolygammaBackward0", "polygamma", method=(), special=("polygamma",)),
)
# Functions of an order (or shape parameter) and x, differentiable in x: the order's
# derivative has no closed form here, so differentiating in it is refused (NoRuleError), never
# a silent zero. Bessel recurrences: Z_v' = (Z_{v-1} -+ Z_{v+1}) / 2; the regularized
# incomplete gamma P(a, x)' = x^(a-1) e^-x / Gamma(a), Q = 1 - P.
_IN_X = {
    "iv": lambda g, ans, v, x: unbroadcast(
        g * 0.5 * (special.iv(v - 1.0, x) + special.iv(v + 1.0, x)), x
    ),
    "ive": lambda g, ans, v, x: unbroadcast(
        g * (0.5 * (special.ive(v - 1.0, x) + special.ive(v + 1.0, x)) - np.sign(x) * ans), x
    ),
    "kv": lambda g, ans, v, x: unbroadcast(
        -g * 0.5 * (special.kv(v - 1.0, x) + special.kv(v + 1.0, x)), x
    ),
    "jv": lambda g, ans, v, x: unbroadcast(
        g * 0.5 * (special.jv(v - 1.0, x) - special.jv(v + 1.0, x)), x
    ),
    "jn": lambda g, ans, v, x: unbroadcast(
        g * 0.5 * (special.jv(v - 1.0, x) - special.jv(v + 1.0, x)), x
    ),
    "yv": lambda g, ans, v, x: unbroadcast(
        g * 0.5 * (special.yv(v - 1.0, x) - special.yv(v + 1.0, x)), x
    ),
    "yn": lambda g, ans, v, x: unbroadcast(
        g * 0.5 * (special.yv(v - 1.0, x) - special.yv(v + 1.0, x)), x
    ),
    "gammainc": lambda g, ans, v, x: unbroadcast(
        g * np.exp((v - 1.0) * np.log(x) - x - special.gammaln(v)), x
    ),
    "gammaincc": lambda g, ans, v, x: unbroadcast(
        -g * np.exp((v - 1.0) * np.log(x) - x - special.gammaln(v)), x
    ),
    # the inverses of P(a, .) and Q(a, .): one over their derivative at the result
    "gammaincinv": lambda g, ans, v, x: unbroadcast(
        g * np.exp(ans - (v - 1.0) * np.log(ans) + special.gammaln(v)), x
    ),
    "gammainccinv": lambda g, ans, v, x: unbroadcast(
        -g * np.exp(ans - (v - 1.0) * np.log(ans) + special.gammaln(v)), x
    ),
    "expn": lambda g, ans, v, x: unbroadcast(-g * special.expn(v - 1, x), x),
    "zeta": lambda g, ans, v, x: unbroadcast(-g * v * special.zeta(v + 1.0, x), x),
    "huber": lambda g, ans, v, x: unbroadcast(g * np.clip(x, -v, v), x),
    "pseudo_huber": lambda g, ans, v, x: unbroadcast(g * x / np.sqrt(1.0 + (x / v) * (x / v)), x),
}
# torch.special's names for three of them (torch too refuses their first argument's gradient)
_IN_X_TORCH = {
    "zeta": torch("SpecialZetaBackward0", special=("zeta",)),
    "gammainc": torch("IgammaBackward0", "igamma", special=("gammainc",)),
    "gammaincc": torch("IgammacBackward0", "igammac", special=("gammaincc",)),
}
for _name, _vjp in _IN_X.items():
    defvjp(
        f"scipy_{_name}",
        getattr(special, _name),
        _spelled(_name),
        lambda g, ans, v, x: no_scipy_rule(
            "a derivative of scipy.special function in its order or shape parameter"
        ),
        _vjp,
        kind="elementwise",
        torch=_IN_X_TORCH.get(_name),
    )
# betainc(a, b, x), the regularized incomplete beta function: in x, x^(a-1) (1-x)^(b-1) / B(a, b)
defvjp(
    "scipy_betainc",
    special.betainc,
    _spelled("betainc"),
    lambda g, ans, a, b, x: no_scipy_rule("scipy.special.betainc in a"),
    lambda g, ans, a, b, x: no_scipy_rule("scipy.special.betainc in b"),
    lambda g, ans, a, b, x: unbroadcast(
        g * np.exp((a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x) - special.betaln(a, b)), x
    ),
    kind="elementwise",
)
# beta(a, b) = Gamma(a) Gamma(b) / Gamma(a + b) and its log: digamma differences
defvjp(
    "scipy_beta",
    special.beta,
    _spelled("beta"),
    lambda g, ans, a, b: unbroadcast(g * ans * (special.digamma(a) - special.digamma(a + b)), a),
    lambda g, ans, a, b: unbroadcast(g * ans * (special.digamma(b) - special.digamma(a + b)), b),
    kind="elementwise",
)
defvjp(
    "scipy_betaln",
    special.betaln,
    _spelled("betaln"),
    lambda g, ans, a, b: unbroadcast(g * (special.digamma(a) - special.digamma(a + b)), a),
    lambda g, ans, a, b: unbroadcast(g * (special.digamma(b) - special.digamma(a + b)), b),
    kind="elementwise",
)
# multigammaln(a, d) = log Gamma_d(a): its derivative is sum_j digamma(a - j / 2), j < d
defvjp(
    "scipy_multigammaln",
    special.multigammaln,
    _spelled("multigammaln"),
    lambda g, ans, a, d: (
        g * np.sum(special.digamma(np.expand_dims(a, -1) - 0.5 * np.arange(d)), axis=-1)
    ),
    None,
    jvps=(
        lambda t, ans, a, d: (
            t * np.sum(special.digamma(np.expand_dims(a, -1) - 0.5 * np.arange(d)), axis=-1)
        ),
    ),
    shape="like_first",
    torch=torch("MvlgammaBackward0", "mvlgamma", special=("multigammaln",)),
)
# Box-Cox transforms in x (lambda refused), and their inverses
_IN_FIRST = {
    "boxcox": lambda g, ans, x, lmbda: unbroadcast(g * x ** (lmbda - 1.0), x),
    "boxcox1p": lambda g, ans, x, lmbda: unbroadcast(g * (1.0 + x) ** (lmbda - 1.0), x),
    "inv_boxcox": lambda g, ans, x, lmbda: unbroadcast(g * ans / (1.0 + lmbda * x), x),
    "inv_boxcox1p": lambda g, ans, x, lmbda: unbroadcast(g * (ans + 1.0) / (1.0 + lmbda * x), x),
}
for _name, _vjp in _IN_FIRST.items():
    defvjp(
        f"scipy_{_name}",
        getattr(special, _name),
        _spelled(_name),
        _vjp,
        lambda g, ans, x, lmbda: no_scipy_rule(
            "a derivative of scipy.special's Box-Cox transforms in lambda"
        ),
        kind="elementwise",
    )
defvjp(
    "scipy_betaincinv",
    special.betaincinv,
    _spelled("betaincinv"),
    lambda g, ans, a, b, y: no_scipy_rule("scipy.special.betaincinv in a"),
    lambda g, ans, a, b, y: no_scipy_rule("scipy.special.betaincinv in b"),
    lambda g, ans, a, b, y: unbroadcast(
        g * np.exp(special.betaln(a, b) - (a - 1.0) * np.log(ans) - (b - 1.0) * np.log1p(-ans)), y
    ),
    kind="elementwise",
)
# relative entropies, binomial coefficients, Pochhammer symbols, Owen's T: in both arguments
defvjp(
    "scipy_rel_entr",
    special.rel_entr,
    _spelled("rel_entr"),
    lambda g, ans, x, y: unbroadcast(g * (np.log(x / y) + 1.0), x),
    lambda g, ans, x, y: unbroadcast(-g * x / y, y),
    kind="elementwise",
)
defvjp(
    "scipy_kl_div",
    special.kl_div,
    _spelled("kl_div"),
    lambda g, ans, x, y: unbroadcast(g * np.log(x / y), x),
    lambda g, ans, x, y: unbroadcast(g * (1.0 - x / y), y),
    kind="elementwise",
)
defvjp(
    "scipy_binom",
    special.binom,
    _spelled("binom"),
    lambda g, ans, n, k: unbroadcast(
        g * ans * (special.digamma(n + 1.0) - special.digamma(n - k + 1.0)), n
    ),
    lambda g, ans, n, k: unbroadcast(
        g * ans * (special.digamma(n - k + 1.0) - special.digamma(k + 1.0)), k
    ),
    kind="elementwise",
)
defvjp(
    "scipy_poch",
    special.poch,
    _spelled("poch"),
    lambda g, ans, z, m: unbroadcast(g * ans * (special.digamma(z + m) - special.digamma(z)), z),
    lambda g, ans, z, m: unbroadcast(g * ans * special.digamma(z + m), m),
    kind="elementwise",
)
defvjp(
    "scipy_owens_t",
    special.owens_t,
    _spelled("owens_t"),
    lambda g, ans, h, a: unbroadcast(
        -g * np.exp(-0.5 * h * h) * special.erf(a * h * 0.7071067811865476) * 0.19947114020071635, h
    ),
    lambda g, ans, h, a: unbroadcast(
        g * np.exp(-0.5 * h * h * (1.0 + a * a)) / (6.283185307179586 * (1.0 + a * a)), a
    ),
    kind="elementwise",
)
defnondiff(
    "scipy_gammasgn", special.gammasgn, _spelled("gammasgn"), params=("x",), kind="elementwise"
)

# xlogy(x, y) = x log y and xlog1py(x, y) = x log1p(y), 0 where x is 0. Their x-gradient is
# 0 where x is 0 and the log is not finite (y <= 0, y <= -1), as torch's `masked_fill((self
# == 0) & (other <= 0), 0)`: the function is 0 there, and not differentiable in x (-inf on
# one side), where log y gave -inf (or NaN) to the eager mode, torch's being 0.
defvjp(
    "scipy_xlogy",
    special.xlogy,
    _spelled("xlogy"),
    lambda g, ans, x, y: unbroadcast(g * np.where((x == 0) & (y <= 0), 0.0, np.log(y)), x),
    lambda g, ans, x, y: unbroadcast(g * x / y, y),
    kind="elementwise",
    torch=torch("XlogyBackward0", "xlogy", special=("xlogy",)),
)
defvjp(
    "scipy_xlog1py",
    special.xlog1py,
    _spelled("xlog1py"),
    lambda g, ans, x, y: unbroadcast(g * np.where((x == 0) & (y <= -1), 0.0, np.log1p(y)), x),
    lambda g, ans, x, y: unbroadcast(g * x / (1.0 + y), y),
    kind="elementwise",
    torch=torch("SpecialXlog1PyBackward0", special=("xlog1py",)),
)
# softmax and log_softmax along axis (None: all of x)
defvjp(
    "scipy_softmax",
    special.softmax,
    _spelled("softmax"),
    lambda g, ans, x, axis=None: ans * (g - np.sum(g * ans, axis=axis, keepdims=True)),
    jvps=(lambda t, ans, x, axis=None: ans * (t - np.sum(t * ans, axis=axis, keepdims=True)),),
)
defvjp(
    "scipy_log_softmax",
    special.log_softmax,
    _spelled("log_softmax"),
    lambda g, ans, x, axis=None: g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True),
    jvps=(lambda t, ans, x, axis=None: t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True),),
)


# Example inputs for the registry's test grid (ops/examples.py): each function on a domain
# where it is smooth; an order argument (v, n, d) is a constant, its gradient refused.
_ON = {
    "normal": "expit erf erfc ndtr log_ndtr erfcx log_expit j0 j1 expm1 exp2 exp10 cbrt cosm1 "
    "sindg cosdg softplus erfi dawsn wrightomega i0 i1 i0e i1e",
    "positive": "gammaln gamma digamma rgamma k0 k1 y0 y1 log1p entr expi exp1 spence",
    "prob": "logit ellipk ellipe",
    "unit": "erfinv tandg",
    "away_from_zero": "cotdg",
}
EXAMPLES = {
    **{f"scipy_{n}": [ex(arg(3, 4, domain=d))] for d, ns in _ON.items() for n in ns.split()},
    "scipy_erfcinv": [ex(arg(3, 4, domain="prob"))],
    "bessel_i_gap": [ex(arg(3, 4, domain="positive")), ex(arg(3, 4, domain="large"))],
    "scipy_ndtri": [ex(arg(3, 4, domain="prob"))],
    "scipy_ndtri_exp": [ex(arg(3, 4, domain="positive"))],
    "scipy_logsumexp": [
        ex(arg(3, 4)),
        ex(arg(3, 4), axis=1),
        ex(arg(3, 4), axis=0, keepdims=True),
        ex(arg(3, 4), axis=1, b=arg(3, 4, domain="positive")),
    ],
    "scipy_polygamma": [ex(1, arg(3, 4, domain="positive"))],
    **{
        f"scipy_{n}": [ex(1.5, arg(3, 4, domain="positive"))]
        for n in "iv ive kv jv yv gammainc gammaincc".split()
    },
    **{f"scipy_{n}": [ex(2, arg(3, 4, domain="positive"))] for n in "jn yn expn".split()},
    "scipy_gammaincinv": [ex(1.5, arg(3, 4, domain="prob"))],
    "scipy_gammainccinv": [ex(1.5, arg(3, 4, domain="prob"))],
    "scipy_zeta": [ex(2.5, arg(3, 4, domain="positive"))],
    "scipy_huber": [ex(0.8, arg(3, 4, domain="away_from_zero"))],
    "scipy_pseudo_huber": [ex(0.8, arg(3, 4))],
    "scipy_betainc": [ex(2.0, 3.0, arg(3, 4, domain="prob"))],
    "scipy_betaincinv": [ex(2.0, 3.0, arg(3, 4, domain="prob"))],
    "scipy_beta": [ex(arg(3, 4, domain="positive"), arg(4, domain="positive"))],
    "scipy_betaln": [ex(arg(3, 4, domain="positive"), arg(4, domain="positive"))],
    "scipy_multigammaln": [ex(arg(3, 4, domain="large"), 3)],
    **{f"scipy_{n}": [ex(arg(3, 4, domain="positive"), 0.4)] for n in "boxcox boxcox1p".split()},
    **{
        f"scipy_{n}": [ex(arg(3, 4, domain="unit"), 0.4)] for n in "inv_boxcox inv_boxcox1p".split()
    },
    **{
        f"scipy_{n}": [ex(arg(3, 4, domain="positive"), arg(4, domain="positive"))]
        for n in "rel_entr kl_div xlogy xlog1py".split()
    },
    "scipy_binom": [ex(arg(3, 4, domain="large"), arg(4, domain="positive"))],
    "scipy_poch": [ex(arg(3, 4, domain="positive"), arg(4, domain="unit"))],
    "scipy_owens_t": [ex(arg(3, 4), arg(4))],
    "scipy_softmax": [ex(arg(3, 4)), ex(arg(3, 4), axis=1)],
    "scipy_log_softmax": [ex(arg(3, 4)), ex(arg(3, 4), axis=0)],
}
