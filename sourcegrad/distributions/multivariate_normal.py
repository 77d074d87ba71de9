"""`MultivariateNormal(loc, covariance_matrix=... | precision_matrix=... | scale_tril=...)`,
as torch's: everything is computed from the lower Cholesky factor L of the covariance
(given, or `cholesky(covariance)`, or from the precision by torch's flip-Cholesky-solve),
so log_prob, entropy and rsample cost triangular solves, not inverses.

Triangular solves are `linalg.solve` on `L.tril()`: the values are those of a triangular
solve, and the gradient a dense solve gives for L passes through `tril`, so only the lower
triangle receives it, as torch.linalg.solve_triangular's does.

Imports: the eager surface (`sourcegrad`) and the package's base, constraints and utils.
"""

from __future__ import annotations

import math

import numpy as np

import sourcegrad as torch

from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def broadcast_shape(*shapes):
    """The shape the given shapes broadcast to (torch.broadcast_shapes)."""
    return torch.Size(np.broadcast_shapes(*(tuple(s) for s in shapes)))


def solve_lower(lower, rhs):
    """X with lower @ X = rhs, lower triangular, batch dims broadcast."""
    batch = broadcast_shape(lower.shape[:-2], rhs.shape[:-2])
    lower = lower.tril().expand(batch + lower.shape[-2:])
    return torch.linalg.solve(lower, rhs.expand(batch + rhs.shape[-2:]))


def batch_mahalanobis(scale_tril, x):
    """|L^{-1} x|^2 over the last dim, for lower-triangular L and batch dims broadcast."""
    return solve_lower(scale_tril, x.unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def batch_mv(matrix, vector):
    """matrix @ vector with batch dims broadcast."""
    return torch.matmul(matrix, vector.unsqueeze(-1)).squeeze(-1)


def precision_to_scale_tril(precision):
    """The lower Cholesky factor of precision^{-1}, without inverting precision (torch's
    way): with J the flip of rows and columns, cholesky(J P J) flipped back is an upper
    triangular U with P = U U^T, so precision^{-1} = U^{-T} U^{-1}, whose lower factor is
    U^{-T} = solve(U^T, I)."""
    flipped_factor = torch.linalg.cholesky(torch.flip(precision, (-2, -1)))
    inverse_scale = torch.transpose(torch.flip(flipped_factor, (-2, -1)), -2, -1)
    identity = torch.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return solve_lower(inverse_scale, identity)


class MultivariateNormal(Distribution):
    """The Gaussian with mean `loc` and covariance given by exactly one of
    covariance_matrix, precision_matrix or scale_tril (its lower Cholesky factor)."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args=None,
    ):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        matrix = next(m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None)
        if matrix.dim() < 2:
            name = ["covariance_matrix", "precision_matrix", "scale_tril"][given.index(True)]
            raise ValueError(
                f"{name} matrix must be at least two-dimensional, with optional leading "
                "batch dimensions"
            )
        batch_shape = broadcast_shape(matrix.shape[:-2], loc.shape[:-1])
        expanded = matrix.expand(batch_shape + (-1, -1))
        if scale_tril is not None:
            self.scale_tril = expanded
        elif covariance_matrix is not None:
            self.covariance_matrix = expanded
        else:
            self.precision_matrix = expanded
        self.loc = loc.expand(batch_shape + (-1,))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = torch.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = torch.Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        cov_shape = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(
            self._batch_shape + self._event_shape + self._event_shape
        )

    @lazy_property
    def covariance_matrix(self):
        lower = self._unbroadcasted_scale_tril
        return torch.matmul(lower, lower.mT).expand(
            self._batch_shape + self._event_shape + self._event_shape
        )

    @lazy_property
    def precision_matrix(self):
        lower = self._unbroadcasted_scale_tril
        identity = torch.eye(lower.shape[-1], dtype=lower.dtype, device=lower.device)
        inverse = solve_lower(lower, identity)
        return torch.matmul(inverse.mT, inverse).expand(
            self._batch_shape + self._event_shape + self._event_shape
        )

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return (
            self._unbroadcasted_scale_tril.pow(2)
            .sum(-1)
            .expand(self._batch_shape + self._event_shape)
        )

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = torch.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        mahalanobis = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + mahalanobis) - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        entropy = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return entropy
        return entropy.expand(self._batch_shape)
