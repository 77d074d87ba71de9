"""`F.pad`: constant, reflect, replicate and circular padding, with torch's nodes.

* constant: the registry's primitive "constant_pad" (`ops.nn_layers`; ConstantPadNdBackward0).
  A negative width crops; the VJP is the same op with the widths negated (crop what was
  padded, pad with zeros what was cropped), so it records itself under create_graph (the
  VJP's `nn_layers.constant_pad` of a Tensor dispatches to `constant_pad` here).
* reflect, replicate, circular: a gather of the input through one index array per padded
  dim (ReflectionPad{k}DBackward0, ReplicationPad{k}DBackward0; torch builds circular
  padding from slice copies, CopySlices, whose gradient the same gather gives). Its VJP
  is the table's `getitem` rule (a scatter-add), which is differentiable again.

`pad` is torch's pad sequence: (left, right) of the last dim first, then the dim before.

Imports: numpy, `ops.nn_layers`, the eager ops.
"""

from __future__ import annotations

from ..eager import devices, numpy_dispatch, operands, shape_ops
from ..eager.spec import OpSpec, record
from ..eager.tensor import Tensor
from ..ops import nn_layers

__all__ = ["pad", "constant_pad"]

_wrap = Tensor._make


CONSTANT_PAD = OpSpec("ConstantPadNdBackward0", "constant_pad", n_arrays=1)


def constant_pad(input, widths, value=0):
    """The constant pad of an array or a Tensor (the VJP calls it with either)."""
    if not isinstance(input, Tensor):
        return nn_layers.pad_array(input, widths, value)
    out = _wrap(nn_layers.pad_array(input._data, widths, value))
    if operands.needs_grad(input):
        record(CONSTANT_PAD, out, (input,), {"widths": tuple(widths)})
    return out


# the entry's VJP calls `nn_layers.constant_pad`; on Tensors it is this op
numpy_dispatch.FUNCTIONS[nn_layers.constant_pad] = constant_pad


_SUPPORTED = (
    "Supported combinations for non-constant padding:\n"
    "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
)


def _source_index(mode, n, lo, hi, xp):
    """For each position of a padded dim of size n, the input position it copies."""
    if mode == "circular":
        # torch crops the negative widths first, then wraps around what is left
        start = max(-lo, 0)
        m = n - start - max(-hi, 0)
        return start + xp.arange(-max(lo, 0), m + max(hi, 0)) % m
    p = xp.arange(-lo, n + hi)
    if mode == "replicate":
        return xp.clip(p, 0, n - 1)
    p = xp.abs(p)
    return xp.where(p >= n, 2 * (n - 1) - p, p)


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad."""
    widths = tuple(int(w) for w in pad)
    ndim = input._data.ndim
    shape = input._data.shape
    if len(widths) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(widths) // 2
    if k > ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input "
            f"dimension but got padding length {len(widths)} and input of "
            f"dimension {ndim}"
        )
    if mode == "constant":
        for i in range(k):
            axis = ndim - 1 - i
            if shape[axis] + widths[2 * i] + widths[2 * i + 1] < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        return constant_pad(input, widths, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if k not in (1, 2, 3) or ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(widths)} is not supported for {ndim}D input tensor.\n{_SUPPORTED}"
        )
    xp = devices.xp_of(input._data)
    index = []
    for i in range(k):
        axis = ndim - 1 - i
        n, lo, hi = shape[axis], widths[2 * i], widths[2 * i + 1]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(
                "Argument #4: Padding size should be less than the "
                f"corresponding input dimension, but got: padding ({lo}, {hi}) "
                f"at dimension {axis} of input {list(shape)}"
            )
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n == 0:
            raise RuntimeError(f"input tensor must have a non-empty dimension {axis}")
        src = _source_index(mode, n, lo, hi, xp)
        index.insert(0, src.reshape((-1,) + (1,) * i))  # open mesh: the last dim varies fastest
    key = (slice(None),) * (ndim - k) + tuple(index)
    name = (
        "CopySlices"
        if mode == "circular"
        else f"{'ReflectionPad' if mode == 'reflect' else 'ReplicationPad'}{k}DBackward0"
    )
    return shape_ops.pick(input, name, key)
