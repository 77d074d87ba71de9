"""Attach the op functions to `Tensor` as methods and operators.

One function serves `sourcegrad.exp(x)` and `x.exp()`: the functions in
`ops.py`, `shape_ops.py`, `inplace.py` take the tensor first, so they are
installed on the class unchanged. The ops made from the registry's entries
(`ops.REGISTERED`, `inplace.REGISTERED`) come with their method names. The few methods whose argument order differs
from the function's (`x.where(cond, y)`, reflected operators) are small
wrappers here.

This is also the one place where the layers above `tensor.py` give the class the
methods that need them (`CLASS_METHODS`): `backward` (the engine), `_edge` (the
graph nodes), `_rebuild_view` (the in-place ops), `cpu`/`cuda` (the `to` op), the
legacy constructor and pickling (the factories), the numpy protocol
(numpy_dispatch). Setting a class attribute costs nothing per call: a method
found on the class is as fast as one defined in its body.

Imports: the whole eager package below it (tensor, node, engine, ops, shape_ops,
inplace, factories, numpy_dispatch); only `eager/__init__` imports it.
"""

from __future__ import annotations

import numpy as np

from . import devices, dtypes, engine, factories, inplace, node, numpy_dispatch, ops, shape_ops
from . import fft, special, vector_ops
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
    """`x + y` and the like: ops.add(x, y) and co. with their defaults (alpha=1, no
    rounding_mode), calling the shared `ops.binary_op` directly. The operators are the
    hottest path of eager code, and the keyword handling costs as much as a check."""
    binary = ops.binary_op

    def op(self, other):
        if not isinstance(other, _OPERANDS) and type(other) not in _GPU_ARRAYS:
            return NotImplemented
        return binary(spec, np_fn, self, other, to_float)

    op.__name__ = name
    return op


def _method_where(self, condition, other):
    return ops.where(condition, self, other)


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
    return shape_ops.to(self, dtype)


def _pos(self):
    return self


def _out_of_place(inplace_fn):
    def method(self, *args, **kwargs):
        return inplace_fn(shape_ops.clone(self), *args, **kwargs)

    method.__name__ = inplace_fn.__name__.rstrip("_")
    return method


METHODS = {
    # arithmetic
    "add": ops.add,
    "sub": ops.sub,
    "subtract": ops.sub,
    "mul": ops.mul,
    "multiply": ops.mul,
    "div": ops.div,
    "divide": ops.div,
    "true_divide": ops.div,
    "pow": ops.pow,
    "float_power": ops.float_power,
    "square": ops.square,
    "remainder": ops.remainder,
    "fmod": ops.fmod,
    "floor_divide": ops.floor_divide,
    "fmax": ops.fmax,
    "fmin": ops.fmin,
    # comparisons and logic
    "eq": ops.eq,
    "ne": ops.ne,
    "lt": ops.lt,
    "le": ops.le,
    "gt": ops.gt,
    "ge": ops.ge,
    "not_equal": ops.ne,
    "less": ops.lt,
    "less_equal": ops.le,
    "greater": ops.gt,
    "greater_equal": ops.ge,
    "logical_and": ops.logical_and,
    "logical_or": ops.logical_or,
    "logical_xor": ops.logical_xor,
    "logical_not": ops.logical_not,
    "bitwise_and": ops.bitwise_and,
    "bitwise_or": ops.bitwise_or,
    "bitwise_xor": ops.bitwise_xor,
    "bitwise_not": ops.bitwise_not,
    "isnan": ops.isnan,
    "isinf": ops.isinf,
    "isfinite": ops.isfinite,
    "isclose": ops.isclose,
    "allclose": ops.allclose,
    "equal": ops.equal,
    # one-input elementwise
    "round": ops.round,
    "positive": _pos,
    "clamp": ops.clamp,
    "clip": ops.clamp,
    "clamp_min": ops.clamp_min,
    "clamp_max": ops.clamp_max,
    "where": _method_where,
    # reductions
    "sum": ops.sum,
    "nansum": ops.nansum,
    "mean": ops.mean,
    "prod": ops.prod,
    "max": ops.max,
    "min": ops.min,
    "amax": ops.amax,
    "amin": ops.amin,
    "argmax": ops.argmax,
    "argmin": ops.argmin,
    "var": ops.var,
    "std": ops.std,
    "norm": ops.norm,
    "logsumexp": ops.logsumexp,
    "softmax": ops.softmax,
    "log_softmax": ops.log_softmax,
    "cumsum": ops.cumsum,
    "cumprod": ops.cumprod,
    "all": ops.all,
    "any": ops.any,
    "count_nonzero": ops.count_nonzero,
    # matrix products
    "mm": ops.mm,
    "bmm": ops.bmm,
    "mv": ops.mv,
    "dot": ops.dot,
    "matmul": ops.matmul,
    "outer": ops.outer,
    "ger": ops.outer,
    "inner": ops.inner,
    "addmm": ops.addmm,
    "cross": vector_ops.cross,
    # shapes and views
    "view": shape_ops.view,
    "reshape": shape_ops.reshape,
    "view_as": shape_ops.view_as,
    "reshape_as": shape_ops.reshape_as,
    "flatten": shape_ops.flatten,
    "ravel": shape_ops.ravel,
    "unflatten": shape_ops.unflatten,
    "squeeze": shape_ops.squeeze,
    "unsqueeze": shape_ops.unsqueeze,
    "transpose": shape_ops.transpose,
    "swapaxes": shape_ops.transpose,
    "swapdims": shape_ops.transpose,
    "t": shape_ops.t,
    "permute": shape_ops.permute,
    "movedim": shape_ops.movedim,
    "moveaxis": shape_ops.movedim,
    "expand": shape_ops.expand,
    "expand_as": shape_ops.expand_as,
    "broadcast_to": shape_ops.broadcast_to,
    "select": shape_ops.select,
    "narrow": shape_ops.narrow,
    "unbind": shape_ops.unbind,
    "split": shape_ops.split,
    "tensor_split": shape_ops.tensor_split,
    "chunk": shape_ops.chunk,
    "clone": shape_ops.clone,
    "contiguous": shape_ops.contiguous,
    "to": shape_ops.to,
    "type_as": shape_ops.type_as,
    "flip": shape_ops.flip,
    "fliplr": shape_ops.fliplr,
    "flipud": shape_ops.flipud,
    "roll": shape_ops.roll,
    "repeat": shape_ops.repeat,
    "tile": shape_ops.tile,
    "repeat_interleave": shape_ops.repeat_interleave,
    "tril": shape_ops.tril,
    "triu": shape_ops.triu,
    "gather": shape_ops.gather,
    "take_along_dim": shape_ops.take_along_dim,
    "index_select": shape_ops.index_select,
    "take": shape_ops.take,
    "masked_select": shape_ops.masked_select,
    "diagonal": shape_ops.diagonal,
    "diag": shape_ops.diag,
    "trace": shape_ops.trace,
    "masked_fill": shape_ops.masked_fill,
    "sort": shape_ops.sort,
    "argsort": shape_ops.argsort,
    "topk": shape_ops.topk,
    "nonzero": shape_ops.nonzero,
    "argwhere": shape_ops.argwhere,
    "unique": shape_ops.unique,
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
    # in place
    "add_": inplace.add_,
    "sub_": inplace.sub_,
    "subtract_": inplace.sub_,
    "mul_": inplace.mul_,
    "multiply_": inplace.mul_,
    "div_": inplace.div_,
    "divide_": inplace.div_,
    "true_divide_": inplace.div_,
    "pow_": inplace.pow_,
    "remainder_": inplace.remainder_,
    "floor_divide_": inplace.floor_divide_,
    "round_": inplace.round_,
    "square_": inplace.square_,
    "clamp_": inplace.clamp_,
    "clip_": inplace.clamp_,
    "clamp_min_": inplace.clamp_min_,
    "clamp_max_": inplace.clamp_max_,
    "zero_": inplace.zero_,
    "fill_": inplace.fill_,
    "copy_": inplace.copy_,
    "masked_fill_": inplace.masked_fill_,
    "index_put_": inplace.index_put_,
    "index_add_": inplace.index_add_,
    "index_fill_": inplace.index_fill_,
    "scatter_": inplace.scatter_,
    "scatter_add_": inplace.scatter_add_,
    "uniform_": inplace.uniform_,
    "normal_": inplace.normal_,
    "bernoulli_": inplace.bernoulli_,
    "random_": inplace.random_,
    "exponential_": inplace.exponential_,
    "index_put": _out_of_place(inplace.index_put_),
    "index_add": _out_of_place(inplace.index_add_),
    "index_fill": _out_of_place(inplace.index_fill_),
    "scatter": _out_of_place(inplace.scatter_),
    "scatter_add": _out_of_place(inplace.scatter_add_),
}
# the Tensor methods and in-place variants the registry's entries name (`ops.Torch`)
METHODS.update(
    {name: op for op in dict.fromkeys(ops.REGISTERED.values()) for name in op.entry.torch.method}
)
METHODS.update(inplace.REGISTERED)
METHODS.update({"conj": fft.conj, "angle": fft.angle})

OPERATORS = {
    "__add__": _binary_operator("add", ops.ADD, np.add),
    "__radd__": _binary_operator("add", ops.ADD, np.add),
    "__sub__": _binary_operator("sub", ops.SUB, np.subtract),
    "__rsub__": _operator(ops.rsub),
    "__mul__": _binary_operator("mul", ops.MUL, np.multiply),
    "__rmul__": _binary_operator("mul", ops.MUL, np.multiply),
    "__truediv__": _binary_operator("div", ops.DIV, np.true_divide, to_float=True),
    "__rtruediv__": _operator(ops.rdiv),
    "__floordiv__": _operator(ops.floor_divide),
    "__rfloordiv__": _operator(ops.floor_divide, reflected=True),
    "__mod__": _operator(ops.remainder),
    "__rmod__": _operator(ops.remainder, reflected=True),
    "__pow__": _operator(ops.pow),
    "__rpow__": _operator(ops.rpow),
    "__matmul__": _operator(ops.matmul),
    "__rmatmul__": _operator(ops.matmul, reflected=True),
    "__and__": _operator(ops.bitwise_and),
    "__rand__": _operator(ops.bitwise_and),
    "__or__": _operator(ops.bitwise_or),
    "__ror__": _operator(ops.bitwise_or),
    "__xor__": _operator(ops.bitwise_xor),
    "__rxor__": _operator(ops.bitwise_xor),
    "__eq__": _operator(ops.eq),
    "__ne__": _operator(ops.ne),
    "__lt__": _operator(ops.lt),
    "__le__": _operator(ops.le),
    "__gt__": _operator(ops.gt),
    "__ge__": _operator(ops.ge),
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
    "__neg__": ops.neg,
    "__pos__": _pos,
    "__abs__": ops.abs,
    "__invert__": ops.bitwise_not,
    "__getitem__": shape_ops.getitem,
    "__setitem__": inplace.setitem,
}

PROPERTIES = {"T": shape_ops.T, "mT": shape_ops.mT, "real": fft.real, "imag": fft.imag}


# --- Tensor methods that need an upper layer --------------------------------------------


def _new(cls, *args, **kwargs):
    # the legacy constructor: Tensor(2, 3) is uninitialised, Tensor([1, 2]) copies data
    return factories.legacy_tensor(cls, *args, **kwargs)


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
    # a name the class lacks: scipy.special's methods (x.lgamma()) are made on first use
    "__getattr__": special.tensor_method,
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


install()
