"""Install the eager surface on `Tensor`: its methods, operators and properties.

Takes the methods `surface.METHODS` names (each op's, from its registry entry's torch names
or its `@export`: one function serves `sourcegrad.exp(x)` and `x.exp()`, taking the tensor
first, installed on the class unchanged) and adds the few that are not an op's: those whose
argument order differs from the function's (`x.where(cond, y)`, reflected operators), the
casts (`x.float()`), the factories from a tensor (`x.new_zeros`) and the out-of-place forms
of in-place ops (`x.index_add`). Returns nothing: `install()` sets them on the class.

This is also the one place where the layers above `tensor.py` give the class the
methods that need them (`CLASS_METHODS`): `backward` (the engine), `_edge` (the
graph nodes), `_rebuild_view` (the in-place ops), `cpu`/`cuda` (the `to` op), the
legacy constructor and pickling (the factories), the numpy protocol
(numpy_dispatch). Setting a class attribute costs nothing per call: a method
found on the class is as fast as one defined in its body.

Imports: the whole eager package below it (tensor, node, engine, tensor_math, shape_ops,
inplace, factories, numpy_dispatch, surface); only `eager/__init__` imports it.
"""

from __future__ import annotations

import numpy as np

from . import (  # noqa: F401 - fft, vector_ops: their ops' surface
    devices,
    dtypes,
    engine,
    factories,
    fft,
    inplace,
    legacy,
    node,
    norms_scatters,
    numpy_dispatch,
    shape_ops,
    special,
    spectral,
    surface,
    tensor_math,
    torch_extras,
    torch_gaps,
    vector_ops,
    windows,
)
from .devices import CPU, DEVICE_TYPES
from .tensor import Tensor

_OPERANDS = (Tensor, bool, int, float, complex, np.ndarray, np.generic)
_GPU_ARRAYS = DEVICE_TYPES  # cupy.ndarray, once CuPy is loaded


def _operator(fn, reflected=False):
    """A binary operator that declines (NotImplemented) operands it does not know."""
    if reflected:

        def op(self, other):
            if not isinstance(other, _OPERANDS) and type(other) not in _GPU_ARRAYS:
                return NotImplemented
            return fn(other, self)
    else:

        def op(self, other):
            if not isinstance(other, _OPERANDS) and type(other) not in _GPU_ARRAYS:
                return NotImplemented
            return fn(self, other)

    op.__name__ = getattr(fn, "__name__", "op")
    return op


def _binary_operator(name, spec, np_fn, to_float=False):
    """`x + y` and the like: tensor_math.add(x, y) and co. with their defaults (alpha=1, no
    rounding_mode), calling the shared `tensor_math.binary_op` directly. The operators are the
    hottest path of eager code, and the keyword handling costs as much as a check."""
    binary = tensor_math.binary_op

    def op(self, other):
        if not isinstance(other, _OPERANDS) and type(other) not in _GPU_ARRAYS:
            return NotImplemented
        return binary(spec, np_fn, self, other, to_float)

    op.__name__ = name
    return op


def _matmul_operator(reflected=False):
    """`a @ b`: a Python number is no operand of matmul (torch's TypeError, as for `a @ 2`)."""
    inner = _operator(tensor_math.matmul, reflected)

    def op(self, other):
        if other.__class__ in (int, float, bool, complex):
            return NotImplemented
        return inner(self, other)

    op.__name__ = "__rmatmul__" if reflected else "__matmul__"
    return op


def _sub_operator():
    """`x - y`: `_binary_operator`'s, refusing a bool operand as torch does."""
    binary, spec = tensor_math.binary_op, tensor_math.SUB
    check = tensor_math.check_sub

    def __sub__(self, other):
        if not isinstance(other, _OPERANDS) and type(other) not in _GPU_ARRAYS:
            return NotImplemented
        if (
            self._data.dtype.kind == "b"
            or other.__class__ is bool
            or (isinstance(other, Tensor) and other._data.dtype.kind == "b")
        ):
            check(self, other)
        return binary(spec, np.subtract, self, other, False)

    return __sub__


def _method_where(self, condition, other):
    return tensor_math.where(condition, self, other)


def _cast(d):
    def method(self, memory_format=None):
        return shape_ops.to(self, d)

    method.__name__ = d.name
    return method


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """x.type() names the tensor type ('torch.FloatTensor'); x.type(dtype) casts."""
    if dtype is None:
        return "torch." + self.dtype._tensor_type
    if isinstance(dtype, str):
        names = {"torch." + d._tensor_type: d for d in dtypes.ALL}
        dtype = names[dtype]
    elif isinstance(dtype, legacy.tensortype):  # x.type(torch.LongTensor)
        dtype = dtype.dtype
    return shape_ops.to(self, dtype)


def _pos(self):
    return self


def _out_of_place(inplace_fn):
    def method(self, *args, **kwargs):
        return inplace_fn(shape_ops.clone(self), *args, **kwargs)

    method.__name__ = inplace_fn.__name__.rstrip("_")
    return method


# The methods that are not an op's: those whose argument order differs from the function's,
# the casts, the factories from a tensor and the out-of-place forms of in-place tensor_math.
OTHER_METHODS = {
    "positive": _pos,
    "where": _method_where,
    # casts
    "float": _cast(dtypes.float32),
    "double": _cast(dtypes.float64),
    "half": _cast(dtypes.float16),
    "long": _cast(dtypes.int64),
    "int": _cast(dtypes.int32),
    "short": _cast(dtypes.int16),
    "char": _cast(dtypes.int8),
    "byte": _cast(dtypes.uint8),
    "bool": _cast(dtypes.bool),
    "cfloat": _cast(dtypes.complex64),
    "cdouble": _cast(dtypes.complex128),
    "type": _type,
    # factories from a tensor
    "new_zeros": factories.new_zeros,
    "new_ones": factories.new_ones,
    "new_empty": factories.new_empty,
    "new_full": factories.new_full,
    "new_tensor": factories.new_tensor,
    # the out-of-place forms of in-place ops
    "index_put": _out_of_place(inplace.index_put_),
    "index_add": _out_of_place(inplace.index_add_),
    "index_fill": _out_of_place(inplace.index_fill_),
    "scatter": _out_of_place(inplace.scatter_),
    "scatter_add": _out_of_place(inplace.scatter_add_),
}
# their function forms: torch.scatter_add(input, dim, index, src), torch.index_add(...), ...
for _name in ("index_add", "index_fill", "scatter", "scatter_add"):
    surface.export(_name, methods=())(OTHER_METHODS[_name])
# every method installed on Tensor: the ops' (`surface.METHODS`) and the others
METHODS = {**surface.METHODS, **OTHER_METHODS}

OPERATORS = {
    "__add__": _binary_operator("add", tensor_math.ADD, np.add),
    "__radd__": _binary_operator("add", tensor_math.ADD, np.add),
    "__sub__": _sub_operator(),
    "__rsub__": _operator(tensor_math.rsub),
    "__mul__": _binary_operator("mul", tensor_math.MUL, np.multiply),
    "__rmul__": _binary_operator("mul", tensor_math.MUL, np.multiply),
    "__truediv__": _binary_operator("div", tensor_math.DIV, np.true_divide, to_float=True),
    "__rtruediv__": _operator(tensor_math.rdiv),
    "__floordiv__": _operator(tensor_math.floor_divide),
    "__rfloordiv__": _operator(tensor_math.floor_divide, reflected=True),
    "__mod__": _operator(tensor_math.remainder),
    "__rmod__": _operator(tensor_math.remainder, reflected=True),
    "__pow__": _operator(tensor_math.pow),
    "__rpow__": _operator(tensor_math.rpow),
    "__matmul__": _matmul_operator(),
    "__rmatmul__": _matmul_operator(reflected=True),
    "__lshift__": _operator(tensor_math.bitwise_left_shift),
    "__rlshift__": _operator(tensor_math.bitwise_left_shift, reflected=True),
    "__rshift__": _operator(tensor_math.bitwise_right_shift),
    "__rrshift__": _operator(tensor_math.bitwise_right_shift, reflected=True),
    "__and__": _operator(tensor_math.bitwise_and),
    "__rand__": _operator(tensor_math.bitwise_and),
    "__or__": _operator(tensor_math.bitwise_or),
    "__ror__": _operator(tensor_math.bitwise_or),
    "__xor__": _operator(tensor_math.bitwise_xor),
    "__rxor__": _operator(tensor_math.bitwise_xor),
    "__eq__": _operator(tensor_math.eq),
    "__ne__": _operator(tensor_math.ne),
    "__lt__": _operator(tensor_math.lt),
    "__le__": _operator(tensor_math.le),
    "__gt__": _operator(tensor_math.gt),
    "__ge__": _operator(tensor_math.ge),
    "__iadd__": _operator(inplace.iadd),
    "__isub__": _operator(inplace.isub),
    "__imul__": _operator(inplace.imul),
    "__itruediv__": _operator(inplace.itruediv),
    "__ipow__": _operator(inplace.ipow),
    "__imod__": _operator(inplace.imod),
    # no __imatmul__: torch has none, so `a @= b` rebinds a to a @ b (nothing in place)
    "__ifloordiv__": _operator(inplace.ifloordiv),
    "__iand__": _operator(inplace.iand),
    "__ior__": _operator(inplace.ior),
    "__ixor__": _operator(inplace.ixor),
    "__ilshift__": _operator(inplace.ilshift),
    "__irshift__": _operator(inplace.irshift),
    "__neg__": tensor_math.neg,
    "__pos__": _pos,
    "__abs__": tensor_math.abs,
    "__invert__": tensor_math.bitwise_not,
    "__getitem__": shape_ops.getitem,
    "__setitem__": inplace.setitem,
}

PROPERTIES = {"T": shape_ops.T, "mT": shape_ops.mT, "real": fft.real, "imag": fft.imag}


# --- Tensor methods that need an upper layer --------------------------------------------


def _new(cls, *args, **kwargs):
    # the legacy constructor: Tensor(2, 3) is uninitialised, Tensor([1, 2]) copies data
    return legacy.legacy_new(cls, *args, **kwargs)


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into the leaves' .grad (see sourcegrad.autograd.backward)."""
    engine.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def _cpu(self, memory_format=None):
    """This tensor on the CPU: itself if it is there, else a copy (ToCopyBackward0)."""
    if type(self._data) not in _GPU_ARRAYS:
        return self
    return shape_ops.to(self, CPU)


def _cuda(self, device=None, non_blocking=False, memory_format=None):
    """This tensor on a CUDA GPU (through CuPy): itself if it is there, else a copy.

    `device` is an index, "cuda:1" or a `device`; by default the current CUDA device.
    Without a CUDA device this raises a RuntimeError saying so.
    """
    if device is None:
        dev = devices.cuda_device(devices.current_index())
    else:
        dev = devices.as_device(device)
        if dev.type != "cuda":
            raise RuntimeError(f"Invalid device, must be cuda device (got {dev})")
    return shape_ops.to(self, dev)


def _reduce_ex(self, protocol):
    return (factories.rebuild, (self.detach()._data.copy(), self._requires_grad, type(self)))


# the numpy protocol (create_graph runs the rule table's lambdas on Tensors)
def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    return numpy_dispatch.array_ufunc(ufunc, method, inputs, kwargs)


def _array_function(self, func, types, args, kwargs):
    return numpy_dispatch.array_function(func, args, kwargs)


CLASS_METHODS = {
    "__new__": staticmethod(_new),
    "_edge": node.tensor_edge,
    "_rebuild_view": inplace.refresh_view,
    "backward": _backward,
    "cpu": _cpu,
    "cuda": _cuda,
    "__reduce_ex__": _reduce_ex,
    "__array_ufunc__": _array_ufunc,
    "__array_function__": _array_function,
}
for _fn in (_backward, _cpu, _cuda):
    _fn.__name__ = _fn.__qualname__ = _fn.__name__[1:]


def install():
    for name, fn in CLASS_METHODS.items():
        setattr(Tensor, name, fn)
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    for name, fn in OPERATORS.items():
        setattr(Tensor, name, fn)
    for name, fn in PROPERTIES.items():
        setattr(Tensor, name, property(fn))
    Tensor.__hash__ = lambda self: id(self)  # defining __eq__ would otherwise unset it
    # scipy.special's methods (x.lgamma()) are made on first use, from placeholders
    special.install_placeholders()


install()
