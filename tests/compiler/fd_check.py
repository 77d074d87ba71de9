"""One check for a registry entry in the compiler: first order, forward mode and second order
against central finite differences in float64.

`check_all(f, *args)` differentiates `f` with respect to its first argument: the gradient
against differences of f, the JVP along a random direction against differences of f, and the
Hessian-vector product (forward over reverse) against differences of the gradient.
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
