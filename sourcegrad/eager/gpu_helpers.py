"""The few `sourcegrad.runtime` helpers that CuPy cannot run as written, rewritten for it.

The rules' lambdas call `sourcegrad.runtime` helpers, and almost all of them work
on CuPy arrays unchanged (numpy hands the calls to CuPy). `unindex` (and `untake`)
scatter-add with `np.add.at(out, index, g)`; NumPy hands that to CuPy only when
`index` is an array, and refuses a tuple index (what `x[i, j]`, `gather` and
`max(dim)` record). (`prod_grad` had a copy here too; runtime's own now makes its
ones with `np.ones_like(x, shape=...)` and slices, so it runs on CuPy as written.)

A node on the GPU runs its rule with these versions bound in its place (`for_gpu`):
the same lambda, the same arithmetic, with `xp.add.at` called on CuPy directly.
They work on Tensors too (under `create_graph`), where numpy's functions dispatch
to the Tensor ops.

Imports: numpy, `sourcegrad.runtime` and `eager.devices` only.
"""

from __future__ import annotations

import types

import numpy as np

from .. import runtime
from . import devices


def _has_array_index(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(hasattr(item, "shape") or isinstance(item, list) for item in items)


def _add_at(out, index, values):
    """`np.add.at(out, index, values)`, with CuPy's own `add.at` for a CuPy `out`."""
    if type(out) in devices.DEVICE_TYPES:
        devices.xp_of(out).add.at(out, index, values)
    else:
        np.add.at(out, index, values)  # numpy, or a Tensor (index_put_ with accumulate)


def unindex(g, x, index):
    """`runtime.unindex`: zeros shaped like `x` with `g` added at `index`."""
    if isinstance(x, (list, tuple)):
        return runtime.unindex_list(g, x, index)
    out = np.zeros_like(x)
    if _has_array_index(index):
        _add_at(out, index, g)
    else:
        out[index] = g
    return out


def untake(g, x, indices, axis=None):
    """`runtime.untake`: `g` added back at the positions `np.take(x, indices, axis)` took."""
    out = np.zeros_like(x, order="C")  # so that out.reshape(-1) is a view, not a copy
    if axis is None:
        _add_at(out.reshape(-1), indices, g)
    else:
        _add_at(out, (slice(None),) * (axis % np.ndim(x)) + (indices,), g)
    return out


HELPERS = {"unindex": (runtime.unindex, unindex), "untake": (runtime.untake, untake)}
_FOR_GPU: dict = {}


def for_gpu(vjp):
    """The rule lambda `vjp` with the helpers above in place of runtime's (cached).

    Only names the lambda calls directly and that are runtime's own helpers are
    swapped; a lambda that calls none of them is returned as it is.
    """
    found = _FOR_GPU.get(vjp)
    if found is None:
        scope = vjp.__globals__
        swaps = {
            name: mine
            for name, (theirs, mine) in HELPERS.items()
            if name in vjp.__code__.co_names and scope.get(name) is theirs
        }
        found = vjp
        if swaps:
            found = types.FunctionType(
                vjp.__code__, {**scope, **swaps}, vjp.__name__, vjp.__defaults__, vjp.__closure__
            )
            found.__kwdefaults__ = vjp.__kwdefaults__
        _FOR_GPU[vjp] = found
    return found
