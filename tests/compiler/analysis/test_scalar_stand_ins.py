"""Abstract values of results that numpy returns as numpy scalars (a full sum, an ufunc of
0-d arrays, vector @ vector) are numpy scalars too, so a running total that starts as a
Python float keeps a known shape through a loop: the backward neither saves it every
trip nor unbroadcasts its adjoint."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from sourcegrad.compiler.analysis import aval_of, infer_shapes


def shapes_of(fn, *args):
    g = sourcegrad.grad(fn)
    return infer_shapes(g.ir(args), [aval_of(a) for a in args])


def results(x, y):
    total = np.sum(x)
    along = np.sum(x, axis=0)
    inner = x[0] @ y
    zero_d = np.sin(np.array(0.5)) * total
    picked = np.where(np.array(True), np.array(1.0), 2.0)
    return total + np.sum(along) + inner + zero_d + picked


def test_stand_ins_have_the_types_numpy_returns():
    x, y = np.ones((2, 3)), np.ones(3)
    env = shapes_of(results, x, y)
    by_name = {name: env[name].stand_in for name in env if env[name] is not None}
    assert type(by_name["total"]) is np.float64
    assert by_name["along"].shape == (3,)
    assert type(by_name["inner"]) is np.float64
    assert type(by_name["zero_d"]) is np.float64
    assert type(by_name["picked"]) is np.ndarray and by_name["picked"].shape == ()
    # each as numpy computes it
    assert type(np.sum(x)) is np.float64 and type(x[0] @ y) is np.float64
    assert type(np.where(np.array(True), np.array(1.0), 2.0)) is np.ndarray


def running_total(w, xs):
    s = 0.0
    for t in range(xs.shape[0]):
        s = s + np.sum(np.tanh(w * xs[t]))
    return s


def epochs(w, xs):
    s = 0.0
    for _ in range(2):
        for t in range(xs.shape[0]):
            s = s + np.sum(np.tanh(w * xs[t])) + xs[t] @ w
        w = w * 0.9
    return s


@pytest.mark.parametrize("fn", [running_total, epochs])
def test_a_running_total_is_not_saved(fn):
    rng = np.random.default_rng(0)
    w, xs = rng.normal(size=3), rng.normal(size=(5, 3))
    g = sourcegrad.grad(fn, wrt=(0, 1))
    dw, dxs = g(w, xs)
    np.testing.assert_allclose(dw, numeric_grad(fn, (w, xs), 0), rtol=1e-6)
    np.testing.assert_allclose(dxs, numeric_grad(fn, (w, xs), 1), rtol=1e-6)
    assert "saved.append(s)" not in g.source
    assert "unbroadcast" not in g.source
    value, (dw2, dxs2) = sourcegrad.value_and_grad(fn, wrt=(0, 1))(w, xs)
    assert value == pytest.approx(fn(w, xs), rel=1e-12)
    np.testing.assert_array_equal(dw2, dw)
