"""Integer division by zero against torch: //, %, fmod and div(rounding_mode=...) raise
RuntimeError("ZeroDivisionError") where numpy silently returned 0 (or INT_MIN)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402

_CALLS = [
    lambda m: m.tensor([1, 4]) // m.tensor([2, 0]),
    lambda m: m.tensor([1, 4]) % 0,
    lambda m: m.remainder(5, m.tensor([0, 1])),
    lambda m: m.fmod(m.tensor([1, 4], dtype=m.int32), 0),
    lambda m: m.div(m.tensor([1, 4]), 0, rounding_mode="trunc"),
    lambda m: m.div(m.tensor([1, 4]), m.tensor([0, 1]), rounding_mode="floor"),
    lambda m: m.tensor([1, 2]).floor_divide_(m.tensor([1, 0])),
    lambda m: m.tensor([1, 2]).remainder_(m.tensor([1, 0])),
    lambda m: m.tensor([1, 2], dtype=m.uint8).div_(0, rounding_mode="floor"),
]


@pytest.mark.parametrize("call", _CALLS)
def test_integer_division_by_zero_raises_as_torch(call):
    with pytest.raises(RuntimeError) as want:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(sg)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.tensor([-7, 7, 0]) // m.tensor([2, -2, 3]),
        lambda m: m.tensor([-7, 7, 0]) % m.tensor([2, -2, 3]),
        lambda m: m.fmod(m.tensor([-7, 7]), 3),
        lambda m: m.tensor([1.0, -1.0, 0.0]) // 0.0,
    ],
)
def test_division_without_an_integer_zero_still_matches_torch(call):
    want, got = call(torch), call(sg)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
