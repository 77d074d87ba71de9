"""torch's Cholesky family beyond `linalg.cholesky`: `linalg.cholesky_ex` (the factor and
LAPACK's `info`), the legacy `torch.cholesky(A, upper=False)` (and `Tensor.cholesky`),
`cholesky_solve(B, L, upper=False)` and `cholesky_inverse(L, upper=False)`, and
`LinAlgError`, the error torch raises for a matrix that is not positive-definite.

Takes Tensors (a matrix or a stack of them, float or double); returns Tensors of the input's
dtype (`info`: int32 of the batch's shape). The factors record the registry's
`linalg_cholesky` entry (lower or upper factor) under torch's node names
(`LinalgCholeskyExBackward0`, `CholeskyBackward0`). `cholesky_solve` and `cholesky_inverse`
are composed of matmul and `linalg.solve` / `linalg.inv` ((L L^H)^-1 B and (L L^H)^-1): their
gradients with respect to B and the full factor L are torch's (torch's backward does not
restrict L's gradient to its triangle either), their node names those of the last op.

Where the factorization fails, `info` is the order of the first leading minor that is not
positive-definite, as LAPACK's potrf gives it; the factor's entries are then those of the
unblocked algorithm (LAPACK's potf2: the columns before the failing one, the failing
diagonal's value, the input's lower triangle after it), which torch's match for the matrices
LAPACK factors unblocked; they are not specified beyond that (torch's documentation says so).

Imports: `linalg`, `operands`, `spec`, `surface`, `tensor` (layer 4, beside `linalg.py`).
"""

from __future__ import annotations

import numpy as np

from . import linalg
from .operands import as_tensor, needs_grad, result
from .spec import OpSpec, record
from .surface import export
from .tensor import Tensor

_wrap = Tensor._make

CHOLESKY_LEGACY = OpSpec("CholeskyBackward0", "linalg_cholesky", n_arrays=1)
CHOLESKY_EX_RESULT = linalg._named("linalg_cholesky_ex", "L", "info")


class LinAlgError(RuntimeError, np.linalg.LinAlgError):
    """torch.linalg.LinAlgError (a RuntimeError, as torch's): a matrix the function cannot
    factor. Also numpy's LinAlgError, so code catching numpy's still catches it."""


def _check_square(A, name):
    shape = A._data.shape
    if len(shape) < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if shape[-1] != shape[-2]:
        raise RuntimeError(
            f"{name}: A must be batches of square matrices, but they are "
            f"{shape[-2]} by {shape[-1]} matrices"
        )


def _potf2(a):
    """(L, info) of one matrix by LAPACK's unblocked algorithm (lower factor), for a matrix
    numpy could not factor: info is the order of the first failing leading minor."""
    n = a.shape[-1]
    L = np.tril(a).astype(a.dtype, copy=True)
    for j in range(n):
        ajj = a[j, j] - np.dot(L[j, :j], np.conj(L[j, :j]))
        if not np.real(ajj) > 0:
            L[j, j] = ajj
            return L, j + 1
        L[j, j] = np.sqrt(ajj)
        below = a[j + 1 :, j] - L[j + 1 :, :j] @ np.conj(L[j, :j])
        L[j + 1 :, j] = below / L[j, j]
    return L, 0


def _factor(d, upper):
    """(factor, info) of a stack of matrices: numpy's factor where every matrix is
    positive-definite, else each matrix's, `_potf2`'s for those that fail."""
    try:
        return np.linalg.cholesky(d, upper=upper), np.zeros(d.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        pass
    flat = d.reshape((-1,) + d.shape[-2:])
    factors, infos = np.empty_like(flat), np.zeros(len(flat), np.int32)
    for i, a in enumerate(flat):
        factors[i], infos[i] = _potf2(a)
    if upper:
        factors = np.conj(np.swapaxes(factors, -1, -2))
    return factors.reshape(d.shape), infos.reshape(d.shape[:-2])


def _raise_for(info, name):
    """torch's error for the first matrix of `info` that failed (none when all are 0)."""
    failed = np.flatnonzero(info.reshape(-1))
    if failed.size == 0:
        return
    first = int(failed[0])
    where = f"(Batch element {first}): " if info.ndim else ""
    raise LinAlgError(
        f"{name}: {where}The factorization could not be completed because the input is not "
        f"positive-definite (the leading minor of order {int(info.reshape(-1)[first])} is not "
        "positive-definite)."
    )


def _cholesky(A, upper, spec, name):
    A = as_tensor(A)
    _check_square(A, name)
    d = linalg._float(A)
    factor, info = _factor(d, upper)
    out = _wrap(result(factor, d.dtype))
    if needs_grad(A):
        record(spec, out, (A,), {"upper": upper})
    return out, info


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):  # noqa: N803 - torch's name
    """torch.linalg.cholesky_ex: (L, info), info 0 where a matrix is positive-definite, else
    the order of its first leading minor that is not (check_errors=True: LinAlgError)."""
    if out is not None:
        res = cholesky_ex(as_tensor(A).detach(), upper=upper, check_errors=check_errors)
        return linalg._into(("linalg_cholesky_ex", "linalg_cholesky_ex"), out, tuple(res), (A,))
    L, info = _cholesky(A, upper, linalg.CHOLESKY, "linalg.cholesky_ex")
    if check_errors:
        _raise_for(info, "linalg.cholesky_ex")
    return CHOLESKY_EX_RESULT(L, _wrap(info))


def linalg_cholesky(A, *, upper=False, out=None):  # noqa: N803
    """torch.linalg.cholesky: the lower factor L (A = L L^H), or the upper one U = L^H; a
    matrix that is not positive-definite raises LinAlgError (torch's message)."""
    if out is not None:
        res = linalg_cholesky(as_tensor(A).detach(), upper=upper)
        return linalg._into(("linalg_cholesky", "linalg_cholesky_ex"), out, res, (A,))
    L, info = _cholesky(A, upper, linalg.CHOLESKY, "linalg.cholesky")
    _raise_for(info, "linalg.cholesky")
    return L


@export("cholesky")
def cholesky(input, upper=False, *, out=None):
    """torch.cholesky (deprecated in torch for linalg.cholesky): the lower factor, or the
    upper one with upper=True (CholeskyBackward0)."""
    if out is not None:
        res = cholesky(as_tensor(input).detach(), upper)
        return linalg._into(("cholesky", "cholesky"), out, res, (input,))
    L, info = _cholesky(input, upper, CHOLESKY_LEGACY, "cholesky")
    _raise_for(info, "cholesky")
    return L


def _gram(L, upper):
    """L L^H of a lower factor, U^H U of an upper one: the matrix they factor."""
    mh = L.mT.conj()  # (conj: a real tensor itself)
    return mh @ L if upper else L @ mh


def _same_batch_rank(B, A):
    while B.dim() < A.dim():
        B = B.unsqueeze(0)
    while A.dim() < B.dim():
        A = A.unsqueeze(0)
    return B, A


@export("cholesky_solve")
def cholesky_solve(input, input2, upper=False, *, out=None):
    """torch.cholesky_solve(B, L, upper=False): X with (L L^H) X = B, B a matrix (or stack of
    them, batch dimensions broadcast), gradients for both B and L."""
    B, L = as_tensor(input), as_tensor(input2)
    if out is not None:
        res = cholesky_solve(B.detach(), L.detach(), upper)
        return linalg._into(("cholesky_solve", "cholesky_solve"), out, res, (B, L))
    if B.dim() < 2:
        raise RuntimeError(
            f"b should have at least 2 dimensions, but has {B.dim()} dimensions instead"
        )
    if L.dim() < 2:
        raise RuntimeError(
            f"u should have at least 2 dimensions, but has {L.dim()} dimensions instead"
        )
    if B.dtype != L.dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type "
            f"{B.dtype._scalar_name} and A of type {L.dtype._scalar_name} instead."
        )
    _check_square(L, "cholesky_solve")
    if B.shape[-2] != L.shape[-1]:
        raise RuntimeError(
            f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
            f"{L.shape[-1]} by {L.shape[-1]} but each b matrix is {B.shape[-2]} by {B.shape[-1]}"
        )
    B, L = _same_batch_rank(B, L)
    return linalg.solve(_gram(L, upper), B)


@export("cholesky_inverse")
def cholesky_inverse(input, upper=False, *, out=None):
    """torch.cholesky_inverse(L, upper=False): (L L^H)^-1 from its Cholesky factor."""
    L = as_tensor(input)
    if out is not None:
        res = cholesky_inverse(L.detach(), upper)
        return linalg._into(("cholesky_inverse", "cholesky_inverse"), out, res, (L,))
    _check_square(L, "cholesky_inverse")
    linalg._float(L)
    return linalg.inv(_gram(L, upper))


# np.linalg.cholesky on Tensors (numpy_dispatch): numpy's signature
NUMPY = {np.linalg.cholesky: lambda a, upper=False: linalg_cholesky(a, upper=upper)}
