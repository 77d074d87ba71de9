"""Whether a call's result is shaped by numbers the analysis does not know.

`shaped_by_values(call, env, values, kwvalues, result, evaluate, elementwise)` takes a
call whose abstract result `result` was just computed from the stand-ins `values` and
`kwvalues` of its operands (`analysis.calls`), the environment of abstract values, the
function that computed it (`evaluate(values, kwvalues)`), and whether the op broadcasts its
operands. It returns True when the result's shape came from the stand-in of a number the
analysis does not know (`n = int(np.sum(w > 0))`, a loop's index), which the program's data
replace at run time: `np.ones(n)`, `w[:n]`, `range(n)`, `[0.0] * n`, `np.arange(n)`.

The test evaluates the call again with the unknown numbers moved, one *origin* at a time,
and compares the results' shapes. Numbers that differ by a known amount move together
(`x[i:i + 3]`, `x[3 * i:3 * (i + 1)]`: one origin, `origin_of`); others move apart
(`w[lo:hi]` with lo and hi two unknown numbers: moved together, the length stayed that of the
samples, a wrong known length). A number the analysis does not know inside a tuple or list
(`np.ones(tuple(sizes))` where a size is chosen by a test the analysis does not decide) is
an origin of its own. Where a moved sample's shape differs, or no moved sample runs, the
caller gives the result no shape (UNKNOWN): a `len`, `.shape` or `.size` read from it is
then computed when the code runs.
Before, such a result had the stand-in's shape, and `len(w[:n])` was a constant of the
generated code (the stand-in of n is 0 or 1), which made a silently wrong gradient. (An
array whose values decide a shape, `np.nonzero(w > 0)`, is the registry's property
"data_shaped"; a boolean mask's selection, `x[m]`, is `analysis.calls`' own case.)
"""

from __future__ import annotations

import numpy as np

from ..ir import Call, Const, Slc, Tup, Var
from .values import UNKNOWN, AVal, shape_of

_NUMBERS = (int, float, np.int64, np.intp, np.float64)


def holds_sequence(values, kwvalues) -> bool:
    """Is an operand a list or tuple (`[0.0] * n`: an elementwise op whose shape a number
    decides)?"""
    return any(isinstance(v, (list, tuple)) for v in [*values, *kwvalues.values()])


def shaped_by_values(call, env, values, kwvalues, result, evaluate, elementwise) -> bool:
    """See the module docstring. `elementwise`: the op broadcasts its operands (a number's
    value decides no shape there, but for Python's `[x] * n`)."""
    if not has_unknown_number(call, env):
        return False
    if elementwise and not holds_sequence(values, kwvalues):
        return False
    origins: dict = {}  # origin -> (scale, stand-in) of its first number

    def seen(key, scale, v):
        origins.setdefault(key, (scale, v))
        return v

    unknown = _unknown_names(call, env)
    empty = _empty(result)
    for name, aval in unknown.items():
        if type(aval.stand_in) in _NUMBERS:
            token, scale = aval.origin or ((name,), 1)
            seen(token, scale, aval.stand_in)
        else:
            _inside(aval.stand_in, seen, [name, 0])
    for key, (scale, v) in origins.items():
        args = (call, unknown, values, kwvalues, result, evaluate, key)
        near = _ran_alike(*args, (1, -1, 2), across_zero=False)
        if near is None:  # (only samples crossing zero are left: `x[i - 1]` at i = 0)
            near = _ran_alike(*args, (1, -1, 2), across_zero=True)
        if not near:
            return True  # (a shape differs, or no moved sample runs: not known)
        # an empty result, also with that number 0: a slice's bounds past the end moved by
        # one are past it still (`w[4:6]` of a length 3 as `w[5:7]`)
        if (
            empty
            and v
            and v % scale == 0
            and _ran_alike(*args, (-(v // scale),), across_zero=False) is False
        ):
            return True
    return False


def _ran_alike(call, unknown, values, kwvalues, result, evaluate, key, shifts, across_zero):
    """For the first of the samples with origin `key`'s numbers moved by `shifts` that runs:
    True where its shape is `result`'s, False where it differs; None where none runs. A
    sample that moves a number across zero is skipped unless `across_zero` (a negative index
    counts from the end: `x[i:i + 3]` at i = 0 moved by -1 is empty)."""
    for shift in shifts:
        crossed = []

        def move(k, scale, v, key=key, shift=shift, crossed=crossed):
            if k != key:
                return v
            moved = type(v)(v + scale * shift)
            if (moved < 0) != (v < 0):
                crossed.append(k)
            return moved

        moved_values, moved_kwvalues = _moved_all(call, unknown, values, kwvalues, move)
        if crossed and not across_zero:
            continue
        try:
            again = evaluate(moved_values, moved_kwvalues)
        except Exception:  # (this sample out of range: `x[i + 1]` at the last i; another)
            continue
        return _shape(again) == _shape(result)
    return None


def origin_of(value, aval, env, fresh=False):
    """`aval` (the abstract value of an assignment's right-hand side `value`), for a number
    the analysis does not know, with its origin: (a token, a scale) such that the number is
    the scale times the token's number plus a known amount (`i + 1`, `3 * i`, `n - k` with
    k known share i's or n's token). `fresh`: a new token whatever `value` is (a loop's
    index). Any other value is returned as it is."""
    if aval is UNKNOWN or aval.known or type(aval.stand_in) not in _NUMBERS:
        return aval
    origin = None if fresh else _affine(value, env)
    return AVal(aval.stand_in, False, origin or (object(), 1))


_AFFINE = {"neg_op", "negative", "add_op", "add", "sub_op", "subtract", "mul_op", "multiply"}


def _affine(value, env):
    if isinstance(value, Var):
        return _origin(value, env)
    if not isinstance(value, Call) or value.op not in _AFFINE or value.kwargs:
        return None
    if len(value.args) == 1:
        inner = _origin(value.args[0], env)
        if value.op in ("neg_op", "negative") and inner is not None:
            return (inner[0], -inner[1])
        return None
    if len(value.args) != 2:
        return None
    a, b = value.args
    oa, ob = _origin(a, env), _origin(b, env)
    ka, kb = _known_number(a, env), _known_number(b, env)
    if value.op in ("add_op", "add", "sub_op", "subtract"):
        if oa is not None and kb is not None:
            return oa
        if ob is not None and ka is not None:
            return (ob[0], -ob[1]) if value.op in ("sub_op", "subtract") else ob
    if value.op in ("mul_op", "multiply"):
        if oa is not None and type(kb) is int and kb != 0:
            return (oa[0], oa[1] * kb)
        if ob is not None and type(ka) is int and ka != 0:
            return (ob[0], ob[1] * ka)
    return None


def _origin(atom, env):
    if not isinstance(atom, Var):
        return None
    aval = env.get(atom.name, UNKNOWN)
    return None if aval is UNKNOWN or aval.known else aval.origin


def _known_number(atom, env):
    if isinstance(atom, Const):
        value = atom.value
    elif isinstance(atom, Var):
        aval = env.get(atom.name, UNKNOWN)
        if aval is UNKNOWN or not aval.known:
            return None
        value = aval.stand_in
    else:
        return None
    return value if type(value) in _NUMBERS else None


def _empty(value) -> bool:
    """Has `value` no element along some axis (an empty range, slice or list)?"""
    if isinstance(value, range):
        return len(value) == 0
    shape = _shape(value)[1]
    return isinstance(shape, tuple) and 0 in shape


def _shape(value):
    if isinstance(value, range):
        return (range, len(value))
    try:
        return (type(value), shape_of(value))
    except Exception:
        return (type(value), None)


def _unknown_number(atom, env) -> bool:
    """Is `atom` a name whose value the analysis does not know and whose stand-in is a number,
    or a tuple or list holding one (`tuple([own if n == -1 else n for ...])`, `sizes[::-1]`:
    a container is known or not as a whole, so each number in an unknown one is a sample)?"""
    if not isinstance(atom, Var):
        return False
    aval = env.get(atom.name, UNKNOWN)
    return aval is not UNKNOWN and not aval.known and _holds_number(aval.stand_in)


def _holds_number(value) -> bool:
    if type(value) in _NUMBERS:
        return True
    if type(value) in (tuple, list):  # (not a ListOf: its length is not known either)
        return any(_holds_number(v) for v in value)
    if type(value) is slice:
        return any(_holds_number(v) for v in (value.start, value.stop, value.step))
    return False


def has_unknown_number(call, env) -> bool:
    """Does an operand of `call` hold a number the analysis does not know (itself, in a tuple
    or slice written in the call, or in a tuple or list it names)?"""

    def within(atom):
        if isinstance(atom, Tup):
            return any(within(a) for a in atom.items)
        if isinstance(atom, Slc):
            return any(within(a) for a in (atom.lower, atom.upper, atom.step))
        return _unknown_number(atom, env)

    return any(within(a) for a in call.args) or any(within(a) for _, a in call.kwargs)


def _unknown_names(call, env) -> dict:
    """{name: its AVal} for the names among `call`'s operands holding unknown numbers."""
    found = {}

    def visit(atom):
        if isinstance(atom, Tup):
            for a in atom.items:
                visit(a)
        elif isinstance(atom, Slc):
            for a in (atom.lower, atom.upper, atom.step):
                visit(a)
        elif _unknown_number(atom, env):
            found[atom.name] = env[atom.name]

    for a in call.args:
        visit(a)
    for _, a in call.kwargs:
        visit(a)
    return found


def _moved_all(call, unknown, values, kwvalues, move):
    """(values, kwvalues) with each unknown number `v` replaced by `move(origin, scale, v)`
    (`unknown`: `_unknown_names`)."""
    args = [_moved(a, v, unknown, move) for a, v in zip(call.args, values)]
    kwargs = {k: _moved(a, kwvalues[k], unknown, move) for k, a in call.kwargs if k in kwvalues}
    return args, kwargs


def _moved(atom, value, unknown, move):
    """`value`, the stand-in of `atom`, with its unknown numbers moved by `move`."""
    if isinstance(atom, Tup):
        return tuple(_moved(a, v, unknown, move) for a, v in zip(atom.items, value))
    if isinstance(atom, Slc):
        parts = (atom.lower, atom.upper, atom.step)
        given = (value.start, value.stop, value.step)
        moved = [_moved(a, v, unknown, move) for a, v in zip(parts, given)]
        if moved[2] == 0:
            moved[2] = given[2]  # (a step of 0 is numpy's error, not another shape)
        return slice(*moved)
    aval = unknown.get(atom.name) if isinstance(atom, Var) else None
    if aval is None:
        return value
    if type(value) in _NUMBERS:
        # (no origin: a value joined from two branches or trips, an origin of its own; the
        # same key as shaped_by_values')
        token, scale = aval.origin or ((atom.name,), 1)
        return move(token, scale, value)
    return _inside(value, move, [atom.name, 0])


def _inside(value, move, place):
    """A container's numbers moved, each an origin of its own (named by its place)."""
    if type(value) in _NUMBERS:
        place[1] += 1
        return move((place[0], place[1]), 1, value)
    if type(value) in (tuple, list):
        return type(value)(_inside(v, move, place) for v in value)
    if type(value) is slice:
        moved = [_inside(v, move, place) for v in (value.start, value.stop, value.step)]
        if moved[2] == 0:
            moved[2] = value.step
        return slice(*moved)
    return value


__all__ = ["has_unknown_number", "holds_sequence", "origin_of", "shaped_by_values"]
