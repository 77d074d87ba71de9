"""`Cauchy(loc, scale)`, as `torch.distributions.cauchy.Cauchy`: reparameterised sampling
(`loc + scale * eps`, eps standard Cauchy), log density, cdf/icdf through atan/tan, entropy;
its mean and variance do not exist (nan and inf, as torch returns).

Imports: the eager surface (`sourcegrad`) and the package's location_scale base.
"""

from __future__ import annotations

import math

import sourcegrad as torch

from .location_scale import LocationScale
from .utils import draw

__all__ = ["Cauchy"]


class Cauchy(LocationScale):
    """The Cauchy (Lorentz) distribution with median `loc` and half width `scale`."""

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Cauchy, batch_shape, _instance)

    @property
    def mean(self):
        return torch.full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

    @property
    def variance(self):
        return torch.full(self._extended_shape(), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = draw(lambda rng: rng.standard_cauchy(tuple(shape)), like=self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (
            -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()
        )

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return torch.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return torch.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
