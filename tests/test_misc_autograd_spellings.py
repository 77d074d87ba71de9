"""sourcegrad.misc: autograd's `flatten` and its optimizers (`sgd`, `rmsprop`, `adam`).

flatten is checked by a round trip and inside a compiled gradient against central finite
differences; the optimizers against the update rules written out by hand, on a small
regression over a list of (W, b) tuples, and against autograd's own where it is installed.
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.misc import flatten, flatten_func
from sourcegrad.misc.optimizers import adam, rmsprop, sgd

RS = np.random.RandomState(7)
PARAMS = [(RS.randn(3, 4), RS.randn(4)), (RS.randn(4, 1), RS.randn(1))]
X = RS.randn(6, 3)
Y = RS.randn(6, 1)


def penalised_fit(params, i=0):
    """A two-layer regression plus an L2 penalty over every weight, flattened."""
    flat, _ = flatten(params)
    h = X
    for W, b in params:
        h = np.tanh(h @ W + b)
    return np.mean((h - Y) ** 2) + 0.01 * np.dot(flat, flat)


def test_flatten_round_trip_keeps_structure_and_values():
    tree = {"a": [np.arange(3.0), (2.5, np.ones((2, 2)))], "b": np.float64(-1.0)}
    vector, unflatten = flatten(tree)
    assert vector.shape == (9,)
    back = unflatten(vector * 2)
    assert list(back) == ["a", "b"]
    np.testing.assert_array_equal(back["a"][0], np.arange(3.0) * 2)
    np.testing.assert_array_equal(back["a"][1][1], 2 * np.ones((2, 2)))
    assert float(back["a"][1][0]) == 5.0 and float(back["b"]) == -2.0
    with pytest.raises(ValueError, match="9 elements"):
        unflatten(np.zeros(8))


def _finite_difference_grad(f, params, eps=1e-6):
    vector, unflatten = flatten(params)
    out = np.zeros_like(vector)
    for k in range(vector.size):
        step = np.zeros_like(vector)
        step[k] = eps
        out[k] = (f(unflatten(vector + step)) - f(unflatten(vector - step))) / (2 * eps)
    return out


def test_flatten_inside_a_compiled_gradient_matches_finite_differences():
    got = flatten(sourcegrad.grad(penalised_fit)(PARAMS))[0]
    want = _finite_difference_grad(penalised_fit, PARAMS)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_flatten_func_gives_a_gradient_over_vectors():
    flat_grad, unflatten, x0 = flatten_func(sourcegrad.grad(penalised_fit), PARAMS)
    got = flat_grad(x0, 0)
    want = _finite_difference_grad(penalised_fit, PARAMS)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    assert len(unflatten(x0)) == 2


def _by_hand(method, grad, x, num_iters, **k):
    """The three update rules written out on a flat vector."""
    a = np.zeros_like(x)
    b = np.ones_like(x) if method == "rmsprop" else np.zeros_like(x)
    for i in range(num_iters):
        g = grad(x, i)
        if method == "sgd":
            a = k["mass"] * a - (1 - k["mass"]) * g
            x = x + k["step_size"] * a
        elif method == "rmsprop":
            b = k["gamma"] * b + (1 - k["gamma"]) * g * g
            x = x - k["step_size"] * g / (np.sqrt(b) + 1e-8)
        else:
            a = k["b1"] * a + (1 - k["b1"]) * g
            b = k["b2"] * b + (1 - k["b2"]) * g * g
            a_hat, b_hat = a / (1 - k["b1"] ** (i + 1)), b / (1 - k["b2"] ** (i + 1))
            x = x - k["step_size"] * a_hat / (np.sqrt(b_hat) + 1e-8)
    return x


@pytest.mark.parametrize(
    "method, optimizer, options",
    [
        ("sgd", sgd, {"step_size": 0.1, "mass": 0.8}),
        ("rmsprop", rmsprop, {"step_size": 0.01, "gamma": 0.9}),
        ("adam", adam, {"step_size": 0.01, "b1": 0.9, "b2": 0.999}),
    ],
)
def test_optimizers_follow_their_update_rules_and_lower_the_loss(method, optimizer, options):
    gradient = sourcegrad.grad(penalised_fit)
    seen = []
    out = optimizer(
        gradient,
        PARAMS,
        callback=lambda p, i, g: seen.append((i, type(p), len(g))),
        num_iters=30,
        **options,
    )
    assert seen == [(i, list, 2) for i in range(30)]
    flat_grad, unflatten, x0 = flatten_func(gradient, PARAMS)
    want = _by_hand(method, flat_grad, x0, 30, **options)
    np.testing.assert_allclose(flatten(out)[0], want, rtol=1e-12, atol=1e-12)
    assert penalised_fit(out) < penalised_fit(PARAMS)


def test_optimizers_agree_with_autograd():
    optimizers = pytest.importorskip("autograd.misc.optimizers")
    gradient = sourcegrad.grad(penalised_fit)
    for name in ("sgd", "rmsprop", "adam"):
        ours = flatten(getattr(sourcegrad.misc.optimizers, name)(gradient, PARAMS, num_iters=25))
        theirs = getattr(optimizers, name)(gradient, PARAMS, num_iters=25)
        np.testing.assert_allclose(ours[0], flatten(theirs)[0], rtol=1e-10, atol=1e-12)


def mixture_fit(params):
    """A dict of parameters with a nested list: the objective a flat optimizer sees."""
    centres, scales = params["centres"], params["scales"][0]
    d = X[:, :1] - centres
    return np.sum(np.log(np.sum(np.exp(-0.5 * (d / np.exp(scales)) ** 2), axis=1)))


def test_flatten_func_of_an_objective_has_gradient_and_hvp_matching_finite_differences():
    params = {"centres": RS.randn(3), "scales": [0.1 * RS.randn(3)]}
    flat_objective, unflatten, x0 = flatten_func(mixture_fit, params)
    gradient = sourcegrad.grad(flat_objective)
    want = _finite_difference_grad(mixture_fit, params)
    np.testing.assert_allclose(gradient(x0), want, rtol=1e-6, atol=1e-8)
    v = RS.randn(x0.size)
    eps = 1e-5
    hv_fd = (gradient(x0 + eps * v) - gradient(x0 - eps * v)) / (2 * eps)
    np.testing.assert_allclose(sourcegrad.hvp(flat_objective)(x0, v), hv_fd, rtol=1e-5, atol=1e-7)
