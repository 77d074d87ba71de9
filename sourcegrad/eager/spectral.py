"""`torch.stft` and `torch.istft` (and the methods `Tensor.stft`, `Tensor.istft`), composed
of ops that have gradients (padding by indexing, unfold, a product with the window, rfft /
fft; irfft / ifft, an overlap-add by index_add and the division by the window's envelope), so
both differentiate with respect to the input (and the window), to any order, as their parts do.

`stft` takes a signal (L,) or a batch (B, L) and returns (B?, n_freq, n_frames) complex
(return_complex=True; False: its real pairs, torch's deprecated form); `istft` takes that and
returns the signal (real, or complex with return_complex=True). Arguments, defaults and the
argument errors are torch's (center=True pads by n_fft // 2 with pad_mode; hop_length
n_fft // 4; win_length n_fft; no window: a rectangular one; onesided for real input and window).

Imports: `fft`, `factories`, `joining`, `surface` (layer 4, beside `fft.py`).
"""

from __future__ import annotations

import warnings

import numpy as np

from . import factories
from . import fft as _fft
from .joining import cat, stack
from .surface import export

# torch's pad modes as numpy.pad's: the index of the element each padded position copies
_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pad_last(x, left, right, mode="constant"):
    """x padded along its last dimension (torch's F.pad modes), by indexing or concatenation,
    so the gradient is that of the indexing (summed where an element is copied)."""
    if left == 0 and right == 0:
        return x
    if mode == "constant":
        shape = tuple(x.shape[:-1])
        zeros = [factories.zeros(shape + (n,), dtype=x.dtype) for n in (left, right)]
        return cat([zeros[0], x, zeros[1]], -1)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"stft: pad_mode {mode!r} is not supported")
    n = x.shape[-1]
    if mode == "reflect" and max(left, right) >= n:
        raise RuntimeError(
            f"Argument #4: Padding size should be less than the corresponding input dimension, "
            f"but got: padding ({left}, {right}) at dimension 2 of input {list(x.shape)}"
        )
    index = np.pad(np.arange(n), (left, right), mode=_PAD_MODES[mode])
    return x[..., factories.tensor(index)]


def _window(window, win_length, n_fft, like, name):
    """The window (ones if None) padded to n_fft, centred, as torch pads it."""
    if window is None:
        if name == "stft":
            warnings.warn(
                "A window was not provided. A rectangular window will be applied,which is "
                "known to cause spectral leakage. Other windows such as torch.hann_window or "
                "torch.hamming_window are recommended to reduce spectral leakage.To suppress "
                "this warning and use a rectangular window, explicitly set "
                "`window=torch.ones(n_fft, device=<device>)`.",
                UserWarning,
                stacklevel=3,
            )
        window = factories.ones(win_length, dtype=like.dtype)
    elif window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(
            f"{name}: expected a 1D window tensor of size equal to win_length={win_length}, "
            f"but got window with size {list(window.shape)}"
        )
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = _pad_last(window, left, n_fft - win_length - left)
    return window


def _lengths(name, n_fft, hop_length, win_length, length):
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if hop <= 0:
        raise RuntimeError(f"{name}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{name}: expected 0 < win_length <= n_fft, but got win_length={win}")
    if name == "stft" and not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    return hop, win


def _overlap_add(frames, total, hop):
    """The (B, n_frames, n_fft) frames summed at their offsets (frame t at t * hop) into
    (B, total), by index_add (of complex frames, their real and imaginary parts apart: the
    rule of index_add is written for real values)."""
    if frames.is_complex():
        parts = [_overlap_add(p, total, hop) for p in (frames.real, frames.imag)]
        return _fft.view_as_complex(stack(parts, -1))
    batch, n_frames, n_fft = frames.shape
    where = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)).reshape(-1)
    out = factories.zeros((batch, total), dtype=frames.dtype)
    return out.index_add_(1, factories.tensor(where), frames.reshape(batch, n_frames * n_fft))


@export("stft")
def stft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    pad_mode="reflect",
    normalized=False,
    onesided=None,
    return_complex=None,
):
    """torch.stft: the short-time Fourier transform, (B?, n_freq, n_frames)."""
    complex_input = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_input:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release."
            )
        return_complex = True
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D tensor")
    batched = input.dim() == 2
    x = input if batched else input.unsqueeze(0)
    if center:
        pad = n_fft // 2
        x = _pad_last(x, pad, pad, pad_mode)
    hop, win = _lengths("stft", n_fft, hop_length, win_length, x.shape[-1])
    frames = x.unfold(-1, n_fft, hop) * _window(window, win, n_fft, x, "stft")
    one_sided = (not complex_input) if onesided is None else onesided
    if one_sided and complex_input:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    spectrum = _fft.rfft(frames, dim=-1) if one_sided else _fft.fft(frames, dim=-1)
    if normalized:
        spectrum = spectrum * (n_fft**-0.5)
    out = spectrum.transpose(-1, -2)
    if not batched:
        out = out.squeeze(0)
    if not return_complex:
        warnings.warn(
            "stft with return_complex=False is deprecated; use return_complex=True and "
            "view_as_real", UserWarning, stacklevel=2,
        )  # fmt: skip
        return _fft.view_as_real(out.contiguous())
    return out


@export("istft")
def istft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    normalized=False,
    onesided=None,
    length=None,
    return_complex=False,
):
    """torch.istft: the signal whose stft is `input`, by overlap-add divided by the window's
    squared envelope (which must not vanish: torch's error)."""
    if not input.is_complex():
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with "
            "return_complex=True."
        )
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex dtype, but got {input.dim()}")  # fmt: skip
    batched = input.dim() == 3
    spec = input if batched else input.unsqueeze(0)
    hop, win = _lengths("istft", n_fft, hop_length, win_length, None)
    fft_size, n_frames = spec.shape[-2], spec.shape[-1]
    one_sided = fft_size != n_fft if onesided is None else onesided
    if one_sided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(
            "istft(...): expected the frequency dimension (3rd to the last) of the input "
            f"tensor to match n_fft / 2 + 1 when onesided=True, but got {fft_size}"
        )
    if not one_sided and n_fft != fft_size:
        raise RuntimeError(
            "istft(...): expected the frequency dimension (3rd to the last) of the input "
            f"tensor to match n_fft when onesided=False, but got {fft_size}"
        )
    if normalized:
        spec = spec * (n_fft**0.5)
    spec = spec.transpose(-1, -2)  # (B, n_frames, fft_size)
    if return_complex:
        if one_sided:
            raise RuntimeError("cannot have onesided output if window or input is complex")
        frames = _fft.ifft(spec, n_fft, dim=-1)
    else:
        if not one_sided:
            spec = spec[..., : n_fft // 2 + 1]
        frames = _fft.irfft(spec, n_fft, dim=-1)
    w = _window(window, win, n_fft, frames.real if frames.is_complex() else frames, "istft")
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames, total, hop)
    envelope = _overlap_add((w * w).reshape(1, 1, n_fft).expand(1, n_frames, n_fft), total, hop)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    y, envelope = y[:, start : min(end, total)], envelope[:, start : min(end, total)]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError("istft(...): window overlap add min: 1")
    y = y / envelope
    if end > total:
        y = _pad_last(y, 0, end - total)
    return y if batched else y.squeeze(0)
