"""MAP regression with a small net whose weights are one flat vector, unpacked into a list
of (W, b) tuples (after autograd's examples/neural_net_regression.py)."""

import numpy as np
from scipy.stats import norm

NEEDS = "containers inside"


def make_nn_funs(layer_sizes, weight_scale=10.0, noise_scale=0.1, nonlinearity=np.tanh):
    """These functions implement a standard multi-layer perceptron."""
    shapes = list(zip(layer_sizes[:-1], layer_sizes[1:]))
    num_weights = sum((m + 1) * n for m, n in shapes)

    def unpack_layers(weights):
        layers = []
        for m, n in shapes:
            layers.append(
                (weights[: m * n].reshape((m, n)), weights[m * n : m * n + n].reshape((1, n)))
            )
            weights = weights[(m + 1) * n :]
        return layers

    def predictions(weights, inputs):
        for W, b in unpack_layers(weights):
            outputs = np.dot(inputs, W) + b
            inputs = nonlinearity(outputs)
        return outputs

    def logprob(weights, inputs, targets):
        log_prior = np.sum(norm.logpdf(weights, 0, weight_scale))
        preds = predictions(weights, inputs)
        log_lik = np.sum(norm.logpdf(preds, targets, noise_scale))
        return log_prior + log_lik

    return num_weights, predictions, logprob


def build_toy_dataset(n_data=10, noise_std=0.1):
    rs = np.random.RandomState(0)
    inputs = np.concatenate(
        [np.linspace(0, 3, num=n_data // 2), np.linspace(6, 8, num=n_data // 2)]
    )
    targets = np.cos(inputs) + rs.randn(n_data) * noise_std
    inputs = (inputs - 4.0) / 2.0
    return inputs[:, np.newaxis], targets[:, np.newaxis]


init_scale = 0.1
num_weights, predictions, logprob = make_nn_funs(layer_sizes=[1, 5, 5, 1])
inputs, targets = build_toy_dataset()


def objective(weights, t):
    return -logprob(weights, inputs, targets)


def make_args():
    return (np.random.RandomState(0).randn(num_weights) * init_scale, 0)
