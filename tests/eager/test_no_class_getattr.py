"""No class `__getattr__` on Tensor or on the nodes: CPython specialises no attribute read of
a class that has one. Tensor's scipy.special methods (`x.lgamma()`) are placeholders until
first use (`special.SCIPY_METHODS`); a node's saved values (`grad_fn._saved_self`) are
properties (`node.expose_saved`).

Checks the list against what `special.load` makes, that a placeholder's first read gives the
method, the AttributeError without scipy, and the saved values against torch's.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("scipy.special")

import sourcegrad  # noqa: E402
from sourcegrad.eager import special  # noqa: E402
from sourcegrad.eager.tensor import Tensor  # noqa: E402


def test_no_class_getattr():
    assert not hasattr(Tensor, "__getattr__")
    assert Tensor.__getattribute__ is object.__getattribute__
    assert not hasattr(sourcegrad.nn.Parameter, "__getattr__")


def test_the_list_is_what_load_makes():
    special.load()
    assert set(special.SCIPY_METHODS) == set(special.METHODS)
    placeholders = [n for n, v in vars(Tensor).items() if isinstance(v, special._OnFirstUse)]
    assert placeholders == []


def test_first_use_gives_the_method_as_torch():
    values = np.array([0.5, 2.0, 3.5])

    def run(lib):
        x = lib.tensor(values, requires_grad=True)
        y = x.lgamma() + x.digamma()
        y.sum().backward()
        return y.detach().numpy(), x.grad.numpy()

    for ours, theirs in zip(run(sourcegrad), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_without_scipy_a_placeholder_is_a_missing_attribute(monkeypatch):
    monkeypatch.setitem(special._STATE, "scipy", False)
    placeholder = special._OnFirstUse("lgamma")
    with pytest.raises(AttributeError, match="has no attribute 'lgamma'.*scipy"):
        placeholder.__get__(sourcegrad.ones(2), Tensor)
    assert not hasattr(sourcegrad.ones(2), "no_such_method")


def test_nodes_have_no_class_getattr_and_keep_saved_values_as_torch():
    """A node's `_saved_<name>` are properties (node.expose_saved), not a `__getattr__`."""
    from sourcegrad.eager.node import RuleNode

    assert not hasattr(RuleNode, "__getattr__")

    def saved(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        e, p, m = x.exp(), x.pow(3), x * lib.tensor([4.0, 5.0])
        return (
            e.grad_fn._saved_result.detach().numpy(),
            p.grad_fn._saved_exponent,
            m.grad_fn._saved_self is None,
            m.grad_fn._saved_other.numpy(),
        )

    ours, theirs = saved(sourcegrad), saved(torch)
    np.testing.assert_allclose(ours[0], theirs[0])
    assert ours[1:3] == theirs[1:3]
    np.testing.assert_allclose(ours[3], theirs[3])
    node = sourcegrad.ones(2, requires_grad=True).exp().grad_fn
    with pytest.raises(AttributeError, match="has no attribute '_saved_no_such_value'"):
        node._saved_no_such_value
