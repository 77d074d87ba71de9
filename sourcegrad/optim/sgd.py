"""`SGD`: stochastic gradient descent with momentum, dampening, Nesterov, weight decay, maximize.

torch's single-tensor rule: g = ±grad + weight_decay * p; buf = g on the first step,
then buf = momentum * buf + (1 - dampening) * g; the step is p -= lr * (g + momentum *
buf) with Nesterov, else p -= lr * buf. `state[p]['momentum_buffer']` exists only when
momentum is non-zero, as in torch.
"""

from ..eager.tensor import Tensor
from ._functional import check_lr, to_scalar
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(
        self,
        params,
        lr=1e-3,
        momentum=0,
        dampening=0,
        weight_decay=0,
        nesterov=False,
        *,
        maximize=False,
        foreach=None,
        differentiable=False,
        fused=None,
    ):
        check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _update(self, p, grad, group):
        if group["maximize"]:
            grad = -grad
        weight_decay = group["weight_decay"]
        if weight_decay != 0:
            grad = grad + weight_decay * p._data
        momentum = group["momentum"]
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = Tensor._make(grad.copy())
            else:
                buf._data *= momentum
                buf._data += (1 - group["dampening"]) * grad
            grad = grad + momentum * buf._data if group["nesterov"] else buf._data
        p._data -= to_scalar(group["lr"]) * grad
