"""torch's window functions: `hann_window`, `hamming_window`, `blackman_window`,
`bartlett_window`, `kaiser_window` (`sourcegrad.<name>`) and `torch.signal.windows`' (`hann`,
`hamming`, `blackman`, `bartlett`, `kaiser`, `cosine`, `gaussian`, `exponential`, `nuttall`,
`general_cosine`, `general_hamming`; the module `sourcegrad.signal.windows`).

Takes a window length (an int >= 0) and torch's keyword arguments (`periodic` for the
`*_window` functions, `sym` for signal.windows: a periodic window is the symmetric one of
length + 1 without its last point; `dtype`, a floating dtype, the default dtype if None;
`device`, `requires_grad`, `layout`); returns a 1-D Tensor, a leaf (a window is a factory:
no input to differentiate). Lengths 0 and 1 give an empty window and [1.], as torch's. The
values are computed in float64 and cast, so a float32 window is torch's to rounding.

Imports: `dtypes`, `factories` and `surface` (layer 4, beside `factories.py`).
"""

from __future__ import annotations

import operator

import numpy as np

from . import dtypes
from .factories import tensor
from .surface import export


def _length(name, window_length):
    if isinstance(window_length, bool) or not isinstance(window_length, (int, np.integer)):
        try:
            window_length = operator.index(window_length)
        except TypeError:
            raise TypeError(
                f"{name}(): argument 'window_length' (position 1) must be int, not "
                f"{type(window_length).__name__}"
            ) from None
    if window_length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={window_length}"
        )
    return int(window_length)


def _float_dtype(name, dtype):
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    if dt.dtype.kind != "f":
        raise RuntimeError(
            f"{name} expects floating point dtypes, got: TensorOptions(dtype={dt._c_name}, "
            "device=cpu, layout=Strided (default), requires_grad=false (default), "
            "pinned_memory=false, memory_format=(nullopt))"
        )
    return dt


def window(name, formula, window_length, periodic, dtype, device, requires_grad):
    """The window `formula(n, N)` (n = 0..N-1, float64) of length window_length."""
    n = _length(name, window_length)
    dt = _float_dtype(name, dtype)
    if n <= 1:
        values = np.ones(n)
    else:
        full = n + 1 if periodic else n
        values = formula(np.arange(full, dtype=np.float64), full)[:n]
    return tensor(values, dtype=dt, device=device, requires_grad=requires_grad)


def cosine_sum(coefficients):
    """sum_k (-1)^k a_k cos(2 pi k n / (N - 1)): hann, hamming, blackman, nuttall."""

    def formula(n, N):  # noqa: N803 - the window's length, as the formulas name it
        phase = 2.0 * np.pi * n / (N - 1)
        return sum((-1.0) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))

    return formula


def bartlett(n, N):  # noqa: N803
    return 1.0 - np.abs(2.0 * n / (N - 1) - 1.0)


def kaiser(beta):
    def formula(n, N):  # noqa: N803
        alpha = (N - 1) / 2.0
        inside = np.clip(1.0 - ((n - alpha) / alpha) ** 2, 0.0, None)
        return np.i0(beta * np.sqrt(inside)) / np.i0(beta)

    return formula


@export("hann_window", methods=())
def hann_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
    requires_grad=False,
):  # fmt: skip
    """torch.hann_window: 0.5 - 0.5 cos(2 pi n / (N - 1))."""
    formula = cosine_sum((0.5, 0.5))
    return window("hann_window", formula, window_length, periodic, dtype, device, requires_grad)


@export("hamming_window", methods=())
def hamming_window(
    window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None,
    device=None, pin_memory=False, requires_grad=False,
):  # fmt: skip
    """torch.hamming_window: alpha - beta cos(2 pi n / (N - 1))."""
    formula = cosine_sum((alpha, beta))
    return window("hamming_window", formula, window_length, periodic, dtype, device, requires_grad)


@export("blackman_window", methods=())
def blackman_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
    requires_grad=False,
):  # fmt: skip
    """torch.blackman_window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    formula = cosine_sum((0.42, 0.5, 0.08))
    return window("blackman_window", formula, window_length, periodic, dtype, device, requires_grad)


@export("bartlett_window", methods=())
def bartlett_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
    requires_grad=False,
):  # fmt: skip
    """torch.bartlett_window: the triangle 1 - |2n / (N - 1) - 1|."""
    return window(
        "bartlett_window", bartlett, window_length, periodic, dtype, device, requires_grad
    )


@export("kaiser_window", methods=())
def kaiser_window(
    window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
    pin_memory=False, requires_grad=False,
):  # fmt: skip
    """torch.kaiser_window: I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N - 1) / 2."""
    return window(
        "kaiser_window", kaiser(beta), window_length, periodic, dtype, device, requires_grad
    )
