"""Expected sufficient statistics of a hidden Markov model as the gradient of its log
partition function; the natural parameters are a tuple of log arrays
(autograd's examples/hmm_em.py)."""

import numpy as np
import numpy.random as npr
from scipy.special import logsumexp

NEEDS = "containers"


def log_partition_function(natural_params, data):
    if isinstance(data, list):
        return sum(log_partition_function(natural_params, x) for x in data)

    log_pi, log_A, log_B = natural_params

    log_alpha = log_pi
    for y in data:
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, y]

    return logsumexp(log_alpha)


def normalize(a):
    def replace_zeros(a):
        return np.where(a > 0.0, a, 1.0)

    return a / replace_zeros(a.sum(-1, keepdims=True))


def initialize_hmm_parameters(num_states, num_outputs, rs=npr.RandomState(0)):
    init_pi = normalize(rs.rand(num_states))
    init_A = normalize(rs.rand(num_states, num_states))
    init_B = normalize(rs.rand(num_states, num_outputs))
    return init_pi, init_A, init_B


train_data = [np.array([0, 1, 2, 2, 1]), np.array([2, 2, 0, 1])]


def objective(natural_params):
    return log_partition_function(natural_params, train_data)


def make_args():
    pi, A, B = initialize_hmm_parameters(num_states=3, num_outputs=3)
    return (tuple(map(np.log, (pi, A, B))),)
