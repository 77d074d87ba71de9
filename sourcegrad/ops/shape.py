"""Shapes, layout and indexing: reshape, transpose, concatenate, getitem, take."""

from __future__ import annotations

import operator

import numpy as np

from .. import errors
from ..runtime import (
    cast_like,
    inverse_permutation,
    take_part,
    tile_split_shape,
    tile_sum_axes,
    unbroadcast,
    unindex,
    untake,
    unwindow,
)
from .examples import arg, ex
from .registry import Spelling, defnondiff, defvjp, mark, torch
from .registry import func as _func
from .registry import helper as _helper

# Shapes and layout.
defvjp(
    "reshape",
    np.reshape,
    _func("reshape"),
    lambda g, ans, x, shape: np.reshape(g, x.shape),
    props={"view", "linear_in_first"},
    methods=("reshape",),
    linear="joint",
    torch=torch("ViewBackward0", "reshape"),
    complex=True,
)
defvjp(
    "ravel",
    np.ravel,
    _func("ravel"),
    lambda g, ans, x: np.reshape(g, x.shape),
    props={"view", "linear_in_first"},
    methods=("ravel",),
    linear="joint",
    torch=torch("ViewBackward0", "ravel"),
    complex=True,
)


# x.flatten() is ravel's values in a new array, always (so not a view: updating it in place
# leaves x alone)
def no_layout_rule(what):
    """Called by a rule template, with constants, when the gradient is made: a layout whose
    adjoint has no formula here."""
    raise errors.NoRuleError(f"{what} has no derivative rule")


defnondiff(
    "no_layout_rule", no_layout_rule, Spelling("module", "sourcegrad.ops.shape.no_layout_rule")
)
# x.flatten(order="F") reads x's elements in the transposed order (x.T.flatten() for any
# layout): its adjoint puts them back through the transpose (the order was ignored: the
# gradient went to the elements at the C-order positions). "A" and "K" follow x's memory
# layout, which the rule cannot know when the gradient is made: refused
defvjp(
    "flatten",
    lambda x, order="C": np.ravel(x, order).copy(),
    Spelling("method", "flatten"),
    lambda g, ans, x, order="C": (
        np.reshape(g, x.shape)
        if order == "C"
        else np.transpose(np.reshape(g, np.shape(np.transpose(x))))
        if order == "F"
        else no_layout_rule("x.flatten(order='A' or 'K')")
    ),
    props={"linear_in_first"},
    methods=("flatten",),
    register_fn=False,
    linear="joint",
)
defvjp(
    "expand_dims",
    np.expand_dims,
    _func("expand_dims"),
    lambda g, ans, x, axis: np.reshape(g, x.shape),
    props={"view", "linear_in_first"},
    linear="joint",
    torch=torch("UnsqueezeBackward0", "unsqueeze"),
    complex=True,
)
defvjp(
    "squeeze",
    np.squeeze,
    _func("squeeze"),
    lambda g, ans, x, axis=None: np.reshape(g, x.shape),
    props={"view", "linear_in_first"},
    methods=("squeeze",),
    linear="joint",
    torch=torch("SqueezeBackward0", "squeeze"),
    complex=True,
)
defvjp(
    "transpose",
    np.transpose,
    _func("transpose"),
    lambda g, ans, x, axes=None: (
        np.transpose(g) if axes is None else np.transpose(g, inverse_permutation(axes))
    ),
    props={"view", "linear_in_first"},
    methods=("transpose",),
    linear="joint",
    torch=torch("PermuteBackward0", "permute"),
    complex=True,
)
defvjp(
    "T",
    operator.attrgetter("T"),
    Spelling("attr", "T"),
    lambda g, ans, x: g.T,
    props={"view", "linear_in_first"},
    linear="joint",
    complex=True,
)
defvjp(
    "swapaxes",
    np.swapaxes,
    _func("swapaxes"),
    lambda g, ans, x, axis1, axis2: np.swapaxes(g, axis1, axis2),
    props={"view"},
    methods=("swapaxes",),
    linear="joint",
    torch=torch("TransposeBackward0", "transpose", "swapaxes", "swapdims"),
    complex=True,
)
defvjp(
    "moveaxis",
    np.moveaxis,
    _func("moveaxis"),
    lambda g, ans, x, source, destination: np.moveaxis(g, destination, source),
    props={"view"},
    linear="joint",
    torch=torch("PermuteBackward0", "movedim", "moveaxis"),
    complex=True,
)
defvjp(
    "broadcast_to",
    np.broadcast_to,
    _func("broadcast_to"),
    lambda g, ans, x, shape: unbroadcast(g, x),
    props={"view", "linear_in_first", "readonly"},
    linear="joint",
    torch=torch("ExpandBackward0", "broadcast_to"),
    complex=True,
)
defvjp(
    "concatenate",
    np.concatenate,
    _func("concatenate"),
    lambda g, ans, *arrays, argnum, axis=0: take_part(g, arrays, argnum, axis),
    sequence_input=True,
    linear="joint",
    complex=True,
)
defvjp(
    "stack",
    np.stack,
    _func("stack"),
    lambda g, ans, *arrays, argnum, axis=0: np.take(g, argnum, axis=axis),
    sequence_input=True,
    linear="joint",
    complex=True,
)


# np.take's modes wrap and clip read an index out of range as numpy does (modulo the axis's
# length, or clipped into it): the adjoint adds g back at the element read (`taken_index`)
def taken_index(indices, x, axis=None, mode="raise"):
    """The indices np.take(x, indices, axis, mode=mode) reads, each in range for "wrap" and
    "clip" (as numpy reads them); the indices as given for "raise"."""
    if mode == "raise":
        return indices
    n = np.size(x) if axis is None else np.shape(x)[axis]
    if mode == "wrap":
        return np.mod(indices, n)
    if mode == "clip":
        return np.clip(indices, 0, n - 1)
    raise ValueError(f"clipmode not understood (got {mode!r})")  # (numpy's message)


defnondiff(
    "taken_index",
    taken_index,
    Spelling("module", "sourcegrad.ops.shape.taken_index"),
    params=("indices", "x", "axis", "mode"),
)
defvjp(
    "take",
    np.take,
    _func("take"),
    lambda g, ans, x, indices, axis=None, out=None, mode="raise": untake(
        g, x, taken_index(indices, x, axis, mode), axis
    ),
    None,
    linear="joint",
    methods=("take",),
    complex=True,
)
defvjp(
    "getitem",
    operator.getitem,
    Spelling("getitem"),
    lambda g, ans, x, index: unindex(g, x, index),
    None,
    props={"view"},
    linear="joint",
    complex=True,
)
defvjp(
    "asarray",
    np.asarray,
    _func("asarray"),
    lambda g, ans, x: unbroadcast(g, x),
    props={"view"},
    linear="joint",
    complex=True,
)
# np.copy(x) and x.copy(): a new array (not a view: storing into it leaves x as it was)
defvjp(
    "copy",
    np.copy,
    _func("copy"),
    lambda g, ans, x: unbroadcast(g, x),
    methods=("copy",),
    linear="joint",
    complex=True,
)


def _astype(x, dtype, copy=True):
    return x.astype(dtype, copy=copy)


# x.astype(dtype): the gradient comes back in x's dtype (float32 -> float64 and back)
defvjp(
    "astype",
    _astype,
    Spelling("method", "astype"),
    lambda g, ans, x, dtype, copy=True: cast_like(g, x),
    None,
    methods=("astype",),
    linear="joint",
)
defvjp("float_builtin", float, Spelling("builtin", "float"), lambda g, ans, x: g, linear="joint")
# unbroadcast(h, x) sums h down to x's shape or broadcasts it up: unbroadcast back to h's
# shape is its transpose either way (no test of shapes, which a mask leaves unknown).
defvjp(
    "unbroadcast",
    unbroadcast,
    _helper("unbroadcast"),
    lambda g, ans, g_in, x: unbroadcast(g, g_in),
    None,
    linear=(0,),
    complex=True,
)


# (numpy's errors for these depend on the operands' shapes only: see "shape_checked")
mark(
    "shape_checked",
    "reshape",
    "ravel",
    "transpose",
    "swapaxes",
    "moveaxis",
    "broadcast_to",
    "expand_dims",
    "squeeze",
    "concatenate",
    "stack",
    "getitem",
    "T",
)


# Layout changes numpy has and torch names differently (flip, roll, tril, triu, tile): each is
# linear, so its JVP is the op applied to the tangent.
defvjp(
    "flip",
    np.flip,
    _func("flip"),
    lambda g, ans, x, axis=None: np.flip(g, axis),
    linear="joint",
    torch=torch("FlipBackward0", "flip"),
    props={"view"},
    complex=True,
)
defvjp(
    "roll",
    np.roll,
    _func("roll"),
    lambda g, ans, x, shift, axis=None: np.roll(g, np.negative(shift), axis),
    linear="joint",
    torch=torch("RollBackward0", "roll"),
    complex=True,
)
defvjp(
    "tril",
    np.tril,
    _func("tril"),
    lambda g, ans, x, k=0: np.tril(g, k),
    linear="joint",
    torch=torch("TrilBackward0", "tril"),
)
defvjp(
    "triu",
    np.triu,
    _func("triu"),
    lambda g, ans, x, k=0: np.triu(g, k),
    linear="joint",
    torch=torch("TriuBackward0", "triu"),
)
# tile's VJP sums the tiles: g reshaped so each tile has axes of its own, summed over those.
defvjp(
    "tile",
    np.tile,
    _func("tile"),
    lambda g, ans, x, reps: np.reshape(
        np.sum(np.reshape(g, tile_split_shape(x.shape, reps)), axis=tile_sum_axes(x.shape, reps)),
        x.shape,
    ),
    linear="joint",
    torch=torch("RepeatBackward0", "tile"),
    complex=True,
)
# A read-only view of x's windows (im2col without a copy); numpy's writeable=True, whose
# writes would reach x through overlapping windows, is refused (the rule takes no such keyword)
defvjp(
    "sliding_window_view",
    np.lib.stride_tricks.sliding_window_view,
    Spelling("module", "numpy.lib.stride_tricks.sliding_window_view"),
    lambda g, ans, x, window_shape, axis=None: unwindow(g, x, window_shape, axis),
    props={"view", "linear_in_first"},
    linear="joint",
    complex=True,
)
defvjp(
    "unwindow",
    unwindow,
    _helper("unwindow"),
    lambda g, ans, h, x, window_shape, axis=None: np.lib.stride_tricks.sliding_window_view(
        g, window_shape, axis
    ),
    None,
    None,
    None,
    linear=(0,),
    complex=True,
)
defnondiff("tile_split_shape", tile_split_shape, _helper("tile_split_shape"))
defnondiff("tile_sum_axes", tile_sum_axes, _helper("tile_sum_axes"))


# Example inputs for the registry's test grid (ops/examples.py).
EXAMPLES = {
    "reshape": [ex(arg(3, 4), (2, 6)), ex(arg(3, 4), (-1,)), ex(arg(2, 3, 4), (6, -1))],
    "ravel": [ex(arg(3, 4)), ex(arg(2, 3, 4))],
    "expand_dims": [ex(arg(3, 4), 1), ex(arg(3, 4), (0, -1))],
    "squeeze": [ex(arg(3, 1, 4)), ex(arg(1, 3, 1), axis=0)],
    "transpose": [ex(arg(3, 4)), ex(arg(2, 3, 4), (1, 2, 0))],
    "T": [ex(arg(3, 4)), ex(arg(2, 3, 4))],
    "swapaxes": [ex(arg(2, 3, 4), 0, 2)],
    "moveaxis": [ex(arg(2, 3, 4), 0, -1), ex(arg(2, 3, 4), (0, 1), (2, 0))],
    "broadcast_to": [ex(arg(4), (3, 4)), ex(arg(3, 1), (2, 3, 4))],
    "concatenate": [
        ex([arg(2, 4), arg(3, 4)]),
        ex([arg(3, 2), arg(3, 4), arg(3, 1)], axis=1),
        ex([arg(2, 3), arg(2, 3)], axis=None),
    ],
    "stack": [ex([arg(3, 4), arg(3, 4)]), ex([arg(3), arg(3), arg(3)], axis=1)],
    "sliding_window_view": [
        ex(arg(7), 3),
        ex(arg(5, 6), (3, 2)),
        ex(arg(4, 5), 2, axis=1),
        ex(arg(2, 7), (2, 3), axis=(1, 1)),
    ],
    "take": [
        ex(arg(3, 4), np.array([2, 0, 2])),
        ex(arg(3, 4), np.array([[1, 7], [-6, 0]]), axis=1, mode="wrap"),
        ex(arg(5), np.array([-2, 9, 3, 3]), mode="clip"),
        ex(arg(3, 4), np.array([[1, 3], [3, 0]]), axis=1),
    ],
    "getitem": [
        ex(arg(3, 4), (slice(1, None), slice(None, None, 2))),
        ex(arg(3, 4), 1),
        ex(arg(5), np.array([0, 3, 3, 1])),
        ex(arg(3, 4), (Ellipsis, None, 2)),
    ],
    "asarray": [ex(arg(3, 4))],
    "copy": [ex(arg(3, 4))],
    "np_copy": [ex(arg(3, 4))],
    "np_float64": [ex(arg(3, 4)), ex(arg())],
    "astype": [ex(arg(3, 4), "float64")],
    "flatten": [ex(arg(3, 4)), ex(arg(2, 3), order="F")],
    "float_builtin": [ex(arg())],
    "flip": [ex(arg(3, 4)), ex(arg(3, 4), axis=1), ex(arg(2, 3, 4), axis=(0, 2))],
    "roll": [ex(arg(3, 4), 2), ex(arg(3, 4), -1, axis=0), ex(arg(3, 4), (1, 2), axis=(0, 1))],
    "tril": [ex(arg(4, 4)), ex(arg(3, 4), k=1), ex(arg(2, 3, 3), k=-1)],
    "triu": [ex(arg(4, 4)), ex(arg(3, 4), k=-1), ex(arg(2, 3, 3), k=1)],
    "tile": [ex(arg(3), 2), ex(arg(2, 3), (2, 1)), ex(arg(3), (2, 2))],
}


# --- torch's shape functions numpy has no function for: diag_embed ----------------------------


def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """torch.diag_embed: the last axis of x put on the diagonal `offset` of the planes (dim1,
    dim2) of a new array one rank higher (zeros elsewhere): np.diagonal's right inverse."""
    n = x.shape[-1] + abs(offset) if np.ndim(x) else 1
    ndim = np.ndim(x) + 1
    dim1, dim2 = dim1 % ndim, dim2 % ndim
    # the planes made last (as np.diagonal reads them), then moved to dim1, dim2
    out = np.zeros(x.shape[:-1] + (n, n), dtype=x.dtype)
    rows = np.arange(x.shape[-1]) + max(-offset, 0)
    out[..., rows, rows + offset] = x
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


# linear; its adjoint reads the same diagonal back (torch's DiagEmbedBackward0)
defvjp(
    "diag_embed",
    diag_embed,
    Spelling("module", "sourcegrad.ops.shape.diag_embed"),
    lambda g, ans, x, offset=0, dim1=-2, dim2=-1: np.diagonal(
        g, offset, dim1 % (np.ndim(x) + 1), dim2 % (np.ndim(x) + 1)
    ),
    linear="joint",
    torch=torch("DiagEmbedBackward0", "diag_embed", numpy=False),
    complex=True,
)
EXAMPLES.update(
    {"diag_embed": [ex(arg(2, 3)), ex(arg(3), 1), ex(arg(2, 3), -1, 0, 2), ex(arg(4), 0, 1, 0)]}
)
