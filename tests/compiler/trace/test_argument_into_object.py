"""A differentiated function that stores its argument into an object outliving the call
(course code's `net.params = params; return net.loss(X, y)`) is traced, and each call of the
gradient stores that call's argument there, as Python does.

The code made from a trace repeats only the numpy operations; a store made at the trace only
would leave the object holding the first call's weights (and a traced copy of them). Each test
checks, over calls with different arguments: the gradient against central finite differences
in float64, the object holding the very argument passed on this call (the same object, where
Python gives it), and one compile for all the calls. A store the function reads before it
writes, a value computed inside, an append, stay refused with the user's state put back.
"""

import time

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import memory_caches, numeric_grad

RNG = np.random.default_rng(7)
X = RNG.normal(size=(5, 4))
Y = np.array([0, 1, 2, 1, 0])


def _softmax_loss(scores, y):
    shifted = scores - scores.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_p[np.arange(len(y)), y].mean()


class TwoLayerNet:
    """cs231n's assignment network: its weights in `self.params`, read by `loss`."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.params = {
            "W1": rng.normal(size=(4, 6)) * 0.5,
            "b1": rng.normal(size=6) * 0.1,
            "W2": rng.normal(size=(6, 3)) * 0.5,
            "b2": rng.normal(size=3) * 0.1,
        }
        self.reg = 0.05

    def loss(self, X, y):
        W1, b1 = self.params["W1"], self.params["b1"]
        W2, b2 = self.params["W2"], self.params["b2"]
        hidden = np.tanh(X @ W1 + b1)
        data_loss = _softmax_loss(hidden @ W2 + b2, y)
        return data_loss + self.reg * (np.sum(W1 * W1) + np.sum(W2 * W2))


NET = TwoLayerNet()


def loss_of_params(params):
    NET.params = params
    return NET.loss(X, Y)


def _params(seed):
    rng = np.random.default_rng(seed)
    return {k: v + 0.3 * rng.normal(size=v.shape) for k, v in TwoLayerNet().params.items()}


def _numeric_params(params):
    """The finite-difference gradient of the network's loss for each weight of `params`."""
    keys = list(params)

    def loss(*weights):
        net = TwoLayerNet()
        net.params = dict(zip(keys, weights))
        return net.loss(X, Y)

    weights = tuple(params[k] for k in keys)
    return {k: numeric_grad(loss, weights, i) for i, k in enumerate(keys)}


def _close(got, expected):
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def _traced(fn, **options):
    g = sourcegrad.grad(fn, **options)
    assert isinstance(g, sourcegrad.api.gradient.Gradient)
    return g


def test_a_params_dict_stored_on_the_network_each_call():
    g = sourcegrad.grad(loss_of_params)
    compiles = memory_caches.compile_count()
    for seed in range(4):
        params = _params(seed)
        grads = g(params)
        assert NET.params is params  # (the argument itself, as Python leaves it)
        assert all(type(v) is np.ndarray for v in NET.params.values())
        expected = _numeric_params(params)
        for k in params:
            _close(grads[k], expected[k])
    assert g.traced  # (the source front end does not model the store: traced)
    assert memory_caches.compile_count() - compiles == 1  # (no trace per call)


def test_a_call_after_the_user_changed_net_params_themselves():
    g = sourcegrad.grad(loss_of_params)
    g(_params(10))
    NET.params = _params(11)  # (the user's own change between calls)
    NET.params["W1"] = NET.params["W1"] * 3.0
    compiles = memory_caches.compile_count()
    params = _params(12)
    grads = g(params)
    assert NET.params is params
    expected = _numeric_params(params)
    for k in params:
        _close(grads[k], expected[k])
    assert memory_caches.compile_count() == compiles  # (what f writes first is no dependency)


def test_a_training_loop_passing_net_params_and_updating_it_in_place():
    net = TwoLayerNet(seed=3)

    def loss(params):
        net.params = params
        return net.loss(X, Y)

    step = sourcegrad.value_and_grad(loss)
    params = net.params
    compiles = memory_caches.compile_count()
    losses = []
    for _ in range(20):
        value, grads = step(net.params)
        for k in net.params:
            net.params[k] -= 0.5 * grads[k]  # (the arrays the next call reads, changed)
        losses.append(value)
    assert net.params is params and losses[-1] < 0.5 * losses[0]
    _, grads = step(net.params)
    expected = _numeric_params(net.params)
    for k in params:
        _close(grads[k], expected[k])
    assert memory_caches.compile_count() - compiles == 1


def test_the_decorator_form_and_value_and_grad():
    @sourcegrad.grad
    def step(params):
        NET.params = params
        return NET.loss(X, Y)

    both = sourcegrad.value_and_grad(loss_of_params)
    for seed in (20, 21, 22):
        params = _params(seed)
        expected = _numeric_params(params)
        grads = step(params)
        assert NET.params is params
        other = _params(seed + 100)
        value, grads_too = both(other)
        assert NET.params is other
        net = TwoLayerNet()
        net.params = dict(other)
        _close(value, net.loss(X, Y))
        expected_too = _numeric_params(other)
        for k in params:
            _close(grads[k], expected[k])
            _close(grads_too[k], expected_too[k])


class Layers:
    """An attribute per weight (`net.W1 = W1`)."""

    def __init__(self):
        self.W1 = np.ones((4, 6))
        self.W2 = np.ones((6, 3))

    def loss(self, X, y):
        return _softmax_loss(np.tanh(X @ self.W1) @ self.W2, y)


LAYERS = Layers()


def loss_of_weights(W1, W2):
    LAYERS.W1 = W1
    LAYERS.W2 = W2
    return LAYERS.loss(X, Y)


def _plain_loss(W1, W2):
    return _softmax_loss(np.tanh(X @ W1) @ W2, Y)


@pytest.mark.parametrize("argnums", [(0, 1), 1])
def test_an_attribute_per_weight_with_argnums(argnums):
    g = sourcegrad.grad(loss_of_weights, argnums=argnums)
    compiles = memory_caches.compile_count()
    for seed in range(3):
        rng = np.random.default_rng(seed)
        W1, W2 = rng.normal(size=(4, 6)), rng.normal(size=(6, 3))
        grads = g(W1, W2)
        assert LAYERS.W1 is W1 and LAYERS.W2 is W2  # (also the one not differentiated)
        wanted = argnums if isinstance(argnums, tuple) else (argnums,)
        got = grads if isinstance(argnums, tuple) else (grads,)
        for i, grad in zip(wanted, got):
            _close(grad, numeric_grad(_plain_loss, (W1, W2), i))
    assert memory_caches.compile_count() - compiles == 1


class Model:
    def __init__(self):
        self.weights = np.zeros((4, 3))

    def scores(self, X):
        return X @ self.weights


class Trainer:
    """A nested object: the weights go to `self.model.weights`, read by the model."""

    def __init__(self):
        self.model = Model()

    def loss(self, w):
        self.model.weights = w
        return _softmax_loss(self.model.scores(X), Y)


def test_a_nested_object_of_a_bound_method():
    trainer = Trainer()
    g = sourcegrad.grad(trainer.loss)
    for seed in range(3):
        w = np.random.default_rng(seed).normal(size=(4, 3))
        grad = g(w)
        assert trainer.model.weights is w
        _close(grad, numeric_grad(lambda w: _softmax_loss(X @ w, Y), (w,), 0))


class SelfStoringNet(TwoLayerNet):
    def step(self, params):
        self.params = params
        return self.loss(X, Y)


def _in_a_closure():
    net = TwoLayerNet(seed=5)

    def loss(params):
        net.params = params
        return net.loss(X, Y)

    return net, loss


@pytest.mark.parametrize("form", ["bound method storing into self", "closure"])
def test_a_bound_method_and_a_closure(form):
    if form == "closure":
        net, fn = _in_a_closure()
    else:
        net = SelfStoringNet(seed=4)
        fn = net.step
    g = sourcegrad.grad(fn)
    for seed in (30, 31):
        params = _params(seed)
        grads = g(params)
        assert net.params is params
        expected = _numeric_params(params)
        for k in params:
            _close(grads[k], expected[k])


def loss_of_a_dict_built_here(W1, b1, W2, b2):
    NET.params = {"W1": W1, "b1": b1, "W2": W2, "b2": b2}
    return NET.loss(X, Y)


def test_a_dict_the_function_builds_of_its_arguments_is_built_again_each_call():
    g = sourcegrad.grad(loss_of_a_dict_built_here, argnums=(0, 2))
    seen = []
    for seed in range(3):
        params = _params(seed)
        weights = tuple(params.values())
        grads = g(*weights)
        # (a dict made on each call, as Python makes it, holding this call's arrays themselves)
        assert NET.params == params and NET.params is not params
        assert all(NET.params[k] is params[k] for k in params)
        assert all(NET.params is not old for old in seen)
        seen.append(NET.params)
        expected = _numeric_params(params)
        _close(grads[0], expected["W1"])
        _close(grads[1], expected["W2"])


def test_a_vjp_stores_the_argument_too():
    value, pullback = sourcegrad.vjp(loss_of_weights, np.ones((4, 6)), np.ones((6, 3)))
    W1, W2 = np.full((4, 6), 0.2), np.full((6, 3), -0.1)
    value, pullback = sourcegrad.vjp(loss_of_weights, W1, W2)
    assert LAYERS.W1 is W1 and LAYERS.W2 is W2
    _close(pullback(1.0)[0], numeric_grad(_plain_loss, (W1, W2), 0))


def test_a_jvp_stores_the_argument_too():
    W1, W2 = np.full((4, 6), 0.3), np.full((6, 3), 0.2)
    dW1 = np.random.default_rng(3).normal(size=(4, 6))
    for scale in (1.0, -2.0):
        W1 = W1 * scale
        value, tangent = sourcegrad.jvp(loss_of_weights, (W1, W2), (dW1, None))
        assert LAYERS.W1 is W1 and LAYERS.W2 is W2
        _close(value, _plain_loss(W1, W2))
        _close(tangent, np.sum(numeric_grad(_plain_loss, (W1, W2), 0) * dW1))


# -- what stays refused --------------------------------------------------------------------


def reads_then_stores(W1, W2):
    previous = LAYERS.W1  # (the previous call's argument: a later call would read another)
    LAYERS.W1 = W1
    LAYERS.W2 = W2
    return LAYERS.loss(X, Y) + np.sum(previous * W1)


def stores_a_computed_value(W1, W2):
    LAYERS.W1 = W1 * 2.0
    LAYERS.W2 = W2
    return LAYERS.loss(X, Y)


HISTORY: list = []


def stores_a_number_beside(W1, W2):
    LAYERS.W1 = W1
    LAYERS.W2 = W2
    LAYERS.stamp = time.perf_counter()  # (Python stores another each call: not replayable)
    return LAYERS.loss(X, Y)


def appends_a_computed_value(W1, W2):
    LAYERS.W1 = W1
    LAYERS.W2 = W2
    loss = LAYERS.loss(X, Y)
    HISTORY.append(loss * 1.0)
    return loss


@pytest.mark.parametrize(
    "fn, what, line",
    [
        (reads_then_stores, "reads the attribute before storing", "LAYERS.W1 = W1"),
        (stores_a_computed_value, "'W1' of a Layers object", "LAYERS.W1 = W1 * 2.0"),
        (appends_a_computed_value, "the list HISTORY", "HISTORY.append(loss * 1.0)"),
        (
            stores_a_number_beside,
            "'stamp' of a Layers object",
            "LAYERS.stamp = time.perf_counter()",
        ),
    ],
    ids=["read-before-store", "computed", "append", "a number"],
)
def test_other_stores_stay_refused_and_put_back(fn, what, line):
    before = (LAYERS.W1, LAYERS.W2, list(HISTORY))
    with pytest.raises(errors.OutsideChangeError, match="changes|stores") as raised:
        sourcegrad.grad(fn, argnums=(0, 1))(np.ones((4, 6)), np.ones((6, 3)))
    assert what in str(raised.value)
    assert raised.value.loc.text.strip().startswith(line)
    assert LAYERS.W1 is before[0] and LAYERS.W2 is before[1] and HISTORY == before[2]
    assert not hasattr(LAYERS, "stamp")
