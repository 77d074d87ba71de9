"""Lambdas as objectives are written (used by test_lambdas.py: the positions of the lambdas
on each line matter, so this file is kept as it is)."""

import numpy as np

import sourcegrad

objective = lambda w: np.sum(np.sin(w) * w)  # noqa: E731
two_on_a_line = (lambda x: np.sum(x**2), lambda x: np.sum(np.exp(x) * x))
twins = lambda x: np.sum(x * 2.0), lambda x: np.sum(x * 2.0)  # noqa: E731
nested = lambda x: (lambda y: np.sum(y * x))(2.0 * x)  # noqa: E731
activation = lambda z: np.tanh(z)  # noqa: E731
loss_of_two = lambda w, b, X: np.sum((X @ w + b) ** 2)  # noqa: E731
spread = lambda x: np.sum(  # noqa: E731
    np.cos(x) * x + x**2
)


def uses_a_global_lambda(x):
    return np.sum(activation(x) ** 2)


def gradient_of_an_inline_lambda(x):
    return sourcegrad.grad(lambda v: np.sum(np.exp(v) * v))(x)


ambiguous = (lambda x: np.sum(x * 3.0), lambda x: np.sum(x))  # (only for the refusal's test)
