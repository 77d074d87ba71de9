"""scipy.linalg: solve_triangular, solve_banded, cho_factor, cho_solve, expm, sqrtm and
solve_sylvester.

Imported by the registry once the program has imported scipy.linalg (`registry._OPTIONAL`).
Each is one primitive with its rule (scipy's source is never inlined); generated code calls
them as `scipy.linalg.<name>`. The derivatives, for real matrices:

* x = solve_triangular(a, b, trans, lower, unit_diagonal): T = the triangle of a that is read;
  bbar = T^-T g (a triangular solve again), abar = -bbar x^T on that triangle (trans=1: the
  transposes);
* x = solve_banded((l, u), ab, b): A x = b for A stored by diagonals (A[i, j] = ab[u + i - j,
  j]); bbar solves with A^T (stored with (u, l): `banded_transpose`), abar = -bbar x^T on the
  band (`band_of`; the storage's unused corners get 0);
* (c, lower) = cho_factor(a): c holds the Cholesky factor in one triangle and a's own entries
  in the other; the factor's adjoint is np.linalg.cholesky's (symmetric: differentiate
  functions of symmetric inputs), the other triangle passes its adjoint through;
* x = cho_solve((c, lower), b): x = A^-1 b with A = L L^T (or U^T U) from c's triangle;
  bbar = A^-1 g, and the factor's adjoint (A^-1 symmetric) -tril((bbar x^T + x bbar^T) L)
  (upper: -triu(U (bbar x^T + x bbar^T))), zero in c's other triangle, which is not read;
* expm(A): the adjoint is the upper right block of expm([[A^T, G], [0, A^T]]), the JVP that
  of expm([[A, T], [0, A]]) (Najfeld and Havel 1995);
* X = sqrtm(A) (A with no eigenvalue on the closed negative axis): X dX + dX X = dA, a
  Sylvester equation: the JVP is solve_sylvester(X, X, T), the adjoint
  solve_sylvester(X^T, X^T, G);
* S = solve_sylvester(A, B, Q) (A S + S B = Q): Qbar = solve_sylvester(A^T, B^T, G),
  Abar = -Qbar S^T, Bbar = -S^T Qbar.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as scipy_linalg

from . import scipy_special
from .examples import arg, ex
from .registry import Spelling, defvjp

no_scipy_rule = scipy_special.no_scipy_rule


def _spelled(name):
    return Spelling("module", f"scipy.linalg.{name}")


# (trans: 0 or "N" solves T x = b, 1 or "T" solves T^T x = b; the adjoint solves the other)
defvjp(
    "scipy_solve_triangular",
    scipy_linalg.solve_triangular,
    _spelled("solve_triangular"),
    lambda g, ans, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True: (
        no_scipy_rule("scipy.linalg.solve_triangular with trans 2 or 'C'")
        if trans == 2 or trans == "C"
        else np.tril(
            -np.reshape(
                scipy_linalg.solve_triangular(a, g, 1, lower, unit_diagonal), (a.shape[-1], -1)
            )
            @ np.reshape(ans, (a.shape[-1], -1)).T,
            -1 if unit_diagonal else 0,
        )
        if lower and (trans == 0 or trans == "N")
        else np.triu(
            -np.reshape(
                scipy_linalg.solve_triangular(a, g, 1, lower, unit_diagonal), (a.shape[-1], -1)
            )
            @ np.reshape(ans, (a.shape[-1], -1)).T,
            1 if unit_diagonal else 0,
        )
        if trans == 0 or trans == "N"
        else np.tril(
            -np.reshape(ans, (a.shape[-1], -1))
            @ np.reshape(
                scipy_linalg.solve_triangular(a, g, 0, lower, unit_diagonal), (a.shape[-1], -1)
            ).T,
            -1 if unit_diagonal else 0,
        )
        if lower
        else np.triu(
            -np.reshape(ans, (a.shape[-1], -1))
            @ np.reshape(
                scipy_linalg.solve_triangular(a, g, 0, lower, unit_diagonal), (a.shape[-1], -1)
            ).T,
            1 if unit_diagonal else 0,
        )
    ),
    lambda g, ans, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True: (
        no_scipy_rule("scipy.linalg.solve_triangular with trans 2 or 'C'")
        if trans == 2 or trans == "C"
        else scipy_linalg.solve_triangular(
            a, g, 1 if trans == 0 or trans == "N" else 0, lower, unit_diagonal
        )
    ),
    jvps=(
        lambda t, ans, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True: (
            no_scipy_rule("scipy.linalg.solve_triangular with trans 2 or 'C'")
            if trans == 2 or trans == "C"
            else -scipy_linalg.solve_triangular(
                a, np.tril(t, -1 if unit_diagonal else 0) @ ans, trans, lower, unit_diagonal
            )
            if lower and (trans == 0 or trans == "N")
            else -scipy_linalg.solve_triangular(
                a, np.triu(t, 1 if unit_diagonal else 0) @ ans, trans, lower, unit_diagonal
            )
            if trans == 0 or trans == "N"
            else -scipy_linalg.solve_triangular(
                a, np.tril(t, -1 if unit_diagonal else 0).T @ ans, trans, lower, unit_diagonal
            )
            if lower
            else -scipy_linalg.solve_triangular(
                a, np.triu(t, 1 if unit_diagonal else 0).T @ ans, trans, lower, unit_diagonal
            )
        ),
        lambda t, ans, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True: (
            no_scipy_rule("scipy.linalg.solve_triangular with trans 2 or 'C'")
            if trans == 2 or trans == "C"
            else scipy_linalg.solve_triangular(a, t, trans, lower, unit_diagonal)
        ),
    ),
    shape="linalg",
)

# cho_factor's factor L (lower) or U = L^T (upper); ans[0] is c. Lbar from cholesky's rule:
# L^-T sym(Phi(L^T Lbar)) L^-1, Phi the lower triangle with the diagonal halved.
defvjp(
    "scipy_cho_factor",
    scipy_linalg.cho_factor,
    _spelled("cho_factor"),
    lambda g, ans, a, lower=False, overwrite_a=False, check_finite=True: (
        np.linalg.inv(np.tril(ans[0])).T
        @ (
            (
                np.tril(np.tril(ans[0]).T @ np.tril(g[0]))
                + np.tril(np.tril(ans[0]).T @ np.tril(g[0])).T
            )
            / (2.0 + 2.0 * np.eye(a.shape[-1]))
        )
        @ np.linalg.inv(np.tril(ans[0]))
        + np.triu(g[0], 1)
        if lower
        else np.linalg.inv(np.triu(ans[0]))
        @ (
            (
                np.tril(np.triu(ans[0]) @ np.triu(g[0]).T)
                + np.tril(np.triu(ans[0]) @ np.triu(g[0]).T).T
            )
            / (2.0 + 2.0 * np.eye(a.shape[-1]))
        )
        @ np.linalg.inv(np.triu(ans[0])).T
        + np.tril(g[0], -1)
    ),
    jvps=(
        lambda t, ans, a, lower=False, overwrite_a=False, check_finite=True: (
            (
                np.tril(ans[0])
                @ (
                    np.tril(
                        np.linalg.inv(np.tril(ans[0]))
                        @ ((t + t.T) * 0.5)
                        @ np.linalg.inv(np.tril(ans[0])).T
                    )
                    / (1.0 + np.eye(a.shape[-1]))
                )
                + np.triu(t, 1),
                np.zeros_like(ans[1]),
            )
            if lower
            else (
                (
                    np.tril(
                        np.linalg.inv(np.triu(ans[0])).T
                        @ ((t + t.T) * 0.5)
                        @ np.linalg.inv(np.triu(ans[0]))
                    )
                    / (1.0 + np.eye(a.shape[-1]))
                ).T
                @ np.triu(ans[0])
                + np.tril(t, -1),
                np.zeros_like(ans[1]),
            )
        ),
    ),
    shape="linalg",
)


def cho_factor_of(c, lower):
    """The factor P of A = P P^T that cho_solve((c, lower), b) reads: tril(c), or triu(c)^T
    (upper: A = U^T U). c's other triangle is not read."""
    return np.tril(c) if lower else np.swapaxes(np.triu(c), -1, -2)


def cho_factor_back(p, lower):
    """Transpose of `cho_factor_of` (the adjoint of c from P's): tril(p), or triu(p^T)."""
    return np.tril(p) if lower else np.triu(np.swapaxes(p, -1, -2))


def _helper(name):
    return Spelling("module", f"sourcegrad.ops.scipy_linalg.{name}")


defvjp(
    "cho_factor_of",
    cho_factor_of,
    _helper("cho_factor_of"),
    lambda g, ans, c, lower: cho_factor_back(g, lower),
    None,
    linear=(0,),
)
defvjp(
    "cho_factor_back",
    cho_factor_back,
    _helper("cho_factor_back"),
    lambda g, ans, p, lower: cho_factor_of(g, lower),
    None,
    linear=(0,),
)

# cho_solve in its factor: A = P P^T with P = `cho_factor_of(c, lower)`; with Abar = -bbar x^T
# (as for np.linalg.solve), Pbar = (Abar + Abar^T) P, and c's adjoint is `cho_factor_back`'s:
# c's other triangle is never read (cho_factor leaves a's entries or garbage there), no
# gradient. (`lower` is known only when the code runs, so the helpers choose, not a template
# condition.) The tuple's adjoint is (cbar, 0.0), what cho_factor's rule reads back as g[0].
defvjp(
    "scipy_cho_solve",
    scipy_linalg.cho_solve,
    _spelled("cho_solve"),
    lambda g, ans, c_and_lower, b, overwrite_b=False, check_finite=True: (
        cho_factor_back(
            -(
                np.reshape(scipy_linalg.cho_solve(c_and_lower, g), (ans.shape[0], -1))
                @ np.reshape(ans, (ans.shape[0], -1)).T
                + (
                    np.reshape(scipy_linalg.cho_solve(c_and_lower, g), (ans.shape[0], -1))
                    @ np.reshape(ans, (ans.shape[0], -1)).T
                ).T
            )
            @ cho_factor_of(c_and_lower[0], c_and_lower[1]),
            c_and_lower[1],
        ),
        0.0,
    ),
    lambda g, ans, c_and_lower, b, overwrite_b=False, check_finite=True: scipy_linalg.cho_solve(
        c_and_lower, g
    ),
    jvps=(
        lambda t, ans, c_and_lower, b, overwrite_b=False, check_finite=True: (
            -scipy_linalg.cho_solve(
                c_and_lower,
                cho_factor_of(t[0], c_and_lower[1])
                @ (cho_factor_of(c_and_lower[0], c_and_lower[1]).T @ ans)
                + cho_factor_of(c_and_lower[0], c_and_lower[1])
                @ (cho_factor_of(t[0], c_and_lower[1]).T @ ans),
            )
        ),
        lambda t, ans, c_and_lower, b, overwrite_b=False, check_finite=True: scipy_linalg.cho_solve(
            c_and_lower, t
        ),
    ),
    shape="linalg",
)

defvjp(
    "scipy_expm",
    scipy_linalg.expm,
    _spelled("expm"),
    lambda g, ans, A: scipy_linalg.expm(
        np.concatenate(
            [
                np.concatenate([np.swapaxes(A, -1, -2), g], axis=-1),
                np.concatenate([np.zeros_like(A), np.swapaxes(A, -1, -2)], axis=-1),
            ],
            axis=-2,
        )
    )[..., : A.shape[-1], A.shape[-1] :],
    jvps=(
        lambda t, ans, A: scipy_linalg.expm(
            np.concatenate(
                [np.concatenate([A, t], axis=-1), np.concatenate([np.zeros_like(A), A], axis=-1)],
                axis=-2,
            )
        )[..., : A.shape[-1], A.shape[-1] :],
    ),
    shape="linalg",
)

defvjp(
    "scipy_solve_sylvester",
    scipy_linalg.solve_sylvester,
    _spelled("solve_sylvester"),
    lambda g, ans, a, b, q: -scipy_linalg.solve_sylvester(a.T, b.T, g) @ ans.T,
    lambda g, ans, a, b, q: -ans.T @ scipy_linalg.solve_sylvester(a.T, b.T, g),
    lambda g, ans, a, b, q: scipy_linalg.solve_sylvester(a.T, b.T, g),
    jvps=(
        lambda t, ans, a, b, q: scipy_linalg.solve_sylvester(a, b, -t @ ans),
        lambda t, ans, a, b, q: scipy_linalg.solve_sylvester(a, b, -ans @ t),
        lambda t, ans, a, b, q: scipy_linalg.solve_sylvester(a, b, t),
    ),
    shape="linalg",
)

defvjp(
    "scipy_sqrtm",
    scipy_linalg.sqrtm,
    _spelled("sqrtm"),
    lambda g, ans, A: scipy_linalg.solve_sylvester(ans.T, ans.T, g),
    jvps=(lambda t, ans, A: scipy_linalg.solve_sylvester(ans, ans, t),),
    shape="linalg",
)


def banded_transpose(l_and_u, ab):
    """The band storage of A^T, for A stored in `ab` with (l, u) diagonals below and above
    (A[i, j] = ab[u + i - j, j]): A^T has (u, l), and its storage's element [k, j] is
    ab[l + u - k, j + k - l] (0 in the corners the storage leaves unused)."""
    lower, upper = l_and_u
    n = np.shape(ab)[-1]
    out = np.zeros_like(ab)
    for k in range(lower + upper + 1):
        shift = k - lower  # out[k, j] = ab[l + u - k, j + shift]
        start, stop = max(0, -shift), min(n, n - shift)
        out[k, start:stop] = ab[lower + upper - k, start + shift : stop + shift]
    return out


def band_of(m, l_and_u):
    """The band of the n x n matrix m, in the storage solve_banded reads (0 in its unused
    corners)."""
    lower, upper = l_and_u
    n = np.shape(m)[-1]
    out = np.zeros((lower + upper + 1, n), dtype=np.result_type(m, np.float32))
    for k in range(lower + upper + 1):
        offset = upper - k  # row k holds the diagonal m[j - offset, j]
        out[k] = np.pad(np.diagonal(m, offset), (max(offset, 0), max(-offset, 0)))
    return out


def band_matrix(ab, l_and_u):
    """The n x n matrix stored in `ab` (band_of's transpose)."""
    lower, upper = l_and_u
    n = np.shape(ab)[-1]
    out = np.zeros((n, n), dtype=np.result_type(ab, np.float32))
    for k in range(lower + upper + 1):
        offset = upper - k
        j = np.arange(max(offset, 0), min(n, n + offset))
        out[j - offset, j] = ab[k, j]
    return out


def _helper_spelled(name):
    return Spelling("module", f"sourcegrad.ops.scipy_linalg.{name}")


# Each helper is linear in its array: banded_transpose's transpose is itself with (l, u)
# swapped; band_of and band_matrix are each other's.
defvjp(
    "banded_transpose",
    banded_transpose,
    _helper_spelled("banded_transpose"),
    None,
    lambda g, ans, l_and_u, ab: banded_transpose((l_and_u[1], l_and_u[0]), g),
    linear=(1,),
)
defvjp(
    "band_of",
    band_of,
    _helper_spelled("band_of"),
    lambda g, ans, m, l_and_u: band_matrix(g, l_and_u),
    None,
    linear=(0,),
)
defvjp(
    "band_matrix",
    band_matrix,
    _helper_spelled("band_matrix"),
    lambda g, ans, ab, l_and_u: band_of(g, l_and_u),
    None,
    linear=(0,),
)
# x = solve_banded((l, u), ab, b): A x = b with A stored in ab. bbar solves with A^T (banded
# too, with (u, l)); abar is -bbar x^T on the band (the storage's unused corners get 0).
defvjp(
    "scipy_solve_banded",
    scipy_linalg.solve_banded,
    _spelled("solve_banded"),
    None,
    lambda g, ans, l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True: (
        band_of(
            -np.reshape(
                scipy_linalg.solve_banded(
                    (l_and_u[1], l_and_u[0]), banded_transpose(l_and_u, ab), g
                ),
                (ab.shape[-1], -1),
            )
            @ np.reshape(ans, (ab.shape[-1], -1)).T,
            l_and_u,
        )
    ),
    lambda g, ans, l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True: (
        scipy_linalg.solve_banded((l_and_u[1], l_and_u[0]), banded_transpose(l_and_u, ab), g)
    ),
    jvps=(
        None,
        lambda t, ans, l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True: (
            -scipy_linalg.solve_banded(l_and_u, ab, band_matrix(t, l_and_u) @ ans)
        ),
        lambda t, ans, l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True: (
            scipy_linalg.solve_banded(l_and_u, ab, t)
        ),
    ),
)


# Example inputs for the registry's test grid (ops/examples.py). cho_solve's factor is a
# constant (its gradient there is refused); cho_factor's result is read in its triangle.
_FACTOR = np.linalg.cholesky(np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]))
EXAMPLES = {
    "scipy_solve_triangular": [
        ex(arg(3, 3, domain="lower"), arg(3), lower=True),
        ex(np.triu(_FACTOR.T), arg(3, 2)),
        ex(arg(3, 3, domain="lower"), arg(3, 2), trans=1, lower=True),
    ],
    "scipy_cho_factor": [
        ex(arg(3, 3, domain="spd"), lower=True, loss=("np.tril(out[0])",)),
        ex(arg(3, 3, domain="spd"), loss=("np.triu(out[0])",)),
    ],
    "scipy_cho_solve": [ex((_FACTOR, True), arg(3)), ex((_FACTOR, True), arg(3, 2))],
    "scipy_expm": [ex(arg(3, 3, domain="unit"))],
    "scipy_sqrtm": [ex(arg(3, 3, domain="spd"))],
    "scipy_solve_sylvester": [ex(arg(3, 3, domain="well"), arg(2, 2, domain="well"), arg(3, 2))],
    "scipy_solve_banded": [
        ex((1, 1), arg(3, 5, domain="banded"), arg(5)),
        ex((2, 2), arg(5, 4, domain="banded"), arg(4, 3)),
    ],
    "banded_transpose": [ex((1, 2), arg(4, 5)), ex((2, 0), arg(3, 4))],
    "band_of": [ex(arg(5, 5), (1, 2)), ex(arg(4, 4), (0, 1))],
    "band_matrix": [ex(arg(4, 5), (1, 2)), ex(arg(2, 4), (0, 1))],
}
