"""Front end: a Python function -> `ir.Function`.

`parse(fn)` reads the function's source with `inspect`, parses it with gast and
records where it came from. `lower(parsed)` resolves every name (locals,
closure cells, globals, builtins, modules such as `np`/`math`), rejects what the
compiler does not handle with a `SourcegradError` naming the construct and the
user's line, and lowers the body to A-normal form: one primitive call per
statement, every intermediate named, user variables renamed once per assignment
(so no value is ever overwritten in straight-line code).
"""
from __future__ import annotations

import builtins
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass

import gast
import numpy as np

from . import errors
from .errors import SourceLocation
from .ir import Assign, Call, Const, Function, Return, Slc, Tup, Var
from .names import Namer, name_for_call
from .rules import COMPARISONS, OPERATORS, RULES, rule_for_function


@dataclass
class ParsedFunction:
    """A function's gast tree plus what is needed to resolve its names and report errors."""

    fn: object
    tree: gast.FunctionDef
    file: str
    first_line: int  # line of the `def` in the file
    lines: list

    def loc(self, node) -> SourceLocation:
        line = getattr(node, "lineno", 1) + self.first_line - 1
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return SourceLocation(self.file, line, getattr(node, "col_offset", 0), text.rstrip("\n"))


def parse(fn) -> ParsedFunction:
    """Parse `fn`'s source. Works for module-level, nested and decorated functions."""
    fn = inspect.unwrap(fn, stop=lambda f: not hasattr(f, "__wrapped__"))
    if not isinstance(fn, types.FunctionType):
        raise errors.SourceNotFoundError(
            f"{fn!r} is not a Python function with source; sourcegrad differentiates functions "
            "written in Python (register a rule for a builtin or numpy function)")
    if fn.__name__ == "<lambda>":
        raise errors.UnsupportedSyntaxError("differentiating a lambda directly is not supported "
                                            "yet; define the function with def")
    try:
        source_lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise errors.SourceNotFoundError(
            f"the source of {fn.__qualname__} is not available ({exc}); functions defined with "
            "exec() or typed at the interactive prompt cannot be differentiated. Put it in a file.")
    file = inspect.getsourcefile(fn) or fn.__code__.co_filename
    module = gast.parse(textwrap.dedent("".join(source_lines)))
    tree = module.body[0]
    if not isinstance(tree, gast.FunctionDef):
        raise errors.UnsupportedSyntaxError(f"{fn.__qualname__} is not defined by a def statement")
    lines = linecache.getlines(file) or source_lines
    if not linecache.getlines(file):
        first_line = 1
    return ParsedFunction(fn, tree, file, first_line, lines)


# --- name resolution ------------------------------------------------------------------------

@dataclass(frozen=True)
class ModuleRef:
    module: object


@dataclass(frozen=True)
class CallableRef:
    obj: object


def _closure_values(fn) -> dict:
    cells = fn.__closure__ or ()
    values = {}
    for name, cell in zip(fn.__code__.co_freevars, cells):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # an empty cell: the variable is assigned later in the outer function
            pass
    return values


def _static_value(value):
    """The `Const` a global or closure value inlines as, or None if it must stay a name."""
    if isinstance(value, (bool, int, float, str)) or value is None or value is Ellipsis:
        return Const(value)
    if isinstance(value, np.generic) and value.ndim == 0 and value.dtype.kind in "biuf":
        return Const(value.item())
    if isinstance(value, tuple) and all(isinstance(v, (int, float, bool, str)) or v is None
                                        for v in value):
        return Const(value)
    return None


# Methods on arrays: method name -> primitive, and how the method's arguments map onto it.
_METHODS = {
    "sum": "sum", "mean": "mean", "prod": "prod", "max": "max", "min": "min", "var": "var",
    "std": "std", "dot": "dot", "ravel": "ravel", "flatten": "ravel", "squeeze": "squeeze",
    "clip": "clip", "swapaxes": "swapaxes", "argmax": "np_argmax", "argmin": "np_argmin",
    "reshape": "reshape", "transpose": "transpose", "copy": "asarray",
}
_VARARG_METHODS = {"reshape": "shape", "transpose": "axes"}  # x.reshape(2, 3) == x.reshape((2, 3))
_ATTRS = {"T": "T", "shape": "shape", "ndim": "ndim", "size": "size", "dtype": "dtype"}


_UNSUPPORTED_STATEMENTS = {
    gast.If: "an if statement", gast.For: "a for loop", gast.While: "a while loop",
    gast.Try: "a try statement", gast.With: "a with statement", gast.Raise: "a raise statement",
    gast.Delete: "a del statement", gast.Global: "a global declaration",
    gast.Nonlocal: "a nonlocal declaration", gast.ClassDef: "a class definition",
    gast.FunctionDef: "a nested function definition", gast.AsyncFunctionDef: "an async function",
    gast.AsyncFor: "an async for loop", gast.AsyncWith: "an async with statement",
    gast.Import: "an import statement", gast.ImportFrom: "an import statement",
    gast.Assert: "an assert statement", gast.Break: "break", gast.Continue: "continue",
    gast.AnnAssign: "an annotated assignment",
}
_UNSUPPORTED_EXPRESSIONS = {
    gast.IfExp: "a conditional expression", gast.Lambda: "a lambda",
    gast.ListComp: "a list comprehension", gast.SetComp: "a set comprehension",
    gast.DictComp: "a dict comprehension", gast.GeneratorExp: "a generator expression",
    gast.Await: "await", gast.Yield: "yield", gast.YieldFrom: "yield from",
    gast.Dict: "a dict display", gast.Set: "a set display", gast.JoinedStr: "an f-string",
    gast.NamedExpr: "an assignment expression (:=)", gast.BoolOp: "and/or",
    gast.Starred: "a starred expression",
}


class Lowerer:
    """Lowers one parsed function to IR, statement by statement."""

    def __init__(self, parsed: ParsedFunction):
        self.parsed = parsed
        fn = parsed.fn
        self.globals = fn.__globals__
        self.closure = _closure_values(fn)
        self.namer = Namer(reserved={"np", "math"})
        self.env: dict[str, object] = {}  # user name -> current atom
        self.free: dict[str, object] = {}
        self.body: list = []
        self.loc = parsed.loc(parsed.tree)
        self.user_names: set = set()

    def error(self, cls, message, node=None):
        raise cls(message, self.parsed.loc(node) if node is not None else self.loc)

    # -- entry point ---------------------------------------------------------------------------

    def lower(self) -> Function:
        tree = self.parsed.tree
        args = tree.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            self.error(errors.UnsupportedSyntaxError,
                       "*args, **kwargs, keyword-only and positional-only parameters are not "
                       "supported yet", tree)
        params = []
        for arg in args.args:
            self.namer.reserve(arg.id)
            self.env[arg.id] = Var(arg.id)
            self.user_names.add(arg.id)
            params.append(arg.id)
        self.assigned = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
                         and isinstance(n.ctx, gast.Store)}
        for name in sorted(self.assigned | set(params)):
            self.namer.reserve(name)
        returned = False
        for stmt in tree.body:
            if returned:
                self.error(errors.UnsupportedSyntaxError, "code after return is unreachable", stmt)
            returned = self.statement(stmt)
        if not returned:
            self.error(errors.UnsupportedSyntaxError,
                       f"{tree.name} has no return statement, so it has no output to "
                       "differentiate", tree)
        return Function(tree.name, params, self.body, self.parsed.file, self.loc, self.free,
                        self.user_names)

    # -- statements ----------------------------------------------------------------------------

    def statement(self, stmt) -> bool:
        """Lower one statement; True when it was a return."""
        self.loc = self.parsed.loc(stmt)
        if isinstance(stmt, gast.Assign):
            if len(stmt.targets) != 1:
                self.error(errors.UnsupportedSyntaxError, "chained assignment (a = b = ...) is "
                           "not supported yet", stmt)
            self.assign(stmt.targets[0], stmt.value, stmt)
            return False
        if isinstance(stmt, gast.AugAssign):
            if not isinstance(stmt.target, gast.Name):
                self.error(errors.UnsupportedSyntaxError, "augmented assignment to "
                           f"{_describe(stmt.target)} is not supported yet", stmt)
            value = gast.BinOp(left=gast.Name(id=stmt.target.id, ctx=gast.Load(), annotation=None,
                                              type_comment=None),
                               op=stmt.op, right=stmt.value)
            gast.copy_location(value, stmt)
            self.assign(stmt.target, value, stmt)
            return False
        if isinstance(stmt, gast.Return):
            if stmt.value is None:
                self.error(errors.UnsupportedSyntaxError, "return without a value", stmt)
            self.body.append(Return(self.expr(stmt.value), self.loc))
            return True
        if isinstance(stmt, gast.Expr):
            if isinstance(stmt.value, gast.Constant) and isinstance(stmt.value.value, str):
                return False  # a docstring
            self.error(errors.UnsupportedSyntaxError, "an expression statement (a call made for "
                       "its side effect) is not supported yet", stmt)
        if isinstance(stmt, gast.Pass):
            return False
        what = _UNSUPPORTED_STATEMENTS.get(type(stmt), type(stmt).__name__)
        self.error(errors.UnsupportedSyntaxError, f"{what} is not supported yet in "
                   "differentiated code", stmt)

    def assign(self, target, value, stmt):
        if isinstance(target, gast.Name):
            atom = self.expr(value, name=target.id)
            self.bind(target.id, atom)
            return
        if isinstance(target, (gast.Tuple, gast.List)):
            if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(target.elts):
                atoms = [self.expr(v) for v in value.elts]  # evaluate all before binding: swaps
                for t, a in zip(target.elts, atoms):
                    if not isinstance(t, gast.Name):
                        self.error(errors.UnsupportedSyntaxError, "nested unpacking is not "
                                   "supported yet", stmt)
                    self.bind(t.id, a)
                return
            source = self.expr(value)
            for i, t in enumerate(target.elts):
                if not isinstance(t, gast.Name):
                    self.error(errors.UnsupportedSyntaxError, "nested unpacking is not supported "
                               "yet", stmt)
                self.bind(t.id, self.emit("getitem", [source, Const(i)], name=t.id))
            return
        self.error(errors.UnsupportedSyntaxError, f"assignment to {_describe(target)} is not "
                   "supported yet", stmt)

    def bind(self, name, atom):
        """Make the user name `name` refer to `atom`.

        A computed value was already named after `name` by `emit`; a copy (`a = b`) or
        a constant just makes `name` another name for the same atom, so copies cost nothing.
        """
        self.user_names.add(name)
        self.env[name] = atom

    def _version(self, name):
        return self.namer.fresh(name) if name in self.env else self._first(name)

    def _first(self, name):
        self.namer.taken.discard(name)
        return self.namer.fresh(name)

    # -- expressions ---------------------------------------------------------------------------

    def emit(self, op, args, kwargs=(), name=None) -> Var:
        """Append `tmp = op(*args, **kwargs)` and return `tmp`, named after the user or the op."""
        rule = RULES[op]
        if name is not None:
            target = self._version(name)
        else:
            target = self.namer.fresh(name_for_call(op, rule.spelling, args))
        self.body.append(Assign(target, Call(op, tuple(args), tuple(kwargs)), self.loc))
        return Var(target)

    def expr(self, node, name=None):
        """Lower an expression to an atom, appending the statements that compute it."""
        if isinstance(node, gast.Constant):
            return Const(node.value)
        if isinstance(node, gast.Name):
            return self.name(node, name)
        if isinstance(node, gast.BinOp):
            op = OPERATORS.get(type(node.op).__name__)
            if op is None:
                self.error(errors.UnsupportedSyntaxError, f"the operator {type(node.op).__name__} "
                           "is not supported", node)
            return self.emit(op, [self.expr(node.left), self.expr(node.right)], name=name)
        if isinstance(node, gast.UnaryOp):
            if isinstance(node.op, gast.USub):
                operand = self.expr(node.operand)
                if isinstance(operand, Const) and isinstance(operand.value, (int, float)):
                    return Const(-operand.value)
                return self.emit("neg_op", [operand], name=name)
            if isinstance(node.op, gast.UAdd):
                return self.expr(node.operand, name)
            self.error(errors.UnsupportedSyntaxError, f"the operator {type(node.op).__name__} "
                       "is not supported yet", node)
        if isinstance(node, gast.Compare):
            if len(node.ops) != 1 or type(node.ops[0]).__name__ not in COMPARISONS:
                self.error(errors.UnsupportedSyntaxError, "chained or identity/membership "
                           "comparisons are not supported yet", node)
            return self.emit(COMPARISONS[type(node.ops[0]).__name__],
                             [self.expr(node.left), self.expr(node.comparators[0])], name=name)
        if isinstance(node, gast.Call):
            return self.call(node, name)
        if isinstance(node, gast.Attribute):
            return self.attribute(node, name)
        if isinstance(node, gast.Subscript):
            value = self.expr(node.value)
            return self.emit("getitem", [value, self.index(node.slice)], name=name)
        if isinstance(node, (gast.Tuple, gast.List)):
            return self.sequence(node)
        what = _UNSUPPORTED_EXPRESSIONS.get(type(node), type(node).__name__)
        self.error(errors.UnsupportedSyntaxError, f"{what} is not supported yet in "
                   "differentiated code", node)

    def sequence(self, node):
        items = tuple(self.expr(e) for e in node.elts)
        if all(isinstance(i, Const) for i in items):
            values = [i.value for i in items]
            # a list stays a list: as an index it selects elements, where a tuple selects axes
            return Const(values if isinstance(node, gast.List) else tuple(values))
        if isinstance(node, gast.List):
            self.error(errors.UnsupportedSyntaxError, "a list of computed values is not "
                       "supported yet; use np.stack or np.array", node)
        return Tup(items)

    def index(self, node):
        if isinstance(node, gast.Slice):
            parts = [self.expr(p) if p is not None else Const(None)
                     for p in (node.lower, node.upper, node.step)]
            if all(isinstance(p, Const) for p in parts):
                return Const(slice(*(p.value for p in parts)))
            return Slc(*parts)
        if isinstance(node, gast.Tuple):
            items = tuple(self.index(e) for e in node.elts)
            if all(isinstance(i, Const) for i in items):
                return Const(tuple(i.value for i in items))
            return Tup(items)
        return self.expr(node)

    def resolve(self, node):
        """What a name that is not a local stands for: a `Const`, module, callable or free value."""
        ident = node.id
        if ident in self.closure:
            value = self.closure[ident]
        elif ident in self.globals:
            value = self.globals[ident]
        elif hasattr(builtins, ident):
            value = getattr(builtins, ident)
        else:
            self.error(errors.NameResolutionError, f"name {ident!r} is not defined", node)
        return value

    def classify(self, value, ident, node):
        if isinstance(value, types.ModuleType):
            return ModuleRef(value)
        const = _static_value(value)
        if const is not None:
            return const
        if callable(value) and not isinstance(value, np.ndarray):
            return CallableRef(value)
        # an array or other object read from a global or closure cell: bound by name
        self.free[ident] = value
        self.namer.reserve(ident)
        return Var(ident)

    def name(self, node, name=None):
        ident = node.id
        if ident in self.env:
            return self.env[ident]
        if ident in self.assigned:
            self.error(errors.NameResolutionError, f"local variable {ident!r} is read before it "
                       "is assigned", node)
        ref = self.classify(self.resolve(node), ident, node)
        if isinstance(ref, (ModuleRef, CallableRef)):
            self.error(errors.UnsupportedSyntaxError, f"{ident!r} is a "
                       f"{'module' if isinstance(ref, ModuleRef) else 'function'} used as a value; "
                       "only calls of it are supported", node)
        return ref

    def target_of(self, func):
        """Resolve a call's function expression: a ModuleRef/CallableRef chain, or None for a method."""
        if isinstance(func, gast.Name):
            if func.id in self.env or func.id in self.assigned:
                return None
            return self.classify(self.resolve(func), func.id, func)
        if isinstance(func, gast.Attribute):
            base = self.target_of(func.value) if isinstance(func.value, (gast.Name, gast.Attribute)) \
                else None
            if isinstance(base, ModuleRef):
                if not hasattr(base.module, func.attr):
                    self.error(errors.NameResolutionError, f"module {base.module.__name__!r} has no "
                               f"attribute {func.attr!r}", func)
                value = getattr(base.module, func.attr)
                if isinstance(value, types.ModuleType):
                    return ModuleRef(value)
                const = _static_value(value)
                return const if const is not None else CallableRef(value)
        return None

    def attribute(self, node, name=None):
        base = self.target_of(node.value) if isinstance(node.value, (gast.Name, gast.Attribute)) \
            else None
        if isinstance(base, ModuleRef):
            value = self.target_of(node)
            if isinstance(value, Const):
                return value
            self.error(errors.UnsupportedSyntaxError, f"{_describe(node)} used as a value; only "
                       "calls of it are supported", node)
        op = _ATTRS.get(node.attr)
        if op is None:
            self.error(errors.UnsupportedSyntaxError, f"the attribute .{node.attr} is not "
                       "supported (supported: .T, .shape, .ndim, .size, .dtype)", node)
        return self.emit(op, [self.expr(node.value)], name=name)

    def call(self, node, name=None):
        if any(isinstance(a, gast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            self.error(errors.UnsupportedSyntaxError, "*args and **kwargs in calls are not "
                       "supported yet", node)
        func = node.func
        target = self.target_of(func)
        if target is None and isinstance(func, gast.Attribute):
            return self.method(node, name)
        if not isinstance(target, CallableRef):
            self.error(errors.UnsupportedSyntaxError, f"{_describe(func)} is not callable", node)
        rule = rule_for_function(target.obj)
        if rule is None:
            for arg in node.args:  # report unsupported syntax inside the call first
                self.expr(arg)
            self.no_rule(target.obj, func, node)
        if rule.sequence_input:
            return self.sequence_call(rule, node, name)
        args = [self.expr(a) for a in node.args]
        kwargs = [(k.arg, self.expr(k.value)) for k in node.keywords]
        self.check_binding(rule, args, kwargs, node)
        return self.emit(rule.name, args, kwargs, name=name)

    def sequence_call(self, rule, node, name):
        """`np.concatenate([a, b], axis=0)` -> concatenate(a, b, axis=0)."""
        if not node.args or not isinstance(node.args[0], (gast.List, gast.Tuple)):
            self.error(errors.UnsupportedSyntaxError, f"{_describe(node.func)} needs a literal "
                       "list or tuple of arrays as its first argument", node)
        items = [self.expr(e) for e in node.args[0].elts]
        rest = node.args[1:]
        kwargs = [(k.arg, self.expr(k.value)) for k in node.keywords]
        if rest:
            kwargs = [("axis", self.expr(rest[0]))] + kwargs
        return self.emit(rule.name, items, kwargs, name=name)

    def method(self, node, name=None):
        func = node.func
        op = _METHODS.get(func.attr)
        if op is None:
            self.error(errors.NoRuleError, f"the method .{func.attr}() has no derivative rule; "
                       "supported methods: " + ", ".join(sorted(_METHODS)), node)
        receiver = self.expr(func.value)
        args = [self.expr(a) for a in node.args]
        kwargs = [(k.arg, self.expr(k.value)) for k in node.keywords]
        if func.attr in _VARARG_METHODS and len(args) > 1:
            args = [_pack(args)]
        if func.attr == "copy":
            args = []
        args = [receiver] + args
        self.check_binding(RULES[op], args, kwargs, node)
        return self.emit(op, args, kwargs, name=name)

    def check_binding(self, rule, args, kwargs, node):
        if not rule.params and not rule.varargs and not rule.differentiable:
            return  # a non-differentiable primitive: its arguments go through unchanged
        try:
            rule.signature().bind(*args, **dict(kwargs))
        except TypeError as exc:
            self.error(errors.UnsupportedSyntaxError, f"{_describe(node.func)}: {exc} (the "
                       f"derivative rule takes ({', '.join(rule.signature().parameters)}))", node)

    def no_rule(self, obj, func, node):
        label = _describe(func)
        if isinstance(obj, types.FunctionType):
            self.error(errors.UnsupportedSyntaxError, f"calling the Python function {label}() "
                       "from differentiated code is not supported yet", node)
        module = getattr(obj, "__module__", None) or type(obj).__module__
        self.error(errors.NoRuleError, f"{label} ({module}) has no derivative rule. Register one "
                   "with sourcegrad.rules.defvjp(name, function, spelling, vjp_for_each_input...) "
                   "or rewrite the line with supported functions", node)


def _pack(args):
    if all(isinstance(a, Const) for a in args):
        return Const(tuple(a.value for a in args))
    return Tup(tuple(args))


def _describe(node) -> str:
    try:
        import astor
        return astor.to_source(gast.gast_to_ast(node)).strip()
    except Exception:  # pragma: no cover - description is best effort
        return type(node).__name__


def lower(parsed: ParsedFunction) -> Function:
    """Lower a parsed function to IR."""
    return Lowerer(parsed).lower()


def function_to_ir(fn) -> Function:
    return lower(parse(fn))

