"""Every straight-line case's compiled gradient agrees with central finite differences."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from tests.compiler.cases import CASES


@pytest.mark.parametrize("fn, make_args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradient_matches_finite_differences(fn, make_args, wrt):
    args = make_args(np.random.default_rng(0))
    grads = sourcegrad.grad(fn, wrt=wrt)(*args)
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    grads = grads if isinstance(wrt, tuple) else (grads,)
    for pos, g in zip(positions, grads):
        expected = numeric_grad(fn, args, pos)
        x = args[pos]  # (a 0-d array's gradient: a numpy scalar, as numpy's ufuncs give)
        assert type(g) is (x.dtype.type if type(x) is np.ndarray and x.ndim == 0 else type(x))
        assert np.shape(g) == np.shape(args[pos])
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


def test_there_are_at_least_forty_cases():
    assert len(CASES) >= 40
