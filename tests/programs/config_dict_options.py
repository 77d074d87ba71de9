"""Ridge/lasso regression whose options come in a plain config dict read with .get() and
`in`, as training scripts pass hyperparameters."""

import numpy as np

NEEDS = "containers"


def loss(w, X, y, config):
    residual = X @ w - y
    total = np.mean(residual**2)
    total = total + config.get("l2", 0.0) * np.sum(w**2)
    if "l1" in config:
        total = total + config["l1"] * np.sum(np.sqrt(w**2 + 1e-8))
    return total


rng = np.random.default_rng(0)
X_data = rng.normal(size=(12, 4))
y_data = X_data @ np.array([1.0, 0.0, -2.0, 0.5])

objective = loss


def make_args():
    return (np.array([0.3, -0.1, 0.2, 0.4]), X_data, y_data, {"l2": 0.1, "l1": 0.05})
