"""`Categorical(probs=... | logits=...)`, as `torch.distributions.categorical.Categorical`:
an index in [0, K) drawn by weights over the last dim. probs are normalised to sum to 1 and
logits to logsumexp 0 when the distribution is made, as torch's are. Sampling places one
uniform draw (sourcegrad's generator) per row in that row's cumulative weights, all rows at
once.

Imports: the eager surface (`sourcegrad`), numpy, the eager generator, and the package's
base, constraints and utils.
"""

from __future__ import annotations

import numpy as np

import sourcegrad as torch

from ..eager.factories import numpy_rng
from . import constraints
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """One of K categories, weighted by `probs` (or `softmax(logits)`) over the last dim."""

    arg_constraints = {
        "probs": constraints.simplex,
        "logits": constraints.independent(constraints.real, 1),
    }
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else torch.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = torch.Size(batch_shape)
        param_shape = batch_shape + torch.Size((self._num_events,))
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return torch.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return torch.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        sample_shape = torch.Size(sample_shape)
        probs_2d = self.probs.detach().reshape(-1, self._num_events).cpu().numpy()
        cumulative = np.cumsum(probs_2d / probs_2d.sum(-1, keepdims=True), axis=-1)
        # one uniform per (sample, row), placed in the row's cumulative weights: every row at
        # once (torch.multinomial would loop over the rows)
        uniforms = numpy_rng().random((sample_shape.numel(), len(probs_2d)))
        indices = (uniforms[..., None] >= cumulative).sum(-1)  # a 0 weight is never drawn
        indices = np.minimum(indices, self._num_events - 1)  # rounding: cumulative[-1] < 1
        samples = torch.as_tensor(indices, dtype=torch.int64, device=self._param.device)
        return samples.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = torch.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        # a probability of 0 has logit -inf: clamped, so that 0 * logit is 0, not nan
        min_real = torch.finfo(self.logits.dtype).min
        logits = torch.clamp(self.logits, min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        values = torch.arange(self._num_events, dtype=torch.long, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
