"""Multiclass cross-entropy with a hand-written, numerically stable log-sum-exp (max
subtracted), labels chosen by fancy indexing."""

import numpy as np

NEEDS = "basic"


def logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def cross_entropy(W, b, X, labels):
    logits = X @ W + b
    return np.mean(logsumexp(logits, axis=1) - logits[np.arange(len(labels)), labels])


rng = np.random.default_rng(0)
X = rng.normal(size=(9, 4))
labels = rng.integers(0, 3, size=9)
objective = cross_entropy
WRT = (0, 1)


def make_args():
    init = np.random.default_rng(1)
    return (init.normal(size=(4, 3)), init.normal(size=3), X, labels)
