"""Second order through np.cumprod: its adjoint (runtime.cumprod_grad) has forward mode and a
VJP of its own, so Hessians, Hessian-vector products (forward over reverse) and reverse over
reverse reach cumprod. They were refused ("cumprod_grad has no forward-mode rule"). Each
against central differences of the (separately tested) gradient, with x free of zeros and
with zeros (the O(n^3) branch), for every axis form."""

import numpy as np
import pytest

import sourcegrad

from ..fd_check import check_all, check_every_argument_to_second_order


def flat(x):
    return np.sum(np.cumprod(x) ** 2) + np.sum(np.sin(np.cumprod(x)))


def rows(x):
    return np.sum(np.cumprod(x, axis=1) * np.cos(x))


def columns(x):
    return np.sum(np.cumprod(x, axis=0) ** 3)


def weighted(x, w):
    return np.sum(w * np.cumprod(x * w, axis=-1))


INPUTS = {
    "no zeros": np.array([[0.9, -1.2, 0.7, 1.1], [1.3, 0.8, -0.6, 1.05]]),
    "one zero": np.array([[0.9, 0.0, 0.7, 1.1], [1.3, 0.8, -0.6, 1.05]]),
    "two zeros": np.array([[0.0, -1.2, 0.0, 1.1], [1.3, 0.8, 0.0, 1.05]]),
}


@pytest.mark.parametrize("f", [flat, rows, columns], ids=lambda f: f.__name__)
@pytest.mark.parametrize("which", list(INPUTS))
def test_hvp_through_cumprod_matches_differences_of_the_gradient(f, which):
    check_all(f, INPUTS[which])


@pytest.mark.parametrize("which", list(INPUTS))
def test_hessian_through_cumprod_is_symmetric_and_matches_differences(which):
    x = INPUTS[which][0]
    hessian = sourcegrad.hessian(flat)(x)
    gradient = sourcegrad.grad(flat)
    eps = 1e-6
    columns_ = [(gradient(x + eps * e) - gradient(x - eps * e)) / (2 * eps) for e in np.eye(x.size)]
    np.testing.assert_allclose(hessian, np.array(columns_).T, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("which", ["no zeros", "one zero"])
def test_reverse_over_reverse_through_cumprod_for_both_arguments(which):
    w = np.array([[0.5, 1.5, -0.7, 1.2], [1.1, -0.4, 0.9, 0.3]])
    check_every_argument_to_second_order(weighted, (INPUTS[which], w))
