"""Products: matmul, dot, outer, inner, tensordot, einsum."""

from __future__ import annotations

import operator

import numpy as np

from ..runtime import dot_grad, einsum_grad, inner_grad, tensordot_grad, unbroadcast
from .examples import arg, ex
from .registry import Spelling, alias, defvjp, mark, torch
from .registry import func as _func

defvjp(
    "matmul",
    np.matmul,
    _func("matmul"),
    lambda g, ans, x, y: (
        g * y
        if x.ndim == 1 and y.ndim == 1
        else y @ g
        if x.ndim == 1 and y.ndim == 2
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
            np.swapaxes(x, -1, -2) @ g
            if x.ndim > 1 and y.ndim > 1
            else np.sum(x * np.expand_dims(g, -1), axis=-2)
            if x.ndim > 1
            else np.expand_dims(x, -1) * np.expand_dims(g, -2),
            y,
        )
    ),
    props={"fresh", "owned"},
    shape="matmul",
    linear="multi",
    torch=torch("MmBackward0", "matmul"),
    product=True,
    complex=True,
)
alias(
    "matmul_op",
    operator.matmul,
    Spelling("binop", "@"),
    like="matmul",
    props={"fresh", "owned"},
    shape="matmul",
    product=True,
    complex=True,
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
    product=True,
    complex=True,
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
    complex=True,
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
    complex=True,
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
    complex=True,
)
defvjp(
    "einsum",
    np.einsum,
    _func("einsum"),
    None,
    # (`optimize`: the order numpy contracts in, the same values: its gradient is einsum_grad's)
    lambda g, ans, subscripts, *operands, argnum, optimize=False: einsum_grad(
        g, subscripts, operands, argnum - 1
    ),
    shape="einsum",
    linear="multi",
    # (torch's einsum is a composite: its nodes are the products and views it lowers to)
    torch=torch("EinsumBackward0", "einsum", method=()),
    props={"view"},
    complex=True,
)


# (numpy's errors for these depend on the operands' shapes only: see "shape_checked")
mark("shape_checked", "matmul", "matmul_op", "dot", "inner", "outer", "tensordot", "einsum")


# Example inputs for the registry's test grid (ops/examples.py): every rank combination.
_PRODUCTS = [
    ex(arg(3, 4), arg(4, 2)),
    ex(arg(3, 4), arg(4)),
    ex(arg(4), arg(4, 2)),
    ex(arg(4), arg(4)),
    ex(arg(2, 3, 4), arg(4, 2)),
    ex(arg(2, 3, 4), arg(4)),
]
EXAMPLES = {
    "matmul": _PRODUCTS + [ex(arg(2, 3, 4), arg(2, 4, 2)), ex(arg(4), arg(2, 4, 3))],
    "matmul_op": _PRODUCTS + [ex(arg(2, 3, 4), arg(1, 4, 2))],
    "dot": _PRODUCTS + [ex(arg(2, 3, 4), arg(5, 4, 2)), ex(arg(3, 4), 2.5)],
    "outer": [ex(arg(3), arg(4)), ex(arg(2, 2), arg(3))],
    "inner": [ex(arg(3, 4), arg(2, 4)), ex(arg(4), arg(4)), ex(arg(4), arg(2, 4))],
    "tensordot": [
        ex(arg(2, 3, 4), arg(3, 4, 5)),
        ex(arg(2, 3, 4), arg(4, 3), axes=([1, 2], [1, 0])),
        ex(arg(3, 4), arg(4, 5), axes=1),
        ex(arg(3, 4), arg(2, 5), axes=0),
    ],
    "einsum": [
        ex("ij,jk->ik", arg(3, 4), arg(4, 2)),
        ex("...ij,...j->...i", arg(2, 3, 4), arg(2, 4)),
        ex("i,i", arg(4), arg(4)),
        ex("bij,bjk", arg(2, 3, 4), arg(2, 4, 2)),
        ex("ii->i", arg(3, 3)),
        ex("iij,j->i", arg(3, 3, 2), arg(2)),
    ],
}
