"""torch functions made of other Tensor ops: sgn, dist, renorm, linalg.matrix_norm, and the
out-of-place scatters diagonal_scatter, select_scatter and slice_scatter.

Takes Tensors (and numbers where torch does); returns what torch returns. No derivative is
written here: each function is made of ops this library already records (abs, where,
division, vector_norm and the registry's matrix norms, clone and an in-place copy into a
view), so the gradients, and their second derivatives, are those ops' own rules. The nodes
differ from torch's single one (SgnBackward0, DistBackward0, RenormBackward0, ...): the last
op's name is the one recorded. Argument errors are torch's (type and message).

- sgn: sign of a real tensor; z / |z| of a complex one, 0 where z is (its gradient there is
  0, as torch's sgn_backward; the division is by |z| made 1 where it is 0, so no NaN reaches
  the gradient through the masked branch);
- dist(input, other, p): vector_norm(input - other, p), broadcast;
- renorm(input, p, dim, maxnorm): each slice along `dim` whose p-norm exceeds maxnorm scaled
  by maxnorm / (norm + 1e-7), torch's formula (the scale is differentiated, as torch's
  renorm_backward differentiates it);
- matrix_norm: fro / nuc / +-1 / +-2 / +-inf over two dims (linalg.norm's matrix norms);
- the scatters: a clone of input with src copied into its diagonal / selected slice / slice
  (CopySlices): input's gradient is g zeroed there, src's is g there.

Imports: `linalg`, `elementwise` (where), `operands`, `surface`, `tensor`.
"""

from __future__ import annotations

import math

from . import linalg
from .elementwise import where
from .operands import as_tensor
from .out_arg import store
from .surface import export


def _dim_out_of_range(dim, ndim):
    low, high = (-ndim, ndim - 1) if ndim else (-1, 0)
    return IndexError(
        f"Dimension out of range (expected to be in range of [{low}, {high}], but got {dim})"
    )


def _wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise _dim_out_of_range(dim, ndim)
    return dim % n


# --- sgn -----------------------------------------------------------------------------------


@export("sgn")
def sgn(input):
    """torch.sgn: sign(x) of real (and integer, bool) x; x / |x|, 0 at 0, of complex x."""
    if not input.is_complex():
        return input.sign()
    magnitude = input.abs()
    zero = magnitude == 0
    # (the division by a |z| made 1 at z = 0: its masked branch then carries no NaN gradient)
    safe = where(zero, 1.0, magnitude)
    return where(zero, 0.0, input / safe)


@export(methods=("sgn_",))
def sgn_(self):
    """Tensor.sgn_: sgn in place (a leaf requiring grad refused, as every in-place op)."""
    return self.copy_(sgn(self))


# --- dist ----------------------------------------------------------------------------------


@export("dist")
def dist(input, other, p=2):
    """torch.dist: the p-norm of input - other (broadcast), a 0-d tensor."""
    input, other = as_tensor(input), as_tensor(other)
    for t in (input, other):
        if not (t.is_floating_point() or t.is_complex()):
            raise RuntimeError(
                "norm(): input dtype should be either floating point or complex. "
                f"Got {t.dtype._scalar_name} instead."
            )
    return linalg.vector_norm(input - other, p)


# --- renorm --------------------------------------------------------------------------------


def _renorm_args(input, p, dim, maxnorm):
    if isinstance(p, complex):
        raise RuntimeError("renorm: p must be real-valued")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if isinstance(maxnorm, complex):
        raise RuntimeError("renorm: maxnorm must be real-valued")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {float(maxnorm):g}")
    nd = input.dim()
    if nd < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {nd} dimensions")
    return _wrap_dim(dim, nd)


@export("renorm")
def renorm(input, p, dim, maxnorm):
    """torch.renorm: each slice input.select(dim, i) whose p-norm exceeds maxnorm scaled down to
    maxnorm (by maxnorm / (norm + 1e-7), torch's formula)."""
    dim = _renorm_args(input, p, dim, maxnorm)
    others = tuple(d for d in range(input.dim()) if d != dim)
    norms = linalg.vector_norm(input, p, others, keepdim=True)
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


@export(methods=("renorm_",))
def renorm_(self, p, dim, maxnorm):
    # (of a clone: the rows' norms the backward reads are of the values before the write,
    # which renorm(self) would have saved as self itself, then changed by copy_, and the
    # backward refused as modified in place where torch's renorm_ computes)
    return self.copy_(renorm(self.clone(), p, dim, maxnorm))


# --- linalg.matrix_norm --------------------------------------------------------------------

_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _ord_text(ord):  # noqa: A002 - torch's parameter name
    if isinstance(ord, float) and ord.is_integer():
        return str(int(ord))
    return str(ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """torch.linalg.matrix_norm: the Frobenius, nuclear, 1, -1, 2, -2, inf or -inf norm of the
    matrices over the two dims `dim`."""
    A = as_tensor(A)
    if A.dim() < 2:
        raise RuntimeError(
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."
        )
    if not (A.is_floating_point() or A.is_complex()):
        raise RuntimeError(
            "linalg.matrix_norm: Expected a floating point or complex tensor as input. "
            f"Got {A.dtype._scalar_name}"
        )
    dim = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if len(dim) != 2:
        raise RuntimeError(
            f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}"
        )
    wrapped = tuple(_wrap_dim(d, A.dim()) for d in dim)
    if wrapped[0] == wrapped[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if not isinstance(ord, str) and ord not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {_ord_text(ord)} not supported.")
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        res = linalg.vector_norm(A, 2, wrapped, keepdim)
    else:
        res = linalg.norm(A, ord, wrapped, keepdim)
    if out is not None:  # (torch's composite norm does not refuse an input needing grad)
        if out.dtype != res.dtype:
            raise RuntimeError(
                f"linalg.matrix_norm expected out tensor dtype {res.dtype._scalar_name} "
                f"but got: {out.dtype._scalar_name}"
            )
        return store(out, res.detach()._data)
    return res


# --- the out-of-place scatters -------------------------------------------------------------


def _check_slice(src, view):
    if tuple(src.shape) != tuple(view.shape):
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. "
            f"src size = {list(src.shape)}, slice size = {list(view.shape)}"
        )


def _scatter_into(input, src, view_of):
    """A copy of input with src copied into `view_of(copy)`."""
    src = as_tensor(src)
    out = input.clone()
    view = view_of(out)
    _check_slice(src, view)
    view.copy_(src)
    return out


@export("diagonal_scatter")
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """torch.diagonal_scatter: input with src as its diagonal (offset, dim1, dim2)."""
    return _scatter_into(input, src, lambda out: out.diagonal(offset, dim1, dim2))


@export("select_scatter")
def select_scatter(input, src, dim, index):
    """torch.select_scatter: input with src as its slice input.select(dim, index)."""
    dim = _wrap_dim(dim, input.dim())
    size = input.shape[dim]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} "
            f"at dimension {dim}"
        )
    return _scatter_into(input, src, lambda out: out.select(dim, index))


@export("slice_scatter")
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """torch.slice_scatter: input with src as its slice [start:end:step] along dim."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    dim = _wrap_dim(dim, input.dim())
    key = (slice(None),) * dim + (slice(start, end, step),)
    return _scatter_into(input, src, lambda out: out[key])


__all__ = [
    "sgn",
    "sgn_",
    "dist",
    "renorm",
    "renorm_",
    "matrix_norm",
    "diagonal_scatter",
    "select_scatter",
    "slice_scatter",
]
