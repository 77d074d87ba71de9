"""`sourcegrad.cuda.amp`: torch.cuda.amp's deprecated spellings of `amp`'s two classes."""

from __future__ import annotations

import warnings

from ..eager import dtypes
from . import autocast_mode, grad_scaler

__all__ = ["GradScaler", "autocast", "custom_fwd", "custom_bwd"]


class GradScaler(grad_scaler.GradScaler):
    """`torch.cuda.amp.GradScaler(...)`: `amp.GradScaler("cuda", ...)`, with torch's
    deprecation warning."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
            "`torch.amp.GradScaler('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(
            "cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled
        )


class autocast(autocast_mode.autocast):
    """`torch.cuda.amp.autocast(...)`: `amp.autocast("cuda", ...)`, deprecated as in torch."""

    def __init__(self, enabled=True, dtype=dtypes.float16, cache_enabled=True):
        warnings.warn(
            "`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    return autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    return autocast_mode.custom_bwd(bwd, device_type="cuda")
