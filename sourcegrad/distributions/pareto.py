"""`Pareto(scale, alpha)`, as `torch.distributions.pareto.Pareto` (type I): scale * exp(E)
for E ~ Exponential(alpha), a TransformedDistribution (reparameterised; log density,
cdf and icdf through the transforms) whose support starts at `scale`.

Imports: the eager surface (`sourcegrad`) and the package's constraints, exponential, transforms, transformed_distribution and
utils.
"""

from __future__ import annotations

import math

import sourcegrad as torch

from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Pareto"]


def _infinite_like(tensor):
    return torch.full_like(tensor, math.inf)


class Pareto(TransformedDistribution):
    """Density alpha * scale**alpha / x**(alpha + 1) for x >= scale."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.alpha = self.alpha.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        # infinite for alpha <= 1 (torch's value); the finite branch only sees alpha > 1,
        # so no division by zero is evaluated
        finite = self.alpha > 1
        a = torch.where(finite, self.alpha, torch.full_like(self.alpha, 2.0))
        return torch.where(finite, a * self.scale / (a - 1), _infinite_like(self.scale))

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        # infinite for alpha <= 2, as torch's
        finite = self.alpha > 2
        a = torch.where(finite, self.alpha, torch.full_like(self.alpha, 3.0))
        value = self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))
        return torch.where(finite, value, _infinite_like(self.scale))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())
