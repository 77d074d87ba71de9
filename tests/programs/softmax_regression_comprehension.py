"""Softmax regression written per example: a list comprehension over the rows, a generator
expression in sum(...), the way a newcomer writes the loss."""

import numpy as np

NEEDS = "comprehensions"


def log_softmax(z):
    z = z - np.max(z)
    return z - np.log(np.sum(np.exp(z)))


def loss(W, X, labels):
    logits = [W @ x for x in X]
    return -sum(log_softmax(z)[label] for z, label in zip(logits, labels)) / len(labels)


rng = np.random.default_rng(0)
X_data = rng.normal(size=(6, 4))
labels = [0, 2, 1, 2, 0, 1]


def objective(W):
    return loss(W, X_data, labels)


def make_args():
    return (0.3 * np.random.default_rng(1).normal(size=(3, 4)),)
