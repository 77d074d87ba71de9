"""Independent component analysis with a Student-t source density, the model's functions
built by a maker function (autograd's examples/ica.py)."""

import numpy as np
import numpy.random as npr
from scipy.stats import t

NEEDS = "scipy"


def make_ica_funs(observed_dimension, latent_dimension):
    """These functions implement independent component analysis.

    The model is:
    latents are drawn i.i.d. for each data point from a product of student-ts.
    weights are the same across all datapoints.
    each data = latents * weghts + noise."""

    def sample(weights, n_samples, noise_std, rs):
        latents = rs.randn(latent_dimension, n_samples)
        latents = np.array(sorted(latents.T, key=lambda a_entry: a_entry[0])).T
        noise = rs.randn(n_samples, observed_dimension) * noise_std
        observed = predict(weights, latents) + noise
        return latents, observed

    def predict(weights, latents):
        return np.dot(weights, latents).T

    def logprob(weights, latents, noise_std, observed):
        preds = predict(weights, latents)
        log_lik = np.sum(t.logpdf(preds, 2.4, observed, noise_std))
        return log_lik

    num_weights = observed_dimension * latent_dimension

    def unpack_weights(weights):
        return np.reshape(weights, (observed_dimension, latent_dimension))

    return num_weights, sample, logprob, unpack_weights


observed_dimension = 4
latent_dimension = 2
noise_std = 0.1
n_samples = 10
num_weights, sample, logprob, unpack_weights = make_ica_funs(observed_dimension, latent_dimension)
true_weights = npr.RandomState(0).randn(observed_dimension, latent_dimension)
latents, data = sample(true_weights, n_samples, noise_std, npr.RandomState(1))


def objective(weights):
    weight_matrix = unpack_weights(weights[:num_weights])
    latents = np.reshape(weights[num_weights:], (latent_dimension, n_samples))
    return -logprob(weight_matrix, latents, noise_std, data) / n_samples


def make_args():
    rs = npr.RandomState(2)
    return (0.5 * rs.randn(num_weights + latent_dimension * n_samples),)
