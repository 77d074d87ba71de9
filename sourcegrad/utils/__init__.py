"""`sourcegrad.utils`: `data` (datasets, samplers, DataLoader) and `checkpoint` (activation
checkpointing), as torch.utils."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
