"""`sourcegrad.sparse`: torch.sparse by name, without sparse tensors.

Importing it works (scripts import torch.sparse at module level); every function raises
UnsupportedAPIError when called, and any other name when it is looked up (see
`sourcegrad.unsupported`): no stand-in that would return wrong data.
"""

from __future__ import annotations

from .unsupported import refused, refusing_getattr

__all__ = [
    "mm",
    "addmm",
    "sum",
    "softmax",
    "log_softmax",
    "spdiags",
    "sampled_addmm",
    "as_sparse_gradcheck",
]

mm = refused("torch.sparse.mm")
addmm = refused("torch.sparse.addmm")
sum = refused("torch.sparse.sum")
softmax = refused("torch.sparse.softmax")
log_softmax = refused("torch.sparse.log_softmax")
spdiags = refused("torch.sparse.spdiags")
sampled_addmm = refused("torch.sparse.sampled_addmm")
as_sparse_gradcheck = refused("torch.sparse.as_sparse_gradcheck")

__getattr__ = refusing_getattr("torch.sparse")
