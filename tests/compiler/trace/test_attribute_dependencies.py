"""A traced gradient depends on the attributes its code reads, not on every attribute.

Every attribute of every object a trace reached was a dependency: `model.epoch = i` in a
training loop, never read by the loss, traced the gradient again on each call. Now an
attribute no code the trace ran names is left out, and one it reads in any way -- directly,
through a property, through `getattr` with a string, by iterating `__dict__`, through a
method -- still makes a changed value trace again (each checked against central
differences after the change).
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import memory_caches, numeric_grad

X = np.array([0.4, -0.7, 1.1])


def _check(g, f):
    np.testing.assert_allclose(g(X), numeric_grad(f, (X,), 0), rtol=1e-6, atol=1e-9)


class Direct:
    def __init__(self):
        self.scale = 2.0
        self.epoch = 0
        self.w = np.array([1.0, 2.0, 3.0])

    def __call__(self, x):
        return np.sum(self.w * np.sin(x) ** 2) * self.scale


def test_an_attribute_the_code_never_reads_does_not_trace_again():
    model = Direct()
    g = sourcegrad.grad(model)
    _check(g, model)
    assert g.traced
    before = memory_caches.compile_count()
    for epoch in range(1, 6):
        model.epoch = epoch  # (set per step by a training loop: the loss never reads it)
        _check(g, model)
    assert memory_caches.compile_count() == before


def test_an_attribute_read_directly_traces_again():
    model = Direct()
    g = sourcegrad.grad(model)
    _check(g, model)
    model.scale = -0.5
    _check(g, model)
    model.w = np.array([3.0, -1.0, 0.5])
    _check(g, model)


class ByProperty:
    def __init__(self):
        self._scale = 2.0

    @property
    def scale(self):
        return self._scale * 1.5

    def __call__(self, x):
        return np.sum(np.cos(x) ** 2) * self.scale


class ByGetattr:
    def __init__(self):
        self.scale = 2.0

    def __call__(self, x):
        return np.sum(np.cos(x) ** 2) * getattr(self, "scale")  # noqa: B009 (the form tested)


class ByDict:
    def __init__(self):
        self.w_a = 1.0
        self.w_b = 2.0

    def __call__(self, x):
        total = 0.0
        for name, value in self.__dict__.items():
            if name.startswith("w_"):
                total = total + value * np.sum(x**2)
        return total


class ByComputedName:
    def __init__(self):
        self.power_2 = 2.0

    def __call__(self, x):
        return np.sum(np.abs(x) ** getattr(self, "power_" + str(2)))


class ByMethod:
    def __init__(self):
        self._factor = 2.0

    def factor(self):
        return self._factor + 1.0

    def __call__(self, x):
        return np.sum(np.exp(x)) * self.factor()


@pytest.mark.parametrize(
    "make, attribute, value",
    [
        (ByProperty, "_scale", -3.0),
        (ByGetattr, "scale", -3.0),
        (ByDict, "w_b", 5.0),
        (ByComputedName, "power_2", 3.0),
        (ByMethod, "_factor", -0.25),
    ],
    ids=["property", "getattr", "__dict__", "computed-name", "method"],
)
def test_an_attribute_read_indirectly_traces_again(make, attribute, value):
    model = make()
    g = sourcegrad.grad(model)
    _check(g, model)
    assert g.traced
    setattr(model, attribute, value)
    _check(g, model)
