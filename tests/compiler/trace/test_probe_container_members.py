"""A traced function reading a list or dict of arrays that is changed in place between calls.

A callable object (`grad(model)`) or a function the source front end stops at is traced:
its loop over `self.layers` and its `params["w"]` are unrolled into the code with those
arrays. The code depended on the container by identity only, so `model.layers.append(W)` or
`params["w"] = W2` kept the old layers' gradient. Each call's gradient is checked here
against central differences after such a change.
"""

import numpy as np

import sourcegrad
from sourcegrad.api import numeric_grad

RNG = np.random.default_rng(6)
X = RNG.normal(size=3)


class Stack:
    def __init__(self):
        self.layers = [np.eye(3)]
        self.params = {"w": np.ones(3)}

    def __call__(self, x):
        for weight in self.layers:
            x = np.sin(weight @ x)
        return np.sum(self.params["w"] * x**2)


def _check(g, f):
    np.testing.assert_allclose(g(X), numeric_grad(f, (X,), 0), rtol=1e-6, atol=1e-9)


def test_object_list_append_setitem_and_dict_setitem():
    model = Stack()
    g = sourcegrad.grad(model)
    _check(g, model)
    _check(g, model)  # (the fast entry)
    assert g.traced
    model.layers.append(RNG.normal(size=(3, 3)))
    _check(g, model)
    model.layers[0] = RNG.normal(size=(3, 3))
    _check(g, model)
    model.params["w"] = np.arange(3.0)
    _check(g, model)
    model.layers[1] *= 2.0  # (in place: the array's values are read at each call)
    _check(g, model)


LAYERS = [np.eye(3)]


def _looped(x):
    try:  # (`try` is traced)
        for weight in LAYERS:
            x = np.tanh(weight @ x)
    except ValueError:
        pass
    return np.sum(x)


def test_global_list_changed_in_place_under_a_trace():
    g = sourcegrad.grad(_looped)
    _check(g, _looped)
    _check(g, _looped)
    assert g.traced
    LAYERS.append(np.eye(3) * 2.0)
    _check(g, _looped)
    LAYERS[0] = RNG.normal(size=(3, 3))
    _check(g, _looped)
    del LAYERS[1:]
    _check(g, _looped)


class Dense:
    def __init__(self, weight):
        self.weight = weight
        self.power = 2.0


class Blocks:
    shared = [np.eye(3)]

    def __init__(self):
        self.inner = Stack()
        self.blocks = [Dense(np.eye(3)), Dense(np.eye(3) * 0.5)]

    def __call__(self, x):
        for block in self.blocks:
            x = np.sin(block.weight @ x) ** block.power
        for weight in Blocks.shared:
            x = np.cos(weight @ x)
        return self.inner(x)


def test_objects_held_by_objects_and_class_attributes():
    model = Blocks()
    g = sourcegrad.grad(model)
    _check(g, model)
    _check(g, model)
    assert g.traced
    model.inner.layers.append(RNG.normal(size=(3, 3)))  # (an object's object's list)
    _check(g, model)
    model.blocks[1].weight = RNG.normal(size=(3, 3))  # (an object in a list)
    _check(g, model)
    model.blocks[0].power = 3.0
    _check(g, model)
    Blocks.shared.append(np.eye(3) * 2.0)  # (a class attribute)
    _check(g, model)
    Blocks.shared.pop()


class Slotted:
    __slots__ = ("weight", "power")

    def __init__(self):
        self.weight = np.eye(3)
        self.power = 2.0

    def __call__(self, x):
        return np.sum(np.sin(self.weight @ x) ** self.power)


def test_object_with_slots():
    model = Slotted()  # (no __dict__: its attributes are its slots)
    g = sourcegrad.grad(model)
    _check(g, model)
    _check(g, model)
    assert g.traced
    model.weight = RNG.normal(size=(3, 3))
    _check(g, model)
    model.power = 3.0
    _check(g, model)


class CallableDense(Dense):
    def __call__(self, x):
        return np.sin(self.weight @ x) ** self.power


LAYER = CallableDense(np.eye(3))  # (callable: it was taken for a function, not walked)


def _calls_a_global_layer(x):
    try:  # (`try` is traced)
        return np.sum(LAYER(x))
    except KeyError:
        return 0.0


def test_global_user_object_read_by_a_trace():
    g = sourcegrad.grad(_calls_a_global_layer)
    _check(g, _calls_a_global_layer)
    _check(g, _calls_a_global_layer)
    assert g.traced
    LAYER.weight = RNG.normal(size=(3, 3))
    _check(g, _calls_a_global_layer)
    LAYER.power = 3.0
    _check(g, _calls_a_global_layer)


class Activated:
    def act(self, x):
        return np.sin(x)

    def __call__(self, x):
        try:  # (`try` is traced)
            return np.sum(self.act(x))
        except KeyError:
            return 0.0


def test_method_replaced_on_the_class_or_shadowed_on_the_object():
    model = Activated()
    g = sourcegrad.grad(model)
    _check(g, model)
    _check(g, model)
    assert g.traced
    model.act = lambda x: x**3  # (a new attribute of the object, shadowing the method)
    _check(g, model)
    other = Activated()
    g = sourcegrad.grad(other)
    _check(g, other)
    Activated.act = lambda self, x: np.cos(x) * x  # (the class's method replaced)
    _check(g, other)


def _helper(x):
    return np.sin(x)


def _calls_a_helper(x):
    try:  # (`try` is traced)
        return np.sum(_helper(x))
    except KeyError:
        return 0.0


def test_helper_whose_code_is_replaced_in_place():
    g = sourcegrad.grad(_calls_a_helper)
    _check(g, _calls_a_helper)
    _check(g, _calls_a_helper)
    assert g.traced
    old = _helper.__code__
    _helper.__code__ = (lambda x: np.cos(x) * x).__code__  # (as autoreload replaces it)
    try:
        _check(g, _calls_a_helper)
    finally:
        _helper.__code__ = old
