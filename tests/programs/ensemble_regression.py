"""An ensemble of linear models stored as one weight matrix and one bias vector, split into
(w, b) members by a list comprehension and averaged."""

import numpy as np

NEEDS = "containers inside"

WRT = (0, 1)


def ensemble_predict(W, b, x):
    members = [(W[k], b[k]) for k in range(len(b))]
    preds = [x @ w + c for w, c in members]
    return sum(preds) / len(preds)


def loss(W, b, x, y):
    return np.mean((ensemble_predict(W, b, x) - y) ** 2) + 0.01 * np.sum(W**2)


rng = np.random.default_rng(0)
x_data = rng.normal(size=(10, 4))
y_data = x_data @ np.array([0.5, -1.0, 0.0, 2.0]) + 0.2
objective = loss


def make_args():
    init = np.random.default_rng(1)
    return (init.normal(size=(3, 4)), init.normal(size=3), x_data, y_data)
