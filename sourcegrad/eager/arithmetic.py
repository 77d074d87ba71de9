"""Arithmetic, comparisons and logic on Tensors: add, sub, mul, div, pow, remainder, fmod,
floor_divide, fmax/fmin, eq/lt/..., logical_*, bitwise_*, isnan/isinf/isfinite, isclose.

Takes Tensors and numbers (promoted to torch's result dtype, `operands.promote`); returns
Tensors whose node (torch's name: `AddBackward0`, `PowBackward1`, ...) calls the registry's
VJPs (`spec.record`). Every op has the same three steps, kept short because they are the
hot path of eager code (`x + y` calls `binary_op` directly, methods.py):

1. unwrap the operands and promote them to torch's result dtype;
2. run the numpy function;
3. if grad mode is on and an input requires grad, record the node.

Their surface (`sourcegrad.<name>`, `Tensor.<name>`, `np.<fn>(tensor)`) is the `@export`
at each, since torch's arithmetic (alpha=, rounding_mode=, scalar exponents with their own
nodes) is not one registry entry each.

Imports: `operands`, `spec`, `node`, `tensor`, `surface` and the leaves.

Why one module: torch's arithmetic family, every op the same three steps above, read
together.
"""

from __future__ import annotations

import numpy as np

from ..errors import ForwardADError
from ..ops import nn as ops_nn
from . import devices, dtypes
from .dual_state import DUAL, any_tangent
from .grad_mode import STATE
from .node import NotImplementedNode

# the shared operand helpers under the short private names this module's ops are written with
from .operands import data_of as _data
from .operands import grad_required, same_device
from .operands import needs_grad as _needs_grad
from .operands import promote as _promote
from .operands import result as _result
from .out_arg import write_out
from .spec import OpSpec, record, record_pair
from .surface import export
from .tensor import Tensor

_wrap = Tensor._make
_GPU = devices.DEVICE_TYPES  # the array types on a GPU (cupy.ndarray), filled when CuPy loads
_ndarray = np.ndarray  # (a module-level name: binary_op runs for every operator)


def binary_op(spec, fn, a, b, to_float=False):
    """`fn(a, b)` as a Tensor of torch's result dtype, its node `spec`'s (`record_pair`)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        # promote's first case written out (two tensors of one dtype, one kind of array):
        # the operators' commonest, where promote's call and its 5-tuple cost ~5% of an add
        ad, bd = a._data, b._data
        rd = ad.dtype
        if (
            (rd is bd.dtype or rd == bd.dtype)
            and type(ad) is type(bd)
            and (not to_float or rd.kind in "fc")
        ):
            ra, rb = a, b
        else:
            ad, bd, rd, ra, rb = _promote(a, b, to_float)
    else:
        ad, bd, rd, ra, rb = _promote(a, b, to_float)
    try:
        out = fn(ad, bd)
        # (`is` before `!=`: numpy's dtype comparison costs a call)
        if type(out) is not _ndarray or (out.dtype is not rd and out.dtype != rd):
            out = _result(out, rd)  # a numpy scalar, or another dtype
    except ValueError as e:
        raise broadcast_error(np.shape(ad), np.shape(bd)) or e from e
    out = _wrap(out)
    if STATE.enabled:
        record_pair(spec, out, ra, rb)  # (makes no node unless an operand requires grad)
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
# (torch's rules: a tie's gradient goes to the input, where np.fmax's splits it)
FMAX = OpSpec("FmaxBackward0", "torch_fmax")
FMIN = OpSpec("FminBackward0", "torch_fmin")


@export("add", numpy=(np.add,))
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


def _is_bool(x):
    return x.__class__ is bool or (isinstance(x, Tensor) and x._data.dtype == np.bool_)


def check_sub(a, b):
    """torch refuses a bool operand of a subtraction (`mask - 1`: use ~ or logical_not)."""
    if _is_bool(a) or _is_bool(b):
        if _is_bool(a) and _is_bool(b):
            raise RuntimeError(
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                "`^` or `logical_xor()` operator instead."
            )
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


@export("sub", "subtract", numpy=(np.subtract,))
def sub(input, other, *, alpha=1, out=None):
    check_sub(input, other)
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


@export("rsub", methods=())
def rsub(input, other):
    """other - input for a non-tensor `other` (RsubBackward1: one edge)."""
    check_sub(other, input)
    if isinstance(other, Tensor):
        return sub(other, input)
    ad, bd, rd, ra, rb = _promote(other, input)
    res = _wrap(_result(np.subtract(ad, bd), rd))
    if _needs_grad(rb):
        record(RSUB, res, (ra, rb))
    return res


@export("mul", "multiply", numpy=(np.multiply,))
def mul(input, other, *, out=None):
    if out is not None:
        return write_out("mul", out, mul(input, other), (input, other))
    return binary_op(MUL, np.multiply, input, other)


multiply = mul


@export("div", "divide", "true_divide", numpy=(np.true_divide,))
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
    if rd.kind in "bc":
        raise not_implemented_for(f"div_{mode}_cpu", rd)
    refuse_integer_zero_division(rd, bd)
    out = _wrap(_result(ops_nn.div_rounding(ad, bd, mode), rd))
    if _needs_grad(ra, rb):
        record(DIV_ROUNDING, out, (ra, rb))
    return out


divide = true_divide = div


NEGATIVE_INT_POWER = "Integers to negative integer powers are not allowed."


def power_data(a, b):
    """np.power as torch computes it. numpy refuses an integer to a negative integer power
    (ValueError); torch computes it as integer division does: 1 for a base of 1, +-1 for
    -1 (by the exponent's parity), 0 for any other base (0 too). torch refuses a negative
    Python int exponent itself: `refuse_negative_int_exponent`."""
    # (the exponent's kind first, without np.result_type: x ** 2.0 and x ** 2 of a float
    # tensor are the hot cases; a Python number's kind by np.result_type otherwise, as
    # `2 ** tensor` passes the base as it is)
    b_kind = b.dtype.kind if hasattr(b, "dtype") else "i" if type(b) is int else "f"
    if b_kind != "i":
        return np.power(a, b)
    a_kind = a.dtype.kind if hasattr(a, "dtype") else np.result_type(a).kind
    if a_kind not in "biu" or not np.any(b < 0):
        return np.power(a, b)
    negative = b < 0
    out = np.power(a, np.where(negative, 0, b))
    of_minus_one = np.where(np.remainder(b, 2) == 1, -1, 1)
    of_negative = np.where(a == 1, 1, np.where(a == -1, of_minus_one, 0))
    return np.where(negative, of_negative, out).astype(out.dtype, copy=False)


def refuse_negative_int_exponent(input, exponent):
    """torch's RuntimeError for an integer tensor to a negative Python int power (numpy's
    own error would be a ValueError)."""
    if (
        type(exponent) is int
        and exponent < 0
        and isinstance(input, Tensor)
        and input._data.dtype.kind in "biu"
    ):
        raise RuntimeError(NEGATIVE_INT_POWER)


@export("pow", numpy=(np.power,))
def pow(input, exponent, *, out=None):  # noqa: A001 - torch's name
    if out is not None:
        return write_out("pow", out, pow(input, exponent), (input, exponent))
    if not isinstance(input, Tensor):
        return binary_op(POW_BASE, power_data, input, exponent)
    refuse_negative_int_exponent(input, exponent)
    if (
        isinstance(exponent, Tensor)
        and input._data.dtype == np.bool_
        and exponent._data.dtype == np.bool_
    ):
        raise not_implemented_for("pow", np.bool_)
    spec = (
        POW_TENSOR
        if isinstance(exponent, (Tensor, np.ndarray)) or type(exponent) in _GPU
        else POW_SCALAR
    )
    return binary_op(spec, power_data, input, exponent)


def rpow(input, other):
    return (
        pow(other, input)
        if isinstance(other, Tensor)
        else binary_op(POW_BASE, power_data, other, input)
    )


@export("square", numpy=(np.square,))
def square(input):
    return pow(input, 2)


@export("float_power", numpy=(np.float_power,))
def float_power(input, exponent):
    """pow in double precision: float64, or complex128 where either operand is complex."""
    complex_ = any(
        (isinstance(x, Tensor) and x._data.dtype.kind == "c") or isinstance(x, complex)
        for x in (input, exponent)
    )
    wide = dtypes.complex128 if complex_ else dtypes.float64
    if isinstance(input, Tensor):
        input = input.to(wide)
    if isinstance(exponent, Tensor):
        exponent = exponent.to(wide)
    return pow(input, exponent)


def remainder_data(a, b):
    """torch's remainder: fmod, moved onto the divisor's side (so -2 % 2 is -0., as torch)."""
    r = np.fmod(a, b)
    if (r.dtype if type(r) in _GPU else np.asarray(r).dtype).kind != "f":
        return np.remainder(a, b)
    fix = (r != 0) & (
        ((b if type(b) in _GPU or isinstance(b, (int, float)) else np.asarray(b)) < 0) != (r < 0)
    )
    return np.where(fix, r + b, r)


@export("remainder", numpy=(np.remainder,))
def remainder(input, other):
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        # a number % a tensor: torch records it with a NotImplemented node
        integer_or_float("remainder_cpu", input, other)
        ad, bd, rd, ra, rb = _promote(input, other)
        res = _wrap(_result(remainder_data(ad, bd), rd))
        _no_tangent("aten::remainder", other)
        if grad_required(other):
            res._grad_fn = NotImplementedNode((other._edge(),), "aten::remainder")
            res._requires_grad = True
        return res
    integer_or_float("remainder_cpu", input, other)
    spec = REMAINDER if isinstance(other, Tensor) else REMAINDER_SCALAR
    return binary_op(spec, remainder_data, input, other)


def integer_or_float(kernel, a, b):
    """floor_divide, remainder, fmod: torch has them for integers and floats only."""
    bd, rd = _promote(a, b)[1:3]
    if rd.kind in "bc":
        raise not_implemented_for(kernel, rd)
    refuse_integer_zero_division(rd, bd)


def refuse_integer_zero_division(rd, divisor):
    """torch's RuntimeError for an integer division (//, %, fmod, div with a rounding mode)
    by zero, where numpy returns 0 (and warns): an integer has no inf or NaN to give."""
    if rd.kind in "iu" and np.any(divisor == 0):
        raise RuntimeError("ZeroDivisionError")


@export("fmod")
def fmod(input, other):
    integer_or_float("fmod_cpu", input, other)
    spec = FMOD if isinstance(other, Tensor) else FMOD_SCALAR
    return binary_op(spec, np.fmod, input, other)


def _no_tangent(name, *args):
    """Forward mode through an op torch records with a NotImplemented node: refused."""
    if DUAL.on and any_tangent(args):
        raise ForwardADError(f"Trying to use forward AD with {name} that does not support it.")


@export("floor_divide")
def floor_divide(input, other):
    """x // y: torch records it with a NotImplemented node (no derivative)."""
    ad, bd, rd, ra, rb = _promote(input, other)
    if rd.kind in "bc":
        raise not_implemented_for("div_floor_cpu", rd)
    refuse_integer_zero_division(rd, bd)
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


@export("fmax", numpy=(np.fmax,))
def fmax(input, other):
    if _promote(input, other)[2].kind == "c":
        raise RuntimeError("fmax not implemented for complex tensors.")
    return binary_op(FMAX, np.fmax, input, other)


@export("fmin", numpy=(np.fmin,))
def fmin(input, other):
    if _promote(input, other)[2].kind == "c":
        raise RuntimeError("fmin not implemented for complex tensors.")
    return binary_op(FMIN, np.fmin, input, other)


# --- comparisons and logic (no gradient) -----------------------------------------------------


def _compare(fn, a, b):
    ad, bd, rd, ra, rb = _promote(a, b)
    try:
        return _wrap(_result(fn(ad, bd)))
    except ValueError as e:
        raise broadcast_error(np.shape(ad), np.shape(bd)) or e from e


def _order(fn, kernel, a, b):
    """<, <=, >, >=: not for complex numbers (torch's NotImplementedError)."""
    ad, bd, rd, ra, rb = _promote(a, b)
    if rd.kind == "c":
        raise not_implemented_for(kernel, rd)
    try:
        return _wrap(_result(fn(ad, bd)))
    except ValueError as e:
        raise broadcast_error(np.shape(ad), np.shape(bd)) or e from e


def not_implemented_for(kernel, np_dtype):
    """torch's error for a kernel without an implementation for a dtype."""
    name = dtypes.FROM_NUMPY[np.dtype(np_dtype)]._scalar_name
    return NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")


@export("eq", numpy=(np.equal,))
def eq(input, other):
    return _compare(np.equal, input, other)


@export("ne", "not_equal", numpy=(np.not_equal,))
def ne(input, other):
    return _compare(np.not_equal, input, other)


@export("lt", "less", numpy=(np.less,))
def lt(input, other):
    return _order(np.less, "lt_cpu", input, other)


@export("le", "less_equal", numpy=(np.less_equal,))
def le(input, other):
    return _order(np.less_equal, "le_cpu", input, other)


@export("gt", "greater", numpy=(np.greater,))
def gt(input, other):
    return _order(np.greater, "gt_cpu", input, other)


@export("ge", "greater_equal", numpy=(np.greater_equal,))
def ge(input, other):
    return _order(np.greater_equal, "ge_cpu", input, other)


not_equal, less, less_equal, greater, greater_equal = ne, lt, le, gt, ge


def _logic(fn, a, b):
    """bitwise and, or, xor: of integers and bools only (torch's NotImplementedError)."""
    ad, bd, rd, ra, rb = _promote(a, b)
    if rd.kind in "fc":
        raise not_implemented_for(fn.__name__ + "_cpu", rd)
    try:
        return _wrap(_result(fn(ad, bd)))
    except ValueError as e:
        raise broadcast_error(np.shape(ad), np.shape(bd)) or e from e


@export("logical_and", numpy=(np.logical_and,))
def logical_and(input, other):
    return _wrap(_result(np.logical_and(_data(input), _data(other))))


@export("logical_or", numpy=(np.logical_or,))
def logical_or(input, other):
    return _wrap(_result(np.logical_or(_data(input), _data(other))))


@export("logical_xor", numpy=(np.logical_xor,))
def logical_xor(input, other):
    return _wrap(_result(np.logical_xor(_data(input), _data(other))))


@export("logical_not", numpy=(np.logical_not,))
def logical_not(input):
    return _wrap(_result(np.logical_not(input._data)))


@export("bitwise_and", numpy=(np.bitwise_and,))
def bitwise_and(input, other):
    return _logic(np.bitwise_and, input, other)


@export("bitwise_or", numpy=(np.bitwise_or,))
def bitwise_or(input, other):
    return _logic(np.bitwise_or, input, other)


@export("bitwise_xor", numpy=(np.bitwise_xor,))
def bitwise_xor(input, other):
    return _logic(np.bitwise_xor, input, other)


def _shift(fn, kernel, a, b):
    """a << b, a >> b: of integers only (torch's NotImplementedError for bool, floats)."""
    ad, bd, rd, ra, rb = _promote(a, b)
    if rd.kind in "fcb":
        raise not_implemented_for(kernel, rd)
    try:
        return _wrap(_result(fn(ad, bd), rd))
    except ValueError as e:
        raise broadcast_error(np.shape(ad), np.shape(bd)) or e from e


@export("bitwise_left_shift", numpy=(np.left_shift,))
def bitwise_left_shift(input, other):
    return _shift(np.left_shift, "lshift_cpu", input, other)


@export("bitwise_right_shift", numpy=(np.right_shift,))
def bitwise_right_shift(input, other):
    return _shift(np.right_shift, "rshift_cpu", input, other)


@export("bitwise_not", numpy=(np.invert,))
def bitwise_not(input):
    d = input._data
    return _wrap(_result(np.logical_not(d) if d.dtype == np.bool_ else np.invert(d)))


@export("isnan", numpy=(np.isnan,))
def isnan(input):
    return _wrap(_result(np.isnan(input._data)))


@export("isinf", numpy=(np.isinf,))
def isinf(input):
    return _wrap(_result(np.isinf(input._data)))


@export("isfinite", numpy=(np.isfinite,))
def isfinite(input):
    return _wrap(_result(np.isfinite(input._data)))


@export("isclose")
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    same_device(input, other)
    if isinstance(other, Tensor) and input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype._scalar_name} did not match {other.dtype._scalar_name}")
    return _wrap(_result(np.isclose(input._data, _data(other), rtol, atol, equal_nan)))


@export("allclose")
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    same_device(input, other)
    return bool(np.allclose(input._data, _data(other), rtol, atol, equal_nan))


@export("equal")
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


def broadcast_error_of(*shapes):
    """torch's error for several shapes that do not broadcast together, found as torch finds
    it: the first shape that does not broadcast with those before it (None when they do)."""
    joined = ()
    for shape in shapes:
        error = broadcast_error(joined, shape)
        if error is not None:
            return error
        joined = np.broadcast_shapes(joined, shape)
    return None


def not_a_tensor(name, value, arg="input", position=1):
    """torch's TypeError for a non-Tensor where an op needs a Tensor."""
    return TypeError(
        f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
        f"{type(value).__name__}"
    )
