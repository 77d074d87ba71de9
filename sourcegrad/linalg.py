"""`sourcegrad.linalg`, as `torch.linalg`: the eager Tensor's linear algebra
(`sourcegrad.eager.linalg`, `eager.cholesky`): inv, det, slogdet, solve, cholesky,
cholesky_ex, pinv, eig, eigvals, eigh, eigvalsh, svd, svdvals, qr, matrix_power, matrix_exp,
householder_product, vector_norm, norm, matrix_norm, cross, and LinAlgError.

Imports: the eager package only.
"""

from .eager.cholesky import LinAlgError, cholesky_ex
from .eager.cholesky import linalg_cholesky as cholesky
from .eager.linalg import (
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    matrix_power,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
    vector_norm,
)
from .eager.norms_scatters import matrix_norm
from .eager.torch_extras import householder_product, matrix_exp
from .eager.vector_ops import linalg_cross as cross

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cross",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "householder_product",
    "inv",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "vector_norm",
]
