"""Shapes the data decide, read by the program (`len`, `.shape`, `.size`): never a constant
of the generated code.

Two ways a shape comes from the data: a number the compiler does not know decides it
(`np.ones(n)`, `w[:n]`, `range(n)` with `n = int(np.sum(w > 0))`: analysis/value_shapes.py),
or an array's values do (`np.nonzero(w > 0)`, `np.repeat(x, counts)`, `np.where(c)`: the
registry's property "data_shaped"). Before, the source front end's shape inference gave such
a result its stand-in's shape, and the trace took the first call's count without a guard:
`n * np.sum(w)` with `n = len(np.nonzero(w > 0)[0])` had the gradient 0 (a silently wrong
gradient). Each function is called on inputs that give other counts, through both front
ends, and checked against central finite differences.
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad

COUNTS = {
    "nonzero": lambda w: len(np.nonzero(w > 0)[0]),
    "argwhere": lambda w: np.argwhere(w > 0).shape[0],
    "where_of_a_condition": lambda w: np.where(w > 0)[0].size,
    "flatnonzero": lambda w: len(np.flatnonzero(w > 0.5)),
    "repeat_by_counts": lambda w: len(np.repeat(w, (w > 0).astype(int))),
    "ones_of_a_count": lambda w: len(np.ones(int(np.sum(w > 0)))),
    "arange_of_a_count": lambda w: np.arange(int(np.sum(w > 0))).size,
    "zeros_of_a_shape": lambda w: np.zeros((2, int(np.sum(w > 0)))).shape[1],
    "reshape_to_minus_one": lambda w: np.ones(int(np.sum(w > 0)) * 2).reshape(2, -1).shape[1],
    "slice_to_a_count": lambda w: len(w[: int(np.sum(w > 0))]),
    "tile_by_a_count": lambda w: len(np.tile(w[:1], int(np.sum(w > 0)))),
    "list_times_a_count": lambda w: len([0.0] * int(np.sum(w > 0))),
    "range_of_a_count": lambda w: len(range(int(np.sum(w > 0)))),
    "eye_of_a_count": lambda w: np.eye(int(np.sum(w > 0))).shape[0],
    "linspace_of_a_count": lambda w: len(np.linspace(0.0, 1.0, int(np.sum(w > 0)))),
}


def _loss(count):
    def loss(w):
        n = count(w)
        return np.sum(w[:n] ** 2) + n * np.sum(w)

    return loss


INPUTS = [
    np.array([0.13, 1.3, -0.4, 2.2, 0.6]),
    np.array([-0.13, -1.3, -0.4, 2.2, 0.6]),
    np.array([1.13, 1.3, 0.4, 2.2, 0.6]),
]


@pytest.mark.parametrize("front_end", ["source", "trace"])
@pytest.mark.parametrize("name", sorted(COUNTS))
def test_a_count_the_data_decide_is_the_datas_on_every_call(name, front_end, monkeypatch):
    if front_end == "trace":
        monkeypatch.setattr(sourcegrad.Gradient, "reads_source", False)
    loss = _loss(COUNTS[name])
    g = sourcegrad.grad(loss)
    assert len({COUNTS[name](w) for w in INPUTS}) > 1  # (the inputs do give other counts)
    for w in INPUTS:
        np.testing.assert_allclose(g(w), numeric_grad(loss, (w,), 0), rtol=1e-6, atol=1e-8)


def test_a_loop_index_keeps_the_shape_it_does_not_decide():
    """`x[i]` of a loop's index i has one shape whatever i is: it keeps it (the loop's
    gradient is compiled as before)."""

    def rows(x):
        total = 0.0
        for i in range(x.shape[0]):
            total = total + np.sum(np.tanh(x[i]) * x[i].shape[0])
        return total

    x = np.random.default_rng(0).normal(size=(4, 3))
    np.testing.assert_allclose(sourcegrad.grad(rows)(x), numeric_grad(rows, (x,), 0), rtol=1e-6)
