"""The generator's side of a generative adversarial net; both nets are lists of (W, b)
tuples, noise drawn inside the objective (autograd's examples/generative_adversarial_net.py)."""

import numpy as np
import numpy.random as npr

NEEDS = "containers"


def relu(x):
    return np.maximum(0, x)


def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)


def logsigmoid(x):
    return x - np.logaddexp(0, x)


def init_random_params(scale, layer_sizes, rs=npr.RandomState(0)):
    """Build a list of (weights, biases) tuples,
    one for each layer in the net."""
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
    inputs is an (N x D) matrix."""
    inpW, inpb = params[0]
    inputs = relu(np.dot(inputs, inpW) + inpb)
    for W, b in params[1:-1]:
        outputs = batch_normalize(np.dot(inputs, W) + b)
        inputs = relu(outputs)
    outW, outb = params[-1]
    outputs = np.dot(inputs, outW) + outb
    return outputs


def generate_from_noise(gen_params, num_samples, noise_dim, rs):
    noise = rs.rand(num_samples, noise_dim)
    samples = neural_net_predict(gen_params, noise)
    return sigmoid(samples)


def gan_objective(gen_params, dsc_params, real_data, num_samples, noise_dim, rs):
    fake_data = generate_from_noise(gen_params, num_samples, noise_dim, rs)
    logprobs_fake = logsigmoid(neural_net_predict(dsc_params, fake_data))
    logprobs_real = logsigmoid(neural_net_predict(dsc_params, real_data))
    return np.mean(logprobs_real) - np.mean(logprobs_fake)


noise_dim = 3
data_dim = 5
gen_layer_sizes = [noise_dim, 6, 6, data_dim]
dsc_layer_sizes = [data_dim, 6, 1]
real_data = npr.RandomState(2).rand(6, data_dim)
seed = npr.RandomState(0)


def objective(gen_params, dsc_params, iter):
    return gan_objective(gen_params, dsc_params, real_data, 6, noise_dim, seed)


def RESET():
    seed.seed(0)


def make_args():
    return (
        init_random_params(0.5, gen_layer_sizes),
        init_random_params(0.5, dsc_layer_sizes, rs=npr.RandomState(1)),
        0,
    )
