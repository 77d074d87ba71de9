"""A Hessian-vector product by differentiating the directional derivative, the
autograd/JAX recipe hvp(f)(x, v) = grad(lambda x: np.vdot(grad(f)(x), v))(x)."""

import numpy as np

from sourcegrad import grad

NEEDS = "nested grad"


def f(x):
    return np.sum(np.tanh(x) ** 2) + 0.5 * np.sum(x[:-1] * x[1:])


v = np.array([1.0, -0.5, 0.25, 2.0])


def directional_derivative(x):
    return np.vdot(grad(f)(x), v)


objective = directional_derivative


def make_args():
    return (np.array([0.3, -0.7, 1.1, 0.2]),)
