"""What the compiled gradient's IR and signature say, asked by the pipeline and the api.

Plain functions of the IR (`ir`) and of the signature's abstract values: the
shapes, dtypes and numbers the optimizer needs (`shapes`, `dtypes`, `numbers`), which
returned gradients are always new arrays (`new_gradients`) or may be the user's own
(`users_gradients`), which statements act differently on a numpy scalar than on a 0-d
array, the saved-value manifest (`saved_values`), the names a function uses, and the
random generators a function draws from (`generators_of`). Nothing here holds state.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from .. import errors
from ..ops import RULES
from . import random_draws
from .frontend import function_to_ir
from .ir import (
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
from .names import Namer
from .optimize import makes_new_value


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


# -- powers of Python numbers: a complex result a signature cannot show --------------------------

# The ops that raise a number to a power, and what each does with a negative Python number to
# a fractional power: Python's `**` makes a complex number ((-2.0) ** 1.5 is -2.83j), np.power
# nan (with a RuntimeWarning), math.pow raises "math domain error".
POWER_KINDS = {"pow_op": "python", "power": "numpy", "math_pow": "math"}


class PowerSite(NamedTuple):
    """A power of a Python number that may be negative to a power that may be fractional
    (`complex_power_sites`). `operands`: where both are arguments or constants and the
    statement runs on every call (before any branch or loop), how to read them from the
    generated function's arguments, each ("arg", position) or ("const", value); else None."""

    loc: Any
    kind: str
    operands: Any = None


def complex_power_sites(fn, env) -> tuple:
    """The `PowerSite`s of the specialised IR `fn` (`env`: its abstract values), in program
    order: the statements that raise a Python number that may be negative to a power that
    may be fractional, where the signature's stand-ins are real but the numbers of a call
    may make the code compute a complex value (Python's `**` in the user's line, or in a
    rule's backward of np.power, `x ** (y - 1)`). Arrays and numpy scalars are numpy's,
    which gives nan: they make no site. A function whose output is complex (a vjp's, a jvp's)
    has none: a complex result is not the sign of one there."""
    ret = fn.body[-1] if fn.body else None
    out = ret.value if isinstance(ret, Return) else None
    out = out.items[0] if isinstance(out, Tup) and out.items else out  # ((output, aux))
    if isinstance(out, Var) and env.get(out.name) is not None:
        if holds_complex(env[out.name].stand_in):
            return ()
    positions = {name: i for i, name in enumerate(fn.params)}
    straight = set()  # the statements every call runs: those before the first compound one
    for stmt in fn.body:
        if not isinstance(stmt, Assign):
            break
        straight.add(id(stmt))
    sites = []
    for stmt in walk(fn.body):
        if not (isinstance(stmt, Assign) and isinstance(stmt.value, Call)):
            continue
        kind = POWER_KINDS.get(stmt.value.op)
        args = stmt.value.args
        if kind is None or len(args) < 2:
            continue
        if _may_be_negative_number(args[0], env) and _may_be_fractional_number(args[1], env):
            operands = tuple(
                ("const", a.value)
                if isinstance(a, Const)
                else ("arg", positions[a.name])
                if isinstance(a, Var) and a.name in positions
                else None
                for a in args[:2]
            )
            known = id(stmt) in straight and None not in operands
            sites.append(PowerSite(stmt.loc, kind, operands if known else None))
    return tuple(sites)


def _python_number(atom, env):
    """For a Var that may be a Python number: (its value, or None where it is not known
    while compiling); None where the atom is something else (an array, a numpy scalar)."""
    aval = env.get(atom.name) if isinstance(atom, Var) else None
    if aval is None:  # (None and UNKNOWN: nothing is known, it may be a Python number)
        return (None,) if isinstance(atom, Var) else None
    if type(aval.stand_in) not in (int, float):
        return None
    return (aval.stand_in if aval.known else None,)


def _may_be_negative_number(atom, env) -> bool:
    if isinstance(atom, Const):
        value = atom.value
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0
    found = _python_number(atom, env)
    return found is not None and (found[0] is None or found[0] < 0)


def _may_be_fractional_number(atom, env) -> bool:
    if isinstance(atom, Const):
        return type(atom.value) is float and not atom.value.is_integer()
    found = _python_number(atom, env)
    if found is None:
        return False
    value = found[0]
    return value is None or (type(value) is float and not value.is_integer())


def may_power_python_numbers(fn, args) -> bool:
    """Whether a signature of `args` may make `complex_power_sites` in `fn` (its IR before
    specialising): `fn` raises something to a power that is not an integer constant, and a
    Python number may be there (an argument is one or holds some, or `fn` makes them: the
    math module, the builtins, .item()). Cheap and conservative: such code is not read from
    the disk cache, whose entries do not hold the sites."""
    if not any(
        isinstance(s, Assign)
        and isinstance(s.value, Call)
        and s.value.op in POWER_KINDS
        and len(s.value.args) > 1
        and not _integer_constant(s.value.args[1])
        for s in walk(fn.body)
    ):
        return False
    if any(type(a) in (int, float, list, tuple, dict) for a in args):
        return True
    return any(
        isinstance(s, Assign)
        and isinstance(s.value, Call)
        and (
            RULES[s.value.op].spelling.kind in ("module", "builtin")
            or s.value.op in ("item", "tolist")
        )
        for s in walk(fn.body)
    )


def _integer_constant(atom) -> bool:
    value = atom.value if isinstance(atom, Const) else None
    return isinstance(value, (int, float)) and float(value).is_integer()


def holds_complex(value) -> bool:
    """Whether a result (a number, an array, tuples of them) holds a complex number."""
    if type(value) in (tuple, list):
        return any(holds_complex(v) for v in value)
    return isinstance(value, complex) or getattr(getattr(value, "dtype", None), "kind", "") == "c"


def is_real(value) -> bool:
    """`not holds_complex(value)`, quick for the common results (a float, an array, a tuple
    of them): asked of every result of a gradient with a `PowerSite`."""
    t = type(value)
    if t is float or t is np.float64:
        return True
    if t is np.ndarray:
        return value.dtype.kind != "c"
    if t is tuple:
        for v in value:
            if not is_real(v):
                return False
        return True
    return not holds_complex(value)


def check_power_operands(sites, args, label) -> None:
    """Before a call runs: raise `power_error` for a site whose operands, arguments or
    constants (`PowerSite.operands`), are a negative Python number and a fractional power.
    (np.power's are numpy's: nan, computed as numpy does by `numpy_numbers`.)"""
    for site in sites:
        if site.operands is None or site.kind == "numpy":
            continue
        (base_from, base), (exponent_from, exponent) = site.operands
        if base_from == "arg":
            base = args[base]
        if exponent_from == "arg":
            exponent = args[exponent]
        if (
            type(base) in _PYTHON_NUMBERS
            and type(exponent) in _PYTHON_NUMBERS
            and base < 0
            and not float(exponent).is_integer()
        ):
            raise power_error(site, label)


_PYTHON_NUMBERS = (int, float)


def power_error(site, label):
    """The error of a power of a negative Python number to a fractional power at `site`:
    Python's `**` refused with `ComplexValueError`, math.pow's ValueError, located."""
    if site.kind == "math":
        return errors.NumpyValueError(
            "the line raises ValueError: math domain error (math.pow of a negative number to "
            "a fractional power, at these arguments)",
            site.loc,
        )
    return errors.ComplexValueError(
        "this line raises a Python number to a fractional power, and at these arguments the "
        "number is negative: Python's result is complex ((-2.0) ** 1.5 is -2.83j), a complex "
        f"value on the path of the gradient of {label}, whose inputs are real (a real "
        "function's gradient is real). Keep the base non-negative (np.abs(x) ** 1.5), or "
        "compute with numpy values (np.float64, arrays), for which numpy gives nan",
        site.loc,
    )


def complex_power_error(sites, label):
    """The error for a call whose results came out complex where the signature's are real,
    made by one of `sites`: that of the first Python `**` or math.pow (`power_error`); None
    where only np.power's can have made it (numpy's answer is nan: the caller computes it
    on numpy floats, `numpy_numbers`)."""
    for kind in ("python", "math"):
        for site in sites:
            if site.kind == kind:
                return power_error(site, label)
    return None


def numpy_numbers(args) -> tuple:
    """`args` with each Python float a numpy float64: the generated code run on them computes
    np.power's backward (`x ** (y - 1)`) as numpy does, nan for a negative x, not complex."""
    return tuple(np.float64(a) if type(a) is float else a for a in args)


def returns_floats(fn, env, with_value) -> bool:
    """Whether every gradient the optimized `fn` returns is a Python float (a constant, or a
    value whose stand-in in `env` is one): for Python float inputs, the results need no
    conversion. False where `fn` has loops or branches (a branch could return a numpy
    float)."""
    if has_control_flow(fn):
        return False
    returned = fn.body[-1].value
    grads = returned.items[1] if with_value else returned
    atoms = grads.items if isinstance(grads, Tup) else (grads,)
    return all(
        type(a.value) is float
        if isinstance(a, Const)
        else env.get(a.name) is not None and type(env[a.name].stand_in) is float
        for a in atoms
    )
