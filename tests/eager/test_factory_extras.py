"""Factories as torch has them: `out=`, linspace to the bit, Variable, torch.Tensor's
keywords, set_default_device (torch 2.13 as the oracle)."""

import math

import numpy as np
import pytest

import sourcegrad as S
from sourcegrad.autograd import Variable

torch = pytest.importorskip("torch")


def both(fn):
    """fn(lib) for sourcegrad and for torch."""
    return fn(S), fn(torch)


@pytest.mark.parametrize(
    "make",
    [
        lambda L, o: L.zeros(3, out=o),
        lambda L, o: L.ones(2, 2, out=o),
        lambda L, o: L.full((3,), 1.5, out=o),
        lambda L, o: L.eye(2, out=o),
        lambda L, o: L.arange(4, out=o),
        lambda L, o: L.linspace(0, 1, 5, out=o),
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("n", [0, 2, 3])
def test_out_is_written_resized_and_returned(make, dtype, n):
    ours, theirs = S.empty(n, dtype=getattr(S, dtype)), torch.empty(n, dtype=getattr(torch, dtype))
    version = ours._version
    got, want = make(S, ours), make(torch, theirs)
    assert got is ours and want is theirs
    assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert ours._version == version + 1


def test_out_of_a_view_writes_its_base():
    base = S.zeros(5)
    S.ones(3, out=base[1:4])
    np.testing.assert_array_equal(base.numpy(), [0, 1, 1, 1, 0])


def test_random_factories_honour_out():
    out = S.empty(4, dtype=S.float32)
    assert S.rand(4, out=out) is out and out.dtype == S.float32
    assert S.randn(2, 3, out=out) is out and tuple(out.shape) == (2, 3)


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.zeros(3, dtype=L.float32, out=L.empty(3, dtype=L.float64)),
        lambda L: L.zeros(3, out=L.zeros(3, requires_grad=True)),
    ],
)
def test_out_errors_are_torchs(call):
    with pytest.raises(RuntimeError) as ours:
        call(S)
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32"])
@pytest.mark.parametrize(
    "start, end, steps",
    [
        (-math.pi, math.pi, 2000),
        (0, 1, 7),
        (-3.3, 11.7, 1001),
        (1, -1, 50),
        (0.1, 0.2, 3),
        (5, 5, 4),
        (0, 10, 5),
        (0, 9, 4),
        (-7, 13, 77),
        (2.5, 2.5, 1),
        (0, 1, 0),
    ],
)
def test_linspace_is_torchs_to_the_bit(dtype, start, end, steps):
    ours = S.linspace(start, end, steps, dtype=getattr(S, dtype)).numpy()
    theirs = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


def test_variable_is_a_new_leaf_sharing_data():
    x = S.ones(2)
    v = Variable(x, requires_grad=True)
    assert v is not x and v.requires_grad and not x.requires_grad
    assert isinstance(x, Variable) and type(v) is S.Tensor
    v.data[0] = 5.0
    assert x[0].item() == 5.0
    assert not Variable(x).requires_grad
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        Variable(S.ones(2, dtype=S.int64), requires_grad=True)


def test_legacy_constructor_takes_no_requires_grad():
    with pytest.raises(TypeError) as ours:
        S.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError) as theirs:
        torch.Tensor([1.0, 2.0], requires_grad=True)
    assert str(ours.value) == str(theirs.value)


def test_set_default_device():
    assert str(S.get_default_device()) == "cpu"
    try:
        S.set_default_device("cpu")
        assert str(S.get_default_device()) == "cpu" and str(S.zeros(1).device) == "cpu"
    finally:
        S.set_default_device(None)
    assert str(S.get_default_device()) == "cpu"


@pytest.mark.parametrize(
    "call",
    [
        lambda L, o: L.add(L.ones(3), 2.0, out=o),
        lambda L, o: L.sub(L.ones(3), 2.0, alpha=3, out=o),
        lambda L, o: L.mul(L.ones(3), 3.0, out=o),
        lambda L, o: L.div(L.ones(3), 4.0, out=o),
        lambda L, o: L.pow(L.full((3,), 2.0), 3, out=o),
        lambda L, o: L.exp(L.zeros(3), out=o),
        lambda L, o: L.clamp(L.arange(3.0), 0.5, 1.5, out=o),
        lambda L, o: L.cat([L.ones(1), L.zeros(2)], out=o),
        lambda L, o: L.stack([L.ones(3)], out=o),
    ],
)
def test_ops_write_into_out(call):
    ours, theirs = S.empty(3), torch.empty(3)
    got, want = call(S, ours), call(torch, theirs)
    assert got is ours and want is theirs
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.add(L.ones(3, requires_grad=True), 1.0, out=L.empty(3)),
        lambda L: L.exp(L.ones(3, requires_grad=True), out=L.empty(3)),
        lambda L: L.add(L.ones(3), 1.5, out=L.empty(3, dtype=L.int64)),
        lambda L: L.cat([L.ones(3, requires_grad=True)], out=L.empty(3)),
    ],
)
def test_ops_out_errors_are_torchs(call):
    with pytest.raises(RuntimeError) as ours:
        call(S)
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    assert str(ours.value) == str(theirs.value)


def _raised(lib, fn):
    try:
        fn(lib)
    except Exception as e:  # (the comparison is of the type and message)
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.multinomial(L.tensor([0.2, 0.8]), 3),
        lambda L: L.multinomial(L.ones(2, 2, 2), 1),
        lambda L: L.multinomial(L.tensor(1.0), 1),
        lambda L: L.multinomial(L.tensor([1, 2]), 1),
        lambda L: L.multinomial(L.tensor([1.0, float("inf")]), 1),
        lambda L: L.multinomial(L.tensor([1.0, float("nan")]), 1, True),
        lambda L: L.multinomial(L.tensor([-0.5, 1.5]), 1),
        lambda L: L.multinomial(L.tensor([[0.0, 0.0], [1.0, 1.0]]), 1),
        lambda L: L.multinomial(L.ones(3), 0),
        lambda L: L.multinomial(L.ones(3), -1, True),
    ],
)
def test_multinomial_refuses_as_torch(call):
    """numpy's ValueErrors (or, for num_samples=0, an empty result) were what came out."""
    assert _raised(S, call) == _raised(torch, call) is not None


def test_multinomial_without_replacement_past_the_nonzero_categories():
    """torch gives the non-zero categories first, then zero-weight ones; numpy refused."""
    for _ in range(5):
        ours = S.multinomial(S.tensor([[0.0, 0.3, 0.0, 0.7], [1.0, 0.0, 0.0, 0.0]]), 4)
        theirs = torch.multinomial(torch.tensor([[0.0, 0.3, 0.0, 0.7], [1.0, 0.0, 0.0, 0.0]]), 4)
        for o, t in zip(ours.tolist(), theirs.tolist()):
            assert sorted(o) == sorted(t) == [0, 1, 2, 3]
        assert set(ours[0, :2].tolist()) == set(theirs[0, :2].tolist()) == {1, 3}
        assert ours[1, 0].item() == theirs[1, 0].item() == 0


def test_multinomial_of_float32_softmax_over_a_large_vocabulary():
    """Weights are normalised in float64 (numpy's choice checks their sum to 1.5e-8, which
    float32 normalisation need not meet): draws in range, distinct, with torch's shape."""
    logits = np.random.default_rng(0).standard_normal((3, 50000)).astype(np.float32) * 4
    probs = S.softmax(S.tensor(logits), -1)
    drawn = S.multinomial(probs, 5)
    assert tuple(drawn.shape) == tuple(torch.multinomial(torch.tensor(logits).softmax(-1), 5).shape)
    assert drawn.dtype == S.int64 and 0 <= drawn.min().item() and drawn.max().item() < 50000
    assert all(len(set(row)) == 5 for row in drawn.tolist())
