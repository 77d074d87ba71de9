"""torch.linalg for the eager Tensor: inv, det, solve, cholesky, pinv, vector_norm, norm.

Each op runs numpy's np.linalg function and records the node torch records
(`LinalgInvExBackward0`, ...), whose derivatives are the registry's entries for np.linalg
(`sourcegrad/ops/numpy_linalg.py`): the same VJP lambdas the compiler inlines. The numpy
functions dispatch here on Tensors (`numpy_dispatch.FUNCTIONS`), so those lambdas run on
Tensors under create_graph and second derivatives are recorded too. The functions returning
several tensors (slogdet, eigh, svd, qr) are not here yet: their nodes would have to keep
their outputs, which multi-output nodes do not.

Imports: `operands`, `spec`, `tensor` (layer 4, like `ops.py`).
"""
from __future__ import annotations

import numpy as np

from .operands import as_tensor, needs_grad, result
from .spec import OpSpec, record
from .tensor import Tensor

_wrap = Tensor._make

INV = OpSpec("LinalgInvExBackward0", "linalg_inv")
DET = OpSpec("LinalgDetBackward0", "linalg_det")
SOLVE = OpSpec("LinalgSolveExBackward0", "linalg_solve")
CHOLESKY = OpSpec("LinalgCholeskyExBackward0", "linalg_cholesky", n_arrays=1)
PINV = OpSpec("LinalgPinvBackward0", "linalg_pinv", n_arrays=1)
NORM = OpSpec("LinalgVectorNormBackward0", "linalg_norm", n_arrays=1)


def _float(t):
    d = t._data
    if d.dtype.kind not in "fc":
        raise RuntimeError(f"linalg: Expected a floating point or complex tensor as input. "
                           f"Got {t.dtype}")
    return d


def _unary(spec, fn, A, static=None, **kwargs):
    A = as_tensor(A)
    out = _wrap(result(fn(_float(A), **kwargs), A._data.dtype))
    if needs_grad(A):
        record(spec, out, (A,), static)
    return out


def inv(A, *, out=None):
    """torch.linalg.inv (torch.inverse): the inverse of a (stack of) square matrices."""
    return _unary(INV, np.linalg.inv, A)


def det(A, *, out=None):
    """torch.linalg.det (torch.det)."""
    return _unary(DET, np.linalg.det, A)


def cholesky(A, *, upper=False, out=None):
    """torch.linalg.cholesky: the lower factor L (A = L L^T); its gradient is symmetric."""
    return _unary(CHOLESKY, np.linalg.cholesky, A, {"upper": upper}, upper=upper)


def pinv(A, *, rcond=None, hermitian=False, out=None):
    """torch.linalg.pinv (for a matrix of constant rank)."""
    kwargs = {} if rcond is None else {"rcond": rcond}
    return _unary(PINV, np.linalg.pinv, A, {"rcond": rcond, "hermitian": hermitian},
                  hermitian=hermitian, **kwargs)


def solve(A, B, *, left=True, out=None):
    """torch.linalg.solve: X with A X = B; B is a vector when it is 1-D (numpy's rule; the
    batched vector of torch's rule, B of shape A.shape[:-1], is refused)."""
    A, B = as_tensor(A), as_tensor(B)
    if not left:
        raise NotImplementedError("linalg.solve(left=False) is not supported")
    if B._data.ndim > 1 and B._data.ndim == A._data.ndim - 1 and \
            B._data.shape == A._data.shape[:-1]:
        raise NotImplementedError("linalg.solve of a batch of vectors is not supported: pass "
                                  "B.unsqueeze(-1) and squeeze the result")
    ad, bd = _float(A), _float(B)
    dtype = np.result_type(ad, bd)
    out = _wrap(result(np.linalg.solve(ad, bd), dtype))
    if needs_grad(A, B):
        record(SOLVE, out, (A, B))
    return out


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, axis=None,  # noqa: A002
                keepdims=None):
    """torch.linalg.vector_norm: the ord-norm of x flattened (dim None) or along dim."""
    axis = dim if axis is None else axis
    keepdims = keepdim if keepdims is None else keepdims
    x = as_tensor(x)
    if axis is None:  # the norm of x flattened (numpy reads a 2-D x as a matrix)
        out = vector_norm(x.reshape(-1), ord, 0)
        return out.reshape((1,) * x._data.ndim) if keepdims else out
    axis = tuple(axis) if isinstance(axis, list) else axis
    d = _float(x)
    out = _wrap(result(np.linalg.norm(d, ord, axis, keepdims), d.dtype))
    if needs_grad(x):
        record(NORM, out, (x,), {"ord": ord, "axis": axis, "keepdims": keepdims})
    return out


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):  # noqa: A002
    """torch.linalg.norm for the cases torch computes as a vector norm: a vector ord, or the
    Frobenius norm (ord None or 'fro') of a matrix."""
    A = as_tensor(A)
    if ord is None or (ord == "fro" and (dim is None or len(dim) == 2)):
        return vector_norm(A, 2, dim, keepdim)
    if isinstance(ord, str) or (dim is None and A._data.ndim == 2) or \
            (isinstance(dim, (tuple, list)) and len(dim) == 2):
        raise NotImplementedError(f"linalg.norm with the matrix ord {ord!r} is not supported")
    return vector_norm(A, ord, dim, keepdim)


# np.linalg on Tensors (numpy_dispatch): numpy's signatures
def np_norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    x = as_tensor(x)
    if ord is None or (ord == "fro" and (axis is None or len(axis) == 2)):
        return vector_norm(x, 2, axis, keepdims)
    if isinstance(ord, str) or (axis is None and x._data.ndim == 2) or \
            (isinstance(axis, tuple) and len(axis) == 2):
        raise NotImplementedError(f"np.linalg.norm of a Tensor with the matrix ord {ord!r} is "
                                  "not supported")
    return vector_norm(x, ord, axis, keepdims)


NUMPY = {np.linalg.inv: inv, np.linalg.det: det, np.linalg.solve: solve,
         np.linalg.cholesky: lambda a, upper=False: cholesky(a, upper=upper),
         np.linalg.pinv: lambda a, rcond=None, hermitian=False: pinv(a, rcond=rcond,
                                                                      hermitian=hermitian),
         np.linalg.norm: np_norm}
