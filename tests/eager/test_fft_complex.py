"""sourcegrad.fft and complex tensors against torch: values, gradients, second derivatives
(create_graph) and node names; real inputs through complex intermediates and complex inputs
(torch's convention: the gradient dL/dRe + 1j dL/dIm). An op with no complex rule is refused.
"""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors

torch = pytest.importorskip("torch")

R = np.random.default_rng(3)
X = R.normal(size=(3, 4))
Z = R.normal(size=(3, 4)) + 1j * R.normal(size=(3, 4))
W = R.normal(size=(3, 4)) + 1j * R.normal(size=(3, 4))

# name: (input, fn(T, x) -> a real scalar, the node of fn's first op or None). (Where n or s
# pads or cuts the input, torch records a ConstantPadNd or Slice node before the transform's;
# here the transform's one node does both.)
CASES = {
    "abs of a complex product": (X, lambda T, x: (x * (1 + 2j)).abs().sum(), "MulBackward0"),
    "fft": (X, lambda T, x: (T.fft.fft(x, dim=0).abs() ** 2).sum(), "FftR2CBackward0"),
    "fft of complex": (Z, lambda T, x: (T.fft.fft(x, n=6, norm="ortho").abs() ** 2).sum(), None),
    "ifft": (Z, lambda T, x: (T.fft.ifft(x, n=3, dim=0).real ** 3).sum(), "FftC2CBackward0"),
    "rfft": (X, lambda T, x: (T.fft.rfft(x, n=6, norm="ortho").abs() ** 3).sum(), None),
    "irfft": (Z, lambda T, x: (T.fft.irfft(x, n=5) ** 2).sum(), None),
    "irfft odd": (
        Z,
        lambda T, x: (T.fft.irfft(x, n=7, norm="forward") ** 2).sum(),
        "FftC2RBackward0",
    ),
    "fft2": (Z, lambda T, x: (T.fft.fft2(x * T.tensor(W), s=(4, 3)).abs() ** 2).sum(), None),
    "ifft2": (X, lambda T, x: T.fft.ifft2(x, norm="forward").imag.sum() ** 2, None),
    "fftn": (Z, lambda T, x: (T.fft.fftn(x, dim=(1,)).abs() ** 1.5).sum(), "FftC2CBackward0"),
    "ifftn": (Z, lambda T, x: T.real(T.fft.ifftn(x, norm="forward") ** 2).sum(), "FftC2CBackward0"),
    "rfft2": (X, lambda T, x: T.angle(T.fft.rfft2(x) + 0.1).sum(), "FftR2CBackward0"),
    "rfftn": (X, lambda T, x: (T.fft.rfftn(x, s=(2, 6)).abs() ** 2).sum(), None),
    "rfft unpadded": (
        X,
        lambda T, x: (T.fft.rfft(x, norm="ortho").abs() ** 3).sum(),
        "FftR2CBackward0",
    ),
    "irfft2": (Z, lambda T, x: (T.fft.irfft2(x) ** 2).sum(), "FftC2RBackward0"),
    "irfftn": (Z, lambda T, x: (T.fft.irfftn(x, s=(3, 6)) ** 2).sum(), "FftC2RBackward0"),
    "shifts": (
        X,
        lambda T, x: (
            (T.fft.fftshift(x, dim=1) * T.arange(12.0).reshape(3, 4)).sum()
            + (T.fft.ifftshift(x) ** 2 * T.arange(4.0)).sum()
        ),
        None,
    ),
    "shift of complex": (
        Z,
        lambda T, x: (T.fft.fftshift(x).abs() * T.arange(4.0)).sum(),
        "RollBackward0",
    ),
    "abs squared": (Z, lambda T, x: (x.abs() ** 2).sum(), "AbsBackward0"),
    "conj and imag": (Z, lambda T, x: (T.imag(T.conj(x) * T.exp(x)) ** 2).sum(), "ConjBackward0"),
    "real and imag": (Z, lambda T, x: ((x * x).real * x.imag).sum(), "MulBackward0"),
    "angle": (Z, lambda T, x: T.angle(x * T.tensor(W)).sum(), "MulBackward0"),
    "matmul": (Z, lambda T, x: ((x @ T.tensor(W.T)).abs() ** 2).sum(), "MmBackward0"),
}


def _side(T, fn, a):
    """(value, gradient, second derivative along v, the first op's node name)."""
    x = T.tensor(a, requires_grad=True)
    y = fn(T, x)
    first = y.grad_fn
    while (
        first is not None
        and first.next_functions
        and first.next_functions[0][0] is not None
        and type(first.next_functions[0][0]).__name__ != "AccumulateGrad"
    ):
        first = first.next_functions[0][0]
    (g,) = T.autograd.grad(y, [x], create_graph=True)
    v = T.tensor(np.full(a.shape, 0.3 + (0.1j if np.iscomplexobj(a) else 0.0)))
    (h,) = T.autograd.grad(T.real(g * v).sum(), [x], allow_unused=True)
    return (
        y.detach().numpy(),
        g.detach().numpy(),
        None if h is None else h.detach().numpy(),
        type(first).__name__,
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    a, fn, node = CASES[name]
    ours, theirs = _side(sourcegrad, fn, a), _side(torch, fn, a)
    for got, expected in zip(ours[:3], theirs[:3]):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert ours[1].dtype == a.dtype
    if node is not None:
        assert ours[3] == theirs[3] == node


def test_complex_gradient_is_torchs_convention():
    # d|z|^2 = 2 Re(conj(z) dz): the gradient 2 z (JAX's grad would give 2 conj(z))
    z = sourcegrad.tensor(Z, requires_grad=True)
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * Z)


def test_numpy_functions_dispatch_on_tensors():
    x = sourcegrad.tensor(X, requires_grad=True)
    y = np.fft.rfft2(x)
    assert type(y.grad_fn).__name__ == "FftR2CBackward0"
    (np.abs(y) ** 2).sum().backward()
    t = torch.tensor(X, requires_grad=True)
    (torch.fft.rfft2(t).abs() ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    z = sourcegrad.tensor(Z, requires_grad=True)
    out = np.real(np.conj(z) * np.exp(z)).sum() + np.angle(z).sum() + np.imag(z).sum()
    out.backward()
    tz = torch.tensor(Z, requires_grad=True)
    (
        torch.real(torch.conj(tz) * torch.exp(tz)).sum()
        + torch.angle(tz).sum()
        + torch.imag(tz).sum()
    ).backward()
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-12)


def test_an_op_without_a_complex_rule_is_refused():
    z = sourcegrad.tensor(Z, requires_grad=True)
    # (torch's own error: its kernel has no complex dtype)
    with pytest.raises(RuntimeError, match="maximum not implemented for complex tensors"):
        sourcegrad.maximum(z * 2, z)


def test_backward_of_a_complex_scalar_is_refused_as_torch_does():
    z = sourcegrad.tensor(Z, requires_grad=True)
    with pytest.raises(RuntimeError, match="only for real scalar outputs"):
        (z * 2).sum().backward()


def test_float32_against_torch():
    x32 = X.astype(np.float32)
    ours = sourcegrad.tensor(x32, requires_grad=True)
    theirs = torch.tensor(x32, requires_grad=True)
    y, t = sourcegrad.fft.rfft(ours), torch.fft.rfft(theirs)
    assert y.dtype == sourcegrad.complex64
    (y.abs() ** 2).sum().backward()
    (t.abs() ** 2).sum().backward()
    assert ours.grad.dtype == sourcegrad.float32
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)
