"""A Poisson regression with a log link; the log-likelihood keeps the log-factorial term
with gammaln, as statistics code does."""

import numpy as np
from scipy.special import gammaln

NEEDS = "scipy"


def poisson_log_likelihood(beta, X, counts):
    log_rate = X @ beta
    return np.sum(counts * log_rate - np.exp(log_rate) - gammaln(counts + 1))


rng = np.random.default_rng(0)
X = np.column_stack([np.ones(15), rng.normal(size=(15, 2))])
counts = rng.poisson(np.exp(X @ np.array([0.5, 0.3, -0.2]))).astype(float)


def objective(beta):
    return -poisson_log_likelihood(beta, X, counts)


def make_args():
    return (np.array([0.1, 0.0, 0.0]),)
