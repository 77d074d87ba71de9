"""`optim.swa_utils`: stochastic weight averaging and EMA of a model, as torch.optim.swa_utils.

`AveragedModel(model)` keeps a deep copy of `model` whose parameters are the running
average of the ones `update_parameters(model)` is given: the first call copies them, each
later call moves the average by torch's rule (the equal-weight mean by default,
`avg_fn(averaged, current, n_averaged)` per tensor or `multi_avg_fn(averaged_list,
current_list, n_averaged)` per list, e.g. `get_ema_multi_avg_fn(decay)`); buffers follow
the model unless `use_buffers=True` averages them too. The multi_avg_fns use torch's
`lerp` arithmetic, the default its CPU path (avg + (current - avg) / (n + 1)).
`update_bn(loader, model)` recomputes the BatchNorm running statistics with one pass over
the data (cumulative average, momentum None) and `SWALR` anneals each group's learning
rate to its `swa_lr` over `anneal_epochs` epochs ("cos" or "linear").
"""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np

from ..eager import factories
from ..eager.dtypes import long
from ..eager.grad_mode import no_grad
from ..eager.tensor import Tensor
from ..nn.modules.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler

__all__ = [
    "AveragedModel",
    "SWALR",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]


def _lerp_(start, end, weight):
    """start += weight * (end - start) in place, in the two forms torch's CPU lerp uses
    (the second keeps the result exact at weight 1)."""
    if weight < 0.5:
        start.copy_(start + (end - start) * weight)
    else:
        start.copy_(end - (end - start) * (1 - weight))


def _is_inexact(t) -> bool:
    return t.is_floating_point() or t.is_complex()


def get_ema_multi_avg_fn(decay=0.999):
    """multi_avg_fn for an exponential moving average: ema <- ema + (1 - decay)(current - ema)."""

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            if _is_inexact(p_ema):
                _lerp_(p_ema, p_model, 1 - decay)
            else:
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """multi_avg_fn for the equal-weight mean: avg <- avg + (current - avg) / (n + 1)."""

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if isinstance(num_averaged, Tensor):
            # torch's weight is 1 / (n + 1) as a tensor of the default dtype (float32), so a
            # float64 average moves by float32's rounding of that weight
            n = int(num_averaged.item())
            weight = float(np.float32(1.0) / np.float32(n + 1))
        else:
            n = num_averaged
            weight = 1 / (n + 1)
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            if _is_inexact(p_avg):
                _lerp_(p_avg, p_model, weight)
            else:
                p_avg.copy_(p_avg + (p_model - p_avg) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """avg_fn for an exponential moving average, one tensor at a time."""

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """avg_fn for the equal-weight mean, one tensor at a time."""

    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A running average of a model's parameters (see the module doc)."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", factories.tensor(0, dtype=long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged_tensors(self, model):
        if self.use_buffers:
            ours = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
            return list(ours), list(theirs)
        return list(self.parameters()), list(model.parameters())

    def update_parameters(self, model):
        """Fold `model`'s current parameters into the average."""
        ours, theirs = self._averaged_tensors(model)
        averaged = [p.detach() for p in ours]
        current = [p.detach().to(a.device) for p, a in zip(theirs, averaged)]
        n_averaged = int(self.n_averaged.item())
        with no_grad():
            if n_averaged == 0:
                for a, c in zip(averaged, current):
                    a.copy_(c)
            elif self.multi_avg_fn is not None:
                # torch hands multi_avg_fn the tensors grouped by device and dtype
                by_dtype: dict = {}
                for a, c in zip(averaged, current):
                    group = by_dtype.setdefault((str(a.device), a.dtype), ([], []))
                    group[0].append(a)
                    group[1].append(c)
                for group_averaged, group_current in by_dtype.values():
                    self.multi_avg_fn(group_averaged, group_current, self.n_averaged)
            else:
                # torch's default on the CPU: the equal-weight mean, one tensor at a time
                avg_fn = self.avg_fn or get_swa_avg_fn()
                for a, c in zip(averaged, current):
                    a.copy_(avg_fn(a, c, self.n_averaged))
            if not self.use_buffers:
                # buffers are not averaged: keep them in sync with the model
                for b_ours, b_theirs in zip(self.module.buffers(), model.buffers()):
                    b_ours.detach().copy_(b_theirs.detach().to(b_ours.device))
            self.n_averaged += 1


_BATCH_NORMS = (BatchNorm1d, BatchNorm2d, BatchNorm3d)


@no_grad()
def update_bn(loader, model, device=None):
    """Recompute the BatchNorm running statistics of `model` with one pass over `loader`."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BATCH_NORMS):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # a cumulative average over the pass
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


def _per_group(name, optimizer, value):
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(value)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return list(value)
    return [value] * len(optimizer.param_groups)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to its `swa_lr` over `anneal_epochs` epochs, then
    hold it there (torch's SWALR)."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):  # fmt: skip
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t):
        if self._anneal_strategy == "cos":
            return (1 - math.cos(math.pi * t)) / 2
        return t

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        self._warn_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        groups = self.optimizer.param_groups
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]
