"""np.fft and complex values in the compiler (sourcegrad/ops/fft.py, ops/complex_values.py).

Real inputs through complex intermediates: the gradient, JVP and Hessian-vector product
against central finite differences (`check_all`). Complex inputs: the gradient in torch's
convention, dL/dRe(z) + 1j dL/dIm(z), against differences along the real and imaginary
parts. What has no complex rule, and a complex output, raise ComplexValueError, located.
"""

import warnings

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from tests.compiler.fd_check import check_all

R = np.random.default_rng(0)
X = R.normal(size=(3, 4))
W = R.normal(size=(3, 4)) + 1j * R.normal(size=(3, 4))
Z = R.normal(size=(3, 4)) + 1j * R.normal(size=(3, 4))
COLUMN = np.arange(3.0)[:, None]


def abs_of_complex_product(x):  # the issue's example: a ComplexWarning and a wrong gradient
    return np.sum(np.abs(x * (1 + 2j)))


def fft_power(x):
    return np.sum(np.abs(np.fft.fft(x, axis=0)) ** 2 * COLUMN)


def fft_padded_ortho(x):
    return np.sum(np.real(np.fft.fft(x, n=5, axis=1, norm="ortho")) * np.arange(5.0))


def fft_cut_forward(x):
    return np.sum(np.imag(np.fft.fft(x * W, n=2, norm="forward")) ** 2)


def ifft_cubed(x):
    return np.sum(np.real(np.fft.ifft(x * W)) ** 3)


def rfft_abs(x):
    return np.sum(np.abs(np.fft.rfft(x)) * np.arange(3.0))


def rfft_padded_angle(x):
    return np.sum(np.angle(np.fft.rfft(x, n=7, axis=0) + 0.1))


def rfft_irfft(x):
    return np.sum(np.fft.irfft(np.fft.rfft(x) * (1 + 1j)) ** 2 * np.arange(4.0))


def irfft_even_ortho(x):
    return np.sum(np.fft.irfft(x * W, n=5, norm="ortho") * np.arange(5.0))


def irfft_odd(x):
    return np.sum(np.fft.irfft(x * W, n=7) ** 2)


def fft2_sized(x):
    return np.sum(np.abs(np.fft.fft2(x * W, s=(4, 3))) ** 1.5)


def ifftn_one_axis(x):
    return np.sum(np.real(np.fft.ifftn(x * W, axes=(0,), norm="forward")) ** 2)


def rfft2_rfftn(x):
    return (
        np.sum(np.abs(np.fft.rfft2(x)) ** 2 * 0.5)
        + np.imag(np.fft.rfftn(x, s=(2, 6), axes=(0, 1)))[0, 1]
    )


def irfft2_squared(x):
    return np.sum(np.fft.irfft2(x * W) ** 2 * 0.3)


def irfftn_sized(x):
    return np.sum(np.fft.irfftn(x * W, s=(3, 5), axes=(0, 1), norm="forward") * np.arange(5.0))


def fftn_all_axes(x):
    return np.sum(np.real(np.fft.fftn(x * W)) * np.imag(np.fft.ifft2(x, norm="ortho")))


def shifts(x):
    return np.sum(np.fft.fftshift(x, axes=1) * np.arange(12.0).reshape(3, 4)) + np.sum(
        np.fft.ifftshift(x) ** 2 * np.arange(4.0)
    )


def conj_imag_exp(x):
    return np.sum(np.imag(np.conj(x * W) * np.exp(1j * x)))


def real_imag_attributes(x):
    y = x * W
    return np.sum(y.real**2 + y.imag * y.real)


def real_if_close_roundtrip(x):
    return np.sum(np.real_if_close(np.fft.ifft(np.fft.fft(x))) ** 2)


def angle_in_degrees(x):
    return np.sum(np.angle(x * W + 0.5, deg=True))


def complex_matmul(x):
    return np.sum(np.abs(W.T @ (x + 1j)) ** 2)


def holomorphic_mix(x):
    y = (x + 0.5j) ** 3 / (x * W + 2.0) + np.sqrt(x * W + 3.0) - np.cumsum(x * W, axis=1)
    return np.sum(
        np.abs(np.einsum("ij,kj->ik", y, W) + np.where(x > 0, y, 2 * y)[:, :3].T @ W[:, :3])
    )


def item_writes(x):
    y = np.zeros((3, 4), dtype=complex)
    y[1] = x[0] * 1j
    y[:, 2] = y[:, 2] + x[:, 1] * W[:, 0]
    return np.sum(np.abs(y + np.tanh(x * 0.3j)) ** 2)


def complex_vdot(x):
    return np.abs(np.vdot(x * W, W))


REAL_CASES = [
    holomorphic_mix,
    item_writes,
    abs_of_complex_product,
    fft_power,
    fft_padded_ortho,
    fft_cut_forward,
    ifft_cubed,
    rfft_abs,
    rfft_padded_angle,
    rfft_irfft,
    irfft_even_ortho,
    irfft_odd,
    fft2_sized,
    ifftn_one_axis,
    rfft2_rfftn,
    irfft2_squared,
    irfftn_sized,
    fftn_all_axes,
    shifts,
    conj_imag_exp,
    real_imag_attributes,
    real_if_close_roundtrip,
    angle_in_degrees,
    complex_matmul,
]


@pytest.mark.parametrize("f", REAL_CASES, ids=lambda f: f.__name__)
def test_real_input_through_complex_values(f):
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)  # no complex part dropped
        check_all(f, X)


def test_the_issue_example_has_the_right_gradient():
    x = np.array([0.5, -1.2, 2.0])
    np.testing.assert_allclose(
        sourcegrad.grad(abs_of_complex_product)(x), np.sign(x) * np.sqrt(5.0)
    )


def numeric_complex_grad(f, z, eps=1e-6):
    """dL/dRe(z) + 1j dL/dIm(z), by central differences."""
    g = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        for direction in (1.0, 1j):
            step = np.zeros_like(z)
            step[i] = eps * direction
            g[i] += direction * (f(z + step) - f(z - step)) / (2 * eps)
    return g


def abs_squared(z):
    return np.sum(np.abs(z) ** 2)


def fft_of_complex(z):
    return np.sum(np.abs(np.fft.fft(z)) * np.arange(4.0))


def angle_of_product(z):
    return np.sum(np.angle(z * W))


def real_of_exp(z):
    return np.sum(np.real(np.exp(z) * W))


def imag_squared(z):
    return np.sum(np.imag(z) ** 2)


def real_part_only(z):
    return np.sum(np.real(z))


def irfft_of_complex(z):
    return np.sum(np.fft.irfft(z, n=6) ** 2 * np.arange(6.0))


@pytest.mark.parametrize(
    "f",
    [
        abs_squared,
        fft_of_complex,
        angle_of_product,
        real_of_exp,
        imag_squared,
        real_part_only,
        irfft_of_complex,
    ],
    ids=lambda f: f.__name__,
)
def test_complex_input_gets_torchs_gradient(f):
    g = sourcegrad.grad(f)(Z)
    assert g.dtype == Z.dtype
    np.testing.assert_allclose(g, numeric_complex_grad(f, Z), rtol=1e-6, atol=1e-8)


def test_abs_squared_gradient_is_twice_z():
    # torch's convention: d|z|^2 = 2 Re(conj(z) dz), the gradient 2 z (JAX's would be 2 conj(z))
    np.testing.assert_allclose(sourcegrad.grad(abs_squared)(Z), 2 * Z)


def complex_output(x):
    return np.sum(x * 1j)


def complex_arcsinh(x):
    return np.sum(np.abs(np.arcsinh(x * W)))


def complex_maximum(x):
    return np.sum(np.abs(np.maximum(x * 1j, 0.5)))


@pytest.mark.parametrize(
    "f, what",
    [
        (complex_output, "returns a complex value"),
        (complex_vdot, "vdot of a complex value"),
        (complex_arcsinh, "arcsinh of a complex value"),
        (complex_maximum, "maximum of a complex value"),
    ],
)
def test_what_has_no_complex_rule_is_refused_at_its_line(f, what):
    with pytest.raises(errors.ComplexValueError, match=what) as info:
        sourcegrad.grad(f)(X)
    assert "test_fft_complex.py" in str(info.value)


def real_if_close_kept_complex(x):
    return np.sum(np.abs(np.real_if_close(x * 1j)))


def test_real_if_close_of_a_complex_result_is_refused_when_it_runs():
    # the compiled gradient is made for the real result its stand-ins give
    with pytest.raises(errors.ComplexValueError, match="real_if_close"):
        sourcegrad.grad(real_if_close_kept_complex)(X)


def test_forward_mode_refuses_complex_inputs():
    with pytest.raises(errors.NonDifferentiableInputError):
        sourcegrad.jvp(abs_squared, (Z,), (Z,))


def test_float32_keeps_its_precision():
    x = X.astype(np.float32)
    g = sourcegrad.grad(rfft_abs)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, sourcegrad.grad(rfft_abs)(X), rtol=1e-4, atol=1e-4)
    z = Z.astype(np.complex64)
    assert sourcegrad.grad(abs_squared)(z).dtype == np.complex64


def fft_into_a_buffer(x):
    spectrum = np.zeros(x.shape, dtype=complex)
    np.fft.fft(x, axis=0, out=spectrum)
    return np.sum(np.abs(spectrum) * COLUMN)


def test_out_of_an_fft_holds_the_result():
    # (out= of a function that is not a ufunc was ignored: a zero gradient)
    check_all(fft_into_a_buffer, X)


# Values that become complex in a loop: the compiler cannot tell their type from one trip to
# the next, so the backward decides (real_like) and ops without complex rules are refused.
def complex_sum_in_a_loop(x):
    s = 0.0
    for i in range(3):
        s = s + x[i] * (1 + 2j)
    return np.abs(s)


def becomes_complex_in_a_loop(x):
    s = x * 1.0
    for _ in range(3):
        s = np.tanh(s) * (0.5 + 1j)
    return np.sum(np.abs(s))


def sign_of_a_loop_value(x):
    s = x * 1.0
    for _ in range(3):
        s = np.tanh(s) * (0.5 + 1j)
        s = np.sign(s) * s
    return np.sum(np.abs(s))


@pytest.mark.parametrize(
    "f", [complex_sum_in_a_loop, becomes_complex_in_a_loop], ids=lambda f: f.__name__
)
def test_values_that_become_complex_in_a_loop(f):
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        check_all(f, X[0])


def test_sign_of_a_value_that_may_be_complex_is_refused():
    # (np.sign is piecewise constant for real numbers only: it was a silently wrong gradient)
    with pytest.raises(errors.ComplexValueError, match="np.sign"):
        sourcegrad.grad(sign_of_a_loop_value)(X[0])
