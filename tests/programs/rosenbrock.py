"""The Rosenbrock function in n dimensions, vectorised with slices."""

import numpy as np

NEEDS = "basic"


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


objective = rosenbrock


def make_args():
    return (np.array([-1.2, 1.0, 0.8, 1.5]),)
