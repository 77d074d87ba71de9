"""Control flow, calls, closures and mutation: compiled gradients agree with finite differences."""
import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad

from .control_cases import CONTROL_CASES

IDS = [f"{c[0].__name__}-{i}" for i, c in enumerate(CONTROL_CASES)]


@pytest.mark.parametrize("fn, make_args, wrt", CONTROL_CASES, ids=IDS)
def test_gradient_matches_finite_differences(fn, make_args, wrt):
    args = make_args(np.random.default_rng(0))
    grads = sourcegrad.grad(fn, wrt=wrt)(*args)
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    grads = grads if isinstance(wrt, tuple) else (grads,)
    for pos, g in zip(positions, grads):
        expected = numeric_grad(fn, args, pos)
        assert np.shape(g) == np.shape(args[pos])
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


def test_at_least_forty_functions():
    assert len({c[0] for c in CONTROL_CASES}) >= 40
