"""`out=` for functions whose op takes none: torch.maximum/minimum, mm, bmm, logsumexp,
logcumsumexp, argmax/argmin, all/any.

Takes the surface's table of functions (`surface.FUNCTIONS`) once the op modules are
imported, and replaces each of these functions by one that also takes `out=`: the op's
result written into out by `out_arg.write_out` (resize, cast, version bump, torch's refusal
of out= where grad is recorded), after the dtype check torch's out= variant of that op makes
(mm's out of the result's dtype only, argmax's a long, all's a bool or uint8, ...). The Tensor
methods stay the op itself: torch's take no out= either (`x.argmax(out=o)` is a TypeError).

Imports: `surface`, `out_arg`, `dtypes`, `tensor`; only `eager/__init__` imports it (before
it reads `surface.FUNCTIONS`).
"""

from __future__ import annotations

from . import dtypes, surface
from .out_arg import write_out
from .tensor import Tensor


def _same_dtype(name, out, made):
    if out.dtype is not made.dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {made.dtype._c_name}, but got "
            f"{out.dtype._c_name} instead"
        )


def _long(name, out, made):
    if out.dtype is not dtypes.int64:
        raise RuntimeError(
            f"Expected out tensor to have dtype long int, but got {out.dtype._c_name} instead"
        )


def _mask(name, out, made):
    if out.dtype not in (dtypes.bool, dtypes.uint8):
        raise RuntimeError(
            f"{name} only supports bool tensor for result, got: {out.dtype._scalar_name}"
        )


def _floating(name, out, made):
    if not out.dtype.is_floating_point:
        raise RuntimeError(
            f"{name}(): Expected floating point type for result tensor, but got: "
            f"{out.dtype._scalar_name}"
        )


def _scan_dtype(name, out, made):
    if out.dtype is not made.dtype:
        raise RuntimeError(
            f"expected scalar_type {made.dtype._scalar_name} but found {out.dtype._scalar_name}"
        )


# name -> (torch's dtype check of out, whether the op is differentiable: an out= of one is
# refused while grad is recorded for an input requiring grad, as torch's)
_CHECKS = {
    "maximum": (None, True),
    "minimum": (None, True),
    "mm": (_same_dtype, True),
    "bmm": (_same_dtype, True),
    "logsumexp": (_floating, True),
    "logcumsumexp": (_scan_dtype, True),
    "argmax": (_long, False),
    "argmin": (_long, False),
    "all": (_mask, False),
    "any": (_mask, False),
}


def with_out(name, op, check, differentiable):
    """`op` taking `out=` too (the function torch.<name>)."""

    def function(*args, out=None, **kwargs):
        made = op(*args, **kwargs)
        if out is None:
            return made
        if not isinstance(out, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if check is not None:
            check(name, out, made)
        inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        if not differentiable:
            # (argmax's, all's inputs may require grad, as in torch: only out's overlap with
            # them is checked, on detached views of the same memory)
            inputs = [a.detach() for a in inputs]
        return write_out(name, out, made, inputs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = op.__doc__
    function.op = op
    return function


def install():
    """Replace the functions of `_CHECKS` in the surface's table by their out= forms."""
    for name, (check, differentiable) in _CHECKS.items():
        op = surface.FUNCTIONS[name]
        if getattr(op, "op", None) is not None:
            continue  # (installed already)
        surface.FUNCTIONS[name] = with_out(name, op, check, differentiable)
