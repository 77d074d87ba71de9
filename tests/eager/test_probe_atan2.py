"""atan2's gradient at the origin against torch: torch gives 0 there (its 1 / (x² + y²) is
taken as 0 where the sum is 0), where the plain formula gives 0 / 0 = NaN."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402

# the origin, both underflowing in x² + y², one of them zero, and ordinary points
_Y = np.array([0.0, 1e-200, 0.0, 1e-200, 1.0, -3.0, 0.5])
_X = np.array([0.0, 1e-200, 1e-200, 0.0, 2.0, 0.0, -0.25])


def _grads(lib, y, x):
    ty = lib.tensor(y, requires_grad=True)
    tx = lib.tensor(x, requires_grad=True)
    out = lib.atan2(ty, tx)
    (out * lib.arange(1.0, len(y) + 1, dtype=lib.float64)).sum().backward()
    return out.detach().numpy(), ty.grad.numpy(), tx.grad.numpy()


def test_atan2_gradient_at_the_origin_matches_torch():
    want = _grads(torch, _Y, _X)
    got = _grads(sg, _Y, _X)
    for a, b in zip(got, want):
        assert np.all(np.isfinite(a))
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-150)


def test_atan2_gradient_with_a_row_of_zeros_matches_torch():
    y = np.array([[0.0, 1.0, -2.0], [0.0, 0.0, 0.0]])
    x = np.array([0.0, 0.5, 0.0])
    want = _grads(torch, y.ravel(), np.tile(x, 2))
    got = _grads(sg, y.ravel(), np.tile(x, 2))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)
