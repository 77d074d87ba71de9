"""Maximum-likelihood fit of a negative binomial with gammaln; the profile likelihood of r
with p at its closed-form optimum, built from lambdas as in
autograd's examples/negative_binomial_maxlike.py."""

# ruff: noqa: E731  (lambdas assigned to names, as the program's authors write them)
import numpy as np
from scipy.special import gammaln

NEEDS = "lambdas"


def negbin_loglike(r, p, x):
    # the negative binomial log likelihood we want to maximize
    return gammaln(r + x) - gammaln(r) - gammaln(x + 1) + x * np.log(p) + r * np.log(1 - p)


def make_profile_loglike(x):
    # follows Wikipedia's section on negative binomial max likelihood
    assert np.var(x) > np.mean(x), "Likelihood-maximizing parameters don't exist!"
    loglike = lambda r, p: np.sum(negbin_loglike(r, p, x))
    p = lambda r: np.sum(x) / np.sum(r + x)
    return lambda r: loglike(r, p(r))


data = np.array([5.0, 0.0, 12.0, 3.0, 8.0, 1.0, 0.0, 22.0, 7.0, 4.0])
objective = make_profile_loglike(data)


def make_args():
    return (1.7,)
