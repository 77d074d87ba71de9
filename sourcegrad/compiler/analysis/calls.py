"""A primitive's abstract result: `abstract_call(op, args, kwargs) -> AVal`.

Found by running the primitive on stand-ins, except for those that would do real
arithmetic on large stand-ins (elementwise ops, reductions, products, linalg), whose
shapes are computed directly by the shape functions here (chosen by the registry entry's
properties). A call numpy would reject raises numpy's own error (checked on tiny arrays of
the same ranks), so a program numpy rejects is rejected here too. Results are memoised per
operand signature.
"""

from __future__ import annotations

import warnings

import numpy as np

from ... import ops
from ...ops import RULES
from ..ir import Call, Const, Var
from .value_shapes import has_unknown_number, holds_sequence, shaped_by_values
from .values import UNKNOWN, AVal, ListOf, Unknown, concrete, stand_in


def abstract_call(call: Call, env: dict, strict: bool = False):
    """The AVal of `call` given the AVals of its arguments (UNKNOWN when it cannot be known).

    `strict` (shape inference of a program's statements): where numpy itself rejects the
    call's shapes or indices, raise `NumpyRejects` with numpy's error instead."""
    try:
        aval = _abstract_call(call, env, strict)
    except NumpyRejects:
        if strict:
            raise
        return UNKNOWN
    rule = RULES[call.op]
    if (
        aval not in (None, UNKNOWN)
        and type(aval.stand_in) is np.float64
        and rule.spelling.kind == "func"
        and rule.math is not None
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


class NumpyRejects(Exception):
    """numpy raises `error` for a call with these shapes (shape inference locates it)."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def _writable_out(kwvalues):
    """`kwvalues` with an `out=` stand-in (read-only, shared: numpy would refuse to write
    into it) replaced by a writable array of its shape and dtype that occupies one element
    (zero strides), as the user's own buffer is writable."""
    out = kwvalues.get("out")
    if out is None:
        return kwvalues

    def writable(v):
        if isinstance(v, np.ndarray) and not v.flags.writeable:
            return np.lib.stride_tricks.as_strided(
                np.zeros(1, v.dtype), v.shape, (0,) * v.ndim, writeable=True
            )
        return v

    made = tuple(writable(v) for v in out) if isinstance(out, tuple) else writable(out)
    return {**kwvalues, "out": made}


def _numpy_verdict(rule, values, kwvalues):
    """Raise `NumpyRejects` when numpy rejects `rule` applied to arrays of these shapes.

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
    kwghosts = _writable_out({k: ghost(v) for k, v in kwvalues.items()})
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            rule.forward(*[ghost(v) for v in values], **kwghosts)
    except (ValueError, IndexError) as error:
        raise NumpyRejects(error) from error
    except TypeError as error:
        # a ufunc or Python operator with no loop for these dtypes (`~x` of a float array):
        # numpy's verdict on the stand-ins' dtypes, which a result nobody reads would
        # otherwise never meet at run time
        if rule.kind == "elementwise" and _dtype_verdict(rule):
            raise NumpyRejects(error) from error
        return
    except Exception:
        return


def _dtype_verdict(rule) -> bool:
    """Does `rule` compute with a numpy ufunc or a Python operator (which numpy's arrays give
    to their ufuncs), so that a TypeError on stand-ins of the operands' dtypes is numpy's?"""
    return isinstance(rule.fn, np.ufunc) or rule.spelling.kind in ("binop", "unaryop")


def _abstract_call(call: Call, env: dict, strict: bool = False):
    rule = RULES[call.op]
    try:
        args = [concrete(a, env) for a in call.args]
        kwargs = {k: concrete(a, env) for k, a in call.kwargs}
    except Unknown:
        return _shaped_like_operand(call, env)
    values = [v for v, _ in args]
    kwvalues = {k: v for k, (v, _) in kwargs.items()}
    known = all(k for _, k in args) and all(k for k, _ in kwargs.values())
    if call.op == "getitem" and _is_mask(values[1], args[1][1]):
        return UNKNOWN  # the length of x[mask] depends on the data
    if not known and ops.has(call.op, "data_shaped"):
        if ops.data_shaped(call.op, tuple(np.ndim(v) for v in values)):
            return UNKNOWN  # np.nonzero's: as many indices as the data select
    if (known and rule.pure) or rule.static_result:
        return _computed_now(rule, values, kwvalues, known, strict)
    shape_fn = _SHAPE_FUNCTIONS.get(rule.kind) or _SHAPE_FUNCTIONS.get(rule.shape)
    memo = _memo_for(call, env, rule, shape_fn, values, kwvalues)
    result = _SHAPE_MEMO.get(memo) if memo is not None else None
    if result is not None:
        return AVal(result, known=False)

    def evaluate(vals, kwvals=kwvalues):
        kws = _writable_out(kwvals)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = shape_fn(rule, vals, kws) if shape_fn else rule.forward(*vals, **kws)
        # (numpy returns `out` itself: the stand-in given)
        return kwvals["out"] if kws is not kwvals and result is kws["out"] else result

    def by_values(vals, result):
        """Is the result's shape one the data decide (`np.ones(n)` of an unknown n)?"""
        return shaped_by_values(
            call, env, vals, kwvalues, result, evaluate, rule.kind == "elementwise"
        )

    try:
        result = evaluate(values)
    except Unknown:
        return UNKNOWN
    except AttributeError as exc:  # (`X.T` of a list: the user's line raises it, whatever
        if strict:  # the numbers the list holds)
            raise NumpyRejects(exc) from exc
        return UNKNOWN
    except (ZeroDivisionError, OverflowError, ValueError, TypeError, IndexError):
        # a sample Python number hit a singular point (x / i with i's sample 0): try others
        # (numpy's verdict on samples in a tuple, not known, is not on the program's numbers)
        unknown_numbers = [
            not k and isinstance(v, (int, float)) and not isinstance(v, bool)
            for v, (_, k) in zip(values, args)
        ]
        if not any(unknown_numbers):
            if strict and not has_unknown_number(call, env):  # (`np.reshape(x, sizes)`)
                _numpy_verdict(rule, values, kwvalues)
            return UNKNOWN
        sampled = [type(v)(1) if u else v for v, u in zip(values, unknown_numbers)]
        try:
            result = evaluate(sampled)
        except Exception:
            return UNKNOWN
        return UNKNOWN if by_values(sampled, result) else AVal(result, known=False)
    if by_values(values, result):
        return UNKNOWN
    if isinstance(result, complex) and rule.family == "power":
        # a sample Python number (1.0 - 3.0) to a fractional power: the value's sign is not
        # known while compiling, so neither is whether Python's `**` makes it complex; it is
        # typed real, and a call whose numbers make it complex is refused where it runs
        # (compiler.facts.complex_power_sites)
        unknown = [not k and type(v) in (int, float) for v, (_, k) in zip(values, args)]
        if any(unknown) and not any(isinstance(v, complex) for v in values):
            try:
                result = evaluate([abs(v) if u else v for v, u in zip(values, unknown)])
            except Exception:
                return UNKNOWN
    if memo is not None and result is not None:
        if len(_SHAPE_MEMO) >= 4096:  # (bounded: shapes come from user programs)
            _SHAPE_MEMO.clear()
        _SHAPE_MEMO[memo] = result
    return AVal(result, known=False)


def _memo_for(call, env, rule, shape_fn, values, kwvalues):
    """The key `call`'s result is remembered under, or None. None for a call whose shape a
    number the analysis does not know may decide (`np.sum(x, axis=k)`): the key holds the
    number's sample, and a hit skips `shaped_by_values` (after `np.sum(x, axis=0)`,
    `len(np.sum(x, axis=k))` was x.shape[1] whatever k is). An elementwise op on numbers and
    arrays is remembered: a number decides no shape there."""
    if shape_fn not in _BY_SHAPE:
        return None
    may_decide = rule.kind != "elementwise" or holds_sequence(values, kwvalues)
    if may_decide and has_unknown_number(call, env):
        return None
    return _memo_key(call.op, values, kwvalues)


def _computed_now(rule, values, kwvalues, known, strict):
    """The AVal of a call whose value is known while compiling (constant operands of a pure
    op, or a static result: `x.shape`)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return AVal(rule.forward(*values, **kwvalues), known=True)
    except Unknown:
        return UNKNOWN
    except Exception as exc:
        if known:  # a value read on a path that never runs this way (a pop of [])
            return UNKNOWN
        if strict and isinstance(exc, (AttributeError, TypeError)):
            raise NumpyRejects(exc) from exc  # (`x.ndim` of a float: the user's line's)
        raise


# Ops whose result is an array shaped like one operand, whatever the others hold: a write into
# x (`x[mask] = v`, x's shape and dtype whatever v's length), the adjoint of a read of x
# (zeros like x with g added at the index). The operand's position, by op.
_SHAPED_LIKE = {"setitem": 0, "zero_at": 0, "add_at": 0, "subtract_at": 0, "unindex": 1}


def _shaped_like_operand(call, env):
    """The abstract result of a call an operand of which is unknown (`x[mask]`, whose length
    depends on the data): for the ops of _SHAPED_LIKE, an array like the operand that fixes
    the result's shape; else UNKNOWN."""
    position = _SHAPED_LIKE.get(call.op)
    if position is None or position >= len(call.args) or call.kwargs:
        return UNKNOWN
    like = call.args[position]
    aval = env.get(like.name, UNKNOWN) if isinstance(like, Var) else UNKNOWN
    if aval is UNKNOWN or type(aval.stand_in) is not np.ndarray or aval.stand_in.ndim == 0:
        return UNKNOWN
    return AVal(stand_in(aval.stand_in.shape, aval.stand_in.dtype), known=False)


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
        raise Unknown
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
    from ...runtime import parse_einsum

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


def _odeint_shape(rule, values, kwvalues):
    """scipy.integrate.odeint: floats of shape (len(t), len(y0)), not integrated (the user's
    function would run on the stand-ins)."""
    bound = rule.bind(values, kwvalues)
    return stand_in((np.size(bound["t"]), np.size(bound["y0"])), np.float64)


# The shape functions, by an op's kind or by the name its registry entry gives (`Rule.shape`).
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
    "odeint": _odeint_shape,
}


_BY_SHAPE = (_elementwise, _reduction, _matmul_shape, _dot_shape)  # (see _SHAPE_MEMO)
