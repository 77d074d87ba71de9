"""Self-attention with layer normalisation, each weight matrix its own argument (how code
written for array-only APIs spells it): the gradient with respect to the query weights."""

import numpy as np

NEEDS = "basic"


def layer_norm(x, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def softmax(x, axis=-1):
    unnormalized = np.exp(x - x.max(axis=axis, keepdims=True))
    return unnormalized / unnormalized.sum(axis=axis, keepdims=True)


def attention_loss(Wq, Wk, Wv, x, targets):
    h = layer_norm(x)
    q, k, v = h @ Wq, h @ Wk, h @ Wv
    weights = softmax(q @ k.T / np.sqrt(q.shape[-1]))
    out = x + weights @ v
    return np.mean((out - targets) ** 2)


objective = attention_loss
WRT = (0, 1, 2)


def make_args():
    rng = np.random.default_rng(0)
    return (
        rng.normal(size=(4, 4)) * 0.5,
        rng.normal(size=(4, 4)) * 0.5,
        rng.normal(size=(4, 4)) * 0.5,
        rng.normal(size=(5, 4)),
        rng.normal(size=(5, 4)),
    )
