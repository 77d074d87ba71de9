"""numpy functions beyond the core families: sort, diff, trace/diag/diagonal, kron (any
rank), cross (any axes), pad, repeat, rot90, fliplr/flipud, the split and stack families (of
lists built at run time too), append, atleast_Nd, linspace, full, meshgrid, select,
nan_to_num, fmax/fmin, logaddexp2, degrees/radians, mod, np.float64, the casts to integers
(np.int64, ...: no gradient), np.copy, `.item()`, take_along_axis.

Takes nothing; registers one entry per function (names `np_<function>`). The helpers that
generated code calls for them (`untake_along`, `undiagonal`, `unrepeat`, `unpad`, ...) live
here too, each with its own entry, so that second derivatives go through them; generated code
calls them as `sourcegrad.ops.numpy_functions.<name>`.

Why one module: a registry family (the numpy functions outside elementwise math, reductions,
shape and linalg) whose entries and their backward helpers are flat, independent records; the
file is long because each rule is data, not because it holds several concerns.
"""

from __future__ import annotations

import numpy as np

from .. import errors
from ..runtime import (
    add_at,
    concatenate_items,
    cumprod_grad,
    cumprod_jvp,
    expand_reduced,
    max_grad,
    max_jvp,
    reduced_count,
    take_part,
    unbroadcast,
)
from .examples import arg, ex
from .reductions import logcumsumexp
from .registry import Spelling, alias, defnondiff, defprimitive, defvjp, mark, torch
from .registry import func as _func


def _spelled(name):
    return Spelling("module", f"sourcegrad.ops.numpy_functions.{name}")


def no_function_rule(what):
    """Called by a rule template, with constants, when the gradient is made: a variant of a
    function that has no formula here."""
    raise errors.NoRuleError(f"{what} has no derivative rule")


# --- helpers (linear in their first argument; each one's VJP is its transpose) ---------------


def polyval_coefficients_adjoint(g, n, x):
    """Adjoint of np.polyval(p, x) with respect to its `n` coefficients p: per coefficient i,
    the sum over x's elements of g x**(n-1-i)."""
    powers = np.asarray(x)[..., None] ** np.arange(n - 1, -1, -1)
    return np.tensordot(np.broadcast_to(g, np.shape(x)), powers, axes=np.ndim(x))


def scatter_along(h, indices, axis, size):
    """Adjoint of np.take_along_axis(x, indices, axis) for x with `size` elements along axis:
    zeros with h added at indices (np.add.at: an index may repeat)."""
    shape = list(np.shape(h))
    shape[axis] = size
    out = np.zeros(shape, dtype=np.result_type(h, np.float32))
    rest = np.indices(np.shape(indices), sparse=True)
    index = tuple(indices if i == axis % len(shape) else r for i, r in enumerate(rest))
    np.add.at(out, index, h)
    return out


def _order_statistics(x, q, axis):
    """For np.quantile(x, q, axis) by linear interpolation: x with `axis` last (flattened for
    None), its order along that axis, and each q's lower and upper positions in that order
    and the weight of the upper one (numpy's: position q (n - 1))."""
    moved = np.reshape(x, -1) if axis is None else np.moveaxis(x, axis, -1)
    order = np.argsort(moved, axis=-1)
    position = np.asarray(q, dtype=float) * (moved.shape[-1] - 1)
    lower = np.floor(position).astype(np.intp)
    upper = np.ceil(position).astype(np.intp)
    return moved, order, lower, upper, position - lower


def _quantile_shape(x, q, axis, keepdims):
    """The shape of np.quantile(x, q, axis, keepdims=keepdims): q's, then x's reduced."""
    if axis is None:
        rest = (1,) * np.ndim(x) if keepdims else ()
    else:
        shape = list(np.shape(x))
        shape[axis] = 1
        rest = (
            tuple(shape)
            if keepdims
            else tuple(n for k, n in enumerate(shape) if k != axis % len(shape))
        )
    return np.shape(q) + rest


def quantile_tangent(t, x, q, axis=None, keepdims=False):
    """The tangent of np.quantile(x, q, axis, keepdims=keepdims) (linear interpolation) for
    x's tangent t: t's elements at x's order statistics, weighted as x's are."""
    moved, order, lower, upper, weight = _order_statistics(x, q, axis)
    ranked = np.take_along_axis(
        np.reshape(t, -1) if axis is None else np.moveaxis(t, axis, -1), order, axis=-1
    )
    value = ranked[..., lower] * (1.0 - weight) + ranked[..., upper] * weight  # (rest, q)
    value = np.moveaxis(value, tuple(range(-np.ndim(q), 0)), tuple(range(np.ndim(q))))
    return np.reshape(value, _quantile_shape(x, q, axis, keepdims))


def quantile_grad(g, x, q, axis=None, keepdims=False):
    """Adjoint of np.quantile(x, q, axis, keepdims=keepdims) (linear interpolation): g
    shared between the two order statistics each quantile lies between, by the same
    weights, and put back where they are in x (quantile_tangent's transpose)."""
    moved, order, lower, upper, weight = _order_statistics(x, q, axis)
    rest = moved.shape[:-1]
    g = np.reshape(g, np.shape(q) + rest)
    g = np.moveaxis(g, tuple(range(np.ndim(q))), tuple(range(-np.ndim(q), 0)))  # (rest, q)
    ranked = np.zeros(moved.shape, dtype=np.result_type(g, np.float32))
    np.add.at(ranked, (Ellipsis, lower), g * (1.0 - weight))
    np.add.at(ranked, (Ellipsis, upper), g * weight)
    out = np.zeros_like(ranked)
    np.put_along_axis(out, order, ranked, axis=-1)
    return np.reshape(out, np.shape(x)) if axis is None else np.moveaxis(out, -1, axis)


def average_weights(a, weights, axis):
    """np.average's weights as an array of a's shape: 1-d weights laid along `axis` (numpy's
    errors where their shapes do not fit)."""
    if np.shape(weights) == np.shape(a):
        return weights
    if axis is None:
        raise TypeError("Axis must be specified when shapes of a and weights differ.")
    if np.ndim(weights) != 1:
        raise TypeError("1D weights expected when shapes of a and weights differ.")
    if np.shape(weights)[0] != np.shape(a)[axis]:
        raise ValueError("Length of weights not compatible with specified axis.")
    shape = [1] * np.ndim(a)
    shape[axis] = -1
    return np.broadcast_to(np.reshape(weights, shape), np.shape(a))


def unaverage_weights(g, weights, axis):
    """Adjoint of average_weights(a, weights, axis) for weights: g summed back to their
    shape."""
    if np.shape(g) == np.shape(weights):
        return g
    return np.sum(np.reshape(np.moveaxis(g, axis, -1), (-1, np.shape(weights)[0])), axis=0)


def undiagonal(h, x, offset=0, axis1=0, axis2=1):
    """Adjoint of np.diagonal(x, offset, axis1, axis2): zeros shaped like x with h on that
    diagonal (h broadcasts against it: np.trace's adjoint passes it with length 1)."""
    out = np.zeros(np.shape(x), dtype=np.result_type(h, x))
    moved = np.moveaxis(out, (axis1, axis2), (-2, -1))  # (a writable view)
    k = np.diagonal(moved, offset, -2, -1).shape[-1]
    i = np.arange(k)
    moved[..., i + max(-offset, 0), i + max(offset, 0)] = h
    return out


def unrepeat(h, x, repeats, axis=None):
    """Adjoint of np.repeat(x, repeats, axis): each element's copies summed."""
    if axis is None:
        return np.reshape(unrepeat(h, np.ravel(x), repeats, 0), np.shape(x))
    n = np.shape(x)[axis]
    owner = np.repeat(np.arange(n), repeats)
    moved = np.moveaxis(h, axis, 0)
    out = np.zeros((n,) + moved.shape[1:], dtype=np.result_type(h))
    np.add.at(out, owner, moved)
    return np.moveaxis(out, 0, axis)


def unpad(h, pad_width):
    """Adjoint of np.pad(x, pad_width) (constant mode): the middle of h."""
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (np.ndim(h), 2))
    return h[tuple(slice(int(b), n - int(a)) for (b, a), n in zip(widths, np.shape(h)))]


def stack_index(arrays, argnum, kind):
    """Where the argnum-th array sits in np.hstack / vstack / dstack / column_stack(arrays)
    (kind "h", "v", "d", "column"): a tuple of slices into the result."""

    def promoted(shape):
        if kind == "v":
            return shape if len(shape) >= 2 else (1,) * (2 - len(shape)) + shape
        if kind == "d":
            return shape + (1,) * (3 - len(shape)) if len(shape) != 1 else (1,) + shape + (1,)
        if kind == "column":
            return shape + (1,) if len(shape) < 2 else shape
        return shape if len(shape) >= 1 else (1,)

    shapes = [promoted(np.shape(a)) for a in arrays]
    axis = {"v": 0, "d": 2, "column": 1, "h": 0 if len(shapes[0]) == 1 else 1}[kind]
    start = sum(s[axis] for s in shapes[:argnum])
    return (slice(None),) * axis + (slice(start, start + shapes[argnum][axis]),)


def unstack_parts(h, items, kind):
    """Adjoint of np.hstack / vstack / dstack / column_stack(items) ("h", "v", "d", "column")
    for a list built at run time: each item's part of h, in the item's shape."""
    return [np.reshape(h[stack_index(items, i, kind)], np.shape(x)) for i, x in enumerate(items)]


_STACKS = {"h": np.hstack, "v": np.vstack, "d": np.dstack, "column": np.column_stack}


def stack_parts(parts, kind):
    """The parts stacked back (np.hstack, vstack, dstack or column_stack): unstack_parts'
    transpose."""
    return _STACKS[kind](parts)


def _kron_operands(a, b):
    """a and b at one rank (leading 1s added to the lower), as np.kron lays them out."""
    n = max(np.ndim(a), np.ndim(b))
    return (
        np.reshape(a, (1,) * (n - np.ndim(a)) + np.shape(a)),
        np.reshape(b, (1,) * (n - np.ndim(b)) + np.shape(b)),
        n,
    )


def kron_grad(h, a, b, part):
    """Adjoint of np.kron(a, b) for a (part 0) or b (part 1), h the result's: h read as its
    blocks, element [i0, j0, i1, j1, ...] for a's index i and b's j, summed against the
    other factor over its index."""
    pa, pb, n = _kron_operands(a, b)
    blocks = np.reshape(h, [s for pair in zip(pa.shape, pb.shape) for s in pair])
    blocks = np.transpose(blocks, [*range(0, 2 * n, 2), *range(1, 2 * n, 2)])
    if part == 0:
        return np.reshape(np.tensordot(blocks, pb, axes=n), np.shape(a))
    return np.reshape(
        np.tensordot(pa, blocks, axes=(tuple(range(n)), tuple(range(n)))), np.shape(b)
    )


def cross_axes(axisa, axisb, axisc, axis):
    """np.cross's axes of a, b and the result (`axis`, given, sets all three)."""
    return (axisa, axisb, axisc) if axis is None else (axis, axis, axis)


def r_items(*items):
    """np.r_[items] (generated code's spelling of it: a call)."""
    return np.r_[items]


def c_items(*items):
    """np.c_[items] (generated code's spelling of it: a call)."""
    return np.c_[items]


def trick_index(items, argnum, kind):
    """Where items[argnum] sits in np.r_[items] (kind "r": along axis 0, each item at least
    1-d) or np.c_[items] ("c": along the last axis, each item at least 2-d, a vector as a
    column)."""

    def width(x):
        if kind == "r":
            return np.shape(x)[0] if np.ndim(x) >= 1 else 1
        return np.shape(x)[-1] if np.ndim(x) >= 2 else 1

    start = sum(width(x) for x in items[:argnum])
    part = slice(start, start + width(items[argnum]))
    return (part,) if kind == "r" else (Ellipsis, part)


def meshgrid_axes(ndim, argnum, indexing):
    """The axes np.meshgrid broadcasts its argnum-th input along (summed by its adjoint)."""
    own = argnum
    if indexing == "xy" and ndim >= 2 and argnum < 2:
        own = 1 - argnum
    return tuple(a for a in range(ndim) if a != own)


def select_grads(h, condlist, choicelist):
    """Adjoints of np.select's choices: h where a choice is the first whose condition holds."""
    taken = np.zeros(np.shape(h), dtype=bool)
    out = []
    for cond, choice in zip(condlist, choicelist):
        mine = np.logical_and(cond, np.logical_not(taken))
        out.append(unbroadcast(np.where(mine, h, 0.0), choice))
        taken = np.logical_or(taken, cond)
    return out


def select_default(condlist, shape):
    """Where np.select takes its default: no condition holds."""
    return np.logical_not(np.any(np.broadcast_arrays(*condlist, np.zeros(shape, bool)), axis=0))


def linspace_weights(num, endpoint, ndim):
    """s with linspace(a, b) = a (1 - s) + b s, shaped to broadcast along axis 0."""
    s = np.linspace(0.0, 1.0, num, endpoint=endpoint)
    return np.reshape(s, (-1,) + (1,) * (ndim - 1))


def diff_padding(ndim, axis, n):
    """np.pad's widths for n zeros at both ends of `axis` (the adjoint of n differences is
    (-1)**n times the n-th difference of the cotangent padded so)."""
    widths = [(0, 0)] * ndim
    widths[axis] = (n, n)
    return tuple(widths)


def diff_length(value, axis):
    """How many elements `value`, prepended or appended by np.diff, adds along `axis`: 0 for
    none, 1 for a number (broadcast along the other axes), else its length there."""
    return 0 if value is None else 1 if np.ndim(value) == 0 else np.shape(value)[axis]


def item(x):
    """`x.item()` (generated code's spelling where x may be a Python number)."""
    return x.item() if hasattr(x, "item") else x


for _helper in (
    no_function_rule,
    stack_index,
    trick_index,
    cross_axes,
    meshgrid_axes,
    select_default,
    linspace_weights,
    diff_padding,
    diff_length,
):
    defnondiff(_helper.__name__, _helper, _spelled(_helper.__name__))

defvjp(
    "scatter_along",
    scatter_along,
    _spelled("scatter_along"),
    lambda g, ans, h, indices, axis, size: unbroadcast(
        np.take_along_axis(g, indices, axis=axis), h
    ),
    None,
    None,
    None,
    linear=(0,),
    complex=True,
)
# the quantiles' adjoint and tangent helpers, each the other's transpose (linear in g and t;
# piecewise constant in x, whose order picks the elements)
defvjp(
    "quantile_grad",
    quantile_grad,
    _spelled("quantile_grad"),
    lambda g, ans, h, x, q, axis=None, keepdims=False: quantile_tangent(g, x, q, axis, keepdims),
    None,
    None,
    linear=(0,),
)
defvjp(
    "quantile_tangent",
    quantile_tangent,
    _spelled("quantile_tangent"),
    lambda g, ans, t, x, q, axis=None, keepdims=False: quantile_grad(g, x, q, axis, keepdims),
    None,
    None,
    linear=(0,),
)
# average_weights is linear in the weights (its adjoint sums g back to their shape), and
# unaverage_weights in g (its adjoint lays g out again)
defvjp(
    "average_weights",
    average_weights,
    _spelled("average_weights"),
    None,
    lambda g, ans, a, weights, axis: unaverage_weights(g, weights, axis),
    None,
    linear=(1,),
)
defvjp(
    "unaverage_weights",
    unaverage_weights,
    _spelled("unaverage_weights"),
    lambda g, ans, h, weights, axis: (
        average_weights(h, g, axis) if np.shape(g) != np.shape(h) else g
    ),
    None,
    None,
    linear=(0,),
)
# np.average: the mean without weights; with them sum(a w) / sum(w) over `axis`, in a and
# in the weights (`returned=True`, a pair, is refused)
defvjp(
    "np_average",
    np.average,
    _func("average"),
    lambda g, ans, a, axis=None, weights=None, returned=False, keepdims=False: (
        no_function_rule("np.average with returned=True")
        if returned
        else np.broadcast_to(
            expand_reduced(g, a, axis, keepdims) / reduced_count(a, axis), np.shape(a)
        )
        if weights is None
        else expand_reduced(g, a, axis, keepdims)
        * average_weights(a, weights, axis)
        / np.sum(average_weights(a, weights, axis), axis=axis, keepdims=True)
    ),
    None,
    lambda g, ans, a, axis=None, weights=None, returned=False, keepdims=False: (
        no_function_rule("np.average with returned=True")
        if returned
        else unaverage_weights(
            expand_reduced(g, a, axis, keepdims)
            * (a - expand_reduced(ans, a, axis, keepdims))
            / np.sum(average_weights(a, weights, axis), axis=axis, keepdims=True),
            weights,
            axis,
        )
    ),
    jvps=(
        lambda t, ans, a, axis=None, weights=None, returned=False, keepdims=False: (
            no_function_rule("np.average with returned=True")
            if returned
            else np.average(t, axis=axis, weights=weights, keepdims=keepdims)
        ),
        None,
        lambda t, ans, a, axis=None, weights=None, returned=False, keepdims=False: (
            no_function_rule("np.average with returned=True")
            if returned
            else np.sum(
                (a - expand_reduced(ans, a, axis, keepdims)) * average_weights(a, t, axis),
                axis=axis,
                keepdims=keepdims,
            )
            / np.sum(average_weights(a, weights, axis), axis=axis, keepdims=keepdims)
        ),
    ),
)
# np.median, np.quantile and np.percentile by numpy's default linear interpolation; in q (the
# slope between two order statistics) and by another method they are refused
defvjp(
    "np_median",
    np.median,
    _func("median"),
    # (overwrite_input=True partly sorts the array in place: later reads of it see another
    # order, which the gradient, reading the array as it was, cannot follow: refused)
    lambda g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False: (
        quantile_grad(g, a, 0.5, axis, keepdims)
        if not overwrite_input
        else no_function_rule(
            "np.median(..., overwrite_input=True), which reorders its array in place,"
        )
    ),
    jvps=(
        lambda t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False: (
            quantile_tangent(t, a, 0.5, axis, keepdims)
            if not overwrite_input
            else no_function_rule(
                "np.median(..., overwrite_input=True), which reorders its array in place,"
            )
        ),
    ),
)
defvjp(
    "np_quantile",
    np.quantile,
    _func("quantile"),
    lambda g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: (
        quantile_grad(g, a, q, axis, keepdims)
        if method == "linear" and not overwrite_input
        else no_function_rule(
            "np.quantile(..., overwrite_input=True), which reorders its array in place,"
        )
        if overwrite_input
        else no_function_rule("np.quantile by another method than 'linear'")
    ),
    lambda g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: (
        no_function_rule("np.quantile in q")
    ),
    jvps=(
        lambda t, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: (
            quantile_tangent(t, a, q, axis, keepdims)
            if method == "linear" and not overwrite_input
            else no_function_rule(
                "np.quantile(..., overwrite_input=True), which reorders its array in place,"
            )
            if overwrite_input
            else no_function_rule("np.quantile by another method than 'linear'")
        ),
        lambda t, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: (
            no_function_rule("np.quantile in q")
        ),
    ),
)
defvjp(
    "np_percentile",
    np.percentile,
    _func("percentile"),
    lambda g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: (
        quantile_grad(g, a, np.true_divide(q, 100.0), axis, keepdims)
        if method == "linear" and not overwrite_input
        else no_function_rule(
            "np.percentile(..., overwrite_input=True), which reorders its array in place,"
        )
        if overwrite_input
        else no_function_rule("np.percentile by another method than 'linear'")
    ),
    lambda g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: (
        no_function_rule("np.percentile in q")
    ),
    jvps=(
        lambda t, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: (
            quantile_tangent(t, a, np.true_divide(q, 100.0), axis, keepdims)
            if method == "linear" and not overwrite_input
            else no_function_rule(
                "np.percentile(..., overwrite_input=True), which reorders its array in place,"
            )
            if overwrite_input
            else no_function_rule("np.percentile by another method than 'linear'")
        ),
        lambda t, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False: (
            no_function_rule("np.percentile in q")
        ),
    ),
)
defvjp(
    "undiagonal",
    undiagonal,
    _spelled("undiagonal"),
    lambda g, ans, h, x, offset=0, axis1=0, axis2=1: unbroadcast(
        np.diagonal(g, offset, axis1, axis2), h
    ),
    None,
    linear=(0,),
    complex=True,
)
defvjp(
    "unrepeat",
    unrepeat,
    _spelled("unrepeat"),
    lambda g, ans, h, x, repeats, axis=None: (
        np.repeat(g, repeats, axis=axis)
        if axis is not None
        else np.reshape(np.repeat(np.ravel(g), repeats), np.shape(h))
    ),
    None,
    None,
    linear=(0,),
    complex=True,
)
defvjp(
    "unpad",
    unpad,
    _spelled("unpad"),
    lambda g, ans, h, pad_width: np.pad(g, pad_width),
    None,
    linear=(0,),
    complex=True,
)
defvjp(
    "select_grads",
    select_grads,
    _spelled("select_grads"),
    lambda g, ans, h, condlist, choicelist: unbroadcast(np.select(condlist, g, 0.0), h),
    None,
    None,
    linear=(0,),
)


# --- the functions ---------------------------------------------------------------------------

# Elementwise.
defvjp(
    "np_fmax",
    np.fmax,
    _func("fmax"),
    lambda g, ans, x, y: unbroadcast(g * np.where(x == y, 0.5, ans == x), x),
    lambda g, ans, x, y: unbroadcast(g * np.where(x == y, 0.5, ans == y), y),
    kind="elementwise",
)
defvjp(
    "np_fmin",
    np.fmin,
    _func("fmin"),
    lambda g, ans, x, y: unbroadcast(g * np.where(x == y, 0.5, ans == x), x),
    lambda g, ans, x, y: unbroadcast(g * np.where(x == y, 0.5, ans == y), y),
    kind="elementwise",
)
defvjp(
    "np_logaddexp2",
    np.logaddexp2,
    _func("logaddexp2"),
    lambda g, ans, x, y: unbroadcast(g * np.exp2(x - ans), x),
    lambda g, ans, x, y: unbroadcast(g * np.exp2(y - ans), y),
    kind="elementwise",
)
defvjp(
    "np_deg2rad",
    np.deg2rad,
    _func("deg2rad"),
    lambda g, ans, x: g * 0.017453292519943295,
    kind="elementwise",
)
alias("np_radians", np.radians, _func("radians"), like="np_deg2rad")
defvjp(
    "np_rad2deg",
    np.rad2deg,
    _func("rad2deg"),
    lambda g, ans, x: g * 57.29577951308232,
    kind="elementwise",
)
alias("np_degrees", np.degrees, _func("degrees"), like="np_rad2deg")
alias("np_mod", np.mod, _func("mod"), like="mod_op")  # (np.remainder is np.mod)
# fmod(x, y) = x - trunc(x / y) y (C's remainder: the sign of x), where mod floors
defvjp(
    "np_fmod",
    np.fmod,
    _func("fmod"),
    lambda g, ans, x, y: unbroadcast(g, x),
    lambda g, ans, x, y: unbroadcast(-g * np.trunc(x / y), y),
    kind="elementwise",
)
# finite elements pass through; nan and infinities are replaced by constants
defvjp(
    "np_nan_to_num",
    np.nan_to_num,
    _func("nan_to_num"),
    lambda g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None: np.where(
        np.isfinite(x), g, 0.0
    ),
    kind="elementwise",
)
alias("np_float64", np.float64, _func("float64"), like="float_builtin", props={"view"})
# Casts to integers (np.int64(x), np.intp(...), ...): piecewise constant, so no gradient, as
# int(x) and x.astype(int) carry none
for _type in sorted(
    {np.int8, np.int16, np.int32, np.int64, np.intp, np.uint8, np.uint16, np.uint32, np.uint64},
    key=lambda t: t.__name__,
):
    defnondiff(f"np_{_type.__name__}", _type, _func(_type.__name__))
alias("np_copy", np.copy, _func("copy"), like="asarray", complex=True)
defvjp(
    "item",
    item,
    _spelled("item"),
    lambda g, ans, x: np.reshape(g, np.shape(x)),
    methods=("item",),
    method="item",
    linear="joint",
)

# Sorting: the adjoint goes back to where each element came from.
defvjp(
    "np_take_along_axis",
    np.take_along_axis,
    _func("take_along_axis"),
    lambda g, ans, arr, indices, axis=-1: (
        scatter_along(g, indices, axis, np.shape(arr)[axis])
        if axis is not None
        else np.reshape(scatter_along(g, indices, 0, np.size(arr)), np.shape(arr))
    ),
    None,
    linear=(0,),
    complex=True,
)
defvjp(
    "np_sort",
    np.sort,
    _func("sort"),
    lambda g, ans, a, axis=-1, kind=None, order=None: (
        scatter_along(g, np.argsort(a, axis=axis, kind="stable"), axis, np.shape(a)[axis])
        if axis is not None
        else np.reshape(
            scatter_along(g, np.argsort(a, axis=None, kind="stable"), 0, np.size(a)), np.shape(a)
        )
    ),
    jvps=(
        lambda t, ans, a, axis=-1, kind=None, order=None: (
            np.take_along_axis(t, np.argsort(a, axis=axis, kind="stable"), axis=axis)
            if axis is not None
            else np.take_along_axis(np.ravel(t), np.argsort(a, axis=None, kind="stable"), axis=0)
        ),
    ),
)

# Accepted with a zero gradient (their results are indices, booleans or rounded values).
for _name in (
    "argpartition",
    "searchsorted",
    "allclose",
    "isclose",
    "flatnonzero",
    "argwhere",
    "digitize",
    "array_equal",
    "isneginf",
    "isposinf",
    "any",
    "all",
    "nanargmax",
    "nanargmin",
    "lexsort",
    "around",
    "isreal",
    "iscomplex",
    "isrealobj",
    "iscomplexobj",
    # index arrays (of a shape: no array of the function's is read)
    "triu_indices",
    "tril_indices",
    "diag_indices",
    "indices",
    "triu_indices_from",
    "tril_indices_from",
    "diag_indices_from",
    "unravel_index",
    "ravel_multi_index",
):
    defnondiff(f"np_{_name}", getattr(np, _name), _func(_name))
# (as many indices as the data select)
mark("data_shaped", "np_flatnonzero", "np_argwhere")

# np.partition(a, kth) arranges a as np.take_along_axis(a, np.argpartition(a, kth)) does (the
# same selection, so the same arrangement): the adjoint goes back along those indices.
defvjp(
    "np_partition",
    np.partition,
    _func("partition"),
    lambda g, ans, a, kth, axis=-1, kind="introselect", order=None: (
        scatter_along(g, np.argpartition(a, kth, axis=axis), axis, np.shape(a)[axis])
        if axis is not None
        else np.reshape(
            scatter_along(g, np.argpartition(a, kth, axis=None), 0, np.size(a)), np.shape(a)
        )
    ),
    None,
    jvps=(
        lambda t, ans, a, kth, axis=-1, kind="introselect", order=None: (
            np.take_along_axis(t, np.argpartition(a, kth, axis=axis), axis=axis)
            if axis is not None
            else np.take_along_axis(np.ravel(t), np.argpartition(a, kth, axis=None), axis=0)
        ),
        None,
    ),
)
# np.rollaxis(a, axis, start) is np.moveaxis to where numpy puts it
defvjp(
    "np_rollaxis",
    np.rollaxis,
    _func("rollaxis"),
    lambda g, ans, a, axis, start=0: np.moveaxis(
        g,
        (start + a.ndim if start < 0 else start)
        - (1 if axis % a.ndim < (start + a.ndim if start < 0 else start) else 0),
        axis % a.ndim,
    ),
    linear="joint",
    props={"view"},
)

# Differences: diff is linear; its adjoint is minus the difference of g padded with zeros,
# and n differences' (-1)**n times the n-th difference of g padded with n zeros at each end:
# of the array np.diff joins (prepend, a, append), `a`'s part goes to a, the others' (summed
# where a number was broadcast) to prepend and append.
defvjp(
    "np_diff",
    np.diff,
    _func("diff"),
    lambda g, ans, a, n=1, axis=-1, prepend=None, append=None: (
        -np.diff(g, axis=axis, prepend=0.0, append=0.0)
        if prepend is None and append is None and n == 1
        else np.diff(
            np.diff(g, axis=axis, prepend=0.0, append=0.0), axis=axis, prepend=0.0, append=0.0
        )
        if prepend is None and append is None and n == 2
        else (-1) ** n
        * np.take(
            np.diff(np.pad(g, diff_padding(np.ndim(g), axis % np.ndim(g), n)), n, axis=axis),
            np.arange(diff_length(prepend, axis), diff_length(prepend, axis) + np.shape(a)[axis]),
            axis=axis,
        )
    ),
    None,
    None,
    # (unbroadcast: a number prepended or appended was broadcast, its part summed)
    lambda g, ans, a, n=1, axis=-1, prepend=None, append=None: unbroadcast(
        (-1) ** n
        * np.take(
            np.diff(np.pad(g, diff_padding(np.ndim(g), axis % np.ndim(g), n)), n, axis=axis),
            np.arange(0, diff_length(prepend, axis)),
            axis=axis,
        ),
        prepend,
    ),
    lambda g, ans, a, n=1, axis=-1, prepend=None, append=None: unbroadcast(
        (-1) ** n
        * np.take(
            np.diff(np.pad(g, diff_padding(np.ndim(g), axis % np.ndim(g), n)), n, axis=axis),
            np.arange(
                diff_length(prepend, axis) + np.shape(a)[axis],
                diff_length(prepend, axis) + np.shape(a)[axis] + diff_length(append, axis),
            ),
            axis=axis,
        ),
        append,
    ),
    linear="joint",
    complex=True,
)

# Diagonals.
defvjp(
    "np_diagonal",
    np.diagonal,
    _func("diagonal"),
    lambda g, ans, a, offset=0, axis1=0, axis2=1: undiagonal(g, a, offset, axis1, axis2),
    linear="joint",
    methods=("diagonal",),
    props={"view", "readonly"},
    complex=True,
)
defvjp(
    "np_trace",
    np.trace,
    _func("trace"),
    lambda g, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None: undiagonal(
        np.expand_dims(g, -1), a, offset, axis1, axis2
    ),
    linear="joint",
    methods=("trace",),
    complex=True,
)
defvjp(
    "np_diag",
    np.diag,
    _func("diag"),
    lambda g, ans, v, k=0: np.diagonal(g, k) if v.ndim == 1 else undiagonal(g, v, k, 0, 1),
    linear="joint",
    props={"view"},
    complex=True,
)

# Products of two arrays.
# np.kron: two vectors and two matrices by their block formulas; other ranks (the lower one
# padded with leading 1s, as numpy does) by kron_grad, which has rules of its own below.
defvjp(
    "np_kron",
    np.kron,
    _func("kron"),
    lambda g, ans, a, b: (
        np.reshape(g, (a.shape[0], b.shape[0])) @ b
        if a.ndim == 1 and b.ndim == 1
        else np.einsum(
            "ipjq,pq->ij", np.reshape(g, (a.shape[0], b.shape[0], a.shape[1], b.shape[1])), b
        )
        if a.ndim == 2 and b.ndim == 2
        else kron_grad(g, a, b, 0)
    ),
    lambda g, ans, a, b: (
        a @ np.reshape(g, (a.shape[0], b.shape[0]))
        if a.ndim == 1 and b.ndim == 1
        else np.einsum(
            "ipjq,ij->pq", np.reshape(g, (a.shape[0], b.shape[0], a.shape[1], b.shape[1])), a
        )
        if a.ndim == 2 and b.ndim == 2
        else kron_grad(g, a, b, 1)
    ),
    linear="multi",
    complex=True,
)
# kron_grad(h, a, b, 0) = d<h, kron(a, b)>/da is bilinear in (h, b) and reads a for its shape
# (part 1: in (h, a)); its dot product with g is <h, kron(g, b)>, so its VJP for h is kron(g, b)
# and for b kron_grad(h, g, b, 1), as dot_grad's (ops/program.py).
defvjp(
    "kron_grad",
    kron_grad,
    _spelled("kron_grad"),
    lambda g, ans, h, a, b, part: np.kron(g, b) if part == 0 else np.kron(a, g),
    lambda g, ans, h, a, b, part: np.zeros_like(a) if part == 0 else kron_grad(h, a, g, 0),
    lambda g, ans, h, a, b, part: kron_grad(h, g, b, 1) if part == 0 else np.zeros_like(b),
    None,
    jvps=(
        lambda t, ans, h, a, b, part: kron_grad(t, a, b, part),
        lambda t, ans, h, a, b, part: np.zeros_like(ans) if part == 0 else kron_grad(h, t, b, 1),
        lambda t, ans, h, a, b, part: kron_grad(h, a, t, 0) if part == 0 else np.zeros_like(ans),
    ),
)
# np.cross(a, b) along the last axes (or `axis`): the adjoint of a is cross(b, g), of b
# cross(g, a). With axisa / axisb / axisc the vectors are moved last first, as numpy does.
defvjp(
    "np_cross",
    np.cross,
    _func("cross"),
    lambda g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None: (
        unbroadcast(np.cross(b, g, axis=axis if axis is not None else -1), a)
        if axis is not None or (axisa == -1 and axisb == -1 and axisc == -1)
        else np.moveaxis(
            unbroadcast(
                np.cross(
                    np.moveaxis(b, cross_axes(axisa, axisb, axisc, axis)[1], -1),
                    np.moveaxis(g, cross_axes(axisa, axisb, axisc, axis)[2], -1),
                ),
                np.moveaxis(a, cross_axes(axisa, axisb, axisc, axis)[0], -1),
            ),
            -1,
            cross_axes(axisa, axisb, axisc, axis)[0],
        )
    ),
    lambda g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None: (
        unbroadcast(np.cross(g, a, axis=axis if axis is not None else -1), b)
        if axis is not None or (axisa == -1 and axisb == -1 and axisc == -1)
        else np.moveaxis(
            unbroadcast(
                np.cross(
                    np.moveaxis(g, cross_axes(axisa, axisb, axisc, axis)[2], -1),
                    np.moveaxis(a, cross_axes(axisa, axisb, axisc, axis)[0], -1),
                ),
                np.moveaxis(b, cross_axes(axisa, axisb, axisc, axis)[1], -1),
            ),
            -1,
            cross_axes(axisa, axisb, axisc, axis)[1],
        )
    ),
    linear="multi",
)

# Layout.
defvjp(
    "np_pad",
    np.pad,
    _func("pad"),
    lambda g, ans, array, pad_width, mode="constant", constant_values=0: (
        unpad(g, pad_width)
        if mode == "constant"
        else unpad_gather(g, np.shape(array), pad_width, mode)
        if mode == "edge" or mode == "reflect" or mode == "symmetric" or mode == "wrap"
        else no_function_rule(
            "np.pad with a mode other than constant, edge, reflect, symmetric and wrap"
        )
    ),
    None,
    None,
    # one number c fills every padded element: its adjoint is g summed over them (all of g
    # less its middle); per-axis values are refused where a gradient reaches them
    lambda g, ans, array, pad_width, mode="constant", constant_values=0: (
        np.sum(g) - np.sum(unpad(g, pad_width))
        if np.ndim(constant_values) == 0
        else no_function_rule("np.pad's constant_values other than one number")
    ),
    jvps=(
        lambda t, ans, array, pad_width, mode="constant", constant_values=0: (
            np.pad(t, pad_width)
            if mode == "constant"
            else np.pad(t, pad_width, mode)
            if mode == "edge" or mode == "reflect" or mode == "symmetric" or mode == "wrap"
            else no_function_rule(
                "np.pad with a mode other than constant, edge, reflect, symmetric and wrap"
            )
        ),
        None,
        None,
        lambda t, ans, array, pad_width, mode="constant", constant_values=0: (
            t * (np.pad(np.zeros(np.shape(array)), pad_width, constant_values=1.0) > 0)
            if np.ndim(constant_values) == 0
            else no_function_rule("np.pad's constant_values other than one number")
        ),
    ),
    complex=True,
)
defvjp(
    "np_repeat",
    np.repeat,
    _func("repeat"),
    lambda g, ans, a, repeats, axis=None: unrepeat(g, a, repeats, axis),
    None,
    linear="joint",
    methods=("repeat",),
    complex=True,
    props={"data_shaped"},  # (by an array of counts: registry.data_shaped)
)
defvjp(
    "np_rot90",
    np.rot90,
    _func("rot90"),
    lambda g, ans, m, k=1, axes=(0, 1): np.rot90(g, -k, axes),
    linear="joint",
    props={"view"},
    complex=True,
)
defvjp(
    "np_fliplr",
    np.fliplr,
    _func("fliplr"),
    lambda g, ans, m: np.fliplr(g),
    linear="joint",
    torch=torch("FlipBackward0", "fliplr"),
    props={"view"},
    complex=True,
)
defvjp(
    "np_flipud",
    np.flipud,
    _func("flipud"),
    lambda g, ans, m: np.flipud(g),
    linear="joint",
    torch=torch("FlipBackward0", "flipud"),
    props={"view"},
    complex=True,
)
for _name in ("atleast_1d", "atleast_2d", "atleast_3d"):
    defvjp(
        f"np_{_name}",
        getattr(np, _name),
        _func(_name),
        lambda g, ans, x: np.reshape(g, np.shape(x)),
        linear="joint",
        props={"view"},  # (the array itself where it has the rank already, else a view)
        complex=True,
    )

# Splitting: the result is a list, its adjoint a list (zeros for unused parts): concatenated.
defvjp(
    "np_split",
    np.split,
    _func("split"),
    lambda g, ans, ary, indices_or_sections, axis=0: concatenate_items(g, axis),
    None,
    linear="joint",
    props={"view"},
    complex=True,
)
defvjp(
    "np_array_split",
    np.array_split,
    _func("array_split"),
    lambda g, ans, ary, indices_or_sections, axis=0: concatenate_items(g, axis),
    None,
    linear="joint",
    props={"view"},
    complex=True,
)
defvjp(
    "np_hsplit",
    np.hsplit,
    _func("hsplit"),
    lambda g, ans, ary, indices_or_sections: concatenate_items(g, 1 if ary.ndim > 1 else 0),
    None,
    linear="joint",
    props={"view"},
    complex=True,
)
defvjp(
    "np_vsplit",
    np.vsplit,
    _func("vsplit"),
    lambda g, ans, ary, indices_or_sections: concatenate_items(g, 0),
    None,
    linear="joint",
    props={"view"},
    complex=True,
)
defvjp(
    "np_dsplit",
    np.dsplit,
    _func("dsplit"),
    lambda g, ans, ary, indices_or_sections: concatenate_items(g, 2),
    None,
    linear="joint",
    props={"view"},
    complex=True,
)


# Stacking: each input's part of the result, reshaped back to the input's shape. One rule for
# the family, made per stack by a closure (its `kind` is a constant of the rule, as a literal
# would be); np.row_stack is np.vstack.
def _stack_vjp(kind):
    return lambda g, ans, *arrays, argnum: np.reshape(
        g[stack_index(arrays, argnum, kind)], np.shape(arrays[argnum])
    )


# The same of a list built at run time (`rows.append(...)` then np.vstack(rows)): the front end
# calls these where np.stack and np.concatenate call stack_list and concatenate_list.
def _list_stack_vjp(kind):
    return lambda g, ans, items: unstack_parts(g, items, kind)


for _kind, _stack in _STACKS.items():  # (np.hstack, ...: the kinds stack_index knows)
    _name = _stack.__name__
    defvjp(
        f"np_{_name}",
        _stack,
        _func(_name),
        _stack_vjp(_kind),
        sequence_input=True,
        linear="joint",
        complex=True,
    )
    if _name == "vstack":
        alias(
            "np_row_stack",
            getattr(np, "row_stack", np.vstack),
            _func("vstack"),
            like="np_vstack",
            complex=True,
        )
for _kind, _stack in _STACKS.items():
    _name = _stack.__name__
    defvjp(
        f"np_{_name}_list",
        _stack,
        _func(_name),
        _list_stack_vjp(_kind),
        register_fn=False,
        linear="joint",
        complex=True,
    )
    if _name == "vstack":
        alias("np_row_stack_list", np.vstack, _func("vstack"), like="np_vstack_list", complex=True)

# their helpers are linear in their first argument and each other's transpose
defvjp(
    "unstack_parts",
    unstack_parts,
    _spelled("unstack_parts"),
    lambda g, ans, h, items, kind: stack_parts(g, kind),
    None,
    None,
    linear=(0,),
    props={"view"},
    complex=True,
)
defvjp(
    "stack_parts",
    stack_parts,
    _spelled("stack_parts"),
    lambda g, ans, parts, kind: unstack_parts(g, parts, kind),
    None,
    linear=(0,),
    complex=True,
)
# np.append(arr, values, axis): np.concatenate((arr, values), axis), of both flattened where
# axis is None; each input's part of the result is its adjoint.
defvjp(
    "np_append",
    np.append,
    _func("append"),
    lambda g, ans, arr, values, axis=None: take_part(g, (arr, values), 0, axis),
    lambda g, ans, arr, values, axis=None: take_part(g, (arr, values), 1, axis),
    linear="joint",
    complex=True,
)

# np.r_[a, b, 1:3] and np.c_[a, b] (the front end lowers the index expression to these calls,
# a slice to its constant range): each item's part of the result, in the item's shape.
defvjp(
    "np_r_",
    r_items,
    _spelled("r_items"),
    lambda g, ans, *items, argnum: np.reshape(
        g[trick_index(items, argnum, "r")], np.shape(items[argnum])
    ),
    linear="joint",
    complex=True,
)
defvjp(
    "np_c_",
    c_items,
    _spelled("c_items"),
    lambda g, ans, *items, argnum: np.reshape(
        g[trick_index(items, argnum, "c")], np.shape(items[argnum])
    ),
    linear="joint",
    complex=True,
)

# Constructors that are differentiable in their values.
defvjp(
    "np_linspace",
    np.linspace,
    _func("linspace"),
    lambda g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0: (
        unbroadcast(np.sum(g * (1.0 - linspace_weights(num, endpoint, g.ndim)), axis=0), start)
        if axis == 0 and not retstep
        else no_function_rule("np.linspace with axis != 0 or retstep=True")
    ),
    lambda g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0: (
        unbroadcast(np.sum(g * linspace_weights(num, endpoint, g.ndim), axis=0), stop)
        if axis == 0 and not retstep
        else no_function_rule("np.linspace with axis != 0 or retstep=True")
    ),
    linear="joint",
)
defvjp(
    "np_full",
    np.full,
    _func("full"),
    None,
    lambda g, ans, shape, fill_value, dtype=None: unbroadcast(g, fill_value),
    linear=(1,),
)
defvjp(
    "np_meshgrid",
    np.meshgrid,
    _func("meshgrid"),
    lambda g, ans, *xi, argnum, indexing="xy", sparse=False, copy=True: (
        np.reshape(
            np.sum(g[argnum], axis=meshgrid_axes(np.ndim(g[argnum]), argnum, indexing)),
            np.shape(xi[argnum]),
        )
        if not sparse
        else no_function_rule("np.meshgrid(sparse=True)")
    ),
    linear="joint",
)
defvjp(
    "np_select",
    np.select,
    _func("select"),
    None,
    lambda g, ans, condlist, choicelist, default=0: select_grads(g, condlist, choicelist),
    lambda g, ans, condlist, choicelist, default=0: unbroadcast(
        np.where(select_default(condlist, np.shape(g)), g, 0.0), default
    ),
    linear=(1, 2),
)


# np.vdot(a, b): the dot product of the flattened arrays (real: complex values are refused)
defvjp(
    "vdot",
    np.vdot,
    _func("vdot"),
    lambda g, ans, a, b: g * np.reshape(b, np.shape(a)),
    lambda g, ans, a, b: g * np.reshape(a, np.shape(b)),
    linear="multi",
)


# --- np.gradient -----------------------------------------------------------------------------


def _gradient_axes(ndim, axis):
    if axis is None:
        return tuple(range(ndim))
    return tuple(a % ndim for a in (axis if isinstance(axis, tuple) else (axis,)))


def gradient_adjoint(g, ndim, spacing, axis=None, edge_order=1):
    """Adjoint of np.gradient(f, *spacing, axis=axis, edge_order=edge_order) for an f of `ndim`
    axes and scalar spacings: each axis's stencil transposed, summed over the axes (g is one
    array per axis, or one array when np.gradient returns one)."""
    axes = _gradient_axes(ndim, axis)
    parts = list(g) if len(axes) > 1 else [g]
    steps = (
        [1.0] * len(axes)
        if not spacing
        else (list(spacing) * len(axes) if len(spacing) == 1 else list(spacing))
    )
    total = 0.0
    for part, ax, h in zip(parts, axes, steps):
        p = np.moveaxis(np.asarray(part, dtype=np.result_type(part, np.float32)), ax, 0)
        out = np.zeros_like(p)
        inner = p[1:-1] / (2.0 * h)
        out[2:] += inner
        out[:-2] -= inner
        if edge_order == 1:
            out[0] -= p[0] / h
            out[1] += p[0] / h
            out[-1] += p[-1] / h
            out[-2] -= p[-1] / h
        else:
            out[:3] += np.multiply.outer(np.array([-1.5, 2.0, -0.5]), p[0] / h)
            out[-3:] += np.multiply.outer(np.array([0.5, -2.0, 1.5]), p[-1] / h)
        total = total + np.moveaxis(out, 0, ax)
    return total


def gradient_of(f, spacing, axis=None, edge_order=1):
    """np.gradient(f, *spacing, axis=axis, edge_order=edge_order) (the spacings as one tuple:
    a rule template cannot spell a starred argument)."""
    return np.gradient(f, *spacing, axis=axis, edge_order=edge_order)


def gradient_spacing_case(spacing):
    """'scalar' when np.gradient's spacings are numbers (or none), else 'coordinates' (arrays:
    no rule here)."""
    return "scalar" if all(np.ndim(h) == 0 for h in spacing) else "coordinates"


defnondiff("gradient_spacing_case", gradient_spacing_case, _spelled("gradient_spacing_case"))
# np.gradient and its adjoint are linear in their first argument and each other's adjoint
defvjp(
    "gradient_of",
    gradient_of,
    _spelled("gradient_of"),
    lambda g, ans, f, spacing, axis=None, edge_order=1: gradient_adjoint(
        g, np.ndim(f), spacing, axis, edge_order
    ),
    linear=(0,),
)
defvjp(
    "gradient_adjoint",
    gradient_adjoint,
    _spelled("gradient_adjoint"),
    lambda g, ans, h, ndim, spacing, axis=None, edge_order=1: gradient_of(
        g, spacing, axis, edge_order
    ),
    linear=(0,),
)
defvjp(
    "np_gradient",
    np.gradient,
    _func("gradient"),
    lambda g, ans, f, *varargs, axis=None, edge_order=1: (
        no_function_rule("np.gradient with coordinate arrays as spacing")
        if gradient_spacing_case(varargs) != "scalar"
        else gradient_adjoint(g, np.ndim(f), varargs, axis, edge_order)
    ),
    lambda g, ans, f, *varargs, axis=None, edge_order=1, argnum=1: no_function_rule(
        "np.gradient in its spacing"
    ),
    jvps=(
        lambda t, ans, f, *varargs, axis=None, edge_order=1: (
            no_function_rule("np.gradient with coordinate arrays as spacing")
            if gradient_spacing_case(varargs) != "scalar"
            else gradient_of(t, varargs, axis, edge_order)
        ),
        lambda t, ans, f, *varargs, axis=None, edge_order=1, argnum=1: no_function_rule(
            "np.gradient in its spacing"
        ),
    ),
)


# --- NaN-ignoring reductions, ptp -----------------------------------------------------------
# (a NaN element gets a zero gradient: it does not take part, except in nanmean's slice of NaNs
# only, whose mean is 0 / 0: NaN, all of its gradient too, as torch's nansum / count gives it;
# the JVPs are the same reductions
# of the tangent with NaN where x has one; nanmax's ties are found by x == ans, never NaN)
defvjp(
    "np_nansum",
    np.nansum,
    _func("nansum"),
    lambda g, ans, x, axis=None, dtype=None, out=None, keepdims=False: np.where(
        np.isnan(x), 0.0, expand_reduced(g, x, axis, keepdims) + np.zeros_like(x)
    ),
    jvps=(
        lambda t, ans, x, axis=None, dtype=None, out=None, keepdims=False: np.nansum(
            np.where(np.isnan(x), x, t), axis=axis, keepdims=keepdims
        ),
    ),
    kind="reduction",
    torch=torch("NansumBackward0", "nansum", keep_int=True),
)
defvjp(
    "np_nanmean",
    np.nanmean,
    _func("nanmean"),
    lambda g, ans, x, axis=None, dtype=None, out=None, keepdims=False: (
        expand_reduced(g, x, axis, keepdims)
        / np.sum(np.logical_not(np.isnan(x)), axis=axis, keepdims=True)
        * np.logical_not(np.isnan(x))
    ),
    jvps=(
        lambda t, ans, x, axis=None, dtype=None, out=None, keepdims=False: np.nanmean(
            np.where(np.isnan(x), x, t), axis=axis, keepdims=keepdims
        ),
    ),
    kind="reduction",
    torch=torch("DivBackward0", "nanmean"),
)
# np.nanvar and np.nanstd: var and std of the elements that are not NaN (count - ddof the
# divisor); a NaN element gets a zero gradient, as in nanmean. A std of 0 gets a zero
# gradient, as std's rule gives it (central differences give 0 there; no 0 / 0).
defvjp(
    "np_nanvar",
    np.nanvar,
    _func("nanvar"),
    lambda g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False: (
        expand_reduced(g, x, axis, keepdims)
        * 2.0
        * np.where(np.isnan(x), 0.0, x - np.nanmean(x, axis=axis, keepdims=True))
        / (np.sum(np.logical_not(np.isnan(x)), axis=axis, keepdims=True) - ddof)
    ),
    jvps=(
        lambda t, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False: (
            np.sum(
                np.where(np.isnan(x), 0.0, 2.0 * (x - np.nanmean(x, axis=axis, keepdims=True)) * t),
                axis=axis,
                keepdims=keepdims,
            )
            / (np.sum(np.logical_not(np.isnan(x)), axis=axis, keepdims=keepdims) - ddof)
        ),
    ),
    kind="reduction",
)
defvjp(
    "np_nanstd",
    np.nanstd,
    _func("nanstd"),
    lambda g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False: (
        expand_reduced(g * (ans != 0) / np.where(ans == 0, 1.0, ans), x, axis, keepdims)
        * np.where(np.isnan(x), 0.0, x - np.nanmean(x, axis=axis, keepdims=True))
        / (np.sum(np.logical_not(np.isnan(x)), axis=axis, keepdims=True) - ddof)
    ),
    jvps=(
        lambda t, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False: (
            np.sum(
                np.where(np.isnan(x), 0.0, (x - np.nanmean(x, axis=axis, keepdims=True)) * t),
                axis=axis,
                keepdims=keepdims,
            )
            / (np.sum(np.logical_not(np.isnan(x)), axis=axis, keepdims=keepdims) - ddof)
            * (ans != 0)
            / np.where(ans == 0, 1.0, ans)
        ),
    ),
    kind="reduction",
)
defvjp(
    "np_nanmax",
    np.nanmax,
    _func("nanmax"),
    lambda g, ans, x, axis=None, out=None, keepdims=False: max_grad(g, ans, x, axis, keepdims),
    jvps=(
        lambda t, ans, x, axis=None, out=None, keepdims=False: max_jvp(t, ans, x, axis, keepdims),
    ),
    kind="reduction",
)
defvjp(
    "np_nanmin",
    np.nanmin,
    _func("nanmin"),
    lambda g, ans, x, axis=None, out=None, keepdims=False: max_grad(g, ans, x, axis, keepdims),
    jvps=(
        lambda t, ans, x, axis=None, out=None, keepdims=False: max_jvp(t, ans, x, axis, keepdims),
    ),
    kind="reduction",
)
defvjp(
    "np_ptp",
    np.ptp,
    _func("ptp"),
    lambda g, ans, x, axis=None, out=None, keepdims=False: (
        max_grad(g, np.max(x, axis=axis, keepdims=keepdims), x, axis, keepdims)
        - max_grad(g, np.min(x, axis=axis, keepdims=keepdims), x, axis, keepdims)
    ),
    jvps=(
        lambda t, ans, x, axis=None, out=None, keepdims=False: (
            max_jvp(t, np.max(x, axis=axis, keepdims=keepdims), x, axis, keepdims)
            - max_jvp(t, np.min(x, axis=axis, keepdims=keepdims), x, axis, keepdims)
        ),
    ),
    kind="reduction",
)


# --- np.interp, np.trapezoid -----------------------------------------------------------------


def _interp_points(x, xp, period):
    """x (flattened) and the sample points np.interp reads, as numpy sets them up, and the fp
    index of each sample point: with `period`, x and xp are taken modulo it, xp is sorted
    (np.argsort, as numpy does) and padded with the last point one period below and the first
    one period above."""
    xq = np.ravel(np.asarray(x, dtype=np.float64))
    xs = np.asarray(xp, dtype=np.float64)
    order = np.arange(len(xs))
    if period is not None:
        period = abs(period)
        xq, xs = xq % period, xs % period
        order = np.argsort(xs)
        xs = xs[order]
        xs = np.concatenate((xs[-1:] - period, xs, xs[:1] + period))
        order = np.concatenate((order[-1:], order, order[:1]))
    return xq, xs, order


def interp_stencil(x, xp, period=None):
    """For each x, how np.interp(x, xp, fp, period=period) reads fp: a tuple (lo, hi, start,
    width, below, above) of arrays shaped like x. Inside a segment xp[j] <= x < xp[j + 1]
    (j the last such point: repeated xp values give no zero-width segment) the value is
    fp[lo] + (x - start) / width * (fp[hi] - fp[lo]); at or beyond an end, or exactly on a
    sample point, it is fp[lo] (lo == hi, width 1), or left/right where `below`/`above`."""
    xq, xs, order = _interp_points(x, xp, period)
    n = len(xs)
    j = np.searchsorted(xs, xq, side="right") - 1
    inside = (j >= 0) & (j < n - 1)
    at = np.where(j < 0, 0, np.minimum(j, n - 1))
    nxt = np.where(inside, at + 1, at)
    width = np.where(inside, xs[nxt] - xs[at], 1.0)
    shape = np.shape(x)
    return (
        np.reshape(order[at], shape),
        np.reshape(order[nxt], shape),
        np.reshape(xs[at], shape),
        np.reshape(width, shape),
        np.reshape(xq < xs[0], shape),
        np.reshape(xq > xs[-1], shape),
    )


def interp_adjoint(g, x, xp, left=None, right=None, period=None):
    """Adjoint of np.interp(x, xp, fp, left, right, period) in fp (linear): each x's g split
    between its segment's ends, (1 - t) and t; all of it to one point at or beyond an end, and
    none where `left`/`right` gives the value there (numpy ignores them with a period)."""
    lo, hi, start, width, below, above = (np.ravel(v) for v in interp_stencil(x, xp, period))
    g = np.ravel(np.broadcast_to(g, np.shape(x)))
    t = (np.ravel(np.asarray(x, dtype=np.float64)) - start) / width
    if period is not None:
        t = (np.ravel(np.asarray(x, dtype=np.float64)) % abs(period) - start) / width
    t = np.where(lo == hi, 0.0, t)
    keep = np.ones(len(g), dtype=bool)
    if period is None and left is not None:
        keep &= ~below
    if period is None and right is not None:
        keep &= ~above
    out = np.zeros(len(xp), dtype=np.result_type(g, np.float32))
    np.add.at(out, lo, np.where(keep, g * (1.0 - t), 0.0))
    np.add.at(out, hi, np.where(keep, g * t, 0.0))
    return out


def interp_slope_adjoint(v, x, xp, period=None):
    """Adjoint of c -> (c[hi] - c[lo]) / width (`interp_stencil`'s) in c, for v shaped like x:
    d interp_adjoint / dx, and the fp part of np.interp's x derivative."""
    lo, hi, _, width, _, _ = (np.ravel(w) for w in interp_stencil(x, xp, period))
    v = np.ravel(np.broadcast_to(v, np.shape(x))) / width
    out = np.zeros(len(xp), dtype=np.result_type(v, np.float32))
    np.add.at(out, hi, v)
    np.add.at(out, lo, -v)
    return out


def trapezoid_adjoint(g, shape, x=None, dx=1.0, axis=-1):
    """Adjoint of np.trapezoid(y, x, dx, axis) in y (linear): g times each sample's weight
    (half the spacing on either side of it), along axis."""
    n = shape[axis]
    d = np.diff(x) if x is not None else np.full(n - 1, dx, dtype=float)
    w = np.zeros(n, dtype=np.result_type(d, np.float32))
    w[:-1] += 0.5 * d
    w[1:] += 0.5 * d
    along = [1] * len(shape)
    along[axis] = n
    return np.broadcast_to(np.expand_dims(g, axis) * np.reshape(w, along), shape)


defnondiff("interp_stencil", interp_stencil, _spelled("interp_stencil"))
defvjp(
    "interp_adjoint",
    interp_adjoint,
    _spelled("interp_adjoint"),
    lambda g, ans, h, x, xp, left=None, right=None, period=None: np.reshape(
        np.interp(
            x,
            xp,
            g,
            None if left is None else 0.0,
            None if right is None else 0.0,
            period,
        ),
        np.shape(h),
    ),
    # (t = (x - start) / width moves with x: h's share moves from lo to hi)
    lambda g, ans, h, x, xp, left=None, right=None, period=None: unbroadcast(
        np.reshape(h, np.shape(x))
        * (
            np.take(g, interp_stencil(x, xp, period)[1])
            - np.take(g, interp_stencil(x, xp, period)[0])
        )
        / interp_stencil(x, xp, period)[3],
        x,
    ),
    None,
    linear=(0,),
    jvps=(
        lambda t, ans, h, x, xp, left=None, right=None, period=None: interp_adjoint(
            t, x, xp, left, right, period
        ),
        lambda t, ans, h, x, xp, left=None, right=None, period=None: interp_slope_adjoint(
            np.reshape(h, np.shape(x)) * t, x, xp, period
        ),
        None,
    ),
)
defvjp(
    "interp_slope_adjoint",
    interp_slope_adjoint,
    _spelled("interp_slope_adjoint"),
    lambda g, ans, v, x, xp, period=None: np.reshape(
        (
            np.take(g, interp_stencil(x, xp, period)[1])
            - np.take(g, interp_stencil(x, xp, period)[0])
        )
        / interp_stencil(x, xp, period)[3],
        np.shape(v),
    ),
    None,
    None,
    linear=(0,),
)
defvjp(
    "trapezoid_adjoint",
    trapezoid_adjoint,
    _spelled("trapezoid_adjoint"),
    lambda g, ans, h, shape, x=None, dx=1.0, axis=-1: np.trapezoid(g, x, dx, axis),
    linear=(0,),
)
# np.polyval(p, x) = sum_i p[i] x**(n-1-i); with respect to x, the derivative polynomial's
# value (np.polyder's coefficients, p[:-1] times the powers, written with ops that have rules)
defvjp(
    "np_polyval",
    np.polyval,
    _func("polyval"),
    lambda g, ans, p, x: polyval_coefficients_adjoint(g, len(p), x),
    lambda g, ans, p, x: unbroadcast(g * np.polyval(p[:-1] * np.arange(len(p) - 1, 0, -1), x), x),
    jvps=(
        lambda t, ans, p, x: np.polyval(t, x),
        lambda t, ans, p, x: t * np.polyval(p[:-1] * np.arange(len(p) - 1, 0, -1), x),
    ),
)
defvjp(
    "polyval_coefficients_adjoint",
    polyval_coefficients_adjoint,
    _spelled("polyval_coefficients_adjoint"),
    lambda g, ans, h, n, x: unbroadcast(np.polyval(g, x), h),
    None,
    lambda g, ans, h, n, x: unbroadcast(
        h * np.polyval(g[:-1] * np.arange(len(g) - 1, 0, -1), x), x
    ),
    # (linear in its first input, not piecewise constant in x: each power's derivative)
    jvps=(
        lambda t, ans, h, n, x: polyval_coefficients_adjoint(t, n, x),
        None,
        lambda t, ans, h, n, x: np.concatenate(
            [np.arange(n - 1, 0, -1) * polyval_coefficients_adjoint(h * t, n - 1, x), np.zeros(1)]
        ),
    ),
)
# np.interp(x, xp, fp, left, right, period): piecewise linear in x (the slope of x's segment,
# 0 at or beyond an end), linear in fp (`interp_adjoint`) and in left and right (the g of the x
# below or above xp's range; numpy ignores them with a period); xp is refused.
defvjp(
    "np_interp",
    np.interp,
    _func("interp"),
    lambda g, ans, x, xp, fp, left=None, right=None, period=None: unbroadcast(
        g
        * (
            np.take(fp, interp_stencil(x, xp, period)[1])
            - np.take(fp, interp_stencil(x, xp, period)[0])
        )
        / interp_stencil(x, xp, period)[3],
        x,
    ),
    lambda g, ans, x, xp, fp, left=None, right=None, period=None: no_function_rule(
        "np.interp in xp"
    ),
    lambda g, ans, x, xp, fp, left=None, right=None, period=None: interp_adjoint(
        g, x, xp, left, right, period
    ),
    lambda g, ans, x, xp, fp, left=None, right=None, period=None: (
        0.0 * left if period is not None else np.sum(g * interp_stencil(x, xp, period)[4])
    ),
    lambda g, ans, x, xp, fp, left=None, right=None, period=None: (
        0.0 * right if period is not None else np.sum(g * interp_stencil(x, xp, period)[5])
    ),
    jvps=(
        lambda t, ans, x, xp, fp, left=None, right=None, period=None: (
            t
            * (
                np.take(fp, interp_stencil(x, xp, period)[1])
                - np.take(fp, interp_stencil(x, xp, period)[0])
            )
            / interp_stencil(x, xp, period)[3]
        ),
        lambda t, ans, x, xp, fp, left=None, right=None, period=None: no_function_rule(
            "np.interp in xp"
        ),
        lambda t, ans, x, xp, fp, left=None, right=None, period=None: np.interp(
            x, xp, t, None if left is None else 0.0, None if right is None else 0.0, period
        ),
        lambda t, ans, x, xp, fp, left=None, right=None, period=None: (
            0.0 * ans if period is not None else t * interp_stencil(x, xp, period)[4]
        ),
        lambda t, ans, x, xp, fp, left=None, right=None, period=None: (
            0.0 * ans if period is not None else t * interp_stencil(x, xp, period)[5]
        ),
    ),
)
defvjp(
    "np_trapezoid",
    np.trapezoid,
    _func("trapezoid"),
    lambda g, ans, y, x=None, dx=1.0, axis=-1: (
        trapezoid_adjoint(g, np.shape(y), x, dx, axis)
        if x is None or np.ndim(x) == 1
        else no_function_rule("np.trapezoid with an x of more than one dimension")
    ),
    lambda g, ans, y, x=None, dx=1.0, axis=-1: no_function_rule(
        "np.trapezoid in its sample points x"
    ),
    jvps=(
        lambda t, ans, y, x=None, dx=1.0, axis=-1: np.trapezoid(t, x, dx, axis),
        lambda t, ans, y, x=None, dx=1.0, axis=-1: no_function_rule(
            "np.trapezoid in its sample points x"
        ),
    ),
)


# --- np.convolve, np.correlate (1-d) ----------------------------------------------------------


def convolve_frame(n1, n2, mode):
    """np.pad widths putting a `mode` result of np.convolve/np.correlate of lengths n1 and n2
    back in the full result's frame (numpy keeps the middle: 'same' max(n1, n2) long)."""
    full = n1 + n2 - 1
    out = {"full": full, "same": max(n1, n2), "valid": abs(n1 - n2) + 1}[mode]
    start = (full - out) // 2
    return ((start, full - out - start),)


defnondiff("convolve_frame", convolve_frame, _spelled("convolve_frame"))
# y = convolve(a, v): abar = correlate(G, v, 'valid'), vbar = correlate(G, a, 'valid'), G the
# adjoint padded to the full frame; correlate(a, v) is convolve(a, v[::-1])
defvjp(
    "np_convolve",
    np.convolve,
    _func("convolve"),
    lambda g, ans, a, v, mode="full": np.correlate(
        np.pad(g, convolve_frame(np.size(a), np.size(v), mode)), v, "valid"
    ),
    lambda g, ans, a, v, mode="full": np.correlate(
        np.pad(g, convolve_frame(np.size(a), np.size(v), mode)), a, "valid"
    ),
    linear="multi",
)
defvjp(
    "np_correlate",
    np.correlate,
    _func("correlate"),
    lambda g, ans, a, v, mode="valid": np.convolve(
        np.pad(g, convolve_frame(np.size(a), np.size(v), mode)), v, "valid"
    ),
    lambda g, ans, a, v, mode="valid": np.flip(
        np.correlate(np.pad(g, convolve_frame(np.size(a), np.size(v), mode)), a, "valid")
    ),
    linear="multi",
)


# Example inputs for the registry's test grid (ops/examples.py).
_CONDITIONS = [np.array([True, False, False, True]), np.array([False, True, False, False])]
_XP = np.array([0.0, 0.5, 1.5, 2.0, 3.5])
EXAMPLES = {
    "np_polyval": [ex(arg(4), arg(3, 2)), ex(arg(1), arg(5)), ex(arg(3), arg())],
    "np_fmax": [ex(arg(3, 4), arg(4)), ex(arg(3), arg(domain="normal", py=True))],
    "np_fmin": [ex(arg(3, 4), arg(4)), ex(arg(3), arg(domain="normal", py=True))],
    "np_logaddexp2": [ex(arg(3, 4), arg(4))],
    **{
        _name: [ex(arg(3, 4)), ex(arg())]
        for _name in ("np_deg2rad", "np_radians", "np_rad2deg", "np_degrees")
    },
    "np_mod": [ex(arg(3, 4, domain="off_integers"), arg(4, domain="large"))],
    "np_fmod": [ex(arg(3, 4, domain="large"), arg(4, domain="above_one"))],
    "np_nan_to_num": [ex(arg(3, 4)), ex(arg(5), nan=1.0)],
    "np_take_along_axis": [
        ex(arg(3, 4), np.array([[0, 3], [2, 2], [1, 0]]), axis=1),
        ex(arg(3, 4), np.array([[2, 0, 1, 1]]), axis=0),
    ],
    "np_sort": [ex(arg(3, 4)), ex(arg(3, 4), axis=0), ex(arg(3, 4), axis=None)],
    "np_partition": [ex(arg(3, 5), 2), ex(arg(4, 3), 1, axis=0)],
    "np_rollaxis": [ex(arg(2, 3, 4), 2), ex(arg(2, 3, 4), 0, 2)],
    "np_diff": [
        ex(arg(3, 4)),
        ex(arg(3, 4), axis=0),
        ex(arg(5), n=2),
        ex(arg(5), prepend=0.0, append=1.5),
        ex(arg(6), n=3, prepend=0.5),
        ex(arg(3, 4), n=2, axis=0, prepend=arg(2, 4), append=arg(1, 4)),
    ],
    # (weighted: tests/compiler/ops/test_numpy_functions.py, with weights away from a zero sum)
    "np_average": [ex(arg(7)), ex(arg(3, 4), axis=0), ex(arg(3, 4), axis=1, keepdims=True)],
    "np_median": [ex(arg(7)), ex(arg(3, 4), axis=0), ex(arg(3, 4), axis=1, keepdims=True)],
    "np_quantile": [ex(arg(7), 0.3), ex(arg(3, 4), [0.2, 0.9], axis=1)],
    "np_percentile": [ex(arg(3, 4), 60.0, axis=0)],
    "np_diagonal": [ex(arg(3, 4)), ex(arg(3, 4), 1), ex(arg(2, 3, 4), 0, 1, 2)],
    "np_trace": [ex(arg(4, 4)), ex(arg(3, 4), -1), ex(arg(2, 3, 3), 0, 1, 2)],
    "np_diag": [ex(arg(4)), ex(arg(3, 4)), ex(arg(3), 1), ex(arg(4, 4), -1)],
    "np_kron": [
        ex(arg(2, 3), arg(3, 2)),
        ex(arg(3), arg(2)),
        ex(arg(2, 1, 3), arg(2, 2)),
        ex(arg(2), arg(3, 2, 2)),
    ],
    "kron_grad": [
        ex(arg(2, 2, 6), arg(2, 1, 3), arg(2, 2), 0),
        ex(arg(2, 2, 6), arg(2, 1, 3), arg(2, 2), 1),
    ],
    "np_cross": [
        ex(arg(4, 3), arg(4, 3)),
        ex(arg(3), arg(3)),
        ex(arg(3, 2), arg(3, 2), axis=0),
        ex(arg(3, 4), arg(4, 3), axisa=0, axisc=0),
        ex(arg(2, 3, 4), arg(3), axisa=1, axisc=-2),
    ],
    "np_r_": [ex(arg(3, 2), arg(2, 2)), ex(arg(3), arg(), np.arange(2.0)), ex(arg(2, 3))],
    "np_c_": [ex(arg(3, 2), arg(3)), ex(arg(3), arg(3), np.arange(3.0)), ex(arg(), arg())],
    "np_append": [ex(arg(3, 4), arg(2)), ex(arg(3, 4), arg(1, 4), axis=0), ex(arg(3), arg())],
    "np_pad": [
        ex(arg(3, 4), 1),
        ex(arg(3, 4), ((1, 0), (2, 1))),
        ex(arg(5), (1, 2), constant_values=0.5),
    ],
    "np_repeat": [ex(arg(3, 4), 2), ex(arg(3, 4), 2, axis=0), ex(arg(3), [1, 0, 2])],
    "np_rot90": [ex(arg(3, 4)), ex(arg(3, 4), 2), ex(arg(2, 3, 4), 1, (1, 2))],
    "np_fliplr": [ex(arg(3, 4))],
    "np_flipud": [ex(arg(3, 4))],
    "np_atleast_1d": [ex(arg()), ex(arg(3))],
    "np_atleast_2d": [ex(arg(3)), ex(arg(3, 4))],
    "np_atleast_3d": [ex(arg(3)), ex(arg(3, 4))],
    "np_split": [ex(arg(4, 3), 2), ex(arg(3, 4), [1, 3], axis=1)],
    "np_array_split": [ex(arg(5, 3), 2), ex(arg(3, 5), 3, axis=1)],
    "np_hsplit": [ex(arg(3, 4), 2)],
    "np_vsplit": [ex(arg(4, 3), [1])],
    "np_dsplit": [ex(arg(2, 3, 4), 2)],
    **{
        _name: [ex([arg(3, 2), arg(3, 2)]), ex([arg(3), arg(3)])]
        for _name in (
            "np_hstack",
            "np_vstack",
            "np_row_stack",
            "np_dstack",
            "np_column_stack",
            # (the grid passes a list display, which reaches the entries above: the lists
            # built at run time are tested in tests/compiler/ops/test_written_for_autograd.py)
            "np_hstack_list",
            "np_vstack_list",
            "np_row_stack_list",
            "np_dstack_list",
            "np_column_stack_list",
        )
    },
    "unstack_parts": [
        ex(arg(3, 4), [arg(3, 1), arg(3, 3)], "h"),
        ex(arg(4, 3), [arg(3), arg(3, 3)], "v"),
    ],
    "stack_parts": [ex([arg(2, 3), arg(1, 3)], "v"), ex([arg(3), arg(3)], "column")],
    "np_linspace": [
        ex(arg(), arg(), 5),
        ex(arg(domain="normal", py=True), 3.4, 4, endpoint=False),
        ex(arg(3), arg(3), 4),
    ],
    "np_full": [ex((3, 4), arg()), ex((2, 3), arg(3))],
    "np_meshgrid": [ex(arg(3), arg(4)), ex(arg(3), arg(2), indexing="ij")],
    "np_select": [ex(_CONDITIONS, [arg(4), arg(4)]), ex(_CONDITIONS, [arg(4), arg(4)], arg())],
    "vdot": [ex(arg(3, 4), arg(3, 4)), ex(arg(5), arg(5))],
    "item": [ex(arg()), ex(arg(1, 1))],
    "np_gradient": [ex(arg(5)), ex(arg(3, 4), 0.5), ex(arg(4, 5), axis=1, edge_order=2)],
    "np_nansum": [ex(arg(3, 4)), ex(arg(3, 4), axis=0, keepdims=True)],
    "np_nanmean": [ex(arg(3, 4)), ex(arg(3, 4), axis=1)],
    "np_nanvar": [
        ex(arg(3, 4)),
        ex(arg(3, 4), axis=1, ddof=1),
        ex(arg(2, 3, 4), axis=(0, 2), keepdims=True),
    ],
    "np_nanstd": [
        ex(arg(3, 4)),
        ex(arg(3, 4), axis=0, ddof=1, keepdims=True),
        ex(arg(2, 3, 4), axis=-1),
    ],
    "np_nanmax": [ex(arg(3, 4)), ex(arg(3, 4), axis=0)],
    "np_nanmin": [ex(arg(3, 4)), ex(arg(3, 4), axis=1, keepdims=True)],
    "np_ptp": [ex(arg(3, 4)), ex(arg(3, 4), axis=0)],
    "np_interp": [
        ex(arg(6, domain="prob"), _XP, arg(5)),
        ex(arg(4, domain="positive"), _XP, arg(5)),
        ex(arg(6, domain="positive"), _XP, arg(5), left=-1.0, right=2.0),
        ex(arg(6, domain="positive"), _XP, arg(5), period=1.25),
    ],
    "np_trapezoid": [ex(arg(3, 5)), ex(arg(5), dx=0.3), ex(arg(4, 3), axis=0)],
    "np_convolve": [ex(arg(5), arg(3)), ex(arg(5), arg(3), "same"), ex(arg(3), arg(5), "valid")],
    "np_correlate": [ex(arg(5), arg(3)), ex(arg(5), arg(3), "full")],
}


# --- more of numpy: pad's mirroring modes, nancumsum/nancumprod, np.choose, ufunc.outer, ---
# --- np.sum/np.mean with where= ----------------------------------------------------------


# np.pad's modes edge, reflect, symmetric and wrap gather: each padded element is a copy of
# one element of x, a linear map whose adjoint adds each element of g back into its source
def pad_sources(shape, pad_width, mode):
    """For np.pad(x, pad_width, mode) of an x of `shape`: the flat index into x of each
    element of the result (np.pad of x's own flat indices, mirrored as numpy mirrors x)."""
    return np.pad(np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape), pad_width, mode)


def unpad_gather(h, shape, pad_width, mode):
    """Adjoint of np.pad(x, pad_width, mode) for a gathering mode: each element of h added
    into the element of x it copies (np.add.at: an edge element is copied many times)."""
    out = np.zeros(int(np.prod(shape)), dtype=np.result_type(h, np.float32))
    np.add.at(out, np.ravel(pad_sources(shape, pad_width, mode)), np.ravel(h))
    return np.reshape(out, shape)


defvjp(
    "unpad_gather",
    unpad_gather,
    _spelled("unpad_gather"),
    lambda g, ans, h, shape, pad_width, mode: np.pad(g, pad_width, mode),
    None,
    None,
    None,
    linear=(0,),
    complex=True,
)


# np.nancumsum(a) is np.cumsum of a with its nans read as 0 and np.nancumprod(a) np.cumprod
# of a with them read as 1: a nan's gradient is 0 (as torch's nansum gives it)
defvjp(
    "np_nancumsum",
    np.nancumsum,
    _func("nancumsum"),
    lambda g, ans, a, axis=None: np.where(
        np.isnan(a),
        0.0,
        (
            np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)
            if axis is not None
            else np.reshape(np.flip(np.cumsum(np.flip(g))), np.shape(a))
        ),
    ),
    jvps=(lambda t, ans, a, axis=None: np.cumsum(np.where(np.isnan(a), 0.0, t), axis=axis),),
)
defvjp(
    "np_nancumprod",
    np.nancumprod,
    _func("nancumprod"),
    lambda g, ans, a, axis=None: np.where(
        np.isnan(a), 0.0, cumprod_grad(g, ans, np.where(np.isnan(a), 1.0, a), axis)
    ),
    jvps=(
        lambda t, ans, a, axis=None: cumprod_jvp(
            np.where(np.isnan(a), 0.0, t), ans, np.where(np.isnan(a), 1.0, a), axis
        ),
    ),
)


def chosen_index(a, n, mode):
    """The choice np.choose(a, choices, mode=mode) takes at each element (of n choices)."""
    if mode == "clip":
        return np.clip(a, 0, n - 1)
    if mode == "wrap":
        return np.mod(a, n)
    return np.asarray(a)


def choose_grads(h, a, choices, mode="raise"):
    """Adjoints of np.choose(a, choices)'s choices: h where a picks the choice, summed over
    the axes the choice was broadcast along."""
    index = chosen_index(a, len(choices), mode)
    return [unbroadcast(np.where(index == i, h, 0.0), c) for i, c in enumerate(choices)]


defvjp(
    "np_choose",
    np.choose,
    _func("choose"),
    None,
    lambda g, ans, a, choices, mode="raise": choose_grads(g, a, choices, mode),
    linear=(1,),
)
defvjp(
    "choose_grads",
    choose_grads,
    _spelled("choose_grads"),
    lambda g, ans, h, a, choices, mode="raise": unbroadcast(
        np.choose(chosen_index(a, len(choices), mode), g), h
    ),
    None,
    None,
    linear=(0,),
)
defnondiff("chosen_index", chosen_index, _spelled("chosen_index"), params=("a", "n", "mode"))


# ufunc.outer: np.multiply.outer(a, b)[i..., j...] = a[i...] * b[j...] (the same for add and
# subtract); generated code calls these functions, and both front ends lower ufunc.outer to them
def multiply_outer(a, b):
    return np.multiply.outer(a, b)


def add_outer(a, b):
    return np.add.outer(a, b)


def subtract_outer(a, b):
    return np.subtract.outer(a, b)


def sum_leading(g, x):
    """g (of shape x.shape + rest) summed over its trailing axes: x's adjoint in an outer sum."""
    return np.sum(np.reshape(g, np.shape(x) + (-1,)), axis=-1)


def sum_trailing(g, x):
    """g (of shape rest + x.shape) summed over its leading axes: x's adjoint in an outer sum."""
    return np.sum(np.reshape(g, (-1,) + np.shape(x)), axis=0)


defvjp(
    "multiply_outer",
    multiply_outer,
    _spelled("multiply_outer"),
    lambda g, ans, a, b: np.tensordot(g, b, axes=np.ndim(b)),
    lambda g, ans, a, b: np.tensordot(a, g, axes=np.ndim(a)),
    linear="multi",
)
defvjp(
    "add_outer",
    add_outer,
    _spelled("add_outer"),
    lambda g, ans, a, b: sum_leading(g, a),
    lambda g, ans, a, b: sum_trailing(g, b),
    linear="joint",
)
defvjp(
    "subtract_outer",
    subtract_outer,
    _spelled("subtract_outer"),
    lambda g, ans, a, b: sum_leading(g, a),
    lambda g, ans, a, b: -sum_trailing(g, b),
    linear="joint",
)
defvjp(
    "sum_leading",
    sum_leading,
    _spelled("sum_leading"),
    lambda g, ans, h, x: np.broadcast_to(
        np.reshape(g, np.shape(g) + (1,) * (np.ndim(h) - np.ndim(g))), np.shape(h)
    ),
    None,
    linear=(0,),
)
defvjp(
    "sum_trailing",
    sum_trailing,
    _spelled("sum_trailing"),
    lambda g, ans, h, x: np.broadcast_to(g, np.shape(h)),
    None,
    linear=(0,),
)


# np.sum(x, where=m) and np.mean(x, where=m) (and x.sum(where=m)): front ends lower a call
# with where= to these (`where_variant`), whose VJPs are sum's and mean's masked by m
def masked_sum(a, axis=None, keepdims=False, where=True):
    return np.sum(a, axis=axis, keepdims=keepdims, where=where)


def masked_mean(a, axis=None, keepdims=False, where=True):
    return np.mean(a, axis=axis, keepdims=keepdims, where=where)


def masked_count(a, where, axis, keepdims):
    """How many elements np.mean(a, axis, where=where) averages over (shaped like its result)."""
    return np.sum(np.broadcast_to(where, np.shape(a)), axis=axis, keepdims=keepdims)


defvjp(
    "masked_sum",
    masked_sum,
    _spelled("masked_sum"),
    lambda g, ans, a, axis=None, keepdims=False, where=True: np.where(
        where, expand_reduced(g, a, axis, keepdims) + np.zeros_like(a), 0.0
    ),
    linear=(0,),
)
defvjp(
    "masked_mean",
    masked_mean,
    _spelled("masked_mean"),
    lambda g, ans, a, axis=None, keepdims=False, where=True: np.where(
        where,
        expand_reduced(g / masked_count(a, where, axis, keepdims), a, axis, keepdims)
        + np.zeros_like(a),
        0.0,
    ),
    linear=(0,),
)
defnondiff(
    "masked_count",
    masked_count,
    _spelled("masked_count"),
    params=("a", "where", "axis", "keepdims"),
)


def where_variant(name):
    """The entry a front end lowers a call of the entry `name` with where= to, or None."""
    return {"sum": "masked_sum", "mean": "masked_mean"}.get(name)


_MASK = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, True]])
EXAMPLES.update(
    {
        "unpad_gather": [ex(arg(3, 8), (3, 4), ((0, 0), (2, 2)), "reflect")],
        "np_nancumsum": [ex(arg(3, 4)), ex(arg(3, 4), axis=1)],
        "np_nancumprod": [ex(arg(3, 4)), ex(arg(3, 4), axis=0)],
        "np_choose": [
            ex(np.array([[0, 1, 2, 1], [2, 0, 0, 1], [1, 1, 2, 0]]), [arg(3, 4), arg(4), arg()]),
            ex(np.array([0, 3, -1, 1]), [arg(4), arg(4)], mode="wrap"),
        ],
        "choose_grads": [ex(arg(3, 4), np.array([0, 1, 1, 0]), [arg(3, 4), arg(4)])],
        "multiply_outer": [ex(arg(3), arg(2, 2)), ex(arg(2, 3), arg())],
        "add_outer": [ex(arg(3), arg(2, 2)), ex(arg(2, 3), arg(4))],
        "subtract_outer": [ex(arg(3), arg(2, 2)), ex(arg(), arg(4))],
        "sum_leading": [ex(arg(3, 2, 2), arg(3))],
        "sum_trailing": [ex(arg(3, 2, 2), arg(2, 2))],
        "masked_sum": [ex(arg(3, 4), where=_MASK), ex(arg(3, 4), 0, True, where=_MASK[0])],
        "masked_mean": [ex(arg(3, 4), where=_MASK), ex(arg(3, 4), axis=1, where=_MASK)],
    }
)


# --- more ufunc methods: maximum/minimum.accumulate, add.reduceat, logaddexp.reduce -------
# (np.logaddexp.accumulate is torch's logcumsumexp, reductions.logcumsumexp)


def maximum_accumulate(x, axis=0, dtype=None, out=None):
    """np.maximum.accumulate(x, axis): the running maximum along axis."""
    return np.maximum.accumulate(x, axis=axis, dtype=dtype, out=out)


def minimum_accumulate(x, axis=0, dtype=None, out=None):
    """np.minimum.accumulate(x, axis): the running minimum along axis."""
    return np.minimum.accumulate(x, axis=axis, dtype=dtype, out=out)


def record_index(ans, axis):
    """For ans, a running maximum or minimum along axis (np.maximum.accumulate): the index
    along axis of the element each of its values copies. That is the first element that
    reached the running value: a later element equal to it (a tie) does not take it over
    (numpy's maximum keeps its first argument on ties; np.argmax picks the first too), and a
    NaN, which numpy carries on, keeps the gradient at the NaN."""
    moved = np.moveaxis(np.asarray(ans), axis, -1)
    changed = np.ones(moved.shape, dtype=bool)
    both_nan = np.isnan(moved[..., 1:]) & np.isnan(moved[..., :-1])
    changed[..., 1:] = (moved[..., 1:] != moved[..., :-1]) & ~both_nan
    index = np.where(changed, np.arange(moved.shape[-1]), 0)
    return np.moveaxis(np.maximum.accumulate(index, axis=-1), -1, axis)


# each result element is a copy of one element of x (`record_index`): a selection, whose
# adjoint adds g back at the copied element (scatter_along) and whose tangent is the copy of t
for _name, _fn in (
    ("maximum_accumulate", maximum_accumulate),
    ("minimum_accumulate", minimum_accumulate),
):
    defvjp(
        _name,
        _fn,
        _spelled(_name),
        lambda g, ans, x, axis=0, dtype=None, out=None: scatter_along(
            g, record_index(ans, axis), axis, np.shape(x)[axis]
        ),
        jvps=(
            lambda t, ans, x, axis=0, dtype=None, out=None: np.take_along_axis(
                t, record_index(ans, axis), axis=axis
            ),
        ),
    )
defnondiff("record_index", record_index, _spelled("record_index"), params=("ans", "axis"))


def add_reduceat(x, indices, axis=0, dtype=None, out=None):
    """np.add.reduceat(x, indices, axis): sums of x over the slices indices[i]:indices[i+1]
    along axis (x[indices[i]] alone where indices[i] >= indices[i+1]; the last to the end)."""
    return np.add.reduceat(x, indices, axis=axis, dtype=dtype, out=out)


def reduceat_matrix(indices, n, like):
    """The (len(indices), n) matrix of 0s and 1s whose row i picks the elements of x that
    np.add.reduceat(x, indices)'s i-th sum adds (of an axis of n elements), in like's dtype."""
    start = np.asarray(indices, dtype=np.intp)
    stop = np.append(start[1:], n)
    j = np.arange(n)
    rows = (j >= start[:, None]) & (j < stop[:, None])
    rows = np.where((start >= stop)[:, None], j == start[:, None], rows)
    return rows.astype(np.result_type(like, np.float32))


# linear: the adjoint of the sums is each sum's g sent back to the elements it adds (the
# matrix's transpose along axis)
defvjp(
    "add_reduceat",
    add_reduceat,
    _spelled("add_reduceat"),
    lambda g, ans, x, indices, axis=0, dtype=None, out=None: np.moveaxis(
        np.tensordot(
            reduceat_matrix(indices, np.shape(x)[axis], g), np.moveaxis(g, axis, 0), axes=(0, 0)
        ),
        0,
        axis,
    ),
    None,
    linear=(0,),
)
defnondiff(
    "reduceat_matrix", reduceat_matrix, _spelled("reduceat_matrix"), params=("indices", "n", "like")
)


def logaddexp_reduce(x, axis=0, dtype=None, out=None, keepdims=False):
    """np.logaddexp.reduce(x, axis): log(sum(exp(x))) along axis, without overflow."""
    return np.logaddexp.reduce(x, axis=axis, dtype=dtype, out=out, keepdims=keepdims)


# d ans / d x = exp(x - ans): softmax along the axis
defvjp(
    "logaddexp_reduce",
    logaddexp_reduce,
    _spelled("logaddexp_reduce"),
    lambda g, ans, x, axis=0, dtype=None, out=None, keepdims=False: (
        expand_reduced(g, x, axis, keepdims) * np.exp(x - expand_reduced(ans, x, axis, keepdims))
    ),
    jvps=(
        lambda t, ans, x, axis=0, dtype=None, out=None, keepdims=False: np.sum(
            t * np.exp(x - expand_reduced(ans, x, axis, keepdims)), axis=axis, keepdims=keepdims
        ),
    ),
    kind="reduction",
)
EXAMPLES.update(
    {
        "maximum_accumulate": [ex(arg(3, 4)), ex(arg(3, 4), axis=1), ex(arg(2, 3, 4), axis=-1)],
        "minimum_accumulate": [ex(arg(3, 4)), ex(arg(3, 4), axis=1)],
        "add_reduceat": [
            ex(arg(6), np.array([0, 2, 5])),
            ex(arg(3, 6), np.array([1, 4, 2, 3]), axis=1),
            ex(arg(5, 2), np.array([0, 0, 3])),
        ],
        "logaddexp_reduce": [
            ex(arg(3, 4)),
            ex(arg(3, 4), axis=1, keepdims=True),
            ex(arg(2, 3, 4), axis=None),
        ],
    }
)


def ufunc_method_function(ufunc, method):
    """The numpy function (or function of ours above) that `ufunc.method` is, for the ufunc
    methods that have one: add/multiply/maximum/minimum/logaddexp.reduce (np.sum, np.prod,
    np.max, np.min, logaddexp_reduce), add/multiply/maximum/minimum/logaddexp.accumulate
    (np.cumsum, np.cumprod, maximum_accumulate, minimum_accumulate, logcumsumexp),
    add.reduceat (add_reduceat), add/subtract/multiply.outer.
    reduce and accumulate take axis=0 where the call gives none (np.sum's default is None):
    `ufunc_method_axis`. None for any other."""
    return _UFUNC_METHODS.get(method, {}).get(ufunc)


# (numpy's functions read at import: a trace replaces some of numpy's names while it runs)
_UFUNC_METHODS = {
    "reduce": {
        np.add: np.sum,
        np.multiply: np.prod,
        np.maximum: np.max,
        np.minimum: np.min,
        np.logaddexp: logaddexp_reduce,
    },
    "accumulate": {
        np.add: np.cumsum,
        np.multiply: np.cumprod,
        np.maximum: maximum_accumulate,
        np.minimum: minimum_accumulate,
        np.logaddexp: logcumsumexp,
    },
    "reduceat": {np.add: add_reduceat},
    "outer": {np.add: add_outer, np.subtract: subtract_outer, np.multiply: multiply_outer},
}


def ufunc_method_axis(method):
    """The axis ufunc.reduce and ufunc.accumulate work along where the call names none (0),
    or None where the method takes no axis."""
    return 0 if method in ("reduce", "accumulate") else None


# np.multiply.at(x, index, values): x[i] times every value whose index names i (a repeated
# index multiplies each time). Its derivative in a value v_k is x[i] times the product of
# the other values at i: computed by products of the others (no division: exact where a value
# is 0). Front ends lower the call as an update in place of x, as np.add.at's.
def multiply_at(x, index, values):
    """`np.multiply.at(x, index, values)` without changing x."""
    out = x.copy()
    np.multiply.at(out, index, values)
    return out


def _products_before(groups, v):
    """For v sorted by group (equal groups adjacent): each element's product of the elements
    before it in its group (1 for the first), by a scan that doubles its reach each step."""
    scan = v.copy()
    reach = 1
    while reach < len(v):
        same = groups[reach:] == groups[:-reach]
        scan[reach:] = np.where(same, scan[reach:] * scan[:-reach], scan[reach:])
        reach *= 2
    before = np.ones_like(v)
    before[1:] = np.where(groups[1:] == groups[:-1], scan[:-1], 1)
    return before


def multiply_at_partials(x, index, values):
    """d multiply_at(x, index, values)[index_k] / d values_k for each value (broadcast to the
    shape of x[index]): x there times the product of the other values with the same index."""
    targets = np.reshape(np.arange(np.size(x)), np.shape(x))[index]
    flat = np.ravel(targets)
    v = np.ravel(np.broadcast_to(values, np.shape(targets))).astype(np.result_type(x, values))
    order = np.argsort(flat, kind="stable")
    groups, ordered = flat[order], v[order]
    others = np.empty_like(ordered)
    others[order] = (
        _products_before(groups, ordered) * _products_before(groups[::-1], ordered[::-1])[::-1]
    )
    return np.reshape(others * np.ravel(x)[flat], np.shape(targets))


defvjp(
    "multiply_at",
    multiply_at,
    _spelled("multiply_at"),
    lambda g, ans, x, index, values: g * multiply_at(np.ones_like(x), index, values),
    None,
    lambda g, ans, x, index, values: unbroadcast(
        g[index] * multiply_at_partials(x, index, values), values
    ),
    jvps=(
        lambda t, ans, x, index, values: multiply_at(t, index, values),
        None,
        lambda t, ans, x, index, values: add_at(
            np.zeros_like(ans), index, t * multiply_at_partials(x, index, values)
        ),
    ),
)
# (its second derivative in the values is not written: differentiating it is refused)
defprimitive("multiply_at_partials", multiply_at_partials, _spelled("multiply_at_partials"))


def ufunc_at_entry(ufunc):
    """The entry `ufunc.at(x, index, values)` is lowered to (an update in place of x), or None."""
    return {np.add: "add_at", np.subtract: "subtract_at", np.multiply: "multiply_at"}.get(ufunc)


EXAMPLES["multiply_at"] = [ex(arg(4), np.array([0, 2, 3]), arg(3))]


# numpy's calls that write into their first argument and have no rule: the source front end
# refuses them where a gradient reaches one (errors.WritingCallError), and the trace records
# each as a store (compiler/trace/stores.py)
WRITING_CALLS = frozenset({np.copyto, np.fill_diagonal, np.put, np.putmask, np.place})


def piecewise_by_masks(x, condlist, funclist, *args, **kw):
    """np.piecewise(x, condlist, funclist, *args, **kw) written with numpy's indexing, as
    numpy computes it (each function called on the elements its condition picks, a later
    condition overwriting an earlier; one function more than conditions: the otherwise). A
    trace runs this on its traced values (no rule: the functions are the user's code)."""
    # (numpy's reading: one condition unless condlist's items are lists or arrays; the rows
    # of a 2-d mask are conditions)
    if np.isscalar(condlist) or (
        np.ndim(x) != 0 and not isinstance(condlist[0], list) and np.ndim(condlist[0]) == 0
    ):
        conds = [condlist]
    else:
        conds = list(condlist)
    conds = [np.not_equal(cond, 0) for cond in conds]  # (numpy reads each as booleans)
    if len(funclist) == len(conds) + 1:
        taken = conds[0]
        for cond in conds[1:]:
            taken = np.logical_or(taken, cond)
        conds.append(np.logical_not(taken))
    elif len(funclist) != len(conds):
        raise ValueError(
            f"with {len(conds)} condition(s), either {len(conds)} or {len(conds) + 1} "
            "functions are expected"
        )
    y = np.zeros_like(x)
    for cond, func in zip(conds, funclist):
        if not callable(func):
            y[cond] = func
        else:
            picked = x[cond]
            if np.size(picked) > 0:
                y[cond] = func(picked, *args, **kw)
    return y


# --- np.heaviside: torch has no derivative of it ------------------------------------------------
# (piecewise constant in x, a selection in `values`; torch's backward raises, and so does this
# rule's, when the gradient is made: an error, never a gradient torch would not give)
defvjp(
    "np_heaviside",
    np.heaviside,
    _func("heaviside"),
    lambda g, ans, x, values: no_function_rule("heaviside (torch has none either)"),
    lambda g, ans, x, values: no_function_rule("heaviside (torch has none either)"),
    kind="elementwise",
    torch=torch("HeavisideBackward0", "heaviside"),
)
