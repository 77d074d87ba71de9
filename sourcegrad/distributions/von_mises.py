"""`VonMises(loc, concentration)`, as `torch.distributions.von_mises.VonMises`: the circular
normal on [-pi, pi), density exp(k cos(x - loc)) / (2 pi I0(k)). No rsample (torch has
none); samples are numpy's von Mises draws from sourcegrad's generator.

The Bessel function is exact here: log I0(k) = log(i0e(k)) + k, and the variance
1 - I1(k)/I0(k) from i1e/i0e. torch uses polynomial approximations (Abramowitz and Stegun
9.8.1-4, relative error about 1e-7), so values agree with torch's to that, not to float64.

Imports: the eager surface (`sourcegrad`), numpy's draw (utils.draw) and the package's
base, constraints and utils.
"""

from __future__ import annotations

import math

import sourcegrad as torch

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, draw, lazy_property

__all__ = ["VonMises"]


def log_i0(x):
    """log of the modified Bessel function I0, without overflow (x >= 0)."""
    return torch.special.i0e(x).log() + x


class VonMises(Distribution):
    """The von Mises distribution on the circle, mean direction `loc`, concentration k."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, torch.Size(), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = torch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (
            self.concentration * torch.cos(value - self.loc)
            - math.log(2 * math.pi)
            - log_i0(self.concentration)
        )

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        loc = self.loc.detach().expand(shape).cpu().numpy()
        concentration = self.concentration.detach().expand(shape).cpu().numpy()
        # numpy's draws lie in [-pi, pi], as torch's
        return draw(lambda rng: rng.vonmises(loc, concentration), like=self.loc)

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):  # type: ignore[override]
        """The circular variance, 1 - I1(k) / I0(k)."""
        return 1 - torch.special.i1e(self.concentration) / torch.special.i0e(self.concentration)
