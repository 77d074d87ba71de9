"""Rolling a traced loop whose iterations differ only in how many elements a boolean mask
selects (`sourcegrad.compiler.trace.rolling._counted`): an LSTM step's stable sigmoid by
masks (`z[m] = np.exp(-x[m])`), a ReLU'd sum per row. The rolled code is written for any
count (stage 3 gives a selection by a mask no length), so one compiled gradient must be right
for data whose masks select other counts than the trace's: each program here is compiled
once, then called on several inputs, each checked against central finite differences (and
the LSTM against its hand-written backward). The cases that must stay unrolled: a count read
as a number, a selection carried from one iteration to the next, selections gathered in a
list after the loop.

The trace rolls such loops for the numba backend only (`trace_function(roll_counts=True)`);
here the numpy backend runs the code the numba backend is given (`rolls_counts`): the same
IR, compiled in a fraction of a second.
"""

import copy
from types import SimpleNamespace

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import compiling, memory_caches
from sourcegrad.bench import layers
from sourcegrad.compiler.trace import rolling
from sourcegrad.compiler.trace.recorder import trace_function

from .test_trace_frontend import numeric
from .test_trace_rolling import Weights, check

RNG = np.random.default_rng(17)


@pytest.fixture(autouse=True)
def rolls_counts(monkeypatch):
    """Every trace made as the numba backend's is (`roll_counts=True`)."""

    def traced(*args, **kwargs):
        return trace_function(*args, **{**kwargs, "roll_counts": True})

    monkeypatch.setattr(compiling, "trace_function", traced)
    memory_caches.clear()
    yield
    memory_caches.clear()


def _on_other_inputs(g, fn, inputs, wrt=0):
    """`g` (compiled once) on each of `inputs`: central finite differences' gradient."""
    for args in inputs:
        got = g(*copy.deepcopy(args))
        np.testing.assert_allclose(got, numeric(fn, args, wrt), rtol=1e-6, atol=1e-8)


def relu_sums(x, w):
    p = Weights(w)
    s = 0.0
    for k in range(10):
        row = x[k]
        s = s + np.sum(row[row > 0] * p.w)  # as many elements as the mask holds: a shape each
    return s


def test_selections_of_different_lengths_are_rolled(monkeypatch):
    x = RNG.normal(size=(10, 6))
    assert len({int((row > 0).sum()) for row in x}) > 1  # (the counts differ per iteration)
    g = check(relu_sums, (x, 0.3), monkeypatch)
    assert "range(10)" in g.source
    others = [(RNG.normal(size=(10, 6)) + shift, 0.3) for shift in (-1.0, 0.0, 1.0)]
    others.append((np.abs(RNG.normal(size=(10, 6))), 0.3))  # (every element selected)
    others.append((-np.abs(RNG.normal(size=(10, 6))), 0.3))  # (none)
    _on_other_inputs(g, relu_sums, others)


def sigmoid_steps(x, w):
    """The stable sigmoid of course code (two masks, written through and read through)
    over a loop carrying a state."""
    p = Weights(w)
    h = np.zeros(x.shape[1:])
    for t in range(x.shape[0]):
        h = layers.stable_sigmoid(x[t] + p.w * h)
    return np.sum(h**2)


def test_the_stable_sigmoid_in_a_loop_is_rolled(monkeypatch):
    args = (RNG.normal(size=(9, 3, 4)), 0.7)
    g = check(sigmoid_steps, args, monkeypatch)
    assert "range(9)" in g.source
    _on_other_inputs(g, sigmoid_steps, [(RNG.normal(size=(9, 3, 4)) * 3, 0.7) for _ in range(3)])
    g = check(sigmoid_steps, args, monkeypatch, wrt=1)
    _on_other_inputs(g, sigmoid_steps, [(RNG.normal(size=(9, 3, 4)), -0.4)], wrt=1)


def test_the_numpy_backend_leaves_them_unrolled(monkeypatch):
    """(its optimizer makes the adjoints through masks whole-array selections on unrolled
    statements only)"""
    monkeypatch.setattr(compiling, "trace_function", trace_function)
    g = sourcegrad.grad(relu_sums)
    g(RNG.normal(size=(10, 6)), 0.3)
    assert "range(10)" not in g.source


def test_the_layers_lstm_is_rolled_and_its_gradient_is_the_hand_written_one():
    size = SimpleNamespace(params=dict(n=3, t=9, d=3, h=2))
    g = sourcegrad.grad(layers.lstm, wrt=(0, 1, 2))
    for seed in range(4):  # (one compiled gradient; the masks' counts change with the data)
        args = layers.lstm_args(np.random.default_rng(seed), size)
        for got, hand in zip(g(*args), layers.lstm_hand(*args)):
            np.testing.assert_allclose(got, hand, rtol=1e-12, atol=1e-14)
    assert "for i in range(9):" in g.source
    args = layers.lstm_args(np.random.default_rng(9), size)
    for k in range(3):
        np.testing.assert_allclose(g(*args)[k], numeric(layers.lstm, args, k), rtol=1e-6, atol=1e-8)


# -- left unrolled ---------------------------------------------------------------------------


def count_read(x, w):
    p = Weights(w)
    s = 0.0
    for k in range(10):
        row = x[k]
        kept = row[row > 0]
        s = s + np.sum(kept * p.w) / (len(kept) + 1)  # the count, a number of the trace's
    return s


def selections_carried(x, w):
    p = Weights(w)
    kept = x[0][x[0] > 0]
    for k in range(1, 10):
        row = x[k] * p.w
        kept = np.concatenate([kept[1:], row[row > 0]])  # a carried value of changing length
    return np.sum(kept**2)


def selections_gathered(x, w):
    p = Weights(w)
    parts = []
    for k in range(10):
        row = x[k] * p.w
        parts.append(row[row > 0])
    return np.sum(np.concatenate(parts) ** 2)


def test_a_count_read_as_a_number_stays_unrolled(monkeypatch):
    x = RNG.normal(size=(10, 6))
    g = check(count_read, (x, 0.3), monkeypatch, rolled=False)
    _on_other_inputs(g, count_read, [(x, -0.5)])


def test_a_selection_carried_or_gathered_stays_unrolled(monkeypatch):
    x = RNG.normal(size=(10, 6))
    check(selections_carried, (x, 0.3), monkeypatch, rolled=False)
    check(selections_gathered, (x, 0.3), monkeypatch, rolled=False)


# -- the pass alone --------------------------------------------------------------------------


def _selections(n):
    """What a trace of `s = 0.0; for k in range(n): r = x[k]; s = s + sum(r[r > 0])`
    records, the k-th selection holding k elements."""
    from sourcegrad.compiler.ir import Assign, Call, Const, Var

    body, starts, carried, shapes = [], [], Const(0.0), {}
    for k in range(n):
        starts.append(len(body))
        body += [
            Assign(f"r{k}", Call("getitem", (Var("x"), Const(k)))),
            Assign(f"m{k}", Call("greater", (Var(f"r{k}"), Const(0)))),
            Assign(f"p{k}", Call("getitem", (Var(f"r{k}"), Var(f"m{k}")))),
            Assign(f"t{k}", Call("sum", (Var(f"p{k}"),))),
            Assign(f"s{k}", Call("add_op", (carried, Var(f"t{k}")))),
        ]
        shapes.update({f"r{k}": (6,), f"m{k}": (6,), f"p{k}": (k,), f"t{k}": (), f"s{k}": ()})
        carried = Var(f"s{k}")
    starts.append(len(body))
    return body + [Assign("out", Call("sin", (carried,)))], starts, shapes


def test_roll_alone_takes_a_selections_length_as_unknown_only_by_a_mask():
    from sourcegrad.compiler.ir import For
    from sourcegrad.compiler.names import Namer

    body, starts, shapes = _selections(10)
    masks = {f"m{k}" for k in range(10)}
    out = rolling.roll(body, [rolling.Loop(None, starts)], Namer(), shapes, {}, masks)
    assert any(isinstance(s, For) for s in out)
    # without the masks (an index of integers, whose selection is not the data's to size)
    assert rolling.roll(body, [rolling.Loop(None, starts)], Namer(), shapes, {}) == body
    # a shape of another rank: not a count's difference
    ranked = dict(shapes, p3=(3, 1))
    assert rolling.roll(body, [rolling.Loop(None, starts)], Namer(), ranked, {}, masks) == body
