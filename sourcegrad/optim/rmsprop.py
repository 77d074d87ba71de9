"""`RMSprop`: squared-gradient running average, optionally centered and with momentum.

torch's single-tensor rule: v = alpha * v + (1 - alpha) * g * g; avg = sqrt(v) + eps,
or sqrt(v - m * m) + eps when centered (m = lerp(m, g, 1 - alpha)); then
buf = momentum * buf + g / avg; p -= lr * buf, or p -= lr * g / avg without momentum.
"""

from ._functional import check_lr, lerp_, real_view, sqrt, to_scalar
from .optimizer import Optimizer, bump, scalar_step, state_like

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(
        self,
        params,
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0,
        momentum=0,
        centered=False,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = scalar_step()
            state["square_avg"] = state_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = state_like(p)
            if group["centered"]:
                state["grad_avg"] = state_like(p)
        if group["maximize"]:
            grad = -grad
        bump(state["step"])
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * p._data
        alpha = group["alpha"]
        param, grad = real_view(p._data), real_view(grad)
        square_avg = real_view(state["square_avg"]._data)
        square_avg *= alpha
        square_avg += (1 - alpha) * grad * grad
        if group["centered"]:
            grad_avg = real_view(state["grad_avg"]._data)
            lerp_(grad_avg, grad, 1 - alpha)
            avg = sqrt(square_avg + -1 * grad_avg * grad_avg)
        else:
            avg = sqrt(square_avg)
        avg += group["eps"]
        lr = to_scalar(group["lr"])
        if group["momentum"] > 0:
            buf = real_view(state["momentum_buffer"]._data)
            buf *= group["momentum"]
            buf += grad / avg
            param -= lr * buf
        else:
            param -= lr * (grad / avg)
