"""A character-level vanilla RNN with its hand-written backward pass, in the style of the
minimal character models people publish: integer inputs turned into one-hot columns inside the
loss, states kept in dicts keyed by time step (``hs[-1]`` the previous state), the loss summed
in a Python loop, and a ``loss_and_grads`` that backpropagates through time by hand.

The compiled gradient must match both central differences and the author's backward.
"""

import numpy as np

VOCAB = 5
HIDDEN = 6
INPUTS = [0, 3, 1, 4, 2, 2, 1]
TARGETS = [3, 1, 4, 2, 2, 1, 0]


def loss_of(params, inputs=INPUTS, targets=TARGETS):
    Wxh, Whh, Why = params["Wxh"], params["Whh"], params["Why"]
    bh, by = params["bh"], params["by"]
    xs, hs, ps = {}, {}, {}
    hs[-1] = np.zeros((HIDDEN, 1))
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((VOCAB, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys) / np.sum(np.exp(ys))
        loss += -np.log(ps[t][targets[t], 0])
    return loss


def loss_and_grads(params, inputs=INPUTS, targets=TARGETS):
    """The author's forward and backward pass (backpropagation through time)."""
    Wxh, Whh, Why = params["Wxh"], params["Whh"], params["Why"]
    bh, by = params["bh"], params["by"]
    xs, hs, ps = {}, {}, {}
    hs[-1] = np.zeros((HIDDEN, 1))
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((VOCAB, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys) / np.sum(np.exp(ys))
        loss += -np.log(ps[t][targets[t], 0])
    dWxh, dWhh, dWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    dbh, dby = np.zeros_like(bh), np.zeros_like(by)
    dhnext = np.zeros_like(hs[0])
    for t in reversed(range(len(inputs))):
        dy = np.copy(ps[t])
        dy[targets[t]] -= 1
        dWhy += np.dot(dy, hs[t].T)
        dby += dy
        dh = np.dot(Why.T, dy) + dhnext
        dhraw = (1 - hs[t] * hs[t]) * dh
        dbh += dhraw
        dWxh += np.dot(dhraw, xs[t].T)
        dWhh += np.dot(dhraw, hs[t - 1].T)
        dhnext = np.dot(Whh.T, dhraw)
    return loss, {"Wxh": dWxh, "Whh": dWhh, "Why": dWhy, "bh": dbh, "by": dby}


def make_args():
    rs = np.random.RandomState(3)
    return (
        {
            "Wxh": rs.randn(HIDDEN, VOCAB) * 0.3,
            "Whh": rs.randn(HIDDEN, HIDDEN) * 0.3,
            "Why": rs.randn(VOCAB, HIDDEN) * 0.3,
            "bh": np.zeros((HIDDEN, 1)),
            "by": np.zeros((VOCAB, 1)),
        },
    )


objective = loss_of


def hand_written(params):
    return loss_and_grads(params)[1]
