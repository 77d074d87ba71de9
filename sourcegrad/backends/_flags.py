"""The process-wide switches torch keeps at its top level, which sourcegrad reads back:
the float32 matmul precision (`set_float32_matmul_precision`, linked to
`backends.cuda.matmul.allow_tf32` as in torch) and `use_deterministic_algorithms`.
sourcegrad's ops are deterministic and compute float32 matmuls in float32 whatever is set."""

from __future__ import annotations

import warnings

__all__ = [
    "get_float32_matmul_precision",
    "set_float32_matmul_precision",
    "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
]

PRECISIONS = ("highest", "high", "medium")
STATE = {"matmul": "highest", "deterministic": False, "warn_only": False}


def get_float32_matmul_precision() -> str:
    """'highest' (the default), 'high' or 'medium'."""
    return STATE["matmul"]


def set_float32_matmul_precision(precision) -> None:
    if precision not in PRECISIONS:
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
            "setFloat32MatmulPrecision call has no effect.",
            UserWarning,
            stacklevel=2,
        )
        return
    STATE["matmul"] = precision


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    STATE["deterministic"] = bool(mode)
    STATE["warn_only"] = bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return STATE["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return STATE["warn_only"]
