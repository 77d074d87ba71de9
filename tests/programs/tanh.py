"""tanh written from exponentials (autograd's examples/tanh.py)."""

import numpy as np

NEEDS = "basic"


def tanh(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


objective = tanh


def make_args():
    return (0.7,)
