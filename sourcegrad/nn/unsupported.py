"""`UnsupportedOptionError`: what a torch.nn function raises for an option sourcegrad lacks.

Its own module so that the layer modules (`pool_ops`, ...) and `functional`, which
imports them, can all raise it without importing each other.
"""

from __future__ import annotations

from ..errors import SourcegradError

__all__ = ["UnsupportedOptionError"]


class UnsupportedOptionError(SourcegradError, NotImplementedError):
    """An option of a torch.nn function that sourcegrad does not implement."""
