"""The digest of the rules a program reaches, for the disk cache's key.

`fingerprint(names)` takes the names of the ops a lowered function calls (its `Call.op`s)
and returns the SHA-256 (hex) of every record the compiler reads for them: each field of
each op's `Rule` (spelling, properties, linearity, ...), its forward function, and its VJP
and JVP lambdas as the compiler inlines them (their template's syntax tree, without line
numbers: moving a rule in its file changes nothing). A user's template is followed into
what it calls: the ops (`rule_for_function` of the objects it names) are digested in turn,
and the other objects it names (its closure's, its module's: `template_name`) by what they
are now.

Sourcegrad's own functions and templates are named, not read: the cache keys every entry
on the digest of sourcegrad's whole source too (`cache.source_digest`). So a rule edited
between runs (`lambda g, ans, x: g * 2.0 * x` -> `g * 3.0 * x`), in the user's module or
in sourcegrad, gives another key, and the entry made with the old rule is never a hit.

Values without a stable description (an object whose repr shows its address) make a key
that no other process makes: a cache miss, never a wrong hit.

Cost: a record is described once and kept while its fields are the same objects (about
50 µs an op to describe, 1 µs to check; a gradient is compiled for each new closure of a
function, a few ms, so each compile must not describe its ops again). A user's template
is read once per process, as the compiler reads it (`vjp_template`); the objects it names
are looked up at each call.

Imports: gast and `registry` only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import os
import types

import gast

from .registry import RULES, op_for_method, rule_for_function, template_name, vjp_template

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_FUNCTIONS: dict = {}  # id(code) -> (code, what `_read_function` read of it)
_OPS: dict = {}  # id(op) -> (op, its field values, its digest): ops of sourcegrad's own
_KEPT = 4096  # (bounded: user programs may make functions and ops at will)


def fingerprint(names) -> str:
    """The SHA-256 (hex) of the ops `names` and of the ops their users' templates call."""
    described = {}
    pending = sorted(set(names))
    while pending:
        name = pending.pop()
        if name in described:
            continue
        op = RULES.get(name)
        if op is None:
            described[name] = ("no op",)
            continue
        calls: set = set()
        described[name] = _op(op, calls)
        pending += sorted(calls - set(described))
    text = repr(sorted(described.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def _op(op, calls: set) -> str:
    """The digest of an op's record; the ops its users' templates call go to `calls`.
    Kept while each field holds the same object, for records without a user's function
    (whose templates name objects that are looked up each time)."""
    values = tuple(op.__dict__.values())
    known = _OPS.get(id(op))
    if (
        known is not None
        and known[0] is op
        and len(known[1]) == len(values)
        and all(a is b for a, b in zip(known[1], values))
    ):
        return known[2]
    users: list = []
    fields = []
    for field in dataclasses.fields(op):
        value = getattr(op, field.name)
        if field.name in ("vjps", "jvps"):
            fields.append((field.name, tuple(_function(v, calls, users, True) for v in value)))
        else:
            fields.append((field.name, _describe(value, calls, users)))
    description = hashlib.sha256(repr(tuple(fields)).encode()).hexdigest()
    if not users:
        if len(_OPS) >= _KEPT:
            _OPS.clear()
        _OPS[id(op)] = (op, values, description)
    return description


def _describe(value, calls: set, users: list):
    """A stable, comparable description of a value an op record or a template holds; a
    user's function met is added to `users`."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return tuple(_describe(v, calls, users) for v in value)
    if isinstance(value, (set, frozenset)):  # (in a stable order: strings hash per process)
        return tuple(sorted(repr(_describe(v, calls, users)) for v in value))
    if isinstance(value, dict):
        return tuple(sorted((repr(k), repr(_describe(v, calls, users))) for k, v in value.items()))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return (type(value).__qualname__,) + tuple(
            (f.name, _describe(getattr(value, f.name), calls, users)) for f in fields
        )
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, types.FunctionType):
        return _function(value, calls, users, False)
    if isinstance(value, type) or callable(value):  # a class, ufunc, builtin, method
        module = getattr(value, "__module__", None) or type(value).__module__
        return ("callable", module, getattr(value, "__qualname__", None), _name_of(value))
    return (type(value).__qualname__, repr(value))


def _name_of(value):
    return getattr(value, "__name__", None)


def _function(fn, calls: set, users: list, template: bool):
    """A function: sourcegrad's own by name (its source is keyed whole), a user's by its
    template (`template`: a VJP or JVP lambda, as the compiler reads it) or its source."""
    if fn is None:
        return None
    code = getattr(fn, "__code__", None)
    if code is None:
        return _describe(fn, calls, users)
    known = _FUNCTIONS.get(id(code))
    if known is None or known[0] is not code:
        known = (code, _read_function(fn, code, template))
        if len(_FUNCTIONS) >= _KEPT:
            _FUNCTIONS.clear()
        _FUNCTIONS[id(code)] = known
    read = known[1]
    if read[0] == "sourcegrad":
        return read
    users.append(fn)
    if read[0] != "template":
        return read
    _, text, params, chains = read
    return ("template", text, _references(fn, params, chains, calls, users))


def _read_function(fn, code, template: bool) -> tuple:
    """What describes a function, read once: ("sourcegrad", module, name) for one of
    sourcegrad's own; ("template", its syntax tree's text, its parameters, the names it
    reads) for a user's template; ("function", module, name, source) for another."""
    name = (getattr(fn, "__module__", None), fn.__qualname__)
    if os.path.abspath(code.co_filename).startswith(_PACKAGE):
        return ("sourcegrad",) + name
    if template:
        lam = vjp_template(fn)
        arguments = lam.args
        params = frozenset(
            a.id
            for a in arguments.args
            + arguments.kwonlyargs
            + [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        )
        chains = tuple(dict.fromkeys(c for c in map(_chain, gast.walk(lam)) if c is not None))
        return ("template", gast.dump(lam), params, chains)
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        source = repr((code.co_code, code.co_consts, code.co_names))
    return ("function",) + name + (source,)


def _references(fn, params, chains, calls: set, users: list) -> tuple:
    """The names the user's template `fn` reads, as they are now (where the compiler finds
    them: `template_name`): the ops it calls go to `calls` (described in turn), every other
    object it names is described (a helper of the user's is read whole, as any function)."""
    described = []
    for chain in chains:
        if chain[0] in params:  # (a method of an argument: an op's, where one claims it)
            op = op_for_method(chain[-1]) if len(chain) > 1 else None
            if op is not None:
                calls.add(op)
            continue
        try:
            obj = template_name(fn, chain[0])
        except NameError:
            continue  # (the compiler refuses an unknown name)
        for attr in chain[1:]:
            obj = getattr(obj, attr, None)
        rule = rule_for_function(obj) if callable(obj) else None
        if rule is not None:
            calls.add(rule.name)
        else:
            described.append((".".join(chain), _describe(obj, calls, users)))
    return tuple(described)


def _chain(node):
    """`a.b.c` as ("a", "b", "c") (a Name or a chain of attribute reads of one), else None."""
    attrs = []
    while isinstance(node, gast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, gast.Name):
        return None
    return (node.id,) + tuple(reversed(attrs))


__all__ = ["fingerprint"]
