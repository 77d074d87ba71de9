"""np.linalg: inv, solve, det, slogdet, cholesky, eigh, eigvalsh, eig, eigvals, svd, pinv,
matrix_power, norm, multi_dot.

Takes nothing; registers one primitive per function (names `linalg_<function>`). The VJPs
are the published matrix derivative results (Giles 2008, "An extended collection of matrix
derivative results"; Murray 2016 for the Cholesky factor; Townsend 2016 for the SVD), written
over the last two axes, so stacks of matrices (numpy's batching) work too. Each has a JVP, so
forward mode and Hessians (forward over reverse) work.

Conventions, as torch and JAX have them:
* cholesky and eigh read one triangle of their input, but their gradients are symmetric
  (the derivative for symmetric perturbations): differentiate functions of symmetric inputs;
* eigh's eigenvector gradient divides by eigenvalue gaps: with repeated eigenvalues it is
  inf/nan (the eigenvectors are not unique there); svd likewise with repeated singular values
  (and zero ones, for the rectangular part);
* eig and eigvals (of a real or complex matrix) give complex results: their rules follow the
  complex convention (ops/complex_values.py), so a real loss of them (np.abs, np.real, ...)
  differentiates, and agrees with torch.linalg.eig's. Each eigenvector is defined up to a
  phase: a loss that depends on the phases (np.real(V)) is refused, as torch refuses it;
  repeated eigenvalues give inf/nan as for eigh (a degenerate eigenspace has no unique basis);
* a function returning a tuple (slogdet, eigh, svd) gets its adjoint as a list with one entry
  per part (zeros for a part the program does not use): `sign, logdet = np.linalg.slogdet(A)`
  and `w, V = np.linalg.eigh(A)` differentiate whichever parts are used.
* complex matrices (torch's convention, ops/complex_values.py): norm (every ord) and svd
  differentiate them, in both modes and to second order; a loss that depends on the phases of
  complex singular vectors is refused, as torch refuses it.
What has no rule (svd with full_matrices=True of a non-square matrix, svd(hermitian=True))
raises NoRuleError when the gradient is made.

Why one module: one registry family (np.linalg), whose rules share the matrix helpers
(solves instead of inverses, the symmetric and tuple-result conventions) written above them.
"""

from __future__ import annotations

import numpy as np

from .. import errors
from ..runtime import is_complex, unbroadcast
from .examples import arg, ex
from .numpy_functions import undiagonal
from .registry import Spelling, defnondiff, defprimitive, defvjp
from .registry import func as _func


def _spelled(name):
    # generated code calls this module's helpers by their full path
    return Spelling("module", f"sourcegrad.ops.numpy_linalg.{name}")


def no_linalg_rule(what):
    """Called by a rule template (with constants, so when the gradient is made) for a variant
    it has no formula for."""
    raise errors.NoRuleError(f"{what} has no derivative rule")


defnondiff("no_linalg_rule", no_linalg_rule, _spelled("no_linalg_rule"))


def gap_inverse(d):
    """F with F[..., i, j] = 1 / (d[..., j] - d[..., i]) off the diagonal and 0 on it: the
    factor eigh's and svd's derivatives divide eigenvector parts by (inf where two of d are
    equal: the vectors are not unique there)."""
    n = d.shape[-1]
    with np.errstate(divide="ignore"):
        return (1.0 - np.eye(n)) / (np.expand_dims(d, -2) - np.expand_dims(d, -1) + np.eye(n))


# dF_ij = -(dd_j - dd_i) F_ij^2, so the VJP sums g F^2 over rows minus over columns.
defvjp(
    "gap_inverse",
    gap_inverse,
    _spelled("gap_inverse"),
    lambda g, ans, d: np.sum(g * ans * ans, axis=-1) - np.sum(g * ans * ans, axis=-2),
    jvps=(lambda t, ans, d: (np.expand_dims(t, -1) - np.expand_dims(t, -2)) * ans * ans,),
)


# Inverse, solve, determinants.
defvjp(
    "linalg_inv",
    np.linalg.inv,
    _func("linalg.inv"),
    lambda g, ans, a: -np.swapaxes(ans, -1, -2) @ g @ np.swapaxes(ans, -1, -2),
    jvps=(lambda t, ans, a: -ans @ t @ ans,),
    shape="linalg",
)
# x = solve(a, b): b is a vector (numpy 2: b.ndim == 1) or a stack of matrices; the adjoint of
# b solves with a transposed (never an inverse), a's is minus that times x transposed.
defvjp(
    "linalg_solve",
    np.linalg.solve,
    _func("linalg.solve"),
    lambda g, ans, a, b: (
        unbroadcast(
            -np.linalg.solve(np.swapaxes(a, -1, -2), np.expand_dims(g, -1))
            * np.expand_dims(ans, -2),
            a,
        )
        if b.ndim == 1
        else unbroadcast(-np.linalg.solve(np.swapaxes(a, -1, -2), g) @ np.swapaxes(ans, -1, -2), a)
    ),
    lambda g, ans, a, b: (
        unbroadcast(
            np.squeeze(np.linalg.solve(np.swapaxes(a, -1, -2), np.expand_dims(g, -1)), -1), b
        )
        if b.ndim == 1
        else unbroadcast(np.linalg.solve(np.swapaxes(a, -1, -2), g), b)
    ),
    jvps=(
        lambda t, ans, a, b: (
            -np.squeeze(np.linalg.solve(a, t @ np.expand_dims(ans, -1)), -1)
            if b.ndim == 1
            else -np.linalg.solve(a, t @ ans)
        ),
        lambda t, ans, a, b: np.linalg.solve(a, t),
    ),
    shape="linalg",
)
defvjp(
    "linalg_det",
    np.linalg.det,
    _func("linalg.det"),
    lambda g, ans, a: np.expand_dims(g * ans, (-1, -2)) * np.swapaxes(np.linalg.inv(a), -1, -2),
    jvps=(
        lambda t, ans, a: ans * np.sum(np.swapaxes(np.linalg.inv(a), -1, -2) * t, axis=(-1, -2)),
    ),
    shape="linalg",
)
# (sign, log|det|): the sign is piecewise constant, so only log|det| carries gradient
defvjp(
    "linalg_slogdet",
    np.linalg.slogdet,
    _func("linalg.slogdet"),
    lambda g, ans, a: np.expand_dims(g[1], (-1, -2)) * np.swapaxes(np.linalg.inv(a), -1, -2),
    jvps=(
        lambda t, ans, a: (
            np.zeros_like(ans[0]),
            np.sum(np.swapaxes(np.linalg.inv(a), -1, -2) * t, axis=(-1, -2)),
        ),
    ),
    shape="linalg",
)

# Factorizations of symmetric matrices. L = cholesky(A): dL = L Phi(L^-1 dA L^-T), Phi taking
# the lower triangle with the diagonal halved; the adjoint is L^-T sym(Phi(L^T Lbar)) L^-1.
# The upper factor U = L^T (upper=True, numpy 2 and torch): the same formulas with L = U^T and
# Lbar = Ubar^T, so the adjoint is U^-1 sym(Phi(U Ubar^T)) U^-T and dU = triu(U^-T dA U^-1)
# with the diagonal halved, times U.
defvjp(
    "linalg_cholesky",
    np.linalg.cholesky,
    _func("linalg.cholesky"),
    lambda g, ans, a, upper=False: (
        np.swapaxes(np.linalg.inv(ans), -1, -2)
        @ (
            (
                np.tril(np.swapaxes(ans, -1, -2) @ g)
                + np.swapaxes(np.tril(np.swapaxes(ans, -1, -2) @ g), -1, -2)
            )
            / (2.0 + 2.0 * np.eye(a.shape[-1]))
        )
        @ np.linalg.inv(ans)
        if not upper
        else np.linalg.inv(ans)
        @ (
            (
                np.tril(ans @ np.swapaxes(g, -1, -2))
                + np.swapaxes(np.tril(ans @ np.swapaxes(g, -1, -2)), -1, -2)
            )
            / (2.0 + 2.0 * np.eye(a.shape[-1]))
        )
        @ np.swapaxes(np.linalg.inv(ans), -1, -2)
    ),
    jvps=(
        lambda t, ans, a, upper=False: (
            ans
            @ (
                np.tril(
                    np.linalg.inv(ans)
                    @ ((t + np.swapaxes(t, -1, -2)) * 0.5)
                    @ np.swapaxes(np.linalg.inv(ans), -1, -2)
                )
                / (1.0 + np.eye(a.shape[-1]))
            )
            if not upper
            else (
                np.triu(
                    np.swapaxes(np.linalg.inv(ans), -1, -2)
                    @ ((t + np.swapaxes(t, -1, -2)) * 0.5)
                    @ np.linalg.inv(ans)
                )
                / (1.0 + np.eye(a.shape[-1]))
            )
            @ ans
        ),
    ),
    shape="linalg",
)
# (w, V) = eigh(A): dw = diag(V^T dA V), dV = V (F o V^T dA V) with F_ij = 1 / (w_j - w_i) off
# the diagonal; the adjoint is V (diag(wbar) + F o (V^T Vbar - Vbar^T V) / 2) V^T (symmetric).
defvjp(
    "linalg_eigh",
    np.linalg.eigh,
    _func("linalg.eigh"),
    lambda g, ans, a, UPLO="L": (
        ans[1]
        @ (
            np.expand_dims(g[0], -1) * np.eye(a.shape[-1])
            + gap_inverse(ans[0])
            * (np.swapaxes(ans[1], -1, -2) @ g[1] - np.swapaxes(g[1], -1, -2) @ ans[1])
            * 0.5
        )
        @ np.swapaxes(ans[1], -1, -2)
    ),
    jvps=(
        lambda t, ans, a, UPLO="L": (
            np.sum(ans[1] * (((t + np.swapaxes(t, -1, -2)) * 0.5) @ ans[1]), axis=-2),
            ans[1]
            @ (
                gap_inverse(ans[0])
                * (np.swapaxes(ans[1], -1, -2) @ ((t + np.swapaxes(t, -1, -2)) * 0.5) @ ans[1])
            ),
        ),
    ),
    shape="linalg",
)
defvjp(
    "linalg_eigvalsh",
    np.linalg.eigvalsh,
    _func("linalg.eigvalsh"),
    # (the eigenvectors of the triangle numpy reads: UPLO="U" of a matrix whose triangles
    # differ gave the gradient of the lower one's eigenvalues)
    lambda g, ans, a, UPLO="L": (
        (np.linalg.eigh(a, UPLO)[1] * np.expand_dims(g, -2))
        @ np.swapaxes(np.linalg.eigh(a, UPLO)[1], -1, -2)
    ),
    jvps=(
        lambda t, ans, a, UPLO="L": np.sum(
            np.linalg.eigh(a, UPLO)[1]
            * (((t + np.swapaxes(t, -1, -2)) * 0.5) @ np.linalg.eigh(a, UPLO)[1]),
            axis=-2,
        ),
    ),
    shape="linalg",
)


def _eig_gaps(w):
    """E with E[..., i, j] = w[..., j] - w[..., i] off the diagonal and 1 on it."""
    eye = np.eye(w.shape[-1], dtype=bool)
    return np.where(eye, 1.0, np.expand_dims(w, -2) - np.expand_dims(w, -1))


def eig_grad(gw, gv, w, v):
    """Adjoint of (w, V) = np.linalg.eig(A) for A, in the rules' convention (the conjugates of
    torch's gradients, in and out: ops/complex_values.py), by torch's formula
    (linalg_eig_backward): with G = V^H Vbar,
        Abar = V^-H (diag(wbar) + (G - V^H V Re(diag G)) / conj(E)) V^H,  E_ij = w_j - w_i,
    the term in Re(diag G) for numpy's unit-norm eigenvectors. Each eigenvector is defined up
    to a phase only: a loss that depends on the phases has no gradient, refused as torch
    refuses it. Repeated eigenvalues divide by zero (inf/nan), as in torch."""
    gw, gv = np.conj(gw), np.conj(gv)
    vh = np.conj(np.swapaxes(v, -1, -2))
    vhgv = vh @ gv
    diag = np.diagonal(vhgv, axis1=-2, axis2=-1)
    if not np.allclose(np.imag(diag), 0.0, rtol=1e-2, atol=1e-2):
        raise errors.NoRuleError(
            "np.linalg.eig: the eigenvectors are specified up to multiplication by e^{i phi}; "
            "the loss depends on this phase, so its gradient is ill-defined (make it depend "
            "on the eigenvectors through phase-invariant quantities such as np.abs)"
        )
    ga = (vhgv - vh @ (v * np.expand_dims(np.real(diag), -2))) / np.conj(_eig_gaps(w))
    ga = np.where(np.eye(w.shape[-1], dtype=bool), np.expand_dims(gw, -2), ga)
    return np.conj(np.linalg.solve(vh, ga @ vh))


def eigvals_grad(gw, a):
    """Adjoint of w = np.linalg.eigvals(A) for A (the rules' convention): V^-H diag(wbar) V^H
    with V the eigenvectors, conjugated."""
    v = np.linalg.eig(a)[1]
    vh = np.conj(np.swapaxes(v, -1, -2))
    return np.conj(np.linalg.solve(vh, np.conj(np.expand_dims(gw, -1)) * vh))


def eig_jvp(t, w, v):
    """Tangents (dw, dV) of (w, V) = np.linalg.eig(A) along dA = t: with P = V^-1 t V,
    dw = diag(P), dV = V (F o P) with F_ij = 1 / (w_j - w_i) off the diagonal and 0 on it,
    less V Re(diag(V^H dV)) (numpy's eigenvectors keep unit norm; their phases are not
    differentiated, see eig_grad)."""
    p = np.linalg.solve(v, t @ v)
    gaps = _eig_gaps(w)
    dv = v @ (np.where(np.eye(w.shape[-1], dtype=bool), 0.0, p / gaps))
    dv = dv - v * np.expand_dims(np.real(np.sum(np.conj(v) * dv, axis=-2)), -2)
    return np.diagonal(p, axis1=-2, axis2=-1), dv


def eigvals_jvp(t, a):
    """Tangent of w = np.linalg.eigvals(A) along dA = t: diag(V^-1 t V)."""
    v = np.linalg.eig(a)[1]
    return np.diagonal(np.linalg.solve(v, t @ v), axis1=-2, axis2=-1)


for _helper in (eig_grad, eigvals_grad, eig_jvp, eigvals_jvp):
    # (their own derivatives are not written: a second derivative through eig raises)
    defprimitive(_helper.__name__, _helper, _spelled(_helper.__name__))
# (w, V) = eig(A), complex in general (numpy gives real arrays where every eigenvalue is real:
# the rules serve both); its rules take complex values (props "complex"), so a real loss of the
# complex results (np.abs, np.real, ...) differentiates, for a real or a complex A.
defvjp(
    "linalg_eig",
    np.linalg.eig,
    _func("linalg.eig"),
    lambda g, ans, a: eig_grad(g[0], g[1], ans[0], ans[1]),
    jvps=(lambda t, ans, a: eig_jvp(t, ans[0], ans[1]),),
    shape="eig",
    props={"complex"},
)
defvjp(
    "linalg_eigvals",
    np.linalg.eigvals,
    _func("linalg.eigvals"),
    lambda g, ans, a: eigvals_grad(g, a),
    jvps=(lambda t, ans, a: eigvals_jvp(t, a),),
    shape="eig",
    props={"complex"},
)


def svd_gauge_checked(gu, u, gvh, vh):
    """gu, once it is checked that the loss does not depend on the phases of a complex SVD's
    singular vectors. Each pair (u_k, v_k) is defined up to one factor e^{i phi}; a loss that
    changes with it has no gradient (torch refuses it so). Invariance is, in the rules'
    convention, Im diag(U^T gU) = Im diag(Vh gVh^T)."""
    if is_complex(u):
        # (values only: under the eager mode's create_graph these are Tensors)
        u, vh, gu_, gvh = (x.detach() if hasattr(x, "detach") else x for x in (u, vh, gu, gvh))
        left = np.imag(np.diagonal(np.swapaxes(u, -1, -2) @ gu_, 0, -2, -1))
        right = np.imag(np.diagonal(vh @ np.swapaxes(gvh, -1, -2), 0, -2, -1))
        scale = max(1.0, float(np.max(np.abs(left), initial=0.0)))
        if not np.allclose(left, right, rtol=0.0, atol=1e-6 * scale):
            raise errors.NoRuleError(
                "np.linalg.svd of a complex matrix: each pair of singular vectors is defined "
                "up to a factor e^{i phi}, and the loss depends on it, so its gradient is "
                "ill-defined (make it depend on U and Vh through phase-invariant quantities "
                "such as np.abs(U), or U @ diag(s) @ Vh)"
            )
    return gu


# (the identity in gu, with the check: its derivatives are the identity)
defvjp(
    "svd_gauge_checked",
    svd_gauge_checked,
    _spelled("svd_gauge_checked"),
    lambda g, ans, gu, u, gvh, vh: g,
    None,
    None,
    None,
    jvps=(lambda t, ans, gu, u, gvh, vh: t, None, None, None),
    props={"complex", "view"},
)

# (U, s, Vh) = svd(A, full_matrices=False), k = min(m, n) singular values. With P = U^T dA V
# and F = gap_inverse(s^2) (Townsend 2016):
#   ds = diag(P), dU = U (F o (P S + S P^T)) + (I - U U^T) dA V / s,
#   dV = V (F o (S P + P^T S)) + (I - V V^T) dA^T U / s;
# the VJP is the transpose of that map. compute_uv=False gives s alone: U diag(sbar) Vh.
# A complex A (torch's convention, ops/complex_values.py): with P = U^H dA V, ds = Re diag(P),
# the transposes become conjugate transposes, and dU gains U diag(i Im diag(P) / s) (the
# choice of phases torch makes). The VJP is then the real formula applied to conj(U), s and
# conj(Vh) (the SVD of conj(A)) plus conj(U) diag(i Im diag(U^T gU) / s) conj(Vh); a loss
# that depends on the singular vectors' phases is refused (`svd_gauge_checked`), as torch
# refuses it.
defvjp(
    "linalg_svd",
    np.linalg.svd,
    _func("linalg.svd"),
    lambda g, ans, a, full_matrices=True, compute_uv=True, hermitian=False: (
        no_linalg_rule("np.linalg.svd(hermitian=True)")
        if hermitian
        else (np.linalg.svd(a, full_matrices=False)[0] * np.expand_dims(g, -2))
        @ np.linalg.svd(a, full_matrices=False)[2]
        if not compute_uv and not is_complex(a)
        else np.conj(
            (np.linalg.svd(a, full_matrices=False)[0] * np.expand_dims(g, -2))
            @ np.linalg.svd(a, full_matrices=False)[2]
        )
        if not compute_uv
        else no_linalg_rule(
            "np.linalg.svd with full_matrices=True of a non-square matrix (pass full_matrices=False)"
        )
        if full_matrices and a.shape[-1] != a.shape[-2]
        else ans[0]
        @ (
            (np.swapaxes(ans[0], -1, -2) @ g[0] - np.swapaxes(g[0], -1, -2) @ ans[0])
            * gap_inverse(ans[1] * ans[1])
            * np.expand_dims(ans[1], -2)
            + np.expand_dims(g[1], -1) * np.eye(ans[1].shape[-1])
            + np.expand_dims(ans[1], -1)
            * (ans[2] @ np.swapaxes(g[2], -1, -2) - g[2] @ np.swapaxes(ans[2], -1, -2))
            * gap_inverse(ans[1] * ans[1])
        )
        @ ans[2]
        + ((g[0] - ans[0] @ (np.swapaxes(ans[0], -1, -2) @ g[0])) / np.expand_dims(ans[1], -2))
        @ ans[2]
        + (ans[0] / np.expand_dims(ans[1], -2))
        @ (g[2] - (g[2] @ np.swapaxes(ans[2], -1, -2)) @ ans[2])
        if not is_complex(a)
        else np.conj(ans[0])
        @ (
            (
                np.swapaxes(ans[0], -1, -2) @ svd_gauge_checked(g[0], ans[0], g[2], ans[2])
                - np.conj(np.swapaxes(svd_gauge_checked(g[0], ans[0], g[2], ans[2]), -1, -2))
                @ np.conj(ans[0])
            )
            * gap_inverse(ans[1] * ans[1])
            * np.expand_dims(ans[1], -2)
            + np.expand_dims(g[1], -1) * np.eye(ans[1].shape[-1])
            + 1j
            * np.imag(
                (np.swapaxes(ans[0], -1, -2) @ svd_gauge_checked(g[0], ans[0], g[2], ans[2]))
                * np.eye(ans[1].shape[-1])
            )
            / np.expand_dims(ans[1], -1)
            + np.expand_dims(ans[1], -1)
            * (
                np.conj(ans[2]) @ np.conj(np.swapaxes(g[2], -1, -2))
                - g[2] @ np.swapaxes(ans[2], -1, -2)
            )
            * gap_inverse(ans[1] * ans[1])
        )
        @ np.conj(ans[2])
        + (
            (
                svd_gauge_checked(g[0], ans[0], g[2], ans[2])
                - np.conj(ans[0])
                @ (np.swapaxes(ans[0], -1, -2) @ svd_gauge_checked(g[0], ans[0], g[2], ans[2]))
            )
            / np.expand_dims(ans[1], -2)
        )
        @ np.conj(ans[2])
        + (np.conj(ans[0]) / np.expand_dims(ans[1], -2))
        @ (g[2] - (g[2] @ np.swapaxes(ans[2], -1, -2)) @ np.conj(ans[2]))
    ),
    jvps=(
        lambda t, ans, a, full_matrices=True, compute_uv=True, hermitian=False: (
            no_linalg_rule("np.linalg.svd(hermitian=True)")
            if hermitian
            else np.sum(
                (np.swapaxes(np.linalg.svd(a, full_matrices=False)[0], -1, -2) @ t)
                * np.linalg.svd(a, full_matrices=False)[2],
                axis=-1,
            )
            if not compute_uv and not is_complex(a)
            else np.real(
                np.sum(
                    (np.conj(np.swapaxes(np.linalg.svd(a, full_matrices=False)[0], -1, -2)) @ t)
                    * np.conj(np.linalg.svd(a, full_matrices=False)[2]),
                    axis=-1,
                )
            )
            if not compute_uv
            else no_linalg_rule(
                "np.linalg.svd with full_matrices=True of a non-square matrix (pass full_matrices=False)"
            )
            if full_matrices and a.shape[-1] != a.shape[-2]
            else (
                ans[0]
                @ (
                    gap_inverse(ans[1] * ans[1])
                    * (
                        (np.swapaxes(ans[0], -1, -2) @ t @ np.swapaxes(ans[2], -1, -2))
                        * np.expand_dims(ans[1], -2)
                        + np.expand_dims(ans[1], -1)
                        * np.swapaxes(
                            np.swapaxes(ans[0], -1, -2) @ t @ np.swapaxes(ans[2], -1, -2), -1, -2
                        )
                    )
                )
                + (
                    t @ np.swapaxes(ans[2], -1, -2)
                    - ans[0] @ (np.swapaxes(ans[0], -1, -2) @ t @ np.swapaxes(ans[2], -1, -2))
                )
                / np.expand_dims(ans[1], -2),
                np.sum((np.swapaxes(ans[0], -1, -2) @ t) * ans[2], axis=-1),
                np.swapaxes(
                    gap_inverse(ans[1] * ans[1])
                    * (
                        np.expand_dims(ans[1], -1)
                        * (np.swapaxes(ans[0], -1, -2) @ t @ np.swapaxes(ans[2], -1, -2))
                        + np.swapaxes(
                            np.swapaxes(ans[0], -1, -2) @ t @ np.swapaxes(ans[2], -1, -2), -1, -2
                        )
                        * np.expand_dims(ans[1], -2)
                    ),
                    -1,
                    -2,
                )
                @ ans[2]
                + np.expand_dims(1.0 / ans[1], -1)
                * (
                    np.swapaxes(ans[0], -1, -2) @ t
                    - (np.swapaxes(ans[0], -1, -2) @ t @ np.swapaxes(ans[2], -1, -2)) @ ans[2]
                ),
            )
            if not is_complex(a)
            else (
                ans[0]
                @ (
                    gap_inverse(ans[1] * ans[1])
                    * (
                        (
                            np.conj(np.swapaxes(ans[0], -1, -2))
                            @ t
                            @ np.conj(np.swapaxes(ans[2], -1, -2))
                        )
                        * np.expand_dims(ans[1], -2)
                        + np.expand_dims(ans[1], -1)
                        * np.conj(
                            np.swapaxes(
                                np.conj(np.swapaxes(ans[0], -1, -2))
                                @ t
                                @ np.conj(np.swapaxes(ans[2], -1, -2)),
                                -1,
                                -2,
                            )
                        )
                    )
                    + 1j
                    * np.imag(
                        (
                            np.conj(np.swapaxes(ans[0], -1, -2))
                            @ t
                            @ np.conj(np.swapaxes(ans[2], -1, -2))
                        )
                        * np.eye(ans[1].shape[-1])
                    )
                    / np.expand_dims(ans[1], -1)
                )
                + (
                    t @ np.conj(np.swapaxes(ans[2], -1, -2))
                    - ans[0]
                    @ (
                        np.conj(np.swapaxes(ans[0], -1, -2))
                        @ t
                        @ np.conj(np.swapaxes(ans[2], -1, -2))
                    )
                )
                / np.expand_dims(ans[1], -2),
                np.real(
                    np.sum((np.conj(np.swapaxes(ans[0], -1, -2)) @ t) * np.conj(ans[2]), axis=-1)
                ),
                np.conj(
                    np.swapaxes(
                        gap_inverse(ans[1] * ans[1])
                        * (
                            np.expand_dims(ans[1], -1)
                            * (
                                np.conj(np.swapaxes(ans[0], -1, -2))
                                @ t
                                @ np.conj(np.swapaxes(ans[2], -1, -2))
                            )
                            + np.conj(
                                np.swapaxes(
                                    np.conj(np.swapaxes(ans[0], -1, -2))
                                    @ t
                                    @ np.conj(np.swapaxes(ans[2], -1, -2)),
                                    -1,
                                    -2,
                                )
                            )
                            * np.expand_dims(ans[1], -2)
                        ),
                        -1,
                        -2,
                    )
                )
                @ ans[2]
                + np.expand_dims(1.0 / ans[1], -1)
                * (
                    np.conj(np.swapaxes(ans[0], -1, -2)) @ t
                    - (
                        np.conj(np.swapaxes(ans[0], -1, -2))
                        @ t
                        @ np.conj(np.swapaxes(ans[2], -1, -2))
                    )
                    @ ans[2]
                ),
            )
        ),
    ),
    shape="linalg",
    props={"complex"},
)

# P = pinv(A), for A of constant rank (Golub and Pereyra 1973):
#   dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P.
defvjp(
    "linalg_pinv",
    np.linalg.pinv,
    _func("linalg.pinv"),
    lambda g, ans, a, rcond=None, hermitian=False: (
        -np.swapaxes(ans, -1, -2) @ g @ np.swapaxes(ans, -1, -2)
        + (np.swapaxes(g, -1, -2) - a @ (ans @ np.swapaxes(g, -1, -2)))
        @ (ans @ np.swapaxes(ans, -1, -2))
        + (np.swapaxes(ans, -1, -2) @ ans)
        @ (np.swapaxes(g, -1, -2) - (np.swapaxes(g, -1, -2) @ ans) @ a)
    ),
    jvps=(
        lambda t, ans, a, rcond=None, hermitian=False: (
            -ans @ t @ ans
            + (ans @ np.swapaxes(ans, -1, -2))
            @ (np.swapaxes(t, -1, -2) - (np.swapaxes(t, -1, -2) @ a) @ ans)
            + (np.swapaxes(t, -1, -2) - ans @ (a @ np.swapaxes(t, -1, -2)))
            @ (np.swapaxes(ans, -1, -2) @ ans)
        ),
    ),
    shape="linalg",
)
# matrix_power(A, n) = A^n: its derivative sum_k A^k dA A^(n-1-k) is the upper right block of
# [[A, dA], [0, A]]^n, and the VJP the same block of [[A^T, G], [0, A^T]]^n. A negative n is
# the power -n of inv(A) (as numpy computes it): the chain rule through inv.
defvjp(
    "linalg_matrix_power",
    np.linalg.matrix_power,
    _func("linalg.matrix_power"),
    lambda g, ans, a, n: (
        np.linalg.matrix_power(
            np.concatenate(
                [
                    np.concatenate([np.swapaxes(a, -1, -2), g], axis=-1),
                    np.concatenate([np.zeros_like(a), np.swapaxes(a, -1, -2)], axis=-1),
                ],
                axis=-2,
            ),
            n,
        )[..., : a.shape[-1], a.shape[-1] :]
        if n >= 0
        else -np.swapaxes(np.linalg.inv(a), -1, -2)
        @ np.linalg.matrix_power(
            np.concatenate(
                [
                    np.concatenate([np.swapaxes(np.linalg.inv(a), -1, -2), g], axis=-1),
                    np.concatenate(
                        [np.zeros_like(a), np.swapaxes(np.linalg.inv(a), -1, -2)], axis=-1
                    ),
                ],
                axis=-2,
            ),
            -n,
        )[..., : a.shape[-1], a.shape[-1] :]
        @ np.swapaxes(np.linalg.inv(a), -1, -2)
    ),
    None,
    jvps=(
        lambda t, ans, a, n: (
            np.linalg.matrix_power(
                np.concatenate(
                    [
                        np.concatenate([a, t], axis=-1),
                        np.concatenate([np.zeros_like(a), a], axis=-1),
                    ],
                    axis=-2,
                ),
                n,
            )[..., : a.shape[-1], a.shape[-1] :]
            if n >= 0
            else np.linalg.matrix_power(
                np.concatenate(
                    [
                        np.concatenate(
                            [np.linalg.inv(a), -np.linalg.inv(a) @ t @ np.linalg.inv(a)], axis=-1
                        ),
                        np.concatenate([np.zeros_like(a), np.linalg.inv(a)], axis=-1),
                    ],
                    axis=-2,
                ),
                -n,
            )[..., : a.shape[-1], a.shape[-1] :]
        ),
    ),
    shape="linalg",
)


def norm_kind(ndim, ord, axis):  # noqa: A002 - numpy's parameter name
    """Which formula np.linalg.norm(x, ord, axis) differentiates by. Vector norms: "2"
    (Euclidean, and the Frobenius norm of a matrix), "1", "inf" (and -inf), "0", "p" (other
    ords). Matrix norms: "nuc" (the sum of the singular values), "spectral" (ord 2 and -2: the
    largest and the smallest singular value), "columns" (ord 1 and -1: the largest and the
    smallest sum of magnitudes down a column), "rows" (inf and -inf: along a row). Decided
    when the gradient is made."""
    matrix = (axis is None and ndim == 2) or (isinstance(axis, tuple) and len(axis) == 2)
    if ord is None or (ord == "fro" and matrix) or (ord == 2 and not matrix):
        return "2"
    if matrix:
        return {"nuc": "nuc", 2: "spectral", -2: "spectral", 1: "columns", -1: "columns"}.get(
            ord, "rows"
        )
    return {1: "1", np.inf: "inf", -np.inf: "inf", 0: "0"}.get(ord, "p")


def norm_axes(ndim, axis):
    """The (row, column) axes of a matrix norm's matrices, non-negative."""
    return (0, 1) if axis is None else tuple(a % ndim for a in axis)


def norm_last(ndim, axis):
    """Are a matrix norm's axes the last two (so its matrices need not be moved there)?"""
    return norm_axes(ndim, axis) == (ndim - 2, ndim - 1)


def norm_pick(ord):  # noqa: A002
    """The singular vectors a spectral norm's gradient takes: of the largest singular value
    (ord 2, the first) or of the smallest (ord -2, the last)."""
    return slice(None, 1) if ord == 2 else slice(-1, None)


def norm_ties(sums, ord, axis):  # noqa: A002
    """The weights of the column (or row) sums of magnitudes a matrix norm of ord 1, -1, inf
    or -inf takes: 1 / (number of ties) at the largest (ord > 0) or smallest sum along
    `axis`, 0 elsewhere (piecewise constant: no gradient of its own)."""
    extreme = np.max(sums, axis=axis, keepdims=True) if ord > 0 else np.min(sums, axis, None, True)
    hits = sums == extreme
    return hits / np.sum(hits, axis=axis, keepdims=True)


def norm_matrices(x, axis):
    """x with a matrix norm's two axes moved last (x itself where they are last)."""
    rows, columns = norm_axes(np.ndim(x), axis)
    if (rows, columns) == (np.ndim(x) - 2, np.ndim(x) - 1):
        return x
    return np.moveaxis(x, (rows, columns), (-2, -1))


def norm_unmatrices(h, ndim, axis):
    """norm_matrices undone: h's last two axes moved back to a matrix norm's axes."""
    rows, columns = norm_axes(ndim, axis)
    if (rows, columns) == (ndim - 2, ndim - 1):
        return h
    return np.moveaxis(h, (-2, -1), (rows, columns))


for _helper in (norm_kind, norm_axes, norm_last, norm_pick, norm_ties):
    defnondiff(_helper.__name__, _helper, _spelled(_helper.__name__))
# each is a view of the other's transpose: linear, and its VJP is the other
defvjp(
    "norm_matrices",
    norm_matrices,
    _spelled("norm_matrices"),
    lambda g, ans, x, axis: norm_unmatrices(g, x.ndim, axis),
    None,
    linear=(0,),
    props={"view", "complex"},
)
defvjp(
    "norm_unmatrices",
    norm_unmatrices,
    _spelled("norm_unmatrices"),
    lambda g, ans, h, ndim, axis: norm_matrices(g, axis),
    None,
    None,
    linear=(0,),
    props={"view", "complex"},
)
# The vector norms' gradients (a tie of the largest magnitudes shares the inf-norm's gradient,
# as torch does); the Frobenius norm is the 2-norm of the flattened axes. The matrix norms',
# their matrices M moved last: the nuclear norm's is U Vh, the spectral norm's u v^T of the
# singular vectors of the largest (ord 2) or the smallest (-2) singular value; ord 1 and -1
# give sign(M) on the column whose sum of magnitudes is the largest or smallest (ties share
# it), inf and -inf the same along rows. At x = 0 the 2-norm's gradient is nan (not
# differentiable there).
# Complex x, in torch's convention (ops/complex_values.py): the rules give the conjugate of
# torch's gradient: conj(x) / norm for the 2-norm, conj(x / |x|) in place of sign(x) (numpy's
# sign of a complex number is x / |x|), conj(U Vh) and conj(u v^H) for the matrix norms; the
# JVP is the real part of the sum of that times the tangent.
defvjp(
    "linalg_norm",
    np.linalg.norm,
    _func("linalg.norm"),
    lambda g, ans, x, ord=None, axis=None, keepdims=False: (
        (g if keepdims or axis is None else np.expand_dims(g, axis))
        * (np.conj(x) if is_complex(x) else x)
        / (ans if keepdims or axis is None else np.expand_dims(ans, axis))
        if norm_kind(x.ndim, ord, axis) == "2"
        else (g if keepdims or axis is None else np.expand_dims(g, axis))
        * (np.conj(x) / np.where(x == 0.0, 1.0, np.abs(x)) if is_complex(x) else np.sign(x))
        if norm_kind(x.ndim, ord, axis) == "1"
        else (g if keepdims or axis is None else np.expand_dims(g, axis))
        * (np.conj(x) / np.where(x == 0.0, 1.0, np.abs(x)) if is_complex(x) else np.sign(x))
        * (np.abs(x) == (ans if keepdims or axis is None else np.expand_dims(ans, axis)))
        / np.sum(
            np.abs(x) == (ans if keepdims or axis is None else np.expand_dims(ans, axis)),
            axis=axis,
            keepdims=True,
        )
        if norm_kind(x.ndim, ord, axis) == "inf"
        else np.zeros_like(x)
        if norm_kind(x.ndim, ord, axis) == "0"
        else (g if keepdims or axis is None else np.expand_dims(g, axis))
        * (np.conj(x) / np.where(x == 0.0, 1.0, np.abs(x)) if is_complex(x) else np.sign(x))
        * np.abs(x) ** (ord - 1)
        / (ans if keepdims or axis is None else np.expand_dims(ans, axis)) ** (ord - 1)
        if norm_kind(x.ndim, ord, axis) == "p"
        else (g if keepdims or axis is None else np.expand_dims(g, axis))
        * (
            np.linalg.svd((np.conj(x) if is_complex(x) else x), full_matrices=False)[0]
            @ np.linalg.svd((np.conj(x) if is_complex(x) else x), full_matrices=False)[2]
            if norm_kind(x.ndim, ord, axis) == "nuc" and norm_last(x.ndim, axis)
            else norm_unmatrices(
                np.linalg.svd(
                    norm_matrices((np.conj(x) if is_complex(x) else x), axis), full_matrices=False
                )[0]
                @ np.linalg.svd(
                    norm_matrices((np.conj(x) if is_complex(x) else x), axis), full_matrices=False
                )[2],
                x.ndim,
                axis,
            )
            if norm_kind(x.ndim, ord, axis) == "nuc"
            else np.linalg.svd((np.conj(x) if is_complex(x) else x), full_matrices=False)[0][
                ..., :, norm_pick(ord)
            ]
            @ np.linalg.svd((np.conj(x) if is_complex(x) else x), full_matrices=False)[2][
                ..., norm_pick(ord), :
            ]
            if norm_kind(x.ndim, ord, axis) == "spectral" and norm_last(x.ndim, axis)
            else norm_unmatrices(
                np.linalg.svd(
                    norm_matrices((np.conj(x) if is_complex(x) else x), axis), full_matrices=False
                )[0][..., :, norm_pick(ord)]
                @ np.linalg.svd(
                    norm_matrices((np.conj(x) if is_complex(x) else x), axis), full_matrices=False
                )[2][..., norm_pick(ord), :],
                x.ndim,
                axis,
            )
            if norm_kind(x.ndim, ord, axis) == "spectral"
            else (np.conj(x) / np.where(x == 0.0, 1.0, np.abs(x)) if is_complex(x) else np.sign(x))
            * norm_ties(
                np.sum(np.abs(x), axis=norm_axes(x.ndim, axis)[0], keepdims=True),
                ord,
                norm_axes(x.ndim, axis)[1],
            )
            if norm_kind(x.ndim, ord, axis) == "columns"
            else (np.conj(x) / np.where(x == 0.0, 1.0, np.abs(x)) if is_complex(x) else np.sign(x))
            * norm_ties(
                np.sum(np.abs(x), axis=norm_axes(x.ndim, axis)[1], keepdims=True),
                ord,
                norm_axes(x.ndim, axis)[0],
            )
        )
    ),
    jvps=(
        lambda t, ans, x, ord=None, axis=None, keepdims=False: (
            np.zeros_like(ans)
            if norm_kind(x.ndim, ord, axis) == "0"
            else np.sum(x * t, axis=axis, keepdims=keepdims) / ans
            if norm_kind(x.ndim, ord, axis) == "2" and not is_complex(x)
            else np.real(np.sum(np.conj(x) * t, axis=axis, keepdims=keepdims)) / ans
            if norm_kind(x.ndim, ord, axis) == "2"
            else np.sum(np.sign(x) * t, axis=axis, keepdims=keepdims)
            if norm_kind(x.ndim, ord, axis) == "1" and not is_complex(x)
            else np.real(
                np.sum(
                    (np.conj(x) / np.where(x == 0.0, 1.0, np.abs(x))) * t,
                    axis=axis,
                    keepdims=keepdims,
                )
            )
            if norm_kind(x.ndim, ord, axis) == "1"
            else np.sum(
                np.sign(x)
                * (np.abs(x) == (ans if keepdims or axis is None else np.expand_dims(ans, axis)))
                * t,
                axis=axis,
                keepdims=keepdims,
            )
            / np.sum(
                np.abs(x) == (ans if keepdims or axis is None else np.expand_dims(ans, axis)),
                axis=axis,
                keepdims=keepdims,
            )
            if norm_kind(x.ndim, ord, axis) == "inf" and not is_complex(x)
            else np.real(
                np.sum(
                    (np.conj(x) / np.where(x == 0.0, 1.0, np.abs(x)))
                    * (
                        np.abs(x)
                        == (ans if keepdims or axis is None else np.expand_dims(ans, axis))
                    )
                    * t,
                    axis=axis,
                    keepdims=keepdims,
                )
            )
            / np.sum(
                np.abs(x) == (ans if keepdims or axis is None else np.expand_dims(ans, axis)),
                axis=axis,
                keepdims=keepdims,
            )
            if norm_kind(x.ndim, ord, axis) == "inf"
            else np.sum(np.sign(x) * np.abs(x) ** (ord - 1) * t, axis=axis, keepdims=keepdims)
            / ans ** (ord - 1)
            if norm_kind(x.ndim, ord, axis) == "p" and not is_complex(x)
            else np.real(
                np.sum(
                    (np.conj(x) / np.where(x == 0.0, 1.0, np.abs(x))) * np.abs(x) ** (ord - 1) * t,
                    axis=axis,
                    keepdims=keepdims,
                )
            )
            / ans ** (ord - 1)
            if norm_kind(x.ndim, ord, axis) == "p"
            else np.sum(
                (
                    np.linalg.svd(x, full_matrices=False)[0]
                    @ np.linalg.svd(x, full_matrices=False)[2]
                    if norm_kind(x.ndim, ord, axis) == "nuc" and norm_last(x.ndim, axis)
                    else norm_unmatrices(
                        np.linalg.svd(norm_matrices(x, axis), full_matrices=False)[0]
                        @ np.linalg.svd(norm_matrices(x, axis), full_matrices=False)[2],
                        x.ndim,
                        axis,
                    )
                    if norm_kind(x.ndim, ord, axis) == "nuc"
                    else np.linalg.svd(x, full_matrices=False)[0][..., :, norm_pick(ord)]
                    @ np.linalg.svd(x, full_matrices=False)[2][..., norm_pick(ord), :]
                    if norm_kind(x.ndim, ord, axis) == "spectral" and norm_last(x.ndim, axis)
                    else norm_unmatrices(
                        np.linalg.svd(norm_matrices(x, axis), full_matrices=False)[0][
                            ..., :, norm_pick(ord)
                        ]
                        @ np.linalg.svd(norm_matrices(x, axis), full_matrices=False)[2][
                            ..., norm_pick(ord), :
                        ],
                        x.ndim,
                        axis,
                    )
                    if norm_kind(x.ndim, ord, axis) == "spectral"
                    else np.sign(x)
                    * norm_ties(
                        np.sum(np.abs(x), axis=norm_axes(x.ndim, axis)[0], keepdims=True),
                        ord,
                        norm_axes(x.ndim, axis)[1],
                    )
                    if norm_kind(x.ndim, ord, axis) == "columns"
                    else np.sign(x)
                    * norm_ties(
                        np.sum(np.abs(x), axis=norm_axes(x.ndim, axis)[1], keepdims=True),
                        ord,
                        norm_axes(x.ndim, axis)[0],
                    )
                )
                * t,
                axis=norm_axes(x.ndim, axis),
                keepdims=keepdims,
            )
            if not is_complex(x)
            else np.real(
                np.sum(
                    (
                        np.linalg.svd(np.conj(x), full_matrices=False)[0]
                        @ np.linalg.svd(np.conj(x), full_matrices=False)[2]
                        if norm_kind(x.ndim, ord, axis) == "nuc" and norm_last(x.ndim, axis)
                        else norm_unmatrices(
                            np.linalg.svd(norm_matrices(np.conj(x), axis), full_matrices=False)[0]
                            @ np.linalg.svd(norm_matrices(np.conj(x), axis), full_matrices=False)[
                                2
                            ],
                            x.ndim,
                            axis,
                        )
                        if norm_kind(x.ndim, ord, axis) == "nuc"
                        else np.linalg.svd(np.conj(x), full_matrices=False)[0][
                            ..., :, norm_pick(ord)
                        ]
                        @ np.linalg.svd(np.conj(x), full_matrices=False)[2][..., norm_pick(ord), :]
                        if norm_kind(x.ndim, ord, axis) == "spectral" and norm_last(x.ndim, axis)
                        else norm_unmatrices(
                            np.linalg.svd(norm_matrices(np.conj(x), axis), full_matrices=False)[0][
                                ..., :, norm_pick(ord)
                            ]
                            @ np.linalg.svd(norm_matrices(np.conj(x), axis), full_matrices=False)[
                                2
                            ][..., norm_pick(ord), :],
                            x.ndim,
                            axis,
                        )
                        if norm_kind(x.ndim, ord, axis) == "spectral"
                        else (np.conj(x) / np.where(x == 0.0, 1.0, np.abs(x)))
                        * norm_ties(
                            np.sum(np.abs(x), axis=norm_axes(x.ndim, axis)[0], keepdims=True),
                            ord,
                            norm_axes(x.ndim, axis)[1],
                        )
                        if norm_kind(x.ndim, ord, axis) == "columns"
                        else (np.conj(x) / np.where(x == 0.0, 1.0, np.abs(x)))
                        * norm_ties(
                            np.sum(np.abs(x), axis=norm_axes(x.ndim, axis)[1], keepdims=True),
                            ord,
                            norm_axes(x.ndim, axis)[0],
                        )
                    )
                    * t,
                    axis=norm_axes(x.ndim, axis),
                    keepdims=keepdims,
                )
            )
        ),
    ),
    props={"complex"},
)


def qr_differentiable(m, n, mode):
    """Does the qr rule below cover np.linalg.qr(mode) of an m x n matrix (Q and R, m >= n)?"""
    return m >= n and (mode == "reduced" or (mode == "complete" and m == n))


defnondiff("qr_differentiable", qr_differentiable, _spelled("qr_differentiable"))
# (Q, R) = qr(A), reduced, A m x n with m >= n and full rank. With C = Q^T dA R^-1 and
# O = tril(C, -1) - tril(C, -1)^T: dQ = Q (O - C) + dA R^-1, dR = (C - O) R. Transposed, with
# M = Q^T Qbar - Rbar R^T and N = tril(M - M^T, -1) - M: Abar = (Qbar + Q N) R^-T.
defvjp(
    "linalg_qr",
    np.linalg.qr,
    _func("linalg.qr"),
    lambda g, ans, a, mode="reduced": (
        no_linalg_rule(
            "np.linalg.qr of a matrix with more columns than rows, or with mode 'r' or 'raw'"
        )
        if not qr_differentiable(a.shape[-2], a.shape[-1], mode)
        else (
            g[0]
            + ans[0]
            @ (
                np.tril(
                    np.swapaxes(ans[0], -1, -2) @ g[0]
                    - g[1] @ np.swapaxes(ans[1], -1, -2)
                    - np.swapaxes(
                        np.swapaxes(ans[0], -1, -2) @ g[0] - g[1] @ np.swapaxes(ans[1], -1, -2),
                        -1,
                        -2,
                    ),
                    -1,
                )
                - (np.swapaxes(ans[0], -1, -2) @ g[0] - g[1] @ np.swapaxes(ans[1], -1, -2))
            )
        )
        @ np.swapaxes(np.linalg.inv(ans[1]), -1, -2)
    ),
    jvps=(
        lambda t, ans, a, mode="reduced": (
            no_linalg_rule(
                "np.linalg.qr of a matrix with more columns than rows, or with mode 'r' or 'raw'"
            )
            if not qr_differentiable(a.shape[-2], a.shape[-1], mode)
            else (
                ans[0]
                @ (
                    np.tril(np.swapaxes(ans[0], -1, -2) @ t @ np.linalg.inv(ans[1]), -1)
                    - np.swapaxes(
                        np.tril(np.swapaxes(ans[0], -1, -2) @ t @ np.linalg.inv(ans[1]), -1), -1, -2
                    )
                    - np.swapaxes(ans[0], -1, -2) @ t @ np.linalg.inv(ans[1])
                )
                + t @ np.linalg.inv(ans[1]),
                (
                    np.swapaxes(ans[0], -1, -2) @ t @ np.linalg.inv(ans[1])
                    - np.tril(np.swapaxes(ans[0], -1, -2) @ t @ np.linalg.inv(ans[1]), -1)
                    + np.swapaxes(
                        np.tril(np.swapaxes(ans[0], -1, -2) @ t @ np.linalg.inv(ans[1]), -1), -1, -2
                    )
                )
                @ ans[1],
            )
        ),
    ),
    shape="linalg",
)

# (x, residuals, rank, s) = lstsq(a, b), a m x n of full column rank with m >= n (numpy: a
# single matrix; b a vector or a matrix). With r = b - a x and z = (a^T a)^-1 xbar (a solve),
# w = a z: abar = -w x^T + r z^T, bbar = w (Golub and Pereyra's derivative of the
# pseudo-inverse); the residuals (m > n) add -2 r rbar x^T and 2 r rbar, the singular values
# U diag(sbar) Vh. A wide matrix (the minimum-norm solution) has no rule here.
defvjp(
    "linalg_lstsq",
    np.linalg.lstsq,
    _func("linalg.lstsq"),
    lambda g, ans, a, b, rcond=None: (
        no_linalg_rule("np.linalg.lstsq of a matrix with more columns than rows")
        if a.shape[-2] < a.shape[-1]
        else -(a @ np.linalg.solve(a.T @ a, np.reshape(g[0], (a.shape[-1], -1))))
        @ np.reshape(ans[0], (a.shape[-1], -1)).T
        + (np.reshape(b, (a.shape[-2], -1)) - a @ np.reshape(ans[0], (a.shape[-1], -1)))
        @ np.linalg.solve(a.T @ a, np.reshape(g[0], (a.shape[-1], -1))).T
        + (np.linalg.svd(a, full_matrices=False)[0] * g[3])
        @ np.linalg.svd(a, full_matrices=False)[2]
        + (
            -2.0
            * (
                (np.reshape(b, (a.shape[-2], -1)) - a @ np.reshape(ans[0], (a.shape[-1], -1)))
                * np.reshape(g[1], (1, -1))
            )
            @ np.reshape(ans[0], (a.shape[-1], -1)).T
            if a.shape[-2] > a.shape[-1]
            else 0.0
        )
    ),
    lambda g, ans, a, b, rcond=None: (
        no_linalg_rule("np.linalg.lstsq of a matrix with more columns than rows")
        if a.shape[-2] < a.shape[-1]
        else np.reshape(
            a @ np.linalg.solve(a.T @ a, np.reshape(g[0], (a.shape[-1], -1)))
            + (
                2.0
                * (np.reshape(b, (a.shape[-2], -1)) - a @ np.reshape(ans[0], (a.shape[-1], -1)))
                * np.reshape(g[1], (1, -1))
                if a.shape[-2] > a.shape[-1]
                else 0.0
            ),
            np.shape(b),
        )
    ),
    jvps=(
        lambda t, ans, a, b, rcond=None: (
            no_linalg_rule("np.linalg.lstsq of a matrix with more columns than rows")
            if a.shape[-2] < a.shape[-1]
            else (
                np.linalg.solve(a.T @ a, t.T @ (b - a @ ans[0]) - a.T @ (t @ ans[0])),
                -2.0 * np.sum((b - a @ ans[0]) * (t @ ans[0]), axis=0, keepdims=b.ndim == 1)
                if a.shape[-2] > a.shape[-1]
                else np.zeros_like(ans[1]),
                np.zeros_like(ans[2]),
                np.sum(
                    (np.linalg.svd(a, full_matrices=False)[0].T @ t)
                    * np.linalg.svd(a, full_matrices=False)[2],
                    axis=-1,
                ),
            )
        ),
        lambda t, ans, a, b, rcond=None: (
            no_linalg_rule("np.linalg.lstsq of a matrix with more columns than rows")
            if a.shape[-2] < a.shape[-1]
            else (
                np.linalg.solve(a.T @ a, a.T @ t),
                2.0 * np.sum((b - a @ ans[0]) * t, axis=0, keepdims=b.ndim == 1)
                if a.shape[-2] > a.shape[-1]
                else np.zeros_like(ans[1]),
                np.zeros_like(ans[2]),
                np.zeros_like(ans[3]),
            )
        ),
    ),
    shape="linalg",
)

# numpy 2's array-API functions of np.linalg, over the last two axes (vecdot over `axis`).
if hasattr(np.linalg, "vecdot"):
    defvjp(
        "linalg_trace",
        np.linalg.trace,
        _func("linalg.trace"),
        lambda g, ans, x, offset=0, dtype=None: undiagonal(
            np.expand_dims(g, -1), x, offset, -2, -1
        ),
        linear="joint",
    )
    defvjp(
        "linalg_diagonal",
        np.linalg.diagonal,
        _func("linalg.diagonal"),
        lambda g, ans, x, offset=0: undiagonal(g, x, offset, -2, -1),
        linear="joint",
        props={"view", "readonly"},
    )
    defvjp(
        "linalg_matrix_transpose",
        np.linalg.matrix_transpose,
        _func("linalg.matrix_transpose"),
        lambda g, ans, x: np.swapaxes(g, -1, -2),
        linear="joint",
        props={"view"},
    )
    defvjp(
        "linalg_vecdot",
        np.linalg.vecdot,
        _func("linalg.vecdot"),
        lambda g, ans, x1, x2, axis=-1: unbroadcast(np.expand_dims(g, axis) * x2, x1),
        lambda g, ans, x1, x2, axis=-1: unbroadcast(np.expand_dims(g, axis) * x1, x2),
        linear="multi",
    )
    defvjp(
        "linalg_outer",
        np.linalg.outer,
        _func("linalg.outer"),
        lambda g, ans, x1, x2: g @ x2,
        lambda g, ans, x1, x2: x1 @ g,
        linear="multi",
    )


def multi_dot_grad(g, arrays, argnum):
    """Adjoint of np.linalg.multi_dot(arrays) for arrays[argnum]: the product of the arrays to
    its left, transposed, times g times the product of those to its right, transposed (a 1-d
    first array is a row, a 1-d last one a column, as multi_dot reads them)."""
    mats = [np.asarray(a) for a in arrays]
    if mats[0].ndim == 1:
        mats[0] = mats[0][None, :]
    if mats[-1].ndim == 1:
        mats[-1] = mats[-1][:, None]
    grad = np.reshape(g, (mats[0].shape[0], mats[-1].shape[1]))
    if argnum > 0:
        left = mats[0]
        for m in mats[1:argnum]:
            left = left @ m
        grad = left.T @ grad
    if argnum < len(mats) - 1:
        right = mats[argnum + 1]
        for m in mats[argnum + 2 :]:
            right = right @ m
        grad = grad @ right.T
    return np.reshape(grad, np.shape(arrays[argnum]))


def _replaced(arrays, part, value):
    return tuple(value if i == part else a for i, a in enumerate(arrays))


def multi_dot_with(arrays, part, value):
    """multi_dot(arrays) with arrays[part] replaced by `value`: the adjoint of
    multi_dot_grad(h, arrays, part) for h (multi_dot_grad is linear in h, and <g,
    multi_dot_grad(h, arrays, part)> is <h, multi_dot(arrays with g in place part)>)."""
    return np.linalg.multi_dot(_replaced(arrays, part, value))


def multi_dot_grad_operands(g, h, arrays, part):
    """Adjoint of multi_dot_grad(h, arrays, part) for `arrays`, a list: the form <h,
    multi_dot(arrays with g in place part)> differentiated in each other array (array `part`
    itself is read for its shape only: a zero)."""
    replaced = _replaced(arrays, part, g)
    return [
        np.zeros_like(a) if i == part else multi_dot_grad(h, replaced, i)
        for i, a in enumerate(arrays)
    ]


def multi_dot_grad_jvp(h, arrays, tangents, part):
    """Forward-mode rule of multi_dot_grad(h, arrays, part) for `arrays`: linear in each array
    but `part` separately, so the sum over those of multi_dot_grad with one tangent in place."""
    total = np.zeros_like(arrays[part])
    for i, t in enumerate(tangents):
        if i != part:
            total = total + multi_dot_grad(h, _replaced(arrays, i, t), part)
    return total


# multi_dot_grad(h, arrays, part): its derivatives for second order (reverse over reverse
# and forward over reverse), as einsum_grad's (ops/program.py)
defvjp(
    "multi_dot_grad",
    multi_dot_grad,
    _spelled("multi_dot_grad"),
    lambda g, ans, h, arrays, part: multi_dot_with(arrays, part, g),
    lambda g, ans, h, arrays, part: multi_dot_grad_operands(g, h, arrays, part),
    None,
    jvps=(
        lambda t, ans, h, arrays, part: multi_dot_grad(t, arrays, part),
        lambda t, ans, h, arrays, part: multi_dot_grad_jvp(h, arrays, t, part),
    ),
)
defprimitive("multi_dot_with", multi_dot_with, _spelled("multi_dot_with"))
defprimitive(
    "multi_dot_grad_operands", multi_dot_grad_operands, _spelled("multi_dot_grad_operands")
)
defprimitive("multi_dot_grad_jvp", multi_dot_grad_jvp, _spelled("multi_dot_grad_jvp"))
# multi_dot(arrays): multilinear, so forward mode replaces each array by its tangent in turn
defvjp(
    "linalg_multi_dot",
    np.linalg.multi_dot,
    _func("linalg.multi_dot"),
    lambda g, ans, *arrays, argnum: multi_dot_grad(g, arrays, argnum),
    sequence_input=True,
    linear="multi",
)


# Example inputs for the registry's test grid (ops/examples.py): square inputs well
# conditioned, symmetric ones positive definite (passed symmetrized), stacks where numpy
# batches; results defined up to a sign (eigenvectors, singular vectors) enter squared.
# np.linalg.cond(x) (p None or 2): s_max / s_min of x's singular values; p = -2: s_min /
# s_max. With ans = s_a / s_b and d s_i = u_i^T dx v_i (distinct singular values: svd's rule),
#   d ans = (u_a^T dx v_a - ans u_b^T dx v_b) / s_b,
# the VJP g (u_a v_a^T - ans u_b v_b^T) / s_b. The other p (1, inf, 'fro', 'nuc': norms of x
# and of its inverse) are refused, located.
defvjp(
    "linalg_cond",
    np.linalg.cond,
    _func("linalg.cond"),
    lambda g, ans, x, p=None: (
        no_linalg_rule("np.linalg.cond with p other than None, 2 and -2")
        if not (p is None or p == 2 or p == -2)
        else (g / np.linalg.svd(x, compute_uv=False)[..., -1 if p is None or p == 2 else 0])[
            ..., None, None
        ]
        * (
            np.linalg.svd(x, full_matrices=False)[0][..., :, None, 0 if p is None or p == 2 else -1]
            * np.linalg.svd(x, full_matrices=False)[2][
                ..., None, 0 if p is None or p == 2 else -1, :
            ]
            - ans[..., None, None]
            * np.linalg.svd(x, full_matrices=False)[0][
                ..., :, None, -1 if p is None or p == 2 else 0
            ]
            * np.linalg.svd(x, full_matrices=False)[2][
                ..., None, -1 if p is None or p == 2 else 0, :
            ]
        )
    ),
    jvps=(
        lambda t, ans, x, p=None: (
            no_linalg_rule("np.linalg.cond with p other than None, 2 and -2")
            if not (p is None or p == 2 or p == -2)
            else (
                np.sum(
                    np.linalg.svd(x, full_matrices=False)[0][
                        ..., :, None, 0 if p is None or p == 2 else -1
                    ]
                    * np.linalg.svd(x, full_matrices=False)[2][
                        ..., None, 0 if p is None or p == 2 else -1, :
                    ]
                    * t,
                    axis=(-2, -1),
                )
                - ans
                * np.sum(
                    np.linalg.svd(x, full_matrices=False)[0][
                        ..., :, None, -1 if p is None or p == 2 else 0
                    ]
                    * np.linalg.svd(x, full_matrices=False)[2][
                        ..., None, -1 if p is None or p == 2 else 0, :
                    ]
                    * t,
                    axis=(-2, -1),
                )
            )
            / np.linalg.svd(x, compute_uv=False)[..., -1 if p is None or p == 2 else 0]
        ),
    ),
)


EXAMPLES = {
    "linalg_inv": [ex(arg(3, 3, domain="well")), ex(arg(2, 3, 3, domain="well"))],
    "linalg_solve": [
        ex(arg(3, 3, domain="well"), arg(3, 2)),
        ex(arg(2, 3, 3, domain="well"), arg(2, 3, 2)),
    ],
    "linalg_det": [ex(arg(3, 3, domain="well")), ex(arg(2, 3, 3, domain="well"))],
    "linalg_slogdet": [ex(arg(3, 3, domain="well")), ex(arg(2, 3, 3, domain="well"))],
    "linalg_cholesky": [ex(arg(3, 3, domain="spd")), ex(arg(2, 3, 3, domain="spd"))],
    "linalg_eigh": [
        ex(arg(3, 3, domain="spd"), loss=("out[0]", "out[1] ** 2")),
        ex(arg(2, 3, 3, domain="spd"), loss=("out[0]", "out[1] ** 2")),
    ],
    "linalg_eigvalsh": [ex(arg(3, 3, domain="spd")), ex(arg(2, 3, 3, domain="spd"))],
    "linalg_svd": [
        ex(arg(4, 3), full_matrices=False, loss=("out[0] ** 2", "out[1]", "out[2] ** 2")),
        ex(arg(3, 3), loss=("out[0] ** 2", "out[1]", "out[2] ** 2")),
        ex(arg(3, 4), compute_uv=False),
    ],
    "linalg_pinv": [ex(arg(4, 3)), ex(arg(3, 4))],
    "linalg_cond": [ex(arg(3, 3)), ex(arg(4, 3), 2), ex(arg(2, 3, 4), -2)],
    "linalg_matrix_power": [ex(arg(3, 3), 3), ex(arg(3, 3, domain="well"), -2), ex(arg(3, 3), 0)],
    "linalg_norm": [
        ex(arg(3, 4)),
        ex(arg(5), 1),
        ex(arg(3, 4), axis=1, keepdims=True),
        ex(arg(3, 4), "fro"),
        ex(arg(3, 4), "nuc"),
        ex(arg(5), np.inf),
        ex(arg(3, 4), 3, axis=0),
        ex(arg(3, 4), 2),
        ex(arg(2, 4, 3), -2, axis=(2, 1)),
        ex(arg(3, 4), 1),
        ex(arg(2, 3, 4), -1, axis=(0, 2), keepdims=True),
        ex(arg(3, 4), np.inf),
        ex(arg(3, 2, 4), -np.inf, axis=(0, 2)),
    ],
    "linalg_qr": [ex(arg(4, 3)), ex(arg(3, 3))],
    "linalg_lstsq": [
        ex(arg(5, 3), arg(5), loss=("out[0]",)),
        ex(arg(5, 3), arg(5, 2), loss=("out[0]",)),
    ],
    "linalg_trace": [ex(arg(3, 3)), ex(arg(2, 3, 4), offset=1)],
    "linalg_diagonal": [ex(arg(3, 4)), ex(arg(2, 3, 3), offset=-1)],
    "linalg_matrix_transpose": [ex(arg(3, 4)), ex(arg(2, 3, 4))],
    "linalg_vecdot": [ex(arg(3, 4), arg(3, 4)), ex(arg(3, 4), arg(4))],
    "linalg_outer": [ex(arg(3), arg(4))],
    "linalg_multi_dot": [ex([arg(3, 4), arg(4, 2), arg(2, 5)]), ex([arg(4), arg(4, 3), arg(3)])],
    "norm_matrices": [ex(arg(2, 3, 4), (2, 0)), ex(arg(3, 4), None)],
    "norm_unmatrices": [ex(arg(2, 4, 3), 3, (2, 0)), ex(arg(3, 4), 2, None)],
    "svd_gauge_checked": [ex(arg(3, 3), arg(3, 3), arg(3, 3), arg(3, 3))],
}
