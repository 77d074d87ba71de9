"""nn.utils.parametrizations.orthogonal (issue 38) and the maps it is built on,
torch.matrix_exp / linalg.matrix_exp and linalg.householder_product (orgqr), against torch
2.13 in float64: the same state_dict keys, weights and original gradients for every map
(with torch's state loaded, so the random completion of a tall base is the same), the weight
orthogonal after optimizer steps, central finite differences, and torch's errors."""

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)


def _module(lib, weight):
    module = lib.nn.Linear(weight.shape[-1], weight.shape[-2], bias=False).double()
    with lib.no_grad():
        module.weight = lib.nn.Parameter(lib.tensor(weight))
    return module


CASES = [
    ((4, 4), None, True),  # matrix_exp
    ((5, 3), None, True),  # householder, tall
    ((3, 5), None, True),  # householder, wide (transposed)
    ((4, 4), "cayley", True),
    ((3, 5), "cayley", True),
    ((5, 3), "matrix_exp", True),
    ((5, 3), "householder", False),
    ((2, 4, 4), None, True),  # a batch of matrices
]


@pytest.mark.parametrize("shape, orthogonal_map, trivial", CASES)
def test_weights_and_gradients_match_torch(shape, orthogonal_map, trivial):
    weight = R.normal(size=shape)
    kwargs = {"orthogonal_map": orthogonal_map, "use_trivialization": trivial}
    theirs = torch.nn.utils.parametrizations.orthogonal(_module(torch, weight), **kwargs)
    ours = sg.nn.utils.parametrizations.orthogonal(_module(sg, weight), **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    # registration: the same weight (the assigned one, made orthogonal)
    np.testing.assert_allclose(
        ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-12
    )
    # move the original (below the diagonal: the householder map reads signs on it), load
    # torch's state, compare the weight and the original's gradient
    original = theirs.parametrizations.weight.original
    with torch.no_grad():
        original.add_(torch.tensor(np.tril(R.normal(size=tuple(original.shape)), -1)) * 0.3)
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    g = R.normal(size=shape)
    (ours.weight * sg.tensor(g)).sum().backward()
    (theirs.weight * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(
        ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-12
    )
    np.testing.assert_allclose(
        ours.parametrizations.weight.original.grad.numpy(), original.grad.numpy(), atol=1e-12
    )


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6)])
def test_the_weight_stays_orthogonal_through_training(shape):
    module = sg.nn.utils.parametrizations.orthogonal(_module(sg, R.normal(size=shape)))
    optimizer = sg.optim.SGD(module.parameters(), lr=0.1)
    x, target = sg.tensor(R.normal(size=(8, shape[1]))), sg.tensor(R.normal(size=(8, shape[0])))
    for _ in range(5):
        optimizer.zero_grad()
        ((module(x) - target) ** 2).mean().backward()
        optimizer.step()
    w = module.weight.detach().numpy()
    q = w if shape[0] >= shape[1] else w.T
    np.testing.assert_allclose(q.T @ q, np.eye(min(shape)), atol=1e-12)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_original_gradient_is_the_finite_difference(orthogonal_map):
    module = sg.nn.utils.parametrizations.orthogonal(
        _module(sg, R.normal(size=(4, 3))), orthogonal_map=orthogonal_map
    )
    original = module.parametrizations.weight.original
    with sg.no_grad():
        original.add_(sg.tensor(np.tril(R.normal(size=(4, 3)), -1) * 0.3))
    g = sg.tensor(R.normal(size=(4, 3)))
    (module.weight * g).sum().backward()
    grad = original.grad.numpy().copy()
    eps = 1e-6
    indices = [(1, 0), (2, 1), (3, 0), (3, 2)]
    if orthogonal_map != "householder":  # (its diagonal holds signs, cast to int: a step)
        indices += [(0, 0), (1, 1)]
    for i in indices:
        values = []
        for step in (eps, -eps):
            with sg.no_grad():
                original[i] += step
                values.append(float((module.weight * g).sum()))
                original[i] -= step
        assert abs((values[0] - values[1]) / (2 * eps) - grad[i]) < 1e-8, i


def test_assigning_a_weight_makes_it_the_orthogonal_factor():
    module = sg.nn.utils.parametrizations.orthogonal(_module(sg, R.normal(size=(4, 4))))
    q = np.linalg.qr(R.normal(size=(4, 4)))[0]
    module.weight = sg.tensor(q)
    np.testing.assert_allclose(module.weight.detach().numpy(), q, atol=1e-12)


def test_matrix_exp_and_householder_product_match_torch_and_finite_differences():
    a = R.normal(size=(2, 3, 3)) * 0.5
    h, tau = R.normal(size=(5, 3)), R.uniform(0.5, 2.0, 3)
    for fn, args in [
        (lambda m, x: m.matrix_exp(x), (a,)),
        (lambda m, x: m.linalg.matrix_exp(x), (a,)),
        (lambda m, x, t: m.linalg.householder_product(x, t), (h, tau)),
        (lambda m, x, t: x.orgqr(t), (h, tau)),
    ]:
        weights = None
        found = []
        for m in (sg, torch):
            leaves = [m.tensor(v, requires_grad=True) for v in args]
            out = fn(m, *leaves)
            weights = R.normal(size=tuple(out.shape)) if weights is None else weights
            grads = m.autograd.grad((out * m.tensor(weights)).sum(), leaves)
            found.append([out.detach().numpy()] + [gr.numpy() for gr in grads])
        for ours, theirs in zip(*found):
            np.testing.assert_allclose(ours, theirs, atol=1e-12)
    # finite differences of matrix_exp's gradient
    x = sg.tensor(a, requires_grad=True)
    w = sg.tensor(R.normal(size=a.shape))
    (grad,) = sg.autograd.grad((sg.matrix_exp(x) * w).sum(), [x])
    eps = 1e-6
    for i in [(0, 0, 0), (0, 1, 2), (1, 2, 0)]:
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        numeric = (
            float((sg.matrix_exp(sg.tensor(up)) * w).sum())
            - float((sg.matrix_exp(sg.tensor(down)) * w).sum())
        ) / (2 * eps)
        assert abs(numeric - float(grad[i])) < 1e-8


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.matrix_exp(m.ones(2, 3)),
        lambda m: m.matrix_exp(m.ones(3)),
        lambda m: m.matrix_exp(m.ones(2, 2, dtype=m.int64)),
        lambda m: m.linalg.householder_product(m.ones(2, 3), m.ones(2)),
        lambda m: m.linalg.householder_product(m.ones(3, 2), m.ones(3)),
        lambda m: m.linalg.householder_product(m.ones(3), m.ones(1)),
        lambda m: m.linalg.householder_product(m.ones(2, 3, 2), m.ones(3, 2)),
        lambda m: m.linalg.householder_product(m.ones(3, 2), m.ones(2, dtype=m.float64)),
        lambda m: m.nn.utils.parametrizations.orthogonal(m.nn.Linear(3, 3), orthogonal_map="qr"),
        lambda m: m.nn.utils.parametrizations.orthogonal(m.nn.Linear(3, 3), name="bias"),
        lambda m: m.nn.utils.parametrizations.orthogonal(m.nn.Linear(3, 3), name="nothing"),
        lambda m: setattr(
            m.nn.utils.parametrizations.orthogonal(m.nn.Linear(3, 3)), "weight", m.ones(2, 2)
        ),
        lambda m: setattr(
            m.nn.utils.parametrizations.orthogonal(m.nn.Linear(3, 3), use_trivialization=False),
            "weight",
            m.eye(3),
        ),
    ],
)
def test_errors_are_torchs(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(theirs.type) as ours:
        call(sg)
    their_text = (
        str(theirs.value)
        .replace("torch.Size", "")
        .replace("Linear(in_features=3, out_features=3, bias=True)", "")
    )
    our_text = (
        str(ours.value)
        .replace("torch.Size", "")
        .replace("Linear(in_features=3, out_features=3, bias=True)", "")
    )
    assert our_text == their_text
