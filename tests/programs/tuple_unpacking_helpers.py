"""Helpers returning tuples, unpacked by the caller (mean, log_std = unpack(params)), and a
KL divergence between diagonal Gaussians: the shape of most variational code."""

import numpy as np

NEEDS = "basic"


def unpack_params(params):
    D = params.shape[0] // 2
    mean, log_std = params[:D], params[D:]
    return mean, log_std


def kl_to_standard_normal(mean, log_std):
    var = np.exp(2 * log_std)
    return 0.5 * np.sum(var + mean**2 - 1.0 - 2 * log_std)


def expected_log_lik(mean, log_std, y):
    # E_q[log N(y | z, 1)] for q = N(mean, exp(log_std)^2), in closed form
    return np.sum(-0.5 * ((y - mean) ** 2 + np.exp(2 * log_std)) - 0.5 * np.log(2 * np.pi))


y_obs = np.array([0.5, -1.2, 2.0])


def negative_elbo(params):
    mean, log_std = unpack_params(params)
    return kl_to_standard_normal(mean, log_std) - expected_log_lik(mean, log_std, y_obs)


objective = negative_elbo


def make_args():
    return (np.array([0.1, 0.2, -0.3, -0.5, 0.0, 0.3]),)
