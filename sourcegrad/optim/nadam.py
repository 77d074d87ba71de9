"""`NAdam`: Adam with Nesterov momentum and torch's momentum-decay schedule.

torch's single-tensor rule, step t: mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay));
mu_product *= mu_t (a float32 scalar in state, as torch keeps it); m = lerp(m, g, 1 - beta1);
v = beta2 * v + (1 - beta2) * g * g; denom = sqrt(v / (1 - beta2**t)) + eps;
p -= lr * (1 - mu_t) / (1 - mu_product) * g / denom
   + lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom.
Weight decay adds weight_decay * p to g, or (decoupled_weight_decay, NAdamW) multiplies
p by 1 - lr * weight_decay first. State: `step`, `mu_product`, `exp_avg`, `exp_avg_sq`.
"""

from ._functional import lerp_, real_view, sqrt, to_scalar
from .checks import check_adam_like, check_non_negative, refuse_tracked_update
from .optimizer import Optimizer, bump, scalar_step, state_like

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        momentum_decay=4e-3,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        check_adam_like(lr, betas, eps, weight_decay)
        check_non_negative("momentum_decay", momentum_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:  # pickles from before torch 2.x's NAdamW option
            group.setdefault("decoupled_weight_decay", False)

    def _update(self, p, grad, group):
        refuse_tracked_update(p, group)
        state = self.state[p]
        if len(state) == 0:
            state["step"] = scalar_step()
            state["mu_product"] = scalar_step(1.0)
            state["exp_avg"] = state_like(p)
            state["exp_avg_sq"] = state_like(p)
        if group["maximize"]:
            grad = -grad
        step = bump(state["step"])
        beta1, beta2 = map(to_scalar, group["betas"])
        lr = to_scalar(group["lr"])
        bias_correction2 = 1 - beta2**step
        weight_decay = group["weight_decay"]
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p._data *= 1 - lr * weight_decay
            else:
                grad = grad + weight_decay * p._data
        momentum_decay = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product = state["mu_product"]._data
        mu_product *= mu  # in the counter's own dtype (float32 until a load casts it)
        mu_product = float(mu_product)
        mu_product_next = mu_product * mu_next
        param, grad = real_view(p._data), real_view(grad)
        exp_avg = real_view(state["exp_avg"]._data)
        exp_avg_sq = real_view(state["exp_avg_sq"]._data)
        lerp_(exp_avg, grad, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        denom = sqrt(exp_avg_sq / bias_correction2)
        denom += group["eps"]
        param += (-lr * (1.0 - mu) / (1.0 - mu_product)) * (grad / denom)
        param += ((-lr * mu_next) / (1.0 - mu_product_next)) * (exp_avg / denom)
