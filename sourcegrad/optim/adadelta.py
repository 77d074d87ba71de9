"""`Adadelta`: step sizes from running averages of squared gradients and squared updates.

torch's single-tensor rule: v = rho * v + (1 - rho) * g * g;
delta = sqrt(u + eps) / sqrt(v + eps) * g; u = rho * u + (1 - rho) * delta * delta;
p -= lr * delta. State: `step`, `square_avg` (v), `acc_delta` (u).
"""

from ._functional import check_lr, real_view, sqrt, to_scalar
from .checks import check_non_negative, refuse_tracked_update
from .optimizer import Optimizer, bump, scalar_step, state_like

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(
        self,
        params,
        lr=1.0,
        rho=0.9,
        eps=1e-6,
        weight_decay=0,
        foreach=None,
        *,
        capturable=False,
        maximize=False,
        differentiable=False,
    ):
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_non_negative("weight_decay", weight_decay)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        refuse_tracked_update(p, group)
        state = self.state[p]
        if len(state) == 0:
            state["step"] = scalar_step()
            state["square_avg"] = state_like(p)
            state["acc_delta"] = state_like(p)
        bump(state["step"])
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * p._data
        rho, eps = group["rho"], group["eps"]
        param, grad = real_view(p._data), real_view(grad)
        square_avg = real_view(state["square_avg"]._data)
        acc_delta = real_view(state["acc_delta"]._data)
        square_avg *= rho
        square_avg += (1 - rho) * grad * grad
        std = sqrt(square_avg + eps)
        delta = sqrt(acc_delta + eps) / std * grad
        acc_delta *= rho
        acc_delta += (1 - rho) * delta * delta
        param -= to_scalar(group["lr"]) * delta
