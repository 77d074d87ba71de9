"""`sourcegrad.autograd.forward_ad`: torch.autograd.forward_ad for the eager Tensor.

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, tangent)
        y = f(x)
        value, jvp = forward_ad.unpack_dual(y)

`make_dual` gives a view of `primal` carrying `tangent`; every op on it gives its result
the tangent its registry entry derives (`sourcegrad.eager.forward_ad`); `unpack_dual`
returns `UnpackedDualTensor(primal, tangent)`; leaving the level drops every tangent made
in it. As in torch 2.13 there is one level at a time: entering a second one inside the
first raises torch's "Nested forward mode AD is not supported at the moment" (and leaves
the first open); `level=` may name only the open level (0), and every error, for a level
that is not open, a negative one or an exit without a level, is torch's.
"""

from __future__ import annotations

from collections import namedtuple

from ..eager import shape_ops
from ..eager.dual_state import DUAL, forget_all, set_tangent, tangent_of
from ..eager.tensor import Tensor

__all__ = [
    "UnpackedDualTensor",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
    "dual_level",
]

_NO_LEVEL = (
    "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
    "enter_dual_level() first."
)


def enter_dual_level() -> int:
    """Open the (one) dual level and return its index, 0."""
    if DUAL.level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    DUAL.level = 0
    DUAL.on = True
    DUAL.epoch += 1
    return 0


def exit_dual_level(*, level=None) -> None:
    """Close the level: every tangent made in it is dropped."""
    current = _current_level()
    if level is None:
        level = current
    if level != current:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that "
            "was created. This is not supported."
        )
    if level < 0:  # (torch's check, reached when no level is open)
        raise RuntimeError("Dual level must be a positive number.")
    forget_all()
    DUAL.level = None
    DUAL.on = False


def _current_level():
    """The open level's index, or -1 when none is open (torch's `_current_level`)."""
    return -1 if DUAL.level is None else DUAL.level


class dual_level:  # noqa: N801 - torch's name
    """Context manager: `with dual_level(): ...` opens a level and closes it on the way out."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _check_level(level):
    """torch's checks of `make_dual(level=)`, in its order, with its messages."""
    if level is None:
        level = _current_level()
    if level < 0:
        raise RuntimeError(_NO_LEVEL)
    if DUAL.level is None:
        raise RuntimeError(
            "Trying to access a forward AD level with an invalid index. This index was "
            "either not created or is already deleted."
        )
    if level != DUAL.level:
        raise RuntimeError("Invalid level given to _make_dual")


def make_dual(tensor, tangent, *, level=None):
    """A view of `tensor` whose tangent is `tangent` (same size; floating or complex)."""
    _check_level(level)
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}"
        )
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}"
        )
    if tangent_of(tensor) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward "
            f"gradient at the same level {DUAL.level} is not supported."
        )
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than "
            "that of the original Tensor, this is not supported. Tensor is of "
            f"size {list(tensor.shape)} while the given forward gradient is of "
            f"size {list(tangent.shape)}."
        )
    dual = _alias(tensor)
    set_tangent(dual, tangent)
    return dual


UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = (
    "What `unpack_dual` returns: the primal (a view without tangent) "
    "and the tangent (a Tensor, or None)."
)


def unpack_dual(tensor, *, level=None):
    """`UnpackedDualTensor(primal, tangent)`; tangent is None when `tensor` carries none."""
    if level is None:
        level = _current_level()
    if level < 0:  # no level: torch returns the tensor itself, whatever it carries
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, Tensor):
        raise TypeError(
            "_unpack_dual(): argument 'dual' (position 1) must be Tensor, not "
            f"{type(tensor).__name__}"
        )
    t = tangent_of(tensor)
    if t is None:
        return UnpackedDualTensor(tensor, None)
    if level != DUAL.level:
        raise RuntimeError("Invalid level given to _fw_primal")
    return UnpackedDualTensor(_alias(tensor), t)


def _alias(tensor):
    """A view of `tensor` (ViewBackward0 when it requires grad) that does not get its tangent."""
    on = DUAL.on
    DUAL.on = False
    try:
        return shape_ops.view_as(tensor, tensor)
    finally:
        DUAL.on = on
