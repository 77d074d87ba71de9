"""Variational inference with a mixture of diagonal Gaussians as the approximating family;
each component's sample is reparameterised, the mixture weights enter through the bound
(after autograd's examples/mixture_variational_inference.py)."""

import numpy as np
import numpy.random as npr
from scipy.special import logsumexp
from scipy.stats import norm

NEEDS = "containers"

rs = npr.RandomState(0)
D = 2


def log_density(x):
    """An unnormalised bimodal target."""
    mu, log_sigma = x[:, 0], x[:, 1]
    sigma_density = norm.logpdf(log_sigma, 0, 1.35)
    mu_density = np.logaddexp(
        norm.logpdf(mu, -1.0, np.exp(log_sigma)), norm.logpdf(mu, 1.0, np.exp(log_sigma))
    )
    return sigma_density + mu_density


def diag_gaussian_logpdf(x, mean, log_std):
    return np.sum(norm.logpdf(x, mean, np.exp(log_std)), axis=-1)


def mixture_logpdf(x, params):
    components, log_weights = params
    log_weights = log_weights - logsumexp(log_weights)
    component_logpdfs = np.stack(
        [diag_gaussian_logpdf(x, mean, log_std) for mean, log_std in components], axis=-1
    )
    return logsumexp(component_logpdfs + log_weights, axis=-1)


def mixture_elbo(params, num_samples):
    components, log_weights = params
    weights = np.exp(log_weights - logsumexp(log_weights))
    elbo = 0.0
    for k, (mean, log_std) in enumerate(components):
        samples = rs.randn(num_samples, D) * np.exp(log_std) + mean
        elbo = elbo + weights[k] * np.mean(log_density(samples) - mixture_logpdf(samples, params))
    return elbo


def objective(params):
    return -mixture_elbo(params, num_samples=10)


def RESET():
    rs.seed(0)


def make_args():
    init = npr.RandomState(1)
    components = [(init.randn(D), -1.0 + 0.1 * init.randn(D)) for _ in range(3)]
    return ((components, np.zeros(3)),)
