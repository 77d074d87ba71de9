"""`HalfNormal(scale)`, as `torch.distributions.half_normal.HalfNormal`: |X| for
X ~ Normal(0, scale), folded at zero (log_prob is -inf below 0, as torch's).

Imports: the package's location_scale base and normal.
"""

from __future__ import annotations

import math

from .location_scale import FoldedAtZero
from .normal import Normal

__all__ = ["HalfNormal"]


class HalfNormal(FoldedAtZero):
    """|X| for X ~ Normal(0, scale)."""

    family = Normal

    def expand(self, batch_shape, _instance=None):
        return self._expanded(HalfNormal, batch_shape, _instance)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
