"""Matrix products on Tensors: mm, bmm, mv, dot, inner, matmul, outer, addmm, einsum.

Takes Tensors; returns the product recorded as torch records it (`matmul` decomposes into
MmBackward0 / MvBackward0 / DotBackward0 / BmmBackward0 with views around them, as torch's
does). `matmul`, `dot`, `outer`, `einsum` are the registry entries' ops (`@implements`);
the others are eager-only (`@export`).

Imports: `arithmetic` (add, mul), `views`, `operands`, `spec`, `tensor`, `surface` and the
leaves.
"""

from __future__ import annotations

import numpy as np

from ..ops import nn as rt
from . import devices

# the shared operand helpers under the short private names this module's ops are written with
from .operands import as_tensor as _as_tensor, data_of as _data, needs_grad as _needs_grad
from .operands import promote as _promote, result as _result
from .spec import OpSpec, record
from .tensor import Tensor

from . import views
from .arithmetic import add, mul
from .operands import wrap_array
from .out_arg import write_out
from .surface import export, implements, numpy_form

_wrap = Tensor._make
_GPU = devices.DEVICE_TYPES  # the array types on a GPU (cupy.ndarray), filled when CuPy loads


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


@export("mm")
def mm(input, mat2):
    if input._data.ndim != 2 or mat2._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if input._data.shape[1] != mat2._data.shape[0]:
        raise _mm_shapes(input._data.shape, mat2._data.shape)
    _check_matmul(input, mat2)
    return _mm_like(MM, input, mat2)


@export("bmm")
def bmm(input, mat2):
    if input._data.ndim != 3 or mat2._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    return _mm_like(BMM, input, mat2)


@export("mv")
def mv(input, vec):
    return _mm_like(MV, input, vec)


@implements("dot")
def dot(input, other):
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input._data.ndim}D and {other._data.ndim}D tensors"
        )
    return _mm_like(DOT, input, other)


EINSUM = OpSpec("EinsumBackward0", "einsum")


@implements("einsum")
def einsum(equation, *operands, optimize=False):
    """torch.einsum(equation, *operands), the operands also as one list: numpy's einsum of
    their values, one node whose VJPs are the registry entry's (`runtime.einsum_grad`:
    another einsum, a diagonal "ii->i" included), so its gradients have gradients too.
    (`optimize`: np.einsum's, which `np.einsum(tensor, ...)` may pass: the same values.)"""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    tensors = tuple(_as_tensor(t) for t in operands)
    if not tensors:
        raise RuntimeError("einsum(): must provide at least one operand")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not dtype:
            raise RuntimeError(
                f"expected scalar type {dtype._scalar_name} but found {t.dtype._scalar_name}"
            )
    if len({type(t._data) for t in tensors}) > 1:
        devices.same_device(*tensors)
    out = _wrap(np.einsum(equation, *(t._data for t in tensors)))
    if _needs_grad(*tensors):
        record(EINSUM, out, (equation,) + tensors)
    return out


vdot = export("vdot", methods=())(dot)  # (torch.vdot conjugates; our values are real)


@export("inner")
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


@implements("matmul")
def matmul(input, other, *, out=None):
    """`a @ b`, decomposed into the nodes torch records for each case; with `out=`, written
    into out (which must have the result's dtype, as torch's matmul requires)."""
    if out is None:
        return _matmul(input, other)
    result = _matmul(input, other)
    if isinstance(out, Tensor) and out.dtype != result.dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {result.dtype._c_name}, but got "
            f"{out.dtype._c_name} instead"
        )
    return write_out("matmul", out, result, (input, other))


def _matmul(input, other):
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
        return views.squeeze4(_mm_like(MM, views.unsqueeze(a, 0), b), 0)
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
            return views.unsafe_view(res, lead)
        res = _mm_like(MM, folded, b)
        return views.unsafe_view(res, lead + (b._data.shape[-1],))
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
    return views.unsafe_view(res, shape)


@implements("outer")
def outer(input, vec2):
    """torch.outer: input[:, None] * vec2 (MulBackward0 over ViewBackward0, as torch)."""
    return mul(input.reshape(-1, 1), vec2)


ger = outer


@export("addmm")
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


# --- numpy's call forms --------------------------------------------------------------------------


@numpy_form("outer")
def np_outer(a, b, out=None):
    return outer(wrap_array(a), wrap_array(b))


@numpy_form("dot")
def np_dot(a, b, out=None):
    a, b = wrap_array(a), wrap_array(b)
    if a._data.ndim == 0 or b._data.ndim == 0:
        return mul(a, b)
    if b._data.ndim <= 2:
        return matmul(a, b)
    raise NotImplementedError("sourcegrad: np.dot on N-d Tensors is not supported")
