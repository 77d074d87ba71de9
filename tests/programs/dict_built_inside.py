"""A dict of parameters built inside the loss from array arguments and read back by key,
as code written for a dict API but called with arrays looks."""

import numpy as np

NEEDS = "containers inside"

WRT = (0, 1)


def predict(params, x):
    return np.tanh(x @ params["w"]) * params["scale"]


def loss(w, scale, x, y):
    params = {"w": w, "scale": scale}
    preds = predict(params, x)
    return np.sum((preds - y) ** 2) + 0.1 * sum(np.sum(p**2) for p in params.values())


rng = np.random.default_rng(0)
x_data = rng.normal(size=(7, 3))
y_data = rng.normal(size=7)
objective = loss


def make_args():
    return (np.array([0.2, -0.4, 0.3]), np.array(1.5), x_data, y_data)
