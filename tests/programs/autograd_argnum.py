"""Training loss of a logistic regression differentiated with respect to its second
argument, called the autograd way: grad(training_loss, argnum=1)."""

import numpy as np

NEEDS = "argnum"

WRT = 1
GRAD_KWARGS = {"argnum": 1}


def sigmoid(x):
    return 0.5 * (np.tanh(x / 2.0) + 1)


def training_loss(inputs, weights, targets):
    preds = sigmoid(np.dot(inputs, weights))
    label_probabilities = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probabilities))


rs = np.random.RandomState(0)
X = rs.randn(8, 3)
t = rs.rand(8) > 0.5
objective = training_loss


def make_args():
    return (X, np.array([0.1, -0.2, 0.3]), t)
