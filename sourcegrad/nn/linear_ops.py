"""`F.linear`: input @ weight.T + bias, as torch records it (AddmmBackward0 on a matrix with
a bias, over a TBackward0 of the weight).

The one eager definition: `nn.functional` re-exports it, and the attention functions and
the recurrent layers call it. (`compiled.lowering.linear` is its numpy spelling for compiled
code, `input @ weight.T + bias`: the compiler differentiates that product and sum itself.)

Imports: the eager tensor_math, shape_ops and views.
"""

from __future__ import annotations

import math

from ..eager import shape_ops, tensor_math, views

__all__ = ["linear"]


def linear(input, weight, bias=None):
    """input @ weight.T + bias (AddmmBackward0 for a matrix input with a bias, and for the rows
    of a contiguous input of more dims, as torch).
    With a bias, torch runs addmm on the input's rows (folded): its errors are addmm's
    ("mat1 and mat2 shapes cannot be multiplied (2x5 and 3x4)"); without, matmul's."""
    wt = shape_ops.t(weight)
    if bias is not None:
        shape, w = input._data.shape, weight._data
        if (
            shape
            and w.ndim == 2
            and (
                shape[-1] != w.shape[1]
                or input._data.dtype != w.dtype
                or bias._data.dtype != w.dtype
            )
        ):
            tensor_math.check_addmm(bias, (math.prod(shape[:-1]), shape[-1]), input.dtype, wt)
    if input._data.ndim == 2:
        return tensor_math.addmm(bias, input, wt) if bias is not None else tensor_math.mm(input, wt)
    if bias is not None and input._data.ndim > 2 and input._data.flags.c_contiguous:
        # torch's at::linear for a contiguous input of 3 or more dims: addmm on its rows, viewed back
        # (ViewBackward0 over AddmmBackward0), one node fewer than a product and a bias add
        lead = input._data.shape[:-1]
        rows = views.view_known(input, (math.prod(lead), input._data.shape[-1]))
        out = tensor_math.addmm(bias, rows, wt)
        return views.view_known(out, lead + (out._data.shape[-1],))
    out = tensor_math.matmul(input, wt)
    return out + bias if bias is not None else out
