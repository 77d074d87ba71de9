"""A helper compiled by numba (`@numba.njit`) called from a differentiated function: its
Python function (`py_func`) is inlined, as any helper's, where it was refused (the trace
called numba's dispatcher on traced values)."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad

numba = pytest.importorskip("numba")


@numba.njit
def _softplus(x):
    return np.log1p(np.exp(x))


@numba.njit(cache=False)
def _scaled(x, k):
    return k * x * x


def loss(x):
    return np.sum(_softplus(x) * _scaled(x, 1.5))


def test_a_numba_helper_is_differentiated_through_its_python_function():
    x = np.array([0.3, -1.2, 2.0])
    gradient = sourcegrad.grad(loss)
    np.testing.assert_allclose(gradient(x), numeric_grad(loss, (x,), 0), rtol=1e-6)
    assert "np.log1p(" in gradient.source  # (the helper's body, inlined)
