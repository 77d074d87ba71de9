"""torch.fft for the eager Tensor, and the complex functions real, imag, conj, angle,
view_as_real and view_as_complex.

fft, ifft, rfft, irfft, fft2, ifft2, rfft2, irfft2, fftn, ifftn, rfftn, irfftn, fftshift and
ifftshift with torch's arguments (`n`/`s`, `dim`, `norm`), and `NUMPY`: np.fft and np.real /
np.imag / np.conj / np.angle on Tensors with numpy's (the rule lambdas call them under
create_graph). Each runs numpy's function and records the node torch records
(FftC2CBackward0, FftR2CBackward0, FftC2RBackward0, RollBackward0, ...), whose derivatives
are the registry's entries (`sourcegrad/ops/fft.py`, `ops/complex_values.py`): the VJP
lambdas the compiler inlines. The complex convention (torch's gradients from the rules'
conjugated ones) is applied by `spec.record` for every node of complex values.

Imports: `operands`, `spec`, `tensor`, `dtypes` (layer 4, like `tensor_math.py`).
"""

from __future__ import annotations

import numpy as np

from . import devices, dtypes
from .operands import as_tensor, cached_spec, needs_grad, result
from .out_arg import write_out
from .spec import record
from .surface import export
from .tensor import COMPLEX_PART_VIEW, DEFAULT_VIEW, Tensor
from .views import record_view

_wrap = Tensor._make


def _float_or_complex(t):
    """t's array, integers and booleans made the default float (as torch.fft does)."""
    d = t._data
    return d if d.dtype.kind in "fc" else d.astype(dtypes.get_default_dtype().dtype)


def _run(node, rule, fn, x, static, out_kind):
    """Run np.fft's `fn(x, **static)` and record `node` with the registry entry `rule`; the
    result is complex (out_kind "c") or real ("f") of x's precision."""
    x = as_tensor(x)
    d = _float_or_complex(x)
    single = d.dtype in (np.float32, np.complex64)
    dtype = {
        ("c", True): np.complex64,
        ("c", False): np.complex128,
        ("f", True): np.float32,
        ("f", False): np.float64,
    }[out_kind, single]
    out = _wrap(result(fn(d, **static), np.dtype(dtype)))
    if needs_grad(x):
        record(cached_spec(node, rule, n_arrays=1), out, (x,), static)
    return out


def _dims(dim):
    return None if dim is None else (tuple(dim) if isinstance(dim, (list, tuple)) else (dim,))


def _one_axis(name, inverse_of_real):
    """torch.fft.<name>(input, n=None, dim=-1, norm=None)."""
    fn = getattr(np.fft, name)
    kind = "f" if name == "irfft" else "c"

    def op(input, n=None, dim=-1, norm=None, *, out=None):
        if out is not None:
            return write_out(f"fft_{name}", out, op(input, n, dim, norm), (input,))
        node = _node(name, _data_kind(input), inverse_of_real)
        return _run(node, f"fft_{name}", fn, input, {"n": n, "axis": dim, "norm": norm}, kind)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.fft.{name}: np.fft.{name} along dim, with torch's node."
    return op


def _several_axes(name, default_dims, inverse_of_real):
    """torch.fft.<name>(input, s=None, dim=default_dims, norm=None)."""
    fn = getattr(np.fft, name)
    kind = "f" if name.startswith("irfft") else "c"

    def op(input, s=None, dim=default_dims, norm=None, *, out=None):
        if out is not None:
            return write_out(f"fft_{name}", out, op(input, s, dim, norm), (input,))
        node = _node(name, _data_kind(input), inverse_of_real)
        s = None if s is None else tuple(s)
        axes = _dims(dim)
        if axes is None and s is not None:  # torch's (and numpy's, deprecated) default
            axes = tuple(range(-len(s), 0))
        return _run(node, f"fft_{name}", fn, input, {"s": s, "axes": axes, "norm": norm}, kind)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.fft.{name}: np.fft.{name} over dim, with torch's node."
    return op


def _data_kind(x):
    return as_tensor(x)._data.dtype.kind


def _node(name, kind, inverse_of_real):
    """torch's node name: C2R for the inverses of real transforms, R2C for a real input's
    transform (ConjBackward0 for the inverse ones: torch conjugates a forward transform),
    C2C otherwise."""
    if name.startswith("irfft"):
        return "FftC2RBackward0"
    if kind != "c":
        return "ConjBackward0" if inverse_of_real else "FftR2CBackward0"
    return "FftC2CBackward0"


fft, ifft, rfft, irfft = (_one_axis(n, n == "ifft") for n in ("fft", "ifft", "rfft", "irfft"))
fft2, ifft2, rfft2, irfft2 = (
    _several_axes(n, (-2, -1), n == "ifft2") for n in ("fft2", "ifft2", "rfft2", "irfft2")
)
fftn, ifftn, rfftn, irfftn = (
    _several_axes(n, None, n == "ifftn") for n in ("fftn", "ifftn", "rfftn", "irfftn")
)


def fftshift(input, dim=None):
    """torch.fft.fftshift: the zero frequency moved to the middle (RollBackward0, as torch)."""
    return _run(
        "RollBackward0",
        "fft_fftshift",
        np.fft.fftshift,
        input,
        {"axes": _dims(dim)},
        _data_kind(input) if _data_kind(input) == "c" else "f",
    )


def ifftshift(input, dim=None):
    """torch.fft.ifftshift: fftshift undone."""
    return _run(
        "RollBackward0",
        "fft_ifftshift",
        np.fft.ifftshift,
        input,
        {"axes": _dims(dim)},
        _data_kind(input) if _data_kind(input) == "c" else "f",
    )


# --- complex values --------------------------------------------------------------------------


@export("real", methods=())  # (x.real is a property, methods.py)
def real(input):
    """torch.real (SelectBackward0, as torch: it selects from a view as real pairs)."""
    return _part(input, "SelectBackward0", "np_real", np.real)


@export("imag", methods=())
def imag(input):
    """torch.imag of a complex tensor (torch refuses a real one)."""
    if as_tensor(input)._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _part(input, "SelectBackward0", "np_imag", np.imag)


def _part(input, node, rule, fn):
    """torch.real / torch.imag of a complex tensor: numpy's view of its real (imaginary)
    parts, recorded as a view (it shares x's storage and version counter, as torch's does),
    whose change in place, or x's while it is used, is refused (`COMPLEX_PART_VIEW`)."""
    x = as_tensor(input)
    if x._data.dtype.kind != "c":
        return x  # torch.real of a real tensor is the tensor itself
    part = rule.removeprefix("np_")
    out = record_view(x, fn(x._data), (part, None), cached_spec(node, rule, n_arrays=1), {})
    if out._extra.creation == DEFAULT_VIEW:
        out._extra.creation = COMPLEX_PART_VIEW
    return out


@export("view_as_real", methods=())
def view_as_real(input):
    """torch.view_as_real: a complex tensor's (real, imaginary) pairs as a last dimension of 2,
    a view sharing its storage (ViewAsRealBackward0). Changing it in place while gradients
    are recorded is refused, as for x.real (`COMPLEX_PART_VIEW`)."""
    x = as_tensor(input)
    d = x._data
    if d.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    re = d.real
    xp = np if type(d) is np.ndarray else devices.xp_of(d)
    data = xp.lib.stride_tricks.as_strided(re, d.shape + (2,), re.strides + (re.itemsize,))
    spec = cached_spec("ViewAsRealBackward0", "view_as_real", n_arrays=1)
    return _complex_part(record_view(x, data, ("as_real", None), spec, {}))


@export("view_as_complex", methods=())
def view_as_complex(input):
    """torch.view_as_complex: pairs along a last dimension of 2 (stride 1, the other strides
    and the offset even) as complex numbers, a view sharing the storage
    (ViewAsComplexBackward0)."""
    x = as_tensor(input)
    d = x._data
    if d.dtype not in (np.float32, np.float64):
        raise RuntimeError(
            "view_as_complex is only supported for half, float and double tensors, but got a "
            f"tensor of scalar type: {x.dtype._scalar_name}"
            + (" (sourcegrad has no complex32)" if d.dtype == np.float16 else "")
        )
    if d.ndim == 0 or d.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    strides = x.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if x.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    data = d.view(np.complex64 if d.dtype == np.float32 else np.complex128)[..., 0]
    spec = cached_spec("ViewAsComplexBackward0", "view_as_complex", n_arrays=1)
    return _complex_part(record_view(x, data, ("as_complex", None), spec, {}))


def _complex_part(out):
    if out._extra.creation == DEFAULT_VIEW:
        out._extra.creation = COMPLEX_PART_VIEW
    return out


@export("conj")
def conj(input):
    """torch.conj (a copy here, where torch sets a conjugate bit: the values are the same)."""
    x = as_tensor(input)
    if x._data.dtype.kind != "c":
        return x
    return _run("ConjBackward0", "np_conjugate", np.conjugate, x, {}, "c")


@export("angle")
def angle(input):
    """torch.angle: the argument of each element (0 or pi for a real tensor)."""
    return _run("AngleBackward0", "np_angle", np.angle, input, {}, "f")


FUNCTIONS = {
    "fft": fft,
    "ifft": ifft,
    "rfft": rfft,
    "irfft": irfft,
    "fft2": fft2,
    "ifft2": ifft2,
    "rfft2": rfft2,
    "irfft2": irfft2,
    "fftn": fftn,
    "ifftn": ifftn,
    "rfftn": rfftn,
    "irfftn": irfftn,
    "fftshift": fftshift,
    "ifftshift": ifftshift,
}


def _numpy_one_axis(op):
    return lambda a, n=None, axis=-1, norm=None, out=None: op(a, n, axis, norm, out=out)


def _numpy_several_axes(op, default):
    return lambda a, s=None, axes=default, norm=None, out=None: op(a, s, axes, norm, out=out)


# np.fft and the complex functions on Tensors (numpy_dispatch): numpy's signatures
NUMPY = {
    getattr(np.fft, name): (
        _numpy_one_axis(op)
        if name in ("fft", "ifft", "rfft", "irfft")
        else op
        if name.endswith("shift")
        else _numpy_several_axes(op, (-2, -1) if name.endswith("2") else None)
    )
    for name, op in FUNCTIONS.items()
}
NUMPY.update(
    {
        np.real: real,
        np.imag: lambda val: (
            imag(val) if as_tensor(val)._data.dtype.kind == "c" else as_tensor(val) * 0.0
        ),
        np.angle: lambda z, deg=False: angle(z) * (180.0 / np.pi) if deg else angle(z),
    }
)
UFUNCS = {np.conjugate: conj}
