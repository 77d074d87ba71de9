"""A compiled region's backward frees what its forward saved as it goes, as torch's does.

Without retain_graph the node hands the residuals to the generated backward (in a list it
empties: `HandingVJP`), which deletes each array after its last use: the memory goes back
while the backward runs, not when it returns. A second backward then raises torch's error;
with retain_graph it gives the same gradients again. torch is the oracle for the numbers.
"""

import sys
import weakref

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api.gradient import VJP, HandingVJP
from sourcegrad.errors import SourcegradError

if not hasattr(sourcegrad, "tensor"):
    pytest.skip("the eager Tensor is not part of this build", allow_module_level=True)
torch_ref = pytest.importorskip("torch")


def chain(x, w):
    h1 = np.tanh(x @ w)
    h2 = np.tanh(h1 @ w)
    h3 = np.tanh(h2 @ w)
    return np.sum(h3 * h3)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(6, 5)), rng.normal(size=(5, 5)) / 2


def _residual_arrays(pullback, inputs):
    """The arrays a pullback's backward will read that its forward made (not the inputs)."""
    return [
        r
        for r in pullback.residuals
        if isinstance(r, np.ndarray) and not any(r is a for a in inputs)
    ]


def _freed_by(arrays):
    """For each array, the name of the function whose frame dropped it last (a weakref's
    callback runs in the frame that let the array go), filled in as they are freed."""
    where = []

    def note(_ref):
        where.append(sys._getframe(1).f_code.co_name)

    refs = [weakref.ref(a, note) for a in arrays]
    return where, refs


def test_the_handed_backward_frees_each_residual_while_it_runs():
    x, w = _data()
    value, pullback = HandingVJP(chain, 1)(x, w)
    saved = _residual_arrays(pullback, (x, w))
    assert len(saved) >= 3  # the tanh values, at least
    where, refs = _freed_by(saved)
    del saved
    pullback.residuals = None  # (as a compiled region's node drops it)
    grad = pullback(1.0, retain=False)
    # every residual went inside the generated backward, none when it returned
    assert len(where) == len(refs) and all(r() is None for r in refs)
    assert all(name.endswith("_backward") for name in where)
    expected = VJP(chain, 1)(x, w)[1](1.0)
    np.testing.assert_allclose(grad, expected, rtol=1e-12)
    with pytest.raises(SourcegradError, match="retain=False"):
        pullback(1.0)


def test_a_retained_pullback_keeps_its_residuals_and_gives_the_same_gradient():
    x, w = _data(1)
    value, pullback = HandingVJP(chain, 1)(x, w)
    saved = _residual_arrays(pullback, (x, w))
    _, refs = _freed_by(saved)
    del saved
    pullback.residuals = None
    first = pullback(1.0)
    second = pullback(1.0, retain=False)
    np.testing.assert_array_equal(first, second)
    assert all(r() is None for r in refs)  # (handed over by the last call)


class Net(sourcegrad.nn.Module):
    def __init__(self, nn):
        super().__init__()
        self.fc1 = nn.Linear(5, 7)
        self.fc2 = nn.Linear(7, 3)

    def forward(self, x):
        return self.fc2(sourcegrad.tanh(self.fc1(x)))


class TorchNet(torch_ref.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch_ref.nn.Linear(5, 7)
        self.fc2 = torch_ref.nn.Linear(7, 3)

    def forward(self, x):
        return self.fc2(torch_ref.tanh(self.fc1(x)))


def _pair():
    torch_ref.manual_seed(0)
    ref = TorchNet().double()
    ours = Net(sourcegrad.nn).double()
    ours.load_state_dict(
        {k: sourcegrad.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()}
    )
    x = np.random.default_rng(2).normal(size=(4, 5))
    return ref, ours, sourcegrad.compile(ours), x


def _node(out):
    node = out.grad_fn
    while not type(node).__name__.startswith("Compiled"):
        node = node.next_functions[0][0]
    return node


def test_a_second_backward_without_retain_graph_raises_torchs_error():
    ref, ours, compiled, x = _pair()
    loss = (compiled(sourcegrad.tensor(x)) ** 2).sum()
    loss.backward()
    with pytest.raises(RuntimeError) as ours_error:
        loss.backward()
    torch_loss = (ref(torch_ref.tensor(x)) ** 2).sum()
    torch_loss.backward()
    with pytest.raises(RuntimeError) as torch_error:
        torch_loss.backward()
    assert str(ours_error.value) == str(torch_error.value)


def test_with_retain_graph_two_backwards_give_torchs_gradients_twice():
    ref, ours, compiled, x = _pair()
    out = compiled(sourcegrad.tensor(x))
    node = _node(out)
    loss = (out**2).sum()
    torch_loss = (ref(torch_ref.tensor(x)) ** 2).sum()
    for calls in (1, 2):
        loss.backward(retain_graph=True)
        torch_loss.backward(retain_graph=True)
        for (name, p), q in zip(ours.named_parameters(), ref.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, err_msg=name)
        assert node.pullback is not None  # (kept for the next backward)
    loss.backward()  # the last one frees the graph
    assert node.pullback is None
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_a_module_node_keeps_no_residual_after_its_backward():
    _, _, compiled, x = _pair()
    x = sourcegrad.tensor(x)
    out = compiled(x)
    node = _node(out)
    pullback = node.pullback
    assert pullback.residuals is None  # (the node dropped the tuple: the pullback holds it)
    cell = dict(zip(pullback.__code__.co_freevars, pullback.__closure__))["residuals"]
    inputs = {id(p._data) for p in (*compiled.parameters(), x)}
    made = [
        r
        for r in cell.cell_contents
        if isinstance(r, np.ndarray) and id(r) not in inputs and r.base is None
    ]
    assert made  # the forward's own arrays (tanh's value), not only parameters
    where, refs = _freed_by(made)
    del made, cell, pullback
    out.sum().backward()
    assert all(r() is None for r in refs)
    assert all(name.endswith("_backward") for name in where)


def through_a_view(x, w):
    wt = np.swapaxes(w, 0, 1)  # (a view of w's memory, kept for the backward)
    return np.sum(np.tanh(x @ wt) @ wt.T)


def test_an_argument_read_through_a_view_is_checked_for_in_place_changes():
    x, w = _data(3)
    for change in (False, True):
        xs = sourcegrad.tensor(x, requires_grad=True)
        ws = sourcegrad.tensor(w, requires_grad=True)
        out = sourcegrad.compile(through_a_view)(xs, ws)
        xt = torch_ref.tensor(x, requires_grad=True)
        wt = torch_ref.tensor(w, requires_grad=True)
        ref = (torch_ref.tanh(xt @ wt.T) @ wt).sum()
        if change:
            with sourcegrad.no_grad(), torch_ref.no_grad():
                ws.mul_(2.0)
                wt.mul_(2.0)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                ref.backward()
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                out.backward()
            continue
        out.backward()
        ref.backward()
        np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(ws.grad.numpy(), wt.grad.numpy(), rtol=1e-10)
