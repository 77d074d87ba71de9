"""np.fft: fft, ifft, rfft, irfft, fft2, ifft2, rfft2, irfft2, fftn, ifftn, rfftn, irfftn,
fftshift, ifftshift, with n / s, axis / axes and norm ("backward", "ortho", "forward").

Takes nothing; registers one entry per function (names `fft_<function>`) and the helpers
their rules call (`fit`, `hermitian_fold`, and the static `fft_axes`, `fft_sizes`,
`dual_norm`), each with its own entry so second derivatives go through them. Generated code
calls the helpers as `sourcegrad.ops.fft.<name>`.

Every transform is linear, so its JVP is the transform of the tangent, and its VJP the
transpose, in the convention of the complex rules (ops/complex_values.py: the plain transpose
of a C-linear map). The DFT matrix is symmetric, so:
* fft's (and fftn's) VJP is fft of g with the same norm, fitted back to the input's sizes
  (`n`/`s` cut or zero-padded the input: the transpose pads or cuts);
* ifft's likewise with ifft;
* rfft's (a real input, half the spectrum out) is the real part of the full fft of g
  zero-padded to the transform's length;
* irfft's (the inverse of a Hermitian spectrum, real out) is the conjugate of rfft of g with
  the dual norm, the entries that stand for two (the ones strictly between 0 and n/2 of
  the last axis) doubled: torch's rule, conjugated for this convention (for a real input,
  its real part: the gradient of a real input is real);
* fftshift and ifftshift are each other's transposes.
"""

from __future__ import annotations

import numpy as np

from ..runtime import is_complex
from .examples import arg, ex
from .registry import Spelling, deflinear, defnondiff, defvjp, mark
from .registry import func as _func


def _spelled(name):
    return Spelling("module", f"sourcegrad.ops.fft.{name}")


def fft_axes(ndim, s, axes):
    """The axes np.fft.fftn(a, s, axes) transforms, numpy's way: axes if given, else the last
    len(s) axes, else all of them; as non-negative numbers."""
    if axes is None:
        axes = range(ndim - len(s), ndim) if s is not None else range(ndim)
    return tuple(int(a) % ndim for a in axes)


def fft_sizes(shape, s, axes):
    """The lengths the transform works on along axes: s if given, else the input's own."""
    return tuple(s) if s is not None else tuple(shape[a] for a in axes)


def dual_norm(norm):
    """The norm whose forward scaling is `norm`'s inverse scaling (irfft's transpose is rfft
    with it)."""
    return {None: "forward", "backward": "forward", "forward": "backward"}.get(norm, norm)


for _helper in (fft_axes, fft_sizes, dual_norm):
    defnondiff(_helper.__name__, _helper, _spelled(_helper.__name__))


def fit(a, sizes, axes):
    """a cut, or zero-padded at the end, along each of axes to the lengths sizes (what
    np.fft's n and s do to the input before transforming). Written with concatenate and
    zeros_like, which eager Tensors dispatch, so second derivatives record it."""
    for size, axis in zip(sizes, axes):
        have = np.shape(a)[axis]
        if size < have:
            a = a[(slice(None),) * (axis % np.ndim(a)) + (slice(0, size),)]
        elif size > have:
            shape = list(np.shape(a))
            shape[axis] = size - have
            a = np.concatenate([a, np.zeros_like(a, shape=tuple(shape))], axis=axis)
    return a


def hermitian_fold(h, n, axis):
    """h (one half of a spectrum of length n along axis) with the entries standing for two
    (index 1 up to but excluding n/2) doubled."""
    weights = np.full(np.shape(h)[axis], 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    return h * np.reshape(weights, (-1,) + (1,) * (np.ndim(h) - 1 - axis % np.ndim(h)))


# fit's transpose fits back; hermitian_fold scales by real numbers: it is its own transpose.
defvjp(
    "fit",
    fit,
    _spelled("fit"),
    lambda g, ans, a, sizes, axes: fit(g, fft_sizes(a.shape, None, axes), axes),
)
defvjp(
    "hermitian_fold",
    hermitian_fold,
    _spelled("hermitian_fold"),
    lambda g, ans, h, n, axis: hermitian_fold(g, n, axis),
)

# One-axis transforms.
defvjp(
    "fft_fft",
    np.fft.fft,
    _func("fft.fft"),
    lambda g, ans, a, n=None, axis=-1, norm=None, out=None: fit(
        np.fft.fft(g, axis=axis, norm=norm), (a.shape[axis],), (axis,)
    ),
)
defvjp(
    "fft_ifft",
    np.fft.ifft,
    _func("fft.ifft"),
    lambda g, ans, a, n=None, axis=-1, norm=None, out=None: fit(
        np.fft.ifft(g, axis=axis, norm=norm), (a.shape[axis],), (axis,)
    ),
)
defvjp(
    "fft_rfft",
    np.fft.rfft,
    _func("fft.rfft"),
    lambda g, ans, a, n=None, axis=-1, norm=None, out=None: fit(
        np.real(np.fft.fft(g, a.shape[axis] if n is None else n, axis=axis, norm=norm)),
        (a.shape[axis],),
        (axis,),
    ),
)
defvjp(
    "fft_irfft",
    np.fft.irfft,
    _func("fft.irfft"),
    lambda g, ans, a, n=None, axis=-1, norm=None, out=None: fit(
        np.conj(
            hermitian_fold(np.fft.rfft(g, axis=axis, norm=dual_norm(norm)), ans.shape[axis], axis)
        )
        if is_complex(a)
        else np.real(
            hermitian_fold(np.fft.rfft(g, axis=axis, norm=dual_norm(norm)), ans.shape[axis], axis)
        ),
        (a.shape[axis],),
        (axis,),
    ),
)

# Transforms over several axes (fft2's family are fftn's with axes=(-2, -1) by default).
for _name in ("fft2", "fftn"):
    _default = (-2, -1) if _name.endswith("2") else None
    defvjp(
        f"fft_{_name}",
        getattr(np.fft, _name),
        _func(f"fft.{_name}"),
        lambda g, ans, a, s=None, axes=_default, norm=None, out=None: fit(
            np.fft.fftn(g, axes=fft_axes(a.ndim, s, axes), norm=norm),
            fft_sizes(a.shape, None, fft_axes(a.ndim, s, axes)),
            fft_axes(a.ndim, s, axes),
        ),
    )
for _name in ("ifft2", "ifftn"):
    _default = (-2, -1) if _name.endswith("2") else None
    defvjp(
        f"fft_{_name}",
        getattr(np.fft, _name),
        _func(f"fft.{_name}"),
        lambda g, ans, a, s=None, axes=_default, norm=None, out=None: fit(
            np.fft.ifftn(g, axes=fft_axes(a.ndim, s, axes), norm=norm),
            fft_sizes(a.shape, None, fft_axes(a.ndim, s, axes)),
            fft_axes(a.ndim, s, axes),
        ),
    )
for _name in ("rfft2", "rfftn"):
    _default = (-2, -1) if _name.endswith("2") else None
    defvjp(
        f"fft_{_name}",
        getattr(np.fft, _name),
        _func(f"fft.{_name}"),
        lambda g, ans, a, s=None, axes=_default, norm=None, out=None: fit(
            np.real(
                np.fft.fftn(
                    g,
                    fft_sizes(a.shape, s, fft_axes(a.ndim, s, axes)),
                    axes=fft_axes(a.ndim, s, axes),
                    norm=norm,
                )
            ),
            fft_sizes(a.shape, None, fft_axes(a.ndim, s, axes)),
            fft_axes(a.ndim, s, axes),
        ),
    )
for _name in ("irfft2", "irfftn"):
    _default = (-2, -1) if _name.endswith("2") else None
    defvjp(
        f"fft_{_name}",
        getattr(np.fft, _name),
        _func(f"fft.{_name}"),
        lambda g, ans, a, s=None, axes=_default, norm=None, out=None: fit(
            np.conj(
                hermitian_fold(
                    np.fft.rfftn(g, axes=fft_axes(a.ndim, s, axes), norm=dual_norm(norm)),
                    ans.shape[fft_axes(a.ndim, s, axes)[-1]],
                    fft_axes(a.ndim, s, axes)[-1],
                )
            )
            if is_complex(a)
            else np.real(
                hermitian_fold(
                    np.fft.rfftn(g, axes=fft_axes(a.ndim, s, axes), norm=dual_norm(norm)),
                    ans.shape[fft_axes(a.ndim, s, axes)[-1]],
                    fft_axes(a.ndim, s, axes)[-1],
                )
            ),
            fft_sizes(a.shape, None, fft_axes(a.ndim, s, axes)),
            fft_axes(a.ndim, s, axes),
        ),
    )

defvjp(
    "fft_fftshift",
    np.fft.fftshift,
    _func("fft.fftshift"),
    lambda g, ans, x, axes=None: np.fft.ifftshift(g, axes),
)
defvjp(
    "fft_ifftshift",
    np.fft.ifftshift,
    _func("fft.ifftshift"),
    lambda g, ans, x, axes=None: np.fft.fftshift(g, axes),
)

FFT_OPS = (
    "fft_fft",
    "fft_ifft",
    "fft_rfft",
    "fft_irfft",
    "fft_fft2",
    "fft_ifft2",
    "fft_rfft2",
    "fft_irfft2",
    "fft_fftn",
    "fft_ifftn",
    "fft_rfftn",
    "fft_irfftn",
    "fft_fftshift",
    "fft_ifftshift",
)
# linear in their one array input: the JVP is the transform of the tangent
deflinear("joint", *FFT_OPS, "fit", "hermitian_fold")
mark("complex", *FFT_OPS, "fit", "hermitian_fold")


# Example inputs for the registry's test grid (ops/examples.py): sizes, axes and norms.
def _transform_variants(two_d):
    if two_d:
        return [
            ex(arg(3, 4)),
            ex(arg(2, 3, 4), axes=(0, 2), norm="ortho"),
            ex(arg(3, 4), s=(4, 6), axes=(0, 1), norm="forward"),
        ]
    return [ex(arg(6)), ex(arg(3, 4), axis=0, norm="ortho"), ex(arg(5), n=8), ex(arg(6), 4)]


EXAMPLES = {
    **{
        f"fft_{_name}": _transform_variants(_name[-1] in "2n")
        for _name in ("fft ifft rfft irfft fft2 fftn ifft2 ifftn rfft2 rfftn irfft2 irfftn".split())
    },
    "fft_fftshift": [ex(arg(5)), ex(arg(3, 4), axes=0)],
    "fft_ifftshift": [ex(arg(5)), ex(arg(3, 4), axes=(0, 1))],
}
