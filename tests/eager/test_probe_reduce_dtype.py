"""sum/prod/mean with an explicit dtype against torch: the dtype is the accumulator's, so a
uint8 sum wraps in uint8 (numpy summed it in uint64, a dtype torch has not: KeyError) and
an int8 sum stays int8 (it came back int64, unwrapped)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.tensor([200, 100], dtype=m.uint8).sum(dtype=m.uint8),
        lambda m: m.tensor([200, 100], dtype=m.uint8).sum(dtype=m.int8),
        lambda m: m.tensor([100, 100], dtype=m.int8).sum(dtype=m.int8),
        lambda m: m.tensor([[100, 100], [3, 4]], dtype=m.int8).sum(1, dtype=m.int16),
        lambda m: m.tensor([200, 100], dtype=m.uint8).prod(dtype=m.uint8),
        lambda m: m.tensor([True, True]).sum(dtype=m.bool),
        lambda m: m.tensor([200.0, 100.0]).mean(dtype=m.float16),
    ],
)
def test_reduction_with_a_dtype_matches_torch(call):
    want, got = call(torch), call(sg)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
