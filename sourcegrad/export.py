"""`sourcegrad.export`: torch.export by name, without graph capture.

Importing it works (scripts import torch.export at module level); every function raises
UnsupportedAPIError when called, and any other name when it is looked up (see
`sourcegrad.unsupported`): no stand-in that would return wrong data.
"""

from __future__ import annotations

from .unsupported import refused, refusing_getattr

__all__ = ["export", "load", "save", "register_dataclass", "Dim", "dims"]

export = refused("torch.export.export")
load = refused("torch.export.load")
save = refused("torch.export.save")
register_dataclass = refused("torch.export.register_dataclass")
Dim = refused("torch.export.Dim")
dims = refused("torch.export.dims")

__getattr__ = refusing_getattr("torch.export")
