"""`sourcegrad.amp`: torch.amp's autocast and GradScaler, as they behave without a GPU.

`autocast("cuda")` and `GradScaler("cuda")` without a CUDA device are disabled with
torch's warnings (a train script's mixed-precision flags then change nothing, as on a
CPU-only torch); `GradScaler("cpu")` is enabled and scales, unscales, skips steps with
inf/nan gradients and updates its scale as torch's does. `autocast("cpu")` is entered
(`is_autocast_enabled("cpu")` is True inside it) but sourcegrad runs every op in its
operands' dtype: numpy has no bfloat16, so the block's results are the full-precision
ones (torch's are rounded to bfloat16). `sourcegrad.cuda.amp` has the deprecated
spellings (`torch.cuda.amp.GradScaler()`, `torch.cuda.amp.autocast()`).
"""

from .autocast_mode import (
    autocast,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)
from .grad_scaler import GradScaler
from . import autocast_mode, grad_scaler

__all__ = [
    "GradScaler",
    "autocast",
    "autocast_mode",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_dtype",
    "grad_scaler",
    "is_autocast_available",
    "is_autocast_enabled",
]
