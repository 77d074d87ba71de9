"""One check for a registry entry in the compiler: first order, forward mode and second order
against central finite differences in float64.

`check_all(f, *args)` differentiates `f` with respect to its first argument: the gradient
against differences of f, the JVP along a random direction against differences of f, and the
Hessian-vector product (forward over reverse) against differences of the gradient.
`check_every_argument_to_second_order(f, args)`: reverse over reverse for every pair of
arguments, and the JVP along all of them.
"""

import numpy as np

import sourcegrad
from sourcegrad.api import numeric_grad


def _close(ours, numeric, rtol):
    ours, numeric = np.asarray(ours, dtype=float), np.asarray(numeric, dtype=float)
    scale = max(1.0, float(np.max(np.abs(numeric), initial=0.0)))
    np.testing.assert_allclose(ours, numeric, rtol=rtol, atol=rtol * scale)


def check_all(f, *args, rtol=1e-6, seed=5):
    x, rest = args[0], args[1:]
    t = np.random.default_rng(seed).normal(size=np.shape(x))
    eps = 1e-6
    gradient = sourcegrad.grad(f)
    _close(gradient(*args), numeric_grad(f, args, 0), rtol)
    zeros = tuple(np.zeros_like(a) for a in rest)
    _, tangent = sourcegrad.jvp(f, args, (t,) + zeros)
    _close(tangent, (f(x + eps * t, *rest) - f(x - eps * t, *rest)) / (2 * eps), rtol)
    hvp = sourcegrad.jvp(gradient, args, (t,) + zeros)[1]
    _close(
        hvp, (gradient(x + eps * t, *rest) - gradient(x - eps * t, *rest)) / (2 * eps), rtol * 10
    )


def check_every_argument_to_second_order(f, args):
    """Reverse over reverse (d/d(args[j]) of <grad(f, wrt=i), w>, every i and j, up to three
    arguments) and the JVP of f along all of them, against central differences."""
    for i in range(len(args)):
        grad = sourcegrad.grad(f, wrt=i)
        w = np.cos(np.arange(np.size(args[i]))).reshape(np.shape(args[i]))
        weighted = _weighted_gradient(grad, w, len(args))
        for j in range(len(args)):
            np.testing.assert_allclose(
                sourcegrad.grad(weighted, wrt=j)(*args),
                numeric_grad(weighted, args, j),
                rtol=1e-6,
                atol=1e-8,
            )
    tangents = tuple(np.sin(np.arange(np.size(a)) + 1.0).reshape(np.shape(a)) for a in args)
    tangents = tuple(float(t) if isinstance(a, float) else t for a, t in zip(args, tangents))
    eps = 1e-6
    numeric = (
        f(*(a + eps * t for a, t in zip(args, tangents)))
        - f(*(a - eps * t for a, t in zip(args, tangents)))
    ) / (2 * eps)
    np.testing.assert_allclose(sourcegrad.jvp(f, args, tangents)[1], numeric, rtol=1e-6)


def _weighted_gradient(grad, w, n):
    """<grad(*args), w> as a function of n named parameters (what sourcegrad differentiates)."""
    if n == 1:

        def weighted(a):
            return np.sum(grad(a) * w)

    elif n == 2:

        def weighted(a, b):
            return np.sum(grad(a, b) * w)

    else:

        def weighted(a, b, c):
            return np.sum(grad(a, b, c) * w)

    return weighted
