"""retain_grad on a tensor changed in place afterwards retains the gradient of its new
version, as torch's (the retains_grad hook moves to the new grad_fn): it stayed on the old
node, so `y.retain_grad(); y.mul_(3)` gave y.grad three times torch's, silently."""

import numpy as np
import pytest

import sourcegrad


def _run(lib, case):
    x = lib.tensor([1.0, 2.0, -1.5], dtype=lib.float64, requires_grad=True)
    y = x * 2
    retained = y
    if case == "view retains":
        retained = y[1:]
        retained.retain_grad()
        retained.mul_(3)
    else:
        y.retain_grad()
    if case == "mul_":
        y.mul_(3)
    elif case == "two writes":
        y.mul_(3)
        y.add_(1.0)
    elif case == "through a view":
        y[1:].mul_(3)
    elif case == "copy_":
        y.copy_(x * 5)
    z = y * 1 if case == "read before" else 0.0
    if case == "read before":
        y.mul_(3)
    loss = (y**2 + z).sum()
    if case == "view retains":
        loss = loss + (retained**3).sum()
    loss.backward()
    return retained.grad.detach().numpy(), x.grad.detach().numpy()


@pytest.mark.parametrize(
    "case", ["mul_", "two writes", "through a view", "view retains", "copy_", "read before"]
)
def test_retained_grad_follows_the_in_place_change_as_torchs(case):
    torch = pytest.importorskip("torch")
    ours = _run(sourcegrad, case)
    theirs = _run(torch, case)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_the_plain_case_without_torch():
    retained, _ = _run(sourcegrad, "mul_")
    np.testing.assert_allclose(retained, 2 * np.array([6.0, 12.0, -9.0]))  # 2 y, y = 6x
