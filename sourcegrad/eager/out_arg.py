"""torch's `out=` argument: a result written into a tensor the caller gives.

`write_out(name, out, result, inputs)` writes the Tensor `result` into `out` (resized where
its shape differs, cast to out's dtype), bumps out's version and returns `out`, as torch's
out= variants do; with torch's errors: an out= function is not differentiable (an input or
out requiring grad, with grad mode on, is a RuntimeError), and a result type out cannot
hold is refused. `store(out, data)` is the write itself, which the factories' out= uses
(`factories._into`, with their own checks).

Imports: tensor, devices, dtypes, grad_mode only.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import devices, dtypes, grad_mode
from .tensor import Tensor


def write_out(name, out, result, inputs=()):
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if grad_mode.is_grad_enabled() and (
        out.requires_grad or any(isinstance(t, Tensor) and t.requires_grad for t in inputs)
    ):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    if not dtypes.can_cast(result.dtype, out.dtype):
        raise RuntimeError(
            f"result type {result.dtype._scalar_name} can't be cast to the "
            f"desired output type {out.dtype._scalar_name}"
        )
    return store(out, result._data)


def store(out, data):
    """Write the array `data` into the Tensor `out` (resized where its shape differs, with
    torch's warning when out held elements; cast to out's dtype), bump its version, return it."""
    if type(data) is not type(out._data):
        data = devices.to_device(data, devices.device_of(out._data))
    if out._data.shape != data.shape:  # resized: new memory, as torch's resize of out
        if out._data.size:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"[{', '.join(map(str, out._data.shape))}], which does not match the required "
                f"output shape [{', '.join(map(str, data.shape))}]. This behavior is "
                "deprecated, and in a future PyTorch release outputs will not be resized unless "
                "they have zero elements. You can explicitly reuse an out tensor t by resizing "
                "it, inplace, to zero elements with t.resize_(0).",
                UserWarning,
                stacklevel=3,
            )
        out._data = data.astype(out._data.dtype, copy=True)
    else:
        np.copyto(out._data, data, casting="unsafe")
    out._get_vc().value += 1
    return out
