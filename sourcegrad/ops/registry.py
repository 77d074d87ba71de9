"""The rules and the functions that define them: one `Rule` per op, in `RULES` by the op's name.

An operation is something the compiler does not look inside (a numpy function, an
operator, an attribute read, a runtime helper) and the eager mode records as one node.
Its `Rule` holds everything either mode asks about it:

* how to run it (`fn`) and how generated code writes it (`spelling`);
* its derivatives: one VJP lambda per positional input, JVPs or a linearity mark;
* the properties the compiler's passes ask (`kind`: elementwise / reduction;
  `props`: "view", "fresh", "owned", "linear_in_first", ...; `method`: the array
  method generated code writes; `methods`: the array methods user code may call;
  `shape`: the shape function the analysis uses; `math`, `libm`, `inline`: its Python-float
  and C-library spellings; `product`: a matrix product) through `has(name, prop)` or the
  fields themselves (`spelled(kind, text)` finds the entry of a call of generated code);
* its torch names (`torch`: node, function, Tensor method, in-place variant, numpy
  dispatch), from which the eager surface is made (`eager.surface`: the op itself is made
  from the entry for elementwise ops and plain reductions, or written by hand and marked
  `@implements(name)`; its functions, methods, in-place variants, numpy dispatch and
  `__all__` names are these).

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
  keeps, so a rule that does not read `x` never makes the compiler save it
  (`ops.reads`, the one analysis of that, serves both modes).

Templates may call functions that have rules (`np.<function>`, the helpers of
`sourcegrad.runtime`, a module's own helpers registered as ops), read attributes, use
operators and conditional expressions whose tests become constant once the call's static
arguments and ranks are known. A template reads a name as the lambda does when the eager
engine calls it (`template_name`): its parameter, else a variable of its closure, a global
of its module, a builtin; a name bound to a number, a string, a tuple or None reads as that
constant. So a rule calls the helpers its own module defines or imports (there is no shared
namespace to enter them in), and a factory of closures makes one rule per member of a family
(the stacks of ops/numpy_functions.py: the closure's `kind` is a constant of each). Each VJP
lambda starts on a line of its own, so its source can be found from its code object; a
family's templates written out per member (`ops.expand`) have their source kept here.

Imports: numpy and gast only.

Words: an *op* is an operation's name (`"mul_op"`, what IR calls and generated code's
spellings refer to); its *rule* is its record here (`RULES[op]`, a `Rule`), which docs also
call the op's entry in the registry. A *primitive*, in docstrings, is what an op names: an
operation the compiler does not look inside (`defprimitive` makes a rule with no VJPs yet).

Why one module: the `Rule` record and the few functions that make and look up rules are the
registry's one concept, which every family module builds on.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import linecache
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import gast


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


@dataclass(frozen=True)
class Torch:
    """The op's torch names, from which the eager surface is made (`eager.surface`).

    node: the backward node's class name (`SincBackward0`; None where torch records no node,
    its result not requiring grad: torch.special.bessel_j0); function: the names of
    `sourcegrad.<name>(x)` (the first is the op's own name, the others aliases); method: the
    Tensor methods (`x.sinc()`); inplace: the in-place Tensor methods (`x.sinc_()`); numpy:
    whether `np.<fn>(tensor)` dispatches to it (`__array_ufunc__` / `__array_function__`;
    `scipy.special.<fn>(tensor)` for a scipy ufunc); keep_int: an integer input keeps its
    dtype (torch's abs) instead of becoming float; special: the names of
    `sourcegrad.special.<name>(x)` (torch.special, made by `eager.special`).
    """

    node: str | None
    function: tuple = ()
    method: tuple = ()
    inplace: tuple = ()
    numpy: bool = True
    keep_int: bool = False
    special: tuple = ()


def torch(node, *names, inplace=(), method=None, numpy=True, keep_int=False, special=()) -> Torch:
    """The torch names of an op whose Tensor methods are its function names (most are):
    `torch("SincBackward0", "sinc", inplace=("sinc_",), special=("sinc",))`."""
    names = tuple(names)
    method = names if method is None else tuple(method)
    return Torch(node, names, method, tuple(inplace), numpy, keep_int, tuple(special))


# The properties `has` answers besides `kind` (a record's `props`):
#   "view": the result shares memory with the first argument (numpy views; an item of a list);
#   "fresh": the result is a new array no other name refers to (optimize's buffer reuse);
#   "owned": an adjoint accumulator holding the result may be updated in place (reverse);
#   "linear_in_first": linear in its first argument, the others axes or shapes (a scalar
#                      factor passes through it);
#   "shape_checked": its errors depend only on its operands' shapes and static arguments (so
#                    the analysis may run it on stand-ins to find numpy's own error);
#   "complex": its rules hold for complex values too (ops/complex_values.py says how); the
#              compiler and the eager mode refuse a complex value through any other op. An
#              entry says it where it is defined: `defvjp(..., complex=True)` (or in props);
#   "readonly": the result is a view numpy makes read-only (np.diagonal, np.broadcast_to):
#               an update in place of it raises numpy's ValueError;
#   "complement": of a boolean mask, its complement (`~m`, np.logical_not): the two name no
#                 element in common (optimize.indices);
#   "data_shaped": its result's shape depends on its operands' values, not only on their
#                  shapes (np.nonzero; np.repeat by an array of counts and np.where of a
#                  condition alone: `data_shaped` says when), so the trace guards a shape
#                  read from it and shape inference gives it none;
#   "reduction": kind == "reduction"; "elementwise": kind == "elementwise".
PROPERTIES = (
    "view",
    "fresh",
    "owned",
    "linear_in_first",
    "shape_checked",
    "complex",
    "readonly",
    "complement",
    "data_shaped",
)


@dataclass
class Rule:
    """Everything sourcegrad knows about one op: its rule."""

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
    # the VJPs are Python code called when the backward runs (`vjp_at_run_time`), not
    # templates inlined into it: a gradient called inside differentiated code
    run_time_vjp: bool = False
    # parameters that take a function of the user's, which the op calls itself
    # (scipy.integrate.odeint's func): the front end passes a module-level function as a value
    function_params: tuple = ()
    # positions of a rule without a gradient whose real-number arguments its result's values
    # still depend on (np.full_like's fill_value, np.arange's start, stop and step): one that
    # carries a gradient there is refused (`analysis.check_dropped_inputs`), not dropped
    values_from: tuple = ()
    # the pass properties (see PROPERTIES)
    props: frozenset = frozenset()
    # the array method generated code writes instead of the function (`x.sum(axis=0)`)
    method: str | None = None
    # the array methods user code may call for this op (`x.flatten()` -> ravel)
    methods: tuple = ()
    # the analysis's shape function for this op, by name (None: by kind, or run the op)
    shape: str | None = None
    # the `math` module's function computing it on Python floats (arcsin: "asin"): generated
    # code writes `math.asin(x)` where every operand is a Python float (codegen; the analysis
    # then knows a Python float results, and a domain error raises instead of giving nan), and
    # `math_<name>` is the entry of `math.<name>` (ops/elementwise.py makes them from this)
    math: str | None = None
    # the C math library's function numba compiles it to on one float64, one element a call
    # (arcsin: "asin"): numba_fusion writes a fused loop's `np.arcsin(v)` as `math.asin(v)`
    # where `math` is set too (numba compiles it in about half the time), and glibc's libmvec
    # computes it four elements a call where it has `_ZGVdN4v_<libm>` (numba_vector_math)
    libm: str | None = None
    # numba compiles it to a few instructions and no call (sqrt, abs, negation): a fused loop
    # (numba_fusion._groups) need not end after it
    inline: bool = False
    # a matrix product of its two operands (`a @ b`, np.matmul, np.dot): for a 2-d first
    # operand, row i of the result is row i of it times the second (row_blocks batches the
    # rows; shape_names reads the result's axes from the operands')
    product: bool = False
    # the number the result is filled with (np.zeros_like: 0.0, np.ones: 1.0): outside a
    # masked write, such an array holds that number (masked_writes, masked_adjoints)
    fill: float | None = None
    # torch names (eager surface), or None
    torch: Torch | None = None

    def __post_init__(self) -> None:
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

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Map a call's positional and keyword arguments to parameter names, defaults filled in."""
        bound = self.signature().bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def jvp_for(self, argnum: int) -> Any:
        """The explicit JVP lambda for input `argnum` (the last one serves *varargs), or None."""
        if self.varargs is not None and argnum >= len(self.params) and self.jvps:
            return self.jvps[-1]
        return self.jvps[argnum] if argnum < len(self.jvps) else None

    def vjp_for(self, argnum: int) -> Any:
        """The VJP lambda for positional input `argnum` (or for any *varargs input), or None."""
        if self.varargs is not None and argnum >= len(self.params):
            return self.vjps[-1]
        return self.vjps[argnum] if argnum < len(self.vjps) else None


RULES: dict[str, Rule] = {}

# Python's operators (by their gast/ast node name) and the primitives they call; user code
# and rule templates are both lowered through this one mapping.
OPERATORS = {
    "Add": "add_op",
    "Sub": "sub_op",
    "Mult": "mul_op",
    "Div": "div_op",
    "Pow": "pow_op",
    "MatMult": "matmul_op",
    "Mod": "mod_op",
    "FloorDiv": "floordiv_op",
    "BitOr": "or_op",
    "BitAnd": "and_op",
    "BitXor": "xor_op",
}
COMPARISONS = {"Lt": "lt", "LtE": "le", "Gt": "gt", "GtE": "ge", "Eq": "eq", "NotEq": "ne"}
_BY_FUNCTION: dict = {}  # id of the callable (see _function_key) -> op name
_BY_METHOD: dict[str, str] = {}
_BY_SPELLING: dict[tuple, str] = {}  # (spelling kind, text) -> the first op spelled so


# --- queries ---------------------------------------------------------------------------------


def get(name: str) -> Rule:
    """The record of op `name` (KeyError if there is none)."""
    return RULES[name]


def has(name: str, prop: str) -> bool:
    """Does op `name` have property `prop` (one of PROPERTIES, "reduction", "elementwise")?
    An unknown op has none."""
    op = RULES.get(name)
    if op is None:
        return False
    if prop in ("reduction", "elementwise"):
        return op.kind == prop
    return prop in op.props


def data_shaped(name: str, ndims: tuple) -> bool:
    """Is the result of op `name`, called with positional operands of these numbers of
    dimensions, shaped by the operands' values (the property "data_shaped")? np.repeat is
    by an array of counts only, np.where of a condition alone only."""
    if not has(name, "data_shaped"):
        return False
    if name == "where":
        return len(ndims) == 1
    if name == "np_repeat":
        return len(ndims) > 1 and ndims[1] > 0
    return True


def rule_for_function(fn: object) -> Rule | None:
    """The rule registered for a callable object (np.exp, math.sin, ...), if any."""
    name = _BY_FUNCTION.get(_function_key(fn))
    if name is None and _OPTIONAL and load_optional():
        name = _BY_FUNCTION.get(_function_key(fn))
    return RULES.get(name) if name is not None else None


# The entries of optional libraries, registered once the program has imported the library
# (importing scipy for every user of sourcegrad would cost a second): library -> our module.
_OPTIONAL = {
    "scipy.special": "scipy_special",
    "scipy.stats": "scipy_stats",
    "scipy.linalg": "scipy_linalg",
    "scipy.signal": "scipy_signal",
    "scipy.integrate": "scipy_integrate",
}


def load_optional() -> bool:
    """Register the entries of the optional libraries imported since the last call."""
    loaded = False
    for library, ours in list(_OPTIONAL.items()):
        if library in sys.modules:
            del _OPTIONAL[library]
            importlib.import_module(f"{__package__}.{ours}")
            loaded = True
    return loaded


def _function_key(fn: object) -> object:
    # a bound method (scipy.stats.norm.logpdf) is a new object at each attribute read: it is
    # known by its object and function
    if inspect.ismethod(fn):
        return (id(fn.__self__), id(fn.__func__))
    return id(fn)


def spelled(kind: str, text: str) -> Rule | None:
    """The entry generated code calls as `Spelling(kind, text)`: `spelled("func", "arcsin")`
    for `np.arcsin(x)`, `spelled("module", "math.asin")` for `math.asin(x)` (the first one
    registered where several share a spelling), or None."""
    name = _BY_SPELLING.get((kind, text))
    return RULES[name] if name is not None else None


def op_for_method(method: str) -> str | None:
    """The op an array method of user code calls (`x.flatten()` -> "ravel"), or None."""
    return _BY_METHOD.get(method)


def array_methods() -> list[str]:
    """The array methods user code may call, sorted (for error messages)."""
    return sorted(_BY_METHOD)


# --- defining ops ----------------------------------------------------------------------------


def defvjp(
    name,
    fn,
    spelling,
    *vjps,
    kind="other",
    pure=True,
    register_fn=True,
    sequence_input=False,
    jvps=None,
    linear=None,
    **properties,
):
    """Register `name` with one VJP per positional input (None: no gradient for it).

    For a primitive with *varargs inputs (concatenate, stack, einsum), the last VJP
    serves every one of them and receives its position as the keyword `argnum`.
    `jvps`/`linear` give its forward mode (see Rule.linear); `properties` the record's
    other fields (props, method, methods, shape, torch, math, libm, inline, product;
    complex=True adds the property "complex").
    """
    template = next((v for v in vjps if v is not None), None)
    params, defaults, varargs = _params_of(template) if template else ((), {}, None)
    rule = Rule(
        name,
        fn,
        spelling,
        tuple(vjps),
        params,
        defaults,
        varargs,
        kind,
        differentiable=True,
        pure=pure,
        sequence_input=sequence_input,
    )
    _set(rule, properties)
    _register(rule, fn if register_fn else None)
    for vjp in vjps:
        if vjp is not None:
            _check_template(vjp)
    if jvps is not None:
        defjvp(name, *jvps)
    if linear is not None:
        deflinear(linear, name)
    return rule


def defnondiff(
    name, fn, spelling, params=None, kind="other", pure=True, register_fn=True, **properties
):
    """Register a primitive whose result carries no gradient (its derivative is zero or undefined)."""
    rule = Rule(
        name, fn, spelling, (), tuple(params or ()), {}, None, kind, differentiable=False, pure=pure
    )
    _set(rule, properties)
    _register(rule, fn if register_fn else None)
    return rule


def defprimitive(name, fn, spelling, kind="other", pure=True, **properties):
    """Register a differentiable primitive whose VJPs are not written yet: using them is an error."""
    rule = Rule(name, fn, spelling, (), (), {}, None, kind, differentiable=True, pure=pure)
    _set(rule, properties)
    _register(rule, fn)
    return rule


def alias(name, fn, spelling, like, family=None, **properties):
    """A second spelling of an existing primitive (`x * y` and `np.multiply`) sharing its VJPs.

    The family names one computation (common-subexpression elimination shares values
    across it); `family` is for a different computation that only borrows the rules
    (min borrows max's). Pass properties are not inherited: each spelling says its own."""
    base = RULES[like]
    rule = Rule(
        name,
        fn,
        spelling,
        base.vjps,
        base.params,
        base.defaults,
        base.varargs,
        base.kind,
        base.differentiable,
        base.pure,
        base.sequence_input,
        base.static_result,
        family or base.family,
        base.linear,
        base.jvps,
    )
    _set(rule, properties)
    _register(rule, fn)
    return rule


def defjvp(name, *jvps):
    """Explicit forward-mode rules for `name`: one lambda (t, ans, *inputs) per input."""
    RULES[name].jvps = tuple(jvps)
    for jvp in jvps:
        if jvp is not None:
            _check_template(jvp)


def deflinear(kind, *names):
    """Mark primitives linear for forward mode (see Rule.linear); aliases follow."""
    for name in names:
        RULES[name].linear = kind
        for other in RULES.values():
            if other.family == RULES[name].family:
                other.linear = kind


def mark(prop, *names):
    """Give the ops `names` the pass property `prop` (one of PROPERTIES)."""
    if prop not in PROPERTIES:
        raise ValueError(f"unknown op property {prop!r}")
    for name in names:
        RULES[name].props = RULES[name].props | {prop}


def _set(rule, properties):
    properties = dict(properties)
    if properties.pop("complex", False):  # (complex=True: the property "complex", see PROPERTIES)
        properties["props"] = frozenset(properties.get("props", ())) | {"complex"}
    for key, value in properties.items():
        if key not in (
            "props",
            "method",
            "methods",
            "shape",
            "torch",
            "static_result",
            "family",
            "run_time_vjp",
            "function_params",
            "math",
            "libm",
            "inline",
            "product",
            "fill",
        ):
            raise TypeError(f"op {rule.name!r}: unknown field {key!r}")
        if key == "props":
            value = frozenset(value)
            if not value <= set(PROPERTIES):
                raise ValueError(
                    f"op {rule.name!r}: unknown properties {set(value) - set(PROPERTIES)}"
                )
        setattr(rule, key, value)
    if rule.family == "":
        rule.family = rule.name.removeprefix("np_")


def _register(rule, fn):
    if rule.name in RULES:
        raise ValueError(f"primitive {rule.name!r} is registered twice")
    RULES[rule.name] = rule
    _BY_SPELLING.setdefault((rule.spelling.kind, rule.spelling.text), rule.name)
    if fn is not None and _function_key(fn) not in _BY_FUNCTION:
        _BY_FUNCTION[_function_key(fn)] = rule.name
    for method in rule.methods:
        if method in _BY_METHOD:
            raise ValueError(
                f"array method {method!r} is claimed by {_BY_METHOD[method]!r} and {rule.name!r}"
            )
        _BY_METHOD[method] = rule.name


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

_TEMPLATE_CACHE: dict[int, tuple] = {}  # id(code) -> (code, its Lambda node)
_MODULE_LAMBDAS: dict[str, dict[int, list]] = {}
_WRITTEN: dict[str, list] = {}  # file name -> the lines of the templates written out there
_WRITTEN_AT: dict[tuple, str] = {}  # (file name, line) -> the template written out there
_GLOBALS_READ: set = set()  # the global names of the templates read so far


def vjp_template(vjp) -> gast.Lambda:
    """The gast `Lambda` node of a VJP, found in its module's source by its first line (or in
    the source `ops.expand` wrote it out in: `add_source`)."""
    code = vjp.__code__
    cached = _TEMPLATE_CACHE.get(id(code))
    if cached is None or cached[0] is not code:
        lam = lambda_node(vjp)
        _TEMPLATE_CACHE[id(code)] = cached = (code, lam)
        _GLOBALS_READ.update(_free_names(lam) - set(code.co_freevars))
    return cached[1]


def lambda_node(fn) -> gast.Lambda:
    """The gast `Lambda` node of the lambda `fn` (which starts on a line of its own)."""
    code = fn.__code__
    written = _WRITTEN_AT.get((code.co_filename, code.co_firstlineno))
    if written is not None:
        found = _lambdas(written).get(1, [])
    else:
        by_line = _MODULE_LAMBDAS.get(code.co_filename)
        if by_line is None:
            with open(code.co_filename) as f:
                by_line = _MODULE_LAMBDAS[code.co_filename] = _lambdas(f.read())
        found = by_line.get(code.co_firstlineno, [])
    if len(found) != 1:
        raise ValueError(
            f"{code.co_filename}:{code.co_firstlineno}: a VJP lambda must "
            "start on a line of its own"
        )
    return found[0]


def add_source(file: str, text: str, reads=()) -> str:
    """Add `text`, one template written out by `ops.expand` reading the global names `reads`,
    to the source kept as `file`, where it is compiled from and read back (by `vjp_template`,
    when first needed); tracebacks and `inspect.getsource` show it (it is entered in
    `linecache`). Returns `text` preceded by the lines before it, to compile with the file's
    line numbers."""
    lines = _WRITTEN.setdefault(file, [])
    _WRITTEN_AT[(file, len(lines) + 1)] = text
    _GLOBALS_READ.update(reads)
    placed = "\n" * len(lines) + text
    lines += text.splitlines(True)
    linecache.cache[file] = (sum(map(len, lines)), None, lines, file)
    return placed


def _check_template(fn) -> None:
    """Fail at import time if a template's source cannot be found (one `ops.expand` wrote out
    is read when it is first needed)."""
    code = fn.__code__
    if (code.co_filename, code.co_firstlineno) not in _WRITTEN_AT:
        vjp_template(fn)


def _lambdas(source: str) -> dict:
    by_line: dict = {}
    for node in gast.walk(gast.parse(source)):
        if isinstance(node, gast.Lambda):
            by_line.setdefault(node.lineno, []).append(node)
    return by_line


def template_name(fn, name):
    """What the free name `name` of the template `fn` stands for, as Python finds it when `fn`
    runs: a variable of its closure, a global of its module or a builtin (NameError if none)."""
    code = fn.__code__
    if name in code.co_freevars:
        return fn.__closure__[code.co_freevars.index(name)].cell_contents
    if name in fn.__globals__:
        return fn.__globals__[name]
    if hasattr(builtins, name):
        return getattr(builtins, name)
    raise NameError(f"name {name!r} is not defined")


def template_globals() -> frozenset:
    """The global names rule templates read (`np`, `unbroadcast`, a module's helpers): names a
    temporary of generated code does not take."""
    return frozenset(_GLOBALS_READ)


def _free_names(lam) -> set:
    params = {a.id for a in lam.args.args + lam.args.kwonlyargs}
    params |= {a.id for a in (lam.args.vararg, lam.args.kwarg) if a is not None}
    return {
        n.id
        for n in gast.walk(lam.body)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id not in params
    }


# --- spellings ----------------------------------------------------------------------------------


def func(name):
    return Spelling("func", name)


def helper(name):
    return Spelling("helper", name)
