"""Model-agnostic meta-learning on sine regression: an inner gradient step computed with grad
inside the outer objective (the JAX MAML tutorial's structure, parameters a flat array)."""

import numpy as np

from sourcegrad import grad

NEEDS = "nested grad"


def net(params, x):
    w1, b1, w2 = params[:8], params[8:16], params[16:24]
    hidden = np.tanh(np.outer(x, w1) + b1)
    return hidden @ w2


def mse(params, x, y):
    return np.mean((net(params, x) - y) ** 2)


def inner_update(params, x, y, alpha=0.1):
    return params - alpha * grad(mse)(params, x, y)


def maml_loss(params, x1, y1, x2, y2):
    updated = inner_update(params, x1, y1)
    return mse(updated, x2, y2)


rng = np.random.default_rng(0)
x_a, x_b = rng.uniform(-3, 3, size=5), rng.uniform(-3, 3, size=5)
amplitude, phase = 1.5, 0.4
y_a, y_b = amplitude * np.sin(x_a + phase), amplitude * np.sin(x_b + phase)

objective = maml_loss


def make_args():
    return (0.5 * np.random.default_rng(1).normal(size=24), x_a, y_a, x_b, y_b)
