"""Products: matmul, dot, outer, inner, tensordot, einsum."""

from __future__ import annotations

import operator

import numpy as np

from ..runtime import dot_grad, einsum_grad, inner_grad, tensordot_grad, unbroadcast
from .registry import torch, Spelling, alias, defvjp, mark
from .registry import func as _func


defvjp(
    "matmul",
    np.matmul,
    _func("matmul"),
    lambda g, ans, x, y: (
        g * y
        if x.ndim == 1 and y.ndim == 1
        else y @ g
        if x.ndim == 1
        else np.outer(g, y)
        if x.ndim == 2 and y.ndim == 1
        else g @ y.T
        if x.ndim == 2 and y.ndim == 2
        else unbroadcast(
            np.expand_dims(g, -1) * y
            if y.ndim == 1
            else (g if x.ndim > 1 else np.expand_dims(g, -2)) @ np.swapaxes(y, -1, -2),
            x,
        )
    ),
    lambda g, ans, x, y: (
        g * x
        if x.ndim == 1 and y.ndim == 1
        else x.T @ g
        if y.ndim == 1 and x.ndim == 2
        else np.outer(x, g)
        if x.ndim == 1 and y.ndim == 2
        else x.T @ g
        if x.ndim == 2 and y.ndim == 2
        else unbroadcast(
            np.swapaxes(x, -1, -2) @ (g if y.ndim > 1 else np.expand_dims(g, -1))
            if x.ndim > 1
            else np.expand_dims(x, -1) * np.expand_dims(g, -2),
            y,
        )
    ),
    props={"fresh", "owned"},
    shape="matmul",
    linear="multi",
    torch=torch("MmBackward0", "matmul"),
)
alias(
    "matmul_op",
    operator.matmul,
    Spelling("binop", "@"),
    like="matmul",
    props={"fresh", "owned"},
    shape="matmul",
)
# Products.
defvjp(
    "dot",
    np.dot,
    _func("dot"),
    lambda g, ans, x, y: (
        unbroadcast(g * y, x)
        if x.ndim == 0 or y.ndim == 0
        else g * y
        if x.ndim == 1 and y.ndim == 1
        else np.outer(g, y)
        if x.ndim == 2 and y.ndim == 1
        else y @ g
        if x.ndim == 1 and y.ndim == 2
        else g @ y.T
        if x.ndim == 2 and y.ndim == 2
        else dot_grad(g, x, y, 0)
    ),
    lambda g, ans, x, y: (
        unbroadcast(g * x, y)
        if x.ndim == 0 or y.ndim == 0
        else g * x
        if x.ndim == 1 and y.ndim == 1
        else x.T @ g
        if x.ndim == 2 and y.ndim == 1
        else np.outer(x, g)
        if x.ndim == 1 and y.ndim == 2
        else x.T @ g
        if x.ndim == 2 and y.ndim == 2
        else dot_grad(g, x, y, 1)
    ),
    props={"fresh", "owned"},
    shape="dot",
    methods=("dot",),
    linear="multi",
    torch=torch("DotBackward0", "dot"),
)
defvjp(
    "outer",
    np.outer,
    _func("outer"),
    lambda g, ans, x, y: np.reshape(g @ np.ravel(y), x.shape),
    lambda g, ans, x, y: np.reshape(np.ravel(x) @ g, y.shape),
    props={"fresh", "owned"},
    shape="dot",
    linear="multi",
    torch=torch("MulBackward0", "outer", "ger"),
)
defvjp(
    "inner",
    np.inner,
    _func("inner"),
    lambda g, ans, x, y: (
        unbroadcast(g * y, x)
        if x.ndim == 0 or y.ndim == 0
        else g * y
        if x.ndim == 1 and y.ndim == 1
        else inner_grad(g, x, y, 0)
    ),
    lambda g, ans, x, y: (
        unbroadcast(g * x, y)
        if x.ndim == 0 or y.ndim == 0
        else g * x
        if x.ndim == 1 and y.ndim == 1
        else inner_grad(g, x, y, 1)
    ),
    props={"fresh", "owned"},
    shape="dot",
    linear="multi",
)
defvjp(
    "tensordot",
    np.tensordot,
    _func("tensordot"),
    lambda g, ans, x, y, axes=2: tensordot_grad(g, x, y, axes, 0),
    lambda g, ans, x, y, axes=2: tensordot_grad(g, x, y, axes, 1),
    props={"fresh", "owned"},
    shape="tensordot",
    linear="multi",
)
defvjp(
    "einsum",
    np.einsum,
    _func("einsum"),
    None,
    lambda g, ans, subscripts, *operands, argnum: einsum_grad(g, subscripts, operands, argnum - 1),
    shape="einsum",
    linear="multi",
)


# (numpy's errors for these depend on the operands' shapes only: see "shape_checked")
mark("shape_checked", "matmul", "matmul_op", "dot", "inner", "outer", "tensordot", "einsum")
