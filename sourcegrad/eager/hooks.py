"""RemovableHandle: what every `register_*hook` returns; `.remove()` unregisters the hook.

Imports: nothing of sourcegrad (a leaf of the eager package).
"""

from __future__ import annotations

import itertools

_IDS = itertools.count()


class RemovableHandle:
    """Removes one hook from the dict it was registered in (torch.utils.hooks.RemovableHandle)."""

    __slots__ = ("hooks_dict", "id")

    def __init__(self, hooks_dict: dict):
        self.hooks_dict = hooks_dict
        self.id = next(_IDS)

    def remove(self) -> None:
        self.hooks_dict.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(hooks_dict: dict, fn) -> RemovableHandle:
    """Register `fn` in `hooks_dict` (kept in registration order) and return its handle."""
    handle = RemovableHandle(hooks_dict)
    hooks_dict[handle.id] = fn
    return handle
