"""The elementwise ops of one input made from the registry (exp, tanh, sigmoid, abs, ...) and
of two (maximum, hypot, atan2, ...), and the hand-written ones beside them: round, positive,
leaky_relu, clamp, where, rdiv.

Takes the registry's elementwise entries with torch names (`ops.Torch`); returns
`REGISTERED`, {torch function name: op}, each op registered with the surface its entry's
torch names describe (`surface.add_entry`). The in-place variants are made from the same
entries by `inplace.py`.

Imports: `arithmetic` (binary_op), `operands`, `spec`, `tensor`, `surface` and the leaves.
"""

from __future__ import annotations

import numpy as np

from ..ops import RULES
from ..ops import nn as ops_nn
from . import devices, dtypes, surface
from .arithmetic import binary_op, broadcast_error_of, div, mul, not_a_tensor, not_implemented_for
from .dual_state import DUAL, any_tangent
from .grad_mode import STATE
from .operands import cached_spec

# the shared operand helpers under the short private names this module's ops are written with
from .operands import data_of as _data
from .operands import default_np as _default_np
from .operands import needs_grad as _needs_grad
from .operands import operand_key as _key
from .operands import promote as _promote
from .operands import result as _result
from .out_arg import write_out
from .spec import OpSpec, record
from .surface import export
from .tensor import Tensor, stale_view_requires_grad

_wrap = Tensor._make
_GPU = devices.DEVICE_TYPES  # the array types on a GPU (cupy.ndarray), filled when CuPy loads


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


def make_unary(node_name, rule_name, fn, keep_int=False, doc=""):
    spec = OpSpec(node_name, rule_name)

    def op(input, *, out=None):
        if out is not None:
            return write_out(rule_name, out, _unary(spec, fn, input, keep_int), (input,))
        return _unary(spec, fn, input, keep_int)

    op.__doc__ = doc or f"Elementwise {rule_name}; backward: {node_name}."
    op.spec, op.np_fn = spec, fn  # the in-place variant (inplace.py) reuses both
    return op


# torch's kernels that refuse some kinds of dtype numpy computes: of two inputs, of their
# operands' common dtype (before any cast to float); of one input, of its dtype (floor of a
# bool, -bool). {registry entry: (the kinds refused, the error for a numpy dtype)}
_REFUSED = {
    "maximum": ("c", lambda d: RuntimeError("maximum not implemented for complex tensors.")),
    "minimum": ("c", lambda d: RuntimeError("minimum not implemented for complex tensors.")),
    "arctan2": ("c", lambda d: not_implemented_for("atan2_cpu", d)),
    "hypot": ("biuc", lambda d: not_implemented_for("hypot_cpu", d)),
    "logaddexp": ("biu", lambda d: not_implemented_for("logaddexp_cpu", d)),
    "torch_floor": ("b", lambda d: not_implemented_for("floor_vml_cpu", d)),
    "torch_ceil": ("b", lambda d: not_implemented_for("ceil_vml_cpu", d)),
    "torch_trunc": ("b", lambda d: not_implemented_for("trunc_vml_cpu", d)),
    "torch_round": ("b", lambda d: not_implemented_for("round_vml_cpu", d)),
    "frac": ("biu", lambda d: not_implemented_for("frac_cpu", d)),
    # (numpy's TypeError says the same; torch's is a RuntimeError)
    "negative": (
        "b",
        lambda d: RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        ),
    ),
}


def refusing(rule_name, fn):
    """fn, refusing first the dtypes torch's kernel of `rule_name` has no implementation for
    (`_REFUSED`); fn itself where torch refuses none. The in-place variant calls the
    same function (`op.np_fn`), so `x.floor_()` refuses as `x.floor()` does."""
    refused = _REFUSED.get(rule_name)
    if refused is None:
        return fn
    kinds, error = refused

    def checked(d):
        if d.dtype.kind in kinds:
            raise error(d.dtype)
        return fn(d)

    checked.__name__ = getattr(fn, "__name__", rule_name)
    return checked


def make_binary(node_name, rule_name, fn, keep_int=False):
    spec = OpSpec(node_name, rule_name)
    refused = _REFUSED.get(rule_name)

    if refused is None:

        def op(input, other):
            return binary_op(spec, fn, input, other, to_float=not keep_int)

    else:
        kinds, error = refused

        def op(input, other):
            rd = _promote(input, other)[2]
            if rd.kind in kinds:
                raise error(rd)
            return binary_op(spec, fn, input, other, to_float=not keep_int)

    op.__doc__ = f"Elementwise {rule_name} of two tensors (broadcasting); backward: {node_name}."
    op.spec, op.np_fn = spec, fn
    return op


def op_of_entry(entry):
    """The eager function of one registry entry with torch names (`ops.Torch`): an elementwise
    op of one input (exp, tanh, sigmoid, abs, ...) or of two (maximum, hypot, atan2, ...),
    recording `entry.torch.node` with the entry's rules. `eager.special` makes scipy.special's
    entries with it too."""
    names = entry.torch
    if entry.kind != "elementwise" or len(entry.params) not in (1, 2):
        raise TypeError(
            f"op {entry.name!r} has torch names, but the eager ops are made for elementwise "
            "ops of one or two inputs only: write its eager op by hand"
        )
    if len(entry.params) == 2 and names.inplace:
        raise TypeError(
            f"op {entry.name!r}: in-place variants are made for ops of one input only: "
            "write it by hand and mark it @surface.implements(..., inplace=True)"
        )
    make = make_unary if len(entry.params) == 1 else make_binary
    fn = refusing(entry.name, entry.fn) if len(entry.params) == 1 else entry.fn
    op = make(names.node, entry.name, fn, names.keep_int)
    op.__name__ = op.__qualname__ = (names.function or names.special)[0]
    op.entry = entry
    return op


def from_registry() -> dict:
    """{torch function name: op} for the registry's elementwise entries of one input (exp,
    tanh, sigmoid, abs, ...) or two (maximum, hypot, atan2, ...) that carry torch names
    (`ops.Torch`) and have no hand-written op: each op made here gets the surface its
    entry's torch names describe (`surface.add_entry`, below); `inplace.py` makes the in-place
    variants from the same entries. scipy.special's entries are `eager.special`'s (made when
    scipy is first needed: `surface.made_by_special`)."""
    made = {}
    for entry in RULES.values():
        names = entry.torch
        if (
            names is None
            or surface.by_hand(entry)
            or surface.made_by_special(entry)
            or entry.kind != "elementwise"
            or len(entry.params) not in (1, 2)
        ):
            continue  # (the other families' ops: reductions.py, or written by hand)
        op = op_of_entry(entry)
        for name in names.function:
            made[name] = op
    return made


HEAVISIDE = OpSpec.of("np_heaviside")


@surface.implements("np_heaviside")
def heaviside(input, values):
    """0 where input < 0, values where it is 0, 1 where it is > 0. Written here, before the
    ops made from the registry, for torch's refusal of operands of two dtypes; its node has no
    derivative (torch's backward raises, and so does the entry's rule)."""
    if isinstance(values, Tensor) and input._data.dtype != values._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return binary_op(HEAVISIDE, np.heaviside, input, values, to_float=False)


REGISTERED = from_registry()
for _op in dict.fromkeys(REGISTERED.values()):
    surface.add_entry(_op.entry, _op)
globals().update(REGISTERED)  # this module's own names: elementwise.exp, .sigmoid, ...
# (named here too for the functions that call them: rdiv, max and min)
reciprocal = REGISTERED["reciprocal"]
maximum, minimum = REGISTERED["maximum"], REGISTERED["minimum"]
round0 = make_unary(
    "RoundBackward0", "torch_round", refusing("torch_round", np.round), keep_int=True
)
positive = export("positive", methods=())(
    make_unary("PositiveBackward0", "positive", np.positive, keep_int=True)
)


def rdiv(input, other):
    """other / input: torch computes reciprocal(input) * other."""
    if isinstance(other, Tensor):
        return div(other, input)
    return mul(reciprocal(input), other)


@export("round")
def round(input, *, decimals=None):  # noqa: A001 - torch's name
    if decimals is None:
        return round0(input)
    if input._data.dtype.kind in "biu":
        # (torch: round(decimals=0) is another kernel, round_vml_cpu, than other decimals)
        raise not_implemented_for(
            "round_vml_cpu" if decimals == 0 else "round_cpu", input._data.dtype
        )
    out = _wrap(_result(np.round(input._data, decimals)))
    if _needs_grad(input):
        record(cached_spec("RoundBackward1", "torch_round"), out, (input,))
    return out


LEAKY_RELU = OpSpec("LeakyReluBackward0", "leaky_relu", n_arrays=1)
GELU = OpSpec("GeluBackward0", "gelu")


def gelu(input):
    """F.gelu(input) (approximate='none') of a floating-point Tensor: one node, as torch's,
    which keeps what its backward needs from the forward (a static argument of the entry's
    VJP): for a float32 array the slope itself, made from the forward's exp (`gelu_and_slope`:
    the backward then takes none), else the normal CDF of the input (computing it again
    was a quarter of gelu's backward)."""
    d = input._data
    needs_node = (
        STATE.enabled
        and (input._requires_grad or (input._base is not None and stale_view_requires_grad(input)))
        or (DUAL.on and any_tangent((input,)))
    )
    if needs_node and type(d) is np.ndarray and d.dtype == np.float32:
        out_data, slope = ops_nn.gelu_and_slope(d)
        static = {"slope": slope}
    else:
        cdf = ops_nn.normal_cdf(d)
        out_data = ops_nn.gelu_of_cdf(d, cdf)
        static = {"cdf": cdf}
    out = _wrap(_result(out_data))
    if needs_node:
        record(GELU, out, (input,), static)
    return out


def leaky_relu(input, negative_slope=0.01, inplace=False):
    out = _wrap(_result(ops_nn.leaky_relu(input._data, negative_slope)))
    if _needs_grad(input):
        record(LEAKY_RELU, out, (input,), {"negative_slope": negative_slope})
    return out


# --- clamp and where -------------------------------------------------------------------------

CLAMP_SCALAR = OpSpec("ClampBackward1", "clip", edges=(0,))
CLAMP_TENSOR = OpSpec("ClampBackward0", "clip")
CLAMP_MIN = OpSpec("ClampMinBackward0", "clip", edges=(0,))
CLAMP_MAX = OpSpec("ClampMaxBackward0", "clip", edges=(0,))
# a Tensor bound carries a gradient too (where it is the result), as torch's *Backward1 nodes
CLAMP_MIN_TENSOR = OpSpec("ClampMinBackward1", "clip", edges=(0, 1))
CLAMP_MAX_TENSOR = OpSpec("ClampMaxBackward1", "clip", edges=(0, 2))


def clamp_bound_spec(min=None, max=None):  # noqa: A002
    """The node of clamp_min (min given) or clamp_max (max given): torch's Backward1, with
    an edge to the bound, where the bound is a Tensor."""
    if min is not None:
        return CLAMP_MIN_TENSOR if isinstance(min, Tensor) else CLAMP_MIN
    return CLAMP_MAX_TENSOR if isinstance(max, Tensor) else CLAMP_MAX


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


@export("clamp", "clip")
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


@export("clamp_min")
def clamp_min(input, min):  # noqa: A002
    res = _wrap(clamp_data(input, min, None))
    if _needs_grad(input, min):
        record(clamp_bound_spec(min=min), res, (input, min, None))
    return res


@export("clamp_max")
def clamp_max(input, max):  # noqa: A002
    res = _wrap(clamp_data(input, None, max))
    if _needs_grad(input, max):
        record(clamp_bound_spec(max=max), res, (input, None, max))
    return res


WHERE = OpSpec("WhereBackward0", "where", edges=(1, 2))


_C_NAMES = {"int32": "int"}  # torch's error names the C type: int8_t, ..., int (for int32)


def _refuse_overflowing_scalar(value, rd):
    """torch.where's RuntimeError for a Python int that its integer result dtype cannot hold
    (numpy would wrap it: where(c, int8 tensor, 1000) gave -24). As c10's overflow check,
    an unsigned type takes negatives down to -max (they wrap)."""
    if type(value) is not int:
        return
    info = np.iinfo(rd)
    low = -int(info.max) if rd.kind == "u" else int(info.min)
    if not low <= value <= int(info.max):
        name = _C_NAMES.get(rd.name, f"{rd.name}_t")
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


@export("where", methods=())
def where(condition, input=None, other=None):
    """torch.where(cond, x, y), or torch.where(cond) for the indices of nonzero elements."""
    if input is None and other is None:
        return tuple(_wrap(i) for i in np.nonzero(_data(condition)))
    cond = _data(condition)
    if cond.dtype != np.bool_:
        cond = cond != 0
    xd, yd, rd, rx, ry = _promote(input, other)
    if rd.kind in "iu":
        for value in (input, other):
            _refuse_overflowing_scalar(value, rd)
    if type(cond) is not type(xd) or type(cond) is not type(yd):
        devices.check_same(cond, xd, yd)
    try:
        chosen = np.where(cond, xd, yd)
    except ValueError as e:
        raise broadcast_error_of(np.shape(cond), np.shape(xd), np.shape(yd)) or e  # noqa: B904 (torch's error, or numpy's own)
    res = _wrap(_result(chosen, rd))
    if _needs_grad(rx, ry):
        record(WHERE, res, (condition if isinstance(condition, Tensor) else cond, rx, ry))
    return res
