"""An objective written inline as a lambda, grad(lambda x: ...) being a common habit."""

# ruff: noqa: E731  (lambdas assigned to names, as the program's authors write them)
import numpy as np

NEEDS = "lambdas"

A = np.array([[3.0, 1.0], [1.0, 2.0]])
b = np.array([1.0, -1.0])

objective = lambda x: 0.5 * x @ A @ x - b @ x + np.sum(np.cos(x))


def make_args():
    return (np.array([0.3, -0.2]),)
