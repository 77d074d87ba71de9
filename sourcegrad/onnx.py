"""`sourcegrad.onnx`: torch.onnx by name, without ONNX export.

Importing it works (scripts import torch.onnx at module level); every function but `is_in_onnx_export` (False) raises
UnsupportedAPIError when called, and any other name when it is looked up (see
`sourcegrad.unsupported`): no stand-in that would return wrong data.
"""

from __future__ import annotations

from .unsupported import refused, refusing_getattr

__all__ = [
    "export",
    "dynamo_export",
    "register_custom_op_symbolic",
    "unregister_custom_op_symbolic",
    "select_model_mode_for_export",
    "is_in_onnx_export",
]

export = refused("torch.onnx.export")
dynamo_export = refused("torch.onnx.dynamo_export")
register_custom_op_symbolic = refused("torch.onnx.register_custom_op_symbolic")
unregister_custom_op_symbolic = refused("torch.onnx.unregister_custom_op_symbolic")
select_model_mode_for_export = refused("torch.onnx.select_model_mode_for_export")

__getattr__ = refusing_getattr("torch.onnx")


def is_in_onnx_export() -> bool:
    """False: sourcegrad never runs a model under ONNX export."""
    return False
