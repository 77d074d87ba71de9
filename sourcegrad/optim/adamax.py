"""`Adamax`: Adam with the infinity norm in place of the squared-gradient average.

torch's single-tensor rule, step t: m = lerp(m, g, 1 - beta1);
u = max(beta2 * u, |g| + eps); p -= lr / (1 - beta1**t) * m / u.
State: `step`, `exp_avg` (m), `exp_inf` (u).
"""

from ._functional import lerp_, maximum, real_view, to_scalar
from .checks import check_adam_like, refuse_tracked_update
from .optimizer import Optimizer, bump, scalar_step, state_like

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        check_adam_like(lr, betas, eps, weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
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
        if len(state) == 0:
            state["step"] = scalar_step()
            state["exp_avg"] = state_like(p)
            state["exp_inf"] = state_like(p)
        if group["maximize"]:
            grad = -grad
        step = bump(state["step"])
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * p._data
        beta1, beta2 = map(to_scalar, group["betas"])
        param, grad = real_view(p._data), real_view(grad)
        exp_avg = real_view(state["exp_avg"]._data)
        exp_inf = real_view(state["exp_inf"]._data)
        lerp_(exp_avg, grad, 1 - beta1)
        exp_inf *= beta2
        maximum(exp_inf, abs(grad) + group["eps"], out=exp_inf)
        clr = to_scalar(group["lr"]) / (1 - beta1**step)
        param -= clr * (exp_avg / exp_inf)
