"""A loss returning (loss, aux) as JAX users write it for grad(..., has_aux=True): the
auxiliary output carries the predictions and the accuracy."""

import numpy as np

NEEDS = "has_aux"

HAS_AUX = True


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def loss_and_metrics(w, x, y):
    probs = sigmoid(x @ w)
    loss = -np.mean(y * np.log(probs) + (1 - y) * np.log(1 - probs))
    accuracy = np.mean((probs > 0.5) == y)
    return loss, {"probs": probs, "accuracy": accuracy}


rng = np.random.default_rng(0)
x_data = rng.normal(size=(20, 4))
y_data = (x_data @ np.array([1.0, -1.0, 0.5, 0.0]) > 0).astype(float)

objective = loss_and_metrics


def make_args():
    return (0.1 * np.ones(4), x_data, y_data)
