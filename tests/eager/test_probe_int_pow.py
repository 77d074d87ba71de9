"""Integer tensors to negative integer powers against torch: a tensor exponent is computed
(1 for a base of 1, +-1 for -1, else 0), a negative Python int exponent raises RuntimeError;
numpy raised ValueError for both."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402

_BASE = [0, 1, -1, -1, 2, -3, 5]
_EXP = [-1, -2, -2, -3, -1, -2, 2]


def _same(got, want):
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.tensor(_BASE) ** m.tensor(_EXP),
        lambda m: m.pow(m.tensor(_BASE, dtype=m.int8), m.tensor(-1)),
        lambda m: 2 ** m.tensor(_EXP),
        lambda m: m.pow(-1, m.tensor(_EXP)),
        lambda m: m.tensor(_BASE).pow_(m.tensor(_EXP)),
        lambda m: m.tensor(_BASE) ** m.tensor(_EXP, dtype=m.float64),
    ],
)
def test_integer_to_negative_tensor_power_matches_torch(call):
    _same(call(sg), call(torch))


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.tensor(_BASE) ** -1,
        lambda m: m.tensor(3) ** -2,
        lambda m: m.tensor([True]) ** -1,
        lambda m: m.tensor(_BASE, dtype=m.uint8).pow(-1),
        lambda m: m.tensor(_BASE).pow_(-2),
    ],
)
def test_integer_to_negative_int_power_raises_as_torch(call):
    with pytest.raises(RuntimeError) as want:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(sg)
    assert str(got.value) == str(want.value)
