"""`sourcegrad.linalg`, as `torch.linalg`: the eager Tensor's linear algebra
(`sourcegrad.eager.linalg`): inv, det, solve, cholesky, pinv, vector_norm, norm."""
from .eager.linalg import cholesky, det, inv, norm, pinv, solve, vector_norm

__all__ = ["cholesky", "det", "inv", "norm", "pinv", "solve", "vector_norm"]
