"""GP negative log marginal likelihood written with np.linalg.cholesky and solves, the way
JAX tutorials write it (parameters a dict of log-hyperparameters)."""

import numpy as np

NEEDS = "linalg"


def squared_exponential(x1, x2, lengthscale, variance):
    sqdist = np.sum(x1**2, 1).reshape(-1, 1) + np.sum(x2**2, 1) - 2 * np.dot(x1, x2.T)
    return variance * np.exp(-0.5 / lengthscale**2 * sqdist)


def neg_log_marginal_likelihood(params, X, y):
    lengthscale = np.exp(params["log_lengthscale"])
    variance = np.exp(params["log_variance"])
    noise = np.exp(params["log_noise"])
    K = squared_exponential(X, X, lengthscale, variance) + (noise + 1e-6) * np.eye(X.shape[0])
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * X.shape[0] * np.log(2 * np.pi)


rng = np.random.default_rng(0)
X_train = rng.uniform(-3, 3, size=(10, 1))
y_train = np.sin(X_train[:, 0]) + 0.1 * rng.normal(size=10)


def objective(params):
    return neg_log_marginal_likelihood(params, X_train, y_train)


def make_args():
    return ({"log_lengthscale": 0.1, "log_variance": -0.2, "log_noise": np.log(0.1)},)
