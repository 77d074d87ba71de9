"""`Normal(loc, scale)`, as `torch.distributions.normal.Normal`: reparameterised sampling
(`loc + scale * eps`), log density, cdf/icdf through erf/erfinv, entropy.

Imports: the eager surface (`sourcegrad`) and the package's location_scale base.
"""

from __future__ import annotations

import math

import sourcegrad as torch

from .location_scale import LocationScale

__all__ = ["Normal"]


class Normal(LocationScale):
    """The normal (Gaussian) distribution with mean `loc` and standard deviation `scale`."""

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Normal, batch_shape, _instance)

    @property
    def mean(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def sample(self, sample_shape=()):
        with torch.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = torch.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale**2
        log_scale = self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + torch.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * torch.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + torch.log(self.scale)
