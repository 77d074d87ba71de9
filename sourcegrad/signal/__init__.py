"""`sourcegrad.signal`, as `torch.signal`: its `windows` module (torch.signal.windows).

Imports: the eager package only.
"""

from . import windows

__all__ = ["windows"]
