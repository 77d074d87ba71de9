"""Matrix products on Tensors: mm, bmm, mv, dot, inner, matmul, outer, addmm, einsum.

Takes Tensors; returns the product recorded as torch records it (`matmul` decomposes into
MmBackward0 / MvBackward0 / DotBackward0 / BmmBackward0 with views around them, as torch's
does). `matmul`, `dot`, `outer`, `einsum` are the registry entries' ops (`@implements`);
the others are eager-only (`@export`).

Imports: `arithmetic` (add, mul), `views`, `operands`, `spec`, `tensor`, `surface` and the
leaves.
"""

from __future__ import annotations

import math

import numpy as np

from ..ops import nn as ops_nn
from . import devices, views
from .arithmetic import add, broadcast_error, mul

# the shared operand helpers under the short private names this module's ops are written with
from .operands import as_tensor as _as_tensor
from .operands import data_of as _data
from .operands import needs_grad as _needs_grad
from .operands import promote as _promote
from .operands import result as _result
from .operands import wrap_array
from .out_arg import write_out
from .spec import OpSpec, record
from .surface import export, implements, numpy_form
from .tensor import Tensor

_wrap = Tensor._make
_GPU = devices.DEVICE_TYPES  # the array types on a GPU (cupy.ndarray), filled when CuPy loads


# --- matrix products ---------------------------------------------------------------------------

MM = OpSpec.of("matmul")
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


# torch's checks of the matrix products, kernel by kernel (matmul picks one per case, as
# torch's does, so `a @ b` raises what torch's kernel for that case raises): the operands'
# dtypes must be the same (torch does not promote here), and not bool


def _not_for_bool(kernel, a):
    if a._data.dtype == np.bool_:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _check_mm(a, b):
    """mm's checks (a, b matrices): dtypes, then shapes."""
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: "
            f"{a.dtype._c_name} != {b.dtype._c_name}"
        )
    _not_for_bool("addmm_impl_cpu_", a)
    if a._data.shape[1] != b._data.shape[0]:
        raise _mm_shapes(a._data.shape, b._data.shape)


def _check_mv(mat, vec):
    if mat.dtype is not vec.dtype:
        v, m = vec.dtype._scalar_name, mat.dtype._scalar_name
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {v}, {m}, and {v}"
        )
    _not_for_bool("addmv_impl_cpu", mat)
    n, k = mat._data.shape
    if vec._data.shape[0] != k:
        raise RuntimeError(
            f"size mismatch, got input ({n}), mat ({n}x{k}), vec ({vec._data.shape[0]})"
        )


def _check_dot(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"dot : expected both vectors to have same dtype, but found "
            f"{a.dtype._scalar_name} and {b.dtype._scalar_name}"
        )
    _not_for_bool("dot", a)
    n, m = a._data.shape[0], b._data.shape[0]
    if n != m:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same "
            f"number of elements, but got {n} and {m} elements respectively"
        )


def _check_bmm_dtypes(a, b):
    _not_for_bool("bmm", a)
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected scalar type {a.dtype._scalar_name} but found {b.dtype._scalar_name}"
        )


@export("mm")
def mm(input, mat2):
    if input._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _check_mm(input, mat2)
    return _mm_like(MM, input, mat2)


@export("bmm")
def bmm(input, mat2):
    if input._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _check_bmm_dtypes(input, mat2)
    b, _, k = input._data.shape
    b2, k2, _ = mat2._data.shape
    if (b2, k2) != (b, k):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but "
            f"got: [{b2}, {k2}]."
        )
    return _mm_like(BMM, input, mat2)


@export("mv")
def mv(input, vec):
    if input._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got 1, {input._data.ndim}, {vec._data.ndim}"
        )
    _check_mv(input, vec)
    return _mm_like(MV, input, vec)


@implements("dot")
def dot(input, other):
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input._data.ndim}D and {other._data.ndim}D tensors"
        )
    _check_dot(input, other)
    return _mm_like(DOT, input, other)


EINSUM = OpSpec.of("einsum")


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
        _check_dot(a, b)
        return _mm_like(DOT, a, b)
    if na == 2 and nb == 1:
        _check_mv(a, b)
        return _mm_like(MV, a, b)
    if na == 1 and nb == 2:
        a1 = views.unsqueeze(a, 0)
        _check_mm(a1, b)
        return views.squeeze4(_mm_like(MM, a1, b), 0)
    if na == 2 and nb == 2:
        _check_mm(a, b)
        return _mm_like(MM, a, b)
    if (na >= 3 and nb <= 2 or nb >= 3 and na <= 2) and _should_fold(a, b, na, nb):
        return _folded(a, b, na, nb)
    # batched: expand both to the broadcast batch shape, then one bmm
    _check_bmm_dtypes(a, b)
    a2 = a.unsqueeze(0) if na == 1 else a
    b2 = b.unsqueeze(-1) if nb == 1 else b
    try:
        batch = np.broadcast_shapes(a2._data.shape[:-2], b2._data.shape[:-2])
    except ValueError:
        raise broadcast_error(a2._data.shape[:-2], b2._data.shape[:-2]) from None
    n, k = a2._data.shape[-2:]
    k2, m = b2._data.shape[-2:]
    if k != k2:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{int(np.prod(batch))}, {k}] but got: [{int(np.prod(batch))}, {k2}]."
        )
    # torch's a.expand(batch + (n, k)).reshape(-1, n, k) and b's: the shapes are known here,
    # so without the methods' parsing, checks and -1 (a few microseconds a node: an
    # attention's two products make eight of these nodes)
    size = math.prod(batch)
    ae = views.reshape(views.expand_to(a2, batch + (n, k)), (size, n, k))
    be = views.reshape(views.expand_to(b2, batch + (k, m)), (size, k, m))
    res = _mm_like(BMM, ae, be)
    if nb == 1:  # (torch squeezes the vector's column first: SqueezeBackward1)
        res = views.squeeze(res, -1)
    shape = batch + ((n,) if na > 1 else ()) + ((m,) if nb > 1 else ())
    return views.unsafe_view(res, shape)


def _should_fold(a, b, na, nb):
    """torch's `should_fold` (its matmul's choice of one mm / mv over a bmm), for a batch of 3
    or more dims times a matrix or vector, either way round: fold where the smaller operand
    requires grad; else not for a matrix first; else where the batch folds into rows without
    a copy (an empty batch always)."""
    larger = na >= nb
    if (b if larger else a).requires_grad:
        return True
    if na == 2:
        return False
    t1 = a._data if larger else np.swapaxes(b._data, -1, -2)
    if t1.size == 0:
        return True
    shape, strides = t1.shape, t1.strides
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(t1.ndim - 2))


def _folded(a, b, na, nb):
    """torch's folded matmul: the batch of the larger operand (b transposed where b is the
    larger) folded into the rows of one mm / mv, viewed back; transposed back and made
    contiguous where b was the larger and a a matrix (MmBackward0 under a CloneBackward0)."""
    transpose = nb > na
    t1 = views.transpose(b, -2, -1) if transpose else a
    t2 = b if not transpose else (views.t(a) if na == 2 else a)
    lead = t1._data.shape[:-1]
    folded = views.reshape(t1, (math.prod(lead), t1._data.shape[-1]))
    if t2._data.ndim == 1:
        _check_mv(folded, t2)
        return views.unsafe_view(_mm_like(MV, folded, t2), lead)
    _check_mm(folded, t2)
    out = views.unsafe_view(_mm_like(MM, folded, t2), lead + (t2._data.shape[1],))
    return views.contiguous(views.transpose(out, -2, -1)) if transpose else out


@implements("outer")
def outer(input, vec2):
    """torch.outer: input[:, None] * vec2 (MulBackward0 over ViewBackward0, as torch)."""
    return mul(input.reshape(-1, 1), vec2)


ger = outer


def check_addmm(input, shape1, dtype1, mat2):
    """addmm's checks, as torch's, for a mat1 of shape1 and dtype1 (F.linear's too, with the
    input's rows folded into shape1): the shapes, then mat1's and mat2's dtypes, then self's
    (the bias) and mat2's."""
    (n, k), (k2, m) = shape1, mat2._data.shape
    if k != k2:
        raise _mm_shapes((n, k), (k2, m))
    if dtype1 is not mat2.dtype:
        raise RuntimeError(
            f"mat1 and mat2 must have the same dtype, but got {dtype1._scalar_name} and "
            f"{mat2.dtype._scalar_name}"
        )
    if isinstance(input, Tensor) and input.dtype is not mat2.dtype:
        raise RuntimeError(
            f"self and mat2 must have the same dtype, but got {input.dtype._scalar_name} and "
            f"{mat2.dtype._scalar_name}"
        )
    _not_for_bool("addmm_impl_cpu_", mat2)


@export("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    if mat1._data.ndim != 2:
        raise RuntimeError("mat1 must be a matrix, got " + f"{mat1._data.ndim}-D tensor")
    if mat2._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix, got " + f"{mat2._data.ndim}-D tensor")
    check_addmm(input, mat1._data.shape, mat1.dtype, mat2)
    if beta != 1 or alpha != 1:
        return add(mul(input, beta), mul(mm(mat1, mat2), alpha))
    d1, d2, rd, r1, r2 = _promote(mat1, mat2)
    bd = _data(input)
    if type(bd) is not type(d1):
        devices.check_same(bd, d1)
    out = _wrap(_result(ops_nn.addmm(bd, d1, d2), rd))
    if _needs_grad(input, r1, r2):
        record(ADDMM, out, (input, r1, r2))
    return out


# --- numpy's call forms --------------------------------------------------------------------------


@numpy_form("outer")
def np_outer(a, b, out=None):
    made = outer(wrap_array(a), wrap_array(b))
    return made if out is None else write_out("outer", out, made, (a, b))


@numpy_form("dot")
def np_dot(a, b, out=None):
    a, b = wrap_array(a), wrap_array(b)
    if a._data.ndim == 0 or b._data.ndim == 0:
        made = mul(a, b)
    elif b._data.ndim <= 2:
        made = matmul(a, b)
    else:
        raise NotImplementedError("sourcegrad: np.dot on N-d Tensors is not supported")
    return made if out is None else write_out("dot", out, made, (a, b))
