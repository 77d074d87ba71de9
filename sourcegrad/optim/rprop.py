"""`Rprop`: resilient backpropagation, per-coordinate step sizes from gradient signs.

torch's single-tensor rule: s = sign(g * prev); step_size *= etaplus where s > 0,
etaminus where s < 0 (1 where 0), clamped to step_sizes; where s < 0 the gradient is
taken as 0 (no move, and no sign at the next step); p -= sign(g) * step_size; prev = g.
State: `step`, `prev`, `step_size` (filled with lr, lr + lr j for complex parameters).
"""

from ..eager import devices
from ._functional import check_lr, real_view, to_scalar
from .checks import refuse_tracked_update
from .optimizer import Optimizer, bump, scalar_step, state_like

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(
        self,
        params,
        lr=1e-2,
        etas=(0.5, 1.2),
        step_sizes=(1e-6, 50),
        *,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {
            "lr": lr,
            "etas": etas,
            "step_sizes": step_sizes,
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
            lr = to_scalar(group["lr"])
            state["step"] = scalar_step()
            state["prev"] = state_like(p)
            state["step_size"] = state_like(p, complex(lr, lr) if p.is_complex() else lr)
        if group["maximize"]:
            grad = -grad
        bump(state["step"])
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        param, grad = real_view(p._data), real_view(grad).copy()
        prev = real_view(state["prev"]._data)
        step_size = real_view(state["step_size"]._data)
        sign = sign_of(grad * prev)
        factor = sign.copy()
        factor[sign > 0] = etaplus
        factor[sign < 0] = etaminus
        factor[sign == 0] = 1
        step_size *= factor
        step_size.clip(step_size_min, step_size_max, out=step_size)
        # where the sign flipped the last move overshot: no move now, and no sign to
        # compare at the next step (torch zeroes the gradient there)
        grad[factor == etaminus] = 0
        param -= sign_of(grad) * step_size
        prev[...] = grad


def sign_of(data):
    """Elementwise sign in data's own array module (numpy or CuPy)."""
    return devices.xp_of(data).sign(data)
