"""Eager autograd: a numpy-backed Tensor with PyTorch semantics (being written)."""
__all__ = []
