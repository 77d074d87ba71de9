"""scatter_reduce(reduce="prod") with requires_grad (issue 38): torch 2.13's gradients, first
and second order, zeros in input and src included, and central finite differences in float64
where the product is smooth."""

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

# targets: 0 gets one zero from src, 1 nothing (input's own 0), 2 a plain product, 3 two zeros
X = np.array([1.5, 0.0, 3.0, 2.0, -0.5])
SRC = np.array([2.0, 0.0, 4.0, 0.0, 0.0, -1.5, 0.7])
INDEX = np.array([0, 0, 2, 3, 3, 2, 4])


def _grads(m, x, src, index, include_self, dim=0, second=True):
    a = m.tensor(x, requires_grad=True)
    s = m.tensor(src, requires_grad=True)
    out = a.scatter_reduce(dim, m.tensor(index), s, "prod", include_self=include_self)
    weights = m.tensor(np.arange(1.0, out.numel() + 1).reshape(tuple(out.shape)))
    ga, gs = m.autograd.grad((out * weights).sum(), [a, s], create_graph=second)
    found = [out, ga, gs]
    if second:
        found += m.autograd.grad((ga * ga).sum() + (gs * 0.5).sum(), [a, s], allow_unused=True)
    return found, out.grad_fn.name()


def _close(ours, theirs):
    for a, b in zip(ours, theirs):
        if b is None:
            assert a is None or not np.asarray(a.detach()).any()
            continue
        np.testing.assert_allclose(
            np.asarray(a.detach()), b.detach().numpy(), rtol=1e-12, atol=1e-12
        )


@pytest.mark.parametrize("include_self", [True, False])
def test_gradients_with_zeros_match_torch(include_self):
    # (two zeros at one target: torch refuses the second derivative, so first order only)
    ours, name = _grads(sg, X, SRC, INDEX, include_self, second=False)
    theirs, their_name = _grads(torch, X, SRC, INDEX, include_self, second=False)
    _close(ours, theirs)
    assert name == their_name == "ScatterReduceBackward0"


@pytest.mark.parametrize("include_self", [True, False])
def test_second_order_matches_torch(include_self):
    x = np.array([[1.5, 0.0, 3.0], [2.0, -0.5, 1.0]])
    src = np.array([[2.0, 0.0, 4.0, 0.3], [0.0, 5.0, -1.5, 2.0]])
    index = np.array([[0, 0, 2, 1], [1, 2, 2, 0]])
    ours, _ = _grads(sg, x, src, index, include_self, dim=1)
    theirs, _ = _grads(torch, x, src, index, include_self, dim=1)
    _close(ours, theirs)


def test_finite_differences_where_the_product_is_smooth():
    rng = np.random.default_rng(3)
    x, src = rng.uniform(0.5, 2.0, 4), rng.uniform(-2.0, 2.0, 6)
    index = np.array([0, 0, 1, 3, 3, 3])
    weights = rng.normal(size=4)

    def loss(xv, sv):
        out = sg.tensor(xv).scatter_reduce(0, sg.tensor(index), sg.tensor(sv), "prod")
        return float((out * sg.tensor(weights)).sum())

    a, s = sg.tensor(x, requires_grad=True), sg.tensor(src, requires_grad=True)
    (a.scatter_reduce(0, sg.tensor(index), s, "prod") * sg.tensor(weights)).sum().backward()
    eps = 1e-6
    for value, grad, which in ((x, a.grad, 0), (src, s.grad, 1)):
        for i in range(value.size):
            up, down = value.copy(), value.copy()
            up[i] += eps
            down[i] -= eps
            args_up = (up, src) if which == 0 else (x, up)
            args_down = (down, src) if which == 0 else (x, down)
            numeric = (loss(*args_up) - loss(*args_down)) / (2 * eps)
            assert abs(numeric - float(grad[i])) < 1e-7


def test_in_place_prod_differentiates_as_torch():
    x, src, index = np.array([1.5, 0.0, 3.0, 2.0]), np.array([2.0, 4.0, -1.0]), np.array([0, 1, 1])
    found = []
    for m in (sg, torch):
        a, s = m.tensor(x, requires_grad=True), m.tensor(src, requires_grad=True)
        out = (a * 1).scatter_reduce_(0, m.tensor(index), s, "prod")
        found.append([out] + list(m.autograd.grad((out * m.tensor([1.0, 2, 3, 4])).sum(), [a, s])))
    _close(*found)
