"""`-y * z` for an input y is computed as `-(y * z)` on large arrays (optimize.negate_products):
the negation is of a value the function made, in its buffer, and the backward reads y,
not a kept `-y`; a constant factor then passes through a matrix product to its smaller
side (`-(X.T @ d)`, sink_scalar_factors). The numbers never change."""

import re

import numpy as np
import pytest

import sourcegrad
from sourcegrad import api
from sourcegrad.api import numeric_grad
from sourcegrad.compiler import optimize


@pytest.fixture
def large_everything(monkeypatch):
    monkeypatch.setattr(optimize.memory, "BUFFER_REUSE_MIN_BYTES", 0)
    monkeypatch.setattr(optimize.algebra, "NEGATE_PRODUCTS_MIN_BYTES", 0)
    monkeypatch.setattr(optimize.memory, "READABLE_BUFFER_MAX_BYTES", 0)  # (every dead buffer)
    monkeypatch.setattr(api.memory_caches, "COMPILED", {})


def logreg(w, X, y):
    return np.mean(np.log(1.0 + np.exp(-y * (X @ w))))


def negated_on_the_right(w, X, y):
    return np.sum(np.tanh((X @ w) * -y) * y)


def negated_row(w, X, y):
    return np.sum(np.sin(-w * X))  # -w is a row of the product: it stays


def data():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(8, 3))
    return rng.normal(size=3), X, np.sign(rng.normal(size=8))


@pytest.mark.parametrize("fn", [logreg, negated_on_the_right, negated_row])
def test_the_numbers_are_the_same(large_everything, fn):
    args = data()
    g = sourcegrad.grad(fn, wrt=(0, 1, 2))
    for pos, got in enumerate(g(*args)):
        np.testing.assert_allclose(got, numeric_grad(fn, args, pos), rtol=1e-6, atol=1e-9)
    value, _ = sourcegrad.value_and_grad(fn)(*args)
    assert value == fn(*args)  # negation is exact: the same value, bit for bit


def forward_of(source):
    lines = source[: source.index("# backward")].splitlines()
    return "\n".join(ln.split("#")[0] for ln in lines)


def test_an_input_is_negated_after_the_product(large_everything):
    g = sourcegrad.grad(logreg)
    g(*data())
    forward = forward_of(g.source)
    assert "= -y" not in forward and "np.negative(y_X_w" in forward, g.source
    backward = g.source[g.source.index("# backward") :]
    assert not re.search(r"\bneg_y\b", backward)  # the backward reads y itself
    # the sign is applied once, to the 3-element result of the product
    assert (
        "dw = -(X.T @ " in backward
        or "dw = np.negative(dw_unscaled" in backward
        or "np.negative(dw, out=dw)" in backward
    ), backward


def test_a_smaller_negated_operand_stays(large_everything):
    g = sourcegrad.grad(negated_row)
    g(*data())
    assert "neg_w = -w" in forward_of(g.source)


def test_small_arrays_keep_the_negated_input():
    g = sourcegrad.grad(logreg)
    g(*data())  # 64-byte arrays: allocating -y costs less than a second negation
    assert "neg_y = -y" in forward_of(g.source)
