"""numba compiles the global arrays a function reads into its machine code as constants: a
global array changed in place between two calls must give the new gradient (it gave the
first call's, silently), as the numpy backend does by reading the array itself."""

import warnings

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad

pytest.importorskip("numba")

WEIGHTS = np.array([0.1, 2.0])


def weighted(w):
    return WEIGHTS[0] * np.sum(w**2) + np.sum(WEIGHTS * w)


def test_a_global_array_changed_in_place_is_read_anew_by_the_numba_code():
    saved = WEIGHTS.copy()
    w = np.array([1.0, -3.0])
    gradient = sourcegrad.grad(weighted, backend="numba")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (numba's own, on a first compile)
            for _ in range(2):
                np.testing.assert_allclose(gradient(w), numeric_grad(weighted, (w,), 0), rtol=1e-6)
            WEIGHTS[:] = [0.5, -1.0]
            np.testing.assert_allclose(gradient(w), numeric_grad(weighted, (w,), 0), rtol=1e-6)
            np.testing.assert_allclose(gradient(w), [1.5, -4.0])  # 2 W[0] w + W
    finally:
        WEIGHTS[:] = saved
