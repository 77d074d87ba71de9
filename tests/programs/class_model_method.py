"""A model object holding its data and hyperparameters, its loss a method reading self.X,
self.y and self.alpha and calling another method."""

import numpy as np

NEEDS = "objects"


class RegressionModel:
    def __init__(self, X, y, alpha=0.1):
        self.X = X
        self.y = y
        self.alpha = alpha

    def predict(self, w):
        return np.tanh(self.X @ w)

    def loss(self, w):
        return np.mean((self.predict(w) - self.y) ** 2) + self.alpha * np.sum(w**2)


rng = np.random.default_rng(0)
model = RegressionModel(rng.normal(size=(10, 3)), rng.normal(size=10))
objective = model.loss


def make_args():
    return (np.array([0.2, -0.3, 0.1]),)
