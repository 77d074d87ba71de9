"""Gradient-descent loops with autograd's signatures (`autograd.misc.optimizers`).

Each takes `grad(params, i) -> gradient` (the gradient at iteration `i`, shaped like
params), the initial parameters (any parameter tree: an array, a list of (W, b) tuples, a
dict), an optional `callback(params, i, gradient)` called before each step, `num_iters`
and the method's constants, and returns the parameters after the last step, shaped like
the initial ones. The state (momentum, moment estimates) is kept as flat vectors
(`sourcegrad.misc.flatten`). These loops are not differentiated: they call a compiled
gradient, plain numpy does the updates.
"""

import numpy as np

from .flatten import flatten


def _over_vectors(grad, params):
    """`(vector_grad, unflatten, x0)`: the gradient function as one on flat vectors."""
    x0, unflatten = flatten(params)
    x0 = np.array(x0, dtype=np.result_type(x0.dtype, np.float64))

    def vector_grad(x, i):
        return flatten(grad(unflatten(x), i))[0]

    return vector_grad, unflatten, x0


def _callback_over_vectors(callback, unflatten):
    if callback is None:
        return None
    return lambda x, i, g: callback(unflatten(x), i, unflatten(g))


def sgd(grad, x0, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    """Gradient descent with momentum: velocity <- mass * velocity - (1 - mass) * g,
    x <- x + step_size * velocity."""
    vector_grad, unflatten, x = _over_vectors(grad, x0)
    report = _callback_over_vectors(callback, unflatten)
    velocity = np.zeros_like(x)
    for i in range(num_iters):
        g = vector_grad(x, i)
        if report is not None:
            report(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return unflatten(x)


def rmsprop(grad, x0, callback=None, num_iters=100, step_size=0.1, gamma=0.9, eps=10**-8):
    """RMSprop: a running mean of squared gradients (started at one) scales each step."""
    vector_grad, unflatten, x = _over_vectors(grad, x0)
    report = _callback_over_vectors(callback, unflatten)
    mean_square = np.ones_like(x)
    for i in range(num_iters):
        g = vector_grad(x, i)
        if report is not None:
            report(x, i, g)
        mean_square = gamma * mean_square + (1.0 - gamma) * g**2
        x = x - step_size * g / (np.sqrt(mean_square) + eps)
    return unflatten(x)


def adam(grad, x0, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=10**-8):
    """Adam (Kingma and Ba, 2015): moment estimates of g and g**2 with bias correction."""
    vector_grad, unflatten, x = _over_vectors(grad, x0)
    report = _callback_over_vectors(callback, unflatten)
    m = np.zeros_like(x)
    v = np.zeros_like(x)
    for i in range(num_iters):
        g = vector_grad(x, i)
        if report is not None:
            report(x, i, g)
        m = b1 * m + (1.0 - b1) * g
        v = b2 * v + (1.0 - b2) * g**2
        m_hat = m / (1.0 - b1 ** (i + 1))
        v_hat = v / (1.0 - b2 ** (i + 1))
        x = x - step_size * m_hat / (np.sqrt(v_hat) + eps)
    return unflatten(x)
