"""`sourcegrad.autograd.function`: custom Functions (implemented in `sourcegrad.eager.function`)."""

from ..eager.function import (
    BackwardCFunction,
    Function,
    FunctionCtx,
    FunctionMeta,
    InplaceFunction,
    NestedIOFunction,
    once_differentiable,
)

__all__ = [
    "Function",
    "FunctionCtx",
    "BackwardCFunction",
    "FunctionMeta",
    "InplaceFunction",
    "NestedIOFunction",
    "once_differentiable",
]
