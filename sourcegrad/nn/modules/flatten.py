"""Flatten and Unflatten: reshapes as modules (views of their input)."""

from __future__ import annotations

from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """input.flatten(start_dim, end_dim); by default keeps the batch dimension."""

    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """input.unflatten(dim, unflattened_size)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, int):
            if not isinstance(unflattened_size, (tuple, list)) or not all(
                isinstance(e, int) for e in unflattened_size
            ):
                raise TypeError(
                    "unflattened_size must be tuple of ints, but found type "
                    f"{type(unflattened_size).__name__}"
                )
        elif isinstance(dim, str):
            raise TypeError("sourcegrad: named tensors (a str dim) are not supported")
        else:
            raise TypeError("invalid argument type for dim parameter")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
