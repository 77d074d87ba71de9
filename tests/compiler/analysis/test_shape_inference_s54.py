"""Shapes made from numbers the analysis does not know (session 54): never a wrong known shape.

A size chosen by a test the analysis does not decide (`own if size == -1 else size` over
`zip(sizes, shape)`, a loop's `elif sizes[i] == -1`) is a number it does not know: the join
of the branches keeps one branch's value as its sample. Such numbers gathered in a tuple or
list (`tuple([...])`, `tuple(out)`) gave `np.ones`, `np.broadcast_to` and `np.reshape` the
sample's shape as a known one. Before: numpy's concatenate or reshape error for valid code
(the sample's shape refused), and silently wrong gradients where the shape was read
(`len(c)`, `b.shape[0]` folded to the sample's size). Two unknown numbers moved together
(`w[lo:hi]`, lo and hi from two comprehensions) kept the samples' slice length, and a slice
past the end moved by one is past it still: `len(w[lo:hi])` was folded to 0.

Each function is differentiated by both front ends and checked against central finite
differences in float64; the analysis is asked directly that such shapes are UNKNOWN and that
a loop's `x[i:i + 3]`, `x[3 * i:3 * (i + 1)]` keep theirs.
"""

import types

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from sourcegrad.compiler import pipeline
from sourcegrad.compiler.analysis import aval_of, infer_shapes

FRONT_ENDS = ["source", "trace"]


def gradient(fn, front_end):
    """sourcegrad.grad(fn) read from its source, or traced (of a copy of fn: the code compiled
    for fn is cached per function, whichever front end made it)."""
    if front_end == "trace":
        fn = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__)
    g = sourcegrad.grad(fn)
    g.reads_source = front_end == "source"
    return g


def close(ours, numeric):
    assert np.shape(ours) == np.shape(numeric)
    scale = max(1.0, float(np.max(np.abs(numeric))))
    np.testing.assert_allclose(ours, numeric, rtol=1e-6, atol=1e-6 * scale)


# -- the report: a tuple of sizes from a comprehension with a conditional ------------------------


def shape_of(shape, sizes):
    return tuple([own if size == -1 else size for size, own in zip(sizes, shape)])


def concatenated(w, x):
    y = np.swapaxes(np.reshape(x * 2.0, (2, 3, -1)), 1, 2)
    c = w * np.ones(shape_of((1, 1, 3), (y.shape[0], -1, -1)))
    return np.sum(np.concatenate((c, y), axis=1) ** 2)


def resolved(shape, sizes):
    out = []
    for i in range(len(sizes)):
        if sizes[i] == -2:
            out.append(0)
        elif sizes[i] == -1:
            out.append(shape[i])
        else:
            out.append(sizes[i])
    return tuple(out)


def elif_loop(w, x):
    c = w * np.ones(resolved((1, 1, 3), (x.shape[0], -1, -1)))
    return np.sum(np.concatenate((c, x[:, :1, :3]), axis=1) ** 2)


def broadcast_then_concatenated(w, x):
    b = np.broadcast_to(w[0, 0], shape_of((1, 3), (x.shape[0], -1)))
    return np.sum(np.concatenate((b, x[:, 0, :3]), axis=1) ** 2)


def broadcast_of_known_shape_concatenated(w, x):
    b = np.broadcast_to(w[0, 0, :1], (x.shape[0], 1))
    return np.sum(np.concatenate((b, x[:, :, 0]), axis=1) ** 2)


def reshaped_by_sizes(w, x):
    target = tuple([s * 2 if s == 3 else s // 2 for s in x.shape[:2]])
    y = np.reshape(x[:, :, 0] * w[0, 0, 0], target)
    return np.sum(y[0] ** 2) * y.shape[1]


def reshaped_by_swapped_sizes(w, x):
    target = tuple([x.shape[1] if k == 0 else x.shape[0] for k in range(2)])
    y = np.reshape(x[:, :, 0] * w[0, 0, 1], target)
    return np.sum(y[0] ** 2) * y.shape[1]


# -- read back: the sample's size folded into the gradient (silently wrong before) ---------------


def len_of_ones(w, x):
    c = np.ones(tuple([1 if s == 2 else s for s in x.shape]))
    return len(c) * np.sum(w**2)  # (before: len(c) was 1, the gradient 2w, not 3 * 2w)


def broadcast_length(w, x):
    b = np.broadcast_to(w[0, 0, :1], tuple([1 if s == 2 else s for s in x.shape]))
    return b.shape[0] * np.sum(w**2) + np.sum(b)  # (before: b.shape[0] was 1, not 3)


def elif_count(w, x):
    out = []
    for i in range(len(x.shape)):
        if x.shape[i] == 2:
            out.append(1)
        elif x.shape[i] == 3:
            out.append(5)
        else:
            out.append(x.shape[i])
    return np.ones(tuple(out)).shape[0] * np.sum(w**2)  # (before: 1, not 5)


def independent_bounds(w, x):
    # (samples: the branches' first values, lo 5 and hi 9, past v's end, and moved together
    # past it still)
    lo = min([s + 3 if s > 9 else 0 for s in x.shape])
    hi = max([s + 5 if s > 9 else 2 for s in x.shape])
    v = np.ravel(w)
    return np.sum(v[lo:hi] ** 2) * len(v[lo:hi])  # (before: len(v[lo:hi]) was 0, not 2)


# -- siblings that were right, kept right: min/max, sum, reversed, dict lookups of sizes ----------


def max_and_min_of_sizes(w, x):
    n = max([s if s > 1 else 1 for s in x.shape])
    m = min(s if s > 2 else 7 for s in x.shape)
    return np.sum(w[0, 0, :1] * np.ones(n)) * n + np.sum(w[0, 0, 1:2] * np.ones(m)) * m


def sum_of_sizes(w, x):
    n = sum(tuple(s if s != 3 else 1 for s in x.shape))
    return np.sum(w[0, 0, :1] * np.ones(n) ** 2) * n


def reversed_sizes(w, x):
    r = tuple(reversed([1 if s == 4 else s for s in x.shape]))
    return np.sum((w[0, 0, :1] * np.ones(r)) ** 2) * np.ones(r).shape[0]


def dict_of_sizes(w, x):
    d = {}
    for k, s in zip("abc", x.shape):
        d[k] = s if s != 3 else 1
    return np.sum((w[0, 0, :1] * np.ones((d["a"], d["b"], d["c"]))) ** 2) * d["b"]


CASES = [
    concatenated,
    elif_loop,
    broadcast_then_concatenated,
    broadcast_of_known_shape_concatenated,
    reshaped_by_sizes,
    reshaped_by_swapped_sizes,
    len_of_ones,
    broadcast_length,
    elif_count,
    independent_bounds,
    max_and_min_of_sizes,
    sum_of_sizes,
    reversed_sizes,
    dict_of_sizes,
]


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_gradient_through_sizes_the_analysis_does_not_know(fn, front_end):
    rng = np.random.default_rng(54)
    w, x = rng.normal(size=(1, 1, 3)), rng.normal(size=(3, 2, 4))
    if fn in (concatenated,):
        x = rng.normal(size=(2, 3, 4))
    numeric = numeric_grad(fn, (w.copy(), x.copy()), 0)
    assert np.any(numeric != 0)
    close(gradient(fn, front_end)(w.copy(), x.copy()), numeric)


def test_the_report_gives_numpys_number_and_its_gradient():
    """The reproducer as reported: numpy gives 54.0; the gradient of w (ones) is 2 per entry
    (w broadcast over c's 2 rows), not numpy's concatenate error."""

    def f(w, x):
        y = np.swapaxes(np.reshape(x * 2.0, (2, 3, -1)), 1, 2)
        c = w * np.ones(shape_of((1, 1, 3), (y.shape[0], -1, -1)))
        return np.sum(np.concatenate((c, y), axis=1))

    w, x = np.ones((1, 1, 3)), np.ones((2, 3, 4))
    assert f(w, x) == 54.0
    for front_end in FRONT_ENDS:
        close(gradient(f, front_end)(w, x), np.full((1, 1, 3), 2.0))


# -- the analysis itself -----------------------------------------------------------------------


def _shapes(fn, *args):
    env = infer_shapes(pipeline.lower(fn), [aval_of(a) for a in args])
    return {k: (None if v is None else np.shape(v.stand_in)) for k, v in env.items()}


def test_a_tuple_of_sizes_not_known_makes_no_known_shape():
    def f(x):
        c = np.ones(shape_of((1, 3), (x.shape[0], -1)))
        return np.sum(c)

    assert _shapes(f, np.ones((2, 3)))["c"] is None


def test_a_slice_of_one_unknown_keeps_its_length():
    """`x[i:i + 3]` and `x[3 * i:3 * (i + 1)]` move with i: their length is known (a loop's
    index is a number the analysis does not know), as `x[lo:hi]` of two unknowns is not."""

    def blocks(x):
        total = 0.0
        for i in range(int(np.sum(x > 10.0)), 2):
            a = x[i : i + 3]
            b = x[3 * i : 3 * (i + 1)]
            total = total + np.sum(a * b)
        lo = min([s + 3 if s > 99 else 0 for s in x.shape])
        hi = max([s + 5 if s > 99 else 2 for s in x.shape])
        c = x[lo:hi]
        return total + np.sum(c)

    shapes = _shapes(blocks, np.ones(12))
    assert shapes["a"] == (3,) and shapes["b"] == (3,)
    assert shapes["c"] is None


def reduced_along_an_axis_not_known(x):
    a = np.sum(x, axis=0)  # (before: its shape, remembered, was np.sum(x, axis=k)'s below)
    k = max([0 if s == 9 else 1 for s in x.shape])  # (sample 0; 1 when it runs)
    b = np.sum(x, axis=k)
    return np.sum(a) + len(b) * np.sum(x**2)  # (before: len(b) was 3, not 2)


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_a_remembered_shape_is_not_one_an_unknown_number_decides(front_end):
    x = np.random.default_rng(54).normal(size=(2, 3))
    fn = reduced_along_an_axis_not_known
    close(gradient(fn, front_end)(x.copy()), numeric_grad(fn, (x.copy(),), 0))
