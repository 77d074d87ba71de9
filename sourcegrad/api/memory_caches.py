"""What compiled gradients keep in memory, and for how long (the on-disk cache, across
processes, is `sourcegrad.cache`).

- per function, held weakly (`COMPILED`, `IR`): the lowered IR, keyed on the code
  object it was lowered from (a swapped `__code__` is lowered again; the compiled code
  and its fast entry check it), and the loaded code per signature (`Compiled`), bound to
  that function's own global and closure values. They go when the function goes.
- per code (`template_table()`, an LRU of `TEMPLATES_KEPT`): the pipeline's product
  (`Template`), keyed on everything the generated code depends on (`Compiling._disk_key`:
  the lowered body with its inlined constants, the signatures of the arrays it reads from
  globals and closures, the input signature, the mode). A new closure of the same code
  over arrays of the same shapes (a `def` per training step over each batch) finds it and
  only loads it bound to its own values: lowering and loading (a few ms) but no
  differentiation, and nothing of an earlier closure is kept. Numbers a closure holds are
  inlined, so they are part of the key; other objects (lists, ...) are keyed by identity
  and kept by the template. The on-disk cache (`sourcegrad.cache`) holds the same, across
  processes.

Before a function's source is lowered (`lowered`) it is checked to be the code Python runs
(`sourcegrad.compiler.frontend.source_check`): a file edited after import is refused, located. Compiled code
stays valid while every global and closure value it was built from is still bound
(`still_bound`). `clear()` forgets everything compiled in this process.
"""

from __future__ import annotations

import functools
import gc
import operator
import threading
import types
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..compiler import check_current, flat_members, function_run_by, lower, same_members
from ..ops import rule_for_function


@dataclass
class Compiled:
    """One specialisation: the generated source, its module and function, and what it saves."""

    source: str
    module: object
    fn: object
    saved: list
    finish: object = None  # gives the gradients their inputs' types
    # the global and closure values the code was built from, (kind, dict or cell, name,
    # value): it is valid while each is still bound (`still_bound`), checked per call
    dependencies: tuple = ()
    ir: object = None  # the optimized gradient IR the source was printed from
    fresh: tuple = ()  # per gradient: the generated code makes it a new array
    # powers of Python numbers that may make a complex value (compiler.complex_power_sites):
    # where there are any, each call's results are checked (no fast entry)
    complex_sites: tuple = ()
    converters: tuple | None = None  # per gradient, the conversion the fast path applies (or None)
    settled: bool = False  # finish and converters were fitted to a first result
    code: object = None  # the differentiated function's code object it was built from
    control_flow: bool = False  # the generated code has loops or branches
    # (position, location of the update) of the parameters the function may change in place:
    # a call must not pass one sharing memory with another argument (`check_distinct`)
    updated: tuple = ()
    trace: object = None  # the compiler.trace.Trace the code was made from, or None
    # a VJP whose backward takes its residuals in one list it empties (Mode.handing_over)
    handed: bool = False


@dataclass
class Template:
    """What the pipeline made for one `_disk_key` (see the module docstring): loaded once per
    function that needs it. Holds no array of the globals and closure of the function it came
    from (their values are bound per function, `_instance`)."""

    source: str
    module_name: str
    names: list
    saved: list
    finish: object
    ir: object
    fresh: tuple
    control_flow: bool
    kept: tuple  # the free values its key names by identity (see _disk_key)
    complex_sites: tuple = ()  # (compiler.complex_power_sites; never from the disk cache)


# fn -> {(wrt, single, with_value, backend, class name): {signature: Compiled}}, and
# _TEMPLATES_KEY -> the templates (so that replacing or clearing it forgets everything)
COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
IR: weakref.WeakKeyDictionary = (
    weakref.WeakKeyDictionary()
)  # fn -> (the code object it was lowered from, its IR)
# fn -> (its code object, {its int arguments' values: its IR}), where it is lowered per value
BY_VALUE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# fn -> (its code object, {the TreeDefs of its arguments: its IR on their leaves})
TREE_IR: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
SHARED_LOCK = threading.RLock()
TEMPLATES_KEPT = 256
# how many times a signature was compiled in this process (lowered or traced, then
# differentiated or found as a template): `compile_count()`
_COMPILES = [0]


def compile_count() -> int:
    """How many signatures gradients compiled in this process so far (each call that missed
    the compiled code of its signature and lowered or traced the function again). A repeated
    call with equal inputs adds none: tests and the benchmark assert it."""
    return _COMPILES[0]


def counted_compile() -> None:
    _COMPILES[0] += 1


class _TemplatesKey:
    """The key of the templates in COMPILED (a weakly referenceable object kept alive here)."""


_TEMPLATES_KEY = _TemplatesKey()


def template_table() -> OrderedDict:
    return COMPILED.setdefault(_TEMPLATES_KEY, OrderedDict())


def template(key):
    templates = template_table()
    template = templates.get(key)
    if template is not None:
        templates.move_to_end(key)
    return template


def remember(key, template):
    templates = template_table()
    templates[key] = template
    while len(templates) > TEMPLATES_KEPT:
        templates.popitem(last=False)


def of_function(table, fn, default=None):
    try:
        return table.get(fn, default)
    except TypeError:  # not weakly referenceable: not kept
        return default


def compiled_for(fn) -> dict:
    try:
        return COMPILED.setdefault(fn, {})
    except TypeError:  # not weakly referenceable: this Gradient keeps its own
        return {}


def code_of(fn):
    """The code object a function runs (see `function_run_by`), or None."""
    return getattr(function_run_by(fn), "__code__", None)


_MISSING = object()


def still_valid(fn) -> bool:
    """False when a global or closure value fn's lowered IR was built from was rebound, or
    its code was replaced."""
    known = of_function(IR, fn)
    return known is None or known[0] is code_of(fn) and still_bound(known[1].dependencies)


def still_bound(dependencies) -> bool:
    """Whether each global or closure value of `dependencies` (a Compiled's, an IR's) is
    still bound. Each compiled code checks its own: code built before a rebinding stays
    stale after another gradient of the same function has been rebuilt for the new value.
    `Dependencies` (what a Compiled holds) are checked by their plan: the same answer."""
    if type(dependencies) is Dependencies:
        return dependencies.still_bound()
    return _each_still_bound(dependencies)


class Dependencies(tuple):
    """A compiled code's dependency records (a tuple of them), with the plan that checks
    them on each call (`still_bound`). A trace of an object network has hundreds: a 20-layer
    class network's, attribute, "names" and "members" records per layer, cost ~1 us each
    checked one by one in Python. The plan keeps, per object with a plain `__dict__`, that
    dict's keys and values as they were when the plan was made (and agreed with the
    records): four C-level passes over all of them at once (`map(operator.is_, ...)`) tell
    that no object's `__dict__` changed, which answers all its attribute and "names"
    records. Where one did, that object's records are checked one by one (a number by value
    there: a property's new float); the other objects' by their own snapshot. Every record
    is still checked on every call."""

    _plan = None

    def still_bound(self) -> bool:
        plan = self._plan
        if plan is None:
            plan = self._plan = _plan(self)
        at_once, groups, members, rest = plan
        if not _unchanged(*at_once):
            for holder, attributes, group_keys, group_values, records in groups:
                if not _unchanged(
                    (holder,),
                    (attributes,),
                    (attributes,),
                    [len(group_keys)],
                    group_keys,
                    group_values,
                    (),
                    [],
                    (),
                ) and not _each_still_bound(records):
                    return False
            for held, known in members:
                if not same_members(held, known):
                    return False
        for held, known in members[at_once.flat :]:
            if not same_members(held, known):
                return False
        return _each_still_bound(rest)


class _AtOnce(tuple):
    """`_unchanged`'s arguments; `flat`: how many of the plan's "members" they cover."""

    flat = 0


def _unchanged(holders, holders_dicts, dicts, sizes, keys, values, lists, list_sizes, items):
    """Is each holder's `__dict__` the dict it was, each dict (a holder's, a container's) of
    the size, keys and values it had, each list of the size and items it had, all by
    identity? Each a C-level pass over all of them (`map(operator.is_, ...)`)."""
    return (
        all(map(operator.is_, map(_DICT_OF, holders), holders_dicts))
        and list(map(len, dicts)) == sizes
        and list(map(len, lists)) == list_sizes
        and all(map(operator.is_, chain.from_iterable(dicts), keys))
        and all(map(operator.is_, chain.from_iterable(map(dict.values, dicts)), values))
        and all(map(operator.is_, chain.from_iterable(lists), items))
    )


_DICT_OF = operator.attrgetter("__dict__")


def prepared(dependencies) -> Dependencies:
    """`dependencies` as a `Dependencies`, its plan made now (while the objects are as the
    records found them, so that their snapshots are taken from the same state)."""
    if type(dependencies) is not Dependencies:
        dependencies = Dependencies(dependencies)
        dependencies._plan = _plan(dependencies)
    return dependencies


def _plan(dependencies) -> tuple:
    """(all at once, groups, members, rest) of `Dependencies.still_bound`. Per object with
    a plain `__dict__` whose attribute and "names" records agree with it now, a group
    (object, its `__dict__`, its keys, its values, the records); all at once: the groups'
    objects, dicts, sizes, and keys and values in one tuple each. The "members" records'
    (container, what it held) (the container's own binding is a record of its holder's);
    the records checked one by one."""
    by_holder: dict = {}
    members, rest = [], []
    for record in dependencies:
        kind, holder, name, value = record
        if kind == "members":
            held_kind, held, known = value
            members.append((held, known))
            record = kind, holder, name, value = (held_kind, holder, name, held)
        if kind in ("attribute", "names") and _plain_dict(holder):
            by_holder.setdefault(id(holder), (holder, []))[1].append(record)
        else:
            rest.append(record)
    groups = []
    for holder, records in by_holder.values():
        attributes = holder.__dict__
        if not all(_agrees(attributes, record) for record in records):
            rest += records  # (changed since the trace: checked one by one)
            continue
        groups.append((holder, attributes, tuple(attributes), tuple(attributes.values()), records))
    # the containers holding no container, as they are now where that is as `members` found
    # them (first in `members`: `_AtOnce.flat` of them are covered)
    flat: list = []
    nested: list = []
    for held, known in members:
        shape = flat_members(known)
        ok = shape is not None and shape[0] in (list, dict) and same_members(held, known)
        (flat if ok else nested).append((held, known))
    dicts = [h for h, _ in flat if type(h) is dict]
    lists = [h for h, _ in flat if type(h) is list]
    at_once = _AtOnce(
        (
            tuple(g[0] for g in groups),
            tuple(g[1] for g in groups),
            tuple(g[1] for g in groups) + tuple(dicts),
            [len(g[2]) for g in groups] + [len(d) for d in dicts],
            tuple(k for g in groups for k in g[2]) + tuple(k for d in dicts for k in d),
            tuple(v for g in groups for v in g[3]) + tuple(v for d in dicts for v in d.values()),
            tuple(lists),
            [len(x) for x in lists],
            tuple(item for x in lists for item in x),
        )
    )
    at_once.flat = len(flat)
    return at_once, groups, flat + nested, rest


_PLAIN_GETATTRIBUTE: tuple = (object.__getattribute__, types.ModuleType.__getattribute__)


def _plain_dict(holder) -> bool:
    """Does `holder` keep its attributes in a plain `__dict__` that getattr reads (no custom
    `__getattribute__`; not a class, whose attributes come from its bases too)?"""
    if isinstance(holder, type) or type(getattr(holder, "__dict__", None)) is not dict:
        return False
    return type(holder).__getattribute__ in _PLAIN_GETATTRIBUTE


def _agrees(attributes, record) -> bool:
    """Does the `__dict__` `attributes` hold what `record` says (the value itself, read
    from the dict, not through a class's data descriptor; the names)?"""
    kind, holder, name, value = record
    if kind == "names":
        return attributes.keys() == value
    descriptor = getattr(type(holder), name, None)
    if hasattr(type(descriptor), "__set__"):  # (a property or slot of the class wins)
        return False
    return attributes.get(name, _MISSING) is value


def _each_still_bound(dependencies) -> bool:
    """`still_bound`, record by record."""
    for kind, container, name, value in dependencies:
        if kind == "contents":  # an array a trace's constant may come from: its values
            if container.shape != value.shape or not np.array_equal(container, value, True):
                return False
            continue
        if kind == "names":  # the attributes an object has: a new one may shadow its class's
            if frozenset(vars(container)) != value:
                return False
            continue
        if kind == "members":  # a container of arrays a trace read: itself and its members
            held_kind, held, known = value
            if not _each_still_bound([(held_kind, container, name, held)]) or not same_members(
                held, known
            ):
                return False
            continue
        if kind == "snapshot":  # a dict or list of numbers a trace read: by value
            try:
                if getattr(container, name, _MISSING) != value:
                    return False
            except Exception:  # (a comparison numpy refuses: say changed)
                return False
            continue
        if kind == "items":  # a global's or a cell's dict or list of numbers: by value
            now = (
                container.get(name, _MISSING) if type(container) is dict else _cell_value(container)
            )
            try:
                if type(now) is not type(value) or now != value:
                    return False
            except Exception:  # (a comparison numpy refuses: say changed)
                return False
            continue
        if kind == "attribute":  # an attribute of an object (a property makes a new number)
            current = getattr(container, name, _MISSING)
            if current is not value and not (
                type(current) is type(value)
                and isinstance(value, (int, float, str, bool))
                and current == value
            ):
                return False
            continue
        current = (
            container.get(name, _MISSING)
            if kind == "global"
            else getattr(container, "__code__", _MISSING)
            if kind == "code"
            else getattr(getattr(container, name, None), "__func__", _MISSING)
            if kind == "method"
            else _cell_value(container)
        )
        if current is not value:
            return False
    return True


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def static_ints(params, args) -> dict:
    """The int (and bool) arguments, and function arguments: part of a signature, so code
    is lowered per value (a recursion on an int unrolls; a function passed is inlined)."""
    if args is None:
        return {}
    return {p: a for p, a in zip(params, args) if type(a) in (int, bool) or is_function(a)}


def is_function(value) -> bool:
    """A function passed as an argument (a callback such as an ODE's dynamics)."""
    return callable(value) and not hasattr(value, "shape") and not isinstance(value, type)


def lowered_for_values(by_value, fn, params, args):
    """fn's IR with its int arguments as constants (a recursion on them unrolls)."""
    static = static_ints(params, args)
    key = tuple(static.items())
    if key not in by_value:
        by_value[key] = lowered(fn, static)
    return by_value[key]


def lowered(fn, static=None, structure=None):
    """fn's IR, after checking that its source (and that of each function it inlines) is the
    code Python runs; its dependencies name each inlined function's code, so that code
    replaced later (as autoreload does) makes the compiled code stale. `structure`: the
    TreeDefs of the arguments passed as their leaves (see `_TreeGradient`)."""
    check_current(fn)
    primal = lower(fn, static, structure) if static or structure else lower(fn)
    callees = [
        v
        for _, _, _, v in primal.dependencies
        if isinstance(v, types.FunctionType) and rule_for_function(v) is None
    ]
    for callee in callees:
        check_current(callee)
    primal.dependencies = list(primal.dependencies) + [
        ("code", callee, "__code__", callee.__code__) for callee in callees
    ]
    return primal


def forget(fn):
    """Drop the IR and every compiled gradient of `fn` (its globals or code changed)."""
    for table in (IR, BY_VALUE, TREE_IR):
        try:
            table.pop(fn, None)
        except TypeError:
            pass
    for compiled in of_function(COMPILED, fn, {}).values():
        compiled.clear()


def collector_paused(method):
    """Run `method` with Python's cyclic garbage collector off: compiling makes many small
    objects that live until it ends (IR statements, syntax trees), and the collector's
    passes over all of them took a third of a 2000-statement function's compile time."""

    @functools.wraps(method)
    def paused(*args, **kwargs):
        was_on = gc.isenabled()
        gc.disable()
        try:
            return method(*args, **kwargs)
        finally:
            if was_on:
                gc.enable()

    return paused


def clear() -> None:
    """Forget every gradient compiled and every IR lowered in this process (the disk cache
    stays): gradients made after this compile afresh, as in a new process."""
    with SHARED_LOCK:
        for table in (COMPILED, IR, BY_VALUE, TREE_IR):
            table.clear()
