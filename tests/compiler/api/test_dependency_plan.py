"""The planned dependency check (`memory_caches.Dependencies`) answers as the records do.

A traced object network's code has hundreds of dependency records, checked on every call;
the plan compares the objects' `__dict__`s and the containers' items all at once, and falls
back to the records where anything moved. Each change here is made after a trace, and the
plan's answer is checked against the records' own (`still_bound` of a plain tuple), and the
gradient against central differences.
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import memory_caches, numeric_grad

X = np.array([0.2, -0.5, 0.9])


class Layer:
    def __init__(self, scale):
        self.W = np.eye(3) * scale
        self.params = {"b": np.full(3, 0.1)}
        self.power = 2.0

    def forward(self, x):
        return np.sin(self.W @ x + self.params["b"]) ** self.power


class Net:
    def __init__(self):
        self.layers = [Layer(1.0), Layer(0.5)]
        self.gain = 1.5

    def __call__(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return np.sum(x) * self.gain


def _change_w(net):
    net.layers[1].W = net.layers[1].W * 2.0


def _same_float_anew(net):
    net.gain = float("1.5")  # (equal, another object: still bound)


def _new_gain(net):
    net.gain = -0.5


def _append_layer(net):
    net.layers.append(Layer(0.3))


def _replace_layer(net):
    net.layers[0] = Layer(2.0)


def _dict_member(net):
    net.layers[0].params["b"] = np.full(3, -0.4)


def _delete_and_set_again(net):
    w = net.layers[0].W
    del net.layers[0].W
    net.layers[0].W = w  # (the same array again: still bound)


def _new_attribute(net):
    net.layers[0].act = np.tanh  # (a name shadowing nothing, read by nothing)


def _replaced_dict(net):
    layer = net.layers[0]
    layer.__dict__ = dict(layer.__dict__, power=3.0)


CHANGES = [
    _change_w,
    _same_float_anew,
    _new_gain,
    _append_layer,
    _replace_layer,
    _dict_member,
    _delete_and_set_again,
    _new_attribute,
    _replaced_dict,
]


@pytest.mark.parametrize("change", CHANGES, ids=[c.__name__ for c in CHANGES])
def test_the_plan_answers_as_the_records_and_the_gradient_follows(change):
    net = Net()
    g = sourcegrad.grad(net)
    g(X)
    deps = g._last.dependencies
    assert type(deps) is memory_caches.Dependencies and deps.still_bound()
    change(net)
    assert deps.still_bound() == memory_caches.still_bound(tuple(deps))
    np.testing.assert_allclose(g(X), numeric_grad(net, (X,), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g(X), numeric_grad(net, (X,), 0), rtol=1e-6, atol=1e-9)


def test_a_plan_made_after_a_change_still_sees_it():
    net = Net()
    g = sourcegrad.grad(net)
    g(X)
    records = tuple(g._last.dependencies)
    net.layers[1].W = np.eye(3) * 3.0  # (before the plan is made from the objects)
    assert not memory_caches.prepared(records).still_bound()
    assert not memory_caches.still_bound(records)


def test_an_unread_attribute_changed_each_call_is_checked_without_a_trace():
    net = Net()
    g = sourcegrad.grad(net)
    g(X)
    before = memory_caches.compile_count()
    for epoch in range(4):
        net.epoch = epoch
        np.testing.assert_allclose(g(X), numeric_grad(net, (X,), 0), rtol=1e-6, atol=1e-9)
    assert memory_caches.compile_count() == before + 1  # (`epoch` a new name: once)
