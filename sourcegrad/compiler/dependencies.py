"""What compiled code depends on outside its arguments, as both front ends record it.

A front end reads globals, closure cells, object attributes and module attributes while it
lowers a function (numbers are inlined, functions inlined, arrays bound by name). Each value
read is recorded as a dependency `(kind, holder, name, value)`, and the api checks on every
call that each is still what it was (`sourcegrad.api.memory_caches.still_bound`), rebuilding
the code where one is not:

- "global", "cell", "attribute": the value itself, compared by identity (an attribute's
  number also by equality: a property that makes a new float each read);
- "items" (a global's or a cell's), "snapshot" (an object's or module's attribute): a dict or
  list of plain Python data (`python_data`), by a copy compared by value, because its items
  were inlined as constants: `CFG["lam"] = 0.5` changes the function without rebinding CFG.

`dependency(kind, holder, name, value)` makes the record; `user_module(module)` says whether
a module's attributes are recorded at all (those of numpy, math, scipy, ... are read as
constants without a check per call: no program rebinds `np.pi`).
"""

from __future__ import annotations

import copy

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
    global or a cell, "snapshot" for an attribute), anything else by itself."""
    if isinstance(value, (dict, list)) and python_data(value):
        return ("snapshot" if kind == "attribute" else "items", holder, name, copy.deepcopy(value))
    return (kind, holder, name, value)


def user_module(module) -> bool:
    """A module whose attributes a program may rebind (`config.LR = 0.01`), not a library's."""
    return module.__name__.partition(".")[0] not in _FIXED_MODULES
