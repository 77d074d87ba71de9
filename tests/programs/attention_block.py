"""A single-head self-attention block with layer normalisation, parameters in a dict as JAX
transformer code keeps them."""

import numpy as np

NEEDS = "containers"


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def softmax(x, axis=-1):
    unnormalized = np.exp(x - x.max(axis=axis, keepdims=True))
    return unnormalized / unnormalized.sum(axis=axis, keepdims=True)


def attention(params, x):
    q = x @ params["Wq"]
    k = x @ params["Wk"]
    v = x @ params["Wv"]
    scores = q @ k.T / np.sqrt(q.shape[-1])
    return softmax(scores) @ v @ params["Wo"]


def block(params, x):
    h = x + attention(params, layer_norm(x, params["ln_gamma"], params["ln_beta"]))
    return h + np.tanh(h @ params["W_mlp"])


def init_params(d_model, rng):
    def dense(n_in, n_out):
        return rng.normal(size=(n_in, n_out)) / np.sqrt(n_in)

    return {
        "Wq": dense(d_model, d_model),
        "Wk": dense(d_model, d_model),
        "Wv": dense(d_model, d_model),
        "Wo": dense(d_model, d_model),
        "ln_gamma": np.ones(d_model),
        "ln_beta": np.zeros(d_model),
        "W_mlp": dense(d_model, d_model),
    }


tokens = np.random.default_rng(1).normal(size=(5, 4))
targets = np.random.default_rng(2).normal(size=(5, 4))


def objective(params):
    return np.mean((block(params, tokens) - targets) ** 2)


def make_args():
    return (init_params(4, np.random.default_rng(0)),)
