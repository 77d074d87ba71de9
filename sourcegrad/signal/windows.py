"""`sourcegrad.signal.windows`, as `torch.signal.windows`: bartlett, blackman, cosine,
exponential, gaussian, general_cosine, general_hamming, hamming, hann, kaiser, nuttall.

Each takes the window length M (an int >= 0) and torch's keywords (`sym=True`: a symmetric
window; False: the periodic one, the symmetric window of length M + 1 without its last point;
`dtype` float32 or float64, the default dtype if None; `device`, `requires_grad`); returns a
1-D Tensor, a leaf. Invalid arguments raise torch's ValueError and message. The formulas are
those of `eager/windows.py` (the `torch.*_window` functions), computed in float64 and cast.

Imports: `eager.windows` and `eager.dtypes`.
"""

from __future__ import annotations

import numpy as np

from ..eager import dtypes
from ..eager import windows as _w  # (the formulas)

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]


def _make(name, formula, M, sym, dtype, device, requires_grad):  # noqa: N803 - torch's name
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    if dt.dtype not in (np.float32, np.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    return _w.window(name, formula, M, not sym, dt, device, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):  # noqa: N803
    """sum_k (-1)^k a_k cos(2 pi k n / (M - 1))."""
    if not isinstance(a, (list, tuple)):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    formula = _w.cosine_sum(tuple(float(c) for c in a))
    return _make("general_cosine", formula, M, sym, dtype, device, requires_grad)


def general_hamming(
    M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False
):  # noqa: N803
    """alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(
        M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, device=device, requires_grad=requires_grad
    )


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):  # noqa: N803
    """0.5 - 0.5 cos(2 pi n / (M - 1))."""
    return general_hamming(
        M, alpha=0.5, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad
    )


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):  # noqa: N803
    """0.54 - 0.46 cos(2 pi n / (M - 1))."""
    return general_hamming(M, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):  # noqa: N803
    """Nuttall's four-term cosine window."""
    return general_cosine(
        M,
        a=[0.3635819, 0.4891775, 0.1365995, 0.0106411],
        sym=sym,
        dtype=dtype,
        device=device,
        requires_grad=requires_grad,
    )


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):  # noqa: N803
    """0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))."""
    formula = _w.cosine_sum((0.42, 0.5, 0.08))
    return _make("blackman", formula, M, sym, dtype, device, requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):  # noqa: N803
    """The triangle 1 - |2n / (M - 1) - 1|."""
    return _make("bartlett", _w.bartlett, M, sym, dtype, device, requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):  # noqa: N803
    """I0(beta sqrt(1 - ((n - c) / c)^2)) / I0(beta), c = (M - 1) / 2."""
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _make("kaiser", _w.kaiser(beta), M, sym, dtype, device, requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):  # noqa: N803
    """sin(pi (n + 0.5) / M)."""
    return _make(
        "cosine", lambda n, N: np.sin(np.pi * (n + 0.5) / N), M, sym, dtype, device, requires_grad
    )


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):  # noqa: N803
    """exp(-((n - c) / std)^2 / 2), c = (M - 1) / 2."""
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _make(
        "gaussian",
        lambda n, N: np.exp(-0.5 * ((n - (N - 1) / 2.0) / std) ** 2),
        M,
        sym,
        dtype,
        device,
        requires_grad,
    )


def exponential(
    M,
    *,
    center=None,
    tau=1.0,
    sym=True,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,  # noqa: N803
):
    """exp(-|n - center| / tau), center (M - 1) / 2 by default (a symmetric window's only)."""
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")

    def formula(n, N):  # noqa: N803
        c = (N - 1) / 2.0 if center is None else center
        return np.exp(-np.abs(n - c) / tau)

    return _make("exponential", formula, M, sym, dtype, device, requires_grad)
