"""`spec.record_one`, the views' node recorder, makes the node `spec.record` makes (field by
field, for every one-edge spec and operands that are leaves, non-leaves, views, float32
and float64 and saved by value or by Meta), and its fallbacks (grad mode off, anomaly
mode, forward AD, a view whose base came to require grad, complex values) give torch's
gradients end to end.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad  # noqa: E402
from sourcegrad.eager import spec  # noqa: E402

ONE_SPECS = [s for s in spec.ALL_SPECS if s.edges == (0,) and not s.varargs and len(s.names) == 1]


def _operand(kind):
    x = sourcegrad.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    if kind == "leaf":
        return x
    if kind == "non-leaf":
        return x * 2
    if kind == "view":
        return x.t()
    if kind == "float32":
        return x.float() * 2
    raise AssertionError(kind)


def _node_fields(node):
    return (
        type(node),
        [(type(fn), nr) for fn, nr in node.next_functions],
        node._spec,
        node._args,
        node._versions,
        node._static,
        node._metas,
        node._ans if node._ans is None else type(node._ans),
        node._state,
    )


@pytest.mark.parametrize("kind", ["leaf", "non-leaf", "view", "float32"])
@pytest.mark.parametrize("op", ONE_SPECS, ids=lambda s: f"{s.node_cls.__name__}-{s.rule.name}")
def test_one_node_equals_general_node(op, kind):
    x = _operand(kind)
    out1 = sourcegrad.Tensor._make(np.zeros_like(x._data))
    out2 = sourcegrad.Tensor._make(np.zeros_like(x._data))
    static = {"shape": x._data.shape}
    n1 = spec.record(op, out1, (x,), static)
    n2 = spec.record_one(op, out2, x, static)
    assert _node_fields(n1) == _node_fields(n2)
    assert [fn for fn, _ in n1.next_functions] == [fn for fn, _ in n2.next_functions]
    assert out2.grad_fn is n2 and out2.requires_grad


def _views(lib, x):
    y = x.view(3, 2).transpose(0, 1).reshape(-1).unsqueeze(0).expand(2, 6)
    return (y[1, 2:] * 3).sum() + y.t()[0].sum()


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_views_backward_is_torchs(dtype):
    data = np.arange(1.0, 7.0).reshape(2, 3).astype(dtype)
    if dtype == "complex128":
        data = data + 1j * data[::-1]
    grads = []
    for lib in (sourcegrad, torch):
        x = lib.tensor(data, requires_grad=True)
        out = _views(lib, x)
        (out.real if dtype == "complex128" else out).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1])


def test_views_in_anomaly_mode_and_no_grad_are_torchs():
    data = np.arange(6.0).reshape(2, 3)
    seen = []
    for lib in (sourcegrad, torch):
        x = lib.tensor(data, requires_grad=True)
        with lib.autograd.detect_anomaly():
            _views(lib, x).backward()
        with lib.no_grad():
            y = x.view(3, 2)
        seen.append((y.grad_fn is None, y.requires_grad, x.grad.numpy()))
    assert seen[0][:2] == seen[1][:2]
    np.testing.assert_allclose(seen[0][2], seen[1][2])


def test_a_view_of_a_base_that_came_to_require_grad_is_torchs():
    grads = []
    for lib in (sourcegrad, torch):
        base = lib.zeros(2, 3)
        view = base[0]
        w = lib.ones(2, 3, requires_grad=True)
        base.mul_(w)
        (view.view(3, 1) * 2).sum().backward()
        grads.append(w.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1])


def test_views_under_forward_ad_are_torchs():
    data = np.arange(6.0).reshape(2, 3)
    tangent = np.ones((2, 3))
    outs = []
    for lib in (sourcegrad, torch):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            x = fwAD.make_dual(lib.tensor(data, requires_grad=True), lib.tensor(tangent))
            y = x.t().reshape(-1) * lib.arange(6.0)
            outs.append(fwAD.unpack_dual(y).tangent.detach().numpy())
    np.testing.assert_allclose(outs[0], outs[1])
