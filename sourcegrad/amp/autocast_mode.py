"""`autocast`: the mixed-precision region, entered and left as torch's (see `amp`'s doc).

The state is per device type and thread-local, as torch's: `is_autocast_enabled(device_type)`
and `get_autocast_dtype(device_type)` read it. Ops do not read it: sourcegrad computes in
the operands' dtypes inside the region too.
"""

from __future__ import annotations

import functools
import threading
import warnings

from ..eager import devices, dtypes

__all__ = [
    "autocast",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_enabled",
]

_DEVICE_TYPES = (
    "cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, "
    "vulkan, mps, meta, hpu, mtia, privateuseone"
)
_DEFAULT_DTYPE = {"cpu": dtypes.bfloat16, "cuda": dtypes.float16}


class _State(threading.local):
    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = dict(_DEFAULT_DTYPE)


STATE = _State()


def is_autocast_available(device_type: str) -> bool:
    return device_type in ("cpu", "cuda")


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether an autocast region for device_type is entered (torch's default: "cuda")."""
    return STATE.enabled.get(device_type, False)


def get_autocast_dtype(device_type: str):
    return STATE.dtype.get(device_type, dtypes.float16)


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type.split(":")[0] not in _DEVICE_TYPES.split(", "):
        raise RuntimeError(
            f"Expected one of {_DEVICE_TYPES} device type at start of device string: {device_type}"
        )


class autocast:
    """`with autocast(device_type, dtype=None, enabled=True, cache_enabled=None):` and as a
    decorator. Disabled with torch's warning for CUDA without a CUDA device, and for a CPU
    dtype other than bfloat16 / float16."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        _check_device_type(device_type)
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        if device_type == "cuda" and enabled and not devices.is_available():
            warnings.warn(
                "CUDA is not available or torch_xla is imported. Disabling autocast.",
                stacklevel=2,
            )
            enabled = False
        if (
            device_type == "cpu"
            and enabled
            and self.fast_dtype
            not in (
                dtypes.bfloat16,
                dtypes.float16,
            )
        ):
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                stacklevel=2,
            )
            enabled = False
        self._enabled = bool(enabled)
        self._saved = []

    def __enter__(self):
        self._saved.append((STATE.enabled.get(self.device, False), STATE.dtype.get(self.device)))
        STATE.enabled[self.device] = self._enabled
        if self._enabled:
            STATE.dtype[self.device] = self.fast_dtype
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        enabled, dtype = self._saved.pop()
        STATE.enabled[self.device] = enabled
        STATE.dtype[self.device] = dtype
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorated


def custom_fwd(fwd=None, *, device_type=None, cast_inputs=None):
    """The decorator for a custom Function's forward under autocast: runs it unchanged."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd=None, *, device_type=None):
    """The decorator for a custom Function's backward under autocast: runs it unchanged."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd
