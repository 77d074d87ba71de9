"""`sourcegrad.autograd.graph`: the node base class, and gradient edges.

`Node` is the base of every `grad_fn` (`isinstance(t.grad_fn, Node)` holds for
built-in nodes, AccumulateGrad and custom Functions alike).
"""

from __future__ import annotations

from collections import namedtuple

from ..eager.node import AccumulateGrad, Node

GradientEdge = namedtuple("GradientEdge", "node output_nr")


def get_gradient_edge(tensor) -> GradientEdge:
    """The (node, output_nr) through which a gradient reaches `tensor`."""
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does "
            "not require gradients"
        )
    node, nr = tensor._edge()
    return GradientEdge(node, nr)


__all__ = ["Node", "AccumulateGrad", "GradientEdge", "get_gradient_edge"]
