"""`set_default_dtype`, `set_default_device` and `torch.cross` against torch: what the default
dtype changes (factories, literals, complex literals, layers' parameters, promotion), the
errors, and cross's values and gradients. Skips without torch."""

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")


def _default_dtype_effects(T):
    before = T.get_default_dtype()
    T.set_default_dtype(T.float64)
    try:
        seen = [
            str(T.get_default_dtype()),
            repr(T.tensor([1.5, 2.0])),
            str(T.zeros(2).dtype),
            str(T.arange(3.0).dtype),
            str(T.tensor([1 + 2j]).dtype),
            str(T.nn.Linear(2, 2).weight.dtype),
            str(T.rand(2).dtype),
            str((T.ones(2, dtype=T.float32) * 2.5).dtype),
            str((T.ones(2, dtype=T.int64) * 2.5).dtype),
        ]
        try:
            T.set_default_dtype(T.int64)
        except TypeError as e:
            seen.append(str(e))
    finally:
        T.set_default_dtype(before)
    seen.append(str(T.get_default_dtype()))
    return seen


def test_set_default_dtype_matches_torch():
    assert _default_dtype_effects(sg) == _default_dtype_effects(torch)


def _default_device(T):
    seen = [str(T.get_default_device())]
    T.set_default_device("cpu")
    try:
        seen += [str(T.get_default_device()), str(T.zeros(2).device)]
    finally:
        T.set_default_device(None)
    return seen + [str(T.get_default_device())]


def test_set_default_device_matches_torch():
    assert _default_device(sg) == _default_device(torch)


def _cross(T):
    a = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=T.float64, requires_grad=True)
    b = T.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 2.0]], dtype=T.float64, requires_grad=True)
    out = [
        T.cross(a, b, dim=1),
        T.linalg.cross(a, b),
        a.cross(b, dim=-1),
        T.linalg.cross(T.ones(1, 3, dtype=T.float64), b),
    ]
    sum(o.pow(2).sum() for o in out).backward()
    values = [o.detach().numpy() for o in out] + [a.grad.numpy(), b.grad.numpy()]
    for bad in (lambda: T.cross(a, b, dim=0), lambda: T.linalg.cross(T.ones(3), b)):
        try:
            bad()
        except RuntimeError as e:
            values.append(str(e))
    return values, [o.grad_fn.name() for o in out]


def test_cross_matches_torch():
    (ours, our_nodes), (theirs, their_nodes) = _cross(sg), _cross(torch)
    assert our_nodes == their_nodes
    for a, b in zip(ours, theirs):
        if isinstance(a, str):
            assert a == b
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12)
