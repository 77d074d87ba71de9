"""What compiled code depends on outside its arguments, as both front ends record it.

A front end reads globals, closure cells, object attributes and module attributes while it
lowers a function (numbers are inlined, functions inlined, arrays bound by name). Each value
read is recorded as a dependency `(kind, holder, name, value)`, and the api checks on every
call that each is still what it was (`sourcegrad.api.memory_caches.still_bound`), rebuilding
the code where one is not:

- "global", "cell", "attribute": the value itself, compared by identity (an attribute's
  number also by equality: a property that makes a new float each read);
- "names" (a trace's): the attribute names of a user object, so that one set later
  (`model.act = f`, shadowing its class's method) makes the code stale;
- "members" (a trace's): a list, tuple or dict holding arrays or objects, by itself and by
  what it holds, each by identity (`with_members`);
- "items" (a global's or a cell's), "snapshot" (an object's or module's attribute): a dict or
  list of plain Python data (`python_data`), by a copy compared by value, because its items
  were inlined as constants: `CFG["lam"] = 0.5` changes the function without rebinding CFG.

`dependency(kind, holder, name, value)` makes the record; `user_module(module)` says whether
a module's attributes are recorded at all (those of numpy, math, scipy, ... are read as
constants without a check per call: no program rebinds `np.pi`).
"""

from __future__ import annotations

import copy
import operator

import numpy as np

_PLAIN = (bool, int, float, complex, str, bytes, type(None), np.generic)

# libraries whose module-level names no program rebinds
_FIXED_MODULES = frozenset(
    {"numpy", "math", "cmath", "scipy", "sourcegrad", "builtins", "operator", "functools"}
)


def python_data(value) -> bool:
    """A number, string, None, or a (nested) list, tuple or dict of them: what the function
    computes with in plain Python, as opposed to an array or an object."""
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (list, tuple)):
        return all(python_data(v) for v in value)
    if isinstance(value, dict):
        return all(python_data(v) for v in value.values())
    return False


def dependency(kind: str, holder, name: str, value) -> tuple:
    """The record of `holder`'s `name` read as `value` (kind "global", "cell" or
    "attribute"): a dict or list of Python data by a copy, compared by value ("items" for a
    global or a cell, "snapshot" for an attribute), one of arrays or objects by itself and
    what it holds (`with_members`), anything else by itself."""
    if isinstance(value, (dict, list)) and python_data(value):
        return ("snapshot" if kind == "attribute" else "items", holder, name, copy.deepcopy(value))
    return with_members((kind, holder, name, value))


def with_members(record: tuple) -> tuple:
    """`record`, or where its value is a list, tuple or dict holding arrays or objects (not
    plain data, which `dependency` copies), a "members" record of it that also keeps what
    it holds: a trace iterates over `model.layers` and indexes `params["w"]` while it runs,
    so its code has their members fixed in it, and `model.layers.append(W)` or
    `params["w"] = W2` makes it stale without rebinding the container."""
    kind, holder, name, value = record
    if kind in ("global", "cell", "attribute") and isinstance(value, (list, tuple, dict)):
        return ("members", holder, name, (kind, value, members(value)))
    return record


class _Held:
    """What a list, tuple or dict held when read: its type, its keys (a dict's), and its
    items (each an object, or the _Held of a container)."""

    __slots__ = ("kind", "keys", "items")

    def __init__(self, kind, keys, items):
        self.kind, self.keys, self.items = kind, keys, items


def members(value):
    """`value` itself, or where it is a (nested) list, tuple or dict, what it holds."""
    if isinstance(value, (list, tuple)):
        return _Held(type(value), None, tuple(members(item) for item in value))
    if isinstance(value, dict):
        return _Held(dict, tuple(value), tuple(members(item) for item in value.values()))
    return value


def same_members(value, known) -> bool:
    """Whether `value` holds what `members` found in it (the same objects, by identity).
    Called on each call of the code (a model's list of layers): an array item costs an
    identity test."""
    if type(known) is not _Held:
        return value is known
    if type(value) is not known.kind:
        return False
    if known.keys is not None:
        if tuple(value) != known.keys:
            return False
        value = value.values()
    elif len(value) != len(known.items):
        return False
    if all(map(operator.is_, value, known.items)):  # (each the same object: one C-level pass)
        return True
    for item, was in zip(value, known.items):
        if item is not was and (type(was) is not _Held or not same_members(item, was)):
            return False
    return True


def flat_members(known):
    """(type, keys or None, items) of what `members` found in a list, tuple or dict holding
    no container itself, or None (a nested one, or not a container): such a container is
    unchanged where its type, keys and items are the same objects (`memory_caches` checks
    many at once)."""
    if type(known) is not _Held or any(type(item) is _Held for item in known.items):
        return None
    return known.kind, known.keys, known.items


def user_module(module) -> bool:
    """A module whose attributes a program may rebind (`config.LR = 0.01`), not a library's."""
    return module.__name__.partition(".")[0] not in _FIXED_MODULES
