"""`Gamma(concentration, rate)`, as `torch.distributions.gamma.Gamma`, and `standard_gamma`,
the reparameterised Gamma(alpha, 1) draw that Gamma, Beta and Dirichlet sample with.

A gamma draw has no closed-form reparameterisation; like torch, the gradient of a sample x
with respect to alpha is the implicit one that keeps the draw's cdf level fixed:
dx/dalpha = -(dP(alpha, x)/dalpha) / p(x; alpha), with P the regularised lower incomplete
gamma function. torch approximates dP/dalpha with series; here it is a central difference
of scipy.special.gammainc in alpha (relative error about 1e-9), computed on the host.

Imports: the eager surface (`sourcegrad`), numpy, scipy.special (when a gradient is taken)
and the package's base, constraints and utils.
"""

from __future__ import annotations

import numbers

import numpy as np

import sourcegrad as torch
from sourcegrad.autograd import Function

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, draw

__all__ = ["Gamma", "standard_gamma"]


class _StandardGamma(Function):
    """x ~ Gamma(alpha, 1), with the implicit gradient dx/dalpha."""

    @staticmethod
    def forward(ctx, alpha):
        sample = draw(lambda rng: rng.standard_gamma(alpha.detach().cpu().numpy()), like=alpha)
        ctx.save_for_backward(alpha, sample)
        return sample

    @staticmethod
    def backward(ctx, grad_output):
        alpha, sample = ctx.saved_tensors
        dx_dalpha = implicit_gamma_grad(alpha.detach().cpu().numpy(), sample.detach().cpu().numpy())
        return grad_output * torch.as_tensor(dx_dalpha, dtype=alpha.dtype, device=alpha.device)


def implicit_gamma_grad(alpha, x):
    """d x / d alpha for x = P^{-1}(alpha, u) at fixed u (numpy arrays in, numpy out)."""
    from scipy import special

    step = 1e-5 * np.maximum(alpha, 1.0)
    dcdf_dalpha = (special.gammainc(alpha + step, x) - special.gammainc(alpha - step, x)) / (
        2 * step
    )
    log_density = (alpha - 1) * np.log(x) - x - special.gammaln(alpha)
    return -dcdf_dalpha / np.exp(log_density)


def standard_gamma(alpha):
    """Draws from Gamma(alpha, 1) (one per entry of alpha), reparameterised in alpha."""
    return _StandardGamma.apply(alpha)


class Gamma(Distribution):
    """The gamma distribution with shape `concentration` and inverse scale `rate`."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        both_numbers = isinstance(concentration, numbers.Number) and isinstance(
            rate, numbers.Number
        )
        batch_shape = torch.Size() if both_numbers else self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = torch.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # a draw that underflows to 0 would give log_prob -inf: keep it at the smallest normal
        tiny = torch.finfo(value.dtype).tiny
        return torch.where(value.detach() < tiny, value - value.detach() + tiny, value)

    def log_prob(self, value):
        value = torch.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (
            torch.xlogy(self.concentration, self.rate)
            + torch.xlogy(self.concentration - 1, value)
            - self.rate * value
            - torch.lgamma(self.concentration)
        )

    def entropy(self):
        return (
            self.concentration
            - torch.log(self.rate)
            + torch.lgamma(self.concentration)
            + (1.0 - self.concentration) * torch.digamma(self.concentration)
        )

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return torch.special.gammainc(self.concentration, self.rate * value)
