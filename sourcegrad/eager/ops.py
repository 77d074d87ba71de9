"""Elementwise, reduction and matrix ops: forward on numpy, derivatives from the rule table.

Every op here has the same three steps, kept short because a later issue
measures their overhead against torch's:

1. unwrap the operands and promote them to torch's result dtype
   (`dtypes.result_type`);
2. run the numpy function;
3. if grad mode is on and an input requires grad, `spec.record` attaches the node
   named as torch names it, which will call the rule's VJP lambdas.

Each function serves as `sourcegrad.<name>(x, ...)` and, attached by `methods.py`,
as `x.<name>(...)`, with torch's argument names (`dim`, `keepdim`); numpy's
spellings (`axis`, `keepdims`) are accepted too, because the rule table's
lambdas call these ops that way under create_graph.

Imports: `shape_ops`, `operands`, `spec`, `node`, `tensor`, the leaves and
`sourcegrad.ops.nn`; not `inplace`, `factories` or the surface modules.

Why one module: the hand-written arithmetic, reductions and comparisons of the eager
surface and the generator of the registry's elementwise ops; moving the rest into
registry entries is the redesign's next step (issue 17).
"""

from __future__ import annotations

import numpy as np

from ..errors import ForwardADError
from ..ops import RULES, nn as rt
from . import devices, dtypes, shape_ops
from .dual_state import DUAL, any_tangent
from .grad_mode import STATE
from .node import NotImplementedNode
from .operands import along_index, cached_spec, default_np as _default_np, return_types, same_device
from .operands import grad_required

# the shared operand helpers under the short private names this module's ops are written with
from .operands import as_tensor as _as_tensor, data_of as _data, needs_grad as _needs_grad
from .operands import operand_key as _key, promote as _promote, result as _result
from .out_arg import write_out
from .spec import OpSpec, record
from .tensor import Size, Tensor, stale_view_requires_grad

_wrap = Tensor._make
_GPU = devices.DEVICE_TYPES  # the array types on a GPU (cupy.ndarray), filled when CuPy loads


def binary_op(spec, fn, a, b, to_float=False):
    ad, bd, rd, ra, rb = _promote(a, b, to_float)
    try:
        out = fn(ad, bd)
        if type(out) is not np.ndarray or out.dtype != rd:  # _result's cases
            out = _result(out, rd)
    except ValueError as e:
        raise broadcast_error(np.shape(ad), np.shape(bd)) or e
    out = _wrap(out)
    if STATE.enabled and (
        (
            isinstance(ra, Tensor)
            and (ra._requires_grad or (ra._base is not None and stale_view_requires_grad(ra)))
        )
        or (
            isinstance(rb, Tensor)
            and (rb._requires_grad or (rb._base is not None and stale_view_requires_grad(rb)))
        )
    ):
        record(spec, out, (ra, rb))
    elif DUAL.on and any_tangent((ra, rb)):
        record(spec, out, (ra, rb))
    return out


# --- arithmetic ----------------------------------------------------------------------------

ADD = OpSpec("AddBackward0", "add")
ADD_ALPHA = OpSpec("AddBackward0", "add_alpha", n_arrays=2)
SUB = OpSpec("SubBackward0", "subtract")
SUB_ALPHA = OpSpec("SubBackward0", "sub_alpha", n_arrays=2)
RSUB = OpSpec("RsubBackward1", "subtract", edges=(1,))
MUL = OpSpec("MulBackward0", "multiply")
DIV = OpSpec("DivBackward0", "divide")
POW_SCALAR = OpSpec("PowBackward0", "power", edges=(0,))
POW_TENSOR = OpSpec("PowBackward1", "power")
POW_BASE = OpSpec("PowBackward2", "power", edges=(1,))
REMAINDER_SCALAR = OpSpec("RemainderBackward0", "mod_op", edges=(0,))
REMAINDER = OpSpec("RemainderBackward1", "mod_op")
FMOD_SCALAR = OpSpec("FmodBackward0", "fmod", edges=(0,))
FMOD = OpSpec("FmodBackward1", "fmod")
DIV_ROUNDING = OpSpec("DivBackward2", "torch_div_rounding")
FMAX = OpSpec("FmaxBackward0", "maximum")
FMIN = OpSpec("FminBackward0", "minimum")


def add(input, other, *, alpha=1, out=None):
    if out is not None:
        return write_out("add", out, add(input, other, alpha=alpha), (input, other))
    if alpha == 1:
        return binary_op(ADD, np.add, input, other)
    ad, bd, rd, ra, rb = _promote(input, other)
    res = _wrap(_result(np.add(ad, np.multiply(bd, alpha)), rd))
    if _needs_grad(ra, rb):
        record(ADD_ALPHA, res, (ra, rb), {"alpha": alpha})
    return res


def sub(input, other, *, alpha=1, out=None):
    if out is not None:
        return write_out("sub", out, sub(input, other, alpha=alpha), (input, other))
    if alpha == 1:
        return binary_op(SUB, np.subtract, input, other)
    ad, bd, rd, ra, rb = _promote(input, other)
    res = _wrap(_result(np.subtract(ad, np.multiply(bd, alpha)), rd))
    if _needs_grad(ra, rb):
        record(SUB_ALPHA, res, (ra, rb), {"alpha": alpha})
    return res


subtract = sub


def rsub(input, other):
    """other - input for a non-tensor `other` (RsubBackward1: one edge)."""
    if isinstance(other, Tensor):
        return sub(other, input)
    ad, bd, rd, ra, rb = _promote(other, input)
    res = _wrap(_result(np.subtract(ad, bd), rd))
    if _needs_grad(rb):
        record(RSUB, res, (ra, rb))
    return res


def mul(input, other, *, out=None):
    if out is not None:
        return write_out("mul", out, mul(input, other), (input, other))
    return binary_op(MUL, np.multiply, input, other)


multiply = mul


def div(input, other, *, rounding_mode=None, out=None):
    if out is not None:
        return write_out("div", out, div(input, other, rounding_mode=rounding_mode), (input, other))
    if rounding_mode is not None:
        return _div_rounding(input, other, rounding_mode)
    return binary_op(DIV, np.true_divide, input, other, to_float=True)


def _div_rounding(input, other, mode):
    """div(rounding_mode=...): DivBackward2, with a zero gradient, as torch records it."""
    if mode not in ("floor", "trunc"):
        raise RuntimeError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'"
        )
    ad, bd, rd, ra, rb = _promote(input, other)
    out = _wrap(_result(rt.div_rounding(ad, bd, mode), rd))
    if _needs_grad(ra, rb):
        record(DIV_ROUNDING, out, (ra, rb))
    return out


divide = true_divide = div


def rdiv(input, other):
    """other / input: torch computes reciprocal(input) * other."""
    if isinstance(other, Tensor):
        return div(other, input)
    return mul(reciprocal(input), other)


def pow(input, exponent, *, out=None):  # noqa: A001 - torch's name
    if out is not None:
        return write_out("pow", out, pow(input, exponent), (input, exponent))
    if not isinstance(input, Tensor):
        return binary_op(POW_BASE, np.power, input, exponent)
    spec = (
        POW_TENSOR
        if isinstance(exponent, (Tensor, np.ndarray)) or type(exponent) in _GPU
        else POW_SCALAR
    )
    return binary_op(spec, np.power, input, exponent)


def rpow(input, other):
    return (
        pow(other, input)
        if isinstance(other, Tensor)
        else binary_op(POW_BASE, np.power, other, input)
    )


def square(input):
    return pow(input, 2)


def float_power(input, exponent):
    return pow(input.double() if isinstance(input, Tensor) else input, exponent)


def remainder_data(a, b):
    """torch's remainder: fmod, moved onto the divisor's side (so -2 % 2 is -0., as torch)."""
    r = np.fmod(a, b)
    if (r.dtype if type(r) in _GPU else np.asarray(r).dtype).kind != "f":
        return np.remainder(a, b)
    fix = (r != 0) & (
        ((b if type(b) in _GPU or isinstance(b, (int, float)) else np.asarray(b)) < 0) != (r < 0)
    )
    return np.where(fix, r + b, r)


def remainder(input, other):
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        # a number % a tensor: torch records it with a NotImplemented node
        ad, bd, rd, ra, rb = _promote(input, other)
        res = _wrap(_result(remainder_data(ad, bd), rd))
        _no_tangent("aten::remainder", other)
        if grad_required(other):
            res._grad_fn = NotImplementedNode((other._edge(),), "aten::remainder")
            res._requires_grad = True
        return res
    spec = REMAINDER if isinstance(other, Tensor) else REMAINDER_SCALAR
    return binary_op(spec, remainder_data, input, other)


def fmod(input, other):
    spec = FMOD if isinstance(other, Tensor) else FMOD_SCALAR
    return binary_op(spec, np.fmod, input, other)


def _no_tangent(name, *args):
    """Forward mode through an op torch records with a NotImplemented node: refused."""
    if DUAL.on and any_tangent(args):
        raise ForwardADError(f"Trying to use forward AD with {name} that does not support it.")


def floor_divide(input, other):
    """x // y: torch records it with a NotImplemented node (no derivative)."""
    ad, bd, rd, ra, rb = _promote(input, other)
    res = _wrap(_result(np.floor_divide(ad, bd), rd))
    _no_tangent("aten::floor_divide", ra, rb)
    if grad_required(ra, rb):
        edges = tuple(
            a._edge() if isinstance(a, Tensor) and a._requires_grad else (None, 0)
            for a in (ra, rb)
            if isinstance(a, Tensor)
        )
        res._grad_fn = NotImplementedNode(edges, "aten::floor_divide")
        res._requires_grad = True
    return res


def fmax(input, other):
    return binary_op(FMAX, np.fmax, input, other)


def fmin(input, other):
    return binary_op(FMIN, np.fmin, input, other)


# --- comparisons and logic (no gradient) -----------------------------------------------------


def _compare(fn, a, b):
    ad, bd, rd, ra, rb = _promote(a, b)
    return _wrap(_result(fn(ad, bd)))


def eq(input, other):
    return _compare(np.equal, input, other)


def ne(input, other):
    return _compare(np.not_equal, input, other)


def lt(input, other):
    return _compare(np.less, input, other)


def le(input, other):
    return _compare(np.less_equal, input, other)


def gt(input, other):
    return _compare(np.greater, input, other)


def ge(input, other):
    return _compare(np.greater_equal, input, other)


not_equal, less, less_equal, greater, greater_equal = ne, lt, le, gt, ge


def _logic(fn, a, b):
    ad, bd, rd, ra, rb = _promote(a, b)
    return _wrap(_result(fn(ad, bd)))


def logical_and(input, other):
    return _wrap(_result(np.logical_and(_data(input), _data(other))))


def logical_or(input, other):
    return _wrap(_result(np.logical_or(_data(input), _data(other))))


def logical_xor(input, other):
    return _wrap(_result(np.logical_xor(_data(input), _data(other))))


def logical_not(input):
    return _wrap(_result(np.logical_not(input._data)))


def bitwise_and(input, other):
    return _logic(np.bitwise_and, input, other)


def bitwise_or(input, other):
    return _logic(np.bitwise_or, input, other)


def bitwise_xor(input, other):
    return _logic(np.bitwise_xor, input, other)


def bitwise_not(input):
    d = input._data
    return _wrap(_result(np.logical_not(d) if d.dtype == np.bool_ else np.invert(d)))


def isnan(input):
    return _wrap(_result(np.isnan(input._data)))


def isinf(input):
    return _wrap(_result(np.isinf(input._data)))


def isfinite(input):
    return _wrap(_result(np.isfinite(input._data)))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    same_device(input, other)
    return _wrap(_result(np.isclose(input._data, _data(other), rtol, atol, equal_nan)))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    same_device(input, other)
    return bool(np.allclose(input._data, _data(other), rtol, atol, equal_nan))


def equal(input, other) -> bool:
    same_device(input, other)
    return input._data.shape == other._data.shape and bool(np.all(input._data == other._data))


# --- one-input elementwise ops ---------------------------------------------------------------


def broadcast_error(a, b):
    """torch's error for shapes that do not broadcast (None when they do)."""
    n = len(a) if len(a) > len(b) else len(b)
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    for i in range(n - 1, -1, -1):
        if a[i] != b[i] and a[i] != 1 and b[i] != 1:
            return RuntimeError(
                f"The size of tensor a ({a[i]}) must match the size of tensor b "
                f"({b[i]}) at non-singleton dimension {i}"
            )
    return None


def not_a_tensor(name, value, arg="input", position=1):
    """torch's TypeError for a non-Tensor where an op needs a Tensor."""
    return TypeError(
        f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
        f"{type(value).__name__}"
    )


def _unary(spec, fn, x, keep_int=False):
    try:
        d = x._data
    except AttributeError:
        name = spec.node_cls.__name__.rsplit("Backward", 1)[0].lower()
        raise not_a_tensor(name, x) from None
    if not keep_int and d.dtype.kind not in "fc":
        d = d.astype(_default_np())
    out = _wrap(_result(fn(d)))
    if (
        STATE.enabled
        and (x._requires_grad or (x._base is not None and stale_view_requires_grad(x)))
        or (DUAL.on and any_tangent((x,)))
    ):
        record(spec, out, (x,))
    return out


def _make_unary(node_name, rule_name, fn, keep_int=False, doc=""):
    spec = OpSpec(node_name, rule_name)

    def op(input, *, out=None):
        if out is not None:
            return write_out(rule_name, out, _unary(spec, fn, input, keep_int), (input,))
        return _unary(spec, fn, input, keep_int)

    op.__doc__ = doc or f"Elementwise {rule_name}; backward: {node_name}."
    op.spec, op.np_fn = spec, fn  # the in-place variant (inplace.py) reuses both
    return op


def _make_binary(node_name, rule_name, fn, keep_int=False):
    spec = OpSpec(node_name, rule_name)

    def op(input, other):
        return binary_op(spec, fn, input, other, to_float=not keep_int)

    op.__doc__ = f"Elementwise {rule_name} of two tensors (broadcasting); backward: {node_name}."
    op.spec, op.np_fn = spec, fn
    return op


def op_of_entry(entry):
    """The eager function of one registry entry with torch names (`ops.Torch`): an elementwise
    op of one input (exp, tanh, sigmoid, abs, ...) or of two (maximum, hypot, atan2, ...),
    recording `entry.torch.node` with the entry's rules."""
    names = entry.torch
    if (
        entry.kind != "elementwise"
        or len(entry.params) not in (1, 2)
        or len(entry.params) == 2
        and names.inplace
    ):
        raise TypeError(
            f"op {entry.name!r} has torch names, but the eager surface is made "
            "for elementwise ops of one or two inputs (in place: of one) only: "
            "write its eager op by hand"
        )
    make = _make_unary if len(entry.params) == 1 else _make_binary
    op = make(names.node, entry.name, entry.fn, names.keep_int)
    op.__name__ = op.__qualname__ = (names.function or names.special)[0]
    op.entry = entry
    return op


def _from_registry() -> dict:
    """{torch function name: op} for every registry entry that carries torch names: the ops of
    `op_of_entry`. Their Tensor methods, in-place variants and numpy dispatch are made from the
    same entries (inplace.REGISTERED, methods.py, numpy_dispatch.py), and `sourcegrad.<name>`
    from this. (scipy.special's entries, registered once scipy is imported, are made by
    `eager.special`.)"""
    made = {}
    for entry in RULES.values():
        if entry.torch is not None:
            op = op_of_entry(entry)
            for name in entry.torch.function:
                made[name] = op
    return made


REGISTERED = _from_registry()
globals().update(REGISTERED)  # this module's own names: ops.exp, ops.sigmoid, ...
# (named here too for the functions of this module that call them: rdiv, max and min)
reciprocal = REGISTERED["reciprocal"]
maximum, minimum = REGISTERED["maximum"], REGISTERED["minimum"]
_round0 = _make_unary("RoundBackward0", "torch_round", np.round, keep_int=True)
positive = _make_unary("PositiveBackward0", "positive", np.positive, keep_int=True)

SIGMOID = OpSpec("SigmoidBackward0", "sigmoid")


def round(input, *, decimals=0):  # noqa: A001 - torch's name
    if decimals == 0:
        return _round0(input)
    out = _wrap(_result(np.round(input._data, decimals)))
    if _needs_grad(input):
        record(cached_spec("RoundBackward1", "torch_round"), out, (input,))
    return out


LEAKY_RELU = OpSpec("LeakyReluBackward0", "leaky_relu", n_arrays=1)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    out = _wrap(_result(rt.leaky_relu(input._data, negative_slope)))
    if _needs_grad(input):
        record(LEAKY_RELU, out, (input,), {"negative_slope": negative_slope})
    return out


# --- clamp and where -------------------------------------------------------------------------

CLAMP_SCALAR = OpSpec("ClampBackward1", "clip", edges=(0,))
CLAMP_TENSOR = OpSpec("ClampBackward0", "clip")
CLAMP_MIN = OpSpec("ClampMinBackward0", "clip", edges=(0,))
CLAMP_MAX = OpSpec("ClampMaxBackward0", "clip", edges=(0,))


def clamp_data(x, lo, hi):
    keys = [_key(x)[1]] + [_key(v)[1] for v in (lo, hi) if v is not None]
    rd = dtypes.result_type(*keys).dtype
    xd = x._data if x._data.dtype == rd else x._data.astype(rd)
    lod = _data(lo).astype(rd) if isinstance(lo, (Tensor, np.ndarray)) or type(lo) in _GPU else lo
    hid = _data(hi).astype(rd) if isinstance(hi, (Tensor, np.ndarray)) or type(hi) in _GPU else hi
    if type(xd) in _GPU or type(lod) in _GPU or type(hid) in _GPU:
        devices.check_same(xd, lod, hid)
    # torch's clamp with min > max gives max; np.clip agrees (min first, then max)
    if lod is None:
        out = np.minimum(xd, hid)
    elif hid is None:
        out = np.maximum(xd, lod)
    else:
        out = np.minimum(np.maximum(xd, lod), hid)
    return _result(out, rd)


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002 - torch's names
    if out is not None:
        return write_out("clamp", out, clamp(input, min, max), (input, min, max))
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    res = _wrap(clamp_data(input, min, max))
    if _needs_grad(input, min, max):
        tensor_bounds = isinstance(min, Tensor) or isinstance(max, Tensor)
        record(CLAMP_TENSOR if tensor_bounds else CLAMP_SCALAR, res, (input, min, max))
    return res


clip = clamp


def clamp_min(input, min):  # noqa: A002
    res = _wrap(clamp_data(input, min, None))
    if _needs_grad(input):
        record(CLAMP_MIN, res, (input, min, None))
    return res


def clamp_max(input, max):  # noqa: A002
    res = _wrap(clamp_data(input, None, max))
    if _needs_grad(input):
        record(CLAMP_MAX, res, (input, None, max))
    return res


WHERE = OpSpec("WhereBackward0", "where", edges=(1, 2))


def where(condition, input=None, other=None):
    """torch.where(cond, x, y), or torch.where(cond) for the indices of nonzero elements."""
    if input is None and other is None:
        return tuple(_wrap(i) for i in np.nonzero(_data(condition)))
    cond = _data(condition)
    if cond.dtype != np.bool_:
        cond = cond != 0
    xd, yd, rd, rx, ry = _promote(input, other)
    if type(cond) is not type(xd) or type(cond) is not type(yd):
        devices.check_same(cond, xd, yd)
    res = _wrap(_result(np.where(cond, xd, yd), rd))
    if _needs_grad(rx, ry):
        record(WHERE, res, (condition if isinstance(condition, Tensor) else cond, rx, ry))
    return res


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
        return tuple(sorted(int(d) % ndim for d in dim))
    if ndim == 0:
        return None  # torch accepts dim 0 / -1 on a 0-dim tensor
    return int(dim) % ndim


def _keepdim(keepdim, kwargs):
    if kwargs and "keepdims" in kwargs:
        return bool(kwargs.pop("keepdims"))
    return bool(keepdim)


SUM_ALL = OpSpec("SumBackward0", "sum", n_arrays=1)
SUM_DIM = OpSpec("SumBackward1", "sum", n_arrays=1)
MEAN_ALL = OpSpec("MeanBackward0", "mean", n_arrays=1)
MEAN_DIM = OpSpec("MeanBackward1", "mean", n_arrays=1)
PROD_ALL = OpSpec("ProdBackward0", "prod", n_arrays=1)
PROD_DIM = OpSpec("ProdBackward1", "prod", n_arrays=1)
MAX_ALL = OpSpec("MaxBackward1", "max", n_arrays=1)
MIN_ALL = OpSpec("MinBackward1", "min", n_arrays=1)
AMAX = OpSpec("AmaxBackward0", "amax", n_arrays=1)
AMIN = OpSpec("AminBackward0", "amin", n_arrays=1)
VAR = OpSpec("VarBackward0", "var", n_arrays=1)
STD = OpSpec("StdBackward0", "std", n_arrays=1)
NORM = OpSpec("LinalgVectorNormBackward0", "vector_norm", n_arrays=1)
LOGSUMEXP = OpSpec("LogsumexpBackward0", "logsumexp", n_arrays=1)
SOFTMAX = OpSpec("SoftmaxBackward0", "softmax", n_arrays=1)
LOG_SOFTMAX = OpSpec("LogSoftmaxBackward0", "log_softmax", n_arrays=1)
CUMSUM = OpSpec("CumsumBackward0", "cumsum", n_arrays=1)
CUMPROD = OpSpec("CumprodBackward0", "cumprod", n_arrays=1)


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
    out = _wrap(_result(fn(d, axis=axis, keepdims=keepdim)))
    if (
        STATE.enabled
        and (x._requires_grad or (x._base is not None and stale_view_requires_grad(x)))
        or (DUAL.on and any_tangent((x,)))
    ):
        record(
            spec_all if dim is None else spec_dim, out, (x,), {"axis": axis, "keepdims": keepdim}
        )
    return out


def sum(input, dim=None, keepdim=False, *, dtype=None, **kwargs):  # noqa: A001
    if "axis" in kwargs and kwargs["axis"] is not None:
        dim = kwargs.pop("axis")
    kwargs.pop("axis", None)
    if not isinstance(input, Tensor):
        raise not_a_tensor("sum", input)
    return _reduce(SUM_ALL, SUM_DIM, np.ndarray.sum, input, dim, keepdim, kwargs, dtype, True)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    return sum(where(isnan(input), 0.0, input), dim, keepdim, dtype=dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None, **kwargs):
    if "axis" in kwargs and kwargs["axis"] is not None:
        dim = kwargs.pop("axis")
    kwargs.pop("axis", None)
    if not isinstance(input, Tensor):
        raise not_a_tensor("mean", input)
    if dtype is None and input._data.dtype.kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a "
            "floating point or complex dtype. Got: "
            f"{input.dtype._scalar_name}"
        )
    return _reduce(MEAN_ALL, MEAN_DIM, np.ndarray.mean, input, dim, keepdim, kwargs, dtype)


def prod(input, dim=None, keepdim=False, *, dtype=None, **kwargs):
    if "axis" in kwargs and kwargs["axis"] is not None:
        dim = kwargs.pop("axis")
    kwargs.pop("axis", None)
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


def max(input, dim=None, keepdim=False, *, other=None, **kwargs):  # noqa: A001
    """x.max(): MaxBackward1 (ties share the gradient); x.max(dim): (values, indices)."""
    return _max_min(input, dim, keepdim, other, kwargs, "max")


def min(input, dim=None, keepdim=False, *, other=None, **kwargs):  # noqa: A001
    return _max_min(input, dim, keepdim, other, kwargs, "min")


def amax(input, dim=(), keepdim=False, **kwargs):
    dim = None if dim == () or dim == [] else dim
    return _reduce(AMAX, AMAX, np.ndarray.max, input, dim, keepdim, kwargs)


def amin(input, dim=(), keepdim=False, **kwargs):
    dim = None if dim == () or dim == [] else dim
    return _reduce(AMIN, AMIN, np.ndarray.min, input, dim, keepdim, kwargs)


def argmax(input, dim=None, keepdim=False):
    d = input._data
    if dim is None:
        out = np.argmax(d)
        return _wrap(_result(np.reshape(out, (1,) * d.ndim) if keepdim else out, np.int64))
    axis = _axis(dim, d.ndim)
    return _wrap(_result(np.argmax(d, axis=axis, keepdims=keepdim), np.int64))


def argmin(input, dim=None, keepdim=False):
    d = input._data
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


def _var_std(spec, fn, x, dim, unbiased, keepdim, correction, kwargs):
    if isinstance(dim, bool):  # var(input, unbiased)
        unbiased, dim = dim, None
    ddof = _correction(unbiased, correction, kwargs)
    axis = _axis(dim, x._data.ndim, kwargs)
    keepdim = _keepdim(keepdim, kwargs)
    d = x._data
    if d.dtype.kind not in "fc":
        d = d.astype(_default_np())
    with np.errstate(divide="ignore", invalid="ignore"):
        out = _wrap(_result(fn(d, axis=axis, ddof=ddof, keepdims=keepdim)))
    if _needs_grad(x):
        record(spec, out, (x,), {"axis": axis, "ddof": ddof, "keepdims": keepdim})
    return out


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, **kwargs):
    """Unbiased (correction=1) by default, as torch."""
    return _var_std(VAR, np.var, input, dim, unbiased, keepdim, correction, kwargs)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, **kwargs):
    return _var_std(STD, np.std, input, dim, unbiased, keepdim, correction, kwargs)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None, **kwargs):
    """The vector norm (LinalgVectorNormBackward0); p='fro' is 2. Its gradient at 0 is 0."""
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
    out = _wrap(_result(rt.vector_norm(d, p, axis, keepdim)))
    if _needs_grad(input):
        record(NORM, out, (input,), {"ord": p, "axis": axis, "keepdims": keepdim})
    return out


def logsumexp(input, dim, keepdim=False):
    axis = _axis(dim, input._data.ndim)
    d = input._data if input._data.dtype.kind in "fc" else input._data.astype(_default_np())
    out = _wrap(_result(rt.logsumexp(d, axis, keepdim)))
    if _needs_grad(input):
        record(LOGSUMEXP, out, (input,), {"axis": axis, "keepdims": keepdim})
    return out


def softmax(input, dim=None, dtype=None, **kwargs):
    return _softmax(SOFTMAX, rt.softmax, input, dim, dtype, kwargs)


def log_softmax(input, dim=None, dtype=None, **kwargs):
    return _softmax(LOG_SOFTMAX, rt.log_softmax, input, dim, dtype, kwargs)


def _softmax(spec, fn, x, dim, dtype, kwargs):
    if dim is None:
        dim = kwargs.pop("axis", None)
    if dim is None:
        # torch's legacy implicit choice of dim
        dim = 0 if x._data.ndim in (0, 1, 3) else 1
    if dtype is not None:
        x = x.to(dtype)
    axis = _axis(dim, x._data.ndim)
    d = x._data if x._data.dtype.kind in "fc" else x._data.astype(_default_np())
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
    out = _wrap(_result(fn(d.reshape(1) if d.ndim == 0 else d, axis=axis or 0).reshape(d.shape)))
    if _needs_grad(x):
        record(spec, out, (x,), {"axis": axis})
    return out


def cumsum(input, dim, *, dtype=None, **kwargs):
    if "axis" in kwargs:
        dim = kwargs.pop("axis")
    return _scan(CUMSUM, np.cumsum, input, dim, dtype)


def cumprod(input, dim, *, dtype=None, **kwargs):
    if "axis" in kwargs:
        dim = kwargs.pop("axis")
    return _scan(CUMPROD, np.cumprod, input, dim, dtype)


def all(input, dim=None, keepdim=False):  # noqa: A001
    axis = _axis(dim, input._data.ndim)
    return _wrap(_result(np.all(input._data, axis=axis, keepdims=keepdim)))


def any(input, dim=None, keepdim=False):  # noqa: A001
    axis = _axis(dim, input._data.ndim)
    return _wrap(_result(np.any(input._data, axis=axis, keepdims=keepdim)))


def count_nonzero(input, dim=None):
    axis = _axis(dim, input._data.ndim)
    return _wrap(_result(np.count_nonzero(input._data, axis=axis), np.int64))


# --- matrix products ---------------------------------------------------------------------------

MM = OpSpec("MmBackward0", "matmul")
MV = OpSpec("MvBackward0", "matmul")
DOT = OpSpec("DotBackward0", "matmul")
BMM = OpSpec("BmmBackward0", "matmul")
ADDMM = OpSpec("AddmmBackward0", "addmm")


def _mm_like(spec, a, b):
    ad, bd, rd, ra, rb = _promote(a, b)
    out = _wrap(_result(np.matmul(ad, bd), rd))
    if _needs_grad(ra, rb):
        record(spec, out, (ra, rb))
    return out


def _mm_shapes(a, b):
    return RuntimeError(
        f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})"
    )


def _check_matmul(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: "
            f"{a.dtype._c_name} != {b.dtype._c_name}"
        )


def mm(input, mat2):
    if input._data.ndim != 2 or mat2._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if input._data.shape[1] != mat2._data.shape[0]:
        raise _mm_shapes(input._data.shape, mat2._data.shape)
    _check_matmul(input, mat2)
    return _mm_like(MM, input, mat2)


def bmm(input, mat2):
    if input._data.ndim != 3 or mat2._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    return _mm_like(BMM, input, mat2)


def mv(input, vec):
    return _mm_like(MV, input, vec)


def dot(input, other):
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input._data.ndim}D and {other._data.ndim}D tensors"
        )
    return _mm_like(DOT, input, other)


vdot = dot


def inner(input, other):
    """torch.inner: the sum over the last dimension of both (a number times a tensor at 0-d)."""
    a = input if isinstance(input, Tensor) else _as_tensor(input)
    b = other if isinstance(other, Tensor) else _as_tensor(other)
    na, nb = a._data.ndim, b._data.ndim
    if na == 0 or nb == 0:
        return mul(a, b)
    if na == 1 and nb == 1:
        return dot(a, b)
    k = a._data.shape[-1]
    if b._data.shape[-1] != k:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got "
            f"shapes {list(a._data.shape)} and {list(b._data.shape)}"
        )
    shape = a._data.shape[:-1] + b._data.shape[:-1]
    return matmul(a.reshape(-1, k), b.reshape(-1, k).t()).reshape(shape)


def matmul(input, other):
    """`a @ b`, decomposed into the nodes torch records for each case."""
    a = input if isinstance(input, Tensor) else _as_tensor(input)
    b = other if isinstance(other, Tensor) else _as_tensor(other)
    na, nb = a._data.ndim, b._data.ndim
    if na == 0 or nb == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D"
        )
    if na == 1 and nb == 1:
        return _mm_like(DOT, a, b)
    if na == 2 and nb == 1:
        return _mm_like(MV, a, b)
    if na == 1 and nb == 2:
        if a._data.shape[0] != b._data.shape[0]:
            raise _mm_shapes((1,) + a._data.shape, b._data.shape)
        return shape_ops.squeeze4(_mm_like(MM, shape_ops.unsqueeze(a, 0), b), 0)
    if na == 2 and nb == 2:
        if a._data.shape[1] != b._data.shape[0]:
            raise _mm_shapes(a._data.shape, b._data.shape)
        return _mm_like(MM, a, b)
    if na >= 3 and nb <= 2:
        # fold the batch into the rows of one mm, as torch does
        lead = a._data.shape[:-1]
        folded = a.reshape(-1, a._data.shape[-1])
        if nb == 1:
            res = _mm_like(MV, folded, b)
            return shape_ops.unsafe_view(res, lead)
        res = _mm_like(MM, folded, b)
        return shape_ops.unsafe_view(res, lead + (b._data.shape[-1],))
    # batched: expand both to the broadcast batch shape, then one bmm
    a2 = a.unsqueeze(0) if na == 1 else a
    b2 = b.unsqueeze(-1) if nb == 1 else b
    batch = np.broadcast_shapes(a2._data.shape[:-2], b2._data.shape[:-2])
    n, k = a2._data.shape[-2:]
    k2, m = b2._data.shape[-2:]
    if k != k2:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{int(np.prod(batch))}, {k}] but got: [{int(np.prod(batch))}, {k2}]."
        )
    ae = a2.expand(batch + (n, k)).reshape(-1, n, k)
    be = b2.expand(batch + (k, m)).reshape(-1, k, m)
    res = _mm_like(BMM, ae, be)
    shape = batch + ((n,) if na > 1 else ()) + ((m,) if nb > 1 else ())
    return shape_ops.unsafe_view(res, shape)


def outer(input, vec2):
    """torch.outer: input[:, None] * vec2 (MulBackward0 over ViewBackward0, as torch)."""
    return mul(input.reshape(-1, 1), vec2)


ger = outer


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        return add(mul(input, beta), mul(mm(mat1, mat2), alpha))
    d1, d2, rd, r1, r2 = _promote(mat1, mat2)
    bd = _data(input)
    if type(bd) is not type(d1):
        devices.check_same(bd, d1)
    out = _wrap(_result(rt.addmm(bd, d1, d2), rd))
    if _needs_grad(input, r1, r2):
        record(ADDMM, out, (input, r1, r2))
    return out
