"""sort(descending=True), argsort and topk against torch where negating the data (the old
way to sort descending) was wrong: NaN (torch's largest: first, numpy's -NaN stayed last),
unsigned integers (-x wraps) and INT_MIN (-x overflows)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402

_DATA = [
    np.array([1.0, np.nan, 3.0, np.nan, -np.inf, np.inf, 3.0]),
    np.array([0, 1, 255, 7, 1], dtype=np.uint8),
    np.array([np.iinfo(np.int64).min, 5, -3, 5]),
    np.array([[2.0, np.nan, 2.0], [np.nan, 0.5, -1.0]]),
    np.array([True, False, True]),
]


@pytest.mark.parametrize("data", _DATA, ids=range(len(_DATA)))
def test_descending_sort_matches_torch(data):
    want = torch.sort(torch.from_numpy(data.copy()), descending=True, stable=True)
    got = sg.sort(sg.tensor(data), descending=True, stable=True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(
        sg.argsort(sg.tensor(data), descending=True, stable=True).numpy(), want[1].numpy()
    )


@pytest.mark.parametrize("data", _DATA[:3], ids=range(3))
def test_topk_of_nan_and_unsigned_values_matches_torch(data):
    want = torch.topk(torch.from_numpy(data.copy()), 2)
    got = sg.topk(sg.tensor(data), 2)
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())


def test_descending_sort_gradient_matches_torch():
    data = _DATA[3]
    grads = []
    for lib in (torch, sg):
        x = lib.tensor(data, requires_grad=True)
        values = x.sort(dim=1, descending=True, stable=True)[0]
        (values.nan_to_num() * lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])
