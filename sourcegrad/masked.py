"""`sourcegrad.masked`: torch.masked by name, without masked tensors.

Importing it works (scripts import torch.masked at module level); every function raises
UnsupportedAPIError when called, and any other name when it is looked up (see
`sourcegrad.unsupported`): no stand-in that would return wrong data.
"""

from __future__ import annotations

from .unsupported import refused, refusing_getattr

__all__ = [
    "masked_tensor",
    "as_masked_tensor",
    "MaskedTensor",
    "sum",
    "mean",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "prod",
    "norm",
    "var",
    "std",
    "softmax",
    "log_softmax",
]

masked_tensor = refused("torch.masked.masked_tensor")
as_masked_tensor = refused("torch.masked.as_masked_tensor")
MaskedTensor = refused("torch.masked.MaskedTensor")
sum = refused("torch.masked.sum")
mean = refused("torch.masked.mean")
amax = refused("torch.masked.amax")
amin = refused("torch.masked.amin")
argmax = refused("torch.masked.argmax")
argmin = refused("torch.masked.argmin")
prod = refused("torch.masked.prod")
norm = refused("torch.masked.norm")
var = refused("torch.masked.var")
std = refused("torch.masked.std")
softmax = refused("torch.masked.softmax")
log_softmax = refused("torch.masked.log_softmax")

__getattr__ = refusing_getattr("torch.masked")
