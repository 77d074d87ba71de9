"""Sizes and shapes in generated code read from the user's own values (shape_names.py).

A mean's 1/N, a row buffer's length: printed as `len(Y)`, `A.shape[1]`, `A.size` or the
user's own name for it, the axis the value has by construction (never one that only has
the same number: the inputs below are square so that the wrong axis would give the same
numbers), and numbers only where no input names the size. Each gradient is checked
against central differences as well.
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from sourcegrad.bench import workloads


def mean_over_rows(A, B):
    return np.mean(np.sum(A * B, axis=1))


def mean_over_columns(A, B):
    return np.mean(np.sum(A * B, axis=0))


def mean_of_transpose(A):
    return np.mean(np.sin(A).T)


def mean_with_a_user_name(W, X):
    n = X.shape[0]
    s = np.sum(np.tanh(X @ W), axis=1)
    return np.mean(s) + np.sum(W) / n


RNG = np.random.default_rng(26)
SQUARE = (RNG.normal(size=(4, 4)), RNG.normal(size=(4, 4)))


@pytest.mark.parametrize(
    "f, args, reads, never",
    [
        (mean_over_rows, SQUARE, "/ len(A)", ("shape[1]", "/ 4")),
        (mean_over_columns, SQUARE, "/ A.shape[1]", ("len(A)", "/ 4")),
        (mean_of_transpose, (RNG.normal(size=(3, 5)),), "1.0 / A.size", ("/ 15",)),
        # (1 / 3 is not folded into a number, so n is kept)
        (mean_with_a_user_name, (SQUARE[0][:3, :3], SQUARE[1][:3, :3]), "/ n", ("len(X)", "/ 3")),
    ],
)
def test_a_mean_divides_by_the_size_of_the_axis_it_reduces(f, args, reads, never):
    grad = sourcegrad.grad(f)
    got = grad(*args)
    np.testing.assert_allclose(got, numeric_grad(f, args, 0), rtol=1e-6, atol=1e-9)
    source = grad.compile(args).source
    assert reads in source, source
    for text in never:
        assert text not in source, source


def test_the_rnn_row_buffers_are_as_long_as_the_initial_state():
    w = workloads.BY_NAME["rnn"]
    size = w.quick[0]
    args = workloads.make_args(w, size)
    source = sourcegrad.grad(w.function(size), wrt=w.wrt).compile(args).source
    assert "np.empty((xs_shape_0, len(h0)))" in source, source


def test_the_mlp_loss_divides_by_the_batch():
    w = workloads.BY_NAME["mlp"]
    size = w.quick[0]
    args = workloads.make_args(w, size)
    grad = sourcegrad.grad(w.function(size), wrt=w.wrt)
    source = grad.compile(args).source
    assert "-1.0 / len(Y) * Y" in source, source
    expected = workloads.BY_NAME["mlp"].reference(size)(*args)
    for g, e in zip(grad(*args), expected):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)


def test_sizes_stay_numbers_where_cupy_fuses_elementwise_runs():
    # a len() call in a run would keep it from being one cupy.fuse kernel
    w = workloads.BY_NAME["mlp"]
    size = w.quick[0]
    grad = sourcegrad.grad(w.function(size), wrt=w.wrt, backend="cupy")
    source = grad.compile(workloads.make_args(w, size)).source
    assert "def fused_d_log_p(Y):\n    return -1.0 / 8 * Y" in source, source
    assert "len(Y)" not in source, source
