"""`sourcegrad.fft`, as `torch.fft`: the eager Tensor's discrete Fourier transforms
(`sourcegrad.eager.fft`): fft, ifft, rfft, irfft, fft2, ifft2, rfft2, irfft2, fftn, ifftn,
rfftn, irfftn, fftshift, ifftshift.

Imports: the eager package only.
"""

from .eager.fft import (
    fft,
    fft2,
    fftn,
    fftshift,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftn,
)

__all__ = [
    "fft",
    "fft2",
    "fftn",
    "fftshift",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftn",
]
