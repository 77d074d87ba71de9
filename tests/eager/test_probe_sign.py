"""torch.sign against torch where numpy's np.sign differs: NaN (torch: 0), -0.0 (torch: +0),
bools (torch keeps them; numpy has no loop) and complex inputs (torch refuses them)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402

_SPECIAL = [-0.0, 0.0, np.nan, -np.nan, -2.5, 3.0, -np.inf, np.inf]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_sign_of_nan_and_negative_zero_is_torchs(dtype):
    data = np.array(_SPECIAL, dtype=dtype)
    want = torch.sign(torch.from_numpy(data)).numpy()
    got = sg.sign(sg.tensor(data)).numpy()
    assert got.dtype == want.dtype
    # bit for bit: the signs of the zeros too, and no NaN where torch has 0
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)


def test_sign_in_place_and_its_gradient_match_torch():
    data = np.array(_SPECIAL)
    results = []
    for lib in (torch, sg):
        x = lib.tensor(data, requires_grad=True)
        y = x.sign()
        (y * lib.arange(8.0, dtype=lib.float64)).sum().backward()
        z = lib.tensor(data)
        z.sign_()
        results.append((y.detach().numpy(), x.grad.numpy(), z.numpy()))
    for want, got in zip(*results):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("values", [[True, False], [-3, 0, 2]])
def test_sign_of_bools_and_integers_keeps_the_dtype(values):
    want = torch.sign(torch.tensor(values))
    got = sg.sign(sg.tensor(values))
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_sign_of_complex_raises_as_torch():
    with pytest.raises(NotImplementedError, match="torch.sgn") as want:
        torch.sign(torch.tensor([1 + 1j]))
    with pytest.raises(NotImplementedError) as got:
        sg.sign(sg.tensor([1 + 1j]))
    assert str(got.value) == str(want.value)
