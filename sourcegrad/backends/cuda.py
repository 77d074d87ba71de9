"""`backends.cuda`: `matmul.allow_tf32` and the attention kernel switches (flags only)."""

from __future__ import annotations

import contextlib
import warnings

from ..eager import devices
from . import _flags

__all__ = [
    "is_built",
    "matmul",
    "flash_sdp_enabled",
    "enable_flash_sdp",
    "mem_efficient_sdp_enabled",
    "enable_mem_efficient_sdp",
    "math_sdp_enabled",
    "enable_math_sdp",
    "cudnn_sdp_enabled",
    "enable_cudnn_sdp",
    "sdp_kernel",
]


def is_built() -> bool:
    """Whether CUDA tensors can be made (sourcegrad's are CuPy's: CuPy with a device)."""
    return devices.is_available()


class cuBLASModule:
    """`backends.cuda.matmul`: allow_tf32 (linked to float32_matmul_precision, as in torch)
    and the reduced-precision reduction flags; any other attribute is refused."""

    _FLAGS = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")

    def __init__(self):
        object.__setattr__(self, "_values", {name: True for name in self._FLAGS})
        self._values["allow_fp16_accumulation"] = False

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _flags.STATE["matmul"] != "highest"
        flags = object.__getattribute__(self, "_values")
        if name in flags:
            return flags[name]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _flags.STATE["matmul"] = "high" if value else "highest"
        elif name in self._values:
            self._values[name] = value
        else:
            raise AttributeError("Unknown attribute " + name)


matmul = cuBLASModule()

_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def flash_sdp_enabled() -> bool:
    return _SDP["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _SDP["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _SDP["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _SDP["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _SDP["math"]


def enable_math_sdp(enabled: bool) -> None:
    _SDP["math"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _SDP["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _SDP["cudnn"] = bool(enabled)


@contextlib.contextmanager
def sdp_kernel(
    enable_flash: bool = True,
    enable_math: bool = True,
    enable_mem_efficient: bool = True,
    enable_cudnn: bool = True,
):
    """The deprecated context manager setting the four switches for its block."""
    warnings.warn(
        "`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context "
        "manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new "
        "context manager, with updated signature.",
        FutureWarning,
        stacklevel=3,
    )
    saved = dict(_SDP)
    _SDP.update(
        flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn
    )
    try:
        yield
    finally:
        _SDP.update(saved)
