"""Operands of the eager ops: what every op module (ops, shape_ops, inplace, numpy_dispatch)
shares to turn its arguments into numpy data and its numpy result into a Tensor.

`as_tensor` wraps an operand, `promote` readies two operands in torch's result dtype,
`result` makes numpy's output an array of that dtype, `needs_grad` says whether to
record a node, `same_device` checks devices; also `cached_spec` (OpSpecs made once),
`return_types` (torch.return_types.max and friends) and `along_index`.

Imports: numpy and, of the eager package, tensor, spec, dtypes, devices and grad_mode;
the op modules import it, never the other way round.
"""

from __future__ import annotations

import collections

import numpy as np

from . import devices, dtypes
from .dtypes import TIER_DIM, TIER_SCALAR, TIER_ZERO
from .dual_state import DUAL, any_tangent
from .grad_mode import STATE
from .spec import OpSpec
from .tensor import Tensor, stale_view_requires_grad

_wrap = Tensor._make
_FROM_NP = dtypes.FROM_NUMPY
_SCALARS = (bool, int, float, complex)
_asarray = np.asarray
_GPU = devices.DEVICE_TYPES  # the array types on a GPU (cupy.ndarray), filled when CuPy loads


def default_np():
    return dtypes.DEFAULT_DTYPE[0].dtype


def as_tensor(v, dtype=None):
    """A Tensor for an operand: Tensors pass through; scalars and arrays are wrapped."""
    if isinstance(v, Tensor):
        return v
    if dtype is None and isinstance(v, float):
        return _wrap(np.asarray(v, default_np()))
    if type(v) in _GPU:
        return _wrap(v if dtype is None else v.astype(dtype))
    return _wrap(np.asarray(v, dtype))


def wrap_array(a):
    """A Tensor for an array argument of a numpy function called on Tensors: Tensors pass
    through, arrays are wrapped as they are (no dtype change, no copy)."""
    if isinstance(a, Tensor):
        return a
    return _wrap(a if type(a) in _GPU else np.asarray(a))


# --- promotion -----------------------------------------------------------------------------


def operand_key(v):
    """(value for numpy, (dtype, tier) for promotion, value for the rule) of one operand."""
    if isinstance(v, Tensor):
        d = v._data
        return d, (_FROM_NP[d.dtype], TIER_DIM if d.ndim else TIER_ZERO), v
    if isinstance(v, _SCALARS):
        return v, (dtypes.scalar_dtype(v), TIER_SCALAR), v
    if isinstance(v, np.ndarray):
        return v, (_FROM_NP[v.dtype], TIER_DIM if v.ndim else TIER_ZERO), v
    if isinstance(v, np.generic):
        s = v.item()
        return s, (dtypes.scalar_dtype(s), TIER_SCALAR), s
    if devices.is_device_array(v):
        return v, (_FROM_NP[v.dtype], TIER_DIM if v.ndim else TIER_ZERO), v
    raise TypeError(f"unsupported operand type: {type(v).__name__}")


def wrap_dim(dim, ndim):
    """torch's maybe_wrap_dim: `dim` in [-ndim, ndim) as a non-negative axis, else torch's
    IndexError (a 0-d tensor takes dim 0 or -1, as if it were 1-d)."""
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def promote(a, b, to_float=False):
    """Both operands ready for numpy in torch's result dtype, that dtype, and the rule args."""
    if isinstance(a, Tensor):
        # the common cases need no promotion table: same dtypes, or a float tensor and a number
        ad = a._data
        tb = type(b)
        if tb is float or tb is int:
            kind = ad.dtype.kind
            if kind == "f" or (kind in "iu" and tb is int and not to_float):
                return ad, b, ad.dtype, a, b
        elif isinstance(b, Tensor):
            bd = b._data
            dt = ad.dtype
            if (
                (dt is bd.dtype or dt == bd.dtype)  # (`is` first: numpy's == costs a call)
                and type(ad) is type(bd)
                and (not to_float or dt.kind in "fc")
            ):
                return ad, bd, dt, a, b
    ad, ka, ra = operand_key(a)
    bd, kb, rb = operand_key(b)
    if type(ad) is not type(bd) and (
        (type(ad) in _GPU and type(bd) is np.ndarray)
        or (type(bd) in _GPU and type(ad) is np.ndarray)
    ):
        a, b = _one_device(a, b, ad, bd)
        ad, ka, ra = operand_key(a)
        bd, kb, rb = operand_key(b)
    r = dtypes.result_type(ka, kb)
    if to_float and not (r.is_floating_point or r.is_complex):
        r = dtypes.DEFAULT_DTYPE[0]
    rd = r.dtype
    if type(ad) is np.ndarray or type(ad) in _GPU:
        if ad.dtype != rd:
            ad = ad.astype(rd)
    elif to_float and isinstance(ad, int):
        ad = float(ad)
    if type(bd) is np.ndarray or type(bd) in _GPU:
        if bd.dtype != rd:
            bd = bd.astype(rd)
    elif to_float and isinstance(bd, int):
        bd = float(bd)
    return ad, bd, rd, ra, rb


def _one_device(a, b, ad, bd):
    """Operands on a GPU and on the CPU: a 0-d CPU one joins the other's device, as in torch.

    A 0-d CPU tensor moves through `to` (ToCopyBackward0), so its gradient comes back to
    the CPU; anything else on two devices is torch's error.
    """
    if type(ad) is np.ndarray and ad.ndim == 0 and type(bd) in _GPU:
        return _to_device_of(a, bd), b
    if type(bd) is np.ndarray and bd.ndim == 0 and type(ad) in _GPU:
        return a, _to_device_of(b, ad)
    raise devices.mixed(ad, bd)


def _to_device_of(v, data):
    dev = devices.device_of(data)
    if isinstance(v, Tensor):
        return v.to(dev)  # the `to` op (ToCopyBackward0), installed by methods.py
    return devices.to_device(v, dev)


def data_of(v):
    """The array behind an operand: a Tensor's data, a GPU array, else numpy's array of it."""
    if isinstance(v, Tensor):
        return v._data
    return v if type(v) in _GPU else np.asarray(v)


def same_device(*values):
    """Raise torch's error unless the Tensors and arrays among `values` share one device."""
    devices.check_same(*[v._data if isinstance(v, Tensor) else v for v in values])


def result(out, rd=None):
    """numpy gives scalars for 0-d results; a Tensor always wraps an ndarray of dtype rd."""
    if type(out) is not np.ndarray and type(out) not in _GPU:
        out = _asarray(out)
    if rd is not None and out.dtype != rd:
        out = out.astype(rd)
    return out


def needs_grad(*args):
    """Whether an op on `args` must call `spec.record`: to make a node (`grad_required`) or
    to give its result a tangent (a dual level open and an argument carries one)."""
    return grad_required(*args) or (DUAL.on and any_tangent(args))


def grad_required(*args):
    """Whether grad mode is on and one of `args` requires grad (a node must be made)."""
    if STATE.enabled:
        for a in args:
            if isinstance(a, Tensor) and (
                a._requires_grad or (a._base is not None and stale_view_requires_grad(a))
            ):
                return True
    return False


_SPEC_CACHE: dict = {}


def cached_spec(node_name, rule_name, **kw):
    """An OpSpec made once per (node, rule, options)."""
    key = (node_name, rule_name, tuple(sorted(kw.items())))
    spec = _SPEC_CACHE.get(key)
    if spec is None:
        spec = _SPEC_CACHE[key] = OpSpec(node_name, rule_name, **kw)
    return spec


class _ReturnType(tuple):
    """torch.return_types.max and friends: a (values, indices) tuple that prints like torch's."""

    _name = "max"

    def __new__(cls, values, indices):
        return tuple.__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self):
        return f"torch.return_types.{self._name}(\nvalues={self[0]!r},\nindices={self[1]!r})"


def _return_type(name):
    return type(name, (_ReturnType,), {"_name": name})


_RETURN_TYPES = (
    "max",
    "min",
    "sort",
    "topk",
    "kthvalue",
    "mode",
    "median",
    "nanmedian",
    "cummax",
    "cummin",
)
return_types = collections.namedtuple("return_types", _RETURN_TYPES)(
    *(_return_type(n) for n in _RETURN_TYPES)
)


def along_index(indices, axis, ndim):
    """The advanced index that picks x[..., indices[...], ...] along `axis` (take_along_axis)."""
    index = []
    for a in range(ndim):
        if a == axis:
            index.append(indices)
        else:
            shape = [1] * indices.ndim
            shape[a] = indices.shape[a]
            xp = np if type(indices) is np.ndarray else devices.xp_of(indices)
            index.append(xp.arange(indices.shape[a]).reshape(shape))
    return tuple(index)
