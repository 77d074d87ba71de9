"""Replaying a rule template's instantiation for operands of the same shape.

A long function instantiates the same few VJP templates thousands of times for operands
that differ only in their names (`x41 * w` and `x46 * w`, both (8,) float64): partial
evaluation then takes the same branches, folds the same constants and emits the same
statements each time. `Instantiator.template` records what one instantiation did to its
state (the names it asked the namer for, the statements it emitted with their abstract
values, a renaming, a discarded attempt), with the operands' names replaced by their
positions; for operands of the same *shape* it replays that log with the new names
instead of evaluating the template again. Replaying gives the very same statements,
names, abstract values and definitions, in the same order, as evaluating would.

The shape (`shape_key`) is everything the evaluation reads of its surroundings:
the template (the function itself: closures of one lambda differ by the constants they
hold), the rule, the argument position, the mode (VJP or JVP), the operands as
atoms (constants by value, names by position, so `x * x` differs from `x * y`), and
for each name its abstract value (shape, dtype, or the value itself where known), the
earlier value whose shape `.shape` reads (`shape_source`), and, where it was made by one
of the operations the simplifications look through (`Instantiator.made_by`: a broadcast,
a quotient, a transpose, a matrix product), that call, whose operands are keyed in turn.
An operand that cannot be keyed (an array constant, an object) is evaluated as before.

`shape_key(inst, fn, rule, call, first, ans, argnum)` returns (key, names) or None;
`canonical(log, names, result, top_name, loc, note)` turns a log into a `Recording` (or None when
it holds something the key does not account for); `replay(inst, recording, names,
top_name)` applies it and returns the atom holding the result.
"""

from __future__ import annotations

import numpy as np

from ...ops import RULES
from ..ir import Assign, Call, Const, Slc, Tup, Var
from ..names import name_for_call

# the ops whose definitions the template simplifications look into (`made_by`: a
# broadcast scalar, `(1 / y) * x`, `x.T.T`, `(a @ b).T`): what made an operand matters then
_LOOKED_THROUGH = frozenset(("broadcast_to", "div_op", "T", "matmul_op"))
_ARRAY_CONSTANT_MAX = 64  # elements of a known array keyed by value (larger: not replayed)


class _NoKey(Exception):
    pass


def shape_key(inst, fn, rule, call, first, ans, argnum):
    """(the instantiation's shape, the operand names by position), or None."""
    slots: dict = {}
    names: list = []

    def atom(a):
        t = type(a)
        if t is Var:
            i = slots.get(a.name)
            if i is None:
                i = slots[a.name] = len(names)
                names.append(a.name)
            return i
        if t is Const:
            return ("c", _value_key(a.value))
        if t is Tup:
            return ("t",) + tuple(atom(x) for x in a.items)
        if t is Slc:
            return ("s", atom(a.lower), atom(a.upper), atom(a.step))
        if a is None:
            return ("none",)
        raise _NoKey

    try:
        operands = (
            atom(first),
            atom(ans),
            tuple(atom(a) for a in call.args),
            tuple((k, atom(a)) for k, a in call.kwargs),
        )
        facts = []
        i = 0
        while i < len(names):  # (a shape source adds a name: keyed in turn)
            name = names[i]
            made = inst.defs.get(name)
            if made is not None and made.op in _LOOKED_THROUGH:
                made = inst.made_by(Var(name))  # (the simplifications read its operands too)
                if made is not None:
                    made = (
                        made.op,
                        tuple(atom(a) for a in made.args),
                        tuple((k, atom(a)) for k, a in made.kwargs),
                    )
            else:
                made = None  # (what made it is not looked at)
            source = inst.shape_source.get(name)
            facts.append(
                (
                    _aval_key(inst.env.get(name)),
                    None if source is None else atom(Var(source)),
                    made,
                )
            )
            i += 1
    except _NoKey:
        return None
    return (fn, id(rule), argnum, inst.jvp_mode, operands, tuple(facts)), names


def _aval_key(aval):
    if aval is None:
        return None
    return (aval.known, _value_key(aval.stand_in, aval.known))


def _value_key(value, known=True):
    """A hashable stand-in for `value` that tells apart what evaluation could tell apart:
    numbers by type and repr (0.0 and -0.0, 1 and 1.0 and True differ); arrays by shape and
    dtype, and by their elements where the value is known."""
    t = type(value)
    if t is np.ndarray:
        if not known:
            return (t, value.shape, value.dtype)
        if value.size > _ARRAY_CONSTANT_MAX or value.dtype.hasobject:
            raise _NoKey
        return (t, value.shape, value.dtype, value.tobytes())
    if t in (bool, int, float, complex, str, type(None), type(Ellipsis)) or isinstance(
        value, np.generic
    ):
        return (t, repr(value))
    if t is tuple or t is list:
        return (t,) + tuple(_value_key(v, known) for v in value)
    if t is slice:
        return (t, _value_key(value.start), _value_key(value.stop), _value_key(value.step))
    if isinstance(value, np.dtype):
        return (np.dtype, value)
    raise _NoKey


class Recording:
    """One instantiation's effects, with names as positions: `events` in order, and the
    result atom. Positions below `len(names)` of the key are operands; the n-th name the
    instantiation asked for is position `len(names) + n`."""

    __slots__ = ("events", "result")

    def __init__(self, events, result):
        self.events, self.result = events, result


def canonical(log, names, result, top_name, loc, note):
    """A `Recording` of `log` (Instantiator's events, with real names), or None when a
    name the key does not hold appears, or a statement was given another location or note
    (replay gives them the current ones). A name asked for by its text is the one the
    caller gave for the result (`top_name`: the templates spell no names of their own)."""
    slots = {n: i for i, n in enumerate(names)}

    def atom(a):
        t = type(a)
        if t is Var:
            return Var(slots[a.name])  # (a position: KeyError for a name not accounted for)
        if t is Tup:
            return Tup(tuple(atom(x) for x in a.items))
        if t is Slc:
            return Slc(atom(a.lower), atom(a.upper), atom(a.step))
        return a

    events = []
    try:
        for event in log:
            kind = event[0]
            if kind == "fresh":
                _, how, target = event
                if how[0] == "call":
                    how = ("call", how[1], tuple(atom(a) for a in how[2]))
                elif how[1] != top_name:
                    return None
                slots[target] = len(slots)
                events.append(("fresh", how))
            elif kind == "emit":
                _, stmt, target, aval = event  # (the target it had: a renaming changes it)
                if stmt.loc is not loc or stmt.note != note:
                    return None
                call = stmt.value
                events.append(
                    (
                        "emit",
                        slots[target],
                        call.op,
                        tuple(atom(a) for a in call.args),
                        tuple((k, atom(a)) for k, a in call.kwargs),
                        aval,
                    )
                )
            elif kind == "rename":
                events.append(("rename", slots[event[1]], slots[event[2]]))
            else:  # "truncate"
                events.append(event)
        return Recording(tuple(events), atom(result))
    except KeyError:
        return None


def replay(inst, recording, names, top_name):
    """Apply `recording` to `inst` with the operands `names`; the atom of the result."""
    real = [Var(n) for n in names]

    def sub(a):
        t = type(a)
        if t is Var:
            return real[a.name]
        if t is Tup:
            return Tup(tuple(sub(x) for x in a.items))
        if t is Slc:
            return Slc(sub(a.lower), sub(a.upper), sub(a.step))
        return a

    out, env, defs, fresh = inst.out, inst.env, inst.defs, inst.namer.fresh
    for event in recording.events:
        kind = event[0]
        if kind == "emit":
            _, slot, op, args, kwargs, aval = event
            target = real[slot].name
            call = Call(op, tuple(sub(a) for a in args), tuple((k, sub(a)) for k, a in kwargs))
            out.append(Assign(target, call, inst.loc, inst.note))
            defs[target] = call
            env[target] = aval
        elif kind == "fresh":
            how = event[1]
            if how[0] == "call":
                op = how[1]
                base = name_for_call(op, RULES[op].spelling, [sub(a) for a in how[2]])
            else:
                base = top_name
            real.append(Var(fresh(base)))
        elif kind == "rename":
            old, new = real[event[1]].name, real[event[2]].name
            env[new] = env.pop(old)
            if old in defs:
                defs[new] = defs.pop(old)
            out[-1].target = new
        else:  # "truncate"
            del out[inst.start :]
    return sub(recording.result)
