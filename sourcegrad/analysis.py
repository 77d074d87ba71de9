"""Analyses over the IR: shapes and dtypes for one input signature, and activity.

`infer_shapes(fn, signature)` takes an `ir.Function` and one abstract value per
parameter and returns `{name: AVal}` for every value the body assigns. An
`AVal` holds a *stand-in*: a zero-strided array of the right shape and dtype
(no memory, whatever the shape), a sample Python number, or, for values such
as `x.shape[0]` that are known before the function runs, the value itself. A
primitive's result is found by running it on stand-ins, except for the ones
that would do real arithmetic on large stand-ins (elementwise ops, reductions,
products), whose shapes are computed directly. What cannot be known without
the data (the length of `x[x > 0]`) is `UNKNOWN`.

`active_values(fn, wrt)` returns the names that depend on a `wrt` parameter
through differentiable primitives *and* reach the returned value: exactly the
values that need an adjoint.

Why one module: shape inference, activity and the checks read the same abstract values and
shape functions; splitting it (infer, activity, checks) is the redesign's next step (issue 17).
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from dataclasses import dataclass

import numpy as np

from .ir import (
    Assign,
    Call,
    Const,
    For,
    If,
    Return,
    Slc,
    Tup,
    Var,
    While,
    assignment_counts,
    atom_vars,
    reads_of,
    walk,
)
from . import errors
from . import ops
from .ops import MATH_FUNCTIONS, RULES, has


@dataclass(frozen=True)
class AVal:
    """An abstract value: a stand-in with the right type, shape and dtype.

    `known` is True when the stand-in *is* the value (shapes, sizes, static
    arguments); False when only its type and shape are meaningful.
    """

    stand_in: object
    known: bool = False

    @property
    def shape(self):
        return shape_of(self.stand_in)

    @property
    def ndim(self):
        return np.ndim(self.stand_in)

    @property
    def dtype(self):
        return getattr(self.stand_in, "dtype", None)

    @property
    def is_python_scalar(self) -> bool:
        return isinstance(self.stand_in, (bool, int, float, complex))


def shape_of(value):
    """np.shape, also for a list of differently shaped items (a ragged list has no array
    shape: its "shape" is the tuple of its items' shapes, so two lists compare by structure)."""
    try:
        return np.shape(value)
    except ValueError:
        return ("list",) + tuple(shape_of(item) for item in value)


UNKNOWN = None  # an AVal slot whose shape cannot be known before the function runs
_UNBOUND = object()  # a name a branch does not assign


def stand_in(shape, dtype):
    """A read-only array of `shape` and `dtype` that occupies one element of memory.

    Made once per (shape, dtype) and shared: it is read-only, and analysing a long
    function asks for the same few thousands of times (np.broadcast_to costs ~15 µs)."""
    dtype = np.dtype(dtype)
    try:
        key = (tuple(shape), dtype)
    except TypeError:  # an int shape
        key = ((shape,), dtype)
    made = _STAND_INS.get(key)
    if made is None:
        if len(_STAND_INS) >= 4096:  # (bounded: shapes come from user programs)
            _STAND_INS.clear()
        base = np.zeros((), dtype) if dtype.kind in "biu" else np.ones((), dtype)
        made = _STAND_INS[key] = np.broadcast_to(base, shape)
    return made


_STAND_INS: dict = {}  # (shape, dtype) -> its stand-in


def holds_complex(aval) -> bool:
    """Does an abstract value hold a complex number or array (or a tuple/list of them)? The
    rules are written for real numbers: the passes refuse complex values they differentiate."""
    if aval is None or aval is UNKNOWN:
        return False

    def complex_(v):
        if type(v) in (tuple, list):  # (not a ListOf: a list of unknown length)
            return any(complex_(i) for i in v)
        return isinstance(v, complex) or getattr(getattr(v, "dtype", None), "kind", "") == "c"

    return complex_(aval.stand_in)


def aval_of(value) -> AVal:
    """The abstract value of a concrete argument."""
    if isinstance(value, (bool, int, str, type(None), tuple, slice)):
        return AVal(value, known=True)
    if isinstance(value, float):
        return AVal(1.0)
    if isinstance(value, complex):
        return AVal(1.0j)
    if isinstance(value, np.generic):
        return AVal(value.dtype.type(1))
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return AVal(stand_in(shape, dtype))
    return AVal(value, known=True)


def signature_key(args) -> tuple:
    """What a compiled gradient is specialised on: array types, shapes, dtypes, static values."""
    key = []
    for a in args:
        t = type(a)
        if t is float:
            key.append(float)
        elif t is np.ndarray:
            key.append((t, a.shape, a.dtype.str))
        elif hasattr(a, "__cuda_array_interface__"):
            key.append((t, a.shape, a.dtype.str))
        elif isinstance(a, np.generic):
            key.append((t,))
        elif isinstance(a, (bool, int, str, type(None))):
            key.append((t, a))
        elif isinstance(a, (tuple, list)):
            # (each item's own key: code made for a list of one shape is not code for another)
            key.append((t, signature_key(a)))
        elif isinstance(a, dict):
            key.append((t, tuple(a), signature_key(a.values())))
        elif callable(a) and not hasattr(a, "shape"):
            key.append((t, a))  # a function argument is inlined: code per function
        else:
            key.append((t, getattr(a, "shape", None), str(getattr(a, "dtype", None))))
    return tuple(key)


# --- abstract evaluation of one primitive -----------------------------------------------------


def _concrete(atom, env):
    """The stand-in for an atom (raising _Unknown if it has none)."""
    if isinstance(atom, Const):
        return atom.value, True
    if isinstance(atom, Var):
        aval = env.get(atom.name, UNKNOWN)
        if aval is UNKNOWN:
            raise _Unknown
        return aval.stand_in, aval.known
    if isinstance(atom, Tup):
        parts = [_concrete(a, env) for a in atom.items]
        return tuple(p for p, _ in parts), all(k for _, k in parts)
    if isinstance(atom, Slc):
        parts = [_concrete(a, env) for a in (atom.lower, atom.upper, atom.step)]
        return slice(*(p for p, _ in parts)), all(k for _, k in parts)
    raise TypeError(atom)


class _Unknown(Exception):
    pass


class ListOf(list):
    """The stand-in of a list whose length is not known (appended to in a loop), all of
    whose items look alike: any item read gives that item's stand-in."""

    def __init__(self, item):
        super().__init__([item])
        self.item = item

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self
        return self.item

    def __len__(self):
        raise _Unknown

    def __iter__(self):
        raise _Unknown

    def __add__(self, other):
        return self


def abstract_call(call: Call, env: dict, strict: bool = False):
    """The AVal of `call` given the AVals of its arguments (UNKNOWN when it cannot be known).

    `strict` (shape inference of a program's statements): where numpy itself rejects the
    call's shapes or indices, raise `_NumpyRejects` with numpy's error instead."""
    try:
        aval = _abstract_call(call, env, strict)
    except _NumpyRejects:
        if strict:
            raise
        return UNKNOWN
    rule = RULES[call.op]
    if (
        aval not in (None, UNKNOWN)
        and type(aval.stand_in) is np.float64
        and rule.spelling.kind == "func"
        and rule.spelling.text in MATH_FUNCTIONS
        and _python_floats_in(call, env)
    ):
        # generated code calls math.exp(x) for Python floats, which returns a Python float
        return AVal(float(aval.stand_in), aval.known)
    return aval


def _python_floats_in(call, env) -> bool:
    """The operands are Python numbers, at least one a float variable (codegen's rule for
    writing the call with the math module)."""
    atoms = call.atoms()
    return any(isinstance(a, Var) for a in atoms) and all(
        (
            isinstance(a, Var)
            and env.get(a.name) not in (None, UNKNOWN)
            and type(env[a.name].stand_in) is float
        )
        or (isinstance(a, Const) and type(a.value) in (int, float))
        for a in atoms
    )


class _NumpyRejects(Exception):
    """numpy raises `error` for a call with these shapes (shape inference locates it)."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def _numpy_verdict(rule, values, kwvalues):
    """Raise `_NumpyRejects` when numpy rejects `rule` applied to arrays of these shapes.

    The operation runs on zero-stride arrays of the stand-ins' shapes (numpy checks shapes
    before it computes), so the error is numpy's own, word for word."""

    def ghost(v):
        if isinstance(v, np.ndarray) and v.ndim:
            return np.broadcast_to(np.zeros((), v.dtype), v.shape)
        if isinstance(v, list) and not isinstance(v, ListOf):
            return [ghost(i) for i in v]
        return v

    # (elementwise ops, reductions and the registry's "shape_checked" ops: their errors depend
    # only on their operands' shapes, so a stand-in numpy rejects is a program numpy rejects)
    if rule.kind not in ("elementwise", "reduction") and not ops.has(rule.name, "shape_checked"):
        return
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            rule.forward(*[ghost(v) for v in values], **{k: ghost(v) for k, v in kwvalues.items()})
    except (ValueError, IndexError) as error:
        raise _NumpyRejects(error) from error
    except Exception:
        return


def _abstract_call(call: Call, env: dict, strict: bool = False):
    rule = RULES[call.op]
    try:
        args = [_concrete(a, env) for a in call.args]
        kwargs = {k: _concrete(a, env) for k, a in call.kwargs}
    except _Unknown:
        return UNKNOWN
    values = [v for v, _ in args]
    kwvalues = {k: v for k, (v, _) in kwargs.items()}
    known = all(k for _, k in args) and all(k for k, _ in kwargs.values())
    if call.op == "getitem" and _is_mask(values[1], args[1][1]):
        return UNKNOWN  # the length of x[mask] depends on the data
    if (known and rule.pure) or rule.static_result:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                return AVal(rule.forward(*values, **kwvalues), known=True)
        except _Unknown:
            return UNKNOWN
        except Exception:
            if known:  # a value read on a path that never runs this way (a pop of [])
                return UNKNOWN
            raise
    shape_fn = _SHAPE_FUNCTIONS.get(rule.kind) or _SHAPE_FUNCTIONS.get(rule.shape)
    memo = _memo_key(call.op, values, kwvalues) if shape_fn in _BY_SHAPE else None
    result = _SHAPE_MEMO.get(memo) if memo is not None else None
    if result is not None:
        return AVal(result, known=False)

    def evaluate(vals):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if shape_fn is not None:
                return shape_fn(rule, vals, kwvalues)
            return rule.forward(*vals, **kwvalues)

    try:
        result = evaluate(values)
    except _Unknown:
        return UNKNOWN
    except (ZeroDivisionError, OverflowError, ValueError, TypeError, IndexError):
        # a sample Python number hit a singular point (x / i with i's sample 0): try others
        unknown_numbers = [
            not k and isinstance(v, (int, float)) and not isinstance(v, bool)
            for v, (_, k) in zip(values, args)
        ]
        if not any(unknown_numbers):
            if strict:
                _numpy_verdict(rule, values, kwvalues)
            return UNKNOWN
        try:
            result = evaluate([type(v)(1) if u else v for v, u in zip(values, unknown_numbers)])
        except Exception:
            return UNKNOWN
        return AVal(result, known=False)
    if memo is not None and result is not None:
        if len(_SHAPE_MEMO) >= 4096:  # (bounded: shapes come from user programs)
            _SHAPE_MEMO.clear()
        _SHAPE_MEMO[memo] = result
    return AVal(result, known=False)


# The shape functions whose result depends only on the arrays' shapes and dtypes and the
# other operands' values: their results are remembered per (op, those), since a long
# function asks for the same few thousands of times (each asking costs tens of µs: numpy
# on one-element stand-ins, inside warning and error-state contexts). What they return is
# immutable: a shared read-only stand-in or a numpy scalar.
_SHAPE_MEMO: dict = {}


def _memo_key(op, values, kwvalues):
    """(op, the operands as the shape functions see them), or None when an operand is not
    one of the plain kinds (a list, an object: computed every time)."""
    try:
        return (
            op,
            tuple(_operand_key(v) for v in values),
            tuple((k, _operand_key(v)) for k, v in kwvalues.items()),
        )
    except _NoKey:
        return None


class _NoKey(Exception):
    pass


def _operand_key(v):
    t = type(v)
    if t is np.ndarray:
        return (t, v.shape, v.dtype)
    if t in (bool, int, str, type(None)) or isinstance(v, np.dtype):
        return (t, v)
    if t in (float, complex) or isinstance(v, np.generic):
        return (t, repr(v))  # (0.0 and -0.0 are equal, and a sample's value may matter)
    if t is tuple:
        return (t, tuple(_operand_key(i) for i in v))
    raise _NoKey


def _is_mask(index, known):
    items = index if isinstance(index, tuple) else (index,)
    return not known and any(getattr(i, "dtype", None) == np.bool_ for i in items)


def _tiny(value):
    """A one-element stand-in with the same type, dtype and rank (for finding result dtypes)."""
    if isinstance(value, np.ndarray):
        return stand_in((1,) * value.ndim, value.dtype)
    return value


def _elementwise(rule, values, kwvalues):
    tiny = rule.forward(*[_tiny(v) for v in values], **{k: _tiny(v) for k, v in kwvalues.items()})
    arrays = [v for v in list(values) + list(kwvalues.values()) if isinstance(v, np.ndarray)]
    if not arrays:
        return tiny
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    if shape == ():
        return tiny  # what numpy returns for 0-d operands: a numpy scalar (np.where: an array)
    return stand_in(shape, np.result_type(tiny))


def _reduction(rule, values, kwvalues):
    bound = rule.bind(values, kwvalues)
    x = bound["x"]
    tiny = rule.forward(*[_tiny(v) for v in values], **kwvalues)
    axis, keepdims = bound.get("axis"), bound.get("keepdims", False)
    shape = np.shape(x)
    if axis is None:
        out_shape = (1,) * len(shape) if keepdims else ()
    else:
        if any(
            not -len(shape) <= a < len(shape)
            for a in (axis if isinstance(axis, tuple) else (axis,))
        ):
            raise ValueError("axis out of bounds")  # numpy's words: see _numpy_verdict
        axes = {a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))}
        out_shape = tuple(
            1 if i in axes else n for i, n in enumerate(shape) if keepdims or i not in axes
        )
    if not out_shape:
        return tiny  # a full reduction of an array is a numpy scalar, as numpy returns it
    return stand_in(out_shape, np.result_type(tiny))


def _matmul_shape(rule, values, kwvalues):
    x, y = values[:2]
    tiny = np.matmul(_tiny_matmul(x), _tiny_matmul(y))
    xs, ys = np.shape(x), np.shape(y)
    if not xs or not ys:
        raise _Unknown
    if xs[-1] != (ys[0] if len(ys) == 1 else ys[-2]):
        raise ValueError("matmul: mismatch in its core dimension")  # numpy's words: see
    if len(xs) == 1 and len(ys) == 1:  # _numpy_verdict
        out = ()
    elif len(ys) == 1:
        out = xs[:-1]
    elif len(xs) == 1:
        out = ys[:-2] + ys[-1:]
    else:
        out = np.broadcast_shapes(xs[:-2], ys[:-2]) + (xs[-2], ys[-1])
    if out == ():
        return tiny  # vector @ vector: a numpy scalar
    return stand_in(out, np.result_type(tiny))


def _tiny_matmul(v):
    return stand_in((1,) * np.ndim(v), np.result_type(v)) if np.ndim(v) else v


def _dot_shape(rule, values, kwvalues):
    x, y = values[:2]
    xs, ys = np.shape(x), np.shape(y)
    dtype = np.result_type(_tiny(x) * _tiny(y)) if xs or ys else None
    if not xs or not ys:
        return stand_in(np.broadcast_shapes(xs, ys), dtype)
    if rule.name == "outer":
        return stand_in((int(np.prod(xs)), int(np.prod(ys))), dtype)
    if xs[-1] != (ys[-1] if rule.name == "inner" or len(ys) == 1 else ys[-2]):
        raise ValueError("shapes not aligned")  # numpy's words: see _numpy_verdict
    if rule.name == "inner":
        return stand_in(xs[:-1] + ys[:-1], dtype)
    return stand_in(xs[:-1] + (ys[:-2] + ys[-1:] if len(ys) > 1 else ()), dtype)


def _tensordot_shape(rule, values, kwvalues):
    bound = rule.bind(values, kwvalues)
    x, y, axes = bound["x"], bound["y"], bound["axes"]
    dtype = np.result_type(x, y)
    x, y = np.asarray(x), np.asarray(y)  # (a Python number is a 0-d operand)
    if isinstance(axes, int):
        xa, ya = list(range(x.ndim - axes, x.ndim)), list(range(axes))
    else:
        xa, ya = ([a] if isinstance(a, int) else list(a) for a in axes)
    xa = [a % x.ndim for a in xa]
    ya = [a % y.ndim for a in ya]
    if [x.shape[a] for a in xa] != [y.shape[a] for a in ya]:
        raise ValueError("shape-mismatch for sum")  # numpy's words: see _numpy_verdict
    out = tuple(n for i, n in enumerate(x.shape) if i not in xa) + tuple(
        n for i, n in enumerate(y.shape) if i not in ya
    )
    return stand_in(out, dtype)


def _einsum_shape(rule, values, kwvalues):
    from .runtime import parse_einsum

    subscripts, operands = values[0], values[1:]
    inputs, output = parse_einsum(subscripts, operands)
    sizes = {}
    for labels, op in zip(inputs, operands):
        for c, n in zip(labels, np.shape(op)):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise ValueError("einsum size mismatch")  # numpy's words: see _numpy_verdict
            sizes[c] = max(sizes.get(c, 1), n)
    return stand_in(tuple(sizes[c] for c in output), np.result_type(*operands))


def _in_place(rule, values, kwvalues):
    """`acc += g`, `acc[i] += g`: an array updated in place keeps its shape and dtype (its
    stand-in is read-only: running the update would fail)."""
    if isinstance(values[0], np.ndarray):
        return values[0]
    return rule.forward(*values, **kwvalues)


def _linalg_shape(rule, values, kwvalues):
    """np.linalg on stand-ins: each matrix operand becomes a stack of identities (the stand-ins
    hold ones, which are singular), and each array of the result a stand-in (a tuple of them
    for slogdet, eigh, svd)."""

    def regular(v):
        if isinstance(v, np.ndarray) and v.ndim >= 2 and v.dtype.kind in "fc":
            return np.broadcast_to(np.eye(v.shape[-2], v.shape[-1], dtype=v.dtype), v.shape)
        return v

    def abstract(out):
        if isinstance(out, tuple):
            return tuple(abstract(o) for o in out)
        return stand_in(out.shape, out.dtype) if isinstance(out, np.ndarray) else out

    return abstract(
        rule.forward(*[regular(v) for v in values], **{k: regular(v) for k, v in kwvalues.items()})
    )


def _eig_shape(rule, values, kwvalues):
    """np.linalg.eig/eigvals: complex stand-ins. numpy's results are real where every
    eigenvalue is real (as for _linalg_shape's identities) and complex otherwise, so the code
    is compiled for complex values, whose rules serve real ones too (never the reverse)."""

    def complex_(out):
        if isinstance(out, tuple):
            return tuple(complex_(o) for o in out)
        return stand_in(out.shape, np.result_type(out.dtype, np.complex64))

    return complex_(_linalg_shape(rule, values, kwvalues))


def _like_first(rule, values, kwvalues):
    """A float result shaped like the first operand, for functions that check their values'
    domain (scipy.special.multigammaln raises on the stand-ins)."""
    return stand_in(np.shape(values[0]), np.result_type(values[0], np.float64))


def _first_axis_reduced(rule, values, kwvalues):
    """A float result shaped like the first operand without its first axis (scipy.stats.
    dirichlet: components along the first axis; it checks its values, so it is not run)."""
    return stand_in(np.shape(values[0])[1:], np.result_type(values[0], np.float64))


# The shape functions, by an op's kind or by the name its registry entry gives (`Op.shape`).
_SHAPE_FUNCTIONS = {
    "like_first": _like_first,
    "first_axis_reduced": _first_axis_reduced,
    "elementwise": _elementwise,
    "reduction": _reduction,
    "in_place": _in_place,
    "matmul": _matmul_shape,
    "dot": _dot_shape,
    "tensordot": _tensordot_shape,
    "einsum": _einsum_shape,
    "linalg": _linalg_shape,
    "eig": _eig_shape,
}
_BY_SHAPE = (_elementwise, _reduction, _matmul_shape, _dot_shape)  # (see _SHAPE_MEMO)


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
            try:
                aval = eval_value(stmt.value, env, strict=not getattr(_UNTAKEN, "depth", 0))
            except _NumpyRejects as rejected:
                raise errors.numpy_error(rejected.error, stmt.loc) from None
            env[stmt.target] = aval
            _record(summary, stmt.target, aval)
        elif isinstance(stmt, If):
            then_env, else_env = dict(env), dict(env)
            try:
                test, known = _concrete(stmt.test, env)
            except _Unknown:
                known = False
            taken = bool(test) if known and not isinstance(test, np.ndarray) else None
            with _untaken(taken is False):
                _infer_block(stmt.body, then_env, summary)
            with _untaken(taken is True):
                _infer_block(stmt.orelse, else_env, summary)
            for name in set(then_env) | set(else_env):
                # (a branch that leaves a name unbound is not one that makes it UNKNOWN,
                # which is None: a value unknown on one side is unknown after the if)
                a, b = then_env.get(name, _UNBOUND), else_env.get(name, _UNBOUND)
                env[name] = b if a is _UNBOUND else a if b is _UNBOUND else join(a, b)
        elif isinstance(stmt, For):
            _infer_for(stmt, env, summary)
        elif isinstance(stmt, While):
            _infer_loop(
                lambda e: (
                    _infer_block(stmt.test_body, e, summary),
                    _infer_block(stmt.body, e, summary),
                    _infer_block(stmt.test_body, e, summary),
                ),
                env,
            )


def _infer_for(stmt, env, summary):
    bounds = []
    for atom in (stmt.start, stmt.stop, stmt.step):
        try:
            value, known = _concrete(atom, env)
        except _Unknown:
            value, known = None, False
        bounds.append(value if known else None)
    trips = None
    if None not in bounds and stmt.stop_flag is None:
        trips = range(*bounds)
    if trips is not None and len(trips) <= _EXACT_TRIPS:
        for i in trips:
            env[stmt.target] = AVal(i, known=False)
            _record(summary, stmt.target, AVal(i, known=False))
            _infer_block(stmt.body, env, summary)
        return
    start = bounds[0] if bounds[0] is not None else 0

    def once(e):
        e[stmt.target] = AVal(start, known=False)
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
        v, known = _concrete(value, env)
    except _Unknown:
        return UNKNOWN
    return AVal(v, known)


# --- activity -------------------------------------------------------------------------------


def varied_values(fn, wrt: list) -> set:
    """Names that depend on `wrt` through differentiable primitives (a fixed point over loops)."""
    assigns = [s for s in walk(fn.body) if isinstance(s, Assign)]
    varied = set(wrt)
    changed = True
    while changed:
        changed = False
        for stmt in assigns:
            if stmt.target in varied or not any(n in varied for n in reads_of(stmt)):
                continue
            value = stmt.value
            if isinstance(value, Call):
                rule = RULES[value.op]
                if not (rule.differentiable and _varied_inputs_have_vjps(rule, value, varied)):
                    continue
            varied.add(stmt.target)
            changed = True
    return varied


def active_values(fn, wrt: list) -> set:
    """Names that depend on `wrt` through differentiable primitives and reach the return.

    Both sets are found by iterating to a fixed point over every assignment, so values
    carried around a loop are covered. Branch conditions carry no derivative.
    """
    assigns = [s for s in walk(fn.body) if isinstance(s, Assign)]
    varied = varied_values(fn, wrt)
    useful = set()
    for stmt in walk(fn.body):
        if isinstance(stmt, Return):
            useful.update(reads_of(stmt))
    changed = True
    while changed:
        changed = False
        # usefulness flows from readers back to what they read: last statement first, so a
        # straight line settles in one round (first statement first took a round a statement)
        for stmt in reversed(assigns):
            if stmt.target in useful:
                new = set(reads_of(stmt)) - useful
                if new:
                    useful |= new
                    changed = True
    return varied & useful


def is_view(op) -> bool:
    """Does op's result share memory with its first argument (numpy views; getitem of a list
    or tuple gives the item itself), so changing one in place changes what the other reads?
    (The registry's "view".)"""
    return ops.has(op, "view")


def check_in_place_updates(fn, env) -> None:
    """Reject an array updated in place (`x *= 2`, `x[i] = v`) while another name that shares
    its memory (a view such as `x[:2]` or `x.T`, a second name for it, a list holding it, the
    sequence a loop iterates) is read afterwards: numpy would change that one too, and the
    compiler, which treats the update as a new value, would silently compute something else.

    An abstract interpretation in program order: each name points to the arrays it may share
    memory with (an array is the statement or parameter that made it); an update in place
    marks every other name pointing to that array stale, and reading a stale name is the
    hazard. Branches and loop trips join the states.
    """
    _InPlaceChecker(fn, env).run()


class _InPlaceChecker:
    """See check_in_place_updates. State: name -> {(array, None | stale update)}, and
    container name -> the same pairs for what it holds."""

    def __init__(self, fn, env):
        self.fn, self.env = fn, env
        self.defs = {s.target: s for s in walk(fn.body) if isinstance(s, Assign)}
        self.updates = {id(s): s for s in walk(fn.body) if isinstance(s, Assign) and s.in_place}

    def run(self):
        self.block(self.fn.body, [({p: {(p, None)} for p in self.fn.params}, {})])

    def is_number(self, name):
        aval = self.env.get(name)
        return aval not in (None, UNKNOWN) and not isinstance(
            aval.stand_in, (np.ndarray, list, tuple, ListOf)
        )

    def pts(self, atom, points):
        if not isinstance(atom, Var) or self.is_number(atom.name):
            return set()
        return points.get(atom.name, {(atom.name, None)})  # a free value: its own array

    def block(self, stmts, states):
        """Run `stmts` from each of `states` (one per path, up to _PATHS of them, so that a
        swap in one branch does not look like two names sharing an array after it)."""
        for stmt in stmts:
            for points, contents in states:
                self.check_reads(stmt, points, contents)
            if isinstance(stmt, If):
                states = _distinct(
                    [
                        out
                        for points, contents in states
                        for branch in (stmt.body, stmt.orelse)
                        for out in self.block(branch, [(dict(points), dict(contents))])
                    ]
                )
            elif isinstance(stmt, (For, While)):
                inner = stmt.body if isinstance(stmt, For) else stmt.test_body + stmt.body
                # zero trips, one, two...: run the body on the states not seen yet, until
                # no new one appears (or, past _PATHS, on their join until it is stable)
                reached, frontier = states, states
                for _ in range(8):
                    after = self.block(inner, [(dict(p), dict(c)) for p, c in frontier])
                    merged = _distinct(reached + after)
                    known = {_key(r) for r in reached}
                    frontier = [m for m in merged if _key(m) not in known]
                    reached = merged
                    if not frontier:
                        break
                states = reached
            elif isinstance(stmt, Assign):
                for points, contents in states:
                    self.assign(stmt, points, contents)
        return states

    def check_reads(self, stmt, points, contents):
        for name in reads_of(stmt):
            for _, mark in points.get(name, set()) | _flat(contents.get(name)):
                if mark is not None:
                    self.reject(stmt, name, self.updates[mark])

    def assign(self, stmt, points, contents):
        value, target = stmt.value, stmt.target
        if self.is_number(target):
            points[target] = set()
            return
        contents.pop(target, None)
        if isinstance(value, Var):
            shared = set(self.pts(value, points))
            if value.name in contents:  # the same list or tuple
                contents[target] = contents[value.name]
        elif isinstance(value, Call) and value.op in ("make_list", "make_tuple", "list_append"):
            items = [
                self.pts(a, points) | _flat(contents.get(a.name)) if isinstance(a, Var) else set()
                for a in value.args
            ]
            if value.op == "list_append":  # the list's items, then the new one
                held = contents.get(value.args[0].name) if isinstance(value.args[0], Var) else None
                items = list(held) + items[1:] if held is not None else [_flat(items)]
            contents[target] = tuple(frozenset(i) for i in items)
            shared = set()
        elif (
            isinstance(value, Call)
            and is_view(value.op)
            and value.args
            and not _copying_index(value)
        ):
            source = value.args[0]
            held = contents.get(source.name) if isinstance(source, Var) else None
            if held is None:
                shared = set(self.pts(source, points))
            else:  # an item of a list or tuple: that item when the index is known
                index = value.args[1] if len(value.args) > 1 else None
                known = (
                    isinstance(index, Const)
                    and type(index.value) is int
                    and -len(held) <= index.value < len(held)
                )
                shared = set(held[index.value]) if known else _flat(held)
        else:
            shared = set()
        if stmt.in_place:
            changed = {a for a, _ in self.changed_arrays(stmt, points)}

            def stale(pairs):
                return {(a, id(stmt) if a in changed else m) for a, m in pairs}

            for name, pairs in points.items():  # everyone else holding them now holds stale data
                if name != target and any(a in changed for a, _ in pairs):
                    points[name] = stale(pairs)
            for name, held in contents.items():
                contents[name] = tuple(frozenset(stale(item)) for item in held)
            shared = {(a, None) for a in changed} or shared
        points[target] = shared or {(id(stmt), None)}  # a new array, made by this statement

    def changed_arrays(self, stmt, points):
        value = stmt.value
        if isinstance(value, Var) and value.name in self.defs:  # computed into a temporary
            value = self.defs[value.name].value
        if isinstance(value, Call) and value.args and isinstance(value.args[0], Var):
            return self.pts(value.args[0], points)
        return set()

    def reject(self, read, name, update):
        made = self.defs.get(name)
        what = (
            f"{name!r} (made at line {made.loc.line}: {made.loc.text.strip()})"
            if made is not None and made.loc is not None
            else repr(name)
        )
        at = f"line {read.loc.line}" if read.loc is not None else "later"
        raise errors.UnsupportedSyntaxError(
            f"an array is changed in place here, but {what} shares its memory and is read "
            f"afterwards ({at}): numpy would read the changed values there. Write the update "
            "as a new value (x = x * 2 instead of x *= 2), or copy first (np.copy)",
            update.loc,
        )


def _copying_index(call) -> bool:
    """`x[[0, 2]]` or `x[mask]`: indexing with a list or an array copies (no view)."""
    if call.op != "getitem" or len(call.args) < 2 or not isinstance(call.args[1], Const):
        return False
    index = call.args[1].value
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, (list, np.ndarray)) for i in items)


_PATHS = 12  # states kept apart; more are joined into one (conservative)


def _distinct(states):
    """The states without repeats; joined into one when there are more than _PATHS."""
    seen, out = set(), []
    for points, contents in states:
        key = _key((points, contents))
        if key not in seen:
            seen.add(key)
            out.append((points, contents))
    if len(out) > _PATHS:
        points, contents = {}, {}
        for p, c in out:
            points, contents = _union_maps(points, p), _union_contents(contents, c)
        out = [(points, contents)]
    return out


def _key(state):
    points, contents = state
    return (frozenset((k, frozenset(v)) for k, v in points.items()), frozenset(contents.items()))


def _flat(held):
    """Every (array, mark) a container holds (None: not a container)."""
    return set().union(*held) if held else set()


def _union_contents(a, b):
    """Join two container -> items maps: item by item when the lengths agree."""
    out = {}
    for k in set(a) | set(b):
        x, y = a.get(k), b.get(k)
        if x is None or y is None or len(x) != len(y):
            out[k] = (frozenset(_flat(x) | _flat(y)),)
        else:
            out[k] = tuple(i | j for i, j in zip(x, y))
    return out


def _union_maps(*maps):
    out = {}
    for m in maps:
        for k, v in m.items():
            out[k] = out.get(k, set()) | v
    return out


def shift_invariant_maxima(fn) -> set:
    """Maxima subtracted only to keep a log-softmax (or softmax) from overflowing.

    In `z = x - max(x, axis, keepdims=True)` followed by `z - log(sum(exp(z), axis,
    keepdims=True))` or `exp(z) / sum(exp(z), axis, keepdims=True)`, the result does not
    change when z is shifted along the axis, so the maximum's derivative contribution is
    exactly zero: it can be treated as a constant (as `jax.nn.logsumexp` stops its
    gradient). Only straight-line, single-assignment values, every use of z and its
    exponentials accounted for, qualify.
    """
    top = [s for s in fn.body if isinstance(s, Assign)]
    counts = assignment_counts(fn.body, fn.params)
    uses: dict = {}
    for stmt in walk(fn.body):
        for n in reads_of(stmt):
            uses.setdefault(n, []).append(stmt)

    def call(stmt, *ops):
        return isinstance(stmt, Assign) and isinstance(stmt.value, Call) and stmt.value.op in ops

    def reduction_axis(stmt):
        kw = dict(stmt.value.kwargs)
        keep, axis = kw.get("keepdims"), kw.get("axis")
        if keep != Const(True) or not isinstance(axis, Const):
            return _NOT_STATIC
        return axis.value

    found = set()
    for m_stmt in top:
        if not (call(m_stmt, "max", "amax") and counts.get(m_stmt.target) == 1):
            continue
        axis = reduction_axis(m_stmt)
        x = m_stmt.value.args[0]
        if axis is _NOT_STATIC or uses.get(m_stmt.target, []) == []:
            continue
        ok = True
        for z_stmt in uses[m_stmt.target]:
            if not (
                call(z_stmt, "sub_op", "subtract")
                and z_stmt.value.args == (x, Var(m_stmt.target))
                and counts.get(z_stmt.target) == 1
            ):
                ok = False
                break
            ok = ok and _normalized_only(z_stmt.target, axis, uses, counts, call, reduction_axis)
        if ok:
            found.add(m_stmt.target)
    return found


_NOT_STATIC = object()


def _normalized_only(z, axis, uses, counts, call, reduction_axis) -> bool:
    """Is every use of z inside `z - log(sum(exp(z)))` or `exp(z) / sum(exp(z))` over axis?"""
    sums, logs = set(), set()
    exps = [s for s in uses.get(z, []) if call(s, "exp")]
    for e in exps:
        for use in uses.get(e.target, []):
            if call(use, "sum") and reduction_axis(use) == axis:
                sums.add(use.target)
            elif not (call(use, "div_op", "divide") and use.value.args[0] == Var(e.target)):
                return False
    for e in exps:  # a division must be by one of these sums
        for use in uses.get(e.target, []):
            if call(use, "div_op", "divide") and use.value.args[1] not in map(Var, sums):
                return False
    for total in sums:
        for use in uses.get(total, []):
            if call(use, "log"):
                logs.add(use.target)
            elif not call(use, "div_op", "divide"):
                return False
    for use in uses.get(z, []):
        if call(use, "exp"):
            continue
        if not (
            call(use, "sub_op", "subtract")
            and use.value.args[0] == Var(z)
            and use.value.args[1] in map(Var, logs)
        ):
            return False
    for log in logs:
        if not all(
            call(u, "sub_op", "subtract") and u.value.args == (Var(z), Var(log))
            for u in uses.get(log, [])
        ):
            return False
    return all(counts.get(n) == 1 for n in sums | logs | {e.target for e in exps})


def _varied_inputs_have_vjps(rule, call, varied):
    """False when every varied input is one the rule gives no gradient (an index, a condition)."""
    if not rule.vjps:
        return True  # a primitive without rules yet: the reverse pass reports it
    for i, atom in enumerate(call.args):  # (a tuple literal carries its items' variation)
        if any(n in varied for n in atom_vars(atom)) and rule.vjp_for(i) is not None:
            return True
    params = rule.signature().parameters
    names = list(params)
    for k, atom in call.kwargs:
        if isinstance(atom, Var) and atom.name in varied and k in names:
            if rule.vjp_for(names.index(k)) is not None:
                return True
    return False


def check_real_values(fn, env, wrt: list) -> None:
    """Refuse, located (`ComplexValueError`), a complex value on the path from the inputs
    `wrt` to the result made by an op whose rules are written for real numbers only (those
    without the "complex" property, ops/complex_values.py): its gradient would be wrong. The
    result must be real, as for JAX's grad: the gradient of a complex function is not one
    array. Complex values the gradient does not flow through are fine. Where complex values
    are on the path, a value whose type is not known while compiling (one that becomes complex
    in a loop) counts as complex: it cannot be shown real."""
    if not any(_holds_complex(aval) for aval in env.values()):
        return  # (a real program: no pass over it)
    active = active_values(fn, wrt)
    varied = varied_values(fn, wrt)
    # (a call whose result is not varied may still read varied values: np.sign(s))
    calls = [s for s in walk(fn.body) if isinstance(s, Assign) and isinstance(s.value, Call)]
    complex_path = any(
        s.target in varied
        and (
            _holds_complex(env.get(s.target))
            or any(isinstance(a, Const) and isinstance(a.value, complex) for a in s.value.args)
        )
        for s in calls
    )
    if not complex_path:
        return

    def maybe_complex(name):
        aval = env.get(name)
        return aval is None or aval is UNKNOWN or _holds_complex(aval)

    for stmt in calls:
        op = stmt.value.op
        args = [a.name for a in stmt.value.args if isinstance(a, Var) and a.name in varied]
        if op in ("sign", "torch_sign") and any(maybe_complex(a) for a in args):
            # (sign is piecewise constant, so it has no rule; of a complex z it is z / |z|)
            raise errors.ComplexValueError(
                "this line takes np.sign of a complex value (or of one whose type is not known "
                "while compiling) on the gradient's path, which is differentiable there "
                "(z / |z|) but has no rule: write x / np.abs(x)",
                stmt.loc,
            )
        if (
            stmt.target in active
            and RULES[op].differentiable
            and not has(op, "complex")
            and (maybe_complex(stmt.target) or any(maybe_complex(a) for a in args if a in active))
        ):
            raise errors.ComplexValueError(
                f"this line takes {RULES[op].family} of a complex value (or of one whose type "
                "is not known while compiling) on the gradient's path, and its rule is written "
                "for real numbers (the gradient would be wrong); complex values are "
                "differentiated through arithmetic, exp/log and the trigonometric functions, "
                "sums and products, reshaping and indexing, abs, angle, real, imag, conj and "
                "np.fft",
                stmt.loc,
            )
    ret = fn.body[-1] if fn.body else None
    out = ret.value if isinstance(ret, Return) else None
    if isinstance(out, Tup) and out.items:  # (output, aux)
        out = out.items[0]
    if isinstance(out, Var) and out.name in active and maybe_complex(out.name):
        raise errors.ComplexValueError(
            "the differentiated function returns a complex value (or one whose type is not "
            "known while compiling); a gradient needs a real output (as in JAX): return its "
            "np.real, np.imag or np.abs",
            ret.loc,
        )


def _holds_complex(aval) -> bool:
    return aval is not None and aval is not UNKNOWN and _is_complex(aval.stand_in)


def _is_complex(value) -> bool:
    if isinstance(value, ListOf):
        return _is_complex(value.item)
    if isinstance(value, (list, tuple)):
        return any(_is_complex(v) for v in value)
    dtype = getattr(value, "dtype", None)
    return isinstance(value, complex) or (isinstance(dtype, np.dtype) and dtype.kind == "c")
