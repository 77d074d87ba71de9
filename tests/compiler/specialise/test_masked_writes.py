"""Boolean-mask writes and reads (`_z[z < 0] = _z[z < 0] * alpha`, the stable sigmoid's
`z[pos] = np.exp(-x[pos])`), as published layer libraries write them (issue 39): the
gradient against central differences in float64, and what the generated code does.

- A write through a mask leaves the array's shape as it was, whatever the (data-dependent)
  length of the part: shape inference says so, so the code after it is specialised (no
  `unbroadcast` or run-time rule choice downstream).
- The adjoint of a masked read is zeros with the part assigned at the mask: a boolean mask
  names each element once, so no `np.add.at` (an integer index still accumulates).
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import runtime
from sourcegrad.api import numeric_grad


def leaky(W, X):
    z = X @ W
    _z = z.copy()
    _z[z < 0] = _z[z < 0] * 0.3
    return np.sum(_z**2)


def stable_sigmoid(x):
    pos_mask = x >= 0
    neg_mask = x < 0
    z = np.zeros_like(x)
    z[pos_mask] = np.exp(-x[pos_mask])
    z[neg_mask] = np.exp(x[neg_mask])
    top = np.ones_like(x)
    top[neg_mask] = z[neg_mask]
    return top / (1 + z)


def sigmoid_loss(a, G):
    return np.sum(stable_sigmoid(a) * G)


RNG = np.random.default_rng(3)


def _close(ours, numeric):
    np.testing.assert_allclose(ours, numeric, rtol=1e-6, atol=1e-8)


def test_leaky_relu_by_mask_matches_finite_differences_and_is_specialised():
    W, X = RNG.normal(size=(5, 4)), RNG.normal(size=(7, 5))
    g = sourcegrad.grad(leaky)
    _close(g(W, X), numeric_grad(leaky, (W, X), 0))
    source = g._last.source
    # the write keeps the array's shape: nothing after it is left to run time
    assert "unbroadcast(np.broadcast_to" not in source and "vjp_at_run_time" not in source


def test_stable_sigmoid_by_masks_matches_finite_differences():
    a, G = RNG.normal(scale=3.0, size=(6, 5)), RNG.normal(size=(6, 5))
    g = sourcegrad.grad(sigmoid_loss)
    _close(g(a, G), numeric_grad(sigmoid_loss, (a, G), 0))
    s = 1.0 / (1.0 + np.exp(-a))
    np.testing.assert_allclose(g(a, G), G * s * (1 - s), rtol=1e-12)
    # far out, where exp(-x) overflows for the other mask: still finite and right
    far = np.array([[-800.0, -30.0, 0.0, 30.0, 800.0]])
    got = g(far, np.ones_like(far))
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got[0, 1:4], [np.exp(-30.0), 0.25, np.exp(-30.0)], rtol=1e-12)


@pytest.mark.parametrize(
    "index",
    [
        np.array([[True, False, True], [False, True, True]]),
        (slice(None), np.array([True, False, True])),
    ],
)
def test_unindex_through_a_boolean_mask_assigns(index):
    x = np.zeros((2, 3))
    part = np.arange(1.0, 1.0 + x[index].size).reshape(x[index].shape)
    out = runtime.unindex(part, x, index)
    expected = np.zeros_like(x)
    expected[index] = part
    np.testing.assert_array_equal(out, expected)
    assert not runtime._has_array_index(index)


def test_unindex_through_repeated_integers_still_accumulates():
    out = runtime.unindex(np.array([1.0, 2.0, 4.0]), np.zeros(3), np.array([0, 0, 2]))
    np.testing.assert_array_equal(out, [3.0, 0.0, 4.0])
    assert runtime._has_array_index((np.array([0, 0, 2]), np.array([True])))


# -- masked writes made selections (specialise/masked_writes.py) --------------------------------


def relu_by_mask(x, w):
    out = (x * w).copy()
    out[x * w <= 0] = 0
    return np.sum(np.sin(out))


def scaled_twice(x):
    y = np.tanh(x)
    y[x > 0.1] = y[x > 0.1] * 2.0 / 4.0
    return np.sum(y**2)


@pytest.mark.parametrize(
    "fn, args",
    [
        (
            leaky,
            (
                np.random.default_rng(1).normal(size=(3, 4)),
                np.random.default_rng(2).normal(size=(5, 3)),
            ),
        ),
        (relu_by_mask, (np.random.default_rng(3).normal(size=(4, 3)), 0.7)),
        (scaled_twice, (np.random.default_rng(4).normal(size=(2, 5)),)),
    ],
    ids=["leaky", "relu", "scaled_twice"],
)
def test_masked_writes_of_the_arrays_shape_are_selections(fn, args):
    g = sourcegrad.grad(fn)
    got = g(*args)
    assert "np.where(" in g.source and "setitem" not in g.source
    assert "zero_at" not in g.source
    np.testing.assert_allclose(got, numeric_grad(fn, args, 0), rtol=1e-6, atol=1e-8)


def test_a_selection_keeps_float32():
    x = np.random.default_rng(5).normal(size=(3, 3)).astype(np.float32)
    g = sourcegrad.grad(scaled_twice)
    assert g(x).dtype == np.float32
    assert "np.where(" in g.source


def rows_by_mask(x):
    y = x * 1.0
    y[x[:, 0] > 0] = y[x[:, 0] > 0] * 0.5  # a mask of rows: not of the array's shape
    return np.sum(y**2)


def exp_of_part(x):
    y = x * 1.0
    y[x < 0] = np.exp(y[x < 0])  # not a scale: exp of the masked-out elements may overflow
    return np.sum(y)


def gather_read_twice(x):
    y = x * 1.0
    part = y[x < 0] * 0.5
    y[x < 0] = part
    return np.sum(y) + np.sum(part)  # the scaled part read again


def number_over_part(x):
    y = x * 1.0
    y[x > 0.5] = 1.0 / y[x > 0.5]  # infinite at a masked-out zero
    return np.sum(y)


@pytest.mark.parametrize("fn", [rows_by_mask, exp_of_part, gather_read_twice, number_over_part])
def test_other_masked_writes_stay_writes(fn):
    x = np.random.default_rng(6).normal(size=(4, 3))
    g = sourcegrad.grad(fn)
    got = g(x)
    assert "setitem" in g.source
    np.testing.assert_allclose(got, numeric_grad(fn, (x,), 0), rtol=1e-6, atol=1e-8)
