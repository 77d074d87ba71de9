"""`sourcegrad.nn`: `Parameter` and `functional` (the eager library has no Module classes yet)."""
from . import functional
from .parameter import Parameter

__all__ = ["Parameter", "functional"]
