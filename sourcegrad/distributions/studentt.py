"""`StudentT(df, loc=0., scale=1.)`, as `torch.distributions.studentt.StudentT`:
reparameterised sampling as a normal over the root of a scaled Chi2 draw (so gradients
reach df through the Chi2's implicit gamma gradient), log density and entropy; the mean
is nan where df <= 1 and the variance inf or nan where df <= 2, as torch's.

Imports: the eager surface (`sourcegrad`) and the package's base, chi2, constraints and
utils.
"""

from __future__ import annotations

import math

import sourcegrad as torch

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t distribution with `df` degrees of freedom, location `loc` and scale
    `scale`."""

    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = torch.Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return torch.where(self.df <= 1, torch.full_like(self.loc, math.nan), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        # the finite branch is computed with df > 2 only, so its gradient is never nan
        safe_df = torch.where(self.df > 2, self.df, torch.full_like(self.df, 3.0))
        finite = self.scale.pow(2) * safe_df / (safe_df - 2)
        infinite = torch.where(
            self.df > 1, torch.full_like(self.df, math.inf), torch.full_like(self.df, math.nan)
        )
        return torch.where(self.df > 2, finite, infinite)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = torch.randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        y = x * torch.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        log_normalizer = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + torch.lgamma(0.5 * self.df)
            - torch.lgamma(0.5 * (self.df + 1.0))
        )
        return -0.5 * (self.df + 1.0) * torch.log1p(y**2.0 / self.df) - log_normalizer

    def entropy(self):
        lbeta = torch.lgamma(0.5 * self.df) + math.lgamma(0.5) - torch.lgamma(0.5 * (self.df + 1))
        return (
            self.scale.log()
            + 0.5
            * (self.df + 1)
            * (torch.digamma(0.5 * (self.df + 1)) - torch.digamma(0.5 * self.df))
            + 0.5 * self.df.log()
            + lbeta
        )
