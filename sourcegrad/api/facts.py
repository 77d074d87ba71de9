"""What the compiled gradient's IR and signature say, asked by the compiling step.

Plain functions of the IR (`sourcegrad.compiler.ir`) and of the signature's abstract values: the
shapes, dtypes and numbers the optimizer needs (`shapes`, `dtypes`, `numbers`), which
returned gradients are always new arrays (`new_gradients`) or may be the user's own
(`users_gradients`), which statements act differently on a numpy scalar than on a 0-d
array, the saved-value manifest (`saved_values`), the names a function uses, and the
random generators a function draws from (`generators_of`). Nothing here holds state.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .. import errors
from ..compiler import random_draws
from ..compiler.frontend import function_to_ir
from ..compiler.ir import (
    Assign,
    Call,
    Const,
    For,
    If,
    Push,
    Return,
    Tup,
    Var,
    While,
    reads_of,
    walk,
    writes_of,
)
from ..compiler.names import Namer
from ..compiler.optimize import makes_new_value
from ..ops import RULES


def output_and_aux(fn):
    """fn (returning `(output, aux)`) with its return a `Tup` of the two: a pair returned
    from a variable (several returns) is read back by item, as a value with an adjoint."""
    ret = fn.body[-1]
    value = ret.value
    if isinstance(value, Tup) and len(value.items) == 2:
        return fn
    if not isinstance(value, Var):
        raise errors.SourcegradError(
            f"has_aux=True: {fn.name} must return a pair (output, aux), but returns "
            f"{getattr(value, 'value', value)!r}",
            ret.loc,
        )
    names = Namer(reserved=names_in(fn))
    output, aux = names.fresh("output"), names.fresh("aux")
    body = fn.body[:-1] + [
        Assign(output, Call("getitem", (value, Const(0))), ret.loc),
        Assign(aux, Call("getitem", (value, Const(1))), ret.loc),
        Return(Tup((Var(output), Var(aux))), ret.loc),
    ]
    return replace(fn, body=body)


def shapes(env) -> dict:
    """The shapes the signature fixes (arrays' names -> shape), for the optimizer."""
    return {
        n: a.shape
        for n, a in env.items()
        if a is not None and not a.is_python_scalar and hasattr(a.stand_in, "shape")
    }


def numbers(env) -> frozenset:
    """Names of floating numbers: Python floats and numpy floating scalars."""
    return frozenset(
        n
        for n, a in env.items()
        if a is not None and (type(a.stand_in) is float or isinstance(a.stand_in, np.floating))
    )


def dtypes(env) -> dict:
    return {n: a.dtype for n, a in env.items() if a is not None and a.dtype is not None}


def new_gradients(fn, with_value) -> tuple:
    """For each gradient `fn` returns, whether the statement making it always makes a new
    value (never an input, a view, or a value another name holds). () when `fn` has loops
    or branches: then a statement may run on one call and not on the next."""
    if has_control_flow(fn) or not isinstance(fn.body[-1], Return):
        return ()
    returned: Any = fn.body[-1].value
    grads = returned.items[1] if with_value else returned
    atoms = grads.items if isinstance(grads, Tup) else (grads,)
    made = {s.target: s for s in fn.body if isinstance(s, Assign)}  # the last writes
    return tuple(
        isinstance(a, Const)
        or (
            isinstance(a, Var)
            and a.name not in fn.params
            and a.name in made
            and not made[a.name].in_place
            and makes_new_value(made[a.name].value)
        )
        for a in atoms
    )


def users_gradients(fn, with_value) -> tuple:
    """For each gradient `fn` returns, whether it may be (or be a view of) a value the user
    owns: an argument, a global or closure value, a constant, or an item or view of one
    (the gradient of sum(x * TABLE) is TABLE itself). Those are copied before they are
    returned, so that `g *= 0` cannot change the user's data; the rest keep the fast path.

    Flow-insensitive (every assignment of a name counts), so it errs towards a copy."""
    returned = next((s.value for s in reversed(fn.body) if isinstance(s, Return)), None)
    if returned is None:
        return ()
    grads = returned.items[1] if with_value and isinstance(returned, Tup) else returned
    atoms = grads.items if isinstance(grads, Tup) else (grads,)
    assigns = [s for s in walk(fn.body) if isinstance(s, Assign)]
    defined = {s.target for s in assigns}
    owned = set(fn.params) | {n for s in walk(fn.body) for n in reads_of(s)} - defined
    # (what each assignment reads, for those that may pass a value on: computed once, not
    # once a round)
    passing = [
        (s.target, set(reads_of(s)))
        for s in assigns
        if not isinstance(s.value, Call) or not makes_new_value(s.value)
    ]
    changed = True
    while changed:
        changed = False
        for target, reads in passing:
            if target not in owned and not reads.isdisjoint(owned):
                owned.add(target)
                changed = True
    return tuple(
        (isinstance(a, Const) and isinstance(a.value, np.ndarray))
        or (isinstance(a, Var) and a.name in owned)
        for a in atoms
    )


def zero_d_arrays(args) -> set:
    return {i for i, a in enumerate(args) if type(a) is np.ndarray and a.ndim == 0}


def differs_for_scalars(stmt) -> bool:
    """Whether a statement may act differently on a numpy scalar than on a 0-d array (an
    index, a store, an in-place update, a method, a buffer written with out=, isinstance)."""
    value = getattr(stmt, "value", None)
    if isinstance(stmt, Assign) and stmt.in_place:
        return True
    if not isinstance(value, Call):
        return False
    kind = RULES[value.op].spelling.kind
    # (isinstance(x, float) is decided per signature: true of a numpy scalar, not of an array)
    return (
        kind in ("getitem", "store", "augassign", "augassign_item", "method", "pycall")
        or value.op == "isinstance_builtin"
        or any(k == "out" for k, _ in value.kwargs)
    )


def has_control_flow(fn) -> bool:
    return any(isinstance(s, (For, While, If, Push)) for s in walk(fn.body))


def ops_called(fn) -> set:
    """The names of the ops the function's statements call (nested statements too)."""
    return {s.value.op for s in walk(fn.body) if type(getattr(s, "value", None)) is Call}


def names_in(fn) -> set:
    """Every name the function uses (nested statements too): new names must avoid them."""
    names = set(fn.params) | set(fn.user_names) | set(fn.free)
    for stmt in walk(fn.body):
        names.update(writes_of(stmt))
    return names


def saved_values(fn, forward_names, env):
    """Forward values that backward statements read (the residuals), with why they are kept.

    Each entry: name, shape, dtype, bytes (for the signature compiled), the user line
    that made it (None for a parameter, which costs nothing extra), and the rules
    whose backward reads it.
    """
    made_at = {s.target: s.loc for s in fn.body if isinstance(s, Assign)}
    readers: dict = {}
    for stmt in fn.body:
        if isinstance(stmt, Assign) and stmt.target not in forward_names:
            for n in reads_of(stmt):
                if n in forward_names:
                    rules = readers.setdefault(n, [])
                    for rule in stmt.note.split(", "):
                        if rule and rule not in rules:
                            rules.append(rule)
    out = []
    for name, rules in readers.items():
        aval = env.get(name)
        dtype = getattr(aval, "dtype", None) if aval is not None else None
        shape = aval.shape if aval is not None else None
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize if dtype is not None else 8
        loc = made_at.get(name)
        out.append(
            {
                "name": name,
                "shape": shape,
                "dtype": str(dtype)
                if dtype is not None
                else type(aval.stand_in).__name__
                if aval is not None
                else None,
                "bytes": nbytes,
                "line": loc.line if loc else None,
                "input": name in fn.params,
                "read_by": rules,
            }
        )
    return out


def generators_of(fn) -> list:
    """The random generators the user's function under `fn` (a function or a gradient of
    one) draws from; [] when it draws none (or its source cannot be read here)."""
    while getattr(fn, "_sourcegrad_gradient", False):  # a gradient of fn (of ...)
        fn = fn.fn
    try:
        return random_draws.generators_in(function_to_ir(fn))
    except errors.SourcegradError:
        return []
