"""`sourcegrad.cuda`, the part of `torch.cuda` that eager code asks for.

CUDA tensors are CuPy arrays (see `devices`); these functions answer from CuPy and,
without a CUDA device, answer as torch does on a machine without one (`is_available()`
is False, `device_count()` is 0) or raise a RuntimeError that says there is none.

Random numbers for the GPU come from the default generator (`sourcegrad.manual_seed`),
so `manual_seed` / `manual_seed_all` here have nothing of their own to seed.

Imports: `devices` only.
"""

from __future__ import annotations

from . import devices

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "synchronize",
    "get_device_name",
    "manual_seed",
    "manual_seed_all",
    "empty_cache",
    "memory_allocated",
    "is_bf16_supported",
]


def is_available() -> bool:
    """Whether CUDA tensors can be made here (CuPy imports and finds a device)."""
    return devices.is_available()


def device_count() -> int:
    return devices.device_count()


def current_device() -> int:
    return devices.current_index()


def synchronize(device=None):
    """Wait until the work queued on the device (the current one by default) is done."""
    devices.synchronize(device)


def get_device_name(device=None) -> str:
    cp = devices.cupy()
    index = devices.current_index() if device is None else devices.as_device(device).index or 0
    name = cp.cuda.runtime.getDeviceProperties(index)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def manual_seed(seed):
    """Nothing to do: GPU random numbers are drawn from the default (host) generator."""


manual_seed_all = manual_seed


def empty_cache():
    """Give CuPy's cached, unused device memory back to the driver."""
    if devices.is_available():
        devices.cupy().get_default_memory_pool().free_all_blocks()


def memory_allocated(device=None) -> int:
    """Bytes of device memory in use by arrays (CuPy's default memory pool)."""
    if not devices.is_available():
        return 0
    return int(devices.cupy().get_default_memory_pool().used_bytes())


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False without a CUDA device (torch's answer there); CuPy has no bfloat16 either."""
    return False


def __getattr__(name):
    # sourcegrad.cuda.amp (torch.cuda.amp's deprecated GradScaler and autocast): made by
    # sourcegrad.amp, a layer above this one, so imported when first asked for
    if name == "amp":
        from ..amp import _cuda

        return _cuda
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
