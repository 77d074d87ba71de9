"""The rule table: one derivative rule per primitive, shared by compiler and eager engine.

A primitive is an operation the compiler does not look inside: a numpy function,
an operator, an attribute read, or a runtime helper. Each has a `Rule`:

    defvjp("multiply", np.multiply, Spelling.func("multiply"),
           lambda g, ans, x, y: unbroadcast(g * y, x),
           lambda g, ans, x, y: unbroadcast(g * x, y))

One vector-Jacobian product (VJP) per positional input; `None` for inputs that
carry no gradient. A VJP's parameters are `g` (the adjoint of the result), `ans`
(the result), then the primitive's own parameters, with their defaults. The
same lambda serves both modes:

* the eager engine calls it on arrays;
* the compiler reads its source (a template), substitutes the names, folds what
  is constant and inlines the expression into the generated backward. The
  names the body reads (`ans`, `x`, `y`) are the forward values the backward
  keeps, so a rule that does not read `x` never makes the compiler save it.

Templates may use `np.<function>`, the helpers of `sourcegrad.runtime`,
attribute reads, operators and conditional expressions whose tests become
constant once the call's static arguments and ranks are known. Each VJP lambda
starts on a line of its own, so its source can be found from its code object.

Edge values follow torch where torch and numpy's peers differ: clip passes the
gradient at a bound, `maximum`/`minimum` and full `max`/`min` split ties evenly,
`prod` with a zero is exact, `abs'(0) = 0`.

Imports: numpy, gast and `runtime` only; the compiler, the eager engine and
`rules_torch` import this module, never the other way round.
"""
from __future__ import annotations

import inspect
import math
import operator
from dataclasses import dataclass, field
from typing import Callable

import gast
import numpy as np

from . import runtime
from .runtime import (concatenate_items, dot_grad, einsum_grad, einsum_grad_jvp,
                      einsum_grad_operands, einsum_swap, inner_grad, inverse_permutation,
                      index_may_repeat, last_writes, max_grad, max_jvp, part_index, prod_grad,
                      prod_grad_jvp, reduced_count, select_grad, stack_items, sum_list_grad,
                      take_part, tensordot_grad,
                      unbroadcast, unconcatenate_list, unindex, unindex_list, unstack_list,
                      untake, var_jvp, zero_at, cast_like)


@dataclass(frozen=True)
class Spelling:
    """How generated code writes a call of the primitive.

    kind is one of: "binop" / "unaryop" / "compare" (an operator symbol),
    "func" (a function of the array namespace, `np.exp`), "module" (a fixed
    dotted path such as `math.exp`), "helper" (a `sourcegrad.runtime` helper),
    "builtin" (`len`, `float`), "attr" (`x.T`), "method" (`x.astype(...)`),
    "getitem" (`x[index]`), "store" (the statement `x[index] = value`), "augassign"
    (`x += value`, assigning x) and "augassign_item" (`x[index] += value`, assigning x).
    """

    kind: str
    text: str = ""

    @staticmethod
    def func(name):
        return Spelling("func", name)


@dataclass
class Rule:
    """Everything sourcegrad knows about one primitive."""

    name: str
    fn: Callable | None
    spelling: Spelling
    vjps: tuple = ()
    # positional parameter names, keyword defaults, and the *varargs name if any
    params: tuple = ()
    defaults: dict = field(default_factory=dict)
    varargs: str | None = None
    # "elementwise" (shape follows broadcasting), "reduction", or "other"
    kind: str = "other"
    # a primitive with no VJP at all: its result carries no gradient (comparisons, argmax)
    differentiable: bool = True
    # safe to evaluate at compile time when every argument is a constant
    pure: bool = True
    # the forward takes its *varargs as one sequence: np.concatenate([a, b], axis=0)
    sequence_input: bool = False
    # the result is known before the function runs (x.shape, len(x)): it depends on shapes only
    static_result: bool = False
    # the name generated comments use: `x * y` and `np.multiply` are both "multiply"
    family: str = ""
    # forward mode (JVPs). "elementwise" rules get theirs from their VJPs with g := the
    # input's tangent (the Jacobian is diagonal up to broadcasting); otherwise:
    #   linear = "joint": linear in all its array inputs together (sum, reshape, concatenate):
    #            the JVP is the primitive applied to the tangents;
    #   linear = "multi": linear in each input separately (matmul, dot): the JVP is the sum
    #            over inputs of the primitive with that input replaced by its tangent;
    #   linear = (i, ...): linear in those inputs, piecewise constant in the others (helpers
    #            of generated backward code such as unbroadcast(g, x)).
    # `jvps` holds explicit JVP lambdas (t, ans, *inputs) for the rest (max, prod, var).
    linear: object = None
    jvps: tuple = ()
    # a yes/no fact that reads only its arguments' types (index_may_repeat): a rule template
    # decides it when it is instantiated and emits nothing; True (the general formula)
    # where a type is not known before the function runs
    type_fact: bool = False

    def __post_init__(self):
        self.family = self.family or self.name.removeprefix("np_")

    def forward(self, *args, **kwargs):
        """Run the primitive itself on concrete values."""
        if self.sequence_input:
            return self.fn(list(args), **kwargs)
        return self.fn(*args, **kwargs)

    def signature(self) -> inspect.Signature:
        # made once per rule: the reverse pass binds every call it differentiates
        made = self.__dict__.get("_signature")
        if made is None:
            made = _signature(self)
            object.__setattr__(self, "_signature", made)
        return made

    def bind(self, args, kwargs):
        """Map a call's positional and keyword arguments to parameter names, defaults filled in."""
        bound = self.signature().bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def jvp_for(self, argnum: int):
        """The explicit JVP lambda for input `argnum` (the last one serves *varargs), or None."""
        if self.varargs is not None and argnum >= len(self.params) and self.jvps:
            return self.jvps[-1]
        return self.jvps[argnum] if argnum < len(self.jvps) else None

    def vjp_for(self, argnum: int):
        """The VJP lambda for positional input `argnum` (or for any *varargs input), or None."""
        if self.varargs is not None and argnum >= len(self.params):
            return self.vjps[-1]
        return self.vjps[argnum] if argnum < len(self.vjps) else None


RULES: dict[str, Rule] = {}

# Python's operators (by their gast/ast node name) and the primitives they call; user code
# and rule templates are both lowered through this one mapping.
OPERATORS = {"Add": "add_op", "Sub": "sub_op", "Mult": "mul_op", "Div": "div_op",
             "Pow": "pow_op", "MatMult": "matmul_op", "Mod": "mod_op",
             "FloorDiv": "floordiv_op"}
COMPARISONS = {"Lt": "lt", "LtE": "le", "Gt": "gt", "GtE": "ge", "Eq": "eq", "NotEq": "ne"}
_BY_FUNCTION: dict[int, str] = {}


def rule_for_function(fn) -> Rule | None:
    """The rule registered for a callable object (np.exp, math.sin, ...), if any."""
    name = _BY_FUNCTION.get(id(fn))
    return RULES.get(name) if name is not None else None


def defvjp(name, fn, spelling, *vjps, kind="other", pure=True, register_fn=True,
           sequence_input=False):
    """Register `name` with one VJP per positional input (None: no gradient for it).

    For a primitive with *varargs inputs (concatenate, stack, einsum), the last VJP
    serves every one of them and receives its position as the keyword `argnum`.
    """
    template = next((v for v in vjps if v is not None), None)
    params, defaults, varargs = _params_of(template) if template else ((), {}, None)
    rule = Rule(name, fn, spelling, tuple(vjps), params, defaults, varargs, kind,
                differentiable=True, pure=pure, sequence_input=sequence_input)
    _register(rule, fn if register_fn else None)
    for vjp in vjps:
        if vjp is not None:
            vjp_template(vjp)  # fail at import time if the source cannot be found
    return rule


def defnondiff(name, fn, spelling, params=None, kind="other", pure=True, register_fn=True):
    """Register a primitive whose result carries no gradient (its derivative is zero or undefined)."""
    rule = Rule(name, fn, spelling, (), tuple(params or ()), {}, None, kind,
                differentiable=False, pure=pure)
    _register(rule, fn if register_fn else None)
    return rule


def defprimitive(name, fn, spelling, kind="other", pure=True):
    """Register a differentiable primitive whose VJPs are not written yet: using them is an error."""
    rule = Rule(name, fn, spelling, (), (), {}, None, kind, differentiable=True, pure=pure)
    _register(rule, fn)
    return rule


def alias(name, fn, spelling, like, family=None):
    """A second spelling of an existing primitive (`x * y` and `np.multiply`) sharing its VJPs.

    The family names one computation (common-subexpression elimination shares values
    across it); `family` is for a different computation that only borrows the rules
    (min borrows max's)."""
    base = RULES[like]
    rule = Rule(name, fn, spelling, base.vjps, base.params, base.defaults, base.varargs,
                base.kind, base.differentiable, base.pure, base.sequence_input,
                base.static_result, family or base.family, base.linear, base.jvps)
    _register(rule, fn)
    return rule


def defjvp(name, *jvps):
    """Explicit forward-mode rules for `name`: one lambda (t, ans, *inputs) per input."""
    RULES[name].jvps = tuple(jvps)
    for jvp in jvps:
        if jvp is not None:
            vjp_template(jvp)


def deflinear(kind, *names):
    """Mark primitives linear for forward mode (see Rule.linear); aliases follow."""
    for name in names:
        RULES[name].linear = kind
        for other in RULES.values():
            if other.family == RULES[name].family:
                other.linear = kind


def _register(rule, fn):
    if rule.name in RULES:
        raise ValueError(f"primitive {rule.name!r} is registered twice")
    RULES[rule.name] = rule
    if fn is not None and id(fn) not in _BY_FUNCTION:
        _BY_FUNCTION[id(fn)] = rule.name


def _params_of(vjp):
    sig = inspect.signature(vjp)
    names = list(sig.parameters)
    if names[:2] != ["g", "ans"]:
        raise ValueError(f"a VJP's first parameters must be (g, ans), got {names[:2]}")
    params, defaults, varargs = [], {}, None
    for p in list(sig.parameters.values())[2:]:
        if p.kind is p.VAR_POSITIONAL:
            varargs = p.name
        elif p.name == "argnum":
            continue  # filled in by whoever calls the VJP of a *varargs input
        elif p.default is p.empty and p.kind is not p.KEYWORD_ONLY:
            params.append(p.name)
        else:
            if p.kind is not p.KEYWORD_ONLY:
                params.append(p.name)
            defaults[p.name] = p.default
    return tuple(params), defaults, varargs


def _signature(rule):
    kinds = inspect.Parameter
    ps = []
    for name in rule.params:
        if name in rule.defaults:
            ps.append(kinds(name, kinds.POSITIONAL_OR_KEYWORD, default=rule.defaults[name]))
        else:
            ps.append(kinds(name, kinds.POSITIONAL_OR_KEYWORD))
    if rule.varargs:
        ps.append(kinds(rule.varargs, kinds.VAR_POSITIONAL))
    for name, value in rule.defaults.items():
        if name not in rule.params:
            ps.append(kinds(name, kinds.KEYWORD_ONLY, default=value))
    return inspect.Signature(ps)


# --- templates ---------------------------------------------------------------------------------

_TEMPLATE_CACHE: dict[int, gast.Lambda] = {}
_MODULE_LAMBDAS: dict[str, dict[int, list]] = {}


def vjp_template(vjp) -> gast.Lambda:
    """The gast `Lambda` node of a VJP, found in its module's source by its first line."""
    key = id(vjp.__code__)
    if key not in _TEMPLATE_CACHE:
        code = vjp.__code__
        by_line = _MODULE_LAMBDAS.get(code.co_filename)
        if by_line is None:
            with open(code.co_filename) as f:
                tree = gast.parse(f.read())
            by_line = {}
            for node in gast.walk(tree):
                if isinstance(node, gast.Lambda):
                    by_line.setdefault(node.lineno, []).append(node)
            _MODULE_LAMBDAS[code.co_filename] = by_line
        found = by_line.get(code.co_firstlineno, [])
        if len(found) != 1:
            raise ValueError(f"{code.co_filename}:{code.co_firstlineno}: a VJP lambda must "
                             "start on a line of its own")
        _TEMPLATE_CACHE[key] = found[0]
    return _TEMPLATE_CACHE[key]


_VALUE_READS: dict = {}


def reads_value_of(rule, param) -> bool:
    """Does any VJP of `rule` read the value of its input `param` (not just its shape)?

    `unbroadcast(g, x)` and `x.shape`, `x.ndim`, `x.size` need only the shape."""
    key = (rule.name, param)
    if key not in _VALUE_READS:
        found = False
        for vjp in rule.vjps:
            if vjp is None:
                continue
            lam = vjp_template(vjp)
            shape_only = set()
            for node in gast.walk(lam.body):
                if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
                        node.func.id == "unbroadcast" and len(node.args) == 2:
                    shape_only.add(id(node.args[1]))
                elif isinstance(node, gast.Attribute) and node.attr in ("shape", "ndim", "size"):
                    shape_only.add(id(node.value))
            found = found or any(isinstance(n, gast.Name) and n.id == param and
                                 id(n) not in shape_only for n in gast.walk(lam.body))
        _VALUE_READS[key] = found
    return _VALUE_READS[key]


def reads_shape_of(rule, param) -> bool:
    """Does any VJP of `rule` read its input `param` at all (its shape, at least)?"""
    return any(isinstance(n, gast.Name) and n.id == param
               for vjp in rule.vjps if vjp is not None
               for n in gast.walk(vjp_template(vjp).body))


# numpy functions that generated code writes with the math module when every operand is a
# Python float (`math.exp(x)`, as one writes it by hand): the result is then a Python float.
MATH_FUNCTIONS = {
    "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2",
    "log10": "log10", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
    "absolute": "fabs", "fabs": "fabs", "hypot": "hypot", "arctan2": "atan2"}


# Names a template may use, with the objects they stand for (the compiler resolves them).
TEMPLATE_NAMESPACE = {"np": np, **{n: getattr(runtime, n) for n in (
    "unbroadcast", "unindex", "take_part", "expand_reduced", "reduced_count", "prod_grad",
    "max_grad", "dot_grad", "inner_grad", "tensordot_grad", "einsum_grad",
    "inverse_permutation", "untake", "zero_at", "unindex_list", "unstack_list",
    "unconcatenate_list", "sum_list_grad", "select_grad", "prod_grad_jvp", "part_index",
    "einsum_swap", "einsum_grad_operands", "einsum_grad_jvp", "stack_items",
    "concatenate_items", "index_may_repeat", "last_writes", "cast_like")}, "sum": sum}


# --- the table -------------------------------------------------------------------------------

def _func(name):
    return Spelling("func", name)


def _helper(name):
    return Spelling("helper", name)


# Operators. `x * y` and `np.multiply(x, y)` are two spellings of one rule.
defvjp("add", np.add, _func("add"),
       lambda g, ans, x, y: unbroadcast(g, x),
       lambda g, ans, x, y: unbroadcast(g, y), kind="elementwise")
defvjp("subtract", np.subtract, _func("subtract"),
       lambda g, ans, x, y: unbroadcast(g, x),
       lambda g, ans, x, y: unbroadcast(-g, y), kind="elementwise")
defvjp("multiply", np.multiply, _func("multiply"),
       lambda g, ans, x, y: unbroadcast(g * y, x),
       lambda g, ans, x, y: unbroadcast(g * x, y), kind="elementwise")
defvjp("divide", np.divide, _func("divide"),
       lambda g, ans, x, y: unbroadcast(g / y, x),
       lambda g, ans, x, y: unbroadcast(-g * ans / y, y), kind="elementwise")
defvjp("power", np.power, _func("power"),
       lambda g, ans, x, y: unbroadcast(g * y * x ** np.where(y, y - 1, 1), x),
       lambda g, ans, x, y: unbroadcast(g * ans * np.log(np.where(x, x, 1)), y), kind="elementwise")
defvjp("negative", np.negative, _func("negative"),
       lambda g, ans, x: -g, kind="elementwise")
defvjp("positive", np.positive, _func("positive"),
       lambda g, ans, x: g, kind="elementwise")
defvjp("matmul", np.matmul, _func("matmul"),
       lambda g, ans, x, y: (g * y if x.ndim == 1 and y.ndim == 1 else
                             y @ g if x.ndim == 1 else
                             np.outer(g, y) if x.ndim == 2 and y.ndim == 1 else
                             g @ y.T if x.ndim == 2 and y.ndim == 2 else
                             unbroadcast(np.expand_dims(g, -1) * y if y.ndim == 1 else
                                         (g if x.ndim > 1 else np.expand_dims(g, -2))
                                         @ np.swapaxes(y, -1, -2), x)),
       lambda g, ans, x, y: (g * x if x.ndim == 1 and y.ndim == 1 else
                             x.T @ g if y.ndim == 1 and x.ndim == 2 else
                             np.outer(x, g) if x.ndim == 1 and y.ndim == 2 else
                             x.T @ g if x.ndim == 2 and y.ndim == 2 else
                             unbroadcast(np.swapaxes(x, -1, -2) @
                                         (g if y.ndim > 1 else np.expand_dims(g, -1))
                                         if x.ndim > 1 else
                                         np.expand_dims(x, -1) * np.expand_dims(g, -2), y)))
alias("add_op", operator.add, Spelling("binop", "+"), like="add")
alias("sub_op", operator.sub, Spelling("binop", "-"), like="subtract")
alias("mul_op", operator.mul, Spelling("binop", "*"), like="multiply")
alias("div_op", operator.truediv, Spelling("binop", "/"), like="divide")
alias("pow_op", operator.pow, Spelling("binop", "**"), like="power")
alias("matmul_op", operator.matmul, Spelling("binop", "@"), like="matmul")
alias("neg_op", operator.neg, Spelling("unaryop", "-"), like="negative")
alias("pos_op", operator.pos, Spelling("unaryop", "+"), like="positive")
alias("true_divide", np.true_divide, _func("true_divide"), like="divide")
defvjp("mod_op", operator.mod, Spelling("binop", "%"),
       lambda g, ans, x, y: unbroadcast(g, x),
       lambda g, ans, x, y: unbroadcast(-g * np.floor_divide(x, y), y), kind="elementwise")

# Elementwise functions of one argument.
_UNARY = {
    "exp": (np.exp, lambda g, ans, x: g * ans),
    "exp2": (np.exp2, lambda g, ans, x: g * ans * np.log(2.0)),
    "expm1": (np.expm1, lambda g, ans, x: g * (ans + 1.0)),
    "log": (np.log, lambda g, ans, x: g / x),
    "log1p": (np.log1p, lambda g, ans, x: g / (1.0 + x)),
    "log2": (np.log2, lambda g, ans, x: g / (x * np.log(2.0))),
    "log10": (np.log10, lambda g, ans, x: g / (x * np.log(10.0))),
    "sqrt": (np.sqrt, lambda g, ans, x: g / (2.0 * ans)),
    "cbrt": (np.cbrt, lambda g, ans, x: g / (3.0 * ans * ans)),
    "square": (np.square, lambda g, ans, x: g * 2.0 * x),
    "reciprocal": (np.reciprocal, lambda g, ans, x: -g * ans * ans),
    "sin": (np.sin, lambda g, ans, x: g * np.cos(x)),
    "cos": (np.cos, lambda g, ans, x: -g * np.sin(x)),
    "tan": (np.tan, lambda g, ans, x: g * (1.0 + ans * ans)),
    "arcsin": (np.arcsin, lambda g, ans, x: g / np.sqrt(1.0 - x * x)),
    "arccos": (np.arccos, lambda g, ans, x: -g / np.sqrt(1.0 - x * x)),
    "arctan": (np.arctan, lambda g, ans, x: g / (1.0 + x * x)),
    "sinh": (np.sinh, lambda g, ans, x: g * np.cosh(x)),
    "cosh": (np.cosh, lambda g, ans, x: g * np.sinh(x)),
    "tanh": (np.tanh, lambda g, ans, x: g * (1.0 - ans * ans)),
    "arcsinh": (np.arcsinh, lambda g, ans, x: g / np.sqrt(x * x + 1.0)),
    "arccosh": (np.arccosh, lambda g, ans, x: g / np.sqrt(x * x - 1.0)),
    "arctanh": (np.arctanh, lambda g, ans, x: g / (1.0 - x * x)),
    "absolute": (np.absolute, lambda g, ans, x: g * np.sign(x)),
}
for _name, (_fn, _vjp) in _UNARY.items():
    defvjp(_name, _fn, _func(_name), _vjp, kind="elementwise")
alias("fabs", np.fabs, _func("fabs"), like="absolute")
alias("abs_builtin", abs, Spelling("builtin", "abs"), like="absolute")
for _name in ("exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "sinh", "cosh",
              "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log2", "log10", "fabs"):
    _like = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
             "acosh": "arccosh", "atanh": "arctanh", "fabs": "absolute"}.get(_name, _name)
    alias(f"math_{_name}", getattr(math, _name), Spelling("module", f"math.{_name}"), like=_like)

# Elementwise functions of two arguments.
defvjp("maximum", np.maximum, _func("maximum"),
       lambda g, ans, x, y: unbroadcast(g * np.where(x == y, 0.5, x > y), x),
       lambda g, ans, x, y: unbroadcast(g * np.where(x == y, 0.5, y > x), y), kind="elementwise")
defvjp("minimum", np.minimum, _func("minimum"),
       lambda g, ans, x, y: unbroadcast(g * np.where(x == y, 0.5, x < y), x),
       lambda g, ans, x, y: unbroadcast(g * np.where(x == y, 0.5, y < x), y), kind="elementwise")
defvjp("logaddexp", np.logaddexp, _func("logaddexp"),
       lambda g, ans, x, y: unbroadcast(g * np.exp(x - ans), x),
       lambda g, ans, x, y: unbroadcast(g * np.exp(y - ans), y), kind="elementwise")
defvjp("arctan2", np.arctan2, _func("arctan2"),
       lambda g, ans, x, y: unbroadcast(g * y / (x * x + y * y), x),
       lambda g, ans, x, y: unbroadcast(-g * x / (x * x + y * y), y), kind="elementwise")
defvjp("hypot", np.hypot, _func("hypot"),
       lambda g, ans, x, y: unbroadcast(g * x / ans, x),
       lambda g, ans, x, y: unbroadcast(g * y / ans, y), kind="elementwise")
alias("math_atan2", math.atan2, Spelling("module", "math.atan2"), like="arctan2")
alias("math_hypot", math.hypot, Spelling("module", "math.hypot"), like="hypot")
alias("math_pow", math.pow, Spelling("module", "math.pow"), like="power")
defvjp("where", np.where, _func("where"),
       None,
       lambda g, ans, condition, x, y: unbroadcast(np.where(condition, g, 0.0), x),
       lambda g, ans, condition, x, y: unbroadcast(np.where(condition, 0.0, g), y),
       kind="elementwise")
# Gradient flows wherever clipping left x unchanged, bounds included (torch's clamp); elsewhere
# it is 0 whatever arrives, as torch's where(mask, g, 0) gives it (g * mask made a NaN in g a
# NaN gradient of the clipped elements too).
defvjp("clip", np.clip, _func("clip"),
       lambda g, ans, x, a_min=None, a_max=None: unbroadcast(np.where(x == ans, g, 0.0), x),
       lambda g, ans, x, a_min=None, a_max=None: unbroadcast(np.where((ans != x) & (ans == a_min), g, 0.0), a_min),
       lambda g, ans, x, a_min=None, a_max=None: unbroadcast(np.where((ans != x) & (ans == a_max), g, 0.0), a_max),
       kind="elementwise")

# Reductions.
defvjp("sum", np.sum, _func("sum"),
       lambda g, ans, x, axis=None, keepdims=False: np.broadcast_to(
           g if keepdims or axis is None else np.expand_dims(g, axis), x.shape),
       kind="reduction")
# (the mean of an empty array is nan, as numpy gives it; its gradient is empty: no 1 / 0)
defvjp("mean", np.mean, _func("mean"),
       lambda g, ans, x, axis=None, keepdims=False: np.broadcast_to(
           (g if keepdims or axis is None else np.expand_dims(g, axis))
           / (x.size if axis is None else reduced_count(x, axis)), x.shape)
       if x.size else np.zeros_like(x),
       kind="reduction")
defvjp("prod", np.prod, _func("prod"),
       lambda g, ans, x, axis=None, keepdims=False: prod_grad(g, x, axis, keepdims),
       kind="reduction")
defvjp("max", np.max, _func("max"),
       lambda g, ans, x, axis=None, keepdims=False: max_grad(g, ans, x, axis, keepdims),
       kind="reduction")
alias("amax", np.amax, _func("amax"), like="max")
alias("min", np.min, _func("min"), like="max", family="min")  # (max_grad picks by ans)
alias("amin", np.amin, _func("amin"), like="max", family="min")
defvjp("var", np.var, _func("var"),
       lambda g, ans, x, axis=None, ddof=0, keepdims=False: (
           (g if keepdims or axis is None else np.expand_dims(g, axis)) * 2.0
           * (x - np.mean(x, axis=axis, keepdims=True))
           / ((x.size if axis is None else reduced_count(x, axis)) - ddof)),
       kind="reduction")
defvjp("std", np.std, _func("std"),
       lambda g, ans, x, axis=None, ddof=0, keepdims=False: (
           (g / ans if keepdims or axis is None else np.expand_dims(g / ans, axis))
           * (x - np.mean(x, axis=axis, keepdims=True))
           / ((x.size if axis is None else reduced_count(x, axis)) - ddof)),
       kind="reduction")

# Products.
defvjp("dot", np.dot, _func("dot"),
       lambda g, ans, x, y: (unbroadcast(g * y, x) if x.ndim == 0 or y.ndim == 0 else
                             g * y if x.ndim == 1 and y.ndim == 1 else
                             np.outer(g, y) if x.ndim == 2 and y.ndim == 1 else
                             y @ g if x.ndim == 1 and y.ndim == 2 else
                             g @ y.T if x.ndim == 2 and y.ndim == 2 else
                             dot_grad(g, x, y, 0)),
       lambda g, ans, x, y: (unbroadcast(g * x, y) if x.ndim == 0 or y.ndim == 0 else
                             g * x if x.ndim == 1 and y.ndim == 1 else
                             x.T @ g if x.ndim == 2 and y.ndim == 1 else
                             np.outer(x, g) if x.ndim == 1 and y.ndim == 2 else
                             x.T @ g if x.ndim == 2 and y.ndim == 2 else
                             dot_grad(g, x, y, 1)))
defvjp("outer", np.outer, _func("outer"),
       lambda g, ans, x, y: np.reshape(g @ np.ravel(y), x.shape),
       lambda g, ans, x, y: np.reshape(np.ravel(x) @ g, y.shape))
defvjp("inner", np.inner, _func("inner"),
       lambda g, ans, x, y: (unbroadcast(g * y, x) if x.ndim == 0 or y.ndim == 0 else
                             g * y if x.ndim == 1 and y.ndim == 1 else
                             inner_grad(g, x, y, 0)),
       lambda g, ans, x, y: (unbroadcast(g * x, y) if x.ndim == 0 or y.ndim == 0 else
                             g * x if x.ndim == 1 and y.ndim == 1 else
                             inner_grad(g, x, y, 1)))
defvjp("tensordot", np.tensordot, _func("tensordot"),
       lambda g, ans, x, y, axes=2: tensordot_grad(g, x, y, axes, 0),
       lambda g, ans, x, y, axes=2: tensordot_grad(g, x, y, axes, 1))
defvjp("einsum", np.einsum, _func("einsum"),
       None,
       lambda g, ans, subscripts, *operands, argnum: einsum_grad(g, subscripts, operands, argnum - 1))

# Shapes and layout.
defvjp("reshape", np.reshape, _func("reshape"),
       lambda g, ans, x, shape: np.reshape(g, x.shape))
defvjp("ravel", np.ravel, _func("ravel"),
       lambda g, ans, x: np.reshape(g, x.shape))
defvjp("expand_dims", np.expand_dims, _func("expand_dims"),
       lambda g, ans, x, axis: np.reshape(g, x.shape))
defvjp("squeeze", np.squeeze, _func("squeeze"),
       lambda g, ans, x, axis=None: np.reshape(g, x.shape))
defvjp("transpose", np.transpose, _func("transpose"),
       lambda g, ans, x, axes=None: np.transpose(g) if axes is None else np.transpose(g, inverse_permutation(axes)))
defvjp("T", operator.attrgetter("T"), Spelling("attr", "T"),
       lambda g, ans, x: g.T)
defvjp("swapaxes", np.swapaxes, _func("swapaxes"),
       lambda g, ans, x, axis1, axis2: np.swapaxes(g, axis1, axis2))
defvjp("moveaxis", np.moveaxis, _func("moveaxis"),
       lambda g, ans, x, source, destination: np.moveaxis(g, destination, source))
defvjp("broadcast_to", np.broadcast_to, _func("broadcast_to"),
       lambda g, ans, x, shape: unbroadcast(g, x))
defvjp("concatenate", np.concatenate, _func("concatenate"),
       lambda g, ans, *arrays, argnum, axis=0: take_part(g, arrays, argnum, axis),
       sequence_input=True)
defvjp("stack", np.stack, _func("stack"),
       lambda g, ans, *arrays, argnum, axis=0: np.take(g, argnum, axis=axis),
       sequence_input=True)
defvjp("take", np.take, _func("take"),
       lambda g, ans, x, indices, axis=None: untake(g, x, indices, axis),
       None)
defvjp("getitem", operator.getitem, Spelling("getitem"),
       lambda g, ans, x, index: unindex(g, x, index),
       None)
defvjp("asarray", np.asarray, _func("asarray"),
       lambda g, ans, x: unbroadcast(g, x))
# np.copy(x) and x.copy(): a new array (the analysis knows it shares no memory with x)
defvjp("copy", np.copy, _func("copy"),
       lambda g, ans, x: unbroadcast(g, x))


def _astype(x, dtype):
    return x.astype(dtype)


# x.astype(dtype): the gradient comes back in x's dtype (float32 -> float64 and back)
defvjp("astype", _astype, Spelling("method", "astype"),
       lambda g, ans, x, dtype: cast_like(g, x),
       None)
defvjp("float_builtin", float, Spelling("builtin", "float"),
       lambda g, ans, x: g)
# unbroadcast(h, x) sums h down to x's shape or broadcasts it up: unbroadcast back to h's
# shape is its transpose either way (no test of shapes, which a mask leaves unknown).
defvjp("unbroadcast", unbroadcast, _helper("unbroadcast"),
       lambda g, ans, g_in, x: unbroadcast(g, g_in),
       None)

# Reads that carry no gradient: shapes, comparisons, rounding, argmax, constants like zeros_like.
for _name in ("shape", "ndim", "size", "dtype"):
    defnondiff(_name, operator.attrgetter(_name), Spelling("attr", _name), params=("x",))
    RULES[_name].static_result = True
for _name, _fn, _sym in (("lt", operator.lt, "<"), ("le", operator.le, "<="),
                         ("gt", operator.gt, ">"), ("ge", operator.ge, ">="),
                         ("eq", operator.eq, "=="), ("ne", operator.ne, "!=")):
    defnondiff(_name, _fn, Spelling("compare", _sym), params=("x", "y"), kind="elementwise")
defnondiff("floordiv_op", operator.floordiv, Spelling("binop", "//"), params=("x", "y"),
           kind="elementwise")
for _name in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
              "logical_and", "logical_or", "logical_xor", "floor_divide"):
    defnondiff(_name, getattr(np, _name), _func(_name), params=("x", "y"), kind="elementwise")
for _name in ("sign", "floor", "ceil", "round", "rint", "trunc", "fix", "isnan", "isinf",
              "isfinite", "logical_not", "signbit"):
    defnondiff(_name, getattr(np, _name), _func(_name), params=("x",), kind="elementwise")
for _name in ("argmax", "argmin", "argsort", "zeros_like", "ones_like", "full_like",
              "empty_like", "zeros", "ones", "full", "empty", "eye", "identity", "arange",
              "linspace", "shape", "ndim", "size", "broadcast_shapes", "count_nonzero", "nonzero"):
    defnondiff(f"np_{_name}", getattr(np, _name), _func(_name),
               pure=_name not in ("empty_like", "empty"))
defnondiff("len", len, Spelling("builtin", "len"))
for _name in ("len", "np_shape", "np_ndim", "np_size"):
    RULES[_name].static_result = True
defnondiff("int_builtin", int, Spelling("builtin", "int"))
defnondiff("bool_builtin", bool, Spelling("builtin", "bool"))
defnondiff("range", range, Spelling("builtin", "range"))
defnondiff("isinstance_builtin", isinstance, Spelling("builtin", "isinstance"), register_fn=False)
RULES["isinstance_builtin"].static_result = True  # types are part of the signature
defnondiff("check_assert", runtime.check_assert, _helper("check_assert"), pure=False)
defnondiff("inverse_permutation", inverse_permutation, _helper("inverse_permutation"))
defnondiff("reduced_count", reduced_count, _helper("reduced_count"))

# Mutation and lists, as values: the compiler turns `a[i] = v` into `a = setitem(a, i, v)`
# and `xs.append(v)` into `xs = list_append(xs, v)`, so no value changes after it is made.
# An index that names one element twice writes it twice and the last write stays (for
# `a[i] += v` too: it is `a[i] = a[i] + v`), so only the last write's value gets gradient.
defvjp("setitem", runtime.setitem, _helper("setitem"),
       lambda g, ans, x, index, value: zero_at(g, index),
       None,
       lambda g, ans, x, index, value: unbroadcast(
           np.where(last_writes(g, index), g[index], 0.0) if index_may_repeat(index)
           else g[index], value))
defnondiff("index_may_repeat", runtime.index_may_repeat, _helper("index_may_repeat"))
RULES["index_may_repeat"].static_result = True
RULES["index_may_repeat"].type_fact = True
defnondiff("last_writes", runtime.last_writes, _helper("last_writes"))
defvjp("cast_like", cast_like, _helper("cast_like"),
       lambda g, ans, h, x: cast_like(g, h),
       None)
defvjp("make_list", runtime.make_list, Spelling("list"),
       lambda g, ans, *items, argnum: g[argnum])
alias("make_tuple", runtime.make_tuple, Spelling("tuple"), like="make_list",
      family="make_tuple")
defvjp("list_append", runtime.list_append, _helper("list_append"),
       lambda g, ans, items, item: g[:-1],
       lambda g, ans, items, item: g[-1])
defvjp("getitem_list", None, Spelling("getitem"),
       lambda g, ans, x, index: unindex_list(g, x, index),
       None)
defvjp("stack_list", np.stack, _func("stack"),
       lambda g, ans, items, axis=0: unstack_list(g, items, axis), register_fn=False)
defvjp("concatenate_list", np.concatenate, _func("concatenate"),
       lambda g, ans, items, axis=0: unconcatenate_list(g, items, axis), register_fn=False)
defvjp("sum_builtin", sum, Spelling("builtin", "sum"),
       lambda g, ans, items: sum_list_grad(g, items))
defvjp("min_builtin", min, Spelling("builtin", "min"),
       lambda g, ans, *xs, argnum: select_grad(g, ans, xs, argnum))
defvjp("max_builtin", max, Spelling("builtin", "max"),
       lambda g, ans, *xs, argnum: select_grad(g, ans, xs, argnum))
alias("np_array", np.array, _func("array"), like="stack_list")
defvjp("add_adjoints", runtime.add_adjoints, _helper("add_adjoints"),
       lambda g, ans, a, b: g,
       lambda g, ans, a, b: g)
defnondiff("zeros_adjoint", runtime.zeros_adjoint, _helper("zeros_adjoint"))
# In-place accumulation of adjoints (`d_W += part`), emitted only for arrays the backward owns.
defprimitive("iadd_op", operator.iadd, Spelling("augassign", "+"), pure=False)
defprimitive("isub_op", operator.isub, Spelling("augassign", "-"), pure=False)
# `d_x[i] += g` instead of `d_x += unindex(g, x, i)`: the same sum, without a full-size array
defprimitive("iadd_item", runtime.iadd_item, Spelling("augassign_item", "+"), pure=False)
defnondiff("not_op", operator.not_, Spelling("unaryop", "not"), params=("x",))
defnondiff("pycall", None, Spelling("pycall"), pure=False)
# Helpers that only backward code calls, differentiated again by higher-order derivatives.
# Each is linear in its adjoint input (renamed `h` here: `g` is the VJP's own adjoint), so
# its VJP for `h` is its transpose: scatter <-> gather, slice <-> pad with zeros, expand <->
# sum. Indices, shapes, axes and the forward values a helper reads only to choose where `h`
# goes (max_grad's ans and x, select_grad's xs) get None: the derivative is zero almost
# everywhere. A helper with no VJP at all (defprimitive) raises NoRuleError instead of
# giving zero.
# prod_grad(h, x, ...) = h (along the reduced axes) times the product of the other elements:
# linear in h; in x its derivative is prod's Hessian, applied by prod_grad_jvp (symmetric, so
# the VJP and the JVP with respect to x are the same call).
defvjp("prod_grad", runtime.prod_grad, _helper("prod_grad"),
       lambda g, ans, h, x, axis, keepdims: np.sum(g * prod_grad(np.ones_like(h), x, axis, keepdims), axis=axis, keepdims=keepdims),
       lambda g, ans, h, x, axis, keepdims: prod_grad_jvp(h, x, g, axis, keepdims))
defprimitive("prod_grad_jvp", runtime.prod_grad_jvp, _helper("prod_grad_jvp"))
# unindex scatters (adds) h into zeros at index: gathering g at index is its transpose, also
# for repeated integer indices and masks. h may broadcast against x[index].
defvjp("unindex", unindex, _helper("unindex"),
       lambda g, ans, h, x, index: unbroadcast(g[index], h),
       None, None)
defvjp("untake", untake, _helper("untake"),
       lambda g, ans, h, x, indices, axis=None: unbroadcast(np.take(g, indices, axis=axis), h),
       None, None, None)
# take_part slices h: its transpose pads g with zeros around the same slice.
defvjp("take_part", take_part, _helper("take_part"),
       lambda g, ans, h, xs, part, axis=0: unindex(g, h, part_index(xs, part, axis)),
       None, None, None)
defnondiff("part_index", part_index, _helper("part_index"))
defvjp("expand_reduced", runtime.expand_reduced, _helper("expand_reduced"),
       lambda g, ans, h, x, axis, keepdims: np.reshape(g, np.shape(h)),
       None, None, None)
# max_grad(h, m, x, ...) = h (along the reduced axes) * hits / count: the transpose sums
# g * hits / count back over those axes.
defvjp("max_grad", max_grad, _helper("max_grad"),
       lambda g, ans, h, m, x, axis, keepdims: unbroadcast(np.sum(g * max_grad(np.ones_like(m), m, x, axis, keepdims), axis=axis, keepdims=keepdims), h),
       None, None, None, None)
# zero_at(h, index) is a projection (h with a part zeroed): its own transpose.
defvjp("zero_at", zero_at, _helper("zero_at"),
       lambda g, ans, h, index: zero_at(g, index),
       None)
# select_grad passes h through or zeroes it: its own transpose.
defvjp("select_grad", select_grad, _helper("select_grad"),
       lambda g, ans, h, m, xs, part: select_grad(g, m, xs, part),
       None, None, None)
# dot_grad(h, x, y, 0) = d<h, dot(x, y)>/dx is bilinear in (h, y) and reads x only for its
# shape (part 1: in (h, x), y for its shape). Its dot product with g is <h, dot(g, y)>, so
# its VJP for h is dot(g, y) and for y dot_grad(h, g, y, 1); the input read for its shape
# gets zeros. The same holds for inner and tensordot.
defvjp("dot_grad", dot_grad, _helper("dot_grad"),
       lambda g, ans, h, x, y, part: np.dot(g, y) if part == 0 else np.dot(x, g),
       lambda g, ans, h, x, y, part: np.zeros_like(x) if part == 0 else dot_grad(h, x, g, 0),
       lambda g, ans, h, x, y, part: dot_grad(h, g, y, 1) if part == 0 else np.zeros_like(y),
       None)
defvjp("inner_grad", inner_grad, _helper("inner_grad"),
       lambda g, ans, h, x, y, part: np.inner(g, y) if part == 0 else np.inner(x, g),
       lambda g, ans, h, x, y, part: np.zeros_like(x) if part == 0 else inner_grad(h, x, g, 0),
       lambda g, ans, h, x, y, part: inner_grad(h, g, y, 1) if part == 0 else np.zeros_like(y),
       None)
defvjp("tensordot_grad", tensordot_grad, _helper("tensordot_grad"),
       lambda g, ans, h, x, y, axes, part: np.tensordot(g, y, axes) if part == 0 else np.tensordot(x, g, axes),
       lambda g, ans, h, x, y, axes, part: np.zeros_like(x) if part == 0 else tensordot_grad(h, x, g, axes, 0),
       lambda g, ans, h, x, y, axes, part: tensordot_grad(h, g, y, axes, 1) if part == 0 else np.zeros_like(y),
       None, None)
# einsum_grad(h, s, operands, k) is the gradient of <h, einsum(s, *operands)> for operand k:
# for h, it is einsum_grad with operand k and the output trading places in s; for the
# operands, see einsum_grad_operands.
defvjp("einsum_grad", einsum_grad, _helper("einsum_grad"),
       lambda g, ans, h, subscripts, operands, part: einsum_grad(g, einsum_swap(subscripts, part), operands, part),
       None,
       lambda g, ans, h, subscripts, operands, part: einsum_grad_operands(g, h, subscripts, operands, part),
       None)
defnondiff("einsum_swap", einsum_swap, _helper("einsum_swap"))
defprimitive("einsum_grad_operands", einsum_grad_operands, _helper("einsum_grad_operands"))
defprimitive("einsum_grad_jvp", einsum_grad_jvp, _helper("einsum_grad_jvp"))
# The list helpers: the adjoint of a list is a list.
defvjp("unindex_list", unindex_list, _helper("unindex_list"),
       lambda g, ans, h, items, index: g[index],
       None, None)
defvjp("unstack_list", unstack_list, _helper("unstack_list"),
       lambda g, ans, h, items, axis=0: stack_items(g, axis),
       None, None)
defvjp("unconcatenate_list", unconcatenate_list, _helper("unconcatenate_list"),
       lambda g, ans, h, items, axis=0: concatenate_items(g, axis),
       None, None)
defvjp("stack_items", stack_items, _helper("stack_items"),
       lambda g, ans, items, axis=0: unstack_list(g, items, axis),
       None)
defvjp("concatenate_items", concatenate_items, _helper("concatenate_items"),
       lambda g, ans, items, axis=0: unconcatenate_list(g, items, axis),
       None)
# sum_list_grad hands h to every item (reduced to its shape): the transpose sums them.
defvjp("sum_list_grad", sum_list_grad, _helper("sum_list_grad"),
       lambda g, ans, h, items: unbroadcast(sum(g), h),
       None)


# Writing one row of a buffer the optimizer made (optimize.batch_rank_one_updates): the only
# in-place store generated code does, into an array no other name refers to.
defprimitive("store_item", runtime.store_item, Spelling("store"), pure=False)


def vjp_at_run_time(op, argnum, g, ans, *inputs, **kwargs):
    """Rule `op`'s VJP for input `argnum`, chosen when it runs. Generated code calls this where
    the rule picks its formula by a fact the compiler cannot know (the rank of a value whose
    shape changes between loop trips); elsewhere the formula is inlined. It lives here, not in
    runtime, because it reads the rule table (runtime imports nothing of sourcegrad)."""
    return RULES[op].vjp_for(argnum)(g, ans, *inputs, **kwargs)


def jvp_at_run_time(op, argnum, t, ans, *inputs, **kwargs):
    """Rule `op`'s explicit JVP for input `argnum`, chosen when it runs (see vjp_at_run_time)."""
    return RULES[op].jvp_for(argnum)(t, ans, *inputs, **kwargs)


# A rule whose formula depends on a rank known only at run time, called then (see templates);
# generated code writes `sourcegrad.rules.vjp_at_run_time(...)`.
defprimitive("vjp_at_run_time", vjp_at_run_time, Spelling("module", "sourcegrad.rules.vjp_at_run_time"))
defprimitive("jvp_at_run_time", jvp_at_run_time, Spelling("module", "sourcegrad.rules.jvp_at_run_time"))


# --- forward mode ----------------------------------------------------------------------------

deflinear("joint", "sum", "mean", "reshape", "ravel", "expand_dims", "squeeze", "transpose", "T",
          "swapaxes", "moveaxis", "broadcast_to", "concatenate", "stack", "getitem", "take",
          "asarray", "copy", "astype", "float_builtin", "make_list", "make_tuple", "list_append", "stack_list",
          "concatenate_list", "sum_builtin", "setitem", "add_adjoints", "getitem_list")
deflinear("multi", "matmul", "dot", "outer", "inner", "tensordot", "einsum")
for _name in ("unbroadcast", "unindex", "untake", "take_part", "expand_reduced", "zero_at",
              "unindex_list", "unstack_list", "unconcatenate_list", "sum_list_grad",
              "select_grad", "max_grad", "stack_items", "concatenate_items"):
    RULES[_name].linear = (0,)
for _name in ("dot_grad", "inner_grad", "tensordot_grad"):
    RULES[_name].linear = (0, 1, 2)  # bilinear in g and the other operand: see defjvp below
RULES["einsum_grad"].linear = (0,)
# Bilinear, not jointly linear: the JVP is the sum over inputs with one replaced by its
# tangent (the input read only for its shape contributes zeros). These explicit rules take
# precedence over the marks above.
defjvp("dot_grad",
       lambda t, ans, h, x, y, part: dot_grad(t, x, y, part),
       lambda t, ans, h, x, y, part: np.zeros_like(ans) if part == 0 else dot_grad(h, t, y, 1),
       lambda t, ans, h, x, y, part: dot_grad(h, x, t, 0) if part == 0 else np.zeros_like(ans))
defjvp("inner_grad",
       lambda t, ans, h, x, y, part: inner_grad(t, x, y, part),
       lambda t, ans, h, x, y, part: np.zeros_like(ans) if part == 0 else inner_grad(h, t, y, 1),
       lambda t, ans, h, x, y, part: inner_grad(h, x, t, 0) if part == 0 else np.zeros_like(ans))
defjvp("tensordot_grad",
       lambda t, ans, h, x, y, axes, part: tensordot_grad(t, x, y, axes, part),
       lambda t, ans, h, x, y, axes, part: np.zeros_like(ans) if part == 0 else tensordot_grad(h, t, y, axes, 1),
       lambda t, ans, h, x, y, axes, part: tensordot_grad(h, x, t, axes, 0) if part == 0 else np.zeros_like(ans))
defjvp("einsum_grad",
       lambda t, ans, h, subscripts, operands, part: einsum_grad(t, subscripts, operands, part),
       None,
       lambda t, ans, h, subscripts, operands, part: einsum_grad_jvp(h, subscripts, operands, t, part))
defjvp("max",
       lambda t, ans, x, axis=None, keepdims=False: max_jvp(t, ans, x, axis, keepdims))
for _name in ("amax", "min", "amin"):
    RULES[_name].jvps = RULES["max"].jvps
defjvp("prod",
       lambda t, ans, x, axis=None, keepdims=False: np.sum(prod_grad(np.ones_like(ans), x, axis, keepdims) * t, axis=axis, keepdims=keepdims))
defjvp("prod_grad",
       lambda t, ans, h, x, axis, keepdims: prod_grad(t, x, axis, keepdims),
       lambda t, ans, h, x, axis, keepdims: prod_grad_jvp(h, x, t, axis, keepdims))
defjvp("var",
       lambda t, ans, x, axis=None, ddof=0, keepdims=False: var_jvp(t, x, axis, ddof, keepdims))
defjvp("std",
       lambda t, ans, x, axis=None, ddof=0, keepdims=False: var_jvp(t, x, axis, ddof, keepdims) / (2.0 * ans))
defjvp("min_builtin",
       lambda t, ans, *xs, argnum: select_grad(t, ans, xs, argnum))
RULES["max_builtin"].jvps = RULES["min_builtin"].jvps
TEMPLATE_NAMESPACE.update(max_jvp=runtime.max_jvp, var_jvp=runtime.var_jvp)
defprimitive("max_jvp", runtime.max_jvp, _helper("max_jvp"))
defprimitive("var_jvp", runtime.var_jvp, _helper("var_jvp"))
