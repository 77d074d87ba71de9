"""Matrix factorisation of a partly observed ratings matrix with L2 penalties, differentiated
with respect to both factors."""

import numpy as np

NEEDS = "argnums"

WRT = (0, 1)


def loss(U, V, ratings, mask, lam=0.1):
    predictions = U @ V.T
    error = (ratings - predictions) * mask
    return np.sum(error**2) / np.sum(mask) + lam * (np.sum(U**2) + np.sum(V**2))


rng = np.random.default_rng(0)
R = rng.integers(1, 6, size=(6, 5)).astype(float)
M = (rng.uniform(size=(6, 5)) < 0.6).astype(float)
objective = loss


def make_args():
    init = np.random.default_rng(1)
    return (0.5 * init.normal(size=(6, 2)), 0.5 * init.normal(size=(5, 2)), R, M)
