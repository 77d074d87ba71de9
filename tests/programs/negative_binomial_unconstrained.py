"""The negative binomial likelihood in unconstrained parameters (log r, logit p), both in one
array, with gammaln from scipy.special."""

import numpy as np
from scipy.special import expit, gammaln

NEEDS = "scipy"


def negbin_loglike(r, p, x):
    return gammaln(r + x) - gammaln(r) - gammaln(x + 1) + x * np.log(p) + r * np.log(1 - p)


data = np.array([5.0, 0.0, 12.0, 3.0, 8.0, 1.0, 0.0, 22.0, 7.0, 4.0])


def objective(params):
    r, p = np.exp(params[0]), expit(params[1])
    return -np.sum(negbin_loglike(r, p, data))


def make_args():
    return (np.array([0.5, 0.3]),)
