"""torch.linalg for the eager Tensor: inv, det, slogdet, solve, pinv, eig, eigvals,
eigh, eigvalsh, svd, svdvals, qr, matrix_power, vector_norm, norm.

Each op runs numpy's np.linalg function and records the node torch records
(`LinalgInvExBackward0`, `LinalgEighBackward0`, ...), whose derivatives are the registry's
entries for np.linalg (`sourcegrad/ops/numpy_linalg.py`): the same VJP lambdas the compiler
inlines. The functions returning several tensors (slogdet, eigh, svd, qr) record one node with
an output per tensor, which keeps its outputs (as torch's nodes save them) for the rules that
read them. The numpy functions dispatch here on Tensors (`numpy_dispatch.FUNCTIONS`), so those
lambdas run on Tensors under create_graph and second derivatives are recorded too.
`out=` is honoured as torch honours it (`_into`: torch's errors for an out= call that would need
a gradient and for an out of another dtype).

(cholesky and its family: `cholesky.py`.)

Imports: `operands`, `out_arg`, `spec`, `tensor` (layer 4, like `tensor_math.py`).
"""

from __future__ import annotations

import numpy as np

from . import grad_mode
from .operands import as_tensor, needs_grad, result
from .out_arg import store
from .spec import OpSpec, record
from .tensor import Tensor

_wrap = Tensor._make

INV = OpSpec("LinalgInvExBackward0", "linalg_inv")
DET = OpSpec("LinalgDetBackward0", "linalg_det")
SOLVE = OpSpec("LinalgSolveExBackward0", "linalg_solve")
CHOLESKY = OpSpec("LinalgCholeskyExBackward0", "linalg_cholesky", n_arrays=1)
PINV = OpSpec("LinalgPinvBackward0", "linalg_pinv", n_arrays=1)
NORM = OpSpec("LinalgVectorNormBackward0", "linalg_norm", n_arrays=1)
# (of real values, torch's rule: its gradient at a zero norm, and at a zero element for ord < 1,
# is 0, where numpy's linalg_norm's is NaN; Tensor.norm's too)
REAL_NORM = OpSpec("LinalgVectorNormBackward0", "vector_norm", n_arrays=1)
# the matrix norms other than Frobenius: torch composes them (svdvals, abs, sum, amax, amin), its
# last node's name is theirs; the gradient is the registry entry's
MATRIX_NORMS = {
    name: OpSpec(name, "linalg_norm", n_arrays=1)
    for name in ("SumBackward1", "AmaxBackward0", "AminBackward0")
}
SLOGDET = OpSpec("LinalgSlogdetBackward0", "linalg_slogdet", multi_output=True)
EIGH = OpSpec("LinalgEighBackward0", "linalg_eigh", n_arrays=1, multi_output=True)
EIGVALSH = OpSpec("LinalgEighBackward0", "linalg_eigvalsh", n_arrays=1)
EIG = OpSpec("LinalgEigBackward0", "linalg_eig", n_arrays=1, multi_output=True)
EIGVALS = OpSpec("LinalgEigBackward0", "linalg_eigvals", n_arrays=1)
SVD = OpSpec("LinalgSvdBackward0", "linalg_svd", n_arrays=1, multi_output=True)
SVDVALS = OpSpec("LinalgSvdBackward0", "linalg_svd", n_arrays=1)
QR = OpSpec("LinalgQrBackward0", "linalg_qr", n_arrays=1, multi_output=True)


class _Named(tuple):
    """torch.return_types.linalg_eigh and friends: a tuple with named fields, printed as torch
    prints it."""

    _name = ""
    _fields: tuple = ()

    def __new__(cls, *items):
        return tuple.__new__(cls, items)

    def __getattr__(self, name):
        if name in self._fields:
            return self[self._fields.index(name)]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __repr__(self):
        items = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{self._name}(\n{items})"


def _named(name, *fields):
    return type(name, (_Named,), {"_name": name, "_fields": fields, "__slots__": ()})


SLOGDET_RESULT = _named("linalg_slogdet", "sign", "logabsdet")
EIGH_RESULT = _named("linalg_eigh", "eigenvalues", "eigenvectors")
EIG_RESULT = _named("linalg_eig", "eigenvalues", "eigenvectors")
SVD_RESULT = _named("linalg_svd", "U", "S", "Vh")
SVD_LEGACY_RESULT = _named("svd", "U", "S", "V")  # torch.svd's
QR_RESULT = _named("linalg_qr", "Q", "R")


def _into(names, out, results, inputs):
    """Write `results` (a Tensor, or a tuple for a function of several outputs) into `out` as
    torch's linalg out= variants do; `names`: the function's and its kernel's names, as
    torch's messages give them (("linalg_inv", "linalg_inv_ex"))."""
    function, kernel = names
    several = isinstance(results, tuple)
    if several and not isinstance(out, (tuple, list)):
        raise TypeError(
            f"{function}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}"
        )
    outs, results = (tuple(out), results) if several else ((out,), (results,))
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            raise TypeError(
                f"{function}(): argument 'out' must be Tensor, not {type(o).__name__}"
                if not several
                else f"expected Tensor as element {i} in argument 'out', but got {type(o).__name__}"
            )
    if grad_mode.is_grad_enabled() and any(
        t.requires_grad for t in outs + tuple(inputs) if isinstance(t, Tensor)
    ):
        raise RuntimeError(
            f"{kernel}(): functions with out=... arguments don't support "
            "automatic differentiation, but one of the arguments requires grad."
        )
    for o, r in zip(outs, results):
        if o.dtype != r.dtype:
            raise RuntimeError(
                f"Expected out tensor to have dtype {r.dtype._scalar_name.lower()}"
                f", but got {o.dtype._scalar_name.lower()} instead"
            )
    for o, r in zip(outs, results):
        store(o, r._data)
    return out


def _float(t, name="linalg"):
    d = t._data
    if d.dtype.kind not in "fc":
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. "
            f"Got {t.dtype._scalar_name}"
        )
    return d


def _complex(dtype):
    return np.result_type(dtype, np.complex64)  # float32 -> complex64, float64 -> complex128


def _unary(spec, fn, A, static=None, out=None, kernel=None, as_complex=False, **kwargs):
    A = as_tensor(A)
    dtype = _complex(A._data.dtype) if as_complex else A._data.dtype
    res = _wrap(result(fn(_float(A), **kwargs), dtype))
    if out is not None:
        return _into(kernel, out, res, (A,))
    if needs_grad(A):
        record(spec, res, (A,), static)
    return res


def _several(spec, named, fn, A, static=None, out=None, kernel=None, as_complex=False, **kwargs):
    """A function of several outputs (slogdet, eigh, svd, qr): one node, an output each."""
    A = as_tensor(A)
    datas = fn(_float(A), **kwargs)
    dtype = _complex(A._data.dtype) if as_complex else A._data.dtype
    # (of a complex A, the outputs numpy gives real stay real: svd's S, eigh's eigenvalues)
    real = np.finfo(dtype).dtype
    res = named(*(_wrap(result(d, dtype if d.dtype.kind == "c" else real)) for d in datas))
    if out is not None:
        return _into(kernel, out, tuple(res), (A,))
    if needs_grad(A):
        record(spec, None, (A,), static, outputs=list(res))
    return res


def inv(A, *, out=None):
    """torch.linalg.inv (torch.inverse): the inverse of a (stack of) square matrices."""
    return _unary(INV, np.linalg.inv, A, out=out, kernel=("linalg_inv", "linalg_inv_ex"))


def det(A, *, out=None):
    """torch.linalg.det (torch.det)."""
    return _unary(DET, np.linalg.det, A, out=out, kernel=("linalg_det", "_linalg_det"))


def slogdet(A, *, out=None):
    """torch.linalg.slogdet: (sign, logabsdet), one LinalgSlogdetBackward0 node; the sign
    carries no gradient (it is piecewise constant)."""
    return _several(
        SLOGDET,
        SLOGDET_RESULT,
        np.linalg.slogdet,
        A,
        out=out,
        kernel=("linalg_slogdet", "_linalg_slogdet"),
    )


def pinv(A, *, rcond=None, hermitian=False, out=None):
    """torch.linalg.pinv (for a matrix of constant rank)."""
    kwargs = {} if rcond is None else {"rcond": rcond}
    return _unary(
        PINV,
        np.linalg.pinv,
        A,
        {"rcond": rcond, "hermitian": hermitian},
        out,
        ("linalg_pinv", "linalg_pinv"),
        hermitian=hermitian,
        **kwargs,
    )


def eigh(A, UPLO="L", *, out=None):  # noqa: N803 - torch's parameter name
    """torch.linalg.eigh: (eigenvalues, eigenvectors) of a symmetric matrix, one
    LinalgEighBackward0 node keeping both (its gradient is symmetric; inf/nan at repeated
    eigenvalues, where the eigenvectors are not unique)."""
    return _several(
        EIGH,
        EIGH_RESULT,
        np.linalg.eigh,
        A,
        {"UPLO": UPLO},
        out,
        ("linalg_eigh", "_linalg_eigh"),
        UPLO=UPLO,
    )


def eigvalsh(A, UPLO="L", *, out=None):  # noqa: N803
    """torch.linalg.eigvalsh: the eigenvalues of a symmetric matrix (LinalgEighBackward0)."""
    return _unary(
        EIGVALSH,
        np.linalg.eigvalsh,
        A,
        {"UPLO": UPLO},
        out,
        ("linalg_eigvalsh", "_linalg_eigh"),
        UPLO=UPLO,
    )


def eig(A, *, out=None):  # noqa: N803 - torch's parameter name
    """torch.linalg.eig: (eigenvalues, eigenvectors), complex always (numpy's are real where
    every eigenvalue is), one LinalgEigBackward0 node. A loss that depends on the eigenvectors'
    phases has no gradient (refused, as torch refuses it); repeated eigenvalues give inf/nan."""
    return _several(
        EIG, EIG_RESULT, np.linalg.eig, A, None, out, ("linalg_eig", "linalg_eig"), as_complex=True
    )


def eigvals(A, *, out=None):  # noqa: N803
    """torch.linalg.eigvals: the (complex) eigenvalues (LinalgEigBackward0)."""
    return _unary(
        EIGVALS, np.linalg.eigvals, A, None, out, ("linalg_eigvals", "linalg_eig"), as_complex=True
    )


def svd(A, full_matrices=True, *, driver=None, out=None):
    """torch.linalg.svd: (U, S, Vh), one LinalgSvdBackward0 node keeping them. As in torch, the
    gradient of U or Vh of a non-square matrix needs full_matrices=False (NoRuleError)."""
    return _several(
        SVD,
        SVD_RESULT,
        np.linalg.svd,
        A,
        {"full_matrices": full_matrices, "compute_uv": True, "hermitian": False},
        out,
        ("linalg_svd", "_linalg_svd"),
        full_matrices=full_matrices,
    )


def svdvals(A, *, driver=None, out=None):
    """torch.linalg.svdvals: the singular values (LinalgSvdBackward0)."""
    return _unary(
        SVDVALS,
        np.linalg.svd,
        A,
        {"full_matrices": False, "compute_uv": False, "hermitian": False},
        out,
        ("linalg_svdvals", "_linalg_svd"),
        compute_uv=False,
    )


def qr(A, mode="reduced", *, out=None):
    """torch.linalg.qr: (Q, R) in mode 'reduced' or 'complete', one LinalgQrBackward0 node
    (differentiable for m >= n; mode 'r' gives an empty Q, as torch's)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of "
            "'reduced' (default), 'r', or 'complete'"
        )
    if mode == "r":
        A = as_tensor(A)
        r = _wrap(result(np.linalg.qr(_float(A), mode="r"), A._data.dtype))
        res = QR_RESULT(_wrap(np.empty((0,), A._data.dtype)), r)
        if out is not None:
            return _into(("linalg_qr", "linalg_qr"), out, tuple(res), (A,))
        if needs_grad(A):
            raise RuntimeError(
                "The derivative of linalg.qr depends on Q, which is not computed "
                "when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
                "are going to differentiate through linalg.qr."
            )
        return res
    return _several(
        QR, QR_RESULT, np.linalg.qr, A, {"mode": mode}, out, ("linalg_qr", "linalg_qr"), mode=mode
    )


def matrix_power(A, n, *, out=None):
    """torch.linalg.matrix_power, composed of matrix products as torch composes it (its nodes
    are MmBackward0, CloneBackward0 for n = 1; a negative n inverts first). n = 0 gives the
    identity, which carries no gradient here (torch records a copy giving zeros)."""
    A = as_tensor(A)
    _float(A)
    if out is not None:  # (an input that requires grad: torch's error, from matmul)
        return _into(("linalg_matrix_power", "matmul"), out, matrix_power(A.detach(), n), (A,))
    if n < 0:
        A, n = inv(A), -n
    if n == 0:
        eye = np.broadcast_to(np.eye(A._data.shape[-1], dtype=A._data.dtype), A._data.shape)
        return _wrap(eye.copy())
    if n == 1:
        return A.clone()
    if n == 2:
        return A @ A
    if n == 3:
        return (A @ A) @ A
    z = power = None
    while n > 0:  # torch's order of products (binary powers), so values match to the bit
        bit, n = n % 2, n // 2
        z = A if z is None else z @ z
        if bit:
            power = z if power is None else power @ z
    return power


def solve(A, B, *, left=True, out=None):
    """torch.linalg.solve: X with A X = B; B is a vector when it is 1-D (numpy's rule; the
    batched vector of torch's rule, B of shape A.shape[:-1], is refused)."""
    A, B = as_tensor(A), as_tensor(B)
    if not left:
        raise NotImplementedError("linalg.solve(left=False) is not supported")
    if (
        B._data.ndim > 1
        and B._data.ndim == A._data.ndim - 1
        and B._data.shape == A._data.shape[:-1]
    ):
        raise NotImplementedError(
            "linalg.solve of a batch of vectors is not supported: pass "
            "B.unsqueeze(-1) and squeeze the result"
        )
    ad, bd = _float(A), _float(B)
    dtype = np.result_type(ad, bd)
    res = _wrap(result(np.linalg.solve(ad, bd), dtype))
    if out is not None:
        return _into(("linalg_solve", "_linalg_solve_ex"), out, res, (A, B))
    if needs_grad(A, B):
        record(SOLVE, res, (A, B))
    return res


def vector_norm(
    x,
    ord=2,
    dim=None,
    keepdim=False,
    *,
    dtype=None,
    axis=None,  # noqa: A002
    keepdims=None,
    out=None,
):
    """torch.linalg.vector_norm: the ord-norm of x flattened (dim None) or along dim."""
    if out is not None:
        return _into(
            ("linalg_vector_norm", "linalg_vector_norm"),
            out,
            vector_norm(as_tensor(x).detach(), ord, dim, keepdim, axis=axis, keepdims=keepdims),
            (x,),
        )
    axis = dim if axis is None else axis
    keepdims = keepdim if keepdims is None else keepdims
    x = as_tensor(x)
    if axis is None:  # the norm of x flattened (numpy reads a 2-D x as a matrix)
        out = vector_norm(x.reshape(-1), ord, 0)
        return out.reshape((1,) * x._data.ndim) if keepdims else out
    axis = tuple(axis) if isinstance(axis, list) else axis
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    elif isinstance(axis, tuple):
        return _over_axes(x, ord, axis, keepdims)
    d = _float(x, "linalg.vector_norm")
    # (the norm of complex values is real)
    out = _wrap(result(np.linalg.norm(d, ord, axis, keepdims), np.finfo(d.dtype).dtype))
    if needs_grad(x):
        spec = NORM if d.dtype.kind == "c" else REAL_NORM
        record(spec, out, (x,), {"ord": ord, "axis": axis, "keepdims": keepdims})
    return out


def _over_axes(x, ord, axis, keepdims):  # noqa: A002
    """The vector norm of the elements along several axes: those axes moved last and made one.
    (np.linalg.norm reads two axes as a matrix: `vector_norm(x, dim=(0, 1))` was the spectral
    norm, and `linalg.norm(x, dim=(0, 1))` too, where torch's is the 2-norm of the elements;
    three axes raised numpy's ValueError.)"""
    shape = x._data.shape
    axes = [a % len(shape) if -len(shape) <= a < len(shape) else a for a in axis]
    for a in axes:
        if not 0 <= a < len(shape):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-len(shape)}, "
                f"{len(shape) - 1}], but got {a})"
            )
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"dim {axes[0]} appears multiple times in the list of dims")
    rest = [a for a in range(len(shape)) if a not in axes]
    size = int(np.prod([shape[a] for a in axes]))
    flat = x.permute(*rest, *axes).reshape(*[shape[a] for a in rest], size)
    out = vector_norm(flat, ord, -1)
    if keepdims:
        out = out.reshape(tuple(1 if a in axes else shape[a] for a in range(len(shape))))
    return out


def _matrix_norm(x, ord, axis, keepdims):  # noqa: A002
    """A matrix norm other than Frobenius ('nuc', 2, -2, 1, -1, inf, -inf) over `axis` (two
    axes; None: a 2-D x's), one node named as torch's last."""
    axis = None if axis is None else tuple(axis)
    d = _float(x)
    out = _wrap(result(np.linalg.norm(d, ord, axis, keepdims), np.finfo(d.dtype).dtype))
    if needs_grad(x):
        name = "SumBackward1" if ord == "nuc" else "AmaxBackward0" if ord > 0 else "AminBackward0"
        record(MATRIX_NORMS[name], out, (x,), {"ord": ord, "axis": axis, "keepdims": keepdims})
    return out


def _is_matrix_norm(x, ord, axis):  # noqa: A002
    return (
        ord is not None
        and ord != "fro"
        and (
            isinstance(ord, str)
            or (axis is None and x._data.ndim == 2)
            or (isinstance(axis, (tuple, list)) and len(axis) == 2)
        )
    )


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):  # noqa: A002
    """torch.linalg.norm: a vector norm, the Frobenius norm (ord None or 'fro') of a matrix
    as one, or a matrix norm ('nuc', 2, -2, 1, -1, inf, -inf)."""
    A = as_tensor(A)
    if out is not None:  # (torch's composite norm does not refuse an input needing grad)
        res = norm(A.detach(), ord, dim, keepdim)
        if out.dtype != res.dtype:
            raise RuntimeError(
                f"linalg.norm expected out tensor dtype {res.dtype._scalar_name} "
                f"but got: {out.dtype._scalar_name}"
            )
        return store(out, res._data)
    if ord is None or (ord == "fro" and (dim is None or len(dim) == 2)):
        return vector_norm(A, 2, dim, keepdim)
    if _is_matrix_norm(A, ord, dim):
        return _matrix_norm(A, ord, dim, keepdim)
    return vector_norm(A, ord, dim, keepdim)


# np.linalg on Tensors (numpy_dispatch): numpy's signatures
def np_norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    x = as_tensor(x)
    if ord is None or (ord == "fro" and (axis is None or len(axis) == 2)):
        return vector_norm(x, 2, axis, keepdims)
    if _is_matrix_norm(x, ord, axis):
        return _matrix_norm(x, ord, axis, keepdims)
    return vector_norm(x, ord, axis, keepdims)


def np_svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        raise NotImplementedError("np.linalg.svd(hermitian=True) of a Tensor is not supported")
    return svd(a, full_matrices) if compute_uv else svdvals(a)


def np_qr(a, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise NotImplementedError(f"np.linalg.qr(mode={mode!r}) of a Tensor is not supported")
    return qr(a, mode)


NUMPY = {
    np.linalg.inv: inv,
    np.linalg.det: det,
    np.linalg.solve: solve,
    np.linalg.slogdet: slogdet,
    np.linalg.eigh: eigh,
    np.linalg.eigvalsh: eigvalsh,
    np.linalg.eig: eig,
    np.linalg.eigvals: eigvals,
    np.linalg.svd: np_svd,
    np.linalg.qr: np_qr,
    np.linalg.matrix_power: matrix_power,
    np.linalg.pinv: lambda a, rcond=None, hermitian=False: pinv(
        a, rcond=rcond, hermitian=hermitian
    ),
    np.linalg.norm: np_norm,
}
