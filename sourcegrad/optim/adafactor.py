"""`Adafactor`: second moments kept as row and column factors (Shazeer and Stern, 2018),
as torch 2.5+ has it (lr caps the relative step and scales decoupled weight decay).

torch's single-tensor rule, step t: b = t**beta2_decay; rho = min(lr, 1 / sqrt(t));
alpha = max(eps2, RMS(p)) * rho; p *= 1 - lr * weight_decay; for a matrix (or a stack of
them) the row and column means of g * g are lerped into `row_var` and `col_var` with
weight b, and v = row_var @ col_var / max(mean(row_var), eps1); for a vector v (`variance`)
is lerped towards g * g. u = g / sqrt(max(v, eps1**2)); p -= alpha / max(1, RMS(u) / d) * u.
eps1 defaults to the machine epsilon of the first parameter's dtype, as in torch.
"""

import numpy as np

from ..eager import devices
from ..eager.tensor import Tensor
from ._functional import lerp_, to_scalar
from .optimizer import Optimizer, bump, scalar_step

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    def __init__(
        self,
        params,
        lr=1e-2,
        beta2_decay=-0.8,
        eps=(None, 1e-3),
        d=1.0,
        weight_decay=0.0,
        *,
        foreach=None,
        maximize=False,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": eps,
            "d": d,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def step(self, closure=None):
        """As the base step, with torch's refusal of complex parameters first (before any
        parameter of the step is updated)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is not None and p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
        return Optimizer.step.__wrapped__(self, closure)

    def _update(self, p, grad, group):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = scalar_step()
            if grad.ndim > 1:
                state["row_var"] = _zeros(grad, grad.shape[:-1] + (1,))
                state["col_var"] = _zeros(grad, grad.shape[:-2] + (1,) + grad.shape[-1:])
            else:
                state["variance"] = _zeros(grad, grad.shape)
        if group["maximize"]:
            grad = -grad
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(np.finfo(p._data.dtype).eps)
        step = bump(state["step"])
        xp = devices.xp_of(p._data)
        lr = to_scalar(group["lr"])
        one_minus_beta2_t = step ** group["beta2_decay"]
        rho_t = min(lr, 1 / (step**0.5))
        param = p._data
        alpha = max(eps2, float(xp.linalg.norm(param.reshape(-1))) / (param.size**0.5)) * rho_t
        if group["weight_decay"] != 0:
            param *= 1 - lr * group["weight_decay"]
        if grad.ndim > 1:
            row_var, col_var = state["row_var"]._data, state["col_var"]._data
            lerp_(
                row_var,
                (grad * grad).sum(axis=-1, keepdims=True) / grad.shape[-1],
                one_minus_beta2_t,
            )
            lerp_(
                col_var,
                (grad * grad).sum(axis=-2, keepdims=True) / grad.shape[-2],
                one_minus_beta2_t,
            )
            var_estimate = row_var @ col_var
            var_estimate /= xp.maximum(row_var.mean(axis=-2, keepdims=True), eps1)
        else:
            variance = state["variance"]._data
            lerp_(variance, grad * grad, one_minus_beta2_t)
            var_estimate = variance.copy()
        update = 1 / xp.sqrt(xp.maximum(var_estimate, eps1 * eps1))
        update *= grad
        rms = float(xp.linalg.norm(update.reshape(-1))) / ((update.size**0.5) * group["d"])
        param -= (alpha / max(1.0, rms)) * update


def _zeros(like, shape):
    """A zero state buffer of the gradient's dtype and device (torch's grad.new_zeros)."""
    return Tensor._make(devices.xp_of(like).zeros(shape, dtype=like.dtype))
