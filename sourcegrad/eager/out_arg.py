"""torch's `out=` argument: a result written into a tensor the caller gives.

`write_out(name, out, result, inputs)` writes the Tensor `result` into `out` (resized where
its shape differs, cast to out's dtype), bumps out's version and returns `out`, as torch's
out= variants do; with torch's errors: an out= function is not differentiable (an input or
out requiring grad, with grad mode on, is a RuntimeError), and a result type out cannot
hold is refused. `store(out, data)` is the write itself, which the factories' out= uses
(`factories._into`, with their own checks). `pop_out(kwargs)` takes `out=` out of the
**kwargs of an op that takes them for numpy's spellings (axis=, keepdims=).

`refuse_partial_overlap` is torch's check of an operand sharing part of the memory written
(in-place ops' too).

Imports: tensor, devices, dtypes, grad_mode, messages only.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import devices, dtypes, grad_mode, messages
from .tensor import Tensor


def _dense(d):
    """Whether the array's elements fill its memory span exactly (torch's non-overlapping and
    dense: strides a permutation of a contiguous layout's)."""
    expected = d.itemsize
    for stride, size in sorted((st, n) for st, n in zip(d.strides, d.shape) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def refuse_partial_overlap(self, others):
    """torch's RuntimeError where an operand of an in-place write shares part of self's memory
    (`y[1:] += y[:-1]`, `y.add_(y.t())`, `y.add_(y[0])`): torch refuses what numpy computes
    from a copy, so that such code ran here and raises in torch. As torch's check: only
    operands of self's storage, dense ones (a strided view is not checked), the same span
    with the same strides being self itself."""
    a = self._data
    if type(a) is not np.ndarray or not a.size:
        return
    vc = self._vc
    for o in others:
        if not isinstance(o, Tensor) or o._vc is not vc or vc is None or o is self:
            continue
        b = o._data
        if not b.size or not _dense(a) or not _dense(b):
            continue
        a0, b0 = a.__array_interface__["data"][0], b.__array_interface__["data"][0]
        a1, b1 = a0 + a.nbytes, b0 + b.nbytes
        if (a0 == b0 and a1 == b1 and a.strides == b.strides) or not (a0 < b1 and b0 < a1):
            continue
        raise RuntimeError(messages.PARTIAL_OVERLAP)


def pop_out(kwargs):
    """The `out=` among an op's **kwargs, removed from them (None where not given). Such an op
    (sum, mean, cumsum, var, softmax, ...) swallowed it: `torch.sum(x, 0, out=o)` returned the
    sum and left o as it was, where torch writes it into o."""
    return kwargs.pop("out", None) if kwargs else None


def no_out(name, kwargs):
    """torch's TypeError for `out=` given to an op that takes none as sourcegrad writes it."""
    if kwargs and "out" in kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument 'out'")


def no_keywords(name, kwargs):
    """torch's TypeError for a keyword left in an op's **kwargs once it has read its own (they
    were dropped: `torch.cat(ts, 0, dtype=...)` ran as if not given)."""
    if kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")


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
    refuse_partial_overlap(out, inputs)  # (torch.exp(y[:-1], out=y[1:]))
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
