"""A batch in blocks of rows under `memory=B` (sourcegrad.compiler.derive.row_blocks): the same
gradients (to rounding, and as central differences), one block's values kept at a time,
nothing recomputed; programs that are not row-wise along a batch axis left to recomputing."""

import re
import tracemalloc

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from sourcegrad.compiler.derive.checkpointing import saved_bytes
from sourcegrad.compiler.derive.row_blocks import IN_ROW_BLOCKS, MIN_ROWS, SAVED_PER_BLOCK


def mlp(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


def _args(batch=256, n_in=16, n_hidden=64, n_out=4, seed=3):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(n_in, n_hidden)) * n_in**-0.5,
        rng.normal(size=n_hidden) * 0.1,
        rng.normal(size=(n_hidden, n_out)) * n_hidden**-0.5,
        rng.normal(size=(batch, n_in)),
        np.eye(n_out)[rng.integers(0, n_out, size=batch)],
    )


def _made_once(g):
    return sum(e["bytes"] for e in g.saved if not e["input"])


def _close(got, expected):
    for e, r in zip(expected, got):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)


def test_a_budget_of_half_the_saved_bytes_runs_the_batch_in_blocks_of_rows():
    args = _args()
    plain = sourcegrad.grad(mlp, wrt=(0, 1, 2))
    expected = plain(*args)
    half = _made_once(plain) // 2
    g = sourcegrad.grad(mlp, wrt=(0, 1, 2), memory=half)
    _close(g(*args), expected)
    # the saved values and the sums over the rows (dW1, db1, dW2) fit in the budget
    rows = int(re.search(r"for row in range\(0, len\(X\), (\d+)\)", g.source).group(1))
    assert MIN_ROWS <= rows < 256 and 256 % rows == 0
    blocks = {e["name"]: e for e in g.saved if e["status"] == "saved per row block"}
    assert blocks["h"]["bytes"] == rows * 64 * 8 and blocks["h"]["shape"] == (rows, 64)
    assert SAVED_PER_BLOCK in blocks["h"]["why"] and f"{rows} rows" in blocks["h"]["why"]
    sums = (16 * 64 + 64 + 64 * 4) * 8
    assert saved_bytes(g.saved, 1) + sums <= half
    assert not any(e["status"] == "recomputed" for e in g.saved)
    text = re.sub(r"\n +#   ", " ", g.source)  # (a wrapped line comment read as one line)
    assert f"({IN_ROW_BLOCKS} {rows} of its 256 rows (X, Y), memory={half})" in text
    assert f"h = np.tanh(X @ W1 + b1)  (forward of a block of {rows} rows, kept" in text
    assert "X_rows = X[row:row_end]" in text and "dW1 += " in text


def test_row_blocks_match_central_differences():
    args = _args(batch=48, n_in=5, n_hidden=7, n_out=3, seed=8)
    g = sourcegrad.grad(mlp, wrt=(0, 1, 2), memory=48 * (7 + 3 + 1) * 8 // 2)
    for i, got in enumerate(g(*args)):
        np.testing.assert_allclose(got, numeric_grad(mlp, args, i), rtol=1e-6, atol=1e-8)
    assert "for row in range(0, len(X), " in g.source


def test_the_value_of_a_mean_over_the_rows_is_the_whole_batchs():
    args = _args(batch=128)
    g = sourcegrad.value_and_grad(mlp, wrt=(0, 2), memory=128 * 64 * 8 // 4)
    value, grads = g(*args)
    expected_value, expected = sourcegrad.value_and_grad(mlp, wrt=(0, 2))(*args)
    assert value == pytest.approx(expected_value, rel=1e-13)
    _close(grads, expected)
    # the batch's length read once, for the loop and the mean's division
    assert "len_X = len(X)" in g.source and "for row in range(0, len_X, " in g.source
    assert "_sum / len_X" in g.source


def wide_mean(w, X):
    return np.mean(np.tanh(X * w) ** 2)


def test_a_mean_over_every_axis_of_the_rows_divides_by_the_whole_count():
    X, w = np.random.default_rng(9).normal(size=(128, 40)), np.linspace(0.1, 1.0, 40)
    g = sourcegrad.value_and_grad(wide_mean, wrt=0, memory=128 * 40 * 8 // 4)
    value, grad = g(w, X)
    assert "for row in range(0, len(X), " in g.source
    assert value == pytest.approx(wide_mean(w, X), rel=1e-13)
    np.testing.assert_allclose(grad, numeric_grad(wide_mean, (w, X), 0), rtol=1e-6, atol=1e-9)


def test_blocks_of_rows_lower_the_peak_memory_at_the_same_work():
    args = _args(batch=2048, n_in=64, n_hidden=256)

    def peak(g):
        g(*args)
        tracemalloc.start()
        try:
            g(*args)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    plain = sourcegrad.grad(mlp, wrt=(0, 1, 2))
    expected = plain(*args)
    g = sourcegrad.grad(mlp, wrt=(0, 1, 2), memory=_made_once(plain) // 2)
    _close(g(*args), expected)
    assert peak(g) <= 0.6 * peak(plain)
    # (what a block makes is deleted in its trip, not held while the next one is made)
    assert re.search(r"\n        del [^\n]*\bh\b", g.source)


def batch_norm(w, X):
    h = X * w
    centred = h - np.mean(h, axis=0)  # every row reads a sum over the rows: two passes
    return np.sum(np.tanh(centred) ** 2)


def test_a_row_value_made_from_a_sum_over_the_rows_is_not_blocked():
    X, w = np.random.default_rng(10).normal(size=(64, 8)), np.linspace(0.5, 1.5, 8)
    plain = sourcegrad.grad(batch_norm, wrt=0)
    g = sourcegrad.grad(batch_norm, wrt=0, memory=64 * 8 * 8)
    np.testing.assert_allclose(g(w, X), plain(w, X), rtol=1e-12, atol=1e-14)
    assert "for row in range" not in g.source


def test_a_gradient_with_respect_to_the_batch_is_not_blocked():
    args = _args(batch=128)
    plain = sourcegrad.grad(mlp, wrt=(0, 3))
    expected = plain(*args)
    g = sourcegrad.grad(mlp, wrt=(0, 3), memory=_made_once(plain) // 2)
    _close(g(*args), expected)
    assert "for row in range" not in g.source
    assert any(e["status"] == "recomputed" for e in g.saved)
    # (the same without X: in blocks)
    g = sourcegrad.grad(mlp, wrt=(0,), memory=_made_once(plain) // 2)
    _close(g(*args), expected[:1])
    assert "for row in range(0, len(X), " in g.source


def test_a_batch_without_a_block_that_fits_is_not_blocked():
    """257 rows (a prime): no divisor between MIN_ROWS and the rows that fit."""
    args = _args(batch=257)
    plain = sourcegrad.grad(mlp, wrt=(0, 1, 2))
    expected = plain(*args)
    g = sourcegrad.grad(mlp, wrt=(0, 1, 2), memory=_made_once(plain) // 2)
    _close(g(*args), expected)
    assert "for row in range" not in g.source


def test_without_a_plan_or_with_room_nothing_is_blocked():
    args = _args(batch=128)
    plain = sourcegrad.grad(mlp, wrt=(0, 1, 2))
    plain(*args)
    roomy = sourcegrad.grad(mlp, wrt=(0, 1, 2), memory=10 * _made_once(plain))
    _close(roomy(*args), plain(*args))
    assert "for row in range" not in plain.source and "for row in range" not in roomy.source


def mlp_with_predictions(W1, b1, W2, X, Y):
    logits = np.tanh(X @ W1 + b1) @ W2
    loss = np.mean((logits - Y) ** 2)
    return loss, (logits, np.sum(logits))


def test_an_aux_holding_row_values_is_not_blocked_and_a_sum_is():
    """aux (logits, a row value) would be a block's: the batch is not blocked then; aux's
    sum over the rows alone is accumulated like the gradients."""
    args = _args(batch=128)
    expected, (logits, total) = sourcegrad.grad(mlp_with_predictions, wrt=0, has_aux=True)(*args)
    g = sourcegrad.grad(mlp_with_predictions, wrt=0, has_aux=True, memory=128 * 64 * 8 // 4)
    got, (got_logits, got_total) = g(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got_logits, logits, rtol=1e-14)
    assert got_total == pytest.approx(total, rel=1e-13)
    assert "for row in range" not in g.source


def mlp_with_total(W1, b1, W2, X, Y):
    logits = np.tanh(X @ W1 + b1) @ W2
    return np.mean((logits - Y) ** 2), np.sum(logits)


def test_an_aux_summed_over_the_rows_is_accumulated_in_the_blocks():
    """(128 rows: with 64, b1's length, b1 would be read as rows too, and not broadcast.)"""
    args = _args(batch=128)
    expected, total = sourcegrad.grad(mlp_with_total, wrt=(0, 2), has_aux=True)(*args)
    g = sourcegrad.grad(mlp_with_total, wrt=(0, 2), has_aux=True, memory=128 * 64 * 8 // 4)
    got, got_total = g(*args)
    _close(got, expected)
    assert got_total == pytest.approx(total, rel=1e-13)
    assert "for row in range(0, len(X), " in g.source


def test_a_weight_as_long_as_the_batch_is_read_whole():
    """64 rows and 64 hidden units: b1 and W2 have the batch's length, but they are
    differentiated (weights, read whole), so X and Y alone are the rows."""
    args = _args(batch=64, n_hidden=64)
    plain = sourcegrad.grad(mlp, wrt=(0, 1, 2))
    expected = plain(*args)
    g = sourcegrad.grad(mlp, wrt=(0, 1, 2), memory=_made_once(plain) // 2)
    _close(g(*args), expected)
    assert "for row in range(0, len(X), " in g.source and "b1_rows" not in g.source


def logistic(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.sum(y * np.log(p) + (1 - y) * np.log(1 - p)) / len(y)


def two_layers_squared(W1, W2, X, Y):
    d = np.tanh(X @ W1) @ W2 - Y
    return 0.5 * np.sum(d * d) / X.shape[0]


def contracted_rows(w, X, y):
    return np.sum(np.tanh(X * w) ** 2) + np.sum((y @ X) * w)  # y @ X sums over the rows


def centred(W, X):
    h = np.tanh(X @ W)
    return np.sum(np.mean(h, axis=0) ** 2) + np.sum(h.T @ h)  # the mean's adjoint: every row


def _row_cases(rng, n=96):
    return [
        (
            logistic,
            (rng.normal(size=6) * 0.3, rng.normal(size=(n, 6)), rng.integers(0, 2, n) * 1.0),
            0,
            True,
        ),
        (
            two_layers_squared,
            (
                rng.normal(size=(4, 9)) * 0.3,
                rng.normal(size=(9, 3)) * 0.3,
                rng.normal(size=(n, 4)),
                rng.normal(size=(n, 3)),
            ),
            (0, 1),
            True,
        ),
        (
            contracted_rows,
            (rng.normal(size=5), rng.normal(size=(n, 5)), rng.normal(size=n)),
            0,
            True,
        ),
        (centred, (rng.normal(size=(4, 9)) * 0.3, rng.normal(size=(n, 4))), 0, False),
    ]


@pytest.mark.parametrize("index", range(4), ids=["logistic", "two_layers", "contracted", "centred"])
def test_row_wise_programs_under_a_quarter_budget_match_central_differences(index):
    fn, args, wrt, blocked = _row_cases(np.random.default_rng(1))[index]
    plain = sourcegrad.grad(fn, wrt=wrt)
    plain(*args)
    g = sourcegrad.grad(fn, wrt=wrt, memory=_made_once(plain) // 4)
    got = g(*args)
    got = got if isinstance(wrt, tuple) else (got,)
    for i, w in enumerate(wrt if isinstance(wrt, tuple) else (wrt,)):
        np.testing.assert_allclose(got[i], numeric_grad(fn, args, w), rtol=1e-6, atol=1e-8)
    assert ("for row in range(0, len(X), " in g.source) == blocked
