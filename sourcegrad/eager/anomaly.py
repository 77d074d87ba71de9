"""Anomaly detection: `detect_anomaly()` / `set_detect_anomaly(True)`.

When on, the engine checks every node's output gradients and raises torch's
error when one holds NaN: `Function 'SqrtBackward0' returned nan values in its
0th output.` (The traceback of the forward call that torch also prints is not
recorded.)

Imports: nothing of sourcegrad (a leaf of the eager package).
"""

from __future__ import annotations

import warnings

import numpy as np


class _Anomaly:
    enabled = False
    check_nan = True


ANOMALY = _Anomaly()


class set_detect_anomaly:
    """Turn anomaly detection on or off: at once when called, and back when a block ends."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = (ANOMALY.enabled, ANOMALY.check_nan)
        ANOMALY.enabled = bool(mode)
        ANOMALY.check_nan = bool(check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        ANOMALY.enabled, ANOMALY.check_nan = self._prev
        return False


class detect_anomaly:
    """Context manager (or decorator) enabling anomaly detection, with torch's warning."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        self._prev = None

    def __enter__(self):
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime "
            "and should only be enabled for debugging.",
            UserWarning,
            stacklevel=2,
        )
        self._prev = (ANOMALY.enabled, ANOMALY.check_nan)
        ANOMALY.enabled, ANOMALY.check_nan = True, self.check_nan

    def __exit__(self, *exc):
        ANOMALY.enabled, ANOMALY.check_nan = self._prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


def check_outputs(node, results):
    """Raise torch's anomaly error if a node produced a NaN gradient."""
    if not (ANOMALY.enabled and ANOMALY.check_nan):
        return
    for i, g in enumerate(results):
        if g is None:
            continue
        data = g._data if hasattr(g, "_data") else g
        if np.isnan(data).any():
            raise RuntimeError(
                f"Function '{node.name().rsplit('::', 1)[-1]}' returned nan "
                f"values in its {i}th output."
            )
