"""`LKJCholesky(dim, concentration)`, as `torch.distributions.lkj_cholesky.LKJCholesky`: the
LKJ distribution over the lower Cholesky factors of dim x dim correlation matrices, with
density proportional to det(L L^T) ** (concentration - 1).

log_prob is torch's (Stan's Cholesky-LKJ density with the normalising constant of Lewandowski,
Kurowicka and Joe, 2009, through mvlgamma). Sampling is torch's onion method: the squared
norm of each row's off-diagonal part is a Beta draw, its direction uniform on the sphere, and
the diagonal fills each row to unit norm; it is not reparameterised (torch has no rsample
either).

Imports: the eager surface (`sourcegrad`) and the package's beta, constraints, distribution
and utils.
"""

from __future__ import annotations

import math

import sourcegrad as torch

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ(concentration) over the Cholesky factors of correlation matrices of size dim."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky  # type: ignore[assignment]

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = torch.Size((dim, dim))
        # the Beta of each row's squared off-diagonal norm (Sec. 3.2 of the paper, vectorised)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = torch.arange(self.dim - 1, dtype=self.concentration.dtype)
        offset = torch.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = torch.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with torch.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = torch.randn(self._extended_shape(sample_shape), dtype=y.dtype).tril(-1)
            # (the first row has no off-diagonal part: 0 / 0 there, set to 0 as torch does)
            norm = u_normal.norm(dim=-1, keepdim=True)
            u_hypersphere = u_normal / torch.where(norm > 0, norm, torch.ones_like(norm))
            w = torch.sqrt(y) * u_hypersphere
            # the diagonal fills each row to unit norm (clamped as torch's, for rounding)
            eps = torch.finfo(w.dtype).tiny
            diag_elems = torch.clamp(1 - torch.sum(w**2, dim=-1), min=eps).sqrt()
            return w + torch.diag_embed(diag_elems)

    def log_prob(self, value):
        # the density of a Cholesky factor is prod_i L_ii ** (2 (concentration - 1) + D - i)
        # (the LKJ density of L L^T times the Jacobian of L -> L L^T), i from 2
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = torch.arange(2, self.dim + 1)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = torch.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = torch.lgamma(alpha) * dm1
        numerator = torch.mvlgamma(alpha - 0.5, dm1)
        # the paper's pi constant is D (D - 1) / 4 log(pi), mvlgamma's (D - 1)(D - 2) / 4
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
