"""`sourcegrad.linalg` (torch.linalg) against torch: values, gradients, node names and second
derivatives through create_graph; np.linalg on Tensors dispatches to the same ops."""
import numpy as np
import pytest

import sourcegrad

torch = pytest.importorskip("torch")

R = np.random.default_rng(3)
A = R.normal(size=(3, 3)) * 0.5 + 2.0 * np.eye(3)
AB = R.normal(size=(2, 3, 3)) * 0.5 + 2.0 * np.eye(3)
W = R.normal(size=(3, 3))
b = R.normal(size=3)


def _run(lib, fn, x, w):
    tx = lib.tensor(x, requires_grad=True)
    out = fn(lib, tx)
    (g,) = lib.autograd.grad((out * lib.tensor(w)).sum(), tx, create_graph=True)
    (gg,) = lib.autograd.grad((g * g).sum(), tx) if g.requires_grad else (None,)
    return out, g, gg


CASES = {
    "inv": (lambda L, x: L.linalg.inv(x), A, W),
    "inv_batched": (lambda L, x: L.linalg.inv(x), AB, W),
    "det": (lambda L, x: L.linalg.det(x), A, np.array(1.5)),
    "det_batched": (lambda L, x: L.linalg.det(x), AB, np.array([1.0, -2.0])),
    "solve_in_A": (lambda L, x: L.linalg.solve(x, L.tensor(b)), A, b),
    "solve_in_B": (lambda L, x: L.linalg.solve(L.tensor(A), x * x), W, W),
    "cholesky": (lambda L, x: L.linalg.cholesky(x @ x.T + L.eye(3, dtype=L.float64)), A, W),
    "pinv": (lambda L, x: L.linalg.pinv(x), A[:, :2], W[:2]),
    "vector_norm": (lambda L, x: L.linalg.vector_norm(x), A, np.array(1.3)),
    "vector_norm_3_dim": (lambda L, x: L.linalg.vector_norm(x, 3, dim=1), A, b),
    "vector_norm_inf": (lambda L, x: L.linalg.vector_norm(x, float("inf"), dim=0), A, b),
    "norm_keepdim": (lambda L, x: L.linalg.norm(x, dim=0, keepdim=True), A, b[None]),
    "norm_fro": (lambda L, x: L.linalg.norm(x), A, np.array(0.7)),
    "norm_1": (lambda L, x: L.linalg.norm(x, 1, dim=-1), A, b),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    fn, x, w = CASES[name]
    ours, theirs = _run(sourcegrad, fn, x, w), _run(torch, fn, x, w)
    assert type(ours[0].grad_fn).__name__ == type(theirs[0].grad_fn).__name__
    for a, t in zip(ours, theirs):
        if t is None or a is None:
            assert a is None and t is None
            continue
        np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(force=True), rtol=1e-10,
                                   atol=1e-12)  # (force: torch's ZeroTensor)


def test_numpy_linalg_on_tensors_records_the_same_nodes():
    x = sourcegrad.tensor(A, requires_grad=True)
    out = np.linalg.inv(x)
    assert type(out.grad_fn).__name__ == "LinalgInvExBackward0"
    (np.linalg.det(x) + np.linalg.norm(x)).backward()
    expected = torch.tensor(A, requires_grad=True)
    (torch.linalg.det(expected) + torch.linalg.norm(expected)).backward()
    np.testing.assert_allclose(x.grad.numpy(), expected.grad.numpy(), rtol=1e-12)


def test_matrix_norms_without_a_rule_are_refused():
    with pytest.raises(NotImplementedError, match="matrix ord"):
        sourcegrad.linalg.norm(sourcegrad.tensor(A), 2)
