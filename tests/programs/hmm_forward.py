"""The forward algorithm of a hidden Markov model in log space, each log-probability table
its own argument; the gradient with respect to the transition table."""

import numpy as np
from scipy.special import logsumexp

NEEDS = "scipy"

WRT = 1


def hmm_log_likelihood(log_pi, log_A, log_B, observations):
    log_alpha = log_pi + log_B[:, observations[0]]
    for obs in observations[1:]:
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, obs]
    return logsumexp(log_alpha)


observations = np.array([0, 2, 1, 1, 0, 2])


def objective(log_pi, log_A, log_B):
    return -hmm_log_likelihood(log_pi, log_A, log_B, observations)


def make_args():
    rs = np.random.RandomState(0)
    return (np.log(np.full(3, 1.0 / 3)), rs.randn(3, 3) * 0.5, rs.randn(3, 3) * 0.5)
