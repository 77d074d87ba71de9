"""Linear regression differentiated with respect to two arguments at once, as JAX users write
grad(loss, argnums=(0, 1))."""

import numpy as np

NEEDS = "argnums"

WRT = (0, 1)


def model(w, b, x):
    return np.dot(x, w) + b


def loss(w, b, x, y):
    prediction = model(w, b, x)
    return np.mean((prediction - y) ** 2)


rng = np.random.default_rng(0)
xs = rng.normal(size=(20, 3))
ys = xs @ np.array([1.0, -2.0, 0.5]) + 0.3 + 0.1 * rng.normal(size=20)

objective = loss


def make_args():
    return (np.zeros(3) + 0.1, 0.0, xs, ys)
