"""The adjoint of a row gather (`weight[tokens]`: an embedding), summed by `runtime._add_rows`
(one np.bincount), equals np.add.at's and torch's embedding gradient; every other index
still goes through np.add.at."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad  # noqa: E402
from sourcegrad import runtime  # noqa: E402


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize(
    "shape,rows",
    [
        ((7, 3), (12,)),
        ((7, 3), (4, 5)),
        ((5, 2, 3), (6,)),
        ((4, 3), ()),
        ((6, 2), (0,)),
    ],
)
def test_rows_sum_as_add_at(dtype, shape, rows):
    rng = np.random.default_rng(0)
    x = np.zeros(shape, dtype)
    idx = rng.integers(-shape[0], shape[0], size=rows)  # repeated and negative rows
    g = rng.normal(size=rows + shape[1:]).astype(dtype)
    expected = np.zeros_like(x)
    np.add.at(expected, (idx,), g)
    assert runtime._add_rows(np.zeros_like(x), (idx,), g)  # (the bincount path is taken)
    out = runtime.unindex(g, x, (idx,))
    assert out.dtype == x.dtype and out.shape == x.shape
    tol = 1e-2 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(out, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("index_dtype", [np.uint8, np.int16, np.uint64, np.int64])
def test_small_and_unsigned_index_types(index_dtype):
    """Positions are computed in intp: a uint8 row times the row width would overflow."""
    x = np.zeros((200, 64), np.float32)
    idx = np.array([199, 3, 199, 150], dtype=index_dtype)
    g = np.arange(4 * 64, dtype=np.float32).reshape(4, 64)
    expected = np.zeros_like(x)
    np.add.at(expected, (idx,), g)
    np.testing.assert_array_equal(runtime.unindex(g, x, (idx,)), expected)


def test_non_finite_values_stay_in_their_rows():
    x = np.zeros((4, 2))
    g = np.array([[np.inf, 1.0], [np.nan, 2.0], [3.0, 4.0]])
    out = runtime.unindex(g, x, (np.array([1, 3, 1]),))
    expected = np.zeros_like(x)
    np.add.at(expected, (np.array([1, 3, 1]),), g)
    np.testing.assert_array_equal(out, expected)
    assert np.isfinite(out[[0, 2]]).all()


@pytest.mark.parametrize(
    "x,index,g",
    [
        (np.zeros((4, 3)), (np.array([0, 0, 2]), np.array([1, 1, 2])), np.ones(3)),  # pairs
        (np.zeros(5), (np.array([1, 1, 4]),), np.ones(3)),  # a vector: elements, not rows
        (np.zeros((4, 2), np.int64), (np.array([1, 1]),), np.ones((2, 2), np.int64)),
        (np.zeros((4, 2), np.complex128), (np.array([1, 1]),), np.ones((2, 2)) * 1j),
        (np.zeros((4, 3)), (slice(None), np.array([0, 0])), np.ones((4, 2))),  # columns
    ],
)
def test_other_indices_keep_add_at(x, index, g):
    expected = np.zeros_like(x)
    np.add.at(expected, index, g)
    np.testing.assert_array_equal(runtime.unindex(g, x, index), expected)
    assert not runtime._add_rows(np.zeros_like(x), index, g)


def test_large_table_few_rows_keeps_add_at():
    """float64 sums as large as the table, for a handful of rows: np.add.at, not bincount."""
    out = np.zeros((100_000, 8), np.float32)
    assert not runtime._add_rows(out, (np.array([3, 3]),), np.ones((2, 8), np.float32))
    assert not out.any()


def _embedding_grads(lib, padding_idx):
    rng = np.random.default_rng(1)
    lib.manual_seed(0)
    emb = lib.nn.Embedding(11, 4, padding_idx=padding_idx)
    with lib.no_grad():
        emb.weight.copy_(lib.tensor(rng.normal(size=(11, 4)).astype(np.float32)))
    tokens = lib.tensor(rng.integers(0, 11, size=(6, 9)))
    w = lib.tensor(rng.normal(size=(6, 9, 4)).astype(np.float32))
    (emb(tokens) * w).sum().backward()
    return emb.weight.grad.numpy()


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_gradient_matches_torch(padding_idx):
    np.testing.assert_allclose(
        _embedding_grads(sourcegrad, padding_idx),
        _embedding_grads(torch, padding_idx),
        rtol=1e-5,
        atol=1e-6,
    )


def test_embedding_double_backward_matches_torch():
    """Under create_graph the gradient is a Tensor: the general path, differentiable again."""

    def run(lib):
        weight = lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
        tokens = lib.tensor([0, 2, 2, 1])
        (g,) = lib.autograd.grad((weight[tokens] ** 2).sum(), weight, create_graph=True)
        (g * g).sum().backward()
        return g.detach().numpy(), weight.grad.numpy()

    for ours, theirs in zip(run(sourcegrad), run(torch)):
        np.testing.assert_allclose(ours, theirs)


@pytest.mark.parametrize("rows", [[0, 5, 1], [0, -5, 1]])
def test_a_row_out_of_range_raises_numpys_index_error(rows):
    # (the bincount's flat positions wrap modulo the rows: np.add.at's IndexError instead)
    x, g = np.zeros((4, 3)), np.ones((3, 3))
    assert not runtime._add_rows(np.zeros_like(x), (np.array(rows),), g)
    with pytest.raises(IndexError):
        runtime.unindex(g, x, (np.array(rows),))


def test_complex_values_keep_add_at():
    x, g = np.zeros((4, 3)), np.ones((2, 3), complex)
    assert not runtime._add_rows(np.zeros_like(x), (np.array([1, 2]),), g)
