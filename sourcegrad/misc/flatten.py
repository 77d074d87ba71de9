"""`flatten(value) -> (vector, unflatten)`: a parameter tree as one float vector, as
autograd's `autograd.misc.flatten`.

The tree's leaves (sourcegrad.trees' order: lists and tuples in order, dicts in insertion
order) are raveled and concatenated; `unflatten(vector)` cuts a vector of that length back
into arrays of the leaves' shapes and rebuilds the tree. Written with numpy functions only,
so that a differentiated function may call it (an L2 penalty over all parameters).
"""

import functools

import numpy as np

from .. import trees


def flatten(value):
    """(1-D vector of the leaves of `value`, function rebuilding a tree from such a vector)."""
    leaves, treedef = trees.flatten(value)
    shapes = [np.shape(leaf) for leaf in leaves]
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
    if leaves:
        vector = np.concatenate([np.ravel(leaf) for leaf in leaves])
    else:
        vector = np.zeros(0)

    def unflatten(flat):
        if np.shape(flat) != (sum(sizes),):
            raise ValueError(
                f"unflatten takes a vector of {sum(sizes)} elements, got shape {np.shape(flat)}"
            )
        pieces, start = [], 0
        for shape, size in zip(shapes, sizes):
            pieces.append(np.reshape(flat[start : start + size], shape))
            start += size
        return treedef.unflatten(pieces)

    return vector, unflatten


def flatten_func(func, example):
    """`(flat_func, unflatten, flat_example)`: `flat_func(vector, *args)` is `func` called on
    the tree `unflatten(vector)`, its result flattened too (a gradient function over a tree
    becomes one over vectors)."""
    flat_example, unflatten = flatten(example)

    # (functools.wraps: flat_func has func's named parameters, which a gradient of it needs)
    @functools.wraps(func)
    def flat_func(vector, *args, **kwargs):
        return flatten(func(unflatten(vector), *args, **kwargs))[0]

    return flat_func, unflatten, flat_example
