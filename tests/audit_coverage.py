"""Issue 19's function lists, audited: `python -m tests.audit_coverage [--eager]`.

For every function the issue names (numpy, np.linalg, scipy.special, scipy.stats,
scipy.linalg, scipy.signal, scipy.integrate) the compiled gradient of a small program using it
is checked against central finite differences (`sourcegrad.check_grad`), and, with --eager,
the torch-named counterpart (`sourcegrad.<name>` as `torch.<name>`) is run and its gradient
compared with torch's. Prints one line per function (ok / no rule / wrong / error) and the
counts per module. A script, not a test: it takes about a minute.
"""

import sys

import numpy as np
import scipy.integrate  # noqa: F401  (the programs below reach these through `scipy.`)
import scipy.linalg
import scipy.signal
import scipy.special as sp
import scipy.stats as st

import sourcegrad
from sourcegrad import errors

R = np.random.default_rng(0)
V = R.normal(size=5)
M = R.normal(size=(3, 3))
S = M @ M.T + 3 * np.eye(3)  # symmetric positive definite
P = R.uniform(0.5, 2.0, size=5)
U = R.uniform(0.1, 0.9, size=5)
B = R.normal(size=3)
W = R.normal(size=(3, 3))

# (module, function, program, input, torch counterpart as (name, program) or None)
CASES = [
    ("numpy", "add", lambda x: np.sum(np.add(x, 2.0 * x) ** 2), V, "add"),
    ("numpy", "subtract", lambda x: np.sum(np.subtract(x, x**2)), V, "sub"),
    ("numpy", "multiply", lambda x: np.sum(np.multiply(x, x)), V, "mul"),
    ("numpy", "divide", lambda x: np.sum(np.divide(1.0, x + 3.0)), V, "div"),
    ("numpy", "true_divide", lambda x: np.sum(np.true_divide(x, x * x + 1.0)), V, "true_divide"),
    ("numpy", "negative", lambda x: np.sum(np.negative(x) * x), V, "negative"),
    ("numpy", "power", lambda x: np.sum(np.power(P, x)), V, "pow"),
    ("numpy", "mod", lambda x: np.sum(np.mod(x, 0.7) * x), V, "remainder"),
    ("numpy", "remainder", lambda x: np.sum(np.remainder(x, 0.7) * x), V, "remainder"),
    ("numpy", "fmax", lambda x: np.sum(np.fmax(x, 0.1) * x), V, "fmax"),
    ("numpy", "fmin", lambda x: np.sum(np.fmin(x, 0.1) * x), V, "fmin"),
    ("numpy", "logaddexp2", lambda x: np.sum(np.logaddexp2(x, 0.3)), V, None),
    ("numpy", "sinc", lambda x: np.sum(np.sinc(x)), V, "sinc"),
    ("numpy", "deg2rad", lambda x: np.sum(np.sin(np.deg2rad(x * 50.0))), V, "deg2rad"),
    ("numpy", "rad2deg", lambda x: np.sum(np.rad2deg(x) ** 2), V, "rad2deg"),
    ("numpy", "degrees", lambda x: np.sum(np.degrees(x) ** 2), V, None),
    ("numpy", "radians", lambda x: np.sum(np.sin(np.radians(x * 50.0))), V, None),
    ("numpy", "real", lambda x: np.sum(np.real(x) ** 2), V, "real"),
    ("numpy", "nan_to_num", lambda x: np.sum(np.nan_to_num(x) ** 2), V, "nan_to_num"),
    ("numpy", "cumsum", lambda x: np.sum(np.cumsum(x) ** 2), V, "cumsum"),
    ("numpy", "cumprod", lambda x: np.sum(np.cumprod(x)), V, "cumprod"),
    ("numpy", "diff", lambda x: np.sum(np.diff(x) ** 2), V, "diff"),
    ("numpy", "gradient", lambda x: np.sum(np.gradient(x) ** 2), V, "gradient"),
    ("numpy", "sort", lambda x: np.sum(np.sort(x) * V), V, "sort"),
    ("numpy", "partition", lambda x: np.sum(np.partition(x, 2) * V), V, None),
    ("numpy", "trace", lambda x: np.trace(x) * np.trace(x @ x), M, "trace"),
    ("numpy", "diag", lambda x: np.sum(np.diag(x) ** 2), M, "diag"),
    ("numpy", "diagonal", lambda x: np.sum(np.diagonal(x) ** 2), M, "diagonal"),
    ("numpy", "tril", lambda x: np.sum(np.tril(x) ** 2), M, "tril"),
    ("numpy", "triu", lambda x: np.sum(np.triu(x, 1) ** 2), M, "triu"),
    ("numpy", "kron", lambda x: np.sum(np.kron(x, W) ** 2), M, "kron"),
    ("numpy", "cross", lambda x: np.sum(np.cross(x, B) ** 2), B * 2.0, "cross"),
    ("numpy", "pad", lambda x: np.sum(np.pad(x, 2) * np.arange(9.0)), V, None),
    ("numpy", "repeat", lambda x: np.sum(np.repeat(x, 2) ** 2), V, "repeat_interleave"),
    ("numpy", "tile", lambda x: np.sum(np.tile(x, 3) ** 3), V, "tile"),
    ("numpy", "roll", lambda x: np.sum(np.roll(x, 2) * V), V, "roll"),
    ("numpy", "rollaxis", lambda x: np.sum(np.rollaxis(x, 1) * W), M, None),
    ("numpy", "rot90", lambda x: np.sum(np.rot90(x) * W), M, "rot90"),
    ("numpy", "flip", lambda x: np.sum(np.flip(x) * V), V, "flip"),
    ("numpy", "fliplr", lambda x: np.sum(np.fliplr(x) * W), M, "fliplr"),
    ("numpy", "flipud", lambda x: np.sum(np.flipud(x) * W), M, "flipud"),
    ("numpy", "split", lambda x: np.sum(np.split(x, 3)[1] ** 2), M, "split"),
    ("numpy", "array_split", lambda x: np.sum(np.array_split(x, 2)[0] ** 2), V, "tensor_split"),
    ("numpy", "hsplit", lambda x: np.sum(np.hsplit(x, 3)[2] ** 2), M, "hsplit"),
    ("numpy", "vsplit", lambda x: np.sum(np.vsplit(x, 3)[0] ** 2), M, "vsplit"),
    ("numpy", "dsplit", lambda x: np.sum(np.dsplit(x.reshape(1, 3, 3), 3)[1] ** 2), M, "dsplit"),
    ("numpy", "hstack", lambda x: np.sum(np.hstack([x, x * x]) ** 2), V, "hstack"),
    ("numpy", "vstack", lambda x: np.sum(np.vstack([x, x * x]) ** 2), V, "vstack"),
    ("numpy", "dstack", lambda x: np.sum(np.dstack([x, x * x]) ** 2), V, "dstack"),
    (
        "numpy",
        "column_stack",
        lambda x: np.sum(np.column_stack([x, x * x]) ** 2),
        V,
        "column_stack",
    ),
    ("numpy", "atleast_1d", lambda x: np.sum(np.atleast_1d(x) ** 2), V, "atleast_1d"),
    ("numpy", "atleast_2d", lambda x: np.sum(np.atleast_2d(x) ** 2), V, "atleast_2d"),
    ("numpy", "atleast_3d", lambda x: np.sum(np.atleast_3d(x) ** 2), V, "atleast_3d"),
    ("numpy", "linspace", lambda x: np.sum(np.linspace(x[0], x[1], 4) ** 2), V, None),
    ("numpy", "full", lambda x: np.sum(np.full(3, x[0]) * B), V, None),
    (
        "numpy",
        "meshgrid",
        lambda x: np.sum(np.meshgrid(x, x)[0] * np.meshgrid(x, x)[1]),
        V,
        "meshgrid",
    ),
    ("numpy", "select", lambda x: np.sum(np.select([x > 0, x <= 0], [x, x * x])), V, None),
    ("numpy", "copy", lambda x: np.sum(np.copy(x) ** 2), V, "clone"),
    ("numpy", "asarray", lambda x: np.sum(np.asarray(x) ** 2), V, None),
    ("numpy", "float64", lambda x: np.float64(x[0]) ** 2, V, None),
    ("numpy", "einsum", lambda x: np.einsum("...i,...i->...", x, x) * 1.0, V, "einsum"),
    (
        "numpy",
        "tensordot",
        lambda x: np.sum(np.tensordot(x, W, axes=([1, 0], [0, 1]))),
        M,
        "tensordot",
    ),
    ("numpy", "dot", lambda x: np.sum(np.dot(x, B) ** 2), M, "dot"),
    ("numpy", "matmul", lambda x: np.sum(np.matmul(x, B) ** 2), M, "matmul"),
    ("numpy", "var", lambda x: np.var(x) + np.std(x), V, "var"),
    ("numpy", "prod", lambda x: np.prod(x), V, "prod"),
    ("np.linalg", "inv", lambda x: np.sum(np.linalg.inv(x) * W), S, "linalg.inv"),
    ("np.linalg", "pinv", lambda x: np.sum(np.linalg.pinv(x[:, :2]) * W[:2]), M, "linalg.pinv"),
    ("np.linalg", "det", lambda x: np.linalg.det(x), M, "linalg.det"),
    ("np.linalg", "slogdet", lambda x: np.linalg.slogdet(x)[1], S, "linalg.slogdet"),
    ("np.linalg", "solve", lambda x: np.sum(np.linalg.solve(x, B) ** 2), S, "linalg.solve"),
    (
        "np.linalg",
        "lstsq",
        lambda x: np.sum(np.linalg.lstsq(x[:, :2], B)[0] ** 2),
        M,
        "linalg.lstsq",
    ),
    (
        "np.linalg",
        "norm",
        lambda x: np.linalg.norm(x) + np.sum(np.linalg.norm(x, 1, axis=0)),
        M,
        "linalg.norm",
    ),
    (
        "np.linalg",
        "cholesky",
        lambda x: np.sum(np.linalg.cholesky(x @ x.T + np.eye(3)) * W),
        M,
        "linalg.cholesky",
    ),
    (
        "np.linalg",
        "qr",
        lambda x: np.sum(np.linalg.qr(x)[0] * W) + np.sum(np.linalg.qr(x)[1] * W),
        M,
        "linalg.qr",
    ),
    ("np.linalg", "eigh", lambda x: np.sum(np.linalg.eigh(x + x.T)[0] * B), M, "linalg.eigh"),
    (
        "np.linalg",
        "eigvalsh",
        lambda x: np.sum(np.linalg.eigvalsh(x + x.T) * B),
        M,
        "linalg.eigvalsh",
    ),
    (
        "np.linalg",
        "svd",
        lambda x: np.sum(np.linalg.svd(x, full_matrices=False)[1] * B),
        M,
        "linalg.svd",
    ),
    (
        "np.linalg",
        "matrix_power",
        lambda x: np.sum(np.linalg.matrix_power(x, 3) * W),
        M,
        "linalg.matrix_power",
    ),
    (
        "np.linalg",
        "multi_dot",
        lambda x: np.sum(np.linalg.multi_dot([x, W, x])),
        M,
        "linalg.multi_dot",
    ),
    ("np.linalg", "trace", lambda x: np.linalg.trace(x @ x), M, None),
    ("scipy.special", "erf", lambda x: np.sum(sp.erf(x)), V, "special.erf"),
    ("scipy.special", "erfc", lambda x: np.sum(sp.erfc(x)), V, "special.erfc"),
    ("scipy.special", "erfinv", lambda x: np.sum(sp.erfinv(x * 0.1)), V, "special.erfinv"),
    ("scipy.special", "erfcinv", lambda x: np.sum(sp.erfcinv(x)), U, None),
    ("scipy.special", "expit", lambda x: np.sum(sp.expit(x)), V, "special.expit"),
    ("scipy.special", "logit", lambda x: np.sum(sp.logit(x)), U, "special.logit"),
    ("scipy.special", "gamma", lambda x: np.sum(sp.gamma(x)), P, None),
    ("scipy.special", "gammaln", lambda x: np.sum(sp.gammaln(x)), P, "special.gammaln"),
    ("scipy.special", "gammasgn", lambda x: np.sum(sp.gammasgn(x) * x), P, None),
    ("scipy.special", "digamma", lambda x: np.sum(sp.digamma(x)), P, "special.digamma"),
    ("scipy.special", "psi", lambda x: np.sum(sp.psi(x)), P, "special.psi"),
    ("scipy.special", "polygamma", lambda x: np.sum(sp.polygamma(1, x)), P, "special.polygamma"),
    ("scipy.special", "rgamma", lambda x: np.sum(sp.rgamma(x)), P, None),
    ("scipy.special", "beta", lambda x: np.sum(sp.beta(x, 1.5)), P, None),
    ("scipy.special", "betaln", lambda x: np.sum(sp.betaln(x, 1.5)), P, None),
    ("scipy.special", "betainc", lambda x: np.sum(sp.betainc(2.0, 3.0, x)), U, None),
    ("scipy.special", "gammainc", lambda x: np.sum(sp.gammainc(2.0, x)), P, None),
    ("scipy.special", "gammaincc", lambda x: np.sum(sp.gammaincc(2.0, x)), P, None),
    (
        "scipy.special",
        "multigammaln",
        lambda x: sp.multigammaln(x[0] + 3.0, 3),
        P,
        "special.multigammaln",
    ),
    ("scipy.special", "i0", lambda x: np.sum(sp.i0(x)), V, "special.i0"),
    ("scipy.special", "i1", lambda x: np.sum(sp.i1(x)), V, "special.i1"),
    ("scipy.special", "iv", lambda x: np.sum(sp.iv(1.5, x)), P, None),
    ("scipy.special", "ive", lambda x: np.sum(sp.ive(1.5, x)), P, None),
    ("scipy.special", "j0", lambda x: np.sum(sp.j0(x)), V, None),
    ("scipy.special", "j1", lambda x: np.sum(sp.j1(x)), V, None),
    ("scipy.special", "jn", lambda x: np.sum(sp.jn(2, x)), V, None),
    ("scipy.special", "y0", lambda x: np.sum(sp.y0(x)), P, None),
    ("scipy.special", "y1", lambda x: np.sum(sp.y1(x)), P, None),
    ("scipy.special", "yn", lambda x: np.sum(sp.yn(2, x)), P, None),
    ("scipy.special", "logsumexp", lambda x: sp.logsumexp(x, b=P), V, "special.logsumexp"),
    ("scipy.special", "softmax", lambda x: np.sum(sp.softmax(x) * V), V, "special.softmax"),
    (
        "scipy.special",
        "log_softmax",
        lambda x: np.sum(sp.log_softmax(x) * V),
        V,
        "special.log_softmax",
    ),
    ("scipy.special", "xlogy", lambda x: np.sum(sp.xlogy(x, x + 3.0)), V, "special.xlogy"),
    ("scipy.special", "xlog1py", lambda x: np.sum(sp.xlog1py(x, x + 3.0)), V, "special.xlog1py"),
    ("scipy.special", "ndtr", lambda x: np.sum(sp.ndtr(x)), V, "special.ndtr"),
    ("scipy.special", "log_ndtr", lambda x: np.sum(sp.log_ndtr(x)), V, "special.log_ndtr"),
    ("scipy.special", "ndtri", lambda x: np.sum(sp.ndtri(x)), U, "special.ndtri"),
    (
        "scipy.stats",
        "norm",
        lambda x: np.sum(st.norm.logpdf(x) + st.norm.cdf(x, 0.5, 2.0)),
        V,
        None,
    ),
    (
        "scipy.stats",
        "t",
        lambda x: np.sum(st.t.logpdf(x, 3.0) + st.t.pdf(x, 4.0, 0.5, 2.0)),
        V,
        None,
    ),
    (
        "scipy.stats",
        "gamma",
        lambda x: np.sum(st.gamma.logpdf(x, 2.0) + st.gamma.pdf(x, 3.0, 0.0, 2.0)),
        P,
        None,
    ),
    (
        "scipy.stats",
        "beta",
        lambda x: np.sum(st.beta.logpdf(x, 2.0, 3.0) + st.beta.pdf(x, 1.5, 2.5)),
        U,
        None,
    ),
    (
        "scipy.stats",
        "chi2",
        lambda x: np.sum(st.chi2.logpdf(x, 3.0) + st.chi2.pdf(x, 4.0)),
        P,
        None,
    ),
    (
        "scipy.stats",
        "poisson",
        lambda x: np.sum(st.poisson.logpmf(3.0, x) + st.poisson.pmf(2.0, x)),
        P,
        None,
    ),
    (
        "scipy.stats",
        "dirichlet",
        lambda x: st.dirichlet.logpdf(U[:3] / np.sum(U[:3]), x[:3]),
        P,
        None,
    ),
    (
        "scipy.stats",
        "multivariate_normal",
        lambda x: (
            st.multivariate_normal.logpdf(x[:3], B, S) + st.multivariate_normal.pdf(B, x[:3], S)
        ),
        V,
        None,
    ),
    (
        "scipy.linalg",
        "solve_triangular",
        lambda x: np.sum(
            scipy.linalg.solve_triangular(np.tril(x) + 3.0 * np.eye(3), B, lower=True) ** 2
        ),
        M,
        "linalg.solve_triangular",
    ),
    (
        "scipy.linalg",
        "cho_factor",
        lambda x: np.sum(scipy.linalg.cho_factor(x @ x.T + np.eye(3), lower=True)[0] * np.tril(W)),
        M,
        None,
    ),
    (
        "scipy.linalg",
        "cho_solve",
        lambda x: np.sum(scipy.linalg.cho_solve((np.linalg.cholesky(S), True), x) ** 2),
        M,
        "cholesky_solve",
    ),
    (
        "scipy.linalg",
        "sqrtm",
        lambda x: np.sum(scipy.linalg.sqrtm(x @ x.T + np.eye(3)) * W),
        M,
        None,
    ),
    (
        "scipy.linalg",
        "expm",
        lambda x: np.sum(scipy.linalg.expm(x * 0.5) * W),
        M,
        "linalg.matrix_exp",
    ),
    (
        "scipy.signal",
        "convolve",
        lambda x: (
            np.sum(scipy.signal.convolve(x, B) ** 2)
            + np.sum(scipy.signal.convolve(x, B, mode="same") * V)
            + np.sum(scipy.signal.convolve(x, B, mode="valid") ** 2)
        ),
        V,
        None,
    ),
    (
        "scipy.integrate",
        "odeint",
        lambda x: np.sum(scipy.integrate.odeint(lambda y, t: -y * t, x, np.linspace(0.0, 1.0, 3))),
        V,
        None,
    ),
]


def compiled(f, x):
    """'ok', 'no rule', 'wrong' or 'error: ...' for the compiled gradient of f at x."""
    try:
        sourcegrad.check_grad(f, x, rtol=1e-5, atol=1e-7)
    except errors.NoRuleError:
        return "no rule"
    except sourcegrad.api.GradientCheckError:
        return "wrong"
    except Exception as e:  # noqa: BLE001 - the audit reports every failure
        return f"error: {type(e).__name__}: {str(e).splitlines()[0][:90]}"
    return "ok"


def eager(name):
    """Does sourcegrad have the torch-named function `name` (dotted: 'linalg.inv')?"""
    if name is None:
        return "-"
    obj = sourcegrad
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return "missing"
    return "present"


def main(argv):
    counts: dict = {}
    for module, name, f, x, torch_name in CASES:
        verdict = compiled(f, x)
        e = eager(torch_name)
        counts.setdefault(module, [0, 0])
        counts[module][0] += verdict == "ok"
        counts[module][1] += 1
        if verdict != "ok" or "-v" in argv or e == "missing":
            print(f"{module:16} {name:20} compiler: {verdict:10} eager {torch_name}: {e}")
    for module, (ok, n) in counts.items():
        print(f"{module}: {ok} of {n} differentiate in the compiler")


if __name__ == "__main__":
    main(sys.argv[1:])
