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
    if not _has_unknown_number(call, env):
        return False
    if elementwise and not _holds_sequence(values, kwvalues):
        return False
    for shift in (1, -1, 2):
        other = [_moved(a, v, env, shift) for a, v in zip(call.args, values)]
        kwother = {k: _moved(a, kwvalues[k], env, shift) for k, a in call.kwargs if k in kwvalues}
        try:
            again = evaluate(other, kwother)
        except Exception:  # (this sample out of range: `x[i + 1]` at the last i; another)
            continue
        return _shape(again) != _shape(result)
    return False  # (no other sample runs: the stand-in's shape, as before)


def _shape(value):
    if isinstance(value, range):
        return (range, len(value))
    try:
        return (type(value), shape_of(value))
    except Exception:
        return (type(value), None)


def _unknown_number(atom, env) -> bool:
    if not isinstance(atom, Var):
        return False
    aval = env.get(atom.name, UNKNOWN)
    return (
        aval is not UNKNOWN
        and not aval.known
        and type(aval.stand_in) in (int, float, np.int64, np.intp, np.float64)
    )


def _has_unknown_number(call, env) -> bool:
    def within(atom):
        if isinstance(atom, Tup):
            return any(within(a) for a in atom.items)
        if isinstance(atom, Slc):
            return any(within(a) for a in (atom.lower, atom.upper, atom.step))
        return _unknown_number(atom, env)

    return any(within(a) for a in call.args) or any(within(a) for _, a in call.kwargs)


def _holds_sequence(values, kwvalues) -> bool:
    return any(isinstance(v, (list, tuple)) for v in [*values, *kwvalues.values()])


def _moved(atom, value, env, shift):
    """`value`, the stand-in of `atom`, with its unknown numbers moved by `shift`."""
    if isinstance(atom, Const):
        return value
    if isinstance(atom, Tup):
        return tuple(_moved(a, v, env, shift) for a, v in zip(atom.items, value))
    if isinstance(atom, Slc):
        parts = (atom.lower, atom.upper, atom.step)
        given = (value.start, value.stop, value.step)
        moved = [_moved(a, v, env, shift) for a, v in zip(parts, given)]
        if moved[2] == 0:
            moved[2] = given[2]  # (a step of 0 is numpy's error, not another shape)
        return slice(*moved)
    if _unknown_number(atom, env):
        return type(value)(value + shift)
    return value


__all__ = ["shaped_by_values"]
