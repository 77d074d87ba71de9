"""Helpers the distributions share, as `torch.distributions.utils`: `broadcast_all` (numbers
and tensors to one shape and dtype), the probs/logits conversions, `clamp_probs`, and
`lazy_property` (a parameter computed from the other one on first use, e.g. Bernoulli's
`probs` from its `logits`), and two of this package's own: `draw` (numpy draws from
sourcegrad's generator, for the samplers numpy has and the Tensor has not: gamma, poisson,
binomial, exponential) and `sum_rightmost`.

Imports: the eager surface (`sourcegrad`) and the eager generator (`eager.factories`).
"""

from __future__ import annotations

import numbers
from functools import update_wrapper

import sourcegrad as torch
import sourcegrad.nn.functional as F

from ..eager.factories import numpy_rng

__all__ = [
    "broadcast_all",
    "clamp_probs",
    "euler_constant",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant (torch's utils name)


def broadcast_all(*values):
    """Tensors broadcast to one shape; numbers become tensors of the tensors' dtype (the
    default dtype when every value is a number), as torch's broadcast_all does."""
    if not all(isinstance(v, (torch.Tensor, numbers.Number)) for v in values):
        raise ValueError(
            "Input arguments must all be instances of Number, torch.Tensor or objects "
            "implementing __torch_function__."
        )
    if all(isinstance(v, torch.Tensor) for v in values):
        return torch.broadcast_tensors(*values)
    like = next((v for v in values if isinstance(v, torch.Tensor)), None)
    dtype = like.dtype if like is not None else torch.get_default_dtype()
    device = like.device if like is not None else None
    tensors = [
        v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=dtype, device=device)
        for v in values
    ]
    return torch.broadcast_tensors(*tensors)


def clamp_probs(probs):
    """probs kept inside (0, 1) by the dtype's eps, so that their logs stay finite."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid for a binary variable, softmax over the last dim
    for a categorical one."""
    if is_binary:
        return torch.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities (clamped first, so that 0 and 1 give finite logits)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return torch.log(ps_clamped) - torch.log1p(-ps_clamped)
    return torch.log(ps_clamped)


class lazy_property:  # noqa: N801 - a decorator, spelt as torch's
    """A property computed on first read and then stored on the instance (so a distribution
    made from logits computes its probs once, when asked)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)  # type: ignore[arg-type]

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with torch.enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def draw(sample, like):
    """A tensor of numpy draws `sample(rng)` from sourcegrad's generator (`manual_seed`),
    with `like`'s dtype and device and no gradient (the caller makes it reparameterised)."""
    values = sample(numpy_rng())
    return torch.as_tensor(values, dtype=like.dtype, device=like.device)


def sum_rightmost(value, dim):
    """`value` summed over its `dim` rightmost dims (an event's log density from its
    entries'); a number is returned as it is."""
    if dim == 0:
        return value
    required_shape = value.shape[: value.dim() - dim] + (-1,)
    return value.reshape(required_shape).sum(-1)
