"""One damped Newton step computed with grad of grad inside the function being
differentiated (the loss after a Newton step, as meta-optimisation code writes it)."""

import numpy as np

from sourcegrad import grad

NEEDS = "nested grad"


def f(x):
    return np.log(1.0 + np.exp(x)) - 0.3 * x + 0.1 * x**4


def loss_after_newton_step(x):
    step = grad(f)(x) / grad(grad(f))(x)
    return f(x - 0.5 * step)


objective = loss_after_newton_step


def make_args():
    return (0.8,)
