"""`Laplace(loc, scale)`, as `torch.distributions.laplace.Laplace`: reparameterised by the
inverse cdf of a uniform draw in (-1, 1).

Imports: the eager surface (`sourcegrad`) and the package's location_scale base.
"""

from __future__ import annotations

import sourcegrad as torch

from .location_scale import LocationScale

__all__ = ["Laplace"]


class Laplace(LocationScale):
    """The Laplace (double exponential) distribution with location loc and scale scale."""

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Laplace, batch_shape, _instance)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2**0.5) * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = torch.finfo(self.loc.dtype).eps
        # (eps - 1, 1) rather than (-1, 1): log1p(-|u|) stays finite
        u = torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * torch.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -torch.log(2 * self.scale) - torch.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * torch.expm1(
            -(value - self.loc).abs() / self.scale
        )

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * torch.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + torch.log(2 * self.scale)
