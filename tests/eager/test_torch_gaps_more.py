"""torch functions published training code calls that the eager mode lacked (issue 38, the
API table's gaps): as_strided, cartesian_prod, combinations, tril/triu_indices, block_diag,
histc, isin, cov, corrcoef, det / slogdet / logdet / matrix_power, deg2rad / rad2deg,
index_copy; against torch 2.13 in float64 (values, dtypes, gradients, errors), with central
finite differences for the composed gradients."""

import warnings

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import UnsupportedAPIError

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)


def agree(fn, *values):
    """fn(module, *tensors) in both: same values, shape and dtype; for float64 inputs the
    same gradients of a weighted sum of the output."""
    found = []
    weights = None
    for m in (sg, torch):
        leaves = [m.tensor(v, requires_grad=np.asarray(v).dtype == np.float64) for v in values]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(m, *leaves)
        entry = [np.asarray(out.detach()), str(out.dtype), tuple(out.shape)]
        differentiable = [t for t in leaves if t.requires_grad]
        if differentiable and out.requires_grad:
            weights = R.normal(size=tuple(out.shape)) if weights is None else weights
            loss = (out.where(out.isfinite(), out.new_zeros(())) * m.tensor(weights)).sum()
            entry += [np.asarray(g) for g in m.autograd.grad(loss, differentiable)]
        found.append(entry)
    ours, theirs = found
    assert len(ours) == len(theirs)
    assert ours[1:3] == theirs[1:3]
    for a, b in zip(ours[:1] + ours[3:], theirs[:1] + theirs[3:]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True)


CASES = {
    "as_strided": (lambda m, a: a.as_strided((2, 2), (1, 2)), R.normal(size=6)),
    "as_strided overlapping, offset": (
        lambda m, a: m.as_strided(a, (3, 2), (1, 1), 1),
        R.normal(size=(2, 3)),
    ),
    "cartesian_prod": (
        lambda m, a, b, c: m.cartesian_prod(a, b, c),
        R.normal(size=2),
        R.normal(size=3),
        R.normal(size=2),
    ),
    "cartesian_prod of one": (lambda m, a: m.cartesian_prod(a), R.normal(size=3)),
    "combinations": (lambda m, a: m.combinations(a, 2), R.normal(size=4)),
    "combinations with replacement": (
        lambda m, a: m.combinations(a, 3, with_replacement=True),
        R.normal(size=3),
    ),
    "combinations r=0": (lambda m, a: m.combinations(a, 0), np.array([1, 2, 3])),
    "combinations r>n": (lambda m, a: m.combinations(a, 4), np.array([1, 2, 3])),
    "tril_indices": (lambda m: m.tril_indices(3, 4, 1),),
    "triu_indices": (lambda m: m.triu_indices(4, 3, -1, dtype=m.int32),),
    "block_diag": (
        lambda m, a, b, c, d: m.block_diag(a, b, c, d),
        R.normal(size=(2, 2)),
        R.normal(size=3),
        np.array(5.0),
        np.zeros((0, 2)),
    ),
    "block_diag mixed dtypes": (
        lambda m, a, b: m.block_diag(a, b),
        np.array([[1, 2]]),
        R.normal(size=(2, 1)),
    ),
    "histc": (lambda m, a: m.histc(a, bins=7, min=-1, max=1), R.normal(size=50)),
    "histc over the data's range": (lambda m, a: m.histc(a), R.normal(size=50)),
    "histc of equal values": (lambda m, a: m.histc(a, bins=3), np.array([2.0, 2.0])),
    "isin": (lambda m, a, b: m.isin(a, b), np.array([1, 2, 3]), np.array([2, 5])),
    "isin scalar, invert": (lambda m, a: m.isin(a, 2, invert=True), np.array([1, 2, 3])),
    "cov": (lambda m, a: m.cov(a), R.normal(size=(3, 5))),
    "cov of a vector": (lambda m, a: m.cov(a, correction=0), R.normal(size=5)),
    "cov weighted": (
        lambda m, a, f, w: m.cov(a, fweights=f, aweights=w),
        R.normal(size=(3, 5)),
        np.array([1, 2, 1, 3, 1]),
        R.uniform(0.5, 2, 5),
    ),
    "corrcoef": (lambda m, a: m.corrcoef(a), R.normal(size=(3, 5))),
    "det": (lambda m, a: m.det(a), R.normal(size=(2, 3, 3))),
    "Tensor.det": (lambda m, a: a.det(), R.normal(size=(3, 3))),
    "slogdet": (lambda m, a: m.slogdet(a).logabsdet * m.slogdet(a).sign, R.normal(size=(3, 3))),
    "logdet, negative determinants": (lambda m, a: m.logdet(a), R.normal(size=(4, 3, 3))),
    "matrix_power": (lambda m, a: a.matrix_power(3), R.normal(size=(3, 3))),
    "deg2rad": (lambda m, a: m.deg2rad(a), R.normal(size=3)),
    "rad2deg": (lambda m, a: a.rad2deg(), R.normal(size=3)),
    "index_copy": (
        lambda m, a, s: a.index_copy(1, m.tensor([2, 0]), s),
        R.normal(size=(2, 4)),
        R.normal(size=(2, 2)),
    ),
    "index_copy_": (
        lambda m, a, s: (a * 1).index_copy_(0, m.tensor([1]), s),
        R.normal(size=(2, 4)),
        R.normal(size=(1, 4)),
    ),
}
for _reduce in ("prod", "mean", "amax", "amin"):
    for _include in (True, False):
        CASES[f"index_reduce {_reduce} include_self={_include}"] = (
            lambda m, a, s, r=_reduce, inc=_include: a.index_reduce(
                1, m.tensor([1, 1, 0, 3]), s, r, include_self=inc
            ),
            np.array([[1.5, 0.0, 2.0, -1.0], [0.5, 3.0, 0.0, 2.0]]),
            np.array([[2.0, 0.0, 4.0, 1.5], [-1.0, 5.0, 0.5, 0.0]]),
        )
CASES["torch.index_reduce_"] = (
    lambda m, a, s: (a * 1).index_reduce_(0, m.tensor([2, 0]), s, "prod"),
    R.normal(size=(3, 2)),
    R.normal(size=(2, 2)),
)


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name):
    agree(*CASES[name])


def test_as_strided_is_a_read_only_copy_and_refuses_a_views_storage():
    x = sg.arange(6.0)
    window = x.as_strided((2, 2), (1, 2))
    with pytest.raises(RuntimeError):
        window[0, 0] = 5.0  # (torch's is a view; a write here raises rather than not reaching x)
    with pytest.raises(UnsupportedAPIError, match="outside the tensor"):
        x[2:].as_strided((4,), (1,), 0)
    with pytest.raises(UnsupportedAPIError, match="non-contiguous"):
        x.reshape(2, 3).t().as_strided((2,), (1,))


def test_composed_gradients_are_the_finite_differences():
    a = R.normal(size=(3, 5))
    w = R.normal(size=(3, 3))
    for fn in (sg.cov, sg.corrcoef, lambda t: t[:, :3].matrix_power(2), lambda t: t[:, :3].det()):
        x = sg.tensor(a, requires_grad=True)
        out = fn(x)
        weights = sg.tensor(w[: out.shape[0], : out.shape[1]] if out.dim() == 2 else w[0, 0])
        (grad,) = sg.autograd.grad((out * weights).sum(), [x])
        eps = 1e-6
        for i in [(0, 0), (1, 2), (2, 4)]:
            up, down = a.copy(), a.copy()
            up[i] += eps
            down[i] -= eps
            numeric = (
                float((fn(sg.tensor(up)) * weights).sum())
                - float((fn(sg.tensor(down)) * weights).sum())
            ) / (2 * eps)
            assert abs(numeric - float(grad[i])) < 1e-7


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.arange(6.0).as_strided((2, 2), (1,)),
        lambda m: m.arange(6.0).as_strided((2, 2), (-1, 2)),
        lambda m: m.arange(6.0).as_strided((4, 2), (2, 1)),
        lambda m: m.arange(6.0).as_strided((2,), (1,), -1),
        lambda m: m.combinations(m.ones(2, 2)),
        lambda m: m.combinations(m.tensor([1, 2, 3]), r=-1),
        lambda m: m.cartesian_prod(m.ones(2, 2)),
        lambda m: m.block_diag(m.ones(2, 2, 2)),
        lambda m: m.tril_indices(3, 3, dtype=m.float32),
        lambda m: m.histc(m.tensor([1, 2])),
        lambda m: m.histc(m.tensor([1.0, 2.0]), bins=-1),
        lambda m: m.histc(m.tensor([1.0, 2.0]), bins=3, min=3, max=1),
        lambda m: m.cov(m.ones(2, 2, 2)),
        lambda m: m.ones(3, 2).index_reduce(0, m.tensor([0, 2]), m.ones(2, 2), "sum"),
        lambda m: m.ones(3, 2).index_reduce(0, m.tensor([0, 2]), m.ones(3, 2), "prod"),
        lambda m: m.ones(3, 2).index_reduce(0, m.tensor([[0, 2]]), m.ones(2, 2), "prod"),
        lambda m: m.ones(3, 2).index_reduce(0, m.tensor([0.0, 2]), m.ones(2, 2), "prod"),
        lambda m: m.ones(3, 2).index_reduce(0, m.tensor([0, 3]), m.ones(2, 2), "prod"),
    ],
)
def test_errors_are_torchs(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(theirs.type) as ours:
        call(sg)
    assert str(ours.value).replace("itemsize 8", "itemsize 4").replace("of 64 ", "of 32 ").replace(
        "size of 48", "size of 24"
    ) == str(theirs.value)
