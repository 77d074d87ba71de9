"""Reductions, scans and softmax on Tensors: sum, mean, prod, max/min, amax/amin, var/std,
norm, logsumexp, softmax, cumsum, cumprod, all/any, argmax, count_nonzero, and the plain
reductions made from the registry (nansum).

Takes Tensors with torch's arguments (`dim`, `keepdim`, `dtype`; numpy's `axis`,
`keepdims` are accepted too, because the registry's lambdas call these ops that way under
create_graph); returns Tensors recorded with the registry's reduction rules. The ops whose
torch semantics need hand code (sum's int64, max's (values, indices), var's correction) are
written here and marked `@implements("<entry>")`; their numpy call forms
(`np.sum(tensor, axis, dtype, out, keepdims)`) are the `@numpy_form` functions at the end.
A reduction the registry describes fully (`fn(x, axis=, keepdims=)`) is made by
`make_reduction` from its entry alone.

Why one module: ~600 lines, every reduction's argument handling (`_axis`, `_keepdim`, out=)
and its numpy call form beside it.

Imports: `arithmetic`, `elementwise` (maximum, minimum), `views`, `operands`, `out_arg`,
`spec`, `tensor`, `surface` and the leaves.
"""

from __future__ import annotations

import numpy as np

from .. import errors
from ..ops import RULES
from ..ops import nn as ops_nn
from . import devices, dtypes, surface
from .arithmetic import not_a_tensor, not_implemented_for
from .dual_state import DUAL, any_tangent
from .elementwise import maximum, minimum
from .grad_mode import STATE
from .operands import along_index, cached_spec, return_types, wrap_dim
from .operands import default_np as _default_np

# the shared operand helpers under the short private names this module's ops are written with
from .operands import needs_grad as _needs_grad
from .operands import result as _result
from .out_arg import no_out, pop_out, write_out
from .spec import OpSpec, record
from .surface import export, implements, numpy_form
from .tensor import Size, Tensor, stale_view_requires_grad
from .views import reshape

_wrap = Tensor._make
_GPU = devices.DEVICE_TYPES  # the array types on a GPU (cupy.ndarray), filled when CuPy loads


# --- reductions ------------------------------------------------------------------------------


def _axis(dim, ndim, kwargs=None):
    """torch's `dim` (int, tuple, list or None; negatives allowed) as a numpy axis."""
    if kwargs:
        if "axis" in kwargs:
            dim = kwargs.pop("axis")
    if dim is None:
        return None
    if isinstance(dim, (tuple, list, Size)):
        if ndim == 0:
            return None
        return tuple(sorted(wrap_dim(int(d), ndim) for d in dim))
    if ndim == 0:
        wrap_dim(int(dim), 0)
        return None  # torch accepts dim 0 / -1 on a 0-dim tensor
    return wrap_dim(int(dim), ndim)


def _keepdim(keepdim, kwargs):
    """keepdim, or numpy's keepdims=; the last of the keywords read: any other left in kwargs
    is torch's TypeError (they were dropped, an out= among them: `pop_out`)."""
    if kwargs and "keepdims" in kwargs:
        keepdim = kwargs.pop("keepdims")
    if kwargs:
        raise TypeError(f"got an unexpected keyword argument '{next(iter(kwargs))}'")
    return bool(keepdim)


SUM_ALL = OpSpec.of("sum", n_arrays=1)
SUM_DIM = OpSpec("SumBackward1", "sum", n_arrays=1)
MEAN_ALL = OpSpec.of("mean", n_arrays=1)
MEAN_DIM = OpSpec("MeanBackward1", "mean", n_arrays=1)
PROD_ALL = OpSpec.of("prod", n_arrays=1)
PROD_DIM = OpSpec("ProdBackward1", "prod", n_arrays=1)
MAX_ALL = OpSpec.of("max", n_arrays=1)
MIN_ALL = OpSpec.of("min", n_arrays=1)
AMAX = OpSpec.of("amax", n_arrays=1)
AMIN = OpSpec.of("amin", n_arrays=1)
VAR = OpSpec.of("var", n_arrays=1)
STD = OpSpec.of("std", n_arrays=1)
NORM = OpSpec("LinalgVectorNormBackward0", "vector_norm", n_arrays=1)
LOGSUMEXP = OpSpec.of("logsumexp", n_arrays=1)
SOFTMAX = OpSpec.of("softmax", n_arrays=1)
LOG_SOFTMAX = OpSpec.of("log_softmax", n_arrays=1)
CUMSUM = OpSpec.of("cumsum", n_arrays=1)
CUMPROD = OpSpec.of("cumprod", n_arrays=1)


def _reduce(spec_all, spec_dim, fn, x, dim, keepdim, kwargs, dtype=None, int_to_long=False):
    axis = _axis(dim, x._data.ndim, kwargs)
    keepdim = _keepdim(keepdim, kwargs)
    d = x._data
    if dtype is not None:
        d = d.astype(dtypes.as_dtype(dtype).dtype)
    elif int_to_long and d.dtype.kind in "biu":
        d = d.astype(np.int64)
    if type(d) is not np.ndarray:
        fn = getattr(type(d), fn.__name__)  # np.ndarray.sum -> cupy.ndarray.sum
    # an explicit dtype is the accumulator's too: numpy would sum a uint8 (or int8, ...) in
    # its platform integer (uint64, which has no torch dtype), where torch wraps in uint8
    extra = {} if dtype is None else {"dtype": d.dtype}
    out = _wrap(_result(fn(d, axis=axis, keepdims=keepdim, **extra)))
    if (
        STATE.enabled
        and (x._requires_grad or (x._base is not None and stale_view_requires_grad(x)))
        or (DUAL.on and any_tangent((x,)))
    ):
        record(
            spec_all if dim is None else spec_dim, out, (x,), {"axis": axis, "keepdims": keepdim}
        )
    return out


@implements("sum")
def sum(input, dim=None, keepdim=False, *, dtype=None, **kwargs):  # noqa: A001
    if "axis" in kwargs and kwargs["axis"] is not None:
        dim = kwargs.pop("axis")
    kwargs.pop("axis", None)
    if not isinstance(input, Tensor):
        raise not_a_tensor("sum", input)
    out = pop_out(kwargs)
    if out is not None:
        return write_out("sum", out, sum(input, dim, keepdim, dtype=dtype, **kwargs), (input,))
    return _reduce(SUM_ALL, SUM_DIM, np.ndarray.sum, input, dim, keepdim, kwargs, dtype, True)


@implements("mean")
def mean(input, dim=None, keepdim=False, *, dtype=None, **kwargs):
    if "axis" in kwargs and kwargs["axis"] is not None:
        dim = kwargs.pop("axis")
    kwargs.pop("axis", None)
    if not isinstance(input, Tensor):
        raise not_a_tensor("mean", input)
    out = pop_out(kwargs)
    if out is not None:
        return write_out("mean", out, mean(input, dim, keepdim, dtype=dtype, **kwargs), (input,))
    if dtype is None and input._data.dtype.kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a "
            "floating point or complex dtype. Got: "
            f"{input.dtype._scalar_name}"
        )
    return _reduce(MEAN_ALL, MEAN_DIM, np.ndarray.mean, input, dim, keepdim, kwargs, dtype)


@implements("prod")
def prod(input, dim=None, keepdim=False, *, dtype=None, **kwargs):
    if "axis" in kwargs and kwargs["axis"] is not None:
        dim = kwargs.pop("axis")
    kwargs.pop("axis", None)
    out = pop_out(kwargs)
    if out is not None:
        return write_out("prod", out, prod(input, dim, keepdim, dtype=dtype, **kwargs), (input,))
    return _reduce(PROD_ALL, PROD_DIM, np.ndarray.prod, input, dim, keepdim, kwargs, dtype, True)


def _pick(x, node_name, index):
    """x[index] recorded as `node_name` with the getitem rule (max(dim), gather, sort...)."""
    out = _wrap(_result(x._data[index]))
    if _needs_grad(x):
        record(cached_spec(node_name, "getitem", n_arrays=1), out, (x,), {"index": index})
    return out


def _max_min(x, dim, keepdim, other, kwargs, which):
    if isinstance(dim, Tensor):  # torch.max(x, y): elementwise
        return maximum(x, dim) if which == "max" else minimum(x, dim)
    if other is not None:
        return maximum(x, other) if which == "max" else minimum(x, other)
    if dim is None and "axis" not in kwargs:
        fn = np.ndarray.max if which == "max" else np.ndarray.min
        if x._data.size == 0:
            raise RuntimeError(
                f"{which}(): Expected reduction dim to be specified for "
                "input.numel() == 0. Specify the reduction dim with the 'dim' "
                "argument."
            )
        out = _wrap(
            _result(fn(x._data) if type(x._data) is np.ndarray else getattr(x._data, which)())
        )
        if (
            STATE.enabled
            and (x._requires_grad or (x._base is not None and stale_view_requires_grad(x)))
            or (DUAL.on and any_tangent((x,)))
        ):
            record(
                MAX_ALL if which == "max" else MIN_ALL, out, (x,), {"axis": None, "keepdims": False}
            )
        return out
    axis = _axis(dim, x._data.ndim, kwargs)
    keepdim = _keepdim(keepdim, kwargs)
    d = x._data
    refuse_empty_dim(which, d, axis)
    if d.ndim == 0:
        idx = devices.xp_of(d).zeros_like(d, np.int64)
        values = _pick(x, "MaxBackward0" if which == "max" else "MinBackward0", ())
        return getattr(return_types, which)(values, _wrap(idx))
    arg = np.argmax if which == "max" else np.argmin
    idx = np.expand_dims(arg(d, axis=axis), axis)
    index = along_index(idx, axis, d.ndim)
    if not keepdim:
        index = tuple(i.squeeze(axis) for i in index)
        idx = idx.squeeze(axis)
    values = _pick(x, "MaxBackward0" if which == "max" else "MinBackward0", index)
    return getattr(return_types, which)(values, _wrap(_result(idx, np.int64)))


def refuse_empty_dim(name, d, axis):
    """torch's IndexError for a max/min/argmax/argmin/amax/amin over a dim of size 0 (numpy's
    is a ValueError): torch has no identity to give the empty slices."""
    if d.size:
        return
    if axis is None:
        if d.size == 0:
            raise IndexError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
            )
        return
    for a in axis if isinstance(axis, tuple) else (axis,):
        if d.shape[a] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")


@implements("max")
def max(input, dim=None, keepdim=False, *, other=None, **kwargs):  # noqa: A001
    """x.max(): MaxBackward1 (ties share the gradient); x.max(dim): (values, indices)."""
    no_out("max", kwargs)
    return _max_min(input, dim, keepdim, other, kwargs, "max")


@implements("min")
def min(input, dim=None, keepdim=False, *, other=None, **kwargs):  # noqa: A001
    no_out("min", kwargs)
    return _max_min(input, dim, keepdim, other, kwargs, "min")


@implements("amax")
def amax(input, dim=(), keepdim=False, **kwargs):
    out = pop_out(kwargs)
    if out is not None:
        return write_out("amax", out, amax(input, dim, keepdim, **kwargs), (input,))
    dim = None if dim == () or dim == [] else dim
    if dim is not None:
        refuse_empty_dim("amax", input._data, _axis(dim, input._data.ndim))
    return _reduce(AMAX, AMAX, np.ndarray.max, input, dim, keepdim, kwargs)


@implements("amin")
def amin(input, dim=(), keepdim=False, **kwargs):
    out = pop_out(kwargs)
    if out is not None:
        return write_out("amin", out, amin(input, dim, keepdim, **kwargs), (input,))
    dim = None if dim == () or dim == [] else dim
    if dim is not None:
        refuse_empty_dim("amin", input._data, _axis(dim, input._data.ndim))
    return _reduce(AMIN, AMIN, np.ndarray.min, input, dim, keepdim, kwargs)


@export("argmax")
def argmax(input, dim=None, keepdim=False):
    d = input._data
    refuse_empty_dim("argmax", d, None if dim is None else _axis(dim, d.ndim))
    if dim is None:
        out = np.argmax(d)
        return _wrap(_result(np.reshape(out, (1,) * d.ndim) if keepdim else out, np.int64))
    axis = _axis(dim, d.ndim)
    return _wrap(_result(np.argmax(d, axis=axis, keepdims=keepdim), np.int64))


@export("argmin")
def argmin(input, dim=None, keepdim=False):
    d = input._data
    refuse_empty_dim("argmin", d, None if dim is None else _axis(dim, d.ndim))
    if dim is None:
        out = np.argmin(d)
        return _wrap(_result(np.reshape(out, (1,) * d.ndim) if keepdim else out, np.int64))
    axis = _axis(dim, d.ndim)
    return _wrap(_result(np.argmin(d, axis=axis, keepdims=keepdim), np.int64))


def _correction(unbiased, correction, kwargs):
    if "ddof" in kwargs:
        return kwargs.pop("ddof")
    if correction is not None:
        return correction
    if unbiased is None:
        return 1
    return 1 if unbiased else 0


def refuse_integer_moments(name, x):
    """torch's std/var (and std_mean, var_mean) of a bool or integer tensor: RuntimeError,
    where numpy would compute them in float64."""
    if x._data.dtype.kind not in "fc":
        raise RuntimeError(f"{name} only support floating point and complex dtypes")


def _var_std(spec, fn, x, dim, unbiased, keepdim, correction, kwargs):
    if isinstance(dim, bool):  # var(input, unbiased)
        unbiased, dim = dim, None
    ddof = _correction(unbiased, correction, kwargs)
    axis = _axis(dim, x._data.ndim, kwargs)
    keepdim = _keepdim(keepdim, kwargs)
    d = x._data
    refuse_integer_moments("std and var", x)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = _wrap(_result(fn(d, axis=axis, ddof=ddof, keepdims=keepdim)))
    if _needs_grad(x):
        record(spec, out, (x,), {"axis": axis, "ddof": ddof, "keepdims": keepdim})
    return out


@implements("var")
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, **kwargs):
    """Unbiased (correction=1) by default, as torch."""
    out = pop_out(kwargs)
    if out is not None:
        made = var(input, dim, unbiased, keepdim, correction=correction, **kwargs)
        return write_out("var", out, made, (input,))
    return _var_std(VAR, np.var, input, dim, unbiased, keepdim, correction, kwargs)


@implements("std")
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, **kwargs):
    out = pop_out(kwargs)
    if out is not None:
        made = std(input, dim, unbiased, keepdim, correction=correction, **kwargs)
        return write_out("std", out, made, (input,))
    return _var_std(STD, np.std, input, dim, unbiased, keepdim, correction, kwargs)


@export("norm")
def norm(input, p="fro", dim=None, keepdim=False, dtype=None, **kwargs):
    """The vector norm (LinalgVectorNormBackward0); p='fro' is 2. Its gradient at 0 is 0."""
    out = pop_out(kwargs)
    if out is not None:
        return write_out("norm", out, norm(input, p, dim, keepdim, dtype, **kwargs), (input,))
    if p == "fro" or p is None:
        p = 2
    if p == "nuc":
        raise NotImplementedError("sourcegrad: the nuclear norm is not supported")
    axis = _axis(dim, input._data.ndim, kwargs)
    keepdim = _keepdim(keepdim, kwargs)
    d = input._data if dtype is None else input._data.astype(dtypes.as_dtype(dtype).dtype)
    if d.dtype.kind not in "fc":
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as "
            f"input. Got {input.dtype._scalar_name}"
        )
    out = _wrap(_result(ops_nn.vector_norm(d, p, axis, keepdim)))
    if _needs_grad(input):
        record(NORM, out, (input,), {"ord": p, "axis": axis, "keepdims": keepdim})
    return out


@implements("logsumexp")
def logsumexp(input, dim, keepdim=False):
    axis = _axis(dim, input._data.ndim)
    d = input._data if input._data.dtype.kind in "fc" else input._data.astype(_default_np())
    out = _wrap(_result(ops_nn.logsumexp(d, axis, keepdim)))
    if _needs_grad(input):
        record(LOGSUMEXP, out, (input,), {"axis": axis, "keepdims": keepdim})
    return out


@implements("softmax")
def softmax(input, dim=None, dtype=None, **kwargs):
    out = pop_out(kwargs)
    if out is not None:
        return write_out("softmax", out, softmax(input, dim, dtype, **kwargs), (input,))
    return _softmax(SOFTMAX, ops_nn.softmax, input, dim, dtype, kwargs)


@implements("log_softmax")
def log_softmax(input, dim=None, dtype=None, **kwargs):
    out = pop_out(kwargs)
    if out is not None:
        return write_out("log_softmax", out, log_softmax(input, dim, dtype, **kwargs), (input,))
    return _softmax(LOG_SOFTMAX, ops_nn.log_softmax, input, dim, dtype, kwargs)


def _softmax(spec, fn, x, dim, dtype, kwargs):
    if dim is None:
        dim = kwargs.pop("axis", None)
    if dim is None:
        # torch's legacy implicit choice of dim
        dim = 0 if x._data.ndim in (0, 1, 3) else 1
    if dtype is not None:
        x = x.to(dtype)
    axis = _axis(dim, x._data.ndim)
    if x._data.dtype.kind not in "fc":
        # torch has no softmax kernel of integers (dtype= casts first); its kernel's name says
        # whether the dim is the last one
        last = "_lastdim" if axis is None or axis == x._data.ndim - 1 else ""
        raise not_implemented_for(f"{spec.rule.name}{last}_kernel_impl", x._data.dtype)
    d = x._data
    if d.ndim == 0:
        out = _wrap(_result(fn(d.reshape(1), 0).reshape(())))
    else:
        out = _wrap(_result(fn(d, axis)))
    if _needs_grad(x):
        record(spec, out, (x,), {"axis": axis})
    return out


def _scan(spec, fn, x, dim, dtype):
    axis = _axis(dim, x._data.ndim)
    d = x._data
    if dtype is not None:
        d = d.astype(dtypes.as_dtype(dtype).dtype)
    elif d.dtype.kind in "biu":
        d = d.astype(np.int64)
    # (dtype= is the accumulator's too: numpy would scan an int8 in its platform integer,
    # where torch wraps in int8)
    scanned = fn(d.reshape(1) if d.ndim == 0 else d, axis=axis or 0, dtype=d.dtype)
    out = _wrap(_result(scanned.reshape(d.shape)))
    if _needs_grad(x):
        record(spec, out, (x,), {"axis": axis})
    return out


@implements("cumsum")
def cumsum(input, dim, *, dtype=None, **kwargs):
    out = pop_out(kwargs)
    if out is not None:
        return write_out("cumsum", out, cumsum(input, dim, dtype=dtype, **kwargs), (input,))
    if "axis" in kwargs:
        dim = kwargs.pop("axis")
    return _scan(CUMSUM, np.cumsum, input, dim, dtype)


@implements("cumprod")
def cumprod(input, dim, *, dtype=None, **kwargs):
    out = pop_out(kwargs)
    if out is not None:
        return write_out("cumprod", out, cumprod(input, dim, dtype=dtype, **kwargs), (input,))
    if "axis" in kwargs:
        dim = kwargs.pop("axis")
    return _scan(CUMPROD, np.cumprod, input, dim, dtype)


@export("all")
def all(input, dim=None, keepdim=False):  # noqa: A001
    axis = _axis(dim, input._data.ndim)
    out = np.all(input._data, axis=axis, keepdims=keepdim)
    # (torch keeps uint8 for a uint8 input, its legacy mask dtype: bool for the others)
    return _wrap(_result(out, np.uint8 if input._data.dtype == np.uint8 else None))


@export("any")
def any(input, dim=None, keepdim=False):  # noqa: A001
    axis = _axis(dim, input._data.ndim)
    out = np.any(input._data, axis=axis, keepdims=keepdim)
    # (torch keeps uint8 for a uint8 input, its legacy mask dtype: bool for the others)
    return _wrap(_result(out, np.uint8 if input._data.dtype == np.uint8 else None))


@export("count_nonzero")
def count_nonzero(input, dim=None):
    axis = _axis(dim, input._data.ndim)
    return _wrap(_result(np.count_nonzero(input._data, axis=axis), np.int64))


# --- reductions made from the registry ---------------------------------------------------------


def make_reduction(entry):
    """The eager op of a plain reduction entry (`kind="reduction"`, called as
    `fn(x, axis=..., keepdims=...)`: nansum), with torch's arguments (`dim`, `keepdim`,
    `dtype`; numpy's `axis`, `keepdims` too). An integer input becomes int64 where the
    entry's torch names say `keep_int` (nansum), else the default float dtype."""
    names = entry.torch
    spec = OpSpec(names.node, entry.name, n_arrays=1)
    fn, keep_int, name = entry.fn, names.keep_int, names.function[0]

    def op(input, dim=None, keepdim=False, *, dtype=None, **kwargs):
        if not isinstance(input, Tensor):
            raise not_a_tensor(name, input)
        out = pop_out(kwargs)
        if out is not None:
            return write_out(name, out, op(input, dim, keepdim, dtype=dtype, **kwargs), (input,))
        axis = _axis(dim, input._data.ndim, kwargs)
        keepdim = _keepdim(keepdim, kwargs)
        d = input._data
        if dtype is not None:
            d = d.astype(dtypes.as_dtype(dtype).dtype)
        elif d.dtype.kind in "biu":
            d = d.astype(np.int64 if keep_int else _default_np())
        out = _wrap(_result(fn(d, axis=axis, keepdims=keepdim)))
        if _needs_grad(input) or (DUAL.on and any_tangent((input,))):
            record(spec, out, (input,), {"axis": axis, "keepdims": keepdim})
        return out

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"The reduction {entry.name} (numpy's {fn.__name__}); backward: {names.node}."
    return op


def from_registry() -> dict:
    """{torch function name: op} for the registry's reductions with torch names that have no
    hand-written op above; each gets the surface its entry's torch names describe (below)."""
    made = {}
    for entry in RULES.values():
        if entry.torch is None or entry.kind != "reduction" or surface.by_hand(entry):
            continue
        op = make_reduction(entry)
        op.entry = entry
        made.update(dict.fromkeys(entry.torch.function, op))
    return made


REGISTERED = from_registry()
for _op in dict.fromkeys(REGISTERED.values()):
    surface.add_entry(_op.entry, _op)
globals().update(REGISTERED)  # this module's own names: reductions.nansum, ...


# --- numpy's call forms (np.sum(tensor, axis, dtype, out, keepdims)) ----------------------------


def _np_keywords(name, kw):
    """numpy's keywords these forms do not implement (where=, initial=, mean=, ...), refused:
    they were dropped, `np.sum(t, where=m)` summing every element."""
    if kw:
        raise errors.UnsupportedAPIError(
            f"np.{name}(tensor, {', '.join(f'{k}=...' for k in kw)}): sourcegrad's numpy form "
            f"of {name} on a Tensor does not take {', '.join(kw)}; write it with Tensor "
            f"operations (a mask as a product or torch.where, before the {name})"
        )


def _np_out(name, out, made, a):
    """`made`, or written into numpy's out= where given (a Tensor, with torch's checks): the
    forms took out= and dropped it, `np.sum(t, 0, out=o)` leaving o as it was."""
    return made if out is None else write_out(name, out, made, (a,))


@numpy_form("sum")
def np_sum(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _np_keywords("sum", kw)
    return _np_out("sum", out, sum(a, axis, keepdims, dtype=dtype), a)


@numpy_form("mean")
def np_mean(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _np_keywords("mean", kw)
    return _np_out("mean", out, mean(a, axis, keepdims, dtype=dtype), a)


@numpy_form("prod")
def np_prod(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _np_keywords("prod", kw)
    return _np_out("prod", out, prod(a, axis, keepdims, dtype=dtype), a)


@numpy_form("amax")
def np_amax(a, axis=None, out=None, keepdims=False, **kw):
    _np_keywords("amax", kw)
    return _np_out("amax", out, amax(a, () if axis is None else axis, keepdims), a)


@numpy_form("amin")
def np_amin(a, axis=None, out=None, keepdims=False, **kw):
    _np_keywords("amin", kw)
    return _np_out("amin", out, amin(a, () if axis is None else axis, keepdims), a)


@numpy_form("max")
def np_max(a, axis=None, out=None, keepdims=False, **kw):
    _np_keywords("max", kw)
    if axis is None and not keepdims:
        return _np_out("max", out, max(a), a)
    return _np_out("max", out, amax(a, () if axis is None else axis, keepdims), a)


@numpy_form("min")
def np_min(a, axis=None, out=None, keepdims=False, **kw):
    _np_keywords("min", kw)
    if axis is None and not keepdims:
        return _np_out("min", out, min(a), a)
    return _np_out("min", out, amin(a, () if axis is None else axis, keepdims), a)


@numpy_form("var")
def np_var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _np_keywords("var", kw)
    return _np_out("var", out, var(a, axis, keepdim=keepdims, correction=ddof), a)


@numpy_form("std")
def np_std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _np_keywords("std", kw)
    return _np_out("std", out, std(a, axis, keepdim=keepdims, correction=ddof), a)


@numpy_form("cumsum")
def np_cumsum(a, axis=None, dtype=None, out=None):
    if axis is None:
        return _np_out("cumsum", out, cumsum(reshape(a, (-1,)), 0, dtype=dtype), a)
    return _np_out("cumsum", out, cumsum(a, axis, dtype=dtype), a)


@numpy_form("cumprod")
def np_cumprod(a, axis=None, dtype=None, out=None):
    if axis is None:
        return _np_out("cumprod", out, cumprod(reshape(a, (-1,)), 0, dtype=dtype), a)
    return _np_out("cumprod", out, cumprod(a, axis, dtype=dtype), a)
