"""`torch.stft` and `torch.istft`, composed of ops that have gradients (reflect padding,
unfold, a product with the window, rfft / fft; irfft / ifft, fold's overlap-add and the
division by the window's envelope), so both differentiate with respect to the input (and the
window), to any order, as their parts do.

`stft` takes a signal (L,) or a batch (B, L) and returns (B?, n_freq, n_frames) complex
(return_complex=True; False: its real pairs, torch's deprecated form); `istft` takes that and
returns the signal (real, or complex with return_complex=True). Arguments, defaults and the
argument errors are torch's (center=True pads by n_fft // 2 with pad_mode; hop_length
n_fft // 4; win_length n_fft; no window: a rectangular one; onesided for real input and window).

Imports: `eager` (fft, factories) and `nn.functional` (pad, fold).
"""

from __future__ import annotations

import warnings

from ..eager import factories
from ..eager import fft as _fft
from ..eager.joining import stack
from . import functional as F


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
        window = F.pad(window, (left, n_fft - win_length - left))
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


def _overlap_add(columns, total, n_fft, hop):
    """The (B, n_fft, n_frames) frames summed at their offsets into (B, 1, 1, total): fold's
    sum (of a complex signal, of its real and imaginary parts: fold's rule is real)."""
    if columns.is_complex():
        parts = [_overlap_add(p, total, n_fft, hop) for p in (columns.real, columns.imag)]
        return _fft.view_as_complex(stack(parts, -1))
    return F.fold(columns, (1, total), (1, n_fft), stride=(1, hop))


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
        x = F.pad(x.unsqueeze(0), (pad, pad), mode=pad_mode).squeeze(0)
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
    y = _overlap_add(frames.transpose(-1, -2), total, n_fft, hop)
    envelope = F.fold(
        (w * w).reshape(1, n_fft, 1).expand(1, n_fft, n_frames), (1, total), (1, n_fft),
        stride=(1, hop),
    )  # fmt: skip
    y, envelope = y.reshape(y.shape[0], total), envelope.reshape(1, total)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    y, envelope = y[:, start : min(end, total)], envelope[:, start : min(end, total)]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError("istft(...): window overlap add min: 1")
    y = y / envelope
    if end > total:
        y = F.pad(y, (0, end - total))
    return y if batched else y.squeeze(0)
