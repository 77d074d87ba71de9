"""A loop the trace ran, rolled back into a loop (`sourcegrad.compiler.trace.rolling`).

Tracing runs the user's Python loops; where every iteration recorded the same statements
the trace writes them once, in a `for` loop, instead of one copy per iteration. Each program
here is traced (it builds an object the source front end has no rule for, as published
layer code does), and its gradient is checked against central finite differences and
against the same trace left unrolled; the generated code is checked to hold the loop where
the iterations agree, and to be the unrolled trace where they do not.
"""

import copy
import re

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import memory_caches
from sourcegrad.bench import layers
from sourcegrad.compiler.trace import rolling

from .test_trace_frontend import numeric  # (on fresh copies: some programs write in place)

RNG = np.random.default_rng(7)


class Weights:
    """An object built inside the function: the source front end stops there, the trace
    runs the rest."""

    def __init__(self, w):
        self.w = w


LOOP = re.compile(r"^ +for \w+ in (reversed\()?range\(", re.M)


def unrolled(fn, args, wrt, monkeypatch):
    memory_caches.clear()  # (the rolled code compiled for the same function and signature)
    with monkeypatch.context() as m:
        m.setattr(rolling, "MIN_ITERATIONS", 10**9)
        g = sourcegrad.grad(fn, wrt=wrt)
        result = g(*copy.deepcopy(args))
        assert not LOOP.search(g.source), g.source
    memory_caches.clear()
    return result


def check(fn, args, monkeypatch, rolled=True, wrt=0):
    g = sourcegrad.grad(fn, wrt=wrt)
    got = g(*copy.deepcopy(args))
    assert "Traced" in g.source
    assert bool(LOOP.search(g.source)) is rolled, g.source
    np.testing.assert_allclose(got, numeric(fn, args, wrt), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, unrolled(fn, args, wrt, monkeypatch), rtol=1e-13, atol=1e-14)
    return g


# -- rolled ------------------------------------------------------------------------------------


def sum_over_rows(w, xs):
    p = Weights(w)
    s = 0.0
    for x in xs:
        s = s + np.sum(np.sin(x * p.w))
    return s


def test_a_sum_carried_from_a_constant(monkeypatch):
    g = check(sum_over_rows, (RNG.normal(size=3), RNG.normal(size=(12, 3))), monkeypatch)
    assert "for i in range(12):" in g.source
    assert "xs[i]" in g.source


def rnn(h0, W, xs):
    p = Weights(W)
    h = h0
    for x in xs:
        h = np.tanh(p.w @ h + x)
    return np.sum(h**2)


def test_a_hidden_state_carried_from_an_argument(monkeypatch):
    args = (RNG.normal(size=4), RNG.normal(size=(4, 4)) / 2, RNG.normal(size=(10, 4)))
    check(rnn, args, monkeypatch, wrt=0)
    check(rnn, args, monkeypatch, wrt=1)


def counted(x, w):
    p = Weights(w)
    s = 0.0
    for k in range(2, 14):
        s = s + x[k] * k * p.w
    return s


def test_the_index_counting_from_two(monkeypatch):
    g = check(counted, (RNG.normal(size=14), 0.7), monkeypatch)
    assert "range(2, 14)" in g.source


def two_loops(x, ys):
    p = Weights(x)
    a = 0.0
    for y in ys:
        a = a + np.sum(np.exp(p.w * y))
    b = a
    for y in ys[::-1]:
        b = b * np.cos(np.sum(y * p.w)) + a
    return b


def test_two_loops_one_after_the_other(monkeypatch):
    g = check(two_loops, (RNG.normal(size=2) / 3, RNG.normal(size=(9, 2))), monkeypatch)
    assert g.source.count("range(9)") == 4  # two loops, forward and backward


def nested(w, xs):
    p = Weights(w)
    s = 0.0
    for x in xs:
        for j in range(3):
            s = s + np.sum(np.sin(x * p.w + j))
    return s


def test_a_loop_holding_a_short_loop(monkeypatch):
    g = check(nested, (RNG.normal(size=2), RNG.normal(size=(8, 2))), monkeypatch)
    assert "range(8)" in g.source


def last_value_after(w, xs):
    p = Weights(w)
    s = 0.0
    h = w
    for x in xs:
        h = np.sin(h * x)
        s = s + np.sum(h)
    return s + np.sum(h * p.w)


def test_the_last_iterations_values_read_after_the_loop(monkeypatch):
    check(last_value_after, (RNG.normal(size=3), RNG.normal(size=(8, 3))), monkeypatch)


def guarded(x, ws):
    p = Weights(ws)
    s = 0.0
    for k in range(10):
        if p.w[k] > -10.0:  # a decision on a value no gradient flows through: a guard
            s = s + x[k] ** 2
    return s


def test_a_guard_in_every_iteration(monkeypatch):
    g = check(guarded, (RNG.normal(size=10), RNG.normal(size=10)), monkeypatch)
    got = g(np.ones(10), np.full(10, -20.0))  # the other path: traced again
    assert got == pytest.approx(np.zeros(10))


def filled(x, W):
    p = Weights(W)
    N, T, D = x.shape
    h = np.zeros((N, T, D))
    prev = np.zeros((N, D))
    for t in range(T):
        prev = np.tanh(x[:, t, :] @ p.w + prev)
        h[:, t, :] = prev  # an update in place, iteration by iteration
    return np.sum(h**2)


def test_an_array_filled_in_place_column_by_column(monkeypatch):
    g = check(filled, (RNG.normal(size=(2, 9, 3)), RNG.normal(size=(3, 3)) / 2), monkeypatch, wrt=1)
    assert "x[:, i, :]" in g.source


class Layer:
    def __init__(self, w):
        self.w = w

    def forward(self, xs):
        out = 0.0
        for x in xs:
            out = out + np.sum(np.cos(self.w * x))
        return out


def loop_in_a_method(w, xs):
    return Layer(w).forward(xs) ** 2


def test_a_loop_in_a_method_the_function_calls(monkeypatch):
    check(loop_in_a_method, (RNG.normal(size=3) / 2, RNG.normal(size=(10, 3))), monkeypatch)


def stacked(h0, xs):
    p = Weights(h0)
    hs = []
    h = p.w
    for x in xs:
        h = np.tanh(h + x)
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)  # every iteration's value read after the loop


def test_every_iterations_value_stacked_after_the_loop(monkeypatch):
    g = check(stacked, (RNG.normal(size=3), RNG.normal(size=(9, 3))), monkeypatch)
    assert "list_append(" in g.source and "unstack_list(" in g.source


def concatenated_twice(w, xs):
    p = Weights(w)
    parts = []
    for x in xs:
        parts.append(np.sin(x * p.w))
    both = np.concatenate(parts) + np.concatenate(parts[::-1])  # the reversed list: unrolled
    return np.sum(both**2)


def test_a_list_read_otherwise_than_in_order_stays_unrolled(monkeypatch):
    check(
        concatenated_twice, (RNG.normal(size=2), RNG.normal(size=(8, 2))), monkeypatch, rolled=False
    )


def test_the_textbook_per_example_network():
    rng = np.random.default_rng(0)
    size = type("Size", (), {"params": dict(n=64, d=30, h=20, o=10)})
    args = layers.per_example_args(rng, size)
    g = sourcegrad.grad(layers.per_example, wrt=(0, 1, 2, 3))
    for got, hand in zip(g(*args), layers.per_example_hand(*args)):
        np.testing.assert_allclose(got, hand, rtol=1e-12, atol=1e-14)
    assert "for i in range(64):" in g.source
    assert g.source.count("np.dot(w1, x)") == 1


def scaled_by_its_own_cosine(x0, c):
    p = Weights(1.0)
    c = c * p.w
    for i in range(9):
        c *= np.cos(x0 + c[1])  # the backward of c * y reads the c it overwrites
    return np.sum(c)


def test_a_carried_value_whose_own_backward_reads_it(monkeypatch):
    """Fuzz r9-1488: the rolled `c = c * y` read the new c where its backward needed the
    old one (restored from the saved stack): computed into a temporary first, as the source
    front end writes it."""
    g = check(scaled_by_its_own_cosine, (0.3, np.array([0.5, -0.2, 0.9])), monkeypatch)
    assert "range(9)" in g.source


# -- left unrolled ---------------------------------------------------------------------------


def float_constants_changing(x, w):
    p = Weights(w)
    s = 0.0
    for k in range(10):
        s = s + x[k] * 0.5**k * p.w  # a constant of its own per iteration
    return s


def branches_alternating(x, w):
    p = Weights(w)
    s = 0.0
    for k in range(10):
        s = s + x[k] * p.w if k % 2 else s - np.sin(x[k])
    return s


SHORT = rolling.MIN_ITERATIONS - 1


def masked(x, w):
    p = Weights(w)
    s = 0.0
    for k in range(10):
        row = x[k]
        # as many elements as the mask holds: a shape each (rolled for the numba backend
        # only: test_trace_rolling_masks.py)
        s = s + np.sum(row[row > 0] * p.w)
    return s


def argument_updated_in_place(h0, xs):
    p = Weights(xs)
    h = h0
    for x in p.w:
        h *= np.tanh(x)  # in place, into the caller's array: not the loop's to own
    return np.sum(h)


def short(x, w):
    p = Weights(w)
    s = 0.0
    for k in range(SHORT):
        s = s + x[k] * p.w
    return s


def breaks(x, w):
    p = Weights(w)
    s = 0.0
    for k in range(10):
        if k == 9:
            break
        s = s + x[k] * p.w
    return s


@pytest.mark.parametrize(
    "fn, args",
    [
        (float_constants_changing, (RNG.normal(size=10), 0.3)),
        (branches_alternating, (RNG.normal(size=10), 0.3)),
        (short, (RNG.normal(size=10), 0.3)),
        (masked, (RNG.normal(size=(10, 6)), 0.3)),
        (argument_updated_in_place, (RNG.normal(size=3), RNG.normal(size=(9, 3)))),
        (breaks, (RNG.normal(size=10), 0.3)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_iterations_that_differ_stay_unrolled(fn, args, monkeypatch):
    check(fn, args, monkeypatch, rolled=False)


# -- the pass alone, on statements made by hand ----------------------------------------------


def _recorded(n, constant=lambda k: 1.0):
    """What a trace of `s = 0.0; for k in range(n): s = s + x[k] * c(k)` records."""
    from sourcegrad.compiler.ir import Assign, Call, Const, Var

    body, starts, carried = [], [], Const(0.0)
    for k in range(n):
        starts.append(len(body))
        body += [
            Assign(f"x{k}", Call("getitem", (Var("x"), Const(k)))),
            Assign(f"m{k}", Call("mul_op", (Var(f"x{k}"), Const(constant(k))))),
            Assign(f"s{k}", Call("add_op", (carried, Var(f"m{k}")))),
        ]
        carried = Var(f"s{k}")
    starts.append(len(body))
    return body + [Assign("out", Call("sin", (carried,)))], starts


def test_roll_alone_writes_one_iteration_in_a_loop():
    from sourcegrad.compiler.ir import Assign, Const, For, Var
    from sourcegrad.compiler.names import Namer

    body, starts = _recorded(10)
    out = rolling.roll(body, [rolling.Loop(None, starts)], Namer(), {}, {})
    assert [type(s) for s in out] == [Assign, For, Assign]
    assert out[0].target == "s0" and out[0].value == Const(0.0)  # the carried value's start
    loop = out[1]
    assert (loop.start, loop.stop) == (Const(0), Const(10))
    assert loop.body[0].value.args == (Var("x"), Var(loop.target))
    assert loop.body[2].value.args == (Var("s0"), Var("m0"))
    assert out[2].value.args == (Var("s0"),)  # after the loop: the last iteration's value


def test_roll_alone_leaves_iterations_that_differ():
    from sourcegrad.compiler.names import Namer

    body, starts = _recorded(10, constant=lambda k: 0.5**k)
    assert rolling.roll(body, [rolling.Loop(None, starts)], Namer(), {}, {}) == body
    body, starts = _recorded(10)
    shapes = {f"m{k}": (k,) for k in range(10)}  # a shape each: kept as recorded
    assert rolling.roll(body, [rolling.Loop(None, starts)], Namer(), shapes, {}) == body
