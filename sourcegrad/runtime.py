"""The small runtime that generated gradients and the eager engine share.

Generated code imports its array library and, at most, these helpers. Each one
is written with array methods and `numpy` functions that dispatch through
NEP-18 (`__array_function__`), so the same helper serves numpy and CuPy arrays.
Every helper is also a primitive in the rule table, so generated code can be
differentiated again.

Imports: numpy and math only (and cupy, lazily, for a CuPy array). This module is the bottom
layer: generated code imports it, and it imports nothing of sourcegrad; what needs
the rule table (`vjp_at_run_time`) lives in `rules`.

Why one module: it is what generated code imports (`from sourcegrad import runtime`), one
name for every helper the printed gradients call; it imports nothing else of sourcegrad.
"""

from __future__ import annotations

import math
import operator
import string

import numpy as np


def unbroadcast(g, x):
    """Undo broadcasting: reduce (or expand) the adjoint `g` to the shape of `x`.

    This is the one place where broadcasting is undone. Dimensions that the
    forward operation added in front are summed away; dimensions where `x` had
    size 1 are summed with keepdims. A `g` smaller than `x` (a scalar seed, say)
    is broadcast up, so the result always has exactly `x`'s shape.
    """
    shape = np.shape(x)
    g_shape = np.shape(g)
    if g_shape == shape:
        if not shape and type(g) is np.ndarray and not isinstance(x, np.ndarray):
            # a Python number's adjoint is a number: the generated code updates it as one
            # (`dx += part`), which a 0-d array (a read-only broadcast view) would refuse
            return g[()]
        return g
    extra = len(g_shape) - len(shape)
    if extra > 0:
        g = g.sum(axis=tuple(range(extra)))
        g_shape = g.shape
    if extra >= 0:
        axes = tuple(i for i, n in enumerate(shape) if n == 1 and g_shape[i] != 1)
        if axes:
            g = g.sum(axis=axes, keepdims=True)
    if np.shape(g) != shape:
        g = np.broadcast_to(g, shape)
    return g


def unindex(g, x, index):
    """Adjoint of `x[index]`: zeros shaped like `x` with `g` added at `index`.

    Integer-array indices may repeat an element; `np.add.at` accumulates each
    repetition, where plain assignment would keep only the last one. For a list
    (or tuple) the adjoint is a list.
    """
    if isinstance(x, (list, tuple)):
        return unindex_list(g, x, index)
    out = np.zeros_like(x)
    if _has_array_index(index):
        if not _add_rows(out, index, g):
            # ufunc.at does not dispatch a tuple index to CuPy: call the array's own module
            array_module(out).add.at(out, index, g)
    else:
        out[index] = g
    return out


def _add_rows(out, index, g) -> bool:
    """`np.add.at(out, index, g)` into a zero `out` where `index` picks whole rows,
    `(rows,)` (an embedding's gradient: `weight[tokens]`), as one `np.bincount` over the
    flat positions (summed in float64): np.add.at's loop over rows is ~5x slower at an
    embedding's sizes. Returns False, changing nothing, for any other index, for integer or
    complex values, for a row out of range (np.add.at raises), for arrays other than numpy's,
    and where the float64 sums would take
    much more memory than `g` (a large vocabulary, a few tokens)."""
    rows = index[0] if isinstance(index, tuple) and len(index) == 1 else index
    if (
        type(out) is not np.ndarray
        or type(g) is not np.ndarray
        or type(rows) is not np.ndarray
        or rows.dtype.kind not in "iu"
        or out.dtype.kind != "f"
        or g.dtype.kind != "f"
        or out.ndim < 2
        or g.shape != rows.shape + out.shape[1:]
        or out.size > max(4 * g.size, 1 << 16)
    ):
        return False
    n = out.shape[0]
    if rows.size and (rows.max() >= n or rows.min() < -n):
        return False  # (np.add.at raises numpy's IndexError; the modulo below would wrap)
    width = out.size // n if n else 0
    # (in intp: a small integer type, uint8, would overflow in `* width`)
    flat = (rows.reshape(-1, 1).astype(np.intp) % max(n, 1)) * width + np.arange(width)
    out[...] = np.bincount(flat.reshape(-1), g.reshape(-1), minlength=out.size).reshape(out.shape)
    return True


def array_module(array):
    """numpy, or cupy for a CuPy array (without importing cupy for numpy arrays)."""
    if type(array).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def _has_array_index(index) -> bool:
    """Whether `index` may name an element twice (an integer array or list in it), so that
    writes through it must accumulate (`ufunc.at`). A boolean mask names each element at most
    once: assigning through it is exact, and many times faster than `np.add.at`."""
    items = index if isinstance(index, tuple) else (index,)
    return any(
        isinstance(item, list) or (hasattr(item, "shape") and getattr(item, "dtype", None) != bool)
        for item in items
    )


def take_part(g, xs, argnum, axis=0):
    """Adjoint of `concatenate(xs, axis)` for its `argnum`-th input: that input's slice of `g`
    (axis None: of the flattened inputs, given the input's shape back)."""
    if axis is None:
        return np.reshape(g[part_index(xs, argnum, axis)], np.shape(xs[argnum]))
    return g[part_index(xs, argnum, axis)]


def part_index(xs, argnum, axis=0):
    """Where the `argnum`-th input sits in `concatenate(xs, axis)`: a tuple of slices.

    Shared by `take_part` and its own adjoint (`unindex` at the same place)."""
    if axis is None:  # the inputs flattened, one after the other
        start = sum(np.size(x) for x in xs[:argnum])
        return (slice(start, start + np.size(xs[argnum])),)
    start = sum(np.shape(x)[axis] for x in xs[:argnum])
    stop = start + np.shape(xs[argnum])[axis]
    return (slice(None),) * (axis % np.ndim(xs[argnum])) + (slice(start, stop),)


def expand_reduced(g, x, axis, keepdims):
    """Re-insert the axes that a reduction over `axis` removed, so `g` broadcasts against `x`."""
    if keepdims or axis is None or np.ndim(g) == np.ndim(x):
        return g
    return np.expand_dims(g, axis)


def reduced_count(x, axis):
    """How many elements of `x` each output of a reduction over `axis` combines."""
    if axis is None:
        return np.size(x)
    shape = np.shape(x)
    axes = axis if isinstance(axis, tuple) else (axis,)
    count = 1
    for a in axes:
        count *= shape[a]
    return count


def prod_grad(g, x, axis, keepdims):
    """Adjoint of `prod(x, axis)`, exact where `x` holds zeros.

    The product of the other elements is computed with exclusive cumulative
    products from both sides, so a single zero gives the right (non-NaN) value,
    as torch does, instead of dividing the product by zero.
    """
    g = expand_reduced(g, x, axis, keepdims)
    if axis is None:  # (np.reshape: x may be a Python float, np.prod(2.0) is one)
        flat = np.reshape(x, -1)
        return np.reshape(g * _others_product(flat, 0), np.shape(x))
    axes = axis if isinstance(axis, tuple) else (axis,)
    if len(axes) != 1:
        moved = np.moveaxis(x, axes, tuple(range(-len(axes), 0)))
        flat = moved.reshape(moved.shape[: -len(axes)] + (-1,))
        others = _others_product(flat, -1).reshape(moved.shape)
        return g * np.moveaxis(others, tuple(range(-len(axes), 0)), axes)
    return g * _others_product(x, axes[0])


def _others_product(x, axis):
    """For each element, the product of all other elements along `axis` (no division)."""
    axis %= np.ndim(x)
    ones_shape = list(np.shape(x))
    ones_shape[axis] = 1
    # ones_like dispatches to the array's library (a host array cannot join a CuPy one)
    ones = np.ones_like(x, shape=tuple(ones_shape)) if hasattr(x, "dtype") else 1.0
    before = np.cumprod(np.concatenate([ones, x], axis=axis), axis=axis)
    after = np.flip(
        np.cumprod(np.concatenate([ones, np.flip(x, axis)], axis=axis), axis=axis), axis
    )
    n = np.shape(x)[axis]
    # slices, not np.take(..., range(n)): no index made on the host for a CuPy x
    lead = (slice(None),) * axis
    return before[lead + (slice(0, n),)] * after[lead + (slice(1, n + 1),)]


def prod_grad_jvp(g, x, t, axis, keepdims):
    """The derivative of `prod_grad(g, x, axis, keepdims)` along a change `t` of `x`.

    Each element's "product of the others" changes by sum_{j != i} t_j prod_{k != i, j} x_k
    (the Hessian of `prod` times `t`, within each reduced slice). That Hessian is symmetric
    and `g` is constant along the reduced axes, so the same function is `prod_grad`'s VJP
    with respect to `x` (with `t` the cotangent). Exact where `x` holds zeros.
    """
    g = expand_reduced(g, x, axis, keepdims)
    shape = np.shape(x)
    if axis is None:
        return np.reshape(g * _others_product_jvp(np.reshape(x, -1), np.reshape(t, -1)), shape)
    axes = tuple(a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,)))
    last = tuple(range(-len(axes), 0))
    moved_x, moved_t = (
        np.moveaxis(x, axes, last),
        np.moveaxis(np.broadcast_to(t, shape), axes, last),
    )
    flat = moved_x.shape[: -len(axes)] + (-1,)
    changes = _others_product_jvp(moved_x.reshape(flat), moved_t.reshape(flat))
    return g * np.moveaxis(changes.reshape(moved_x.shape), last, axes)


def _others_product_jvp(x, t):
    """Along the last axis: for each i, sum_{j != i} t_j prod_{k != i, j} x_k."""
    xp = array_module(x)
    if not bool((x == 0).any()):
        # away from zeros it is others_i * sum_{j != i} t_j / x_j
        ratio = t / x
        return _others_product(x, -1) * (ratio.sum(axis=-1, keepdims=True) - ratio)
    # with zeros: carry the products from the left, L_i = prod_{k<i} x_k, and their
    # derivatives L'_i, then the same from the right; d(L_i R_i) = L'_i R_i + L_i R'_i
    n = x.shape[-1]
    left, d_left = xp.ones_like(x), xp.zeros_like(x)
    right, d_right = xp.ones_like(x), xp.zeros_like(x)
    for i in range(1, n):
        left[..., i] = left[..., i - 1] * x[..., i - 1]
        d_left[..., i] = d_left[..., i - 1] * x[..., i - 1] + left[..., i - 1] * t[..., i - 1]
        j = n - 1 - i
        right[..., j] = right[..., j + 1] * x[..., j + 1]
        d_right[..., j] = d_right[..., j + 1] * x[..., j + 1] + right[..., j + 1] * t[..., j + 1]
    return d_left * right + left * d_right


def max_grad(g, ans, x, axis, keepdims):
    """Adjoint of `max`/`min` along `axis`: `g` shared evenly among the tied extremes."""
    g = expand_reduced(g, x, axis, keepdims)
    ans = expand_reduced(ans, x, axis, keepdims)
    hits = x == ans
    return g * hits / hits.sum(axis=axis, keepdims=True)


def inverse_permutation(axes):
    """The axes that undo `transpose(x, axes)`."""
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return tuple(inverse)


def dot_grad(g, x, y, argnum):
    """Adjoint of `np.dot(x, y)` for N-d operands (sum over x's last and y's second-to-last axis)."""
    if y.ndim == 1:  # the sum is over both last axes: g has x's leading axes
        if argnum == 0:
            return np.multiply.outer(g, y)
        return np.tensordot(g, x, axes=(tuple(range(g.ndim)), tuple(range(x.ndim - 1))))
    if argnum == 0:
        y_axes = tuple(a for a in range(y.ndim) if a != y.ndim - 2)
        g_axes = tuple(range(x.ndim - 1, g.ndim))
        return np.tensordot(g, y, axes=(g_axes, y_axes))
    x_axes = tuple(range(x.ndim - 1))
    return np.moveaxis(np.tensordot(x, g, axes=(x_axes, x_axes)), 0, -2)


def inner_grad(g, x, y, argnum):
    """Adjoint of `np.inner(x, y)` for N-d operands (sum over both last axes)."""
    if argnum == 0:
        return np.tensordot(g, y, axes=(tuple(range(x.ndim - 1, g.ndim)), tuple(range(y.ndim - 1))))
    return np.tensordot(g, x, axes=(tuple(range(x.ndim - 1)), tuple(range(x.ndim - 1))))


def tensordot_grad(g, x, y, axes, argnum):
    """Adjoint of `np.tensordot(x, y, axes)` with respect to x (argnum 0) or y (argnum 1)."""
    g, x, y = np.asarray(g), np.asarray(x), np.asarray(y)  # a full contraction gives a number
    if isinstance(axes, int):
        x_axes = tuple(range(x.ndim - axes, x.ndim))
        y_axes = tuple(range(axes))
    else:
        x_axes, y_axes = (tuple(a) if not isinstance(a, int) else (a,) for a in axes)
    x_axes = tuple(a % x.ndim for a in x_axes)
    y_axes = tuple(a % y.ndim for a in y_axes)
    x_free = [a for a in range(x.ndim) if a not in x_axes]
    y_free = [a for a in range(y.ndim) if a not in y_axes]
    n_x_free = len(x_free)
    if argnum == 0:
        # g has axes (x_free..., y_free...); contract its y_free part with y's free axes
        out = np.tensordot(g, y, axes=(tuple(range(n_x_free, g.ndim)), tuple(y_free)))
        # out has axes (x_free..., y's contracted axes in increasing order), each the partner
        # of an x axis: those x axes, in that order
        order = x_free + [a for _, a in sorted(zip(y_axes, x_axes))]
        return np.transpose(out, inverse_permutation(order))
    out = np.tensordot(x, g, axes=(tuple(x_free), tuple(range(n_x_free))))
    order = [b for _, b in sorted(zip(x_axes, y_axes))] + y_free
    return np.transpose(out, inverse_permutation(order))


def einsum_grad(g, subscripts, operands, argnum):
    """Adjoint of `np.einsum(subscripts, *operands)` for operand `argnum`.

    The gradient is another einsum: the output's subscripts and the other
    operands' subscripts in, this operand's subscripts out. Labels that only this
    operand has (summed inside it) are broadcast back. A label repeated within this
    operand ("ii->i", "iij,j->i": the operand is read on a diagonal) gets the gradient on
    that diagonal and zeros off it: one more einsum, each later occurrence of the label a
    label of its own tied to the first by an identity matrix ("i,ia->ia" of the gradient
    and eye(n)), so that it is einsum's alone, also on the eager mode's Tensors.
    """
    inputs, output = parse_einsum(subscripts, operands)
    mine = inputs[argnum]
    distinct = "".join(dict.fromkeys(mine))  # (each label once, in order)
    others = [s for i, s in enumerate(inputs) if i != argnum]
    available = set(output).union(*others) if others else set(output)
    kept = "".join(c for c in distinct if c in available)
    spec = ",".join([output] + others) + "->" + kept
    rest = [op for i, op in enumerate(operands) if i != argnum]
    grad = np.einsum(spec, g, *rest)
    x = operands[argnum]
    if distinct != mine:  # (the shape of the diagonal: each label's length once)
        shape = tuple(np.shape(x)[mine.index(c)] for c in distinct)
    else:
        shape = np.shape(x)
    if kept != distinct:
        expanded = grad.reshape(
            tuple(grad.shape[kept.index(c)] if c in kept else 1 for c in distinct)
        )
        grad = np.broadcast_to(expanded, shape)
    if distinct != mine:
        free = (c for c in string.ascii_letters if c not in "".join(inputs) + output)
        labels, ties, eyes = [], [], []
        for k, (c, n) in enumerate(zip(mine, np.shape(x))):
            if c in mine[:k]:
                labels.append(next(free))
                ties.append(c + labels[-1])
                eyes.append(np.eye(n, dtype=grad.dtype if isinstance(grad, np.ndarray) else None))
            else:
                labels.append(c)
        grad = np.einsum(",".join([distinct] + ties) + "->" + "".join(labels), grad, *eyes)
    return grad


def einsum_grad_operands(g, h, subscripts, operands, argnum):
    """Adjoint of `einsum_grad(h, subscripts, operands, argnum)` for `operands`: a list.

    `einsum_grad(h, ...)` is the gradient of the multilinear form
    <h, einsum(subscripts, *operands)> with respect to operand `argnum`, so its dot
    product with `g` is that form with operand `argnum` replaced by `g`. The gradient
    of that with respect to each other operand is `einsum_grad` again; operand
    `argnum` itself is only read for its shape (no gradient).
    """
    replaced = _replace_item(operands, argnum, g)
    return [
        zeros_adjoint(x) if i == argnum else einsum_grad(h, subscripts, replaced, i)
        for i, x in enumerate(operands)
    ]


def einsum_grad_jvp(h, subscripts, operands, tangents, argnum):
    """Forward-mode rule of `einsum_grad(h, subscripts, operands, argnum)` for `operands`.

    It is linear in each operand other than `argnum` separately (multilinear), so its
    derivative is the sum, over those operands, of einsum_grad with that one replaced
    by its tangent.
    """
    total = np.zeros_like(operands[argnum])
    for i, t in enumerate(tangents):
        if i != argnum:
            total = total + einsum_grad(h, subscripts, _replace_item(operands, i, t), argnum)
    return total


def einsum_swap(subscripts, argnum):
    """`subscripts` with operand `argnum` and the output trading places ("ij,jk->ik", 0 ->
    "ik,jk->ij"), always with an explicit output.

    `einsum_grad(g, ...)` is linear in `g`; its adjoint for `g` is `einsum_grad` with these
    subscripts: the multilinear form is the same, only which argument is left out changes.
    """
    inputs, output = parse_einsum(subscripts, None)
    mine = inputs[argnum]
    inputs = [output if i == argnum else s for i, s in enumerate(inputs)]
    return ",".join(inputs) + "->" + mine


def _replace_item(items, i, value):
    return tuple(value if j == i else x for j, x in enumerate(items))


def einsum_sublists(args):
    """The call `np.einsum(a, [0, 1], b, [1, 2], [0, 2])` (numpy's sublist form: operands each
    followed by its labels as integers or Ellipsis, then the output's labels if given) as
    (subscripts, operands): ("Ab,bC->AC"-like letters, [a, b]). Integer i becomes the i-th of
    A..Za..z, as numpy spells it, so an implicit output keeps numpy's (sorted) order."""
    letters = string.ascii_uppercase + string.ascii_lowercase

    def spell(labels):
        try:
            return "".join("..." if v is Ellipsis else letters[operator.index(v)] for v in labels)
        except (TypeError, IndexError):
            raise ValueError(
                "einsum(): subscript is not within the valid range [0, 52)"
                if isinstance(labels, (list, tuple))
                else "einsum(): each operand's subscripts must be a list of integers"
            ) from None

    operands = list(args[0::2])
    sublists = list(args[1::2])
    output = None
    if len(operands) > len(sublists):  # an odd count: the last one is the output's labels
        output = operands.pop()
    spec = ",".join(spell(s) for s in sublists)
    if output is not None:
        spec += "->" + spell(output)
    return spec, operands


def parse_einsum(subscripts, operands):
    """`einsum` subscripts as (a list of each operand's labels, the output's labels); an implicit
    output is the labels used once, sorted, as numpy has it."""
    spec = subscripts.replace(" ", "")
    ins, arrow, out = spec.partition("->")
    inputs = ins.split(",")
    ellipsis = ""
    if "." in spec:
        # '...' becomes letters the subscripts do not use, one per broadcast axis, aligned on
        # the right as numpy aligns them (so the gradient einsums need no '...')
        free = [c for c in string.ascii_letters if c not in spec]
        counts = [np.ndim(op) - (len(s) - 3) for s, op in zip(inputs, operands) if "..." in s]
        ellipsis = "".join(free[: max(counts, default=0)])
        inputs = [
            s.replace("...", ellipsis[len(ellipsis) - (np.ndim(op) - (len(s) - 3)) :])
            if "..." in s
            else s
            for s, op in zip(inputs, operands)
        ]
        out = out.replace("...", ellipsis)
    if not arrow:
        letters = "".join(inputs)
        out = ellipsis + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ellipsis)
        )
    return inputs, out


def untake(g, x, indices, axis=None):
    """Adjoint of `np.take(x, indices, axis)`: `g` added back at the taken positions."""
    # C order: the flat view below must be a view (zeros_like of x.T is in Fortran order,
    # its reshape(-1) a copy, and the gradient written into it was lost)
    out = np.zeros_like(x, order="C")
    add_at = array_module(out).add.at
    if axis is None:
        add_at(out.reshape(-1), indices, g)
    else:
        add_at(out, (slice(None),) * (axis % np.ndim(x)) + (indices,), g)
    return out


def unwindow(g, x, window_shape, axis=None):
    """Adjoint of `sliding_window_view(x, window_shape, axis)`: each window's values added
    back where it read them, one shifted slice per position in the window (9 adds of the
    whole output for a 3x3 window: an im2col convolution's input gradient). An axis named
    twice (numpy slides a window of each size along it in turn) reads at the sum of the
    two offsets."""
    shape = np.shape(x)
    sizes = tuple(window_shape) if np.iterable(window_shape) else (window_shape,)
    axes = range(len(shape)) if axis is None else axis if np.iterable(axis) else (axis,)
    axes = [a % len(shape) for a in axes]
    out = array_module(g).zeros(shape, dtype=g.dtype)
    kept = g.shape[: len(shape)]  # (each windowed axis shortened by its windows)
    for offsets in np.ndindex(*sizes):
        start = [0] * len(shape)
        for a, k in zip(axes, offsets):
            start[a] += k
        where = tuple(slice(s, s + n) for s, n in zip(start, kept))
        out[where] += g[(Ellipsis, *offsets)]
    return out


def stack_items(items, axis=0):
    """`np.stack(items, axis)` of a list value (the adjoint of `unstack_list`).

    A rule template cannot call `np.stack` on a list variable (it spells the items out),
    so the adjoints of the list helpers go through these two."""
    return np.stack(list(items), axis=axis)


def concatenate_items(items, axis=0):
    """`np.concatenate(items, axis)` of a list value (the adjoint of `unconcatenate_list`)."""
    return np.concatenate(list(items), axis=axis)


def setitem(x, index, value):
    """`x[index] = value` without changing `x`: a copy with the part replaced (of a tuple,
    Python's TypeError)."""
    if isinstance(x, tuple):
        raise TypeError(f"{type(x).__name__!r} object does not support item assignment")
    out = x.copy()
    out[index] = value
    return out


def add_at(x, index, values):
    """`np.add.at(x, index, values)` without changing `x`: a copy with `values` added at
    `index` (a repeated index adds each time)."""
    out = x.copy()  # (x's dtype, as numpy's update in place keeps it)
    np.add.at(out, index, values)
    return out


def subtract_at(x, index, values):
    """`np.subtract.at(x, index, values)` without changing `x`."""
    out = x.copy()
    np.subtract.at(out, index, values)
    return out


def is_complex(x) -> bool:
    """Does x hold complex numbers (a complex array, Tensor, Meta or Python complex)? Rule
    templates choose their complex formula by it; it reads only x's type, so the compiler
    decides it from stand-ins (a type fact, like index_may_repeat)."""
    if isinstance(x, complex):
        return True
    dtype = getattr(x, "dtype", None)
    kind = getattr(dtype, "kind", None)
    if kind is None:  # an eager Tensor's dtype (under create_graph the rules run on Tensors)
        return bool(getattr(dtype, "is_complex", False))
    return kind == "c"


def real_like(g, x):
    """The adjoint g of x, its real part if x is real (where the compiler could not tell x's
    type: a value that becomes complex in a loop)."""
    return np.real(g) if is_complex(g) and not is_complex(x) else g


def index_may_repeat(index) -> bool:
    """Whether `x[index] = value` may write one element twice: the index holds an integer
    array or list (a boolean mask, ints and slices name each element at most once).

    It reads only the index's types, so the compiler decides it from stand-ins."""
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if isinstance(item, list) or (
            hasattr(item, "shape") and np.ndim(item) > 0 and getattr(item, "dtype", None) != bool
        ):
            return True
    return False


def last_writes(x, index):
    """Which writes of `x[index] = value` survive: a boolean array shaped like `x[index]`,
    False where a later write names the same element.

    numpy does not promise an order for repeated writes, so the answer is read from numpy
    itself: each write's position is written into an array shaped like `x` by the same
    indexing, and the positions that are still there won. (`x[index] += v` is
    `x[index] = x[index] + v`: the same rule.)"""
    xp = array_module(x)
    order = xp.full(np.shape(x), -1, dtype=np.intp)
    part_shape = order[index].shape
    positions = xp.arange(int(np.prod(part_shape)), dtype=np.intp).reshape(part_shape)
    order[index] = positions
    return order[index] == positions


def zero_at(g, index):
    """Adjoint of `setitem` for the array: the replaced part received no gradient."""
    out = g.copy() if hasattr(g, "copy") else np.array(g)
    out[index] = 0.0
    return out


def list_slice_write(x, index) -> bool:
    """Whether `x[index] = value` replaces a slice of a Python list (a plain slice may change
    the list's length). It reads only the types, so the compiler decides it from stand-ins."""
    return isinstance(x, list) and isinstance(index, slice)


def _written(n, index, count):
    """The positions of the result of `x[index] = value` (x a list of n items, value `count`
    items) that value's items land on, and the x positions they replace."""
    start, stop, step = index.indices(n)
    if step == 1:  # (Python's plain slice: any count, the list grows or shrinks)
        replaced = range(start, max(start, stop))
        return range(start, start + count), replaced
    replaced = range(start, stop, step)
    return replaced, replaced


def _list_adjoint(g, n):
    """The adjoint of a list of n items as a list (a zero adjoint stays 0.0 for each item)."""
    return list(g) if isinstance(g, (list, tuple)) else [g] * n


def unslice_list(g, x, index, value):
    """Adjoint of `setitem(x, index, value)` in the list x, for a slice index: the result's
    items that came from x go back to their positions, the replaced ones get zeros. (For an
    array or another index: `zero_at`.)"""
    if not list_slice_write(x, index):
        return zero_at(g, index)
    value = list(value) if isinstance(value, (list, tuple)) else [v for v in value]
    out_positions, replaced = _written(len(x), index, len(value))
    g = _list_adjoint(g, len(x) - len(replaced) + len(value))
    landed = set(out_positions)
    kept = iter(v for i, v in enumerate(g) if i not in landed)
    gone = set(replaced)
    return [zeros_adjoint(v) if i in gone else next(kept) for i, v in enumerate(x)]


def slice_of_list_adjoint(g, x, index, value):
    """Adjoint of `setitem(x, index, value)` in value, for a list x and a slice index: the
    result's items value's items landed on (a list; stacked for an array value). (For an
    array: g[index], summed where value was broadcast.)"""
    if not list_slice_write(x, index):  # (the array rule's formula: the last write wins)
        part = (
            np.where(last_writes(g, index), g[index], 0.0) if index_may_repeat(index) else g[index]
        )
        return unbroadcast(part, value)
    count = len(value)
    out_positions, replaced = _written(len(x), index, count)
    g = _list_adjoint(g, len(x) - len(replaced) + count)
    part = [g[i] for i in out_positions]
    if isinstance(value, (list, tuple)):
        return part
    return np.stack([np.broadcast_to(p, np.shape(value)[1:]) for p in part])


def make_list(*items):
    return list(items)


def list_append(items, item):
    """`items.append(item)` as a value: a new list (the compiler never mutates a list)."""
    return list(items) + [item]


def make_tuple(*items):
    return tuple(items)


def add_adjoints(a, b):
    """Sum two adjoints elementwise, also when they are lists (the adjoint of a list)."""
    if isinstance(a, (list, tuple)):
        return [add_adjoints(x, y) for x, y in zip(a, b)]
    return a + b


def zeros_adjoint(x):
    """A zero adjoint for `x`: 0.0 for a Python number, a list of zeros for a list."""
    if isinstance(x, (list, tuple)):
        return [zeros_adjoint(v) for v in x]
    if x is None or isinstance(x, (int, float)):
        return 0.0
    return np.zeros_like(x)


def unindex_list(g, items, index):
    """Adjoint of `items[index]` for a list: zeros everywhere but `index` (made only there:
    a slice may cover every item, as the list of a split's pieces' adjoints does)."""
    if isinstance(index, slice):
        taken = set(range(len(items))[index])
        out = [None if i in taken else zeros_adjoint(v) for i, v in enumerate(items)]
        out[index] = list(g)
    else:
        out = [zeros_adjoint(v) for v in items]
        out[index] = g
    return out


def unstack_list(g, items, axis=0):
    """Adjoint of `np.stack(items, axis)` for a list built at run time: the rows of one
    copy of `g` with the stacked axis first (one copy and a view per item, where a take per
    item cost ~1.3 µs each: a fifth of an RNN's backward over 50 steps). The copy is the
    gradient's own, so no item shares memory with `g` (the caller's cotangent, perhaps)."""
    return list(np.moveaxis(g, axis, 0).copy())


def unconcatenate_list(g, items, axis=0):
    return [take_part(g, items, i, axis) for i in range(len(items))]


def sum_list_grad(g, items):
    """Adjoint of the builtin `sum(items)`: `g` for each item, reduced to its shape.

    Summing an array adds its rows, so each row's adjoint is `g`: the result is an array."""
    if not isinstance(items, (list, tuple)):
        return np.broadcast_to(g, np.shape(items))
    return [unbroadcast(g, x) for x in items]


def select_grad(g, ans, xs, argnum):
    """Adjoint of the builtin `min`/`max` of numbers: all of `g` to the one that was chosen.
    With one argument (`max(x)` of a 1-d array, `max([a, b])`) the builtins choose among its
    items: the adjoint is the array (or list) with `g` at the item chosen, 0 elsewhere (the
    candidates were taken to be the arguments, and comparing the array with the result
    raised ValueError)."""
    if len(xs) == 1:
        items = xs[0]
        chosen = _chosen(list(items), ans)
        if isinstance(items, np.ndarray):
            out = np.zeros(items.shape, dtype=np.result_type(items, g))
            out[chosen] = g
            return out
        return [g if i == chosen else 0.0 * g for i in range(len(items))]
    return g if _chosen(xs, ans) == argnum else 0.0 * g


def select_tangent(t, ans, xs, argnum):
    """Forward-mode rule of the builtin `min`/`max` (and the transpose of `select_grad`): the
    tangent of the candidate chosen (of the item chosen, `t[i]`, with one iterable argument),
    or zeros."""
    if len(xs) == 1:
        return t[_chosen(list(xs[0]), ans)]
    return t if _chosen(xs, ans) == argnum else 0.0 * t


def _chosen(candidates, ans):
    """The position of the candidate the builtin min/max returned: itself, or the first equal
    one (the builtins return the first of equal extremes)."""
    chosen = next((i for i, x in enumerate(candidates) if x is ans), None)
    if chosen is None:
        chosen = next((i for i, x in enumerate(candidates) if x == ans), len(candidates) - 1)
    return chosen


def max_jvp(t, ans, x, axis, keepdims):
    """Forward-mode rule of `max`/`min` along `axis`: the tangent averaged over the tied extremes."""
    hits = x == expand_reduced(ans, x, axis, keepdims)
    out = (t * hits).sum(axis=axis, keepdims=keepdims) / hits.sum(axis=axis, keepdims=keepdims)
    return out


def var_jvp(t, x, axis, ddof, keepdims):
    """Forward-mode rule of `var`: 2 * sum((x - mean) * (t - mean(t))) / (N - ddof)."""
    centered = x - np.mean(x, axis=axis, keepdims=True)
    t_centered = t - np.mean(t, axis=axis, keepdims=True)
    count = reduced_count(x, axis)
    return 2.0 * (centered * t_centered).sum(axis=axis, keepdims=keepdims) / (count - ddof)


def iadd_item(x, index, value):
    """`x[index] += value`, in place, for a basic index (generated code writes it as that
    statement): the adjoint of `x[index]` added into an accumulator the backward owns."""
    x[index] += value
    return x


def store_item(x, index, value):
    """`x[index] = value`, in place (generated code writes it as that statement)."""
    x[index] = value


class GuardMiss(Exception):
    """Raised by code made from a trace (`compiler.trace`) when a call's values decide what
    Python decided differently when the trace ran: the caller traces again for them."""


def trace_guard(value, expected):
    """A decision of a traced function (`if x.sum() > 0`, `int(n)`), checked: the value is
    what it was when the trace ran, or `GuardMiss`."""
    if isinstance(value, np.ndarray) and value.ndim:
        same = np.shape(expected) == value.shape and bool(np.array_equal(value, expected))
    else:
        same = bool(value == expected) or (value != value and expected != expected)
    if not same:
        raise GuardMiss(f"{value!r} where the trace had {expected!r}")


def check_assert(test, message=None):
    """The user's `assert test, message`, run in the forward pass of generated code."""
    if not test:
        raise AssertionError(*(() if message is None else (message,)))


def cast_like(g, x):
    """The adjoint `g` in the dtype of `x` (the gradient of `x.astype(dtype)`)."""
    return g.astype(x.dtype, copy=False) if hasattr(x, "dtype") and hasattr(g, "astype") else g


def tile_split_shape(shape, reps):
    """The shape that separates each tile of `np.tile(x, reps)` from the element inside it."""
    reps = tuple(reps) if np.ndim(reps) else (reps,)
    shape = (1,) * (len(reps) - len(shape)) + tuple(shape)
    reps = (1,) * (len(shape) - len(reps)) + reps
    out = []
    for r, n in zip(reps, shape):
        out += [r, n]
    return tuple(out)


def tile_sum_axes(shape, reps):
    """The axes of `tile_split_shape` that count tiles (summed by tile's VJP)."""
    n = max(len(shape), len(tuple(reps)) if np.ndim(reps) else 1)
    return tuple(range(0, 2 * n, 2))


def _cumprod_others(xm):
    """others[..., j, k] = the product of xm[..., i] for i <= k, i != j (0 where k < j): the
    derivative of cumprod's k-th element by its j-th input, exact where xm holds zeros
    (O(n^2) along the last axis)."""
    n = np.shape(xm)[-1]
    ones = np.ones_like(xm, shape=(n, n))  # made where x lives (numpy, CuPy or a Tensor)
    upper = np.triu(ones)
    rows = np.where(upper * np.tril(ones) > 0, 1.0, np.expand_dims(xm, -2))
    return np.cumprod(rows, axis=-1) * upper


def cumprod_grad(g, ans, x, axis):
    """Adjoint of `np.cumprod(x, axis)`, exact where x holds zeros (as torch's is).

    Without zeros it is the reversed cumulative sum of g * ans, over x. With one,
    the product of the other elements is formed for each element k as the
    cumulative product of x with its k-th element replaced by 1 (O(n^2) along
    the axis, so only then). With axis None (numpy's flattened cumprod) it works on
    x flattened and gives x's shape back.
    """
    if axis is None:
        return np.reshape(cumprod_grad(g, ans, np.ravel(x), 0), np.shape(x))
    if not bool(np.any(x == 0)):
        return np.flip(np.cumsum(np.flip(g * ans, axis), axis=axis), axis) / x
    others = _cumprod_others(np.moveaxis(x, axis, -1))
    gm = np.moveaxis(g, axis, -1)
    return np.moveaxis(np.sum(others * np.expand_dims(gm, -2), axis=-1), -1, axis)


def cumprod_jvp(t, ans, x, axis):
    """Tangent of `np.cumprod(x, axis)` along t: ans * cumsum(t / x) without zeros in x,
    the exact sum over `_cumprod_others` with them."""
    if axis is None:
        return cumprod_jvp(np.ravel(t), ans, np.ravel(x), 0)
    if not bool(np.any(x == 0)):
        return ans * np.cumsum(t / x, axis=axis)
    others = _cumprod_others(np.moveaxis(x, axis, -1))
    tm = np.moveaxis(t, axis, -1)
    return np.moveaxis(np.sum(others * np.expand_dims(tm, -1), axis=-2), -1, axis)


def cumprod_grad_jvp(g, x, t, axis):
    """The derivative of `cumprod_grad(g, ans, x, axis)` along a change `t` of `x` (forward
    over reverse: Hessians, hvp). The adjoint is a function of g and x alone (ans is
    cumprod(x), read as a shortcut), so this is sum_k g_k (H_k t)_j with H_k the Hessian of
    ans_k: ans_k / (x_j x_m) for j != m both <= k. Without zeros in x, that is
    (rcs(g ans cumsum(t / x)) - t / x rcs(g ans)) / x (rcs: the reversed cumulative sum);
    with them, each j's products of the others come from `_cumprod_others` of x with its
    j-th element set to 1 (O(n^3) along the axis, so only then)."""
    if axis is None:
        flat = cumprod_grad_jvp(np.ravel(g), np.ravel(x), np.ravel(t), 0)
        return np.reshape(flat, np.shape(x))
    if not bool(np.any(x == 0)):
        ga, ratio = g * np.cumprod(x, axis=axis), t / x
        tail = np.flip(np.cumsum(np.flip(ga * np.cumsum(ratio, axis=axis), axis), axis=axis), axis)
        return (tail - ratio * np.flip(np.cumsum(np.flip(ga, axis), axis=axis), axis)) / x
    xm, gm, tm = (np.moveaxis(a, axis, -1) for a in (x, g, t))
    n = xm.shape[-1]
    out = np.zeros(xm.shape, np.result_type(xm, gm, tm))
    for j in range(n):
        held = xm.copy()
        held[..., j] = 1
        # [..., m, k]: g_k times the product of x_i for i <= k, i not j or m
        second = _cumprod_others(held) * np.expand_dims(gm, -2)
        second[..., :, :j] = 0  # ans_k for k < j does not hold x_j
        second[..., j, :] = 0  # d2 ans_k / dx_j^2 = 0
        out[..., j] = np.sum(np.sum(second, axis=-1) * tm, axis=-1)
    return np.moveaxis(out, -1, axis)


# --- Griewank's binomial checkpointing (revolve) of a loop's trips ------------------------------
#
# A loop checkpointed with revolve (`sourcegrad.compiler.derive.checkpointing`) keeps at most `slots`
# snapshots of its state and makes each trip's values again from the nearest one. Generated
# code follows the schedule thus: the forward sweep runs every trip, pushing the loop's state
# before the trip `next_snapshot` names and asking for the next (`revolve_taken`); the
# backward, for each trip from the last, restores the latest snapshot (`revolve_restart`),
# runs forward from it to the trip (taking the snapshots `revolve_next` and `revolve_taken`
# name on the way), runs the trip once more recording its values, then runs its backward.
# A schedule call is made once a snapshot, once a reversed trip, never once a trip run.
#
# The schedule is the recursion of Griewank (1992), "Achieving logarithmic growth of temporal
# and spatial complexity in reverse automatic differentiation", run one trip at a time:
# reversing trips [p, e) from a snapshot at p with c slots (p's own included) takes the next
# snapshot at p + m, reverses [p + m, e) with c - 1 slots, drops that snapshot, and reverses
# [p, p + m) from p with c. With c slots and each trip run forward at most r times, a schedule
# reverses up to beta(c, r) = C(c + r, c) trips, and `revolve_split` chooses m so that the
# number of forward runs is the least possible, r * n - C(c + r, r - 1) (Griewank and
# Walther 2000). The snapshots form a stack (the one restored is always the latest held), so
# generated code keeps them on its saved-value stack.


def revolve_capacity(slots, repetitions) -> int:
    """beta(s, r) = C(s + r, s): the most trips `slots` snapshots reverse when each trip runs
    forward at most `repetitions` times (0 for a negative `repetitions`)."""
    return math.comb(slots + repetitions, slots) if repetitions >= 0 else 0


def revolve_repetitions(trips, slots) -> int:
    """r: the fewest forward runs of a trip that reverse `trips` trips from `slots` snapshots."""
    r = 0
    while revolve_capacity(slots, r) < trips:
        r += 1
    return r


def revolve_split(trips, slots) -> int:
    """m: where (after how many trips) the next snapshot goes when `trips` trips (>= 2) are
    reversed from a snapshot at their first with `slots` snapshots (>= 2, that one included):
    the least m for which both parts are reversed at the least cost (the first m trips with
    `slots` snapshots in r - 1 runs each, the rest with one snapshot fewer in r)."""
    if trips <= slots:  # r = 1: a snapshot before every trip
        return 1
    # beta(s, r) = beta(s, r - 1) * (s + r) / r, and beta(s - 1, r) = beta(s, r) * s / (s + r)
    r, beta, below = 1, slots + 1, 1  # beta(s, r), beta(s, r - 2)
    while beta < trips:
        r, beta, below = r + 1, beta * (slots + r + 1) // (r + 1), beta * r // (slots + r)
    return max(1, below, trips - beta * slots // (slots + r))


class Revolve:
    """The schedule of one run of a checkpointed loop `range(start, stop, step)` with at most
    `slots` snapshots. It holds the trips (indexes, 0 the first) of the snapshots taken and
    not yet dropped, and the next trip where one goes (None: none) while the loop runs
    forward toward `target` (the last trip in the forward sweep, then the trip reversed)."""

    __slots__ = ("start", "step", "slots", "held", "target", "next")

    def __init__(self, start, stop, step, slots):
        if not (isinstance(slots, int) and slots >= 1):
            raise ValueError(f"revolve needs at least one snapshot slot, got {slots!r}")
        self.start, self.step, self.slots = start, step, slots
        self.held: list = []
        self.target = len(range(start, stop, step)) - 1
        self.next = 0 if self.target >= 0 else None  # (the state the loop begins with)

    def plan(self, at):
        """The next snapshot on the way from the one at trip `at` toward `target` (its loop
        value, or None)."""
        free = self.slots - len(self.held)
        if free < 1 or at >= self.target:
            self.next = None
            return None
        self.next = at + revolve_split(self.target + 1 - at, free + 1)
        return self.start + self.next * self.step


def revolve_schedule(start, stop, step, slots, first_taken=False):
    """The revolve schedule of a loop `range(start, stop, step)` keeping at most `slots`
    snapshots; see `Revolve`. `first_taken`: the state before the first trip is a snapshot
    already (a `while` loop's forward keeps it; its schedule is made once the loop has ended)."""
    schedule = Revolve(start, stop, step, slots)
    if first_taken and schedule.next is not None:
        schedule.held.append(0)
        schedule.next = None
    return schedule


def revolve_next(schedule):
    """The loop's value before whose trip the next snapshot goes (None: no more on this way)."""
    index = schedule.next
    return None if index is None else schedule.start + index * schedule.step


def revolve_taken(schedule, trip):
    """The snapshot before `trip` is pushed: the loop's value where the next one goes."""
    index = (trip - schedule.start) // schedule.step
    schedule.held.append(index)
    return schedule.plan(index)


def revolve_restart(schedule, trip):
    """Before reversing `trip`: the loop's value of the latest snapshot, whose state generated
    code restores (pops) and runs forward from up to `trip`. The snapshot is dropped when it
    is `trip`'s own (its last use; generated code pushes it back otherwise), and the schedule
    plans the snapshots to take on the way (`revolve_next`)."""
    index = (trip - schedule.start) // schedule.step
    held = schedule.held[-1]
    if held == index:
        schedule.held.pop()
        schedule.next = None
    else:
        schedule.target = index
        schedule.plan(held)
    return schedule.start + held * schedule.step
