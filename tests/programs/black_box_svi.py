"""Black-box stochastic variational inference with a diagonal Gaussian
(autograd's examples/black_box_svi.py)."""

import numpy as np
import numpy.random as npr
from scipy.stats import norm

NEEDS = "closures returning functions"

rs = npr.RandomState(0)


def black_box_variational_inference(logprob, D, num_samples):
    """Implements http://arxiv.org/abs/1401.0118, and uses the
    local reparameterization trick from http://arxiv.org/abs/1506.02557"""

    def unpack_params(params):
        # Variational dist is a diagonal Gaussian.
        mean, log_std = params[:D], params[D:]
        return mean, log_std

    def gaussian_entropy(log_std):
        return 0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)

    def variational_objective(params, t):
        """Provides a stochastic estimate of the variational lower bound."""
        mean, log_std = unpack_params(params)
        samples = rs.randn(num_samples, D) * np.exp(log_std) + mean
        lower_bound = gaussian_entropy(log_std) + np.mean(logprob(samples, t))
        return -lower_bound

    return variational_objective, unpack_params


# Specify an inference problem by its unnormalized log-density.
D = 2


def log_density(x, t):
    mu, log_sigma = x[:, 0], x[:, 1]
    sigma_density = norm.logpdf(log_sigma, 0, 1.35)
    mu_density = norm.logpdf(mu, 0, np.exp(log_sigma))
    return sigma_density + mu_density


objective, unpack_params = black_box_variational_inference(log_density, D, num_samples=20)


def RESET():
    rs.seed(0)


def make_args():
    init_mean = -1 * np.ones(D)
    init_log_std = -5 * np.ones(D)
    return (np.concatenate([init_mean, init_log_std]), 0)
