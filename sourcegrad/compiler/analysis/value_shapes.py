"""Whether a call's result is shaped by numbers the analysis does not know.

`shaped_by_values(call, env, values, kwvalues, result, evaluate, elementwise)` takes a
call whose abstract result `result` was just computed from the stand-ins `values` and
`kwvalues` of its operands (`analysis.calls`), the environment of abstract values, the
function that computed it (`evaluate(values, kwvalues)`), and whether the op broadcasts its
operands. It returns True when the result's shape came from the stand-in of a number the
analysis does not know (`n = int(np.sum(w > 0))`, a loop's index), which the program's data
replace at run time: `np.ones(n)`, `w[:n]`, `range(n)`, `[0.0] * n`, `np.arange(n)`.

The test evaluates the call a second time with each unknown number moved by one and
compares the two results' shapes. Where they differ, the caller gives the result no shape
(UNKNOWN): a `len`, `.shape` or `.size` read from it is then computed when the code runs.
Before, such a result had the stand-in's shape, and `len(w[:n])` was a constant of the
generated code (the stand-in of n is 0 or 1), which made a silently wrong gradient. (An
array whose values decide a shape, `np.nonzero(w > 0)`, is the registry's property
"data_shaped"; a boolean mask's selection, `x[m]`, is `analysis.calls`' own case.)
"""

from __future__ import annotations

import numpy as np

from ..ir import Const, Slc, Tup, Var
from .values import UNKNOWN, shape_of


def shaped_by_values(call, env, values, kwvalues, result, evaluate, elementwise) -> bool:
    """See the module docstring. `elementwise`: the op broadcasts its operands (a number's
    value decides no shape there, but for Python's `[x] * n`)."""
    if not has_unknown_number(call, env):
        return False
    if elementwise and not _holds_sequence(values, kwvalues):
        return False
    for shift in (1, -1, 2):
        again = _run(call, env, values, kwvalues, evaluate, shift, None)
        if again is not _REFUSED:
            return _shape(again) != _shape(result)
    # No sample with every unknown number moved runs (`np.broadcast_to(w, (n, 3))`: (2, 4) is
    # numpy's error): move one at a time, and where none runs either, the shape is not known
    # (before, the stand-in's shape was kept: `np.broadcast_to(w, sizes)` had the shape of the
    # sample `sizes`, a wrong known shape)
    for which in range(_count_unknown(call, env, values, kwvalues)):
        for shift in (1, -1, 2):
            again = _run(call, env, values, kwvalues, evaluate, shift, which)
            if again is not _REFUSED and _shape(again) != _shape(result):
                return True
    return not _any_runs(call, env, values, kwvalues, evaluate)


_REFUSED = object()


def _run(call, env, values, kwvalues, evaluate, shift, which):
    """The call evaluated with its unknown numbers moved by `shift` (only the `which`-th,
    counting in the order of the operands, where `which` is not None), or _REFUSED."""
    counter = [which]
    other = [_moved(a, v, env, shift, counter) for a, v in zip(call.args, values)]
    kwother = {
        k: _moved(a, kwvalues[k], env, shift, counter) for k, a in call.kwargs if k in kwvalues
    }
    try:
        return evaluate(other, kwother)
    except Exception:  # (this sample out of range: `x[i + 1]` at the last i; another)
        return _REFUSED


def _count_unknown(call, env, values, kwvalues):
    counter = [-(10**9)]  # (counts down from a `which` never reached: nothing moves)
    for a, v in zip(call.args, values):
        _moved(a, v, env, 0, counter)
    for k, a in call.kwargs:
        if k in kwvalues:
            _moved(a, kwvalues[k], env, 0, counter)
    return counter[0] + 10**9


def _any_runs(call, env, values, kwvalues, evaluate):
    """Does some sample with one unknown number moved run (its shape the same)?"""
    for which in range(_count_unknown(call, env, values, kwvalues)):
        for shift in (1, -1, 2):
            if _run(call, env, values, kwvalues, evaluate, shift, which) is not _REFUSED:
                return True
    return False


def _shape(value):
    if isinstance(value, range):
        return (range, len(value))
    try:
        return (type(value), shape_of(value))
    except Exception:
        return (type(value), None)


_NUMBERS = (int, float, np.int64, np.intp, np.float64)


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


def _shifted(value, shift, counter):
    """`value` with each number it holds (in tuples, lists and slices) moved by `shift`, or
    only one (see _moved)."""
    if type(value) in _NUMBERS:
        return _move_one(value, shift, counter)
    if type(value) in (tuple, list):
        return type(value)(_shifted(v, shift, counter) for v in value)
    if type(value) is slice:
        moved = [_shifted(v, shift, counter) for v in (value.start, value.stop, value.step)]
        if moved[2] == 0:
            moved[2] = value.step  # (a step of 0 is numpy's error, not another shape)
        return slice(*moved)
    return value


def _move_one(number, shift, counter):
    which = counter[0]
    if which is not None:
        counter[0] = which - 1
        if which != 0:
            return number
    return type(number)(number + shift)


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


def _holds_sequence(values, kwvalues) -> bool:
    return any(isinstance(v, (list, tuple)) for v in [*values, *kwvalues.values()])


def _moved(atom, value, env, shift, counter):
    """`value`, the stand-in of `atom`, with its unknown numbers moved by `shift`: all of them
    where `counter` holds None, else only the one `counter[0]` counts to (it counts down)."""
    if isinstance(atom, Const):
        return value
    if isinstance(atom, Tup):
        return tuple(_moved(a, v, env, shift, counter) for a, v in zip(atom.items, value))
    if isinstance(atom, Slc):
        parts = (atom.lower, atom.upper, atom.step)
        given = (value.start, value.stop, value.step)
        moved = [_moved(a, v, env, shift, counter) for a, v in zip(parts, given)]
        if moved[2] == 0:
            moved[2] = given[2]  # (a step of 0 is numpy's error, not another shape)
        return slice(*moved)
    if _unknown_number(atom, env):
        return _shifted(value, shift, counter)
    return value


__all__ = ["has_unknown_number", "shaped_by_values"]
