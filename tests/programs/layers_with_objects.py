"""A small network in the style of published class-based numpy layer libraries: layers are
objects with ``forward`` and hand-written ``backward`` methods and a parameter dict on
``self``; the activations and the loss are objects with ``__call__``; a layer's
hyperparameters come from a property that builds a new dict on every read; the loss loads
the weights it is handed onto the layers for the call (``layer.params = {"W": W, ...}``),
the layers keep what they saw for their backward pass, and the loss puts the network back.

Differentiated as written, through the trace front end; checked against central differences
and against the layers' own backward methods.
"""

import numpy as np


class LeakyReLU:
    def __init__(self, alpha=0.1):
        self.alpha = alpha

    def __call__(self, z):
        out = z.copy()
        out[z < 0] = out[z < 0] * self.alpha
        return out

    def grad(self, z):
        out = np.ones_like(z)
        out[z < 0] = self.alpha
        return out


class Sigmoid:
    def __call__(self, z):
        return 1.0 / (1.0 + np.exp(-z))

    def grad(self, z):
        s = self(z)
        return s * (1 - s)


class Dense:
    def __init__(self, n_in, n_out, activation, rs):
        self.params = {"W": rs.randn(n_in, n_out) * 0.5, "b": np.zeros((1, n_out))}
        self.activation = activation
        self.cache = {}
        self._weight_decay = 1e-3

    @property
    def hyperparameters(self):  # a new dict on every read, as such libraries write it
        return {"weight_decay": self._weight_decay, "act_fn": type(self.activation).__name__}

    def forward(self, X):
        Z = X @ self.params["W"] + self.params["b"]
        self.cache["X"], self.cache["Z"] = X, Z
        return self.activation(Z)

    def backward(self, dLdY):
        X, Z = self.cache["X"], self.cache["Z"]
        dZ = dLdY * self.activation.grad(Z)
        dW = X.T @ dZ + 2 * self.hyperparameters["weight_decay"] * self.params["W"]
        db = dZ.sum(axis=0, keepdims=True)
        return dZ @ self.params["W"].T, {"W": dW, "b": db}

    def penalty(self):
        return self.hyperparameters["weight_decay"] * np.sum(self.params["W"] ** 2)


class BinaryCrossEntropy:
    def __call__(self, y, y_pred):
        eps = np.finfo(float).eps
        y_pred = np.clip(y_pred, eps, 1 - eps)
        return -np.sum(y * np.log(y_pred) + (1 - y) * np.log(1 - y_pred))

    @staticmethod
    def grad(y, y_pred):
        return -(y / y_pred) + (1 - y) / (1 - y_pred)


class Network:
    def __init__(self, rs):
        self.layers = [Dense(4, 5, LeakyReLU(0.1), rs), Dense(5, 2, Sigmoid(), rs)]
        self.loss = BinaryCrossEntropy()

    def forward(self, X):
        for layer in self.layers:
            X = layer.forward(X)
        return X

    def backward(self, y, y_pred):
        d = self.loss.grad(y, y_pred)
        grads = []
        for layer in reversed(self.layers):
            d, g = layer.backward(d)
            grads.append(g)
        return grads[::-1]


RS = np.random.RandomState(7)
NET = Network(RS)
X = RS.randn(6, 4)
Y = (RS.rand(6, 2) > 0.5).astype(float)


def objective(weights):
    # (the layers' parameters and caches are the call's, and put back after it: a traced
    # function that left them in NET would be refused, since its code would not store later
    # calls' values there)
    saved = [(layer.params, layer.cache) for layer in NET.layers]
    for layer, params in zip(NET.layers, weights):
        layer.params, layer.cache = {"W": params["W"], "b": params["b"]}, {}
    try:
        y_pred = NET.forward(X)
        return NET.loss(Y, y_pred) + sum(layer.penalty() for layer in NET.layers)
    finally:
        for layer, (params, cache) in zip(NET.layers, saved):
            layer.params, layer.cache = params, cache


def make_args():
    return (
        [{"W": layer.params["W"].copy(), "b": layer.params["b"] + 0.1} for layer in NET.layers],
    )


def hand_written(weights):
    for layer, params in zip(NET.layers, weights):
        layer.params = dict(params)
    return NET.backward(Y, NET.forward(X))
