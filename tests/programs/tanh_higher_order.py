"""The third derivative of tanh through grad of grad (autograd's examples/tanh.py plots
derivatives up to the sixth with grad(grad(...)))."""

import numpy as np

from sourcegrad import grad

NEEDS = "higher order"


def tanh(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


d2tanh = grad(grad(tanh))
objective = d2tanh


def make_args():
    return (0.3,)
