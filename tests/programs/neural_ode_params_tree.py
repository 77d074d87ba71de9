"""A neural ODE whose dynamics are a small tanh network: its parameters, a list of (W, b)
tuples, go to scipy.integrate.odeint as one item of `args` (the spelling of autograd's
ode_net example); the loss is the squared distance of the trajectory from a spiral.
The gradient with respect to that list comes from odeint's adjoint solve."""

import numpy as np
from scipy.integrate import odeint

NEEDS = "scipy"


def dynamics(y, t, layers):
    h = y
    for W, b in layers[:-1]:
        h = np.tanh(h @ W + b)
    W, b = layers[-1]
    return h @ W + b


ts = np.linspace(0.0, 1.5, 7)
target = np.stack([np.cos(2.0 * ts), np.sin(2.0 * ts)], axis=1) * np.exp(-0.2 * ts)[:, None]


def objective(layers):
    path = odeint(dynamics, np.array([1.0, 0.0]), ts, (layers,), rtol=1e-11, atol=1e-11)
    return np.mean((path - target) ** 2)


def make_args():
    rs = np.random.RandomState(3)
    sizes = [2, 5, 2]
    layers = [(0.5 * rs.randn(m, n), 0.1 * rs.randn(n)) for m, n in zip(sizes[:-1], sizes[1:])]
    return (layers,)
