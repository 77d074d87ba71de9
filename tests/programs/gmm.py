"""Maximum likelihood for a Gaussian mixture model, parameters in a dict with Cholesky-like
factors of the covariances (autograd's examples/gmm.py)."""

import numpy as np
import numpy.random as npr
from scipy.special import logsumexp
from scipy.stats import multivariate_normal as mvn

NEEDS = "containers"


def init_gmm_params(num_components, D, scale, rs=npr.RandomState(0)):
    return {
        "log proportions": rs.randn(num_components) * scale,
        "means": rs.randn(num_components, D) * scale,
        "lower triangles": np.zeros((num_components, D, D)) + np.eye(D),
    }


def log_normalize(x):
    return x - logsumexp(x)


def unpack_gmm_params(params):
    normalized_log_proportions = log_normalize(params["log proportions"])
    return normalized_log_proportions, params["means"], params["lower triangles"]


def gmm_log_likelihood(params, data):
    cluster_lls = []
    for log_proportion, mean, cov_sqrt in zip(*unpack_gmm_params(params)):
        cov = np.dot(cov_sqrt.T, cov_sqrt)
        cluster_lls.append(log_proportion + mvn.logpdf(data, mean, cov))
    return np.sum(logsumexp(np.vstack(cluster_lls), axis=0))


def make_pinwheel_like(num_per_class=5, rs=npr.RandomState(1)):
    centres = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    return np.concatenate([c + 0.4 * rs.randn(num_per_class, 2) for c in centres])


data = make_pinwheel_like()


def objective(params):
    return -gmm_log_likelihood(params, data)


def make_args():
    return (init_gmm_params(num_components=3, D=2, scale=0.5),)
