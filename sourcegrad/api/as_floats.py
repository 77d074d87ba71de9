"""Float64 scalars (0-d float64 arrays, `np.float64`) computed as Python floats.

A gradient on 0-d float64 arrays runs the generated code on the numpy scalars they hold
(`x[()]`), where each ufunc call costs ~0.3-0.7 µs and each operator ~0.1 µs; the same
code on Python floats calls the math module and float arithmetic, ~30-50 ns each. Both
compute in IEEE float64, so the numbers agree (the math module and numpy's own loops may
round a transcendental function differently in the last bit). They differ where a value
is not finite: numpy returns inf or nan with a RuntimeWarning (or raises under
`np.errstate(...="raise")`), Python raises ZeroDivisionError, OverflowError or a math
domain ValueError; and a negative float to a fractional power is a complex number.

`twin(gradient, compiled, args, exact)` takes a gradient, its compiled code for `args`
(their signature holds a float64 scalar) and the fast entry running that code (`exact`),
and returns an entry (`dispatch.float_entry`) that runs the gradient compiled for the same
arguments given as Python floats, the twin, and hands the call to `exact` whenever the
twin raises an arithmetic error or returns a value that is not finite: there, the call
gives what it gave before the twin, numpy's warnings and errors included. Returns None (the
exact entry serves) where the twin could compute something the exact code would not:

- an argument that is not a float64 scalar, a Python number, a bool, None or a string (an
  array of another dtype would meet a Python float as a weak scalar: NEP 50);
- a function that asks a value its type or dtype, or reads a 0-d argument as an array
  (`same_on_floats`);
- twin code that reads anything but its parameters, its own locals, the math module and
  `range`, or that raises a value to a power that is not an integer constant (a complex
  result), or calls anything else (`computes_on_floats`: a numpy function, a random draw,
  a global array that sets a dtype);
- a has_aux gradient, a value_and_grad of code with loops or branches (the exact code's
  value is a Python float or a numpy float depending on its last operation: it is found
  once, `_value_type`), a vjp, a jvp, a gradient of a gradient, another backend than
  numpy's or numba's.

`finite(result)`: whether the exact code's result holds only finite numbers (a first call
then returns the twin's, so that every call's numbers are the twin's).

Takes and returns Python objects; compiles the twin through the gradient (`compile`).
"""

from __future__ import annotations

import ast
import math
import warnings

import numpy as np

from ..compiler import PREVIOUS_VALUE, Call, differs_for_scalars, walk
from ..ops import RULES
from . import memory_caches
from .dispatch import float_entry

_FLOAT64 = np.dtype(np.float64)
# what the twin's code may call or read besides its parameters and locals
_MATH_NAMES = frozenset(op.math for op in RULES.values() if op.math) | {"pi", "e", "inf", "tau"}
_BUILTINS = frozenset({"range", "reversed"})


def _function_of(text: str) -> ast.FunctionDef:
    node = ast.parse(text).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


# the numba variant's helper restoring a saved value (list operations only), known by its body
_STACK_HELPER = _function_of(PREVIOUS_VALUE)
_STACK_METHODS = frozenset({"append", "pop"})  # a loop's saved values
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
# what a numpy scalar and a Python float answer differently (a shape, ndim or len is alike)
_TYPE_QUERIES = frozenset({"isinstance_builtin", "dtype"})


def float64_positions(args):
    """The positions of the float64 scalars in `args` (0-d float64 arrays, np.float64), or
    None where another argument is not a Python number, bool, None or string."""
    positions = []
    for i, a in enumerate(args):
        t = type(a)
        if t is np.float64 or t is np.ndarray and a.ndim == 0 and a.dtype is _FLOAT64:
            positions.append(i)
        elif t not in (float, int, bool, str, type(None)):
            return None
    return tuple(positions) or None


def finite(result) -> bool:
    """Whether every number in what the exact code returned (a float64 scalar, a Python
    number, a tuple of these, nested) is finite: where one is not, the twin would hand the
    call back to the exact code, which would run (and warn) a second time."""
    if isinstance(result, tuple):
        return all(finite(r) for r in result)
    try:
        return math.isfinite(result)
    except TypeError:  # (None, an array of another kind: the twin checks its own results)
        return True


def twin(gradient, compiled, args, exact):
    """The entry running `args`' gradient on Python floats (see the module docstring), or
    None."""
    if (
        gradient.has_aux
        or gradient.pullback
        or gradient.forward_mode
        or gradient.inner is not None
        or not gradient.reads_zero_d_as_scalars
        or gradient.backend_for(args) not in ("numpy", "numba")
    ):
        return None
    positions = float64_positions(args)
    if positions is None:
        return None
    primal = gradient.ir(args)
    if not same_on_floats(primal):
        return None
    as_floats = tuple(float(a) if i in positions else a for i, a in enumerate(args))
    last = gradient._last
    try:
        # (under numba, straight-line code on numbers compiles to the numpy code: no numba
        # call to pay, numba_fusion.numpy_code_reason)
        floats = gradient.compile(as_floats)
    except Exception:  # (code the float signature cannot compile keeps the exact path)
        return None
    finally:
        gradient._last = last  # (what `source` shows: the code of the signature called)
    if not computes_on_floats(floats.source, floats.fn):
        return None
    value_wrap = None
    if gradient.with_value:
        value_wrap = _value_type(compiled, args)
        if value_wrap is None:
            return None
        value_wrap = None if value_wrap is float else value_wrap
    # (a 0-d float64 array's gradient is a numpy scalar, as numpy's ufuncs give for one)
    wrapped = dict.fromkeys(positions, np.float64)
    return float_entry(
        args,
        floats.fn,
        positions,
        [wrapped.get(i) for i in gradient.wrt],
        exact,
        floats.finish is not None,  # (loops or branches: a gradient may be an int constant)
        gradient._checking_defaults(_still_bound(compiled, floats)),
        gradient._single,
        gradient._general,
        gradient._defaults,
        (gradient._owner, compiled.code) if compiled.code is not None else None,
        floats.source,
        gradient.with_value,
        value_wrap,
    )


def same_on_floats(primal) -> bool:
    """Whether the function's IR acts alike on a float64 scalar and on a Python float: it
    asks no value its type or dtype (`isinstance` is decided while compiling, per
    signature; a shape, ndim or len is alike), and never indexes, stores into, updates in
    place or calls a method of a value (`compiler.differs_for_scalars`, where a 0-d array and
    a numpy scalar differ too)."""
    for stmt in walk(primal.body):
        value = getattr(stmt, "value", None)
        if differs_for_scalars(stmt):
            return False
        if isinstance(value, Call) and (value.op in _TYPE_QUERIES or RULES[value.op].type_fact):
            return False
    return True


def _value_type(compiled, args):
    """The type of the value the exact code returns for `args` (float or np.float64: the
    numpy scalars' code returns a Python float where the last operation was the math
    module's), or None where it is another or may change between calls (loops, branches).
    Found by running it once more, quietly (its first call has said what it had to): only
    after `computes_on_floats` has found the function's float code pure (no random draw, no
    call of anything but the math module), so nothing the user sees changes."""
    if compiled.control_flow:
        return None
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            value = compiled.fn(*args)[0]
    except Exception:  # (the exact path raises it again where it is called)
        return None
    return type(value) if type(value) in (float, np.float64) else None


def _still_bound(*compiled):
    dependencies = memory_caches.prepared(tuple(d for c in compiled for d in c.dependencies))
    if not dependencies:
        return None
    return lambda: memory_caches.still_bound(dependencies)


def computes_on_floats(source, fn) -> bool:
    """Whether the function `fn` defined in `source` computes, given Python numbers, Python
    numbers alone, each operation exactly as IEEE float64 arithmetic or raising: only
    operators, the math module's functions, comparisons, branches, loops over `range` and a
    list of saved values."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "py_func", None), "__code__", None)
    if code is None:
        return False
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == code.co_name]
    if len(found) != 1:
        return False
    function = found[0]
    helpers = {
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef)
        and n.name == _STACK_HELPER.name
        and _same_body(n, _STACK_HELPER)
    }
    local = {a.arg for a in function.args.args} | helpers
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
    return all(_allowed(node, local) for stmt in function.body for node in ast.walk(stmt))


def _same_body(a, b) -> bool:
    """Whether two functions' bodies are the same code (docstrings and decorators apart)."""

    def code(f):
        body = f.body[1:] if ast.get_docstring(f) is not None else f.body
        return [ast.dump(s) for s in body], ast.dump(f.args)

    return code(a) == code(b)


def _allowed(node, local) -> bool:
    if isinstance(node, ast.Name):
        return node.id in local or node.id == "math" or node.id in _BUILTINS
    if isinstance(node, ast.Attribute):
        return (
            isinstance(node.value, ast.Name)
            and node.value.id == "math"
            and node.attr in _MATH_NAMES
            or isinstance(node.value, ast.Name)
            and node.value.id in local
            and node.attr in _STACK_METHODS
        )
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _OPERATORS) and (
            not isinstance(node.op, ast.Pow) or _integer_constant(node.right)
        )
    if isinstance(node, ast.AugAssign):
        return isinstance(node.op, _OPERATORS) and not isinstance(node.op, ast.Pow)
    if isinstance(node, ast.Call):  # (its function: math's, range, a stack's method)
        return (
            not node.keywords
            and not any(isinstance(a, ast.Starred) for a in node.args)
            and (
                isinstance(node.func, ast.Attribute)
                or isinstance(node.func, ast.Name)
                and (node.func.id in _BUILTINS or node.func.id == _STACK_HELPER.name)
            )
        )
    return isinstance(node, _NODES)


def _integer_constant(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if not isinstance(node, ast.Constant):
        return False
    value = node.value
    return (
        isinstance(value, (int, float))
        and type(value) is not bool
        and math.isfinite(value)
        and float(value).is_integer()
    )


# the other nodes the twin's code may hold (their parts are checked on their own)
_NODES = (
    ast.Assign,
    ast.Return,
    ast.If,
    ast.While,
    ast.For,
    ast.Expr,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.Constant,
    ast.UnaryOp,
    ast.USub,
    ast.UAdd,
    ast.Not,
    ast.Compare,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.Eq,
    ast.NotEq,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.IfExp,
    ast.Tuple,
    ast.List,
    ast.Load,
    ast.Store,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.Pow,
)
