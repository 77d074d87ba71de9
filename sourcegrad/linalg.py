"""`sourcegrad.linalg`, as `torch.linalg`: the eager Tensor's linear algebra
(`sourcegrad.eager.linalg`): inv, det, slogdet, solve, cholesky, pinv, eig, eigvals, eigh,
eigvalsh, svd, svdvals, qr, matrix_power, matrix_exp, householder_product, vector_norm,
norm, cross.

Imports: the eager package only.
"""

from .eager.linalg import (
    cholesky,
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
from .eager.torch_extras import householder_product, matrix_exp
from .eager.vector_ops import linalg_cross as cross

__all__ = [
    "cholesky",
    "cross",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "householder_product",
    "inv",
    "matrix_exp",
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
