"""Linear regression with parameters in a dict, the JAX tutorials' habit:
params = {'w': ..., 'b': ...}; loss(params, x, y)."""

import numpy as np

NEEDS = "containers"


def init_params(rng):
    return {"w": rng.normal(size=(3,)), "b": 0.0}


def forward(params, x):
    return x @ params["w"] + params["b"]


def loss_fn(params, x, y):
    pred = forward(params, x)
    return np.mean((pred - y) ** 2)


rng = np.random.default_rng(0)
x_train = rng.normal(size=(16, 3))
y_train = x_train @ np.array([0.5, -1.0, 2.0]) - 0.7


def objective(params):
    return loss_fn(params, x_train, y_train)


def make_args():
    return (init_params(np.random.default_rng(1)),)
