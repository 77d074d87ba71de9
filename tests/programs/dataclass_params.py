"""Logistic regression whose parameters are a dataclass, the loss reading them as
attributes."""

from dataclasses import dataclass

import numpy as np

NEEDS = "objects"


@dataclass
class LogisticModel:
    weights: np.ndarray
    bias: float


def negative_log_likelihood(model, X, y):
    logits = X @ model.weights + model.bias
    return np.sum(np.logaddexp(0.0, logits) - y * logits)


rng = np.random.default_rng(0)
X = rng.normal(size=(15, 3))
y = (rng.uniform(size=15) < 0.5).astype(float)


def objective(model):
    return negative_log_likelihood(model, X, y)


def make_args():
    return (LogisticModel(weights=np.array([0.1, -0.2, 0.3]), bias=0.05),)
