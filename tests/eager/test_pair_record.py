"""`spec.record_pair`, the binary operators' node recorder, makes the node `spec.record` makes,
and its fallbacks (views, complex values, forward AD, anomaly mode, saved values) agree with
torch.

Each case builds the same op twice, once through each recorder, and compares the nodes field
by field; the torch cases run the operators end to end through the fast path and the
fallbacks.
"""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad  # noqa: E402
from sourcegrad.eager import arithmetic, spec  # noqa: E402
from sourcegrad.eager.node import NONE_EDGE  # noqa: E402

PAIR_SPECS = [s for s in spec.ALL_SPECS if s._pair is not None]


def _operands(kind):
    """(a, b) for one case of which operands require grad and what they are."""
    x = sourcegrad.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
    y = sourcegrad.tensor(np.full((2, 3), 0.5), requires_grad=True)
    if kind == "both leaves":
        return x, y
    if kind == "non-leaf and leaf":
        return x * 2, y
    if kind == "first only":
        return x, y.detach()
    if kind == "second only":
        return x.detach(), y
    if kind == "number":
        return x, 3.0
    if kind == "number first":
        return 3.0, x
    if kind == "array":
        return x, np.full((2, 3), 2.0)
    if kind == "broadcast":
        return x, sourcegrad.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    if kind == "float32 and float64":
        return x.float(), y
    if kind == "view":
        return x[0], y[1]
    raise AssertionError(kind)


KINDS = [
    "both leaves",
    "non-leaf and leaf",
    "first only",
    "second only",
    "number",
    "number first",
    "array",
    "broadcast",
    "float32 and float64",
    "view",
]


def _node_fields(node):
    return (
        type(node),
        [(type(fn), nr) if fn is not None else NONE_EDGE for fn, nr in node.next_functions],
        node._spec,
        node._args,
        node._versions,
        node._static,
        node._metas,
        type(node._ans),
        node._state,
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("op", PAIR_SPECS, ids=lambda s: f"{s.node_cls.__name__}-{s.rule.name}")
def test_pair_node_equals_general_node(op, kind):
    a, b = _operands(kind)
    ad, bd, rd, ra, rb = arithmetic._promote(a, b)
    out1 = sourcegrad.Tensor._make(np.zeros(np.broadcast_shapes(np.shape(ad), np.shape(bd)), rd))
    out2 = sourcegrad.Tensor._make(np.zeros_like(out1._data))
    n1 = spec.record(op, out1, (ra, rb))
    n2 = spec.record_pair(op, out2, ra, rb)
    assert _node_fields(n1) == _node_fields(n2)
    assert [fn for fn, _ in n1.next_functions] == [fn for fn, _ in n2.next_functions]
    assert out2.grad_fn is n2 and out2.requires_grad


OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
    "radd": lambda a, b: 2.5 + a * b,
}


def _run(lib, op, shapes, dtypes, grads):
    rng = np.random.default_rng(0)
    a = lib.tensor(rng.uniform(0.5, 2.0, shapes[0]), dtype=getattr(lib, dtypes[0]))
    b = lib.tensor(rng.uniform(0.5, 2.0, shapes[1]), dtype=getattr(lib, dtypes[1]))
    a.requires_grad_(grads[0])
    b.requires_grad_(grads[1])
    out = OPS[op](a, b)
    out = OPS[op](out, b) if grads[1] else OPS[op](out, a)
    out.sum().backward()
    return [out.detach().numpy()] + [t.grad.numpy() for t in (a, b) if t.grad is not None]


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize(
    "shapes,dtypes,grads",
    [
        (((3, 4), (3, 4)), ("float32", "float32"), (True, True)),
        (((3, 4), (4,)), ("float32", "float32"), (True, True)),
        (((1, 4), (3, 1)), ("float64", "float32"), (True, False)),
        (((3, 4), (3, 4)), ("float32", "float64"), (False, True)),
        (((), (3,)), ("float64", "float64"), (True, True)),
    ],
)
def test_operators_match_torch(op, shapes, dtypes, grads):
    theirs = _run(torch, op, shapes, dtypes, grads)
    ours = _run(sourcegrad, op, shapes, dtypes, grads)
    assert len(theirs) == len(ours)
    for t, o in zip(theirs, ours):
        assert t.dtype == o.dtype and t.shape == o.shape
        np.testing.assert_allclose(o, t, rtol=1e-5)


def _stale_view(lib):
    """A view of a tensor that came to require grad after the view was taken (the general
    path's AsStridedBackward0)."""
    base = lib.zeros(2, 3)
    view = base[0]
    w = lib.ones(2, 3, requires_grad=True)
    base.mul_(w)
    y = lib.ones(3, requires_grad=True)
    out = view + y
    out.sum().backward()
    return type(out.grad_fn).__name__, w.grad.numpy(), y.grad.numpy()


def test_stale_view_falls_back_as_torch():
    theirs, ours = _stale_view(torch), _stale_view(sourcegrad)
    assert theirs[0] == ours[0] == "AddBackward0"
    for t, o in zip(theirs[1:], ours[1:]):
        np.testing.assert_allclose(o, t)


def _complex(lib):
    a = lib.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    b = lib.tensor([0.5 - 1j, 2 + 0j], requires_grad=True)
    (a * b + a).abs().sum().backward()
    return a.grad.numpy(), b.grad.numpy()


def test_complex_values_fall_back_as_torch():
    for t, o in zip(_complex(torch), _complex(sourcegrad)):
        np.testing.assert_allclose(o, t, rtol=1e-6)


def _forward_ad(lib):
    fwAD = lib.autograd.forward_ad
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(lib.tensor([3.0, 4.0]), lib.tensor([1.0, 0.5]))
        out = x * d + d
        tangent = fwAD.unpack_dual(out).tangent.detach().numpy()
        out.sum().backward()
    return tangent, x.grad.numpy()


def test_forward_ad_falls_back_as_torch():
    for t, o in zip(_forward_ad(torch), _forward_ad(sourcegrad)):
        np.testing.assert_allclose(o, t)


def _anomaly(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly():
            out = x + x
            (out * lib.tensor([1.0, 2.0])).sum().backward()
    return x.grad.numpy()


def test_anomaly_mode_falls_back_as_torch():
    np.testing.assert_allclose(_anomaly(sourcegrad), _anomaly(torch))


def test_saved_value_modified_in_place_still_raises():
    """mul saves its operands' values: the general path, with its version checks."""
    for lib in (torch, sourcegrad):
        x = lib.ones(3, requires_grad=True)
        y = lib.ones(3) * 2
        out = x * y
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


def test_hooks_on_operands_run_as_torch():
    def grads(lib):
        seen = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
        (y + x).sum().backward()
        return seen[0], x.grad.numpy()

    for t, o in zip(grads(torch), grads(sourcegrad)):
        np.testing.assert_allclose(o, t)


@pytest.mark.parametrize("kind", ["both leaves", "non-leaf and leaf", "first only", "broadcast"])
@pytest.mark.parametrize("op", ["add", "mul", "div"])
def test_fast_path_is_taken(kind, op, monkeypatch):
    """The cases above that record_pair handles itself do not reach the general record."""
    a, b = _operands(kind)
    calls = []
    general = spec.record
    monkeypatch.setattr(spec, "record", lambda *a, **k: calls.append(a) or general(*a, **k))
    out = OPS[op](a, b)
    assert out.grad_fn.name() == f"{op.capitalize()}Backward0" and not calls


def test_parameters_take_the_fast_path_as_torch():
    """nn.Parameter (a Tensor subclass) operands: `x + bias` of a 3-d linear."""

    def run(lib):
        lib.manual_seed(0)
        bias = lib.nn.Parameter(lib.tensor([0.5, -1.0, 2.0]))
        x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        out = x * 2 + bias
        (out * out).sum().backward()
        return type(out.grad_fn).__name__, bias.grad.numpy(), x.grad.numpy()

    theirs, ours = run(torch), run(sourcegrad)
    assert theirs[0] == ours[0]
    for t, o in zip(theirs[1:], ours[1:]):
        np.testing.assert_allclose(o, t)
    bias = sourcegrad.nn.Parameter(sourcegrad.ones(3))
    x = sourcegrad.ones(2, 3, requires_grad=True) * 2
    calls = []
    general = spec.record
    spec.record = lambda *a, **k: calls.append(a) or general(*a, **k)
    try:
        out = x + bias
    finally:
        spec.record = general
    assert type(out.grad_fn).__name__ == "AddBackward0" and not calls
