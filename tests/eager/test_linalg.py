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
        np.testing.assert_allclose(
            a.detach().numpy(), t.detach().numpy(force=True), rtol=1e-10, atol=1e-12
        )  # (force: torch's ZeroTensor)


def test_numpy_linalg_on_tensors_records_the_same_nodes():
    x = sourcegrad.tensor(A, requires_grad=True)
    out = np.linalg.inv(x)
    assert type(out.grad_fn).__name__ == "LinalgInvExBackward0"
    (np.linalg.det(x) + np.linalg.norm(x)).backward()
    expected = torch.tensor(A, requires_grad=True)
    (torch.linalg.det(expected) + torch.linalg.norm(expected)).backward()
    np.testing.assert_allclose(x.grad.numpy(), expected.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("ord", ["nuc", 2, -2, 1, -1, np.inf, -np.inf])
def test_matrix_norms_have_torchs_node_and_gradient(ord):
    x = sourcegrad.tensor(A, requires_grad=True)
    out = sourcegrad.linalg.norm(x, ord)
    expected = torch.tensor(A, requires_grad=True)
    reference = torch.linalg.norm(expected, ord)
    assert type(out.grad_fn).__name__ == type(reference.grad_fn).__name__
    out.backward()
    reference.backward()
    np.testing.assert_allclose(x.grad.numpy(), expected.grad.numpy(), rtol=1e-10, atol=1e-12)


# Functions of several outputs: one node (torch's), which keeps its outputs for the rules that
# read them. Each case returns a function of the outputs that does not depend on the signs
# eigenvectors and singular vectors are free to take (LAPACK picks the same ones for torch
# and numpy, but the gradient should not rest on that).
S = A @ A.T + np.eye(3)
M23 = R.normal(size=(3, 2))
SEVERAL = {
    "slogdet": (lambda L, x: L.linalg.slogdet(x).logabsdet, lambda L, x: L.linalg.slogdet(x)[1], A),
    "slogdet_batched": (lambda L, x: L.linalg.slogdet(x)[1].sum(), None, AB),
    "eigh": (
        lambda L, x: L.linalg.eigh(x + x.mT).eigenvalues,
        lambda L, x: L.linalg.eigh(x + x.mT).eigenvectors ** 2,
        A,
    ),
    "eigh_both": (
        lambda L, x: L.linalg.eigh(x + x.mT)[0].unsqueeze(-2) * L.linalg.eigh(x + x.mT)[1] ** 2,
        None,
        AB,
    ),
    "eigvalsh": (lambda L, x: L.linalg.eigvalsh(x + x.mT), None, A),
    "svd": (
        lambda L, x: L.linalg.svd(x, full_matrices=False).S,
        lambda L, x: L.linalg.svd(x, full_matrices=False).U ** 2,
        M23,
    ),
    "svd_vh": (lambda L, x: L.linalg.svd(x, full_matrices=False)[2] ** 2, None, M23.T),
    "svd_square_full": (lambda L, x: L.linalg.svd(x)[0] * L.linalg.svd(x)[2], None, A),
    "svdvals": (lambda L, x: L.linalg.svdvals(x), None, M23),
    "qr": (lambda L, x: L.linalg.qr(x).Q, lambda L, x: L.linalg.qr(x).R, M23),
    "qr_complete_square": (
        lambda L, x: L.linalg.qr(x, mode="complete")[0] + L.linalg.qr(x, mode="complete")[1],
        None,
        A,
    ),
    "matrix_power_3": (lambda L, x: L.linalg.matrix_power(x, 3), None, A),
    "matrix_power_5": (lambda L, x: L.linalg.matrix_power(x, 5), None, A * 0.5),
    "matrix_power_neg": (lambda L, x: L.linalg.matrix_power(x, -2), None, A),
    "matrix_power_1": (lambda L, x: L.linalg.matrix_power(x, 1), None, A),
}


def _weighted(lib, fn, x):
    out = fn(lib, x)
    w = np.cos(np.arange(out.numel()).reshape(tuple(out.shape)))
    return out, (out * lib.tensor(w)).sum()


def _run_several(lib, fns, x):
    tx = lib.tensor(x, requires_grad=True)
    outs, total = [], 0.0
    for fn in fns:
        if fn is not None:
            out, part = _weighted(lib, fn, tx)
            outs.append(out)
            total = total + part
    (g,) = lib.autograd.grad(total, tx, create_graph=True)
    if not g.requires_grad:  # (a linear function: its gradient is a constant)
        return outs, g
    (gg,) = lib.autograd.grad((g * g).sum(), tx)
    return outs, g, gg


@pytest.mark.parametrize("name", sorted(SEVERAL))
def test_several_outputs_match_torch(name):
    first, second, x = SEVERAL[name]
    ours, theirs = (
        _run_several(sourcegrad, (first, second), x),
        _run_several(torch, (first, second), x),
    )
    for a, t in zip(ours[0], theirs[0]):
        assert type(a.grad_fn).__name__ == type(t.grad_fn).__name__
        np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-9, atol=1e-11)
    for a, t in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-8, atol=1e-10)


def test_one_node_keeps_its_outputs_and_sees_them_changed():
    x = sourcegrad.tensor(S, requires_grad=True)
    w, v = sourcegrad.linalg.eigh(x)
    assert w.grad_fn is v.grad_fn and (w.grad_fn.next_functions[0][0].variable is x)
    assert (w._output_nr, v._output_nr) == (0, 1)
    with sourcegrad.no_grad():
        v.mul_(2.0)
    expected = torch.linalg.eigh(torch.tensor(S, requires_grad=True))
    with torch.no_grad():
        expected.eigenvectors.mul_(2.0)
    with pytest.raises(RuntimeError) as theirs:
        expected.eigenvalues.sum().backward()
    with pytest.raises(RuntimeError) as ours:
        w.sum().backward()
    assert str(ours.value) == str(theirs.value)


def test_named_results_print_as_torch():
    x = np.diag([1.0, 2.0])
    ours, theirs = (
        sourcegrad.linalg.slogdet(sourcegrad.tensor(x)),
        torch.linalg.slogdet(torch.tensor(x)),
    )
    assert repr(ours) == repr(theirs)
    assert repr(sourcegrad.linalg.eigh(sourcegrad.tensor(x))) == repr(
        torch.linalg.eigh(torch.tensor(x))
    )


def test_numpy_functions_of_several_outputs_dispatch_on_tensors():
    x = sourcegrad.tensor(A, requires_grad=True)
    sign, logdet = np.linalg.slogdet(x)
    s = np.linalg.svd(x, compute_uv=False)
    q, r = np.linalg.qr(x)
    (logdet + s.sum() + (q * r).sum()).backward()
    t = torch.tensor(A, requires_grad=True)
    (
        torch.linalg.slogdet(t)[1]
        + torch.linalg.svdvals(t).sum()
        + (torch.linalg.qr(t)[0] * torch.linalg.qr(t)[1]).sum()
    ).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)


# out= as torch honours it: written, resized with torch's warning, torch's errors
OUT_CASES = {
    "inv": (lambda L, x, o: L.linalg.inv(x, out=o), 1),
    "det": (lambda L, x, o: L.linalg.det(x, out=o), 1),
    "solve": (lambda L, x, o: L.linalg.solve(x, x[0], out=o), 1),
    "cholesky": (lambda L, x, o: L.linalg.cholesky(x @ x.mT, out=o), 1),
    "pinv": (lambda L, x, o: L.linalg.pinv(x, out=o), 1),
    "vector_norm": (lambda L, x, o: L.linalg.vector_norm(x, out=o), 1),
    "eigvalsh": (lambda L, x, o: L.linalg.eigvalsh(x, out=o), 1),
    "svdvals": (lambda L, x, o: L.linalg.svdvals(x, out=o), 1),
    "matrix_power": (lambda L, x, o: L.linalg.matrix_power(x, 3, out=o), 1),
    "slogdet": (lambda L, x, o: L.linalg.slogdet(x, out=o), 2),
    "eigh": (lambda L, x, o: L.linalg.eigh(x, out=o), 2),
    "qr": (lambda L, x, o: L.linalg.qr(x, out=o), 2),
    "svd": (lambda L, x, o: L.linalg.svd(x, out=o), 3),
}


def _outs(lib, n, dtype=None):
    dtype = dtype or lib.float64
    made = tuple(lib.empty(0, dtype=dtype) for _ in range(n))
    return made if n > 1 else made[0]


def _error(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("name", sorted(OUT_CASES))
def test_out_is_written_as_torch_writes_it(name):
    fn, n = OUT_CASES[name]
    x = S
    ours_out, theirs_out = _outs(sourcegrad, n), _outs(torch, n)
    got = fn(sourcegrad, sourcegrad.tensor(x), ours_out)
    expected = fn(torch, torch.tensor(x), theirs_out)
    assert got is ours_out if n == 1 else all(a is b for a, b in zip(got, ours_out))
    for a, t in zip(ours_out if n > 1 else (ours_out,), theirs_out if n > 1 else (theirs_out,)):
        np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)
    del expected
    needs_grad = _error(
        lambda: fn(sourcegrad, sourcegrad.tensor(x, requires_grad=True), _outs(sourcegrad, n))
    )
    assert needs_grad == _error(
        lambda: fn(torch, torch.tensor(x, requires_grad=True), _outs(torch, n))
    )
    if name not in ("pinv",):  # (torch's pinv casts)
        wrong_dtype = _error(
            lambda: fn(sourcegrad, sourcegrad.tensor(x), _outs(sourcegrad, n, sourcegrad.float32))
        )
        assert wrong_dtype == _error(
            lambda: fn(torch, torch.tensor(x), _outs(torch, n, torch.float32))
        )
        assert wrong_dtype is not None


def test_out_of_a_function_of_several_outputs_must_be_a_tuple():
    ours = _error(lambda: sourcegrad.linalg.slogdet(sourcegrad.tensor(A), out=sourcegrad.empty(0)))
    assert ours == _error(lambda: torch.linalg.slogdet(torch.tensor(A), out=torch.empty(0)))


# torch.linalg.eig / eigvals: complex results (always, as torch's), one LinalgEigBackward0
ROTATION = np.array(
    [[0.0, -2.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0, 0, 0, -1]]
)
GENERAL = ROTATION + 0.3 * R.normal(size=(4, 4))  # a complex pair, two real eigenvalues
GENERAL_B = ROTATION[1:, 1:] + 0.3 * R.normal(size=(2, 3, 3))
EIG_LOSSES = {
    "eigvals_abs": lambda L, x: L.linalg.eigvals(x).abs(),
    "eigvals_real_imag": lambda L, x: L.linalg.eigvals(x).real ** 2 + L.linalg.eigvals(x).imag,
    "eig_values": lambda L, x: L.linalg.eig(x).eigenvalues.abs(),
    "eig_vectors": lambda L, x: L.linalg.eig(x).eigenvectors.abs() ** 2,
    "eig_both": lambda L, x: L.linalg.eig(x)[1].abs() * L.linalg.eig(x)[0].real.unsqueeze(-2),
}


@pytest.mark.parametrize("x", [GENERAL, GENERAL_B], ids=["matrix", "batched"])
@pytest.mark.parametrize("name", sorted(EIG_LOSSES))
def test_eig_matches_torch(name, x):
    def run(L):
        t = L.tensor(x, requires_grad=True)
        out = EIG_LOSSES[name](L, t)
        w = L.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        (g,) = L.autograd.grad((out * w).sum(), t)
        return out, g

    ours, theirs = run(sourcegrad), run(torch)
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_eig_results_are_complex_with_torchs_node_and_dtype():
    assert np.any(np.abs(np.linalg.eigvals(GENERAL).imag) > 0.5)
    for dtype in ("float32", "float64"):
        ours = sourcegrad.linalg.eig(sourcegrad.tensor(GENERAL, dtype=getattr(sourcegrad, dtype)))
        theirs = torch.linalg.eig(torch.tensor(GENERAL, dtype=getattr(torch, dtype)))
        assert [str(o.dtype) for o in ours] == [str(t.dtype) for t in theirs]
    x = sourcegrad.tensor(GENERAL, requires_grad=True)
    for out in (*sourcegrad.linalg.eig(x), sourcegrad.linalg.eigvals(x), np.linalg.eigvals(x)):
        assert type(out.grad_fn).__name__ == "LinalgEigBackward0"
    w, V = sourcegrad.linalg.eig(x)
    assert w.grad_fn is V.grad_fn  # one node, two outputs


def test_eig_refuses_a_loss_that_depends_on_the_phases_as_torch():
    for lib, error in ((torch, RuntimeError), (sourcegrad, sourcegrad.NoRuleError)):
        V = lib.linalg.eig(lib.tensor(GENERAL, requires_grad=True)).eigenvectors
        with pytest.raises(error, match=r"up to multiplication by e\^\{i phi\}"):
            V.real.sum().backward()
