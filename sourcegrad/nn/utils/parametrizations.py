"""`nn.utils.parametrizations`: torch's `weight_norm` and `spectral_norm` as parametrizations.

`weight_norm(module, name, dim)` registers a parametrization whose originals are
`original0` = g (the norm of the weight over every dim but `dim`) and `original1` = v (the
direction): `module.weight` = v * g / ||v||. `spectral_norm(module, name,
n_power_iterations, eps, dim)` divides the weight by its largest singular value, estimated
by power iteration on the buffers `_u` and `_v` (random unit vectors, 15 iterations at
registration, `n_power_iterations` per access in training mode, none in eval mode). The
state dict keys are torch's (`parametrizations.weight.original0`,
`parametrizations.weight.0._u`), so a torch checkpoint loads; one saved with the old
hook-based `nn.utils.weight_norm` (`weight_g`, `weight_v`) loads into `weight_norm`'s too. `orthogonal(module, name,
orthogonal_map, use_trivialization)` is torch's: the matrix_exp, cayley or householder map of
the original (`parametrizations.weight.original`), times the buffer `base` with
use_trivialization, so a torch state_dict loads and gives the same weight and gradients.
"""

from __future__ import annotations

import importlib

import numpy as np

import sourcegrad as torch

from ...eager.grad_mode import no_grad
from ...eager.tensor import Tensor
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize
from .weight_norm import norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize `module.name` as g * v / ||v|| (g: original0, v: original1)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(
        state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        # (torch's: a state dict saved with the old hook-based nn.utils.weight_norm, keys
        # `weight_g` / `weight_v`, loads into the parametrized module)
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        # in place on the buffers (torch's out=): their identity is kept
        with no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.mT.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparametrize `module.name` as weight / sigma(weight) (see the module doc)."""
    weight = getattr(module, name, None)
    if weight is None or not hasattr(weight, "ndim"):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))
        dim = 1 if transposed else 0
    parametrization = _SpectralNorm(weight, n_power_iterations, dim, eps)
    parametrize.register_parametrization(module, name, parametrization)
    return module


class _Orthogonal(Module):
    """torch's orthogonal parametrization: X (n x k, tall after a transpose) -> an n x k
    matrix with orthonormal columns, by the matrix exponential or the Cayley map of the
    skew-symmetric matrix of X's lower triangle, or by the Householder product of X's
    reflectors; with use_trivialization, times the orthogonal buffer `base`, which
    right_inverse sets to the assigned matrix (made orthogonal by a QR where it is not)."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # X is tall from here on
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            # n k - k (k - 1) / 2 parameters: the lower triangle, in a square matrix
            X = X.tril()
            if n != k:
                X = torch.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT.conj()  # skew-symmetric (skew-hermitian)
            if self.orthogonal_map == "matrix_exp":
                Q = torch.matrix_exp(A)
            else:  # the Cayley retraction (I + A / 2)(I - A / 2)^-1
                Id = torch.eye(n, dtype=A.dtype)
                Q = torch.linalg.solve(torch.add(Id, A, alpha=-0.5), torch.add(Id, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = torch.linalg.householder_product(A, tau)
            # X's diagonal holds the signs (1 or -1): cast, so neither differentiated nor moved
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:  # (torch's hasattr: registered, with use_trivialization)
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):  # (long: torch's three cases, with their reasons)
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(
                    f"Expected a matrix or batch of matrices of shape {self.shape}. "
                    f"Got a tensor of shape {Q.shape}."
                )
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in ("cayley", "matrix_exp"):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential "
                        "or the Cayley parametrizations when use_trivialization=False."
                    )
                # the reflectors of Q's QR (geqrf) with diag(R) > 0: their signs on the diagonal
                A = _reflectors_with_signs(Q)
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:  # completed to a square orthogonal matrix by random columns, as torch's
                N = torch.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype)
                Q = _make_orthogonal(torch.cat([Q, N], dim=-1))
            self.base = Q
            # -Id: the Householder map sends it (zero reflectors, signs -1) to the identity
            neg_Id = torch.zeros_like(Q_init)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_Id


def _is_orthogonal(Q):
    n, k = Q.size(-2), Q.size(-1)
    Id = torch.eye(k, dtype=Q.dtype)
    eps = 10.0 * n * torch.finfo(Q.dtype).eps
    return torch.allclose(Q.mT.conj() @ Q, Id, atol=eps)


def _make_orthogonal(A):
    """The Q of A = QR (A tall) with diag(R) >= 0: unique for a full-rank A, so numpy's QR
    normalised by the signs of R's diagonal is torch's geqrf + householder_product."""
    a = A.detach().numpy()
    q, r = np.linalg.qr(a)
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    return torch.from_numpy(np.ascontiguousarray(q * np.where(signs == 0, 1, signs)[..., None, :]))


def _reflectors_with_signs(Q):
    """torch's right_inverse without trivialization: geqrf(Q)'s reflectors below the diagonal
    and, on it, the sign that gives diag(R) > 0 (-1 where LAPACK skipped a reflection,
    tau == 0). LAPACK's geqrf through scipy (numpy has no raw reflectors)."""
    lapack = importlib.import_module("scipy.linalg.lapack")
    a = Q.detach().numpy()
    flat = a.reshape((-1,) + a.shape[-2:])
    out = np.empty_like(flat)
    for i, matrix in enumerate(flat):
        qr, tau, _work, info = lapack.dgeqrf(np.asfortranarray(matrix))
        diagonal = np.sign(np.diagonal(qr)).copy()
        diagonal[tau == 0.0] *= -1
        np.fill_diagonal(qr, diagonal)
        out[i] = qr
    return torch.from_numpy(out.reshape(a.shape))


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Reparametrize `module.name` (a matrix or a batch of them) as an orthogonal matrix (see
    `_Orthogonal`); the default map is matrix_exp for a square or complex weight, householder
    otherwise, as torch's."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in ("matrix_exp", "cayley", "householder"):
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
