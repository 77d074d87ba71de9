"""Derivatives taken inside differentiated code: `sourcegrad.grad(inner)(x)` in a function
being differentiated is differentiated (its derivative a Hessian-vector product of inner),
from the source and from a trace; a second derivative through it, and the other transforms
(hessian, jvp, jacobian, ...) called there, are refused at the user's line with what to do.
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import numeric_grad

X = np.array([0.5, -1.2, 2.0])


def inner(x):
    return np.sum(np.sin(x) ** 2 * x)


def newton_like(x):
    return np.sum(sourcegrad.grad(inner)(x) ** 2 * np.cos(x))


def newton_like_traced(*args):  # (*args: the source front end hands it to the trace)
    return newton_like(*args)


def hessian_inside(x):
    return np.sum(sourcegrad.hessian(inner)(x) * np.outer(x, x))


def hessian_inside_traced(*args):
    return hessian_inside(*args)


def jvp_inside(x):
    return np.sum(sourcegrad.jvp(inner, (x,), (np.ones(3),))[1] * x)


def test_a_gradient_called_inside_is_differentiated_on_both_front_ends():
    gradient = sourcegrad.grad(newton_like, check=True)
    got = gradient(X.copy())
    assert gradient.traced == ""
    np.testing.assert_allclose(got, numeric_grad(newton_like, (X.copy(),), 0), rtol=1e-6)
    traced = sourcegrad.grad(newton_like_traced)
    np.testing.assert_allclose(traced(X.copy()), got, rtol=1e-9)
    assert traced.traced != ""


def test_a_second_derivative_through_a_gradient_called_inside_is_refused():
    # (forward over reverse: the gradient called inside has no forward-mode rule; reverse
    # over reverse differentiates its pullback: tests/test_autograd_examples_s54.py)
    with pytest.raises(errors.NoRuleError, match="call_gradient has no forward-mode rule"):
        sourcegrad.hessian(newton_like)(X.copy())


@pytest.mark.parametrize("fn", [hessian_inside, hessian_inside_traced, jvp_inside])
def test_other_transforms_inside_are_refused_at_the_users_line(fn):
    with pytest.raises(errors.UnsupportedSyntaxError) as raised:
        sourcegrad.grad(fn)(X.copy())
    message = str(raised.value)
    assert "only grad(f)(x) is differentiated there" in message
    assert f"{__file__}:" in message
    assert "sourcegrad.hessian(inner)(x)" in message or "sourcegrad.jvp(inner" in message
