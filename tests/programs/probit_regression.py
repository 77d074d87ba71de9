"""Probit regression with norm.logcdf from scipy.stats."""

import numpy as np
from scipy.stats import norm

NEEDS = "scipy"


def log_likelihood(w, X, y):
    # y in {-1, +1}: P(y | x) = Phi(y * x.w)
    return np.sum(norm.logcdf(y * (X @ w)))


rng = np.random.default_rng(0)
X = rng.normal(size=(20, 3))
y = np.sign(X @ np.array([1.0, -0.5, 0.25]) + 0.3 * rng.normal(size=20))


def objective(w):
    return -log_likelihood(w, X, y) + 0.5 * np.sum(w**2)


def make_args():
    return (np.array([0.2, 0.1, -0.1]),)
