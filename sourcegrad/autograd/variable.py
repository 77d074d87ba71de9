"""`torch.autograd.Variable`, kept by torch for old code: `Variable(t, requires_grad=True)`
is a new leaf sharing t's data (`t.detach().requires_grad_(True)`), and every Tensor is an
instance of Variable."""

from __future__ import annotations

from ..eager.tensor import Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """A tensor's data as a new leaf (torch's deprecated wrapper: it returns a Tensor)."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        leaf = data.detach()
        if requires_grad:
            if not (leaf.dtype.is_floating_point or leaf.dtype.is_complex):
                raise RuntimeError(
                    "Only Tensors of floating point and complex dtype can require gradients"
                )
            leaf.requires_grad_(True)
        return leaf
