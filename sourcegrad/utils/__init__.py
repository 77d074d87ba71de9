"""`sourcegrad.utils`: `data` (datasets, samplers, DataLoader), as torch.utils."""
from . import data

__all__ = ["data"]
