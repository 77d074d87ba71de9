"""Argument checks and the `differentiable` guard shared by the optimizers added after the
first six (Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop), with torch's messages."""

from ..errors import NoRuleError
from ._functional import check_lr, to_scalar

__all__ = ["check_adam_like", "check_non_negative", "refuse_tracked_update"]


def check_non_negative(what, value):
    """torch's `if not 0.0 <= value: raise ValueError(f"Invalid {what} value: {value}")`."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what} value: {value}")


def check_adam_like(lr, betas, eps, weight_decay):
    """The checks torch's Adamax, NAdam and RAdam constructors make, in torch's order."""
    check_lr(lr)
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    for index in (0, 1):
        if not 0.0 <= to_scalar(betas[index]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {betas[index]}")
    check_non_negative("weight_decay", weight_decay)


def refuse_tracked_update(p, group):
    """With `differentiable=True` torch runs the update with autograd on, so that a
    gradient can flow through step() into whatever p was computed from. These
    optimizers update p's array outside the autograd graph, so such a gradient would be
    silently wrong: refuse it. A leaf that requires grad is refused with the error torch
    itself raises for it (an in-place update of a leaf under autograd)."""
    if not (group.get("differentiable", False) and p.requires_grad):
        return
    if p.is_leaf:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )
    raise NoRuleError(
        f"differentiable=True: sourcegrad's optimizers update parameters outside the "
        f"autograd graph, so the gradient through step() into a non-leaf parameter "
        f"of shape {tuple(p.shape)} would be wrong; optimize a leaf tensor instead (with "
        f"differentiable=False), e.g. a detached copy"
    )
