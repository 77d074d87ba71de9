"""optimize.list_adjoints: a list read item by item at every position (`a, b, c =
np.split(x, 3)`) gets the list of the items' adjoints as its adjoint, not a sum of one list
of zeros per item. Gradients checked against central differences (float64); the source
checked for the rewrite where it applies and its absence where it must not."""

import numpy as np

import sourcegrad
from sourcegrad.api import numeric_grad


def every_item(x, w):
    a, b, c = np.split(x * w, 3, axis=1)
    return np.sum(np.tanh(a) * b + c * c * 2.0)


def first_two(x, w):  # the third piece unread: its adjoint stays zeros
    a, b, _ = np.split(x * w, 3, axis=1)
    return np.sum(np.sin(a) * 3.0 + b * b)


def last_two(x, w):  # positions 1 and 2 alone: no prefix of the list, left as it is
    _, b, c = np.split(x * w, 3, axis=1)
    return np.sum(np.sin(b) * 3.0 + c * c)


def item_read_twice(x, w):  # the same position twice: its adjoints are summed
    parts = np.split(x * w, 2, axis=0)
    return np.sum(parts[0] * parts[1] + np.cos(parts[0]))


def _args():
    rng = np.random.default_rng(0)
    return rng.normal(size=(4, 6)), rng.normal(size=(4, 6))


def _check(fn):
    args = _args()
    grads = sourcegrad.grad(fn, wrt=(0, 1))(*args)
    for pos, g in enumerate(grads):
        np.testing.assert_allclose(g, numeric_grad(fn, args, pos), rtol=1e-6, atol=1e-8)
    return sourcegrad.grad(fn, wrt=(0, 1)).compile(args).source


def test_every_position_read_gives_the_list_of_adjoints():
    source = _check(every_item)
    assert "add_adjoints" not in source
    assert "np.s_[0:3]" in source


def test_an_item_past_those_read_keeps_its_zeros():
    source = _check(first_two)
    assert "add_adjoints" not in source
    assert "np.s_[0:2]" in source


def test_positions_not_from_the_first_are_summed_as_before():
    source = _check(last_two)
    assert "add_adjoints" in source
    assert "np.s_[" not in source


def test_a_position_read_twice_is_summed():
    _check(item_read_twice)
