"""`sourcegrad.linalg`, as `torch.linalg`: the eager Tensor's linear algebra
(`sourcegrad.eager.linalg`): inv, det, solve, cholesky, pinv, vector_norm, norm, cross.

Imports: the eager package only.
"""
from .eager.linalg import cholesky, det, inv, norm, pinv, solve, vector_norm
from .eager.vector_ops import linalg_cross as cross

__all__ = ["cholesky", "cross", "det", "inv", "norm", "pinv", "solve", "vector_norm"]
