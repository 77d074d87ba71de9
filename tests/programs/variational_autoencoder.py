"""A variational autoencoder: encoder and decoder nets as lists of (W, b) tuples, a
reparameterised sample with rs.randn (autograd's examples/variational_autoencoder.py)."""

import numpy as np
import numpy.random as npr
from scipy.special import expit as sigmoid

NEEDS = "containers"


def diag_gaussian_log_density(x, mu, log_std):
    return np.sum(
        -0.5 * (x - mu) ** 2 / np.exp(2 * log_std) - log_std - 0.5 * np.log(2 * np.pi), axis=-1
    )


def unpack_gaussian_params(params):
    # Params of a diagonal Gaussian.
    D = np.shape(params)[-1] // 2
    mean, log_std = params[:, :D], params[:, D:]
    return mean, log_std


def sample_diag_gaussian(mean, log_std, rs):
    return rs.randn(*mean.shape) * np.exp(log_std) + mean


def bernoulli_log_density(targets, unnormalized_logprobs):
    # unnormalized_logprobs are in R
    # Targets must be -1 or 1
    label_probabilities = -np.logaddexp(0, -unnormalized_logprobs * targets)
    return np.sum(label_probabilities, axis=-1)  # Sum across pixels.


def relu(x):
    return np.maximum(0, x)


def init_net_params(scale, layer_sizes, rs=npr.RandomState(0)):
    """Build a (weights, biases) tuples for all layers."""
    return [
        (
            scale * rs.randn(m, n),  # weight matrix
            scale * rs.randn(n),
        )  # bias vector
        for m, n in zip(layer_sizes[:-1], layer_sizes[1:])
    ]


def batch_normalize(activations):
    mbmean = np.mean(activations, axis=0, keepdims=True)
    return (activations - mbmean) / (np.std(activations, axis=0, keepdims=True) + 1)


def neural_net_predict(params, inputs):
    """Params is a list of (weights, bias) tuples.
    inputs is an (N x D) matrix.
    Applies batch normalization to every layer but the last."""
    for W, b in params[:-1]:
        outputs = batch_normalize(np.dot(inputs, W) + b)  # linear transformation
        inputs = relu(outputs)  # nonlinear transformation
    outW, outb = params[-1]
    outputs = np.dot(inputs, outW) + outb
    return outputs


def nn_predict_gaussian(params, inputs):
    # Returns means and diagonal variances
    return unpack_gaussian_params(neural_net_predict(params, inputs))


def generate_from_prior(gen_params, num_samples, noise_dim, rs):
    latents = rs.randn(num_samples, noise_dim)
    return sigmoid(neural_net_predict(gen_params, latents))


def p_images_given_latents(gen_params, images, latents):
    preds = neural_net_predict(gen_params, latents)
    return bernoulli_log_density(images, preds)


def vae_lower_bound(gen_params, rec_params, data, rs):
    # We use a simple Monte Carlo estimate of the KL
    # divergence from the prior.
    q_means, q_log_stds = nn_predict_gaussian(rec_params, data)
    latents = sample_diag_gaussian(q_means, q_log_stds, rs)
    q_latents = diag_gaussian_log_density(latents, q_means, q_log_stds)
    p_latents = diag_gaussian_log_density(latents, 0, 0)
    likelihood = p_images_given_latents(gen_params, data, latents)
    return np.mean(p_latents + likelihood - q_latents)


latent_dim = 2
data_dim = 6
gen_layer_sizes = [latent_dim, 5, data_dim]
rec_layer_sizes = [data_dim, 5, latent_dim * 2]

seed = npr.RandomState(0)
train_images = np.round(npr.RandomState(1).rand(8, data_dim)) * 2 - 1  # -1 or 1 pixels
batch_size = 4
num_batches = len(train_images) // batch_size


def batch_indices(iter):
    idx = iter % num_batches
    return slice(idx * batch_size, (idx + 1) * batch_size)


def objective(combined_params, iter):
    data_idx = batch_indices(iter)
    gen_params, rec_params = combined_params
    return -vae_lower_bound(gen_params, rec_params, train_images[data_idx], seed) / data_dim


def RESET():
    seed.seed(0)


def make_args():
    init_gen_params = init_net_params(0.5, gen_layer_sizes)
    init_rec_params = init_net_params(0.5, rec_layer_sizes)
    return ((init_gen_params, init_rec_params), 1)
