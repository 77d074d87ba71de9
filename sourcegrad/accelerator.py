"""`sourcegrad.accelerator`: torch.accelerator, the device-neutral questions about the GPU.

With a CUDA device (CuPy) the accelerator is `device("cuda")`; without one,
`current_accelerator()` is None, `is_available()` False, `device_count()` 0, and the
functions that need a device raise torch's RuntimeError.
"""

from __future__ import annotations

from .eager import cuda, devices

__all__ = [
    "current_accelerator",
    "current_device_index",
    "device_count",
    "empty_cache",
    "is_available",
    "memory_allocated",
    "set_device_index",
    "synchronize",
]

_NONE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    return devices.is_available()


def device_count() -> int:
    return devices.device_count() if devices.is_available() else 0


def current_accelerator(check_available: bool = False):
    """device("cuda") where sourcegrad has a CUDA device, else None."""
    if devices.is_available():
        return devices.device("cuda")
    return None


def _need():
    if not devices.is_available():
        raise RuntimeError(_NONE)


def current_device_index() -> int:
    _need()
    return devices.current_index()


def set_device_index(device) -> None:
    _need()
    devices.cupy().cuda.Device(devices.as_device(device).index or 0).use()


def synchronize(device=None) -> None:
    _need()
    devices.synchronize(device)


def empty_cache() -> None:
    _need()
    cuda.empty_cache()


def memory_allocated(device_index=None) -> int:
    _need()
    return cuda.memory_allocated(device_index)
