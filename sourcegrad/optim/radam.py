"""`RAdam`: Adam with the variance of its adaptive step rectified (Liu et al., 2019).

torch's single-tensor rule, step t: m = lerp(m, g, 1 - beta1);
v = beta2 * v + (1 - beta2) * g * g; rho_inf = 2 / (1 - beta2) - 1;
rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t). While rho_t <= 5 the step is plain
momentum, p -= lr * m / (1 - beta1**t); after, it is scaled by the adaptive rate
sqrt(1 - beta2**t) / (sqrt(v) + eps) and the rectification
sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)).
Weight decay adds weight_decay * p to g, or (decoupled_weight_decay) multiplies p by
1 - lr * weight_decay first. State: `step`, `exp_avg`, `exp_avg_sq`.
"""

from ._functional import lerp_, real_view, sqrt, to_scalar
from .checks import check_adam_like, refuse_tracked_update
from .optimizer import Optimizer, bump, scalar_step, state_like

__all__ = ["RAdam"]


class RAdam(Optimizer):
    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        check_adam_like(lr, betas, eps, weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:  # pickles from before torch 2.x's RAdamW option
            group.setdefault("decoupled_weight_decay", False)

    def _update(self, p, grad, group):
        refuse_tracked_update(p, group)
        state = self.state[p]
        if len(state) == 0:
            state["step"] = scalar_step()
            state["exp_avg"] = state_like(p)
            state["exp_avg_sq"] = state_like(p)
        if group["maximize"]:
            grad = -grad
        step = bump(state["step"])
        beta1, beta2 = map(to_scalar, group["betas"])
        lr = to_scalar(group["lr"])
        weight_decay = group["weight_decay"]
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p._data *= 1 - lr * weight_decay
            else:
                grad = grad + weight_decay * p._data
        param, grad = real_view(p._data), real_view(grad)
        exp_avg = real_view(state["exp_avg"]._data)
        exp_avg_sq = real_view(state["exp_avg_sq"]._data)
        lerp_(exp_avg, grad, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rect = (
                (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            ) ** 0.5
            adaptive_lr = (bias_correction2**0.5) / (sqrt(exp_avg_sq) + group["eps"])
            param -= bias_corrected_exp_avg * lr * adaptive_lr * rect
        else:
            param -= bias_corrected_exp_avg * lr
