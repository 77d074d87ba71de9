"""torch.unique against torch: NaNs are each their own value (numpy's default merges them),
and `dim` gives the unique slices along it (it was ignored: the flattened unique values)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402

_ROWS = np.array([[1, 2, 2], [0, 5, 5], [1, 2, 2], [0, 5, 4]])


@pytest.mark.parametrize(
    "data, dim",
    [
        (np.array([3.0, np.nan, 1.0, np.nan, 3.0]), None),
        (_ROWS, None),
        (_ROWS, 0),
        (_ROWS, 1),
        (_ROWS, -1),
        (_ROWS.astype(float), 0),
    ],
)
def test_unique_values_inverse_and_counts_match_torch(data, dim):
    want = torch.unique(torch.tensor(data), return_inverse=True, return_counts=True, dim=dim)
    got = sg.unique(sg.tensor(data), return_inverse=True, return_counts=True, dim=dim)
    for a, b in zip(got, want):
        assert str(a.dtype) == str(b.dtype)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
