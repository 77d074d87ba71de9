"""`LowRankMultivariateNormal(loc, cov_factor, cov_diag)`, as torch's
(`distributions.lowrank_multivariate_normal`): a multivariate normal with covariance
W W^T + diag(D), W of shape (n, m) with m small; log density and entropy go through the
m x m capacitance matrix I + W^T D^-1 W (Woodbury and the matrix determinant lemma), so
nothing n x n is factorised, as in torch.

Imports: the eager surface (`sourcegrad`) and the package's base, constraints,
multivariate_normal (its batched linear-algebra helpers) and utils.
"""

from __future__ import annotations

import math

import sourcegrad as torch

from . import constraints
from .distribution import Distribution
from .multivariate_normal import batch_mahalanobis, batch_mv, solve_lower
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _identity_like(matrix):
    return torch.eye(matrix.shape[-1], dtype=matrix.dtype, device=matrix.device)


def _diag_embed(vector):
    """A batch of diagonal matrices with `vector` on the diagonal."""
    identity = torch.eye(vector.shape[-1], dtype=vector.dtype, device=vector.device)
    return vector.unsqueeze(-1) * identity


def capacitance_tril(cov_factor, cov_diag):
    """The lower Cholesky factor of I + W^T D^-1 W (m x m)."""
    wt_dinv = cov_factor.transpose(-2, -1) / cov_diag.unsqueeze(-2)
    capacitance = torch.matmul(wt_dinv, cov_factor) + _identity_like(cov_factor)
    return torch.linalg.cholesky(capacitance)


def lowrank_logdet(cov_diag, capacitance):
    """log det(W W^T + D) = log det(capacitance) + log det(D)."""
    return 2 * capacitance.diagonal(dim1=-2, dim2=-1).log().sum(-1) + cov_diag.log().sum(-1)


def lowrank_mahalanobis(cov_factor, cov_diag, x, capacitance):
    """x^T (W W^T + D)^-1 x, by Woodbury."""
    wt_dinv = cov_factor.transpose(-2, -1) / cov_diag.unsqueeze(-2)
    wt_dinv_x = batch_mv(wt_dinv, x)
    return (x.pow(2) / cov_diag).sum(-1) - batch_mahalanobis(capacitance, wt_dinv_x)


class LowRankMultivariateNormal(Distribution):
    """Normal with mean `loc` and covariance cov_factor @ cov_factor.T + diag(cov_diag)."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError(
                "cov_factor must be at least two-dimensional, "
                "with optional leading batch dimensions"
            )
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(
                f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m"
            )
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = torch.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1)
            )
        except RuntimeError as e:
            raise ValueError(
                f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                f"cov_diag {cov_diag.shape}"
            ) from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = torch.Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + self.cov_factor.shape[-1:])
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):  # type: ignore[override]
        return (
            self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        ).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        # W W^T + D = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2, and the middle matrix has
        # eigenvalues >= 1: well conditioned for Cholesky (torch's way)
        cov_diag_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dinvsqrt_w = self._unbroadcasted_cov_factor / cov_diag_sqrt
        inner = torch.matmul(dinvsqrt_w, dinvsqrt_w.transpose(-2, -1))
        inner = inner + _identity_like(inner)
        scale_tril = cov_diag_sqrt * torch.linalg.cholesky(inner)
        return scale_tril.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        w = self._unbroadcasted_cov_factor
        covariance = torch.matmul(w, w.transpose(-2, -1)) + _diag_embed(
            self._unbroadcasted_cov_diag
        )
        return covariance.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        # Woodbury: inv(W W^T + D) = inv(D) - inv(D) W inv(C) W^T inv(D), C the capacitance
        wt_dinv = self._unbroadcasted_cov_factor.transpose(
            -2, -1
        ) / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = solve_lower(self._capacitance_tril, wt_dinv)
        precision = _diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - torch.matmul(
            a.transpose(-2, -1), a
        )
        return precision.expand(self._batch_shape + self._event_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        w_shape = shape[:-1] + self.cov_factor.shape[-1:]
        eps_w = torch.randn(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = torch.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (
            self.loc
            + batch_mv(self._unbroadcasted_cov_factor, eps_w)
            + self._unbroadcasted_cov_diag.sqrt() * eps_d
        )

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        mahalanobis = lowrank_mahalanobis(
            self._unbroadcasted_cov_factor,
            self._unbroadcasted_cov_diag,
            diff,
            self._capacitance_tril,
        )
        log_det = lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + mahalanobis)

    def entropy(self):
        log_det = lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        entropy = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        if len(self._batch_shape) == 0:
            return entropy
        return entropy.expand(self._batch_shape)
