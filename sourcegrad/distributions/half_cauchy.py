"""`HalfCauchy(scale)`, as `torch.distributions.half_cauchy.HalfCauchy`: |X| for
X ~ Cauchy(0, scale), folded at zero (log_prob is -inf below 0, as torch's); its mean is
infinite and its variance the Cauchy's (inf), as torch returns.

Imports: the eager surface (`sourcegrad`) and the package's location_scale base and cauchy.
"""

from __future__ import annotations

import math

import sourcegrad as torch

from .cauchy import Cauchy
from .location_scale import FoldedAtZero

__all__ = ["HalfCauchy"]


class HalfCauchy(FoldedAtZero):
    """|X| for X ~ Cauchy(0, scale)."""

    family = Cauchy

    def expand(self, batch_shape, _instance=None):
        return self._expanded(HalfCauchy, batch_shape, _instance)

    @property
    def mean(self):
        return torch.full(self._extended_shape(), math.inf, dtype=self.scale.dtype)

    @property
    def variance(self):
        return self.base_dist.variance
