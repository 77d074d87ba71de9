"""A dead array's name is rebound by the next value of its family (`lifetimes`), so the
generated backward frees each step's array as a hand-written one does: which names may
share, and that sharing never changes a number."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from sourcegrad.compiler import optimize
from sourcegrad.compiler.analysis.lifetimes import family
from sourcegrad.compiler.analysis.lifetimes import shared_names as _shared_names
from sourcegrad.compiler.ir import (
    Assign,
    Call,
    Const,
    For,
    Function,
    Return,
    Var,
    assignment_counts,
    reads_of,
    walk,
)


def _fn(body, params=("x",)):
    return Function("f", list(params), body)


def shared_names(fn, arrays, kept, reads_at=None):
    """lifetimes.shared_names with what codegen would give it for an IR printed statement
    by statement: each statement reads its own operands there."""
    counts = assignment_counts(fn.body, fn.params)
    candidates = {
        n
        for n, c in counts.items()
        if c == 1 and n in arrays and n not in kept and n not in fn.params
    }
    if reads_at is None:
        reads_at = {id(s): set(reads_of(s)) for s in walk(fn.body)}
    return _shared_names(fn, candidates, reads_at)


def _mul(*names):
    return Call("mul_op", tuple(Var(n) for n in names))


ARRAYS = frozenset({"x", "d_v_3", "d_v_2", "d_v_1", "d_v", "w", "w_1", "t"})


def test_family_drops_the_version_only():
    assert family("d_v_18") == "d_v"
    assert family("d_v") == "d_v"
    assert family("d_v_16_v_16") == "d_v_16_v"
    assert family("dx_1") == "dx"


def test_a_chain_of_one_family_is_printed_under_its_base_name():
    body = [
        Assign("d_v_3", _mul("x", "x")),
        Assign("d_v_2", _mul("d_v_3", "x")),
        Assign("d_v_1", _mul("d_v_2", "x")),
        Assign("d_v", _mul("d_v_1", "x")),
        Return(Var("d_v")),
    ]
    assert shared_names(_fn(body), ARRAYS, frozenset()) == {
        "d_v_3": "d_v",
        "d_v_2": "d_v",
        "d_v_1": "d_v",
    }


def test_without_the_base_name_the_first_member_names_the_chain():
    body = [
        Assign("d_v_3", _mul("x", "x")),
        Assign("d_v_2", _mul("d_v_3", "x")),
        Return(Var("d_v_2")),
    ]
    assert shared_names(_fn(body), ARRAYS, frozenset()) == {"d_v_2": "d_v_3"}


def test_a_value_read_after_the_next_one_is_made_keeps_its_name():
    body = [
        Assign("d_v_2", _mul("x", "x")),
        Assign("d_v_1", _mul("d_v_2", "x")),
        Assign("d_v", _mul("d_v_1", "d_v_2")),  # d_v_2 still read here
        Return(Var("d_v")),
    ]
    printed = shared_names(_fn(body), ARRAYS, frozenset())
    assert "d_v_2" not in printed or printed["d_v_2"] == printed.get("d_v_1")
    assert printed.get("d_v_1") == "d_v"  # d_v_1 dies where d_v is made
    assert printed.get("d_v_2") is None


def test_other_families_kept_names_and_non_arrays_never_share():
    body = [
        Assign("w", _mul("x", "x")),
        Assign("d_v", _mul("w", "x")),  # another family
        Assign("t", _mul("d_v", "x")),
        Return(Var("t")),
    ]
    assert shared_names(_fn(body), ARRAYS, frozenset()) == {}
    # w dies where d_v is made: a later w_1 may take its name, d_v never
    body[2:2] = [Assign("w_1", _mul("d_v", "x"))]
    body[3] = Assign("t", _mul("w_1", "x"))
    assert shared_names(_fn(body), ARRAYS, frozenset()) == {"w_1": "w"}
    body = [Assign("w", _mul("x", "x")), Assign("w_1", _mul("w", "x")), Return(Var("w_1"))]
    assert shared_names(_fn(body), ARRAYS, frozenset()) == {"w_1": "w"}
    assert shared_names(_fn(body), ARRAYS, frozenset({"w"})) == {}  # a user's value
    assert shared_names(_fn(body), ARRAYS - {"w_1"}, frozenset()) == {}  # a number


def test_a_value_read_in_another_block_keeps_its_name():
    loop = For("i", Const(0), Const(3), Const(1), [Assign("t", _mul("w", "x"))])
    body = [
        Assign("w", _mul("x", "x")),
        Assign("w_1", _mul("x", "x")),
        loop,  # reads w after w_1 is made
        Return(Var("t")),
    ]
    assert "w_1" not in shared_names(_fn(body), ARRAYS, frozenset())
    # read in a nested block *before* the next value is made: w is dead by then
    body = [
        Assign("w", _mul("x", "x")),
        For("i", Const(0), Const(3), Const(1), [Assign("t", _mul("w", "x"))]),
        Assign("w_1", _mul("t", "x")),
        Return(Var("w_1")),
    ]
    assert shared_names(_fn(body), ARRAYS, frozenset()) == {"w_1": "w"}


def test_a_read_counts_where_it_is_printed():
    # d_v_2 is folded into the line that makes t (printed after d_v_1 is made): read there
    body = [
        Assign("d_v_2", _mul("x", "x")),
        Assign("w", _mul("d_v_2", "x")),
        Assign("d_v_1", _mul("x", "x")),
        Assign("t", _mul("w", "d_v_1")),
        Return(Var("t")),
    ]
    fn = _fn(body)
    assert shared_names(fn, ARRAYS, frozenset()) == {"d_v_1": "d_v_2"}
    folded = {id(s): set(reads_of(s)) for s in walk(body)}
    folded[id(body[3])] |= folded.pop(id(body[1]))  # w printed inside t's line
    assert shared_names(fn, ARRAYS, frozenset(), folded) == {}


def test_a_loop_value_read_by_the_next_trip_before_it_is_made_keeps_its_name():
    loop = For(
        "i",
        Const(0),
        Const(3),
        Const(1),
        [
            Assign("w", _mul("w_1", "x")),  # reads last trip's w_1
            Assign("w_1", _mul("w", "x")),
        ],
    )
    assert shared_names(_fn([loop, Return(Var("x"))]), ARRAYS, frozenset()) == {}


# --- generated code --------------------------------------------------------------------------


def chain(x):
    v = np.sin(x)
    v = np.exp(v)
    v = np.tanh(v)
    v = np.log1p(v * v)
    v = np.arctan(v)
    return np.sum(v)


def read_late(x):
    a = np.sin(x)
    b = np.cos(a) * a
    c = np.exp(b) + a
    return np.sum(c * b * a)


def looped(x):
    h = x
    for _ in range(3):
        g = np.tanh(h)
        h = g * 2.0 + np.sin(h)
    return np.sum(h * h)


def branches(x, flag):
    v = np.sin(x)
    if flag:
        v = np.exp(v) * v
        v = np.tanh(v)
    else:
        v = np.cos(v)
    return np.sum(v * v)


@pytest.mark.parametrize("reuse", [False, True], ids=["default", "every-buffer-reused"])
@pytest.mark.parametrize(
    "fn, extra",
    [(chain, ()), (read_late, ()), (looped, ()), (branches, (True,)), (branches, (False,))],
)
def test_shared_names_keep_every_number(monkeypatch, fn, extra, reuse):
    if reuse:
        monkeypatch.setattr(optimize.memory, "BUFFER_REUSE_MIN_BYTES", 0)
    monkeypatch.setattr(sourcegrad.api.memory_caches, "COMPILED", {})
    x = np.random.default_rng(1).uniform(-0.8, 0.8, size=(5, 3))
    kept = x.copy()
    g = sourcegrad.grad(fn)
    got = g(x, *extra)
    np.testing.assert_array_equal(x, kept)
    np.testing.assert_allclose(got, numeric_grad(fn, (x, *extra), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(g(x, *extra), got)  # a second call: the same numbers


def test_the_chain_backward_rebinds_one_adjoint_name():
    g = sourcegrad.grad(chain)
    x = np.linspace(-0.8, 0.8, 7)
    g(x)
    backward = g.source[g.source.index("# backward") :]
    assert "d_v = d_v * v_1" in backward  # as written by hand
    assert "d_v_1" not in backward


def test_in_place_results_are_printed_as_augmented_assignments(monkeypatch):
    monkeypatch.setattr(optimize.memory, "BUFFER_REUSE_MIN_BYTES", 0)
    monkeypatch.setattr(sourcegrad.api.memory_caches, "COMPILED", {})
    g = sourcegrad.grad(chain)
    x = np.linspace(-0.8, 0.8, 7)
    np.testing.assert_allclose(g(x), numeric_grad(chain, (x,), 0), rtol=1e-6)
    assert "d_v *= " in g.source or "d_v /= " in g.source
    assert "d_v = np.multiply(d_v" not in g.source
