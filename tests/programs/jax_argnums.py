"""A ridge loss differentiated with respect to the weights and the bias, called the JAX way:
grad(loss, argnums=(1, 2))."""

import numpy as np

NEEDS = "argnums"

WRT = (1, 2)
GRAD_KWARGS = {"argnums": (1, 2)}


def loss(x, w, b, y, l2=0.1):
    return np.mean((x @ w + b - y) ** 2) + l2 * np.dot(w, w)


rng = np.random.default_rng(3)
xs = rng.normal(size=(9, 2))
ys = rng.normal(size=9)
objective = loss


def make_args():
    return (xs, np.array([0.5, -0.5]), 0.2, ys)
