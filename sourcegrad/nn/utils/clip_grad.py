"""Gradient clipping: `clip_grad_norm_` (by the total norm of all gradients) and
`clip_grad_value_` (elementwise), with torch's arithmetic.

The total norm is the `norm_type` vector norm of the per-gradient norms (inf: the
largest absolute value, 0: the count of non-zeros), computed in the gradients' dtype
and returned as a 0-d Tensor. Every gradient is then multiplied in place by
min(max_norm / (total_norm + 1e-6), 1), as torch does (even when that is 1).
"""

import math
import types
import warnings

import numpy as np

from ...eager import devices
from ...eager.tensor import Tensor

__all__ = [
    "clip_grad_norm_",
    "clip_grad_norm",
    "clip_grad_value_",
    "get_total_norm",
    "clip_grads_with_norm_",
]


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _vector_norm(data, norm_type):
    """torch.linalg.vector_norm of an array, as an array of data's dtype."""
    xp = devices.xp_of(data)
    a = xp.abs(data)
    if norm_type == math.inf:
        return a.max() if a.size else xp.zeros((), a.dtype)
    if norm_type == -math.inf:
        return a.min()
    if norm_type == 0:
        return (a != 0).sum().astype(a.dtype)
    if norm_type == 1:
        return a.sum()
    if norm_type == 2:
        return xp.sqrt((a * a).sum())
    return (a**norm_type).sum() ** (1.0 / norm_type)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (a 0-d Tensor; tensor(0.) when there are none)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return Tensor._make(np.array(0.0, np.float32))
    norms = [devices.host(_vector_norm(t._data, norm_type)) for t in tensors]
    dtype = np.result_type(*norms)
    total = np.asarray(_vector_norm(np.stack([n.astype(dtype) for n in norms]), norm_type))
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return Tensor._make(devices.to_device(total, devices.device_of(tensors[0]._data)))


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients in place by min(max_norm / (total_norm + 1e-6), 1)."""
    grads = [p._grad for p in _as_list(parameters) if p._grad is not None]
    if not grads:
        return
    total = total_norm._data
    coef = float(max_norm) / (total + 1e-6)
    coef = devices.xp_of(coef).minimum(coef, 1.0)
    for g in grads:
        # (an inf gradient times a coefficient of 0 is nan, silently, as in torch)
        with np.errstate(invalid="ignore", over="ignore"):
            g._data *= devices.to_device(coef, devices.device_of(g._data)).astype(g._data.dtype)
        g._get_vc().value += 1


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clip the gradients of `parameters` to a total norm of max_norm; returns the total
    norm they had (a Tensor)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn(
                "`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2
            )
    grads = [p._grad for p in parameters if p._grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of clip_grad_norm_ (a FutureWarning, as torch)."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient elementwise to [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p._grad is not None:
            g = p._grad._data
            xp = devices.xp_of(g)
            xp.clip(g, -clip_value, clip_value, out=g)
            p._grad._get_vc().value += 1
