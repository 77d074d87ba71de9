"""Lists passed to numpy's array functions, made arrays first: `np.sum(xs)` as
`np.sum(np.array(xs))`.

`arrays_of_lists(fn, env)` takes the primal IR and its abstract values (stage 3's
`infer_shapes`) and returns the IR with each list or tuple of differentiated values that is
an argument of a numpy function of arrays (a reduction, an elementwise function, a product,
`np.linalg.norm`, `np.cumsum`, ...) first made an array by `np.array` (`xs_array =
np.array(xs)` before the statement), or `fn` itself when there is none.

Why: numpy makes such a list an array itself (`np.asarray`), and that is what the call
computes with; the rules of these functions are written for arrays and read their operand
as one (its `.shape`, `.size`), while a list built by `append` in a loop or by a
comprehension has a stand-in whose length is not the list's (one item for every trip). Their
gradients came out wrong by the factor the length was wrong by (np.mean of a list
comprehension) or raised inside the compiler; `np.array(xs)` has a rule for lists (the
items stacked; the gradient split back into items). An operator of a list and a numpy
array or scalar (`data @ x`, `row * x`) is numpy's too, so its list is made an array the
same way; of a list and a Python number it is the list's own (`xs * 2` repeats it: refused
by the reverse pass), and functions that take a sequence of arrays as such (np.concatenate,
np.stack, np.select, ...) are left alone.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...ops import RULES
from ..analysis import UNKNOWN
from ..ir import Assign, Call, For, Function, If, Var, While, walk
from ..optimize.cleanup import namer

# families of numpy functions, besides the reductions and elementwise functions, that take
# arrays (and make an array of a list first, as numpy does)
ARRAY_FAMILIES = frozenset(
    (
        "dot",
        "matmul",
        "inner",
        "outer",
        "cumsum",
        "cumprod",
        "linalg_norm",
        "vector_norm",
        "prod",
        "sort",
        "diff",
        "trace",
        "clip",
        "where",
    )
)


def arrays_of_lists(fn: Function, env: dict) -> Function:
    """The IR with lists passed to numpy's array functions made arrays first (see the module
    docstring); `fn` itself when there is none."""
    taken = (
        set(fn.params) | set(fn.free) | {s.target for s in walk(fn.body) if isinstance(s, Assign)}
    )
    fresh = namer(taken)
    changed = False

    def block(statements):
        nonlocal changed
        out = []
        for stmt in statements:
            if isinstance(stmt, Assign) and isinstance(stmt.value, Call):
                args = list(stmt.value.args)
                for k, atom in enumerate(args):
                    if _converts(stmt.value.op, k, atom, env, stmt.value.args):
                        array = fresh(f"{atom.name}_array")
                        out.append(Assign(array, Call("np_array", (atom,)), stmt.loc))
                        args[k] = Var(array)
                        changed = True
                if args != list(stmt.value.args):
                    stmt = replace(stmt, value=replace(stmt.value, args=tuple(args)))
            elif isinstance(stmt, For):
                stmt = replace(stmt, body=block(stmt.body))
            elif isinstance(stmt, While):
                stmt = replace(stmt, test_body=block(stmt.test_body), body=block(stmt.body))
            elif isinstance(stmt, If):
                stmt = replace(stmt, body=block(stmt.body), orelse=block(stmt.orelse))
            out.append(stmt)
        return out

    body = block(fn.body)
    return replace(fn, body=body) if changed else fn


def _converts(op, position, atom, env, args=()) -> bool:
    """Whether argument `position` of a call of `op` (whose arguments are `args`) is a list
    (or tuple) numpy would make an array of, where the rule reads an array."""
    rule = RULES.get(op)
    if rule is not None and rule.spelling.kind == "binop" and len(args) == 2:
        # `data @ x`, `row * x`, `x + row` with x a numpy array or scalar: Python asks the
        # array (a list has no arithmetic slots, only concatenation and repetition, which
        # come last), and numpy makes the list an array; of a list and a Python number the
        # operator is the list's own (refused by the reverse pass where it is differentiated)
        other = args[1 - position]
        partner = env.get(other.name) if isinstance(other, Var) else None
        return (
            _is_list(atom, env)
            and partner not in (None, UNKNOWN)
            and isinstance(partner.stand_in, (np.ndarray, np.generic))
        )
    if rule is None or rule.spelling.kind != "func" or rule.varargs is not None:
        return False
    if rule.kind not in ("reduction", "elementwise") and rule.family not in ARRAY_FAMILIES:
        return False
    if position >= len(rule.params) or rule.vjp_for(position) is None:
        return False  # (a static argument: an axis, a shape)
    return _is_list(atom, env)


def _is_list(atom, env) -> bool:
    if not isinstance(atom, Var):
        return False
    aval = env.get(atom.name)
    return aval not in (None, UNKNOWN) and isinstance(aval.stand_in, (list, tuple))


__all__ = ["arrays_of_lists"]
