"""`sourcegrad.optim`: SGD and Adam with torch's update rules and defaults.

The updates are torch's single-tensor formulas, computed with numpy in each
parameter's own dtype (so float32 parameters follow torch's float32 arithmetic
closely) and written into the parameters in place, which bumps their version
counters as torch's in-place updates do. `zero_grad()` sets `.grad` to None by
default (`set_to_none=True`), or zeroes it in place.
"""
import math

import numpy as np

from .eager.grad_mode import no_grad
from .eager.tensor import Tensor

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class: parameter groups with their hyper-parameters, per-parameter state."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.state = {}
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + type(params).__name__)
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group):
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for name, value in self.defaults.items():
            if value is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, value)
        for p in group["params"]:
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    g = p._grad
                    if g._grad_fn is not None:
                        p._grad = g.detach()
                        g = p._grad
                    g._data[...] = 0

    def step(self, closure=None):
        loss = None
        if closure is not None:
            from .eager.grad_mode import enable_grad
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p._grad is not None:
                        self._update(p, p._grad._data, group)
                        p._get_vc().value += 1
        return loss

    def _update(self, p, grad, group):
        raise NotImplementedError

    def state_dict(self):
        index = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        state = {index[id(p)]: s for p, s in ((p, self.state[p]) for p in self.state)}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        params = [p for g in self.param_groups for p in g["params"]]
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {params[i]: s for i, s in state_dict["state"].items()}

    def __repr__(self):
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, Nesterov, weight decay."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, p, grad, group):
        d_p = -grad if group["maximize"] else grad
        if group["weight_decay"]:
            d_p = d_p + group["weight_decay"] * p._data
        momentum = group["momentum"]
        if momentum:
            state = self.state.setdefault(p, {})
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = np.copy(d_p)  # numpy or CuPy
            else:
                buf *= momentum
                buf += (1 - group["dampening"]) * d_p
            d_p = d_p + momentum * buf if group["nesterov"] else buf
        p._data -= group["lr"] * d_p


class Adam(Optimizer):
    """Adam (Kingma & Ba), with torch's bias correction, eps placement and amsgrad."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _update(self, p, grad, group):
        grad = -grad if group["maximize"] else grad
        beta1, beta2 = group["betas"]
        lr = group["lr"]
        state = self.state.setdefault(p, {})
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p._data)
            state["exp_avg_sq"] = np.zeros_like(p._data)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = np.zeros_like(p._data)
        state["step"] += 1
        step = state["step"]
        wd = group["weight_decay"]
        if wd:
            if group["decoupled_weight_decay"]:
                p._data *= 1 - lr * wd
            else:
                grad = grad + wd * p._data
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg += (grad - exp_avg) * (1 - beta1)           # lerp, as torch computes it
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = math.sqrt(bias_correction2)
        if group["amsgrad"]:
            np.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
            denom = np.sqrt(state["max_exp_avg_sq"]) / bias_correction2_sqrt + group["eps"]
        else:
            denom = np.sqrt(exp_avg_sq) / bias_correction2_sqrt + group["eps"]
        p._data -= step_size * (exp_avg / denom)


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)
