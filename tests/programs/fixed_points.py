"""Square roots by Newton's method written as a generic fixed-point iteration that takes the
update and the convergence test as functions (autograd's examples/fixed_points.py
differentiates through the iteration)."""

import numpy as np

NEEDS = "callbacks"


def newton_sqrt_iter(a):
    return lambda x: 0.5 * (x + a / x)


def grad_descent_sqrt_iter(a):
    return lambda x: x - 0.05 * (x**2 - a)


def sqrt(a, guess=10.0):
    return fixed_point(newton_sqrt_iter, a, guess, distance, 1e-4)


def distance(x, y):
    return np.abs(x - y)


def fixed_point(f, a, x0, distance, tol):
    _f = f(a)
    x, x_prev = _f(x0), x0
    while distance(x, x_prev) > tol:
        x, x_prev = _f(x), x
    return x


objective = sqrt


def make_args():
    return (2.0,)
