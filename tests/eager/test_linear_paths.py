"""F.linear records the nodes torch's at::linear records for each input layout (addmm on the
rows of a contiguous 3-d input with a bias, a product and an add otherwise), with torch's
values and gradients, first and second order."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad  # noqa: E402


def _graph(fn):
    """Node names breadth first, two levels deep."""
    names = [fn.name()]
    for child, _ in fn.next_functions:
        if child is not None:
            names.append(child.name())
            names.extend(c.name() for c, _ in child.next_functions if c is not None)
    return names


CASES = {
    "3-d contiguous": ((2, 3, 4), None, True),
    "3-d transposed": ((3, 2, 4), (1, 0, 2), True),
    "3-d no bias": ((2, 3, 4), None, False),
    "4-d": ((2, 2, 3, 4), None, True),
    "2-d": ((6, 4), None, True),
}


def _run(lib, shape, perm, bias, create_graph=False):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.normal(size=shape), requires_grad=True)
    w = lib.tensor(rng.normal(size=(5, 4)), requires_grad=True)
    b = lib.tensor(rng.normal(size=5), requires_grad=True) if bias else None
    inp = x.permute(*perm) if perm else x
    y = lib.nn.functional.linear(inp, w, b)
    graph = _graph(y.grad_fn)
    loss = (y * y).sum()
    leaves = [x, w] + ([b] if bias else [])
    grads = lib.autograd.grad(loss, leaves, create_graph=create_graph)
    out = [y.detach().numpy()] + [g.detach().numpy() for g in grads]
    if create_graph:
        second = lib.autograd.grad(sum((g * g).sum() for g in grads), leaves)
        out += [g.numpy() for g in second]
    return graph, out


@pytest.mark.parametrize("case", list(CASES))
def test_linear_matches_torch(case):
    shape, perm, bias = CASES[case]
    (g_t, theirs), (g_o, ours) = _run(torch, shape, perm, bias), _run(sourcegrad, shape, perm, bias)
    assert g_o == g_t
    for t, o in zip(theirs, ours):
        np.testing.assert_allclose(o, t, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", ["3-d contiguous", "3-d transposed"])
def test_linear_second_order_matches_torch(case):
    shape, perm, bias = CASES[case]
    theirs = _run(torch, shape, perm, bias, create_graph=True)[1]
    ours = _run(sourcegrad, shape, perm, bias, create_graph=True)[1]
    for t, o in zip(theirs, ours):
        np.testing.assert_allclose(o, t, rtol=1e-10, atol=1e-12)
