"""Python state a traced function changes outside itself: refused, since the code would not.

A trace runs the user's function once per signature; the code made from it runs on every
later call and repeats only the numpy operations recorded. Any change the function makes to
an object that outlives the call happens once, at the trace, and never again:

- an attribute of an object (`self.calls += 1`, `self.last = x`, `setattr(o, "n", v)`), of
  an object with `__slots__`, or of a class (`Model.count += 1`);
- a module global (`global step; step += 1`) or a closure cell (`nonlocal n`);
- a list, dict or set it holds (`HIST.append(float(loss))`, `self.inputs.append(x)`,
  `cache["k"] = v`, `SEEN.add(k)`), at any depth.

A counter stops counting, a log of losses keeps the first call's entry for ever (51 calls,
one entry), a layer's cached input stays the first call's. That is silently wrong, so each
such change is refused, naming the object and located at the line that makes it (the source
front end refuses the same statements: `frontend.names.refuse_outside_change`), and every
change is put back: a refused call leaves the user's state as it found it. What the function
builds and changes locally is not watched (it does not outlive the call), nor an attribute
filled in on first use by `functools.cached_property` (later calls would find it there).

How: before the trace runs, every object reachable from the function's globals, closure
cells, `self` and object arguments (through attributes, lists, dicts, sets and tuples: the
user's objects only, not a library's insides) is copied one level deep (its attributes or
items, by identity); afterwards each is compared with its copy.

    snapshot = PythonState(fn, roots, globals_, cells)   # before the trace runs
    snapshot.add_module(globals_dict)                     # each user module the trace enters
    snapshot.check(codes)                                 # after it: None, or the refusal

One change is not refused: an argument (or a list, tuple or dict of arguments) stored into an
attribute the function did not read before (`net.params = params`): it is made again on
every call (`stored_arguments`; `stored_arguments()` below finds them, `read_first` holds the
attributes read while they still held their old values).
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import sys
import textwrap

import numpy as np

from ... import errors
from ...errors import SourceLocation
from ..dependencies import user_module
from .frames import in_a_library
from .objects import MOST_OBJECTS, attributes_of, user_object
from .stored_arguments import Store

# values compared by value, not identity, when an attribute or item is written again: an
# immutable number or string made anew (`self.n = int(self.n)`) is not a change
_IMMUTABLE = (bool, int, float, complex, str, bytes, type(None), np.generic)
# the methods of a list, dict or set that change it (where `_location` looks for a call)
_CHANGING_METHODS = frozenset(
    "append extend insert pop remove clear sort reverse update setdefault popitem add "
    "discard difference_update intersection_update symmetric_difference_update".split()
)


class _Watched:
    """One object as it was before the trace: its kind ("globals", "object", "list",
    "dict", "set"), the path the user's code reaches it by, and its copy one level deep."""

    __slots__ = ("value", "kind", "path", "before")

    def __init__(self, value, kind, path, before):
        self.value, self.kind, self.path, self.before = value, kind, path, before


class PythonState:
    """The objects a traced function may change, as they were before it ran (see the
    module docstring). `roots`: (path, value) of the objects it is given (`self`, its
    object arguments)."""

    def __init__(self, fn, roots=(), globals_=None, cells=()):
        self.fn = fn
        self.watched: dict = {}  # id(object) -> _Watched
        self.cells: list = []  # (name, cell, its value as it was)
        self.modules: set = set()
        # (id(object), attribute) read by the user's code while it held its value from
        # before the call (`stored_arguments.reads_noted`), and the classes whose reads could
        # not be watched: a store into those is not made again on each call, but refused
        self.read_first: set = set()
        self.unread_classes: set = set()
        self.on_watched = None  # called with the class of each object watched from now on
        self.accepted: set = set()  # (id(object), attribute) stored again on each call
        self.read_then_stored: set = set()  # (those an argument is stored into, read first)
        if globals_ is not None:
            self.add_module(globals_)
        for name, cell in cells:
            try:
                value = cell.cell_contents
            except ValueError:  # (an empty cell)
                continue
            self.cells.append((name, cell, value))
            self._walk([(name, value)])
        self._walk(list(roots))

    def add_module(self, space) -> None:
        """A user module's globals, first seen (the trace enters each it runs code of)."""
        if id(space) in self.modules:
            return
        self.modules.add(id(space))
        module = sys.modules.get(space.get("__name__", ""))
        if in_a_library(space.get("__file__")) or module is not None and not user_module(module):
            return  # (an installed library's: its insides are its own, patched while tracing)
        module = space.get("__name__", "a module")
        self.watched[id(space)] = _Watched(space, "globals", module, _globals_of(space))
        self._walk([(name, value) for name, value in _globals_of(space).items()])

    def _walk(self, pending) -> None:
        """Copy each object reachable from `pending` ((path, value) pairs) one level deep,
        breadth first (the shortest path names an object), up to MOST_OBJECTS objects."""
        while pending and len(self.watched) < MOST_OBJECTS:
            path, value = pending.pop(0)
            if id(value) in self.watched:
                continue
            kind = _kind(value)
            if kind is None:
                if type(value) is tuple:  # (immutable itself, it may hold what is not)
                    pending += [(f"{path}[{i}]", item) for i, item in enumerate(value)]
                continue
            before = _copy(value, kind)
            self.watched[id(value)] = _Watched(value, kind, path, before)
            if kind == "object" and self.on_watched is not None and not isinstance(value, type):
                self.on_watched(type(value))
            if kind == "object":
                pending += [(f"{path}.{name}", item) for name, item in before.items()]
            elif kind == "dict":
                pending += [(f"{path}[{key!r}]", item) for key, item in before.items()]
            else:
                pending += [(f"{path}[{i}]", item) for i, item in enumerate(before)]

    # -- arguments stored into objects (`stored_arguments`) -------------------------------------

    def instance_classes(self) -> set:
        """The classes of the objects watched (not classes themselves)."""
        return {
            type(w.value)
            for w in self.watched.values()
            if w.kind == "object" and not isinstance(w.value, type)
        }

    def watches(self, obj) -> bool:
        watched = self.watched.get(id(obj))
        return watched is not None and watched.value is obj

    def note_read(self, obj, name, value) -> None:
        """The user's code read obj's attribute `name` as `value` (`__dict__`: all of them):
        noted where it still held what it held before the call."""
        before = self.watched[id(obj)].before
        if name == "__dict__" and isinstance(value, dict):
            self.read_first.update(
                (id(obj), n) for n, v in before.items() if n in value and _same(value[n], v)
            )
        elif name in before and _same(value, before[name]):
            self.read_first.add((id(obj), name))

    def stored_arguments(self, recipe_of) -> list:
        """The attributes of the user's objects the function set to what its arguments make
        (`recipe_of(value, existing)`: a recipe, or None), without reading them first, as
        `stored_arguments.Store`s; `check` no longer counts them as changes. Called while the
        values stored are still the traced ones (before they are made plain)."""
        existing = frozenset(self.watched)
        stores = []
        for watched in list(self.watched.values()):
            obj = watched.value
            if watched.kind != "object" or isinstance(obj, type):
                continue
            if type(obj) in self.unread_classes:
                continue
            now = _now(watched)
            for name in _changes(watched, now):
                if name not in now:  # (deleted)
                    continue
                recipe = recipe_of(now[name], existing)
                if recipe is None:
                    continue
                if (id(obj), name) in self.read_first:  # (refused by `check`, saying why)
                    self.read_then_stored.add((id(obj), name))
                    continue
                stores.append(Store(obj, name, recipe))
                self.accepted.add((id(obj), name))
        return stores

    def _pending(self, watched) -> list:
        """The changes of `watched` `check` refuses (not the stores made on each call)."""
        return [
            c
            for c in _changes(watched, _now(watched))
            if (id(watched.value), c) not in self.accepted
        ]

    def put_back(self) -> None:
        """Restore every watched object and closure cell that changed as it was before the
        trace (a refused or failed trace leaves the user's state as it found it)."""
        for watched in self.watched.values():
            if _changes(watched, _now(watched)):
                _put_back(watched)
        for _, cell, value in self.cells:
            if _cell_moved(cell, value):
                cell.cell_contents = value

    def check(self, codes=()) -> None:
        """Refuse the first change the function made to what it was given or reaches, put
        back every one (see the module docstring). `codes`: the user code the trace ran,
        searched for the line that makes it (the function's own first)."""
        changed = [w for w in self.watched.values() if self._pending(w)]
        cells = [
            (name, cell, value) for name, cell, value in self.cells if _cell_moved(cell, value)
        ]
        if not changed and not cells:
            return
        codes = [getattr(self.fn, "__code__", None), *codes]
        described = [(f"{name!r} of an enclosing function", name, None) for name, _, _ in cells]
        for watched in changed:
            changes = self._pending(watched)
            described.append((*_described(watched, changes), (id(watched.value), changes[0])))
        located = []
        for what, name, key in described:
            rank, where = _location(codes, name)
            located.append((rank, where.line, what, where, key))
        # (the change the function makes first: its own line before a helper's)
        _, _, what, where, key = min(located, key=lambda found: found[:2])
        self.put_back()  # (every change: the stores made again on each call too)
        if key in self.read_then_stored:
            raise errors.OutsideChangeError(
                f"the function stores its argument into {what}, which each call of the "
                "gradient would store again, but reads the attribute before storing into it: "
                "a later call would read the previous call's argument there, and the code "
                "made from one run of it (a trace) would keep what this run read. Read it "
                "after the store, or pass the value it held as an argument",
                where,
            )
        raise errors.OutsideChangeError(
            f"the function changes {what} while it runs: the gradient's code is made from one "
            "run of it (a trace) and repeats only its numpy operations, so later calls would "
            "not change it again (a counter would stop counting, a log keep the first call's "
            "entries, and what is computed from it stay the first call's). Build a local one "
            "and return it beside the result (grad(f, has_aux=True) for f returning (loss, "
            "aux)), change it outside the differentiated function, or pass it as an argument "
            "(an argument stored into an attribute, `net.params = params`, is stored again "
            "on each call)",
            where,
        )


def _kind(value):
    """How an object is watched, or None where it is not (numbers, arrays, functions,
    modules, a library's objects: what the user's code cannot change in place, or whose
    insides are the library's)."""
    kind = type(value)
    if kind is list:
        return "list"
    if kind is dict:
        return "dict"
    if kind is set:
        return "set"
    if isinstance(value, (list, dict, set)):  # (a subclass: `collections.OrderedDict`)
        return "list" if isinstance(value, list) else "dict" if isinstance(value, dict) else "set"
    if user_object(value):
        return "object"
    return None


def _copy(value, kind):
    if kind == "object":
        if isinstance(value, type):  # (a class: its own attributes, not its machinery)
            return {k: v for k, v in vars(value).items() if not k.startswith("__")}
        try:
            return attributes_of(value)
        except TypeError:  # (a `__dict__` that is not one)
            return {}
    if kind == "dict":
        return dict(value)
    if kind == "set":
        return frozenset(value)
    return tuple(value)


def _globals_of(space) -> dict:
    """A module's globals the user's code may change (not its `__dunder__` machinery)."""
    return {k: v for k, v in space.items() if not k.startswith("__")}


def _now(watched):
    if watched.kind == "globals":
        return _globals_of(watched.value)
    return _copy(watched.value, watched.kind)


def _changes(watched, now) -> list:
    """The names or positions whose values changed (an object's, a dict's, a module's), or
    [None] where a list or set changed; [] where nothing did."""
    before = watched.before
    if watched.kind == "set":
        return [] if now == before else [None]
    if watched.kind == "list":
        same = len(now) == len(before) and all(map(_same, now, before))
        return [] if same else [None]
    names = [k for k in before if k not in now or not _same(now[k], before[k])]
    added = [k for k in now if k not in before]
    if watched.kind == "object":  # (a cached_property filled in on its first read)
        added = [k for k in added if not _cached_property(watched.value, k)]
    return names + added


def _same(now, before) -> bool:
    if now is before:
        return True
    if type(now) is tuple and type(before) is tuple:  # (`self.shape = x.shape`)
        return len(now) == len(before) and all(map(_same, now, before))
    if type(now) is not type(before) or not isinstance(now, _IMMUTABLE):
        return False
    try:
        return bool(now == before) or bool(now != now and before != before)  # (NaN)
    except Exception:  # (a comparison that refuses: say changed)
        return False


def _cached_property(obj, name) -> bool:
    return isinstance(getattr(type(obj), name, None), functools.cached_property)


def _cell_moved(cell, value) -> bool:
    try:
        return not _same(cell.cell_contents, value)
    except ValueError:  # (emptied: `del`)
        return True


def _put_back(watched) -> None:
    """Restore an object to its copy (its attributes, its items, a module's globals)."""
    value, before = watched.value, watched.before
    if watched.kind == "list":
        value[:] = before
    elif watched.kind in ("dict", "set"):
        value.clear()
        value.update(before)
    elif watched.kind == "globals":
        for name in set(_globals_of(value)) - set(before):
            del value[name]
        value.update(before)
    else:
        for name in set(attributes_of(value)) - set(before):
            if not isinstance(value, type) or not name.startswith("__"):
                try:
                    delattr(value, name)
                except AttributeError:
                    pass
        for name, item in before.items():
            if not _same(getattr(value, name, _ABSENT), item):
                setattr(value, name, item)


_ABSENT = object()


def _described(watched, changes) -> tuple:
    """(what changed (`changes`: its changes), in words; the name the user's code writes it by)."""
    if watched.kind == "globals":
        return f"the global {changes[0]!r}", changes[0]
    if watched.kind == "object":
        owner = (
            f"the class {watched.value.__name__}"
            if isinstance(watched.value, type)
            else f"a {type(watched.value).__name__} object"
        )
        name = changes[0]
        return f"the attribute {name!r} of {owner} ({watched.path}.{name})", name
    kind = type(watched.value).__name__
    # the name its path ends with: `self.inputs` -> inputs, `CACHE['k']` -> CACHE
    searched = watched.path.split("[")[0].rsplit(".", 1)[-1]
    return f"the {kind} {watched.path}", searched


def _location(codes, name) -> tuple:
    """The line of the user's code that writes `name` (an attribute, a name, an item of it,
    a changing method of it), searched in `codes` in order, or the function's first line:
    (the position in `codes` of the code it is in, len(codes) where not found; the line)."""
    for rank, code in enumerate(codes):
        if code is None:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(code)))
        except (OSError, TypeError, SyntaxError):
            continue
        found = [node for node in ast.walk(tree) if _writes(node, name)]
        if found:
            node = min(found, key=lambda n: (n.lineno, n.col_offset))
            line = code.co_firstlineno + node.lineno - 1
            text = linecache.getline(code.co_filename, line).rstrip("\n")
            return rank, SourceLocation(code.co_filename, line, node.col_offset, text)
    first = next((c for c in codes if c is not None), None)
    if first is None:
        return len(codes), SourceLocation("<unknown>", 0, 0, "")
    text = linecache.getline(first.co_filename, first.co_firstlineno).rstrip("\n")
    return len(codes), SourceLocation(first.co_filename, first.co_firstlineno, 0, text)


def _writes(node, name) -> bool:
    """Does this node write `name`: assign or delete it or an item of it, change it in
    place, call a method of it (`append`, `update`, ...), or `setattr(o, "name", v)`?"""
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.Delete):
            targets = node.targets
        else:
            targets = [node.target]
        return any(_names(t, name) for t in targets)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return isinstance(func, ast.Attribute) and _names(func.value, name)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _CHANGING_METHODS:
            return _names(func.value, name)
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and len(node.args) > 1:
            return isinstance(node.args[1], ast.Constant) and node.args[1].value == name
    return False


def _names(target, name) -> bool:
    while isinstance(target, ast.Subscript):
        target = target.value
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_names(t, name) for t in target.elts)
    if isinstance(target, ast.Attribute):
        return target.attr == name
    return isinstance(target, ast.Name) and target.id == name
