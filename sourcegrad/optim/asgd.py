"""`ASGD`: averaged stochastic gradient descent (Polyak and Juditsky, 1992).

torch's single-tensor rule, step t: p *= 1 - lambd * eta; p -= eta * g; the average
ax = p while mu is 1, else ax += mu * (p - ax); then eta = lr / (1 + lambd * lr * t)**alpha
and mu = 1 / max(1, t - t0). `eta` and `mu` are float32 scalars in state, as torch keeps
them (rounded to the default dtype each step, float32 unless changed). State: `step`, `eta`, `mu`, `ax`.
"""

import numpy as np

from ..eager.dtypes import get_default_dtype
from ._functional import check_lr, real_view, to_scalar
from .checks import check_non_negative, refuse_tracked_update
from .optimizer import Optimizer, bump, scalar_step, state_like

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(
        self,
        params,
        lr=1e-2,
        lambd=1e-4,
        alpha=0.75,
        t0=1e6,
        weight_decay=0,
        foreach=None,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        check_lr(lr)
        check_non_negative("weight_decay", weight_decay)
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        refuse_tracked_update(p, group)
        state = self.state[p]
        lr = to_scalar(group["lr"])
        if len(state) == 0:
            state["step"] = scalar_step()
            state["eta"] = scalar_step(lr)
            state["mu"] = scalar_step(1.0)
            state["ax"] = state_like(p)
        if group["maximize"]:
            grad = -grad
        step = bump(state["step"])
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * p._data
        lambd = group["lambd"]
        eta, mu = state["eta"]._data, state["mu"]._data
        eta_value, mu_value = float(eta), float(mu)
        param, grad = real_view(p._data), real_view(grad)
        ax = real_view(state["ax"]._data)
        param *= 1 - lambd * eta_value  # decay term
        param -= eta_value * grad
        if mu_value != 1:
            ax += (param - ax) * mu_value
        else:
            ax[...] = param
        # torch computes these in double, makes them tensors of the default dtype
        # (torch.as_tensor of a Python float), then copies them into the counters
        scalar = get_default_dtype().dtype
        eta[...] = np.asarray(lr / ((1 + lambd * lr * step) ** group["alpha"]), dtype=scalar)
        mu[...] = np.asarray(1 / max(1, step - group["t0"]), dtype=scalar)
