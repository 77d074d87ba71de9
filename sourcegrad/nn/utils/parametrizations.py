"""`nn.utils.parametrizations`: torch's `weight_norm` and `spectral_norm` as parametrizations.

`weight_norm(module, name, dim)` registers a parametrization whose originals are
`original0` = g (the norm of the weight over every dim but `dim`) and `original1` = v (the
direction): `module.weight` = v * g / ||v||. `spectral_norm(module, name,
n_power_iterations, eps, dim)` divides the weight by its largest singular value, estimated
by power iteration on the buffers `_u` and `_v` (random unit vectors, 15 iterations at
registration, `n_power_iterations` per access in training mode, none in eval mode). The
state dict keys are torch's (`parametrizations.weight.original0`,
`parametrizations.weight.0._u`), so a torch checkpoint loads. `orthogonal` is refused by
name (sourcegrad has no Householder product to build its default map on).
"""

from __future__ import annotations

from ...eager.grad_mode import no_grad
from ...errors import UnsupportedAPIError
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


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    raise UnsupportedAPIError(
        "torch.nn.utils.parametrizations.orthogonal is not supported by sourcegrad: its maps "
        "(matrix_exp, cayley, householder) are not implemented as a parametrization here"
    )
