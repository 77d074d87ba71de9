"""std, var, std_mean and var_mean of bool and integer tensors against torch: torch raises
RuntimeError; they were computed in float64."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.tensor([1, 2, 4]).std(),
        lambda m: m.tensor([1, 2, 4]).var(0),
        lambda m: m.var(m.tensor([[1, 2], [3, 5]], dtype=m.int32), dim=1, correction=0),
        lambda m: m.tensor([True, False]).var(),
        lambda m: m.std_mean(m.tensor([1, 2, 4])),
        lambda m: m.var_mean(m.tensor([1, 2, 4]), 0),
    ],
)
def test_moments_of_integers_raise_as_torch(call):
    with pytest.raises(RuntimeError) as want:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(sg)
    assert str(got.value) == str(want.value)


def test_moments_of_floats_still_match_torch():
    data = np.array([[1.0, 2.0, 4.0], [0.5, -3.0, 2.0]])
    for name in ("std_mean", "var_mean"):
        want = getattr(torch, name)(torch.tensor(data), 1, correction=0)
        got = getattr(sg, name)(sg.tensor(data), 1, correction=0)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-14)
