"""A feed-forward network in the style of the well-known textbook code: weights and biases as
lists of column-vector arrays, a cost *class* whose static methods the network reaches through
an attribute (``self.cost.fn(a, y)``, ``self.cost.delta(z, a, y)``), a ``backprop(x, y)`` for
one example, and a mini-batch loss that loops over the examples one at a time
(``for x, y in mini_batch``).

The compiled gradient must match central differences and the summed per-example backprop.
"""

import numpy as np


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def sigmoid_prime(z):
    return sigmoid(z) * (1 - sigmoid(z))


class CrossEntropyCost:
    @staticmethod
    def fn(a, y):
        return np.sum(np.nan_to_num(-y * np.log(a) - (1 - y) * np.log(1 - a)))

    @staticmethod
    def delta(z, a, y):
        return a - y


class Network:
    def __init__(self, sizes, cost=CrossEntropyCost, seed=1):
        rs = np.random.RandomState(seed)
        self.num_layers = len(sizes)
        self.sizes = sizes
        self.biases = [rs.randn(y, 1) for y in sizes[1:]]
        self.weights = [rs.randn(y, x) / np.sqrt(x) for x, y in zip(sizes[:-1], sizes[1:])]
        self.cost = cost

    def feedforward(self, a):
        for b, w in zip(self.biases, self.weights):
            a = sigmoid(np.dot(w, a) + b)
        return a

    def total_cost(self, data, lmbda):
        cost = 0.0
        for x, y in data:
            a = self.feedforward(x)
            cost += self.cost.fn(a, y) / len(data)
        cost += 0.5 * (lmbda / len(data)) * sum(np.linalg.norm(w) ** 2 for w in self.weights)
        return cost

    def backprop(self, x, y):
        nabla_b = [np.zeros(b.shape) for b in self.biases]
        nabla_w = [np.zeros(w.shape) for w in self.weights]
        activation = x
        activations = [x]
        zs = []
        for b, w in zip(self.biases, self.weights):
            z = np.dot(w, activation) + b
            zs.append(z)
            activation = sigmoid(z)
            activations.append(activation)
        delta = self.cost.delta(zs[-1], activations[-1], y)
        nabla_b[-1] = delta
        nabla_w[-1] = np.dot(delta, activations[-2].transpose())
        for layer in range(2, self.num_layers):
            z = zs[-layer]
            sp = sigmoid_prime(z)
            delta = np.dot(self.weights[-layer + 1].transpose(), delta) * sp
            nabla_b[-layer] = delta
            nabla_w[-layer] = np.dot(delta, activations[-layer - 1].transpose())
        return nabla_b, nabla_w


NET = Network([3, 4, 2])
RS = np.random.RandomState(2)
MINI_BATCH = [(RS.randn(3, 1), (RS.rand(2, 1) > 0.5).astype(float)) for _ in range(5)]
LMBDA = 0.1


def objective(weights):
    # (the weights loaded for the call and the network put back: a traced function that
    # left them in NET would be refused, since its code would not load later calls' weights)
    saved, NET.weights = NET.weights, weights
    try:
        return NET.total_cost(MINI_BATCH, LMBDA)
    finally:
        NET.weights = saved


def make_args():
    return ([w.copy() for w in NET.weights],)


def hand_written(weights):
    NET.weights = weights
    n = len(MINI_BATCH)
    total = [np.zeros(w.shape) for w in weights]
    for x, y in MINI_BATCH:
        _, nabla_w = NET.backprop(x, y)
        total = [t + nw / n for t, nw in zip(total, nabla_w)]
    return [t + (LMBDA / n) * w for t, w in zip(total, weights)]
