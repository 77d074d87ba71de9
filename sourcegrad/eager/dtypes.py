"""Tensor element types (`sourcegrad.float32`, ...) and torch's type-promotion rules.

Each `dtype` wraps a numpy dtype. It prints as torch prints its dtypes
(`torch.float32`), since code written for torch compares and prints them. It
also has a `.dtype` attribute holding the numpy dtype, which is what lets
numpy accept it directly: `np.ones(3, dtype=sourcegrad.float64)` works, and so
do the runtime helpers that write `np.ones(shape, dtype=x.dtype)` when `x` is a
Tensor.

Promotion follows torch, not numpy, where the two differ:

* operands fall into three tiers: tensors with dimensions, 0-dim tensors, and
  Python scalars. The highest tier decides, unless a lower tier has a higher
  *category* (bool < integer < floating < complex);
* a Python float counts as the default dtype (float32), a Python int as int64;
* across categories the higher category's dtype wins (`int64 + float16` is
  float16, where numpy says float64).

Imports: nothing of sourcegrad (a leaf of the eager package).
"""

from __future__ import annotations

import builtins

import numpy as np

__all__ = [
    "dtype",
    "float16",
    "float32",
    "float64",
    "half",
    "float",
    "double",
    "bfloat16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "short",
    "int",
    "long",
    "bool",
    "complex64",
    "complex128",
    "cfloat",
    "cdouble",
    "get_default_dtype",
    "set_default_dtype",
    "promote_types",
    "result_type",
    "can_cast",
    "finfo",
    "iinfo",
]

# Categories, lowest first: a higher category wins over a higher tier of a lower one.
_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """One element type: its numpy dtype plus the names torch uses for it in messages."""

    __slots__ = (
        "name",
        "dtype",
        "is_floating_point",
        "is_complex",
        "is_signed",
        "itemsize",
        "_category",
        "_tensor_type",
        "_scalar_name",
        "_c_name",
    )

    def __init__(self, name, np_dtype, tensor_type, scalar_name, c_name):
        self.name = name
        self.dtype = np.dtype(np_dtype)
        kind = self.dtype.kind
        self._category = {"b": _BOOL, "i": _INT, "u": _INT, "f": _FLOAT, "c": _COMPLEX}[kind]
        self.is_floating_point = kind == "f"
        self.is_complex = kind == "c"
        self.is_signed = kind in "ifc"
        self.itemsize = self.dtype.itemsize
        self._tensor_type = tensor_type  # 'FloatTensor', as in "[torch.FloatTensor [3]]"
        self._scalar_name = scalar_name  # 'Float', as in "result type Float can't be cast"
        self._c_name = c_name  # 'float', as in "a gradient with dtype 'long int'"

    def __repr__(self):
        return f"torch.{self.name}"

    __str__ = __repr__

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self):
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self):
        return {float32: complex64, float64: complex128, float16: complex64}.get(self, self)


float16 = dtype("float16", np.float16, "HalfTensor", "Half", "c10::Half")
float32 = dtype("float32", np.float32, "FloatTensor", "Float", "float")
float64 = dtype("float64", np.float64, "DoubleTensor", "Double", "double")
int8 = dtype("int8", np.int8, "CharTensor", "Char", "signed char")
int16 = dtype("int16", np.int16, "ShortTensor", "Short", "short int")
int32 = dtype("int32", np.int32, "IntTensor", "Int", "int")
int64 = dtype("int64", np.int64, "LongTensor", "Long", "long int")
uint8 = dtype("uint8", np.uint8, "ByteTensor", "Byte", "unsigned char")
bool = dtype("bool", np.bool_, "BoolTensor", "Bool", "bool")  # noqa: A001 - torch's name
complex64 = dtype(
    "complex64", np.complex64, "ComplexFloatTensor", "ComplexFloat", "c10::complex<float>"
)
complex128 = dtype(
    "complex128", np.complex128, "ComplexDoubleTensor", "ComplexDouble", "c10::complex<double>"
)
# numpy has no bfloat16; the name exists so that code mentioning it imports, and it
# is stored as float32 (documented difference).
bfloat16 = float32

half, float, double = float16, float32, float64  # noqa: A001 - torch's aliases
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool, complex64, complex128)
FROM_NUMPY = {d.dtype: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}


def _by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The sourcegrad dtype for a numpy dtype (TypeError for ones torch lacks, like str)."""
    found = FROM_NUMPY.get(np_dtype)
    if found is None:
        found = FROM_NUMPY.get(np.dtype(np_dtype))
        if found is None:
            raise TypeError(
                f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only "
                "supported types are: float64, float32, float16, complex64, "
                "complex128, int64, int32, int16, int8, uint8, and bool."
            )
    return found


def to_numpy_dtype(d):
    """Accept a sourcegrad dtype, a numpy dtype or a Python type; give the numpy dtype."""
    return as_dtype(d).dtype


_py_float, _py_int, _py_bool = builtins.float, builtins.int, builtins.bool


def as_dtype(d) -> dtype:
    """Normalise what users pass as `dtype=`: a sourcegrad dtype, numpy dtype or Python type."""
    if type(d) is dtype:
        return d
    if d is _py_float:
        return DEFAULT_DTYPE[0]
    if d is _py_int:
        return int64
    if d is _py_bool:
        return bool
    if d is complex:
        return complex64
    return from_numpy_dtype(np.dtype(d))


# --- default dtype --------------------------------------------------------------------------

DEFAULT_DTYPE = [float32]


def get_default_dtype() -> dtype:
    """The dtype of tensors made from Python floats (float32 unless changed)."""
    return DEFAULT_DTYPE[0]


def set_default_dtype(d) -> None:
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    DEFAULT_DTYPE[0] = d
    _RESULT_CACHE.clear()


def default_complex_dtype() -> dtype:
    return complex128 if DEFAULT_DTYPE[0] is float64 else complex64


# --- promotion ------------------------------------------------------------------------------


def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types: within a category numpy agrees; across, the higher category wins."""
    if a is b:
        return a
    if a._category != b._category and not (a._category >= _FLOAT and b._category >= _FLOAT):
        return a if a._category > b._category else b
    # (a float and a complex type: the complex one of the wider float, as numpy's)
    return FROM_NUMPY[np.promote_types(a.dtype, b.dtype)]


def _combine(higher, lower):
    """c10's combine_categories: the higher tier wins unless the lower has a higher category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


_RESULT_CACHE: dict = {}

# Tiers of an operand, as `result_type` is told them.
TIER_DIM, TIER_ZERO, TIER_SCALAR = 0, 1, 2


def scalar_dtype(value) -> dtype:
    """The dtype torch gives a Python scalar operand (a 'wrapped number')."""
    t = type(value)
    if t is _py_bool or t is np.bool_:
        return bool
    if t is _py_int or isinstance(value, np.integer):
        return int64
    if t is complex or isinstance(value, np.complexfloating):
        return default_complex_dtype()
    return DEFAULT_DTYPE[0]


def result_type(*operands) -> dtype:
    """torch.result_type over (dtype, tier) pairs; cached, since every binary op asks."""
    found = _RESULT_CACHE.get(operands)
    if found is not None:
        return found
    tiers = [None, None, None]
    for d, tier in operands:
        tiers[tier] = d if tiers[tier] is None else promote_types(tiers[tier], d)
    out = _combine(tiers[0], _combine(tiers[1], tiers[2]))
    _RESULT_CACHE[operands] = out
    return out


def can_cast(src: dtype, dst: dtype) -> _py_bool:
    """torch.can_cast: an in-place result may not move to a lower category."""
    return src._category <= dst._category


class finfo:
    """Machine limits of a floating-point dtype (`torch.finfo`)."""

    def __init__(self, type=None):  # noqa: A002 - torch's parameter name
        info = np.finfo(
            (type or DEFAULT_DTYPE[0]).dtype if not isinstance(type, np.dtype) else type
        )
        self.bits, self.eps, self.max, self.min = (
            info.bits,
            _py_float(info.eps),
            _py_float(info.max),
            _py_float(info.min),
        )
        self.tiny = self.smallest_normal = _py_float(info.tiny)
        self.resolution = _py_float(info.resolution)
        self.dtype = str(info.dtype)


class iinfo:
    """Machine limits of an integer dtype (`torch.iinfo`)."""

    def __init__(self, type):  # noqa: A002
        info = np.iinfo(type.dtype)
        self.bits, self.max, self.min, self.dtype = (
            info.bits,
            _py_int(info.max),
            _py_int(info.min),
            str(info.dtype),
        )
