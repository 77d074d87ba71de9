"""`Adagrad`: per-coordinate step sizes from the running sum of squared gradients.

torch's single-tensor rule, step t: clr = lr / (1 + (t - 1) * lr_decay);
sum += g * g; p -= clr * g / (sqrt(sum) + eps). The state (`step`, `sum` filled with
initial_accumulator_value) is created for every parameter in the constructor, as torch
does.
"""

from ._functional import check_lr, real_view, sqrt, to_scalar
from .optimizer import Optimizer, bump, scalar_step, state_like

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(
        self,
        params,
        lr=1e-2,
        lr_decay=0,
        weight_decay=0,
        initial_accumulator_value=0,
        eps=1e-10,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        fused=None,
    ):
        check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(
                f"Invalid initial_accumulator_value value: {initial_accumulator_value}"
            )
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = scalar_step()
                state["sum"] = state_like(p, initial_accumulator_value)

    def _update(self, p, grad, group):
        state = self.state[p]
        if len(state) == 0:  # a parameter added by add_param_group after construction
            state["step"] = scalar_step()
            state["sum"] = state_like(p, group["initial_accumulator_value"])
        step = bump(state["step"])
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * p._data
        clr = to_scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
        param, grad = real_view(p._data), real_view(grad)
        state_sum = real_view(state["sum"]._data)
        state_sum += 1 * grad * grad
        std = sqrt(state_sum)
        std += group["eps"]
        param -= clr * (grad / std)
