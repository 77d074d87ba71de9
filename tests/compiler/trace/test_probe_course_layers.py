"""Course-style layers (cs231n's `affine_forward`, `softmax_loss` returning the loss and its
hand-written dx) differentiated through a network object made in the function.

Python runs `dx[np.arange(N), y] -= 1` as a read of the indexed elements (a copy), an
in-place subtraction on that copy and a write back; the in-place check took the copy for a
view of dx and refused the function. And `X.dot(W)` of a plain array (data from a global)
cannot be traced (numpy's method converts W without asking it): the refusal says what to
write instead.
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad


def softmax_loss(x, y):
    shifted = x - np.max(x, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    n = x.shape[0]
    loss = -np.sum(log_probs[np.arange(n), y]) / n
    dx = np.exp(log_probs)
    dx[np.arange(n), y] -= 1  # the hand-written gradient the caller ignores
    dx /= n
    return loss, dx


class Net:  # (its parameters given to __init__, as course code does)
    def __init__(self, w, spelling):
        self.params = {"W": w}
        self.spelling = spelling

    def loss(self, x, y):
        w = self.params["W"]
        scores = x.dot(w) if self.spelling == "dot" else x @ w
        loss, _ = softmax_loss(scores, y)
        return loss + 0.05 * np.sum(w * w)


RNG = np.random.default_rng(3)
X = RNG.normal(size=(5, 4))
Y = np.array([0, 2, 1, 2, 0])


def _loss_of(spelling):
    def loss(params):
        return Net(params["W"], spelling).loss(X, Y)

    return loss


def test_an_in_place_update_of_an_advanced_index_copy_is_traced():
    w = RNG.normal(size=(4, 3))
    loss = _loss_of("matmul")
    gradient = sourcegrad.grad(loss)
    got = gradient({"W": w})["W"]
    assert "# Traced" in gradient.source
    expected = numeric_grad(lambda v: loss({"W": v}), (w,), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


def test_a_plain_arrays_dot_method_is_refused_saying_what_to_write():
    w = RNG.normal(size=(4, 3))
    with pytest.raises(sourcegrad.SourcegradError, match=r"write `a @ b` or `np.dot\(a, b\)`"):
        sourcegrad.grad(_loss_of("dot"))({"W": w})
