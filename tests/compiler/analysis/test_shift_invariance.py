"""The max subtracted before a log-softmax carries no derivative: the compiler drops it
(as jax.nn.logsumexp stops its gradient), and only where the result is provably
shift-invariant."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def log_softmax_loss(logits, Y):
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


def softmax_loss(logits, Y):
    z = logits - np.max(logits, axis=1, keepdims=True)
    e = np.exp(z)
    p = e / np.sum(e, axis=1, keepdims=True)
    return np.sum((p - Y) ** 2)


def shifted_and_used(logits, Y):
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1)) + np.sum(z**2)  # z itself is not invariant


def other_axis(logits, Y):
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_p = z - np.log(np.sum(np.exp(z), axis=0, keepdims=True))  # normalized over the rows
    return -np.mean(np.sum(Y * log_p, axis=1))


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(5, 4)) * 3.0, np.eye(4)[rng.integers(0, 4, size=5)]


@pytest.mark.parametrize(
    "fn, dropped",
    [
        (log_softmax_loss, True),
        (softmax_loss, True),
        (shifted_and_used, False),
        (other_axis, False),
    ],
)
def test_the_max_is_dropped_only_where_the_result_is_shift_invariant(fn, dropped, data):
    gradient = sourcegrad.grad(fn)
    np.testing.assert_allclose(gradient(*data), numeric_grad(fn, data, 0), rtol=1e-6, atol=1e-9)
    assert ("max_grad" not in gradient.source) == dropped
