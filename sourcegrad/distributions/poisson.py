"""`Poisson(rate)`, as `torch.distributions.poisson.Poisson`: counts; no rsample (a count
has no reparameterisation), log_prob differentiable in rate.

Imports: the eager surface (`sourcegrad`) and the package's base, constraints and utils.
"""

from __future__ import annotations

import numbers

import sourcegrad as torch

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, draw

__all__ = ["Poisson"]


class Poisson(Distribution):
    """The Poisson distribution with mean `rate`."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = torch.Size() if isinstance(rate, numbers.Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = torch.Size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        rate = self.rate.detach().expand(shape).cpu().numpy()
        return draw(lambda rng: rng.poisson(rate), like=self.rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()
