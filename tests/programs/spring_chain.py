"""A chain of masses and springs stepped with symplectic Euler in a Python loop; the loss is
the distance of the last mass from a target, differentiated with respect to the stiffnesses."""

import numpy as np

NEEDS = "basic"


def forces(x, k):
    stretch = np.diff(np.concatenate([[0.0], x])) - 1.0
    tension = k * stretch
    return np.concatenate([tension[:-1] - tension[1:], [-tension[-1]]])


def simulate(k, x0, v0, dt=0.05, steps=20, damping=0.1):
    x, v = x0, v0
    for _ in range(steps):
        v = v + dt * (forces(x, k) - damping * v)
        x = x + dt * v
    return x


x_start = np.array([1.2, 2.1, 2.9, 4.3])


def objective(k):
    x_final = simulate(k, x_start, np.zeros(4))
    return (x_final[-1] - 4.0) ** 2 + 0.01 * np.sum(k**2)


def make_args():
    return (np.array([3.0, 2.0, 4.0, 1.5]),)
