"""An MLP whose layers arrive as separate arrays and are packed into a list of (W, b) tuples
inside the loss, then iterated with `for W, b in layers` (containers built and unpacked
inside the differentiated function)."""

import numpy as np

NEEDS = "containers inside"

WRT = (0, 1, 2, 3)


def mlp(layers, x):
    for W, b in layers[:-1]:
        x = np.tanh(x @ W + b)
    W_out, b_out = layers[-1]
    return x @ W_out + b_out


def loss(W1, b1, W2, b2, x, y):
    layers = [(W1, b1), (W2, b2)]
    return np.mean((mlp(layers, x) - y) ** 2)


rng = np.random.default_rng(0)
x_data = rng.normal(size=(8, 3))
y_data = rng.normal(size=(8, 2))
objective = loss


def make_args():
    init = np.random.default_rng(1)
    return (
        0.5 * init.normal(size=(3, 4)),
        0.1 * init.normal(size=4),
        0.5 * init.normal(size=(4, 2)),
        0.1 * init.normal(size=2),
        x_data,
        y_data,
    )
