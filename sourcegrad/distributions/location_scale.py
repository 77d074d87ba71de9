"""What the location-scale families share: `LocationScale(loc, scale)`, the base of Normal,
Laplace and Cauchy (broadcasting of the two parameters, batch shape, `expand`), and
`FoldedAtZero(scale)`, the base of HalfNormal and HalfCauchy (|X| for X of a family centred
at 0: a TransformedDistribution with AbsTransform whose log density, cdf and icdf fold the
family's).

Each concrete class keeps its own module at torch's path and says what differs (density,
moments, sampling); these bases are not registered for KL and are not exported.

Imports: the eager surface (`sourcegrad`) and the package's base, constraints, transforms,
transformed_distribution and utils.
"""

from __future__ import annotations

import math
import numbers

import sourcegrad as torch

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform
from .utils import broadcast_all


class LocationScale(Distribution):
    """A distribution of `loc + scale * eps`, eps from a fixed standard law."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        both_numbers = isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number)
        batch_shape = torch.Size() if both_numbers else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def _expanded(self, family, batch_shape, _instance):
        """`expand` for `family` (named by each class, so that a subclass with its own
        `__init__` and no `expand` is refused as torch refuses it)."""
        new = self._get_checked_instance(family, _instance)
        batch_shape = torch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mode(self):
        return self.loc


class FoldedAtZero(TransformedDistribution):
    """|X| for X ~ `family`(0, scale), `family` a LocationScale class symmetric about 0."""

    family: type[LocationScale]
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative  # type: ignore[assignment]
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        base_dist = self.family(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def _expanded(self, folded, batch_shape, _instance):
        new = self._get_checked_instance(folded, _instance)
        return TransformedDistribution.expand(self, batch_shape, _instance=new)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return torch.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # the density of |X| is twice X's on [0, inf), as X is symmetric about 0
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return torch.where(value >= 0, log_prob, torch.full_like(log_prob, -math.inf))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
