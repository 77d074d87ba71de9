"""`Adam` and `AdamW` with torch's bias correction, eps placement, amsgrad and maximize.

torch's single-tensor rule, step t (a float32 counter in state['step']):
m = lerp(m, g, 1 - beta1); v = beta2 * v + (1 - beta2) * g * g;
p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps), with
sqrt(max over steps of v) under amsgrad. Weight decay adds weight_decay * p to g,
or (AdamW, decoupled) multiplies p by 1 - lr * weight_decay first.
"""

from ..eager.tensor import Tensor
from ._functional import check_lr, lerp_, maximum, real_view, sqrt, to_scalar
from ._together import gathered, scatter, small_ones
from .optimizer import Optimizer, bump, scalar_step, state_like

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        amsgrad=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
        fused=None,
        decoupled_weight_decay=False,
    ):
        check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not (
            (isinstance(betas[0], float) and isinstance(betas[1], float))
            or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))
        ):
            raise ValueError("betas must be either both floats or both Tensors")
        betas = tuple(map(to_scalar, betas))
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        if group["maximize"]:
            grad = -grad
        state = self.state[p]
        if len(state) == 0:
            state["step"] = scalar_step()
            state["exp_avg"] = state_like(p)
            state["exp_avg_sq"] = state_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = state_like(p)
        lr = to_scalar(group["lr"])
        param = real_view(p._data)
        step = bump(state["step"])
        weight_decay = group["weight_decay"]
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                param *= 1 - lr * weight_decay
            else:
                grad = grad + weight_decay * p._data
        exp_avg = real_view(state["exp_avg"]._data)
        exp_avg_sq = real_view(state["exp_avg_sq"]._data)
        max_sq = real_view(state["max_exp_avg_sq"]._data) if group["amsgrad"] else None
        param -= _step(real_view(grad), exp_avg, exp_avg_sq, max_sq, step, lr, group)

    def _update_together(self, group, params):
        """The update of the group's small parameters over their gradients end to end
        (`_together`), where decay, if any, is decoupled and amsgrad is off; the others are
        returned, for `_update`."""
        if group["amsgrad"] or (group["weight_decay"] and not group["decoupled_weight_decay"]):
            return params
        params, rest = small_ones(params)
        found = gathered(self, group, params, ("exp_avg", "exp_avg_sq"))
        if found is None:
            return params + rest
        grad, buffers, step, bounds = found
        if group["maximize"]:
            grad = -grad
        lr = to_scalar(group["lr"])
        if group["weight_decay"]:
            for p in params:
                data = p._data
                data *= 1 - lr * group["weight_decay"]
        update = _step(grad, buffers["exp_avg"], buffers["exp_avg_sq"], None, step, lr, group)
        scatter(params, bounds, update)
        return rest


def _step(grad, exp_avg, exp_avg_sq, max_sq, step, lr, group):
    """Update the moments in place; return what the parameter takes away (one parameter's
    arrays, or a group's end to end: the same arithmetic element by element)."""
    beta1, beta2 = group["betas"]
    lerp_(exp_avg, grad, 1 - beta1)
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * grad * grad
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2**0.5
    if max_sq is not None:
        maximum(max_sq, exp_avg_sq, out=max_sq)
        denom = sqrt(max_sq) / bias_correction2_sqrt + group["eps"]
    else:
        denom = sqrt(exp_avg_sq) / bias_correction2_sqrt + group["eps"]
    return step_size * (exp_avg / denom)


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01)."""

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        maximize=False,
        foreach=None,
        capturable=False,
        differentiable=False,
        fused=None,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
