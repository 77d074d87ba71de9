"""The state of forward-mode AD: the open dual level and the tangents living in it.

A tangent is stored on its tensor (`Tensor._extra.fw_grad`); the level remembers which
tensors hold one (weakly), so that leaving it forgets them all, as torch's
`exit_dual_level` does. `DUAL.on` is what every op reads: True while a level is open and
no tangent is being computed (a tangent's own computation runs with it off, since torch
has no nested levels).

Imports: nothing of sourcegrad (a leaf of the eager package, like `grad_mode`).
"""

from __future__ import annotations

import weakref


class _Dual:
    """The one forward level (torch allows no nesting), and whether ops propagate tangents."""

    __slots__ = ("on", "level", "holders", "epoch")

    def __init__(self):
        self.on = False
        self.level = None
        self.holders = []  # weak references to the tensors given a tangent at this level
        # how many levels have been entered: a tangent a graph node keeps for its saved
        # result (`RuleNode._fw_ans`) is used only in the level that made it
        self.epoch = 0


DUAL = _Dual()


def tangent_of(t):
    """The tangent of tensor `t` at the open level, or None."""
    extra = t._extra
    return None if extra is None else extra.fw_grad


def set_tangent(t, tangent) -> None:
    """Give `t` (a Tensor) its tangent at the open level."""
    extra = t._get_extra()
    if extra.fw_grad is None and tangent is not None:
        DUAL.holders.append(weakref.ref(t))
    extra.fw_grad = tangent


def any_tangent(args) -> bool:
    """Whether one of `args` (Tensors or other values) carries a tangent."""
    for a in args:
        extra = getattr(a, "_extra", None)
        if extra is not None and extra.fw_grad is not None:
            return True
    return False


def forget_all() -> None:
    """Leave the level: every tangent made in it is dropped."""
    for ref in DUAL.holders:
        t = ref()
        if t is not None and t._extra is not None:
            t._extra.fw_grad = None
    DUAL.holders = []
