"""torch.where with a Python int its integer result dtype cannot hold, against torch:
RuntimeError (numpy wrapped it silently: where(c, int8 tensor, 1000) gave -24)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402

_COND = [True, False]


@pytest.mark.parametrize(
    "dtype, value",
    [("int8", 1000), ("uint8", 256), ("int16", 40000), ("int32", 2**31), ("int64", 2**63)],
)
def test_where_refuses_an_overflowing_int_as_torch(dtype, value):
    def call(m, swap=False):
        t = m.tensor([1, 0], dtype=getattr(m, dtype))
        return m.where(m.tensor(_COND), value, t) if swap else m.where(m.tensor(_COND), t, value)

    for swap in (False, True):
        with pytest.raises(RuntimeError) as want:
            call(torch, swap)
        with pytest.raises(RuntimeError) as got:
            call(sg, swap)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize(
    "dtype, value",
    [("uint8", -1), ("int8", 127), ("int8", 200.0), ("bool", 2), ("int32", -(2**31))],
)
def test_where_with_a_scalar_that_fits_or_promotes_matches_torch(dtype, value):
    want = torch.where(
        torch.tensor(_COND), torch.tensor([1, 0], dtype=getattr(torch, dtype)), value
    )
    got = sg.where(sg.tensor(_COND), sg.tensor([1, 0], dtype=getattr(sg, dtype)), value)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
