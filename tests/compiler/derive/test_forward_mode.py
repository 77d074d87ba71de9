"""Forward mode (jvp) and forward-over-reverse second derivatives (hvp, hessian).

Every straight-line and control-flow case: the JVP equals the gradient dotted with the
tangent; the Hessian-vector product equals central differences of the gradient along v."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from tests.compiler.cases import CASES
from tests.compiler.control_cases import CONTROL_CASES

ALL = CASES + CONTROL_CASES
IDS = [f"{c[0].__name__}-{i}" for i, c in enumerate(ALL)]


def tangent_like(x, rng):
    if isinstance(x, float):
        return float(rng.normal())
    return rng.normal(size=np.shape(x))


def positions_of(wrt):
    return wrt if isinstance(wrt, tuple) else (wrt,)


@pytest.mark.parametrize("fn, make_args, wrt", ALL, ids=IDS)
def test_jvp_is_the_gradient_along_the_tangent(fn, make_args, wrt):
    rng = np.random.default_rng(1)
    args = make_args(np.random.default_rng(0))
    positions = positions_of(wrt)
    tangents = [tangent_like(a, rng) if i in positions else None for i, a in enumerate(args)]
    value, t_out = sourcegrad.jvp(fn, args, tangents)
    grads = sourcegrad.grad(fn, wrt=wrt)(*args)
    grads = grads if isinstance(wrt, tuple) else (grads,)
    expected = sum(
        float(np.sum(np.asarray(g) * np.asarray(tangents[p]))) for g, p in zip(grads, positions)
    )
    assert float(value) == pytest.approx(float(fn(*args)), rel=1e-12, abs=1e-12)
    assert float(t_out) == pytest.approx(expected, rel=1e-9, abs=1e-10)


# f_prod: the gradient of prod is a runtime helper without a forward-mode rule yet, so its
# Hessian raises NoRuleError (tested below) instead of giving a number
HVP_CASES = [
    c
    for c in ALL
    if not isinstance(c[2], tuple)
    and c[0].__name__ not in ("f_mask_index", "c_print", "f_nondiff", "f_prod")
]


@pytest.mark.parametrize(
    "fn, make_args, wrt", HVP_CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(HVP_CASES)]
)
def test_hvp_matches_finite_differences_of_the_gradient(fn, make_args, wrt):
    args = make_args(np.random.default_rng(0))
    x = args[wrt]
    v = tangent_like(x, np.random.default_rng(2))
    gradient = sourcegrad.grad(fn, wrt=wrt)
    eps = 1e-5

    def at(shift):
        moved = list(args)
        moved[wrt] = x + shift * np.asarray(v) if not isinstance(x, float) else x + shift * v
        return np.asarray(gradient(*moved))

    numeric = (at(eps) - at(-eps)) / (2 * eps)
    got = np.asarray(sourcegrad.hvp(fn, wrt)(*args, v))
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-6)


def quadratic_form(x, A):
    return x @ A @ x + np.sum(np.sin(x))


def test_hessian_of_a_quadratic_form():
    A = np.array([[2.0, 1.0], [0.0, 3.0]])
    x = np.array([0.3, -0.4])
    H = sourcegrad.hessian(quadratic_form)(x, A)
    np.testing.assert_allclose(H, A + A.T - np.diag(np.sin(x)), rtol=1e-12)


def test_jvp_source_keeps_the_loop_and_saves_nothing():
    from tests.compiler.control_cases import c_rnn

    args = CONTROL_CASES[[c[0] for c in CONTROL_CASES].index(c_rnn)][1](np.random.default_rng(0))
    tangents = [np.ones_like(args[0])] + [None] * 4
    sourcegrad.jvp(c_rnn, args, tangents)
    source = sourcegrad.api.gradient._JVPS[(c_rnn, (0,), "auto")].source
    assert "for i in range(len(xs)):" in source and "saved" not in source
    assert "forward-mode derivative" in "".join(source.splitlines()[:2])  # (the header)
    assert "h_dot" in source


def test_jvp_needs_a_tangent():
    with pytest.raises(errors.WrtError):
        sourcegrad.jvp(quadratic_form, (np.ones(2), np.eye(2)), (None, None))


@pytest.mark.parametrize(
    "x",
    [
        np.array([[0.5, 1.5, 2.0], [-0.7, 1.1, 0.3]]),
        np.array([[0.5, 0.0, 2.0], [-0.7, 1.1, 0.3]]),  # one zero
        np.array([[0.0, 0.0, 2.0], [-0.7, 0.0, 0.3]]),
    ],
)  # two zeros
def test_second_derivative_of_prod_is_exact_also_at_zeros(x):
    from tests.compiler.cases import f_prod

    gradient = sourcegrad.grad(f_prod)
    v = np.array([[0.3, -1.2, 0.8], [0.5, 0.2, -0.4]])
    # the Hessian-vector product against central differences of the gradient along v
    eps = 1e-6
    fd = (gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(sourcegrad.hvp(f_prod)(x, v), fd, rtol=1e-6, atol=1e-8)
    # the full Hessian forward over reverse and reverse over reverse agree
    fwd = sourcegrad.jacobian(gradient, mode="fwd")(x)
    rev = sourcegrad.jacobian(gradient, mode="rev")(x)
    np.testing.assert_allclose(fwd, rev, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fwd.reshape(6, 6), fwd.reshape(6, 6).T, atol=1e-12)


def row_of_shifted(X, b):
    z = X + b  # b's tangent reaches every row of z
    return np.sum(z[1] ** 2) + np.sum(np.tanh(X * b)[:, 0])


def test_a_broadcast_operand_gives_every_row_its_tangent():
    # a square X: indexing the unbroadcast tangent (b_dot[1]) would not even fail
    rng = np.random.default_rng(3)
    X, b, v = rng.normal(size=(2, 2)), rng.normal(size=2), rng.normal(size=2)
    value, tangent = sourcegrad.jvp(row_of_shifted, (X, b), (None, v))
    assert value == pytest.approx(row_of_shifted(X, b))
    gradient = sourcegrad.grad(row_of_shifted, wrt=1)(X, b)
    assert tangent == pytest.approx(gradient @ v, rel=1e-12)
    eps = 1e-6
    numeric = (row_of_shifted(X, b + eps * v) - row_of_shifted(X, b - eps * v)) / (2 * eps)
    assert tangent == pytest.approx(numeric, rel=1e-6)
