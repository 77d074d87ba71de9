"""A two-layer regression net whose parameters are a NamedTuple, as Flax-free JAX code and
many tutorials hold them."""

from typing import NamedTuple

import numpy as np

NEEDS = "containers"


class Params(NamedTuple):
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: float


def predict(params, x):
    hidden = np.tanh(x @ params.W1 + params.b1)
    return hidden @ params.W2 + params.b2


def loss(params, x, y):
    return np.mean((predict(params, x) - y) ** 2)


rng = np.random.default_rng(0)
x_data = rng.normal(size=(10, 3))
y_data = np.sin(x_data[:, 0]) + x_data[:, 1] * x_data[:, 2]


def objective(params):
    return loss(params, x_data, y_data)


def make_args():
    init = np.random.default_rng(1)
    return (
        Params(
            W1=0.5 * init.normal(size=(3, 5)), b1=np.zeros(5), W2=0.5 * init.normal(size=5), b2=0.1
        ),
    )
