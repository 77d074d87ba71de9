"""Optimizations on straight-line IR: copy propagation, CSE and dead-code elimination.

`optimize(fn)` takes an `ir.Function` and returns a new one computing the same
result with: no copies (`a = b` replaced by `b` everywhere), no repeated pure
computation (common subexpressions share one name), and no statement whose
value is never read on the way to the return. Constant folding and 0/1
algebra happen earlier, while rule templates are instantiated, where the
static facts (ranks, static arguments) are at hand.
"""
from __future__ import annotations

import numpy as np

from .ir import Assign, Call, Const, Function, Return, Slc, Tup, Var, reads_of, substitute_atom
from .rules import RULES


def _substitute(stmt, mapping):
    if isinstance(stmt, Assign):
        value = stmt.value
        if isinstance(value, Call):
            value = Call(value.op, tuple(substitute_atom(a, mapping) for a in value.args),
                         tuple((k, substitute_atom(a, mapping)) for k, a in value.kwargs))
        else:
            value = substitute_atom(value, mapping)
        return Assign(stmt.target, value, stmt.loc, stmt.note)
    if isinstance(stmt, Return):
        return Return(substitute_atom(stmt.value, mapping), stmt.loc)
    return stmt


def _hashable(atom):
    if isinstance(atom, Const):
        try:
            hash(atom.value)
        except TypeError:
            return None
        return ("const", type(atom.value).__name__, repr(atom.value))
    if isinstance(atom, Var):
        return ("var", atom.name)
    if isinstance(atom, Tup):
        items = tuple(_hashable(a) for a in atom.items)
        return None if None in items else ("tup", items)
    if isinstance(atom, Slc):
        parts = tuple(_hashable(a) for a in (atom.lower, atom.upper, atom.step))
        return None if None in parts else ("slice", parts)
    return None


def propagate_copies_and_cse(body: list) -> list:
    mapping: dict = {}
    seen: dict = {}
    out = []
    for stmt in body:
        stmt = _substitute(stmt, mapping)
        if isinstance(stmt, Assign):
            value = stmt.value
            if not isinstance(value, Call):
                mapping[stmt.target] = value
                continue
            if RULES[value.op].pure:
                key = (value.op, tuple(_hashable(a) for a in value.args),
                       tuple((k, _hashable(a)) for k, a in value.kwargs))
                if None not in key[1] and all(h is not None for _, h in key[2]):
                    if key in seen:
                        mapping[stmt.target] = Var(seen[key])
                        continue
                    seen[key] = stmt.target
        out.append(stmt)
    return out


def eliminate_dead_code(body: list) -> list:
    live: set = set()
    kept = []
    for stmt in reversed(body):
        if isinstance(stmt, Return):
            live.update(reads_of(stmt))
            kept.append(stmt)
        elif isinstance(stmt, Assign):
            if stmt.target in live:
                live.update(reads_of(stmt))
                kept.append(stmt)
        else:
            kept.append(stmt)
    return list(reversed(kept))


def inline_shape_only_values(body: list, params, shapes: dict) -> list:
    """Read the shape of a value computed only for its shape from the signature instead.

    A reduction's result may be needed by the backward only for `.shape` or `.size`;
    with the input shapes fixed, those are known, so the value need not be computed.
    """
    readers: dict = {}
    for stmt in body:
        for n in reads_of(stmt):
            readers.setdefault(n, []).append(stmt)
    replace = set()
    for name, stmts in readers.items():
        if name in params or shapes.get(name) is None:
            continue
        if all(isinstance(s, Assign) and isinstance(s.value, Call)
               and s.value.op in ("shape", "size") for s in stmts):
            replace.add(name)
    out = []
    for stmt in body:
        if isinstance(stmt, Assign) and isinstance(stmt.value, Call) and \
                stmt.value.op in ("shape", "size") and stmt.value.args[0].name in replace:
            shape = shapes[stmt.value.args[0].name]
            value = shape if stmt.value.op == "shape" else int(np.prod(shape, dtype=np.int64))
            stmt = Assign(stmt.target, Const(value), stmt.loc, stmt.note)
        out.append(stmt)
    return out


def optimize(fn: Function, shapes: dict | None = None) -> Function:
    """Copy propagation and CSE, then dead-code elimination (see the module docstring).

    `shapes` (name -> shape tuple, from the signature) lets values that are computed
    only for their shape be replaced by that shape.
    """
    body = eliminate_dead_code(propagate_copies_and_cse(fn.body))
    if shapes:
        body = inline_shape_only_values(body, set(fn.params), shapes)
        body = eliminate_dead_code(propagate_copies_and_cse(body))
    return Function(fn.name, fn.params, body, fn.source_file, fn.loc, fn.free, fn.user_names)
