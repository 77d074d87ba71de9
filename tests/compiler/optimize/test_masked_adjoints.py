"""Adjoints of writes through a boolean mask computed on whole arrays
(optimize/masked_adjoints.py) and masked copies made selections (specialise/masked_writes.py):
`unindex(d_z[m] * e, x, m)` -> `np.where(m, d_z * z, 0.0)` where z holds e at m, and
`top[m] = z[m]` -> `np.where(m, z, top)`. Each case against central differences in float64,
and the generated code read for the form it should (or should not) take; the cases where
the rewrite must not happen (masks that overlap a later write, a value cast on its way into
the array, a division in the chain, an array not made by a fill) keep their gathers and
their numbers.
"""

import warnings

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad

from ..specialise.test_masked_writes import sigmoid_loss, stable_sigmoid

RNG = np.random.default_rng(11)


def _close(ours, numeric):
    np.testing.assert_allclose(ours, numeric, rtol=1e-6, atol=1e-8)


def _backward(g):
    """The backward's code, without its comments (which quote the user's lines)."""
    back = g._last.source.split("# backward", 1)[1]
    return "\n".join(line.split("#")[0] for line in back.splitlines())


def overlapping(a, G):
    # the second write overlaps the first mask on [0, 0.5): z's last version no longer
    # holds the first value there, so the first value's chain must read the earlier version
    z = np.zeros_like(a)
    first = a >= 0
    second = a < 0.5
    z[first] = np.exp(-a[first])
    z[second] = np.exp(a[second]) * 2.0
    return np.sum(z * G)


def cast_on_write(a, G):
    # float32 values written into a float64 array: z[m] is the value cast, not the value
    z = np.zeros_like(a)
    m = a > 0
    z[m] = np.exp(a[m]).astype(np.float32)
    return np.sum(z * G)


def divided(a, G):
    z = np.zeros_like(a)
    m = a > 0
    z[m] = 1.0 / (1.0 + a[m])
    return np.sum(z * G)


def from_a_copy(a, G):
    z = a.copy()  # outside the mask z holds the input, not a fill: no rewrite
    m = a > 0
    z[m] = np.exp(-a[m])
    return np.sum(z * G)


def test_stable_sigmoid_adjoints_are_computed_on_whole_arrays():
    a, G = RNG.normal(scale=3.0, size=(6, 5)), RNG.normal(size=(6, 5))
    g = sourcegrad.grad(sigmoid_loss)
    _close(g(a, G), numeric_grad(sigmoid_loss, (a, G), 0))
    back = _backward(g)
    # no gather or scatter through a mask in the backward: the mask is applied by np.where
    assert "unindex" not in back and "_mask]" not in back, back
    assert back.count("np.where(") >= 2
    source = g._last.source
    # the masked copy `top[neg_mask] = z[neg_mask]` is a selection from the number 1.0
    assert "np.ones_like" not in source
    assert "np.where(neg_mask, z, 1.0)" in source.replace("stable_sigmoid_", "")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_gradient_keeps_the_dtype_and_the_sigmoids_derivative(dtype):
    a = RNG.normal(scale=4.0, size=(7, 9)).astype(dtype)
    G = RNG.normal(size=(7, 9)).astype(dtype)
    ours = sourcegrad.grad(sigmoid_loss)(a, G)
    assert ours.dtype == dtype
    s = stable_sigmoid(a.astype(np.float64))
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(ours, G * s * (1 - s), rtol=tol, atol=tol)


def test_stable_sigmoid_far_out_gives_no_warning_and_finite_gradients():
    a = np.array([[-800.0, -30.0, 0.0], [30.0, 800.0, 1.5]])
    G = np.ones_like(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grad = sourcegrad.grad(sigmoid_loss)(a, G)
    e = np.exp(-np.abs(a))  # the sigmoid's derivative, s (1 - s), without cancellation
    np.testing.assert_allclose(grad, e / (1 + e) ** 2, rtol=1e-12, atol=1e-300)


def test_a_later_overlapping_write_reads_the_earlier_version():
    a, G = RNG.normal(size=(5, 4)), RNG.normal(size=(5, 4))
    a[0, :3] = [0.1, 0.3, 0.45]  # elements both masks name
    g = sourcegrad.grad(overlapping)
    _close(g(a, G), numeric_grad(overlapping, (a, G), 0))


def test_a_value_cast_on_its_way_in_stays_a_gather():
    a, G = RNG.normal(size=(5, 4)), RNG.normal(size=(5, 4))
    g = sourcegrad.grad(cast_on_write)
    # (differences of a function rounded to float32 are too coarse: the derivative, to
    # float32's precision, whichever side of the cast the cotangent is rounded on)
    expected = np.where(a > 0, np.exp(a) * G, 0.0)
    np.testing.assert_allclose(g(a, G), expected, rtol=1e-6, atol=1e-12)
    assert "unindex(" in _backward(g) or "[m]" in _backward(g)


@pytest.mark.parametrize("fn", [divided, from_a_copy], ids=lambda f: f.__name__)
def test_chains_that_stay_gathers(fn):
    a, G = RNG.normal(size=(5, 4)), RNG.normal(size=(5, 4))
    g = sourcegrad.grad(fn)
    _close(g(a, G), numeric_grad(fn, (a, G), 0))
    assert "unindex(" in _backward(g) or "[m]" in _backward(g)


def test_vjp_keeps_the_array_not_the_part():
    a, G = RNG.normal(scale=3.0, size=(4, 6)), RNG.normal(size=(4, 6))
    out, pullback = sourcegrad.vjp(lambda x: stable_sigmoid(x), a)
    np.testing.assert_allclose(out, stable_sigmoid(a))
    s = stable_sigmoid(a)
    (grad,) = pullback(G)
    np.testing.assert_allclose(grad, G * s * (1 - s), rtol=1e-12, atol=1e-15)


def test_second_order_and_forward_mode_agree_with_differences():
    from ..fd_check import check_all

    a, G = RNG.normal(scale=2.0, size=(3, 4)), RNG.normal(size=(3, 4))
    check_all(sigmoid_loss, a, G, rtol=1e-5)


def loop_of_sigmoids(a, G):
    total = 0.0
    for k in range(3):
        total = total + np.sum(stable_sigmoid(a * (k + 1.0)) * G)
    return total


def test_inside_a_loop_the_gathers_stay_and_the_numbers_hold():
    a, G = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
    g = sourcegrad.grad(loop_of_sigmoids)
    _close(g(a, G), numeric_grad(loop_of_sigmoids, (a, G), 0))


# -- a mask's complement, `~m` (registry: invert_op, "complement") ----------------------------


def two_sided(a, G):
    y = np.ones_like(a)
    m = a < 0
    y[m] = 0.01 * a[m]
    y[~m] = a[~m] * a[~m]
    return np.sum(y * G)


def test_the_complement_of_a_mask_is_read_from_source_and_disjoint_from_it():
    a, G = RNG.normal(size=(5, 4)), RNG.normal(size=(5, 4))
    g = sourcegrad.grad(two_sided)
    _close(g(a, G), numeric_grad(two_sided, (a, G), 0))
    source = g._last.source
    assert "Traced" not in source  # (the source front end reads `~m`)
    assert "~m" in source.split("# backward", 1)[0].replace(" ", "")
    back = _backward(g)
    # m and ~m name no element in common: no zeroing of the adjoint, no gathers
    assert "zero_at" not in back and "unindex" not in back, back


def test_invert_keeps_pythons_and_numpys_meaning():
    def on_ints(a):
        return np.sum(a * (~3))  # a Python int: -4

    np.testing.assert_allclose(sourcegrad.grad(on_ints)(np.ones(3)), np.full(3, -4.0))

    def on_floats(a):
        return np.sum(~a)

    with pytest.raises(TypeError, match="invert"):
        on_floats(np.ones(3))  # numpy's own error ...
    # ... is the gradient's, though no gradient flows through `~a` and the code that would
    # run it is dropped: the analysis runs the ufunc on stand-ins of the operands' dtypes
    with pytest.raises(TypeError, match="invert"):
        sourcegrad.grad(on_floats)(np.ones(3))
