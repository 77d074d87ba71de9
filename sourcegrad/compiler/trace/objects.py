"""The user's objects a trace walks: which objects are the user's (their attributes read,
watched and depended on), and what attributes one has (its `__dict__`'s and its slots').

Shared by the recorder's dependencies (`recorder._dependencies`) and the watch over Python
state a traced function changes (`python_state`).
"""

from __future__ import annotations

import sys
import types

from ..dependencies import user_module
from .frames import in_a_library

MOST_OBJECTS = 10_000  # (a bound on the walk over objects' attributes: a cyclic graph ends)


def user_object(value) -> bool:
    """An object whose attributes the code may read, walked into from another: an instance
    of a class the user wrote, or such a class (not a function, module or array, nor a
    library's object, whose insides are the library's business)."""
    cls = value if isinstance(value, type) else type(value)
    module = sys.modules.get(cls.__module__)
    if module is None or not user_module(module) or cls.__module__ == "builtins":
        return False
    if in_a_library(getattr(module, "__file__", None)):
        return False
    return isinstance(value, type) or (
        has_attributes(value)
        and not isinstance(value, (types.FunctionType, types.MethodType, types.ModuleType))
    )


def slot_names(cls) -> list:
    """The attributes the `__slots__` of cls and its bases declare."""
    names = []
    for klass in getattr(cls, "__mro__", ()):
        slots = vars(klass).get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return [n for n in names if n not in ("__dict__", "__weakref__")]


def has_attributes(value) -> bool:
    """An object with attributes of its own: a `__dict__`, or `__slots__` (a class with
    `__slots__` has no `__dict__` for its instances)."""
    return hasattr(value, "__dict__") or (
        not isinstance(value, type) and bool(slot_names(type(value)))
    )


def attributes_of(obj) -> dict:
    """obj's own attributes by name: its `__dict__`'s and its slots' that are set."""
    found = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
    if not isinstance(obj, type):
        for name in slot_names(type(obj)):
            try:
                found[name] = getattr(obj, name)
            except AttributeError:  # (a slot not set)
                pass
    return found
