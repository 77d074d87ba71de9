"""`backends.cudnn`: flags kept with torch's defaults (sourcegrad does not use cuDNN).

`enabled`, `benchmark`, `benchmark_limit`, `deterministic` and `allow_tf32` are plain
attributes a script sets and reads back (torch's defaults: True, False, None, False, True)."""

from __future__ import annotations

import contextlib
import sys

__all__ = ["is_available", "version", "is_acceptable", "flags"]

enabled = True
benchmark = False
benchmark_limit = None
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: sourcegrad has no cuDNN."""
    return False


def version():
    return None


def is_acceptable(tensor) -> bool:
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags for the block, and restore them after it (torch's cudnn.flags)."""
    module = sys.modules[__name__]
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    saved = {name: getattr(module, name) for name in names}
    new = (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    for name, value in zip(names, new):
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
