"""Elementwise ops: operators, functions of one and two arguments, comparisons, and torch's
elementwise functions numpy spells otherwise (frac, copysign).

Why one module: ~530 lines of entries of one family, whose example inputs (`EXAMPLES`) and
shared tables (`_UNARY`, the math-module spellings) sit beside them.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..runtime import is_complex, unbroadcast
from .examples import arg, binary, ex, unary
from .registry import RULES, Spelling, alias, defjvp, defnondiff, defvjp, mark, torch
from .registry import func as _func

# Operators. `x * y` and `np.multiply(x, y)` are two spellings of one rule.
defvjp(
    "add",
    np.add,
    _func("add"),
    lambda g, ans, x, y: unbroadcast(g, x),
    lambda g, ans, x, y: unbroadcast(g, y),
    kind="elementwise",
    props={"owned"},
    complex=True,
)
defvjp(
    "subtract",
    np.subtract,
    _func("subtract"),
    lambda g, ans, x, y: unbroadcast(g, x),
    lambda g, ans, x, y: unbroadcast(-g, y),
    kind="elementwise",
    props={"owned"},
    complex=True,
)
defvjp(
    "multiply",
    np.multiply,
    _func("multiply"),
    lambda g, ans, x, y: unbroadcast(g * y, x),
    lambda g, ans, x, y: unbroadcast(g * x, y),
    kind="elementwise",
    props={"owned"},
    complex=True,
)
defvjp(
    "divide",
    np.divide,
    _func("divide"),
    lambda g, ans, x, y: unbroadcast(g / y, x),
    lambda g, ans, x, y: unbroadcast(-g * ans / y, y),
    kind="elementwise",
    props={"owned"},
    complex=True,
)
defvjp(
    "power",
    np.power,
    _func("power"),
    lambda g, ans, x, y: unbroadcast(g * y * x ** np.where(y, y - 1, 1), x),
    # (torch's: 0 where x is 0 and y >= 0 (ans is 0 or 1 there: log 1 makes it 0, with no
    # warning from log 0), ans log x elsewhere: at x = 0, y < 0, inf * -inf = -inf, where
    # log(np.where(x, x, 1)) gave inf * 0 = NaN. The 1 is ans's ones: a Python 1 and a
    # Python x (2.0 ** t) make a float32 where under create_graph, torch's default dtype)
    lambda g, ans, x, y: unbroadcast(
        g * ans * np.log(np.where((x == 0) & (np.real(y) >= 0), np.ones_like(ans), x)), y
    ),
    kind="elementwise",
    complex=True,
)
defvjp(
    "negative",
    np.negative,
    _func("negative"),
    lambda g, ans, x: -g,
    kind="elementwise",
    torch=torch("NegBackward0", "neg", "negative", inplace=("neg_", "negative_"), keep_int=True),
    inline=True,
    complex=True,
)
defvjp(
    "positive",
    np.positive,
    _func("positive"),
    lambda g, ans, x: g,
    kind="elementwise",
    inline=True,
    complex=True,
)
alias("add_op", operator.add, Spelling("binop", "+"), like="add", props={"owned"}, complex=True)
alias(
    "sub_op", operator.sub, Spelling("binop", "-"), like="subtract", props={"owned"}, complex=True
)
alias(
    "mul_op", operator.mul, Spelling("binop", "*"), like="multiply", props={"owned"}, complex=True
)
alias(
    "div_op", operator.truediv, Spelling("binop", "/"), like="divide", props={"owned"}, complex=True
)
alias("pow_op", operator.pow, Spelling("binop", "**"), like="power", props={"owned"}, complex=True)
alias(
    "neg_op", operator.neg, Spelling("unaryop", "-"), like="negative", props={"owned"}, complex=True
)
alias("pos_op", operator.pos, Spelling("unaryop", "+"), like="positive", complex=True)
alias("true_divide", np.true_divide, _func("true_divide"), like="divide", complex=True)
defvjp(
    "mod_op",
    operator.mod,
    Spelling("binop", "%"),
    lambda g, ans, x, y: unbroadcast(g, x),
    lambda g, ans, x, y: unbroadcast(-g * np.floor_divide(x, y), y),
    kind="elementwise",
)


def _c(name):
    """The facts of a function of C's math library that Python's math module has by the same
    name (see Rule.math and Rule.libm)."""
    return {"math": name, "libm": name}


# Elementwise functions of one argument: numpy function, VJP, torch names (eager surface), the
# other fields of the entry (math, libm, inline: registry.Rule).
_UNARY = {
    "exp": (
        np.exp,
        lambda g, ans, x: g * ans,
        torch("ExpBackward0", "exp", inplace=("exp_",)),
        {**_c("exp"), "complex": True},
    ),
    "exp2": (
        np.exp2,
        lambda g, ans, x: g * ans * np.log(2.0),
        torch("Exp2Backward0", "exp2", inplace=("exp2_",), special=("exp2",)),
        {"libm": "exp2"},
    ),
    "expm1": (
        np.expm1,
        lambda g, ans, x: g * (ans + 1.0),
        torch("Expm1Backward0", "expm1", inplace=("expm1_",), special=("expm1",)),
        {**_c("expm1"), "complex": True},
    ),
    "log": (
        np.log,
        lambda g, ans, x: g / x,
        torch("LogBackward0", "log", inplace=("log_",)),
        {**_c("log"), "complex": True},
    ),
    "log1p": (
        np.log1p,
        lambda g, ans, x: g / (1.0 + x),
        torch("Log1PBackward0", "log1p", inplace=("log1p_",), special=("log1p",)),
        {**_c("log1p"), "complex": True},
    ),
    "log2": (
        np.log2,
        lambda g, ans, x: g / (x * np.log(2.0)),
        torch("Log2Backward0", "log2", inplace=("log2_",)),
        _c("log2"),
    ),
    "log10": (
        np.log10,
        lambda g, ans, x: g / (x * np.log(10.0)),
        torch("Log10Backward0", "log10", inplace=("log10_",)),
        _c("log10"),
    ),
    "sqrt": (
        np.sqrt,
        lambda g, ans, x: g / (2.0 * ans),
        torch("SqrtBackward0", "sqrt", inplace=("sqrt_",)),
        {**_c("sqrt"), "inline": True, "complex": True},
    ),
    "cbrt": (np.cbrt, lambda g, ans, x: g / (3.0 * ans * ans), None, {"libm": "cbrt"}),
    "square": (np.square, lambda g, ans, x: g * 2.0 * x, None, {"inline": True, "complex": True}),
    "reciprocal": (
        np.reciprocal,
        lambda g, ans, x: -g * ans * ans,
        torch("ReciprocalBackward0", "reciprocal", inplace=("reciprocal_",)),
        {"inline": True, "complex": True},
    ),
    "sin": (
        np.sin,
        lambda g, ans, x: g * np.cos(x),
        torch("SinBackward0", "sin", inplace=("sin_",)),
        {**_c("sin"), "complex": True},
    ),
    "cos": (
        np.cos,
        lambda g, ans, x: -g * np.sin(x),
        torch("CosBackward0", "cos", inplace=("cos_",)),
        {**_c("cos"), "complex": True},
    ),
    "tan": (
        np.tan,
        lambda g, ans, x: g * (1.0 + ans * ans),
        torch("TanBackward0", "tan", inplace=("tan_",)),
        {**_c("tan"), "complex": True},
    ),
    "arcsin": (
        np.arcsin,
        lambda g, ans, x: g / np.sqrt(1.0 - x * x),
        torch("AsinBackward0", "asin", "arcsin", inplace=("asin_", "arcsin_")),
        _c("asin"),
    ),
    "arccos": (
        np.arccos,
        lambda g, ans, x: -g / np.sqrt(1.0 - x * x),
        torch("AcosBackward0", "acos", "arccos", inplace=("acos_", "arccos_")),
        _c("acos"),
    ),
    "arctan": (
        np.arctan,
        lambda g, ans, x: g / (1.0 + x * x),
        torch("AtanBackward0", "atan", "arctan", inplace=("atan_", "arctan_")),
        _c("atan"),
    ),
    "sinh": (
        np.sinh,
        lambda g, ans, x: g * np.cosh(x),
        torch("SinhBackward0", "sinh", inplace=("sinh_",)),
        {**_c("sinh"), "complex": True},
    ),
    "cosh": (
        np.cosh,
        lambda g, ans, x: g * np.sinh(x),
        torch("CoshBackward0", "cosh", inplace=("cosh_",)),
        {**_c("cosh"), "complex": True},
    ),
    "tanh": (
        np.tanh,
        lambda g, ans, x: g * (1.0 - ans * ans),
        torch("TanhBackward0", "tanh", inplace=("tanh_",)),
        {**_c("tanh"), "complex": True},
    ),
    "arcsinh": (
        np.arcsinh,
        lambda g, ans, x: g / np.sqrt(x * x + 1.0),
        torch("AsinhBackward0", "asinh", "arcsinh", inplace=("asinh_", "arcsinh_")),
        _c("asinh"),
    ),
    "arccosh": (
        np.arccosh,
        lambda g, ans, x: g / np.sqrt(x * x - 1.0),
        torch("AcoshBackward0", "acosh", "arccosh", inplace=("acosh_", "arccosh_")),
        _c("acosh"),
    ),
    "arctanh": (
        np.arctanh,
        lambda g, ans, x: g / (1.0 - x * x),
        torch("AtanhBackward0", "atanh", "arctanh", inplace=("atanh_", "arctanh_")),
        _c("atanh"),
    ),
    # (of a complex x: |x|' is conj(x) / |x| in the complex rules' convention, ops/complex_values;
    # not conj(np.sign(x)): sign is differentiable there, and 0 at 0 as torch's)
    "absolute": (
        np.absolute,
        lambda g, ans, x: (
            g * np.conj(x) / np.where(ans == 0.0, 1.0, ans) if is_complex(x) else g * np.sign(x)
        ),
        torch("AbsBackward0", "abs", "absolute", inplace=("abs_",), keep_int=True),
        {"math": "fabs", "inline": True, "complex": True},
    ),
}
for _name, (_fn, _vjp, _torch, _facts) in _UNARY.items():
    defvjp(_name, _fn, _func(_name), _vjp, kind="elementwise", torch=_torch, **_facts)
# (the adjoint accumulators the reverse pass may update in place hold these results)
mark("owned", "exp", "log", "sin", "cos", "tanh", "sqrt", "square")
# sinc(x) = sin(pi x) / (pi x), 1 at 0. Its derivative (cos(pi x) - sinc(x)) / x loses digits
# near 0, so there it is the Taylor series -pi^2 x / 3 + pi^4 x^3 / 30, exact to rounding at
# |x| < 1e-3 and differentiable at 0 too (torch's second derivative there is nan).
defvjp(
    "sinc",
    np.sinc,
    _func("sinc"),
    lambda g, ans, x: (
        g
        * np.where(
            np.abs(x) < 1e-3,
            x * (3.2469697011334144 * x * x - 3.289868133696453),
            (np.cos(3.141592653589793 * x) - ans) / np.where(np.abs(x) < 1e-3, 1.0, x),
        )
    ),
    kind="elementwise",
    torch=torch("SincBackward0", "sinc", inplace=("sinc_",), special=("sinc",)),
)
# its JVP is the real part of the VJP's formula with g := t (|x| is real)
defjvp(
    "absolute",
    lambda t, ans, x: (
        np.real(np.conj(x) * t) / np.where(ans == 0.0, 1.0, ans)
        if is_complex(x)
        else t * np.sign(x)
    ),
)
alias("fabs", np.fabs, _func("fabs"), like="absolute", math="fabs", inline=True)
alias("abs_builtin", abs, Spelling("builtin", "abs"), like="absolute", complex=True)

# Elementwise functions of two arguments.
defvjp(
    "maximum",
    np.maximum,
    _func("maximum"),
    # masks, not g * mask: as torch's, an inf or nan g where the other argument wins gives 0
    # (and a nan, which wins, passes g to both)
    lambda g, ans, x, y: unbroadcast(np.where(x == y, g * 0.5, np.where(x < y, 0, g)), x),
    lambda g, ans, x, y: unbroadcast(np.where(x == y, g * 0.5, np.where(y < x, 0, g)), y),
    kind="elementwise",
    torch=torch("MaximumBackward0", "maximum", keep_int=True),
)
defvjp(
    "minimum",
    np.minimum,
    _func("minimum"),
    lambda g, ans, x, y: unbroadcast(np.where(x == y, g * 0.5, np.where(x > y, 0, g)), x),
    lambda g, ans, x, y: unbroadcast(np.where(x == y, g * 0.5, np.where(y > x, 0, g)), y),
    kind="elementwise",
    torch=torch("MinimumBackward0", "minimum", keep_int=True),
)
defvjp(
    "logaddexp",
    np.logaddexp,
    _func("logaddexp"),
    lambda g, ans, x, y: unbroadcast(g * np.exp(x - ans), x),
    lambda g, ans, x, y: unbroadcast(g * np.exp(y - ans), y),
    kind="elementwise",
    torch=torch("LogaddexpBackward0", "logaddexp"),
)

# x² + y² is taken as 1 where it is 0 (the origin, or both underflowing), where the numerator
# is (about) 0 too: torch's atan2 gradient is 0 there, not 0 / 0 = NaN
defvjp(
    "arctan2",
    np.arctan2,
    _func("arctan2"),
    lambda g, ans, x, y: unbroadcast(g * y / np.where(x * x + y * y == 0, 1.0, x * x + y * y), x),
    lambda g, ans, x, y: unbroadcast(-g * x / np.where(x * x + y * y == 0, 1.0, x * x + y * y), y),
    kind="elementwise",
    torch=torch("Atan2Backward0", "atan2", "arctan2"),
    **_c("atan2"),
)
defvjp(
    "hypot",
    np.hypot,
    _func("hypot"),
    lambda g, ans, x, y: unbroadcast(g * x / ans, x),
    lambda g, ans, x, y: unbroadcast(g * y / ans, y),
    kind="elementwise",
    torch=torch("HypotBackward0", "hypot"),
    **_c("hypot"),
)
# `math.<name>(x)` of Python floats: the entry `math_<name>` of each function above that the
# math module has (its `math` field; absolute's "fabs" is np.fabs's too), sharing its rules
for _op in [_op for _op in RULES.values() if _op.math]:
    if f"math_{_op.math}" not in RULES:
        _fn, _spelling = getattr(math, _op.math), Spelling("module", f"math.{_op.math}")
        alias(f"math_{_op.math}", _fn, _spelling, like=_op.name, libm=_op.libm, inline=_op.inline)
alias("math_pow", math.pow, Spelling("module", "math.pow"), like="power")
defvjp(
    "where",
    np.where,
    _func("where"),
    None,
    lambda g, ans, condition, x, y: unbroadcast(np.where(condition, g, 0.0), x),
    lambda g, ans, condition, x, y: unbroadcast(np.where(condition, 0.0, g), y),
    kind="elementwise",
    # (np.where(condition) alone is np.nonzero(condition): registry.data_shaped)
    props={"fresh", "owned", "data_shaped"},
    complex=True,
)
# Gradient flows wherever clipping left x unchanged, bounds included (torch's clamp); elsewhere
# it is 0 whatever arrives, as torch's where(mask, g, 0) gives it (g * mask made a NaN in g a
# NaN gradient of the clipped elements too).
defvjp(
    "clip",
    np.clip,
    _func("clip"),
    lambda g, ans, x, a_min=None, a_max=None: unbroadcast(np.where(x == ans, g, 0.0), x),
    lambda g, ans, x, a_min=None, a_max=None: unbroadcast(
        np.where((ans != x) & (ans == a_min), g, 0.0), a_min
    ),
    lambda g, ans, x, a_min=None, a_max=None: unbroadcast(
        np.where((ans != x) & (ans == a_max), g, 0.0), a_max
    ),
    kind="elementwise",
    methods=("clip",),
)


for _name, _fn, _sym in (
    ("lt", operator.lt, "<"),
    ("le", operator.le, "<="),
    ("gt", operator.gt, ">"),
    ("ge", operator.ge, ">="),
    ("eq", operator.eq, "=="),
    ("ne", operator.ne, "!="),
):
    defnondiff(_name, _fn, Spelling("compare", _sym), params=("x", "y"), kind="elementwise")
defnondiff(
    "floordiv_op", operator.floordiv, Spelling("binop", "//"), params=("x", "y"), kind="elementwise"
)
# `(a > 0) | (b < 0)`: masks joined as layer code writes them; bitwise on integers (numpy
# refuses floats, and so does the code, with numpy's TypeError)
for _name, _fn, _sym in (
    ("or_op", operator.or_, "|"),
    ("and_op", operator.and_, "&"),
    ("xor_op", operator.xor, "^"),
):
    defnondiff(_name, _fn, Spelling("binop", _sym), params=("x", "y"), kind="elementwise")
# `~mask`: a mask's complement, as layer code writes it (`x[~pos]`); bitwise on integers
defnondiff(
    "invert_op",
    operator.invert,
    Spelling("unaryop", "~"),
    params=("x",),
    kind="elementwise",
    props={"complement", "shape_checked"},  # (numpy refuses ~ on floats: the analysis runs it)
)
for _name in (
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "equal",
    "not_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "floor_divide",
):
    defnondiff(_name, getattr(np, _name), _func(_name), params=("x", "y"), kind="elementwise")
for _name in (
    "sign",
    "floor",
    "ceil",
    "round",
    "rint",
    "trunc",
    "fix",
    "isnan",
    "isinf",
    "isfinite",
    "logical_not",
    "invert",
    "signbit",
):
    defnondiff(_name, getattr(np, _name), _func(_name), params=("x",), kind="elementwise")
mark("complement", "logical_not", "invert")
mark("shape_checked", "invert")


# Example inputs for the registry's test grid (ops/examples.py; tests/test_registry_grid.py):
# each entry on a domain where it is smooth.
_WHERE = np.array([[True, False, True, False]] * 3)
EXAMPLES = {
    **{
        _name: unary("normal")
        for _name in (
            "exp exp2 expm1 sin cos arctan sinh cosh tanh arcsinh negative positive square cbrt "
            "neg_op pos_op math_exp math_expm1 math_sin math_cos math_atan math_sinh math_cosh "
            "math_tanh math_asinh"
        ).split()
    },
    **{
        _name: unary("positive")
        for _name in (
            "log log1p log2 log10 sqrt reciprocal math_log math_log1p math_sqrt math_log2 "
            "math_log10"
        ).split()
    },
    **{
        _name: unary("unit")
        for _name in "tan arcsin arccos arctanh math_tan math_asin math_acos math_atanh".split()
    },
    **{_name: unary("above_one") for _name in ("arccosh", "math_acosh")},
    **{
        _name: unary("away_from_zero") for _name in ("absolute", "fabs", "abs_builtin", "math_fabs")
    },
    "sinc": unary("unit"),
    **{
        _name: binary()
        for _name in (
            "add subtract multiply add_op sub_op mul_op maximum minimum logaddexp arctan2 hypot"
        ).split()
    },
    **{_name: binary("normal", "away_from_zero") for _name in ("divide", "true_divide", "div_op")},
    **{_name: binary("positive", "normal") for _name in ("power", "pow_op")},
    "mod_op": binary("off_integers", "large"),
    "where": [
        ex(_WHERE, arg(3, 4), arg(4)),
        ex(_WHERE[0], arg(4), arg(domain="normal", py=True)),
    ],
    "clip": [
        ex(arg(3, 4), -0.5, 0.7),
        ex(arg(3, 4), arg(4, domain="unit"), 3.0),
        ex(arg(5), None, arg(domain="unit")),
    ],
}
# math's functions take Python floats
for _name in list(EXAMPLES):
    if _name.startswith("math_"):
        EXAMPLES[_name] = [ex(arg(domain=e.args[0].domain, py=True)) for e in EXAMPLES[_name][:1]]
EXAMPLES.update(
    {
        "math_atan2": [ex(arg(py=True), arg(domain="away_from_zero", py=True))],
        "math_hypot": [ex(arg(py=True), arg(py=True))],
        "math_pow": [ex(arg(domain="positive", py=True), arg(py=True))],
    }
)


# --- torch's elementwise functions numpy spells otherwise: frac, copysign ---------------------


def frac(x):
    """torch.frac: x - trunc(x), the fractional part with x's sign (numpy has no function)."""
    return x - np.trunc(x)


# frac's gradient is 1 (trunc is piecewise constant), as torch's FracBackward0. copysign(x, y)
# is |x| with y's sign: its gradient in x is the sign it gave x, ans / x (0 where x is 0, as
# torch masks it), and 0 in y (piecewise constant in y)
defvjp(
    "frac",
    frac,
    Spelling("module", "sourcegrad.ops.elementwise.frac"),
    lambda g, ans, x: g,
    kind="elementwise",
    torch=torch("FracBackward0", "frac", inplace=("frac_",), numpy=False, keep_int=True),
)
defvjp(
    "copysign",
    np.copysign,
    _func("copysign"),
    lambda g, ans, x, y: unbroadcast(g * np.where(x == 0, 0.0, ans / np.where(x == 0, 1.0, x)), x),
    lambda g, ans, x, y: unbroadcast(np.zeros_like(g), y),
    kind="elementwise",
    torch=torch("CopysignBackward0", "copysign"),
)
EXAMPLES.update(
    {"frac": unary("off_integers"), "copysign": binary("away_from_zero", "away_from_zero")}
)
