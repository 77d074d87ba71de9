"""`Kumaraswamy(concentration1, concentration0)`, as
`torch.distributions.kumaraswamy.Kumaraswamy`: (1 - U ** (1 / b)) ** (1 / a) for U ~
Uniform(0, 1), a TransformedDistribution with PowerTransform, AffineTransform(1, -1),
PowerTransform (so sampling is reparameterised and log_prob is the transforms' change of
variables); the moments b * B(1 + n / a, b) and the entropy are torch's closed forms. `mode`
is the density's argmax, where torch's (2.13) is nan for every concentration0 > 1.

Imports: the eager surface (`sourcegrad`) and the package's constraints, transforms,
transformed_distribution, uniform and utils.
"""

from __future__ import annotations

import math

import sourcegrad as torch

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X ** n] = b * B(1 + n / a, b), through lgamma."""
    arg1 = 1 + n / a
    log_value = torch.lgamma(arg1) + torch.lgamma(b) - torch.lgamma(arg1 + b)
    return b * torch.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on (0, 1): density a b x^(a-1) (1 - x^a)^(b-1)."""

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval  # type: ignore[assignment]
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(
            torch.full_like(self.concentration0, 0),
            torch.full_like(self.concentration0, 1),
            validate_args=validate_args,
        )
        transforms = [
            PowerTransform(exponent=self.concentration0.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # ((a - 1) / (ab - 1)) ** (1 / a), the zero of the density's derivative; nan where a
        # concentration is below 1 (no interior mode). torch's formula takes log1p(-b), nan
        # for every b > 1: its mode is nan everywhere, this one is the density's argmax.
        a, b = self.concentration1, self.concentration0
        no_mode = (a < 1) | (b < 1) | ((a == 1) & (b == 1))  # (the uniform has none either)
        # (2 where there is none, so nothing divides by 0 in the entries thrown away)
        a = torch.where(no_mode, torch.full_like(a, 2.0), a)
        b = torch.where(no_mode, torch.full_like(b, 2.0), b)
        mode = ((a - 1) / (a * b - 1)) ** a.reciprocal()
        return torch.where(no_mode, torch.full_like(mode, math.nan), mode)

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - torch.pow(self.mean, 2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = torch.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * H0 - torch.log(self.concentration1) - torch.log(self.concentration0)
