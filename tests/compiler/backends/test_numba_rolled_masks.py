"""The numba backend on a rolled loop that writes and reads through boolean masks (issue 39:
the layers LSTM, whose stable sigmoid's masks select a different count each step, rolled by
the trace: `trace/rolling.py`). Inside a loop the optimizer leaves the runtime's copying
forms (`setitem(x, m, v)`, `zero_at(g, m)`, `zero_at(g, (np.s_[:], i, np.s_[:]))`,
`unbroadcast(g[m], y)`); the numba variant writes them as helpers numba compiles, and drops
a zeroing nothing reads (`numba_loop_writes`). The text is checked without compiling; the helpers against the runtime's, and the compiled LSTM
against its hand-written backward on data of other counts than the first call's, are `slow`
(numba takes tens of seconds for them: `pytest -m slow`)."""

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import sourcegrad
from sourcegrad import runtime
from sourcegrad.api import compiling, memory_caches, numeric_grad
from sourcegrad.bench.layers import lstm, lstm_args, lstm_hand
from sourcegrad.compiler.backends import numba_backend, numba_loop_writes, numba_masks
from sourcegrad.compiler.trace.recorder import trace_function
from sourcegrad.errors import JitFallbackWarning

SIZE = SimpleNamespace(params=dict(n=3, t=8, d=3, h=2))


def _code(text, start):
    """The function from `start` on, its comments dropped (not the helpers' docstrings)."""
    return "\n".join(line.split("#")[0] for line in text[text.index(start) :].splitlines())


def test_the_rolled_lstms_copying_writes_become_the_helpers(monkeypatch):
    """(the numpy text the numba backend is given: traced as for it, `roll_counts`)"""

    def traced(*args, **kwargs):
        return trace_function(*args, **{**kwargs, "roll_counts": True})

    monkeypatch.setattr(compiling, "trace_function", traced)
    memory_caches.clear()
    g = sourcegrad.grad(lstm, wrt=(0, 1, 2))
    g(*lstm_args(np.random.default_rng(0), SIZE))
    assert "for i in range(8):" in g.source
    for form in ("= setitem(", "= zero_at(", "unbroadcast(", "unindex("):
        assert form in g.source
    code = _code(numba_backend.numba_source(g.source), "def dlstm")
    for helper in ("setitem_masked(", "zero_at_masked(", "unbroadcast_masked("):
        assert helper in code
    # (the adjoint of `h[:, t, :] = prev_h`: each step reads its part. Since setitem's
    # templates test for a list's slice (list_slice_write), the part is read from a copy of
    # the name made before the zeroing, `d_h_now[:, i, :]`, and the zeroing stays: it was
    # `d_h[:, i, :]` with the zeroing dropped. The numbers are the same; the dropped zeroing,
    # on this path numba does not take by default (ROLL_MASK_COUNTS_FOR_NUMBA), is to win back)
    assert "d_h_now[:, i, :]" in code or ("d_h = zero_at" not in code and "d_h[:, i, :]" in code)
    for form in (" setitem(", " zero_at(", " unbroadcast(", " unindex(", "mask]"):
        assert form not in code
    memory_caches.clear()


def test_the_runtimes_forms_by_other_indices_are_left_as_they_are():
    text = (
        "from sourcegrad.runtime import setitem, unbroadcast, zero_at\n\n\n"
        "def f(x, i, g, y):\n    m = x < 0\n    a = setitem(x, i, g)\n    b = zero_at(g, i)\n"
        "    c = unbroadcast(g, y)\n    d = setitem(x, m, g)\n    e = zero_at(g, m)\n"
        "    k = unbroadcast(x[m], y)\n    return a, b, c, d, e, k\n"
    )
    out = numba_masks.masked_indexing(text)
    for kept in ("setitem(x, i, g)", "zero_at(g, i)", "c = unbroadcast(g, y)"):
        assert kept in out  # (not through a mask: left to numba, which refuses it)
    assert "setitem_masked(x, m, g)" in out and "zero_at_masked(g, m)" in out
    assert "unbroadcast_masked(masked_elements(x, m), y)" in out


def test_a_saved_variables_none_start_keeps_it_a_mask():
    text = "def f(x):\n    m = None\n    for i in range(3):\n        m = x < i\n    return x[m]\n"
    assert "masked_elements(x, m)" in numba_masks.masked_indexing(text)
    other = text.replace("m = None", "m = x")
    assert "masked_elements" not in numba_masks.masked_indexing(other)


def test_zero_at_a_loops_counter_is_the_basic_helper():
    text = numba_backend.numba_source(
        "from sourcegrad.runtime import setitem, zero_at\n\n\ndef f(g, j):\n    for i in range(3):\n"
        "        g = zero_at(g, (np.s_[:], i, np.s_[1:3]))\n    g = zero_at(g, (np.s_[:], j))\n"
        "    g = setitem(g, (np.s_[:], 2), j)\n    return zero_at(g, np.s_[0, 1:])\n"
    )
    assert "g = setitem_basic(g, (slice(None, None), 2), j)" in text
    assert "zero_at_basic(g, (slice(None, None), i, slice(1, 3)))" in text
    assert "zero_at(g, (np.s_[:], j))" in text  # (j: not a loop's counter, maybe an array)
    assert "zero_at_basic(g, (0, slice(1, None)))" in text


@pytest.mark.slow
def test_the_helpers_compute_the_runtimes_forms():
    numba = pytest.importorskip("numba")
    namespace = {"np": np, "numba": numba}
    caller = "\n\n@numba.njit\ndef unbroadcast(g, x):\n    return unbroadcast_masked(g, x)\n"
    helpers = numba_backend._HELPERS["zero_at_basic"] + numba_backend._HELPERS["write_part"]
    exec(numba_masks.MASKED + helpers + caller, namespace)
    setitem, zero_at, zero_basic, unbroadcast = (
        namespace[n] for n in ("setitem_masked", "zero_at_masked", "zero_at_basic", "unbroadcast")
    )
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 5))
    for m in (x < 0, x < -9.0, x < 9.0):
        v = rng.normal(size=int(m.sum()))
        np.testing.assert_array_equal(setitem(x, m, v), runtime.setitem(x, m, v))
        np.testing.assert_array_equal(zero_at(x, m), runtime.zero_at(x, m))
    index = (slice(None, None), 2)
    np.testing.assert_array_equal(zero_basic(x, index), runtime.zero_at(x, index))
    v = rng.normal(size=4)
    got = namespace["setitem_basic"](x, index, v)
    np.testing.assert_array_equal(got, runtime.setitem(x, index, v))
    g = rng.normal(size=6)
    for other in (rng.normal(size=6), np.ones(1)):
        np.testing.assert_array_equal(unbroadcast(g, other), runtime.unbroadcast(g, other))
    np.testing.assert_array_equal(unbroadcast(g[:1], g), runtime.unbroadcast(g[:1], g))
    with pytest.raises(ValueError):
        unbroadcast(g, np.ones(4))


@pytest.mark.slow
def test_the_rolled_lstm_is_compiled_and_right_for_every_count(monkeypatch):
    # (rolled for numba only where asked: api.compiling.ROLL_MASK_COUNTS_FOR_NUMBA)
    monkeypatch.setattr(compiling, "ROLL_MASK_COUNTS_FOR_NUMBA", True)
    g = sourcegrad.grad(lstm, wrt=(0, 1, 2), backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        for seed in range(4):  # (compiled once: each seed's masks select other counts)
            args = lstm_args(np.random.default_rng(seed), SIZE)
            for got, hand in zip(g(*args), lstm_hand(*args)):
                np.testing.assert_allclose(got, hand, rtol=1e-12, atol=1e-14)
    assert "@numba.njit" in g.source and "for i in range(8):" in g.source


# -- a loop's zeroing no one reads again (numba_loop_writes) -------------------------------------

HEADER = "from sourcegrad.runtime import zero_at\n\n\n"


def _zeroing(loop, body, after=""):
    return HEADER + f"def f(g, x):\n    d = g\n    {loop}\n{body}{after}    return x\n"


def test_a_loops_zeroing_of_the_part_it_read_is_dropped():
    for loop in ("for i in reversed(range(20)):", "for i in range(3, 9):"):
        text = _zeroing(
            loop,
            "        p = d[:, i, :]\n        d = zero_at(d, (np.s_[:], i, np.s_[:]))\n"
            "        x = x + p\n",
        )
        out = numba_loop_writes.without_unread_zeroing(text)
        assert "zero_at(d" not in out and "        pass\n" in out and "p = d[:, i, :]" in out
        assert numba_loop_writes.without_unread_zeroing(out) == out


@pytest.mark.parametrize(
    "loop, body, after",
    [
        # read after the loop
        ("for i in range(4):", "        p = d[i]\n        d = zero_at(d, i)\n", "    x = d\n"),
        # read after the zeroing, in the same iteration
        ("for i in range(4):", "        d = zero_at(d, i)\n        p = d[i]\n", ""),
        # read at another index
        ("for i in range(4):", "        p = d[i + 1]\n        d = zero_at(d, i)\n", ""),
        ("for i in range(4):", "        p = d[:, i]\n        d = zero_at(d, i)\n", ""),
        # the counter inside a slice: parts of two iterations may overlap
        (
            "for i in range(4):",
            "        p = d[i:i + 2]\n        d = zero_at(d, np.s_[i:i + 2])\n",
            "",
        ),
        # read whole, or in a nested block
        ("for i in range(4):", "        p = d\n        d = zero_at(d, i)\n", ""),
        (
            "for i in range(4):",
            "        if x:\n            p = d[i]\n        d = zero_at(d, i)\n",
            "",
        ),
        # assigned otherwise in the loop, or the counter changed
        ("for i in range(4):", "        d = d * 2.0\n        d = zero_at(d, i)\n", ""),
        ("for i in range(4):", "        p = d[i]\n        i = 0\n        d = zero_at(d, i)\n", ""),
        # bounds that may name an element from the end, or not literal
        ("for i in range(-2, 3):", "        p = d[i]\n        d = zero_at(d, i)\n", ""),
        ("for i in range(n):", "        p = d[i]\n        d = zero_at(d, i)\n", ""),
        ("for i in range(0, 8, 2):", "        p = d[i]\n        d = zero_at(d, i)\n", ""),
        # the index without the counter
        ("for i in range(4):", "        p = d[0]\n        d = zero_at(d, 0)\n", ""),
    ],
)
def test_a_zeroing_something_may_read_stays(loop, body, after):
    text = _zeroing(loop, body, after)
    assert numba_loop_writes.without_unread_zeroing(text) == text


def test_a_zeroing_of_another_modules_zero_at_stays():
    text = _zeroing("for i in range(4):", "        p = d[i]\n        d = zero_at(d, i)\n")
    text = text.replace(HEADER, "")
    assert numba_loop_writes.without_unread_zeroing(text) == text


# -- parts' adjoints added in place (numba_loop_writes) -------------------------------------------

PARTS = (
    "from sourcegrad.runtime import unindex\n\n\n"
    "def f(a, g1, g2, g3, W):\n"
    "    for i in range(3):\n"
    "        d_1 = unindex(g1, a, np.s_[:, 4:6])\n"
    "        d_2 = unindex(g2 * 2.0, a, np.s_[:, 2:4])\n"
    "        d = unindex(g3, a, np.s_[:, 0:2])\n"
    "        d_1 += d_2\n"
    "        d = np.add(d_1, d, out=d_1)\n"
    "        W = W + d\n"
    "    return W\n"
)


def _add_part(x, i, v):
    x[i] += v  # (what the numba helper computes, as it says: test_numba_parts.py proves it)


def _run(text, *args):
    namespace = {"np": np, "unindex": runtime.unindex, "add_part": _add_part}
    exec(text.split("\n\n\n", 1)[1], namespace)
    return namespace["f"](*args)


def test_parts_adjoints_are_added_in_place_in_their_order():
    out = numba_loop_writes.parts_added_in_place(PARTS)
    assert "add_part(d_1, (slice(None, None), slice(2, 4)), g2 * 2.0)" in out
    assert "add_part(d_1, (slice(None, None), slice(0, 2)), g3)" in out
    assert "d = d_1" in out and "d_1 += d_2" not in out and "np.add" not in out
    rng = np.random.default_rng(4)
    args = (np.ones((3, 6)), *rng.normal(size=(3, 3, 2)), np.zeros((3, 6)))
    np.testing.assert_array_equal(_run(out, *args), _run(PARTS, *args))


@pytest.mark.parametrize(
    "old, new, moved",
    [
        (
            "        d_1 += d_2\n",
            "        d_1 += d_2\n        W = W + d_2\n",
            False,
        ),  # B read again
        (
            "        d_2 = unindex(",
            "        W = W + d_1\n        d_2 = unindex(",
            True,
        ),  # A read before
        (
            "        d_2 = unindex(",
            "        d_1 = d_1 * 2.0\n        d_2 = unindex(",
            False,
        ),  # A changed
        (
            "        d_1 += d_2\n",
            "        W = W + d_1\n        d_1 += d_2\n",
            False,
        ),  # A read between
        (
            "        d_2 = unindex(",
            "        a = a * 2.0\n        d_2 = unindex(",
            False,
        ),  # x changed
        ("np.s_[:, 2:4]", "np.s_[:, i:i + 2]", False),  # a name in the index
        ("np.s_[:, 2:4]", "(np.s_[:], np.s_[2:4])", False),  # not np.s_[...]
    ],
)
def test_parts_that_may_not_move_stay(old, new, moved):
    text = PARTS.replace(old, new, 1)
    out = numba_loop_writes.parts_added_in_place(text)
    assert ("d_1 += d_2" not in out) is moved
    rng = np.random.default_rng(5)
    args = (np.ones((3, 6)), *rng.normal(size=(3, 3, 2)), np.zeros((3, 6)))
    np.testing.assert_array_equal(_run(out, *args), _run(text, *args))


def filled(x, W):
    """h[:, t, :] = ... each step (traced: its loop rolled), whose backward zeroes the part
    of dh each step read (`without_unread_zeroing`)."""
    p = SimpleNamespace(w=W)
    N, T, D = x.shape
    h = np.zeros((N, T, D))
    prev = np.zeros((N, D))
    for t in range(T):
        prev = np.tanh(x[:, t, :] @ p.w + prev)
        h[:, t, :] = prev
    return np.sum(h**2) + np.sum(h[:, 2, :] * h[:, 5, :])


@pytest.mark.slow
def test_a_rolled_loop_writing_its_steps_into_an_array_is_compiled():
    rng = np.random.default_rng(6)
    args = (rng.normal(size=(2, 9, 3)), rng.normal(size=(3, 3)) / 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        g = sourcegrad.grad(filled, wrt=(0, 1), backend="numba")
        got = g(*args)
    assert "@numba.njit" in g.source and "range(9)" in g.source
    want = sourcegrad.grad(filled, wrt=(0, 1))(*args)
    for ours, theirs, i in zip(got, want, (0, 1)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(ours, numeric_grad(filled, args, i), rtol=1e-6, atol=1e-8)
