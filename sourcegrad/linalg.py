"""`sourcegrad.linalg`: the torch.linalg functions the eager mode has (`cross`).

Imports: the eager package only.
"""
from .eager.vector_ops import linalg_cross as cross

__all__ = ["cross"]
