"""Python data a traced function changes: refused, since the generated code would not change it.

A trace runs the user's function once per signature; the code made from it runs on every
later call and repeats only the numpy operations recorded. A write into Python state the
function reaches -- an object's attribute (`self.calls = self.calls + 1`), a module global
(`global step; step += 1`), a closure cell (`nonlocal n`), a container of numbers
(`state["t"] += 1`) -- happens once, at the trace, and never again: a counter stops
counting, and a result computed from it is the first call's for ever. That is a silently
wrong result, so such a write is refused, located at the line that makes it.

Arrays and objects left in the user's state (`self.X = X`, `self.inputs.append(x)`, a layer
caching its input for a backward pass) are not refused: what the gradient reads is recorded,
and what is left behind is the trace's plain array (`recorder._plain_again`). Nor is a list
only appended to (a logging decorator's `CALLS.append(fn.__name__)`): it keeps the first
run's entries.

    snapshot = PythonState(fn, args)       # before the trace runs
    snapshot.add_module(globals_dict)      # each user module the trace enters
    snapshot.check()                       # after it: None, or UnsupportedSyntaxError
"""

from __future__ import annotations

import ast
import copy
import inspect
import linecache
import textwrap
import types

from ... import errors
from ...errors import SourceLocation
from ..dependencies import python_data


def _copy(value):
    """What a value is compared by afterwards: Python data by a copy (a list appended to in
    place must differ from itself as it was), anything else by identity."""
    return copy.deepcopy(value) if python_data(value) else value


def _same(before, after) -> bool:
    if python_data(before) and python_data(after):
        try:
            return bool(before == after)
        except Exception:  # (an ambiguous comparison: numpy scalars inside)
            return False
    return before is after


class PythonState:
    """The attributes, globals and closure values a traced function may change, as they
    were before it ran (see the module docstring)."""

    def __init__(self, fn, holders, globals_=None, cells=()):
        self.fn = fn
        self.places: list = []  # (kind, holder, name, value as it was)
        self.absent: list = []  # (kind, holder, names present before): new names appear
        self.modules: set = set()
        for holder in holders:
            attributes = getattr(holder, "__dict__", None)
            if isinstance(attributes, dict) and not isinstance(holder, (type, types.ModuleType)):
                self.absent.append(("attribute", holder, set(attributes)))
                for name, value in attributes.items():
                    self.places.append(("attribute", holder, name, _copy(value)))
        if globals_ is not None:
            self.add_module(globals_)
        for name, cell in cells:
            try:
                self.places.append(("cell", cell, name, _copy(cell.cell_contents)))
            except ValueError:  # (an empty cell)
                pass

    def add_module(self, space) -> None:
        """A user module's globals, first seen: the numbers and containers of numbers it
        holds (its functions, classes, modules and arrays are the trace's dependencies)."""
        if id(space) in self.modules:
            return
        self.modules.add(id(space))
        for name, value in space.items():
            if python_data(value) and not name.startswith("__"):
                self.places.append(("global", space, name, _copy(value)))
        self.absent.append(("global", space, set(space)))

    def check(self) -> None:
        """Refuse the first piece of Python data the function changed, putting back every
        one it changed (a refused call leaves the user's state as it found it)."""
        changed = []
        for kind, holder, name, before in self.places:
            present, after = _read(kind, holder, name)
            if not present:
                continue
            if not _same(before, after) and python_data(after) and not _grown(before, after):
                changed.append((kind, holder, name, before))
        for kind, holder, names in self.absent:
            now = holder if kind == "global" else vars(holder)
            for name in sorted(set(now) - names):
                if python_data(now[name]) and not name.startswith("__"):
                    changed.append((kind, holder, name, _ABSENT))
        if not changed:
            return
        kind, holder, name, _ = changed[0]
        for place in reversed(changed):
            _put_back(*place)
        what = {
            "attribute": f"the attribute {name!r} of a {type(holder).__name__} object",
            "global": f"the global {name!r}",
            "cell": f"{name!r} of an enclosing function",
        }[kind]
        raise errors.UnsupportedSyntaxError(
            f"the function changes {what}, Python data, while it runs: the gradient's code "
            "is made from one run of it and would not change it again on later calls (a "
            "counter would stop counting, and what is computed from it would stay the first "
            "call's). Change it outside the differentiated function, or pass it as an "
            "argument",
            _location(self.fn, name),
        )


_ABSENT = object()


def _grown(before, after) -> bool:
    """A list the function only appended to (a log of calls, of names): the first run's
    entries stay in it, and later calls add none; nothing the code computes changes."""
    return (
        isinstance(before, list)
        and isinstance(after, list)
        and len(after) > len(before)
        and _same(after[: len(before)], before)
    )


def _read(kind, holder, name):
    try:
        if kind == "attribute":
            attributes = vars(holder)
            return name in attributes, attributes.get(name)
        if kind == "global":
            return name in holder, holder.get(name)
        return True, holder.cell_contents
    except (TypeError, ValueError):
        return False, None


def _put_back(kind, holder, name, before) -> None:
    if kind == "cell":
        holder.cell_contents = before
        return
    space = vars(holder) if kind == "attribute" else holder
    if before is _ABSENT:
        space.pop(name, None)
    else:
        space[name] = before


def _location(fn, name) -> SourceLocation:
    """The line of `fn`'s source that writes `name` (an attribute, a name, an item of it),
    or its first line."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return SourceLocation("<unknown>", 0, 0, "")
    first = code.co_firstlineno
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(code)))
    except (OSError, TypeError, SyntaxError):
        tree = None
    for node in ast.walk(tree) if tree is not None else ():
        if _writes(node, name):
            line = first + node.lineno - 1
            text = linecache.getline(code.co_filename, line).rstrip("\n")
            return SourceLocation(code.co_filename, line, node.col_offset, text)
    text = linecache.getline(code.co_filename, first).rstrip("\n")
    return SourceLocation(code.co_filename, first, 0, text)


def _writes(node, name) -> bool:
    """Does this statement write `name`: assign it, change it in place, or call a method of
    it that changes a container (`append`, `update`, ...)?"""
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(_names(t, name) for t in targets)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return isinstance(func, ast.Attribute) and _names(func.value, name)
    return False


def _names(target, name) -> bool:
    while isinstance(target, ast.Subscript):
        target = target.value
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_names(t, name) for t in target.elts)
    if isinstance(target, ast.Attribute):
        return target.attr == name
    return isinstance(target, ast.Name) and target.id == name
