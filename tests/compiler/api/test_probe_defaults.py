"""Rebinding a function's defaults after its gradient was made (`f.__defaults__ = (3.0,)`).

A Gradient binds a call's left-out arguments from the defaults as they were when it was
made, and its fast entries have them in their own signatures: a call after the rebinding
computed the old function's gradient. Now such a call is refused (CallArgumentsError), and
a gradient made afresh, or code that inlines a helper whose defaults were rebound, computes
the new function's, checked against central differences.
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from sourcegrad.errors import CallArgumentsError

X = np.array([0.3, -1.2, 0.7])


def test_rebound_positional_default_refused_then_fresh_gradient_right():
    def power(x, k=2.0):
        return np.sum(x**k)

    g = sourcegrad.grad(power)
    np.testing.assert_allclose(g(X), numeric_grad(power, (X,), 0), rtol=1e-6)
    g(X)  # (a second call runs the fast entry, which has k=2.0 in its signature)
    power.__defaults__ = (3.0,)
    for _ in range(2):  # the entry and the general path both refuse
        with pytest.raises(CallArgumentsError, match="default values of .*power"):
            g(X)
    np.testing.assert_allclose(sourcegrad.grad(power)(X), numeric_grad(power, (X,), 0), rtol=1e-6)


def test_rebound_keyword_only_default_refused():
    def power(x, *, k=2.0):
        return np.sum(x**k)

    g = sourcegrad.grad(power)
    g(X)
    power.__kwdefaults__["k"] = 3.0
    with pytest.raises(CallArgumentsError):
        g(X)
    np.testing.assert_allclose(sourcegrad.grad(power)(X), numeric_grad(power, (X,), 0), rtol=1e-6)


def test_rebound_default_refused_for_python_floats_and_value_and_grad():
    def power(x, k=2.0):
        return x**k

    g = sourcegrad.grad(power)
    vg = sourcegrad.value_and_grad(power)
    for _ in range(2):
        assert g(1.5) == pytest.approx(numeric_grad(power, (1.5,), 0), rel=1e-6)
        vg(1.5)
    power.__defaults__ = (3.0,)
    with pytest.raises(CallArgumentsError):
        g(1.5)
    with pytest.raises(CallArgumentsError):
        vg(1.5)


def test_inlined_helper_with_rebound_default_recompiles():
    def helper(v, k=2.0):
        return v**k

    def loss(x):
        return np.sum(np.sin(helper(x)))

    g = sourcegrad.grad(loss)
    np.testing.assert_allclose(g(X), numeric_grad(loss, (X,), 0), rtol=1e-6)
    g(X)
    helper.__defaults__ = (3.0,)
    np.testing.assert_allclose(g(X), numeric_grad(loss, (X,), 0), rtol=1e-6)
    helper.__kwdefaults__ = None  # (no keyword-only ones: unchanged code stays right)
    np.testing.assert_allclose(g(X), numeric_grad(loss, (X,), 0), rtol=1e-6)


def test_array_default_changed_in_place_is_read_afresh():
    def weighted(x, w=np.array([1.0, 2.0, 3.0])):  # noqa: B008 (the case probed)
        return np.sum(w * x**2)

    g = sourcegrad.grad(weighted)
    g(X)
    weighted.__defaults__[0][:] = [5.0, -1.0, 0.5]
    np.testing.assert_allclose(g(X), numeric_grad(weighted, (X,), 0), rtol=1e-6)
