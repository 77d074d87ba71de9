"""The MLP of JAX's "training a simple neural network" tutorial: parameters a list of (w, b)
tuples, relu hidden layers, the last layer unpacked from params[-1]."""

import numpy as np
from scipy.special import logsumexp

NEEDS = "containers"


def random_layer_params(m, n, rng, scale=1e-1):
    return scale * rng.normal(size=(n, m)), scale * rng.normal(size=(n,))


# Initialize all layers for a fully-connected neural network with sizes "sizes"
def init_network_params(sizes, rng):
    return [random_layer_params(m, n, rng) for m, n in zip(sizes[:-1], sizes[1:])]


def relu(x):
    return np.maximum(0, x)


def predict(params, images):
    # per-example predictions, batched as rows
    activations = images
    for w, b in params[:-1]:
        outputs = np.dot(activations, w.T) + b
        activations = relu(outputs)

    final_w, final_b = params[-1]
    logits = np.dot(activations, final_w.T) + final_b
    return logits - logsumexp(logits, axis=1, keepdims=True)


def one_hot(x, k, dtype=np.float64):
    """Create a one-hot encoding of x of size k."""
    return np.array(x[:, None] == np.arange(k), dtype)


def loss(params, images, targets):
    preds = predict(params, images)
    return -np.mean(preds * targets)


layer_sizes = [16, 8, 8, 4]
data_rng = np.random.default_rng(1)
images = data_rng.normal(size=(12, 16))
labels = one_hot(data_rng.integers(0, 4, size=12), 4)


def objective(params):
    return loss(params, images, labels)


def make_args():
    return (init_network_params(layer_sizes, np.random.default_rng(0)),)
