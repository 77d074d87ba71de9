"""A multi-layer perceptron on digits-like data, parameters a list of (W, b) tuples
(after autograd's examples/neural_net.py)."""

import numpy as np
from scipy.special import logsumexp

NEEDS = "containers"


def init_random_params(scale, layer_sizes, rs=np.random.RandomState(0)):
    """Build a list of (weights, biases) tuples, one for each layer in the net."""
    return [
        (
            scale * rs.randn(m, n),  # weight matrix
            scale * rs.randn(n),
        )  # bias vector
        for m, n in zip(layer_sizes[:-1], layer_sizes[1:])
    ]


def neural_net_predict(params, inputs):
    """Implements a deep neural network for classification.
    params is a list of (weights, bias) tuples.
    inputs is an (N x D) matrix.
    returns normalized class log-probabilities."""
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    """Computes l2 norm of params by flattening them into a vector."""
    return sum(np.sum(W**2) + np.sum(b**2) for W, b in params)


def log_posterior(params, inputs, targets, L2_reg):
    log_prior = -L2_reg * l2_norm(params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik


def load_digits_like(N=20, rs=np.random.RandomState(1)):
    """8x8 grey images of ten classes: a noisy prototype per class."""
    prototypes = rs.rand(10, 64) > 0.5
    labels = rs.randint(10, size=N)
    images = prototypes[labels] * 0.8 + 0.2 * rs.rand(N, 64)
    one_hot = np.eye(10)[labels]
    return images, one_hot


train_images, train_labels = load_digits_like()


def objective(params):
    return -log_posterior(params, train_images, train_labels, 0.01)


def make_args():
    return (init_random_params(0.1, layer_sizes=[64, 6, 10]),)
