"""Shape inference: `infer_shapes(fn, signature) -> {name: AVal}`.

Takes an `ir.Function` and one abstract value per parameter; returns the abstract value
of every value the body assigns, through loops (to a fixed point, or trip by trip where the
trip count is small and exact) and branches (`join` of both sides). `eval_value` gives an
atom's abstract value in an environment.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from ... import errors
from ..ir import Assign, Call, ExprStmt, For, If, While
from .calls import NumpyRejects, abstract_call
from .value_shapes import origin_of
from .values import UNBOUND, UNKNOWN, AVal, ListOf, Unknown, aval_of, concrete


def infer_shapes(fn, avals: list) -> dict:
    """AVals of the parameters and of every value `fn` assigns.

    Inference follows the program: both branches of an `if` are inferred and their
    results joined; a loop whose trip count is known and small is followed
    iteration by iteration (so a list appended to in it has its real length),
    other loops until their values stop changing. The result maps each name to
    the join of every value it takes, which is exact for the shape-stable code
    numerical programs are.
    """
    env = dict(zip(fn.params, avals))
    for name, value in fn.free.items():
        env[name] = aval_of(value)
    summary = dict(env)
    _infer_block(fn.body, env, summary)
    return summary


_EXACT_TRIPS = 256


def _record(summary, name, aval):
    if name in summary:
        summary[name] = join(summary[name], aval)
    else:
        summary[name] = aval


# How many branches that this signature never takes (`if x.ndim == 1:` for a matrix) enclose
# the statements being inferred: there numpy's errors are not errors (per thread).
_UNTAKEN = threading.local()


_UNTAKEN.depth = 0


@contextlib.contextmanager
def _untaken(never_runs):
    depth = getattr(_UNTAKEN, "depth", 0)
    _UNTAKEN.depth = depth + 1 if never_runs else depth
    try:
        yield
    finally:
        _UNTAKEN.depth = depth


def _infer_block(stmts, env, summary):
    for stmt in stmts:
        if isinstance(stmt, Assign):
            untaken = getattr(_UNTAKEN, "depth", 0)
            try:
                aval = eval_value(stmt.value, env, strict=not untaken)
            except NumpyRejects as rejected:
                raise errors.numpy_error(rejected.error, stmt.loc) from None
            except (AttributeError, TypeError):
                # (a branch this signature never takes: `mask.dtype` where mask is None
                # there raised AttributeError out of the compiler, not numpy's error)
                if not untaken:
                    raise
                aval = UNKNOWN
            aval = origin_of(stmt.value, aval, env)
            env[stmt.target] = aval
            _record(summary, stmt.target, aval)
        elif isinstance(stmt, If):
            then_env, else_env = dict(env), dict(env)
            try:
                test, known = concrete(stmt.test, env)
            except Unknown:
                known = False
            taken = bool(test) if known and not isinstance(test, np.ndarray) else None
            with _untaken(taken is False):
                _infer_block(stmt.body, then_env, summary)
            with _untaken(taken is True):
                _infer_block(stmt.orelse, else_env, summary)
            for name in set(then_env) | set(else_env):
                # (a branch that leaves a name unbound is not one that makes it UNKNOWN,
                # which is None: a value unknown on one side is unknown after the if)
                a, b = then_env.get(name, UNBOUND), else_env.get(name, UNBOUND)
                env[name] = b if a is UNBOUND else a if b is UNBOUND else join(a, b)
        elif isinstance(stmt, ExprStmt) and isinstance(stmt.value, Call):
            _written_by_a_call(stmt.value, env)
        elif isinstance(stmt, For):
            _infer_for(stmt, env, summary)
        elif isinstance(stmt, While):
            _infer_loop(
                lambda e: (
                    _infer_block(stmt.test_body, e, summary),  # noqa: B023 (called in the iteration that made it)
                    _infer_block(stmt.body, e, summary),  # noqa: B023 (called in the iteration that made it)
                    _infer_block(stmt.test_body, e, summary),  # noqa: B023 (called in the iteration that made it)
                ),
                env,
            )


def _written_by_a_call(call, env):
    """A call made for its effect (`np.putmask(q, mask, 0.5)`) may write into the arrays it is
    given: a value known when compiling (`q = np.zeros(3)`) is not known after it, nor is
    any known array sharing its memory (fuzz r8-7653: `q[2]` was folded to 0.0)."""
    given = [env.get(name) for name in call.reads()]
    arrays = [
        a.stand_in for a in given if isinstance(a, AVal) and isinstance(a.stand_in, np.ndarray)
    ]
    if not arrays:
        return
    for name, aval in list(env.items()):
        if not (isinstance(aval, AVal) and aval.known and isinstance(aval.stand_in, np.ndarray)):
            continue
        if any(aval.stand_in is a or np.shares_memory(aval.stand_in, a) for a in arrays):
            env[name] = AVal(aval.stand_in, False)


def _infer_for(stmt, env, summary):
    bounds = []
    for atom in (stmt.start, stmt.stop, stmt.step):
        try:
            value, known = concrete(atom, env)
        except Unknown:
            value, known = None, False
        bounds.append(value if known else None)
    trips = None
    if None not in bounds and stmt.stop_flag is None:
        trips = range(*bounds)
    if trips is not None and len(trips) <= _EXACT_TRIPS:
        for i in trips:
            env[stmt.target] = origin_of(None, AVal(i, known=False), env, fresh=True)
            _record(summary, stmt.target, AVal(i, known=False))
            _infer_block(stmt.body, env, summary)
        return
    start = bounds[0] if bounds[0] is not None else 0

    def once(e):
        e[stmt.target] = origin_of(None, AVal(start, known=False), e, fresh=True)
        _record(summary, stmt.target, AVal(start, known=False))
        _infer_block(stmt.body, e, summary)

    _infer_loop(once, env)


def _infer_loop(run_body, env):
    """Run the body on `env` until the values it carries stop changing (at most 3 rounds)."""
    for _ in range(3):
        before = dict(env)
        run_body(env)
        changed = False
        for name, aval in env.items():
            if name in before and not _same(before[name], aval):
                env[name] = join(before[name], aval)
                changed = True
        if not changed:
            return
    for name in list(env):
        if name in before and not _same(before[name], env[name]):
            env[name] = UNKNOWN


def _same(a, b):
    if a is UNKNOWN or b is UNKNOWN:
        return a is b
    return (
        _structure(a.stand_in) == _structure(b.stand_in)
        and a.known == b.known
        and (not a.known or _equal_values(a.stand_in, b.stand_in))
    )


def _equal_values(x, y):
    try:
        return bool(x == y) if not isinstance(x, np.ndarray) else False
    except Exception:
        return False


def _structure(v):
    if isinstance(v, ListOf):
        return ("list of", _structure(v.item))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_structure(i) for i in v))
    if isinstance(v, np.ndarray):
        return ("array", v.shape, v.dtype.str)
    if isinstance(v, np.generic):
        return ("scalar", v.dtype.str)
    if type(v) is float:  # a Python float and a float64 scalar behave alike for shapes
        return ("scalar", np.dtype(np.float64).str)
    return (type(v).__name__,)


def _join_lists(x, y):
    """Lists of different lengths whose items all look alike join to a ListOf that item."""
    if not (isinstance(x, list) and isinstance(y, list)):
        return None
    items = [i for v in (x, y) for i in ([v.item] if isinstance(v, ListOf) else v)]
    if not items:
        return None
    first = _structure(items[0])
    if any(_structure(i) != first for i in items[1:]):
        return None
    return ListOf(items[0])


def join(a, b):
    """The least abstract value covering both: equal structure stays, else UNKNOWN.

    None joined with a value is that value: a variable bound to None before a loop
    (generated code does this for saved values) takes its type from the loop."""
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    if a.stand_in is None and a.known:
        return AVal(b.stand_in, known=False)
    if b.stand_in is None and b.known:
        return AVal(a.stand_in, known=False)
    if _structure(a.stand_in) != _structure(b.stand_in):
        merged = _join_lists(a.stand_in, b.stand_in)
        return UNKNOWN if merged is None else AVal(merged, known=False)
    if a.known and b.known and _equal_values(a.stand_in, b.stand_in):
        return a
    if type(a.stand_in) is float and isinstance(b.stand_in, np.generic):
        return AVal(b.stand_in, known=False)  # a float or a numpy scalar: not surely a float
    return AVal(a.stand_in, known=False)


def eval_value(value, env, strict=False):
    """The AVal of an assignment's right-hand side (a Call or an atom)."""
    if isinstance(value, Call):
        return abstract_call(value, env, strict)
    try:
        v, known = concrete(value, env)
    except Unknown:
        return UNKNOWN
    return AVal(v, known)
