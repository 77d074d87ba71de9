"""Front end: a Python function -> `ir.Function`.

`parse(fn)` reads the function's source with `inspect`, parses it with gast and
records where it came from. `lower(parsed)` resolves every name (locals,
closure cells, globals, builtins, modules such as `np`/`math`), rejects what the
compiler does not handle with a `SourcegradError` naming the construct and the
user's line, and lowers the body to A-normal form: one primitive call per
statement, every intermediate named, user variables renamed once per assignment
(so no value is ever overwritten in straight-line code).

Containers: a tuple of values is a compile-time `Tup` of atoms until it flows where its
gradient must follow it (then `make_tuple`); dicts, NamedTuples and dataclasses (parameter
trees passed as their leaves, dict displays) are compile-time `Record`s that never reach
the IR: indexing, fields, unpacking and loops over them (unrolled) are resolved here.
"""
from __future__ import annotations

import builtins
import copy
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass, field

import gast
import numpy as np

from . import errors, random_draws, trees
from .errors import SourceLocation
from .ir import (Assign, Call, Const, ExprStmt, For, Function, If, Return, Slc, Tup, Var, While,
                 walk)
from .names import Namer, name_for_call
from .ops import (COMPARISONS, OPERATORS, RULES, array_methods, op_for_method, reads_value_of,
                  rule_for_function)


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
    if fn.__code__.co_name == "<lambda>":
        return parse_lambda(fn)
    try:
        source_lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise errors.SourceNotFoundError(
            f"the source of {fn.__qualname__} is not available ({exc}); functions defined with "
            "exec() or typed at the interactive prompt cannot be differentiated. Put it in a file.")
    file = inspect.getsourcefile(fn) or fn.__code__.co_filename
    module = gast.parse(textwrap.dedent("".join(source_lines)))
    tree = module.body[0]
    if isinstance(tree, gast.AsyncFunctionDef):
        raise errors.UnsupportedSyntaxError(f"{fn.__qualname__} is an async function; only plain "
                                            "functions can be differentiated",
                                            ParsedFunction(fn, tree, inspect.getsourcefile(fn) or "",
                                                           first_line, source_lines).loc(tree))
    if not isinstance(tree, gast.FunctionDef):
        raise errors.UnsupportedSyntaxError(f"{fn.__qualname__} is not defined by a def statement")
    lines = linecache.getlines(file) or source_lines
    if not linecache.getlines(file):
        first_line = 1
    return ParsedFunction(fn, tree, file, first_line, lines)


def parse_lambda(fn) -> ParsedFunction:
    """Parse a lambda's source: the lambda of its file that its code object came from,
    as a function `def name(args): return body` (`name`: the variable it is assigned to,
    else `lambda`).

    The file is parsed whole (a lambda is an expression inside some statement), and the
    lambdas that start on the code's first line are candidates. Where there are several,
    the code object's positions (Python 3.11+: line and column of each instruction) pick
    the smallest lambda that contains them all (a lambda nested in another contains only
    its own code's). Without positions (Python 3.10), or where they cannot tell the
    candidates apart, a located error says so."""
    code = fn.__code__
    try:
        file = inspect.getsourcefile(fn) or code.co_filename
    except TypeError:
        file = code.co_filename
    lines = linecache.getlines(file, fn.__globals__)
    line = code.co_firstlineno
    if not lines:
        raise errors.SourceNotFoundError(
            f"the source of a lambda ({file}, line {line}) is not available; lambdas made with "
            "exec() or typed at the interactive prompt cannot be differentiated. Put it in a "
            "file.")
    text = lines[line - 1].rstrip("\n") if 0 < line <= len(lines) else ""
    here = SourceLocation(file, line, 0, text)
    try:
        module = gast.parse("".join(lines))
    except SyntaxError as exc:
        raise errors.SourceNotFoundError(f"the file of a lambda does not parse ({exc})", here)
    names = {}
    for node in gast.walk(module):
        if isinstance(node, gast.Assign) and isinstance(node.value, gast.Lambda) and \
                len(node.targets) == 1 and isinstance(node.targets[0], gast.Name):
            names[id(node.value)] = node.targets[0].id
    params = list(code.co_varnames[:code.co_argcount])
    found = sorted((n for n in gast.walk(module) if isinstance(n, gast.Lambda) and
                    n.lineno == line and [a.id for a in n.args.args] == params),
                   key=lambda n: (n.lineno, n.col_offset))
    if len(found) > 1:
        found = _lambdas_holding(found, code)
    if len(found) != 1:
        why = "no lambda with these parameters starts there" if not found else \
            f"{len(found)} lambdas on this line cannot be told apart" + (
                "" if hasattr(code, "co_positions") else
                " (Python 3.10 records no columns)")
        raise errors.UnsupportedSyntaxError(
            f"cannot find the source of this lambda: {why}; put it on a line of its own, or "
            "define the function with def", here)
    node = found[0]
    body = gast.copy_location(gast.Return(value=node.body), node.body)
    tree = gast.FunctionDef(name=names.get(id(node), "lambda"), args=node.args, body=[body],
                            decorator_list=[], returns=None, type_comment=None, type_params=[])
    gast.copy_location(tree, node)
    return ParsedFunction(fn, tree, file, 1, lines)


def _lambdas_holding(candidates, code) -> list:
    """The smallest of the candidate lambdas whose span holds every instruction's position
    (a list of one), or all of them where positions do not decide."""
    positions = [p for p in getattr(code, "co_positions", lambda: ())()
                 if p[0] is not None and p[2] is not None and
                 (p[1], p[3]) > (p[0], p[2])]  # (positions with a span: not RESUME's)
    if not positions:
        return candidates

    def holds(node):
        return all((node.lineno, node.col_offset) <= (p[0], p[2]) and
                   (p[1], p[3]) <= (node.end_lineno, node.end_col_offset) for p in positions)
    holding = [n for n in candidates if holds(n)]
    if not holding:
        return candidates
    smallest = min(holding, key=lambda n: (n.end_lineno - n.lineno, n.end_col_offset -
                                           n.col_offset if n.end_lineno == n.lineno else 0))
    same = [n for n in holding if (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset) ==
            (smallest.lineno, smallest.col_offset, smallest.end_lineno, smallest.end_col_offset)]
    return same if len(same) > 1 else [smallest]


# --- name resolution ------------------------------------------------------------------------

@dataclass(frozen=True)
class ModuleRef:
    module: object


@dataclass(frozen=True)
class CallableRef:
    obj: object


@dataclass(frozen=True)
class Record:
    """A dict, NamedTuple or dataclass known at compile time: its keys (or field names) and
    the atoms (or nested containers) it holds. It costs no code: `d["W"]`, `p.w`, unpacking,
    `.items()` and loops over it are resolved while lowering, so each item keeps its own
    adjoint. It never reaches the IR (`Lowerer.refuse_records`). `local`: made by a dict
    display in this function (only such a dict may be changed by `d[k] = v`)."""

    kind: str
    cls: object
    keys: tuple
    values: tuple
    local: bool = field(default=False, compare=False)

    def describe(self) -> str:
        if self.kind == trees.DICT:
            return "a dict"
        return f"a {'NamedTuple' if self.kind == trees.NAMEDTUPLE else 'dataclass'} " \
            f"({self.cls.__name__})"

    def with_item(self, key, value) -> "Record":
        if key in self.keys:
            values = tuple(value if k == key else v for k, v in zip(self.keys, self.values))
            return Record(self.kind, self.cls, self.keys, values, True)
        return Record(self.kind, self.cls, self.keys + (key,), self.values + (value,), True)


@dataclass(frozen=True)
class Static:
    """A sequence only a loop or `len` may use: `d.items()`, `d.values()`, `d.keys()`,
    iterated at compile time (its keys are strings, its items may be containers)."""

    items: tuple
    what: str


def _holds_record(atom) -> bool:
    """Whether an atom is, or a compile-time tuple holds, a Record or a Static."""
    if isinstance(atom, (Record, Static)):
        return True
    return isinstance(atom, Tup) and any(_holds_record(a) for a in atom.items)


def _nests_containers(atom) -> bool:
    """A compile-time tuple of containers (`[(W1, b1), (W2, b2)]` passed as a parameter
    tree, a tuple of tuples): a loop over it is unrolled, so each layer keeps its shapes
    and its own adjoints, as straight-line code."""
    return isinstance(atom, Tup) and any(isinstance(a, (Tup, Record)) for a in atom.items)


def _contains(atom, record) -> bool:
    """Whether `atom` is `record` or holds it (in a tuple or another record)."""
    if atom == record:
        return True
    if isinstance(atom, Tup):
        return any(_contains(a, record) for a in atom.items)
    if isinstance(atom, Record):
        return any(_contains(a, record) for a in atom.values)
    return False


def _first_record(atom):
    if isinstance(atom, (Record, Static)):
        return atom
    if isinstance(atom, Tup):
        return next((r for r in map(_first_record, atom.items) if r is not None), None)
    return None


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


# Methods on arrays: the op each calls is the registry's (`ops.op_for_method`); here, how a
# method's arguments map onto it.
_VARARG_METHODS = {"reshape": "shape", "transpose": "axes"}  # x.reshape(2, 3) == x.reshape((2, 3))
_ATTRS = {"T": "T", "shape": "shape", "ndim": "ndim", "size": "size", "dtype": "dtype"}


_UNSUPPORTED_STATEMENTS = {
    gast.Try: "a try statement", gast.With: "a with statement", gast.Raise: "a raise statement",
    gast.Delete: "a del statement", gast.Global: "a global declaration",
    gast.Nonlocal: "a nonlocal declaration", gast.ClassDef: "a class definition",
    gast.AsyncFunctionDef: "an async function definition",
    gast.AsyncFor: "an async for loop", gast.AsyncWith: "an async with statement",
    gast.Import: "an import statement", gast.ImportFrom: "an import statement",
    gast.AnnAssign: "an annotated assignment",
}
_UNSUPPORTED_EXPRESSIONS = {
    gast.Lambda: "a lambda (other than one assigned to a name)",
    gast.ListComp: "a list comprehension", gast.SetComp: "a set comprehension",
    gast.DictComp: "a dict comprehension", gast.GeneratorExp: "a generator expression",
    gast.Await: "await", gast.Yield: "yield (a generator)", gast.YieldFrom: "yield from",
    gast.Set: "a set display", gast.JoinedStr: "an f-string",
    gast.NamedExpr: "an assignment expression (:=)", gast.Starred: "a starred expression",
}


class Context:
    """What every function lowered into one IR shares: names, free values, the output blocks."""

    def __init__(self):
        self.namer = Namer(reserved={"np", "math"})
        self.free: dict = {}
        self.user_names: set = set()
        self.blocks: list = [[]]  # the statement list being written, innermost last
        self.inline_depth = 0
        self.parsed_cache: dict = {}
        self.dependencies: list = []  # (kind, globals dict or closure cell, name, value read)
        self.generators: set = set()  # names of random generators made in the code
        # the tuples of parameter trees: their names, and their values once made (tuple_value)
        self.tuple_names: dict = {}
        self.tuple_values: dict = {}
        self.issued: set = set()  # user names (prefixed) that have been given a value
        self.active_prefixes: list = []  # of the functions being inlined, outermost first

    @property
    def out(self) -> list:
        return self.blocks[-1]


@dataclass
class LocalFunction:
    """A nested def or lambda: its node, the scope it closes over, its default atoms."""

    node: object
    scope: object
    defaults: dict


@dataclass(frozen=True)
class MethodRef:
    """A method of an object known when compiling (`model.predict`): its function, inlined
    with `self` bound to the object's atom."""

    fn: object
    receiver: object


# what a name may stand for at compile time besides an IR atom: a function, called by
# inlining where the code calls it (never a value of the generated code)
_FUNCTION_VALUES = (CallableRef, LocalFunction, MethodRef)


def _function_label(value) -> str:
    if isinstance(value, (CallableRef, MethodRef)):
        obj = value.obj if isinstance(value, CallableRef) else value.fn
        return getattr(obj, "__qualname__", None) or repr(obj)
    return getattr(value.node, "name", "lambda")


_NOT_AN_OBJECT = object()
_VALUE_TYPES = (bool, int, float, complex, str, bytes, tuple, list, dict, set, frozenset,
                type(None), np.ndarray, np.generic, types.ModuleType, types.FunctionType,
                types.BuiltinFunctionType, types.MethodType, type, np.ufunc)


def _is_plain_object(value) -> bool:
    """An instance of a user class (a model, a config), whose attributes are read when
    compiling: not a number, container, array, module, function or random generator, nor
    an object of a library (scipy.stats.t: its methods have rules, or no rule)."""
    return not isinstance(value, _VALUE_TYPES + random_draws.GENERATOR_TYPES) and \
        not hasattr(value, "__array_interface__") and \
        not hasattr(value, "__cuda_array_interface__") and \
        type(value).__module__.split(".")[0] not in _LIBRARIES + ("numpy",)


@dataclass
class Loop:
    brk: str | None
    cont: str | None


MAX_INLINE_DEPTH = 32


def _exits(stmts, kinds, in_loop=True):
    """Which of break/continue/return occur in `stmts` (break/continue only of this loop;
    never those inside a nested function definition)."""
    found = set()
    for stmt in stmts:
        if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef) + _SIMPLE_STATEMENTS):
            continue  # (an expression holds no statement: nothing to walk)
        for node in _walk_no_defs(stmt, in_loop):
            if isinstance(node, gast.Return) and "return" in kinds:
                found.add("return")
            elif isinstance(node, gast.Break) and "break" in kinds:
                found.add("break")
            elif isinstance(node, gast.Continue) and "continue" in kinds:
                found.add("continue")
    return found


# statements made of expressions only (no break, continue or return can be inside them)
_SIMPLE_STATEMENTS = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Pass)


def _assigned_names(stmt) -> set:
    """Names a statement binds, counting `a[i] = v`, `a[i] += v`, `a.append(v)` and
    `np.f(..., out=a)` as binding `a`."""
    names = set()
    # a comprehension's own names are scoped to it (lowered under names of their own)
    scoped = {id(t) for node in _walk_no_defs(stmt, False) if isinstance(node, gast.comprehension)
              for t in gast.walk(node.target)}
    for node in _walk_no_defs(stmt, False):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store) and \
                id(node) not in scoped:
            names.add(node.id)
        elif isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store) and \
                isinstance(node.value, gast.Name):
            names.add(node.value.id)
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                node.func.attr in ("append", "pop") and isinstance(node.func.value, gast.Name):
            names.add(node.func.value.id)
        if isinstance(node, gast.Call):  # `np.exp(a, out=u)` and `out=rows[t]` write u, rows
            for k in node.keywords:
                buffer = k.value.value if isinstance(k.value, gast.Subscript) else k.value
                if k.arg == "out" and isinstance(buffer, gast.Name):
                    names.add(buffer.id)
    return names


def _assignment_counts(body) -> dict:
    """How many places assign each name (`a[i] = v` and `a.append(v)` assign a too)."""
    counts: dict = {}
    for stmt in body:
        for node in _walk_no_defs(stmt, False):
            for name in _assigned_names_of_node(node):
                counts[name] = counts.get(name, 0) + 1
    return counts


def _assigned_names_of_node(node):
    if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
        return (node.id,)
    if isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store) and \
            isinstance(node.value, gast.Name):
        return (node.value.id,)
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
            node.func.attr in ("append", "pop") and isinstance(node.func.value, gast.Name):
        return (node.func.value.id,)
    return ()


def _walk_no_defs(node, stop_at_loops):
    """Walk a statement, not entering nested functions, nor nested loops for break/continue."""
    stack = [(node, False)]
    while stack:
        current, nested_loop = stack.pop()
        if isinstance(current, (gast.FunctionDef, gast.Lambda)) and current is not node:
            continue
        if nested_loop and isinstance(current, (gast.Break, gast.Continue)):
            continue
        yield current
        # a break or continue inside a loop belongs to that loop, the walked statement too
        inner_loop = nested_loop or isinstance(current, (gast.For, gast.While))
        for child in gast.iter_child_nodes(current):
            stack.append((child, inner_loop))


class Lowerer:
    """Lowers one function (the differentiated one, or one being inlined) into the context."""

    def __init__(self, parsed: ParsedFunction, ctx: Context | None = None, prefix: str = "",
                 enclosing=None):
        self.parsed = parsed
        self.ctx = ctx or Context()
        self.prefix = prefix
        self.enclosing = enclosing  # the scope a nested def or lambda closes over
        fn = parsed.fn
        self.globals = fn.__globals__ if fn is not None else enclosing.globals
        self.closure = _closure_values(fn) if fn is not None else {}
        self.env: dict = {}
        self.local_functions: dict = {}
        self.loops: list = []
        self.loc = parsed.loc(parsed.tree)
        self.result = None      # name receiving the return value, when returns are not tail
        self.returned = None    # flag set by a non-tail return
        self.mutable: set = set()
        self.assigned: set = set()
        self.assignments: dict = {}  # name -> how many statements assign it (syntactically)
        self.compound_counts: dict = {}
        self.early_return = False
        self.unrolled: set = set()   # targets of the loops being unrolled (unrolled_loop)

    def error(self, cls, message, node=None):
        raise cls(message, self.parsed.loc(node) if node is not None else self.loc)

    @property
    def out(self):
        return self.ctx.out

    # -- entry points --------------------------------------------------------------------------

    def lower(self, static=None, structure=None) -> Function:
        """Lower the function being differentiated (`static`: values of some arguments;
        `structure`: the `trees.TreeDef` of each argument passed as its leaves, which
        become the function's parameters)."""
        static = static or {}
        structure = structure or {}
        tree = self.parsed.tree
        args = tree.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            self.error(errors.UnsupportedSyntaxError,
                       "*args, **kwargs, keyword-only and positional-only parameters are not "
                       "supported yet", tree)
        params = [a.id for a in args.args]
        self.prepare(tree.body, params)
        lowered_params = []
        for name in params:
            self.ctx.namer.reserve(name)
            self.ctx.user_names.add(name)
            if name in structure:  # a parameter tree: its leaves are the parameters
                leaves = self.leaf_parameters(name, structure[name], params, lowered_params)
                lowered_params += leaves
                self.env[name] = _structure_atom(structure[name], iter(map(Var, leaves)),
                                                 name, self.ctx.tuple_names)
                continue
            lowered_params.append(name)
            # an argument lowered as its value (an int that bounds a recursion) is a constant
            # where the body does not assign it
            self.env[name] = Var(name)
            if name in static and name not in self.assigned:
                value = static[name]
                # a function argument is resolved now and inlined where it is called
                self.env[name] = self.classify(value, name, tree) if callable(value) \
                    else Const(value)
        result = self.function_body(tree.body, tree)
        self.no_function_values([result], "the differentiated function's return")
        if isinstance(result, Tup) and any(map(_holds_record, result.items)):
            # `return loss, {"acc": acc}`: a dict among returned values (has_aux's aux; grad
            # refuses a returned tuple otherwise) is built at run time, never differentiated
            result = Tup(tuple(self.built(item) if _holds_record(item) else item
                               for item in result.items))
        if _holds_record(result):
            self.error(errors.UnsupportedSyntaxError, f"the function returns "
                       f"{_first_record(result).describe()}; a differentiated function returns "
                       "a number (or, with has_aux=True, a pair whose aux is a tuple of values)",
                       tree.body[-1])
        self.out.append(Return(result, self.loc))
        fn = Function(tree.name, lowered_params, self.ctx.blocks[0], self.parsed.file,
                      self.parsed.loc(tree), self.ctx.free, self.ctx.user_names)
        # modules (np, math) are not expected to be rebound; everything else is checked
        fn.dependencies = [d for d in _unique_dependencies(self.ctx.dependencies)
                           if not isinstance(d[3], types.ModuleType)]
        return fn

    def built(self, atom) -> Var:
        """A compile-time container made a run-time value (a dict, tuple, ... of its items)
        by a call of `trees.Rebuild`: no adjoint flows through it."""
        leaves = []
        treedef = self.tree_of(atom, leaves)
        builder = self.bind_free(trees.Rebuild(treedef), f"build_{treedef.kind}")
        target = self.ctx.namer.fresh(treedef.kind if treedef.kind != trees.DICT else "aux")
        self.out.append(Assign(target, Call("pycall", (builder, *leaves)), self.loc))
        return Var(target)

    def tree_of(self, atom, leaves) -> trees.TreeDef:
        if isinstance(atom, Static):
            self.error(errors.UnsupportedSyntaxError, f"{atom.what} is returned; return a dict "
                       "or a tuple of values")
        if isinstance(atom, Record):
            return trees.TreeDef(atom.kind, atom.cls, atom.keys,
                                 tuple(self.tree_of(v, leaves) for v in atom.values))
        if isinstance(atom, Tup):
            return trees.TreeDef(trees.TUPLE, None, (),
                                 tuple(self.tree_of(v, leaves) for v in atom.items))
        leaves.append(atom)
        return trees.TreeDef(trees.LEAF)

    def leaf_parameters(self, name, treedef, params, taken) -> list:
        """Names for the leaves of the tree argument `name` (`params_W1`, `params_0_1`),
        clear of every other name the function uses."""
        out = []
        for leaf in treedef.leaf_names(name):
            while leaf in self.assigned or leaf in params or leaf in taken or leaf in out:
                leaf += "_"
            self.ctx.namer.reserve(leaf)
            self.ctx.user_names.add(leaf)
            out.append(leaf)
        return out

    def prepare(self, body, params):
        """Find the names this function assigns, and which must stay mutable variables.

        `a[i] = v` and `xs.append(v)` assign `a` and `xs` too: the compiler turns them
        into new values bound to the same name.
        """
        self.assigned = {n for stmt in body for n in _assigned_names(stmt)}
        self.assignments = _assignment_counts(body)
        compound = set()
        self.compound_counts = {}  # name -> how many loops and branches of the body assign it
        for stmt in body:
            if isinstance(stmt, (gast.If, gast.For, gast.While)):
                names = _assigned_names(stmt)
                compound |= names
                for n in names:
                    self.compound_counts[n] = self.compound_counts.get(n, 0) + 1
        non_tail = any(_exits([s], {"return"}) for s in body[:-1])
        self.early_return = non_tail
        # Names assigned in a loop or branch keep one name (a variable that is overwritten);
        # everything else gets a fresh name per assignment. After an early return every
        # statement runs under a guard, so then every name is a variable.
        self.mutable = set(self.assigned) if non_tail else compound
        for name in sorted(self.assigned | set(params)):
            self.ctx.namer.reserve(self.local(name))

    def local(self, name):
        return f"{self.prefix}{name}"

    def function_body(self, body, node):
        """Lower a function body; return the atom holding its result."""
        yielded = next((n for s in body for n in _walk_no_defs(s, False)
                        if isinstance(n, (gast.Yield, gast.YieldFrom))), None)
        if yielded is not None:
            self.error(errors.UnsupportedSyntaxError, f"{getattr(node, 'name', 'the function')} "
                       "is a generator (yield): generators are not supported in differentiated "
                       "code; return a list instead", yielded)
        if not body or not _exits(body, {"return"}):
            raised = next((n for s in body if not isinstance(s, gast.FunctionDef)
                           for n in _walk_no_defs(s, False) if isinstance(n, gast.Raise)), None)
            if raised is not None:  # it ends by raising: say so, not that a return is missing
                self.error(errors.UnsupportedSyntaxError, "a raise statement is not supported "
                           "in differentiated code (this function never returns a value)",
                           raised)
            self.error(errors.UnsupportedSyntaxError,
                       f"{getattr(node, 'name', 'the function')} has no return statement, so it "
                       "has no output to differentiate", node)
        tail = isinstance(body[-1], gast.Return) and not _exits(body[:-1], {"return"})
        if tail:
            self.block(body[:-1])
            self.loc = self.parsed.loc(body[-1])
            if body[-1].value is None:
                self.error(errors.UnsupportedSyntaxError, "return without a value", body[-1])
            return self.expr(body[-1].value)
        self.result = self.ctx.namer.fresh(self.local("result"))
        self.returned = self.ctx.namer.fresh(self.local("returned"))
        self.out.append(Assign(self.returned, Const(False), self.loc))
        self.block(body)
        return Var(self.result)

    # -- statements ----------------------------------------------------------------------------

    def block(self, stmts) -> bool:
        """Lower a statement list; statements after a possible exit run under a guard.

        Returns True when the list certainly exits (an unconditional return, break or
        continue, also inside a branch decided at compile time): the rest is unreachable.
        """
        for i, stmt in enumerate(stmts):
            if self.statement(stmt):
                return True
            rest = stmts[i + 1:]
            if not rest:
                return False
            flags = self.exit_flags(stmt)
            if flags:
                self.guarded(flags, rest)
                return False
        return False

    def exit_flags(self, stmt):
        kinds = _exits([stmt], {"break", "continue", "return"})
        flags = []
        if self.loops:
            loop = self.loops[-1]
            if kinds & {"break", "return"} and loop.brk:
                flags.append(loop.brk)
            if "continue" in kinds and loop.cont:
                flags.append(loop.cont)
        elif "return" in kinds and self.returned:
            flags.append(self.returned)
        return flags

    def guarded(self, flags, rest):
        """`if not flag: rest` for each flag, nested."""
        flag = flags[0]
        test = self.emit("not_op", [Var(flag)])
        body = self.nested(lambda: self.guarded(flags[1:], rest) if flags[1:] else self.block(rest))
        self.out.append(If(test, body, [], self.loc))

    def nested(self, lower_fn) -> list:
        """Lower into a fresh statement list and return it."""
        self.ctx.blocks.append([])
        try:
            lower_fn()
        finally:
            block = self.ctx.blocks.pop()
        return block

    def statement(self, stmt) -> bool:
        """Lower one statement; True when it certainly exits the enclosing block."""
        self.loc = self.parsed.loc(stmt)
        if isinstance(stmt, gast.Assign):
            if len(stmt.targets) != 1:
                self.error(errors.UnsupportedSyntaxError, "chained assignment (a = b = ...) is "
                           "not supported yet", stmt)
            self.assign(stmt.targets[0], stmt.value, stmt)
        elif isinstance(stmt, gast.AugAssign):
            load = _as_load(stmt.target)
            value = gast.copy_location(gast.BinOp(left=load, op=stmt.op, right=stmt.value), stmt)
            start = len(self.out)
            self.assign(stmt.target, value, stmt)
            if isinstance(stmt.target, gast.Name):
                self.mark_in_place(self.env.get(stmt.target.id), start)
        elif isinstance(stmt, gast.Return):
            self.return_(stmt)
            return True
        elif isinstance(stmt, gast.Expr):
            self.expression_statement(stmt)
        elif isinstance(stmt, gast.If):
            return self.if_(stmt)
        elif isinstance(stmt, gast.For):
            self.for_(stmt)
        elif isinstance(stmt, gast.While):
            self.while_(stmt)
        elif isinstance(stmt, gast.Break):
            self.out.append(Assign(self.loops[-1].brk, Const(True), self.loc))
            return True
        elif isinstance(stmt, gast.Continue):
            self.out.append(Assign(self.loops[-1].cont, Const(True), self.loc))
            return True
        elif isinstance(stmt, gast.FunctionDef):
            self.define_function(stmt)
        elif isinstance(stmt, gast.Pass):
            pass
        elif isinstance(stmt, gast.Assert):
            self.assert_(stmt)
        else:
            what = _UNSUPPORTED_STATEMENTS.get(type(stmt), type(stmt).__name__)
            self.error(errors.UnsupportedSyntaxError, f"{what} is not supported in "
                       "differentiated code", stmt)
        return False

    def return_(self, stmt):
        if stmt.value is None:
            self.error(errors.UnsupportedSyntaxError, "return without a value", stmt)
        value = self.expr(stmt.value)
        self.no_function_values([value], "a return that is not the function's last statement")
        self.refuse_records([value])
        if isinstance(value, Tup):  # (a pair returned from several places: a value, whose
            value = self.emit("make_tuple", list(value.items))  # items have adjoints)
        self.out.append(Assign(self.result, value, self.loc))
        self.out.append(Assign(self.returned, Const(True), self.loc))
        for loop in self.loops:
            self.out.append(Assign(loop.brk, Const(True), self.loc))

    def expression_statement(self, stmt):
        value = stmt.value
        if isinstance(value, gast.Constant) and isinstance(value.value, str):
            return  # a docstring
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) \
                and value.func.attr == "append" and isinstance(value.func.value, gast.Name) \
                and value.func.value.id in self.env:
            self.list_append(value)
            return
        if isinstance(value, gast.Call):
            target = self.target_of(value.func)
            if isinstance(target, CallableRef) and rule_for_function(target.obj) is None \
                    and not isinstance(target.obj, types.FunctionType):
                # print() and other calls made for their effect: forward pass only
                args = [self.expr(a) for a in value.args]
                kwargs = tuple((k.arg, self.expr(k.value)) for k in value.keywords)
                self.refuse_records(args + [a for _, a in kwargs])
                callee = self.bind_free(target.obj, _callee_name(value.func))
                self.out.append(ExprStmt(Call("pycall", tuple([callee] + args), kwargs),
                                         self.loc))
                return
            self.expr(value)  # a call of a user function: its effects are inlined
            return
        what = _UNSUPPORTED_EXPRESSIONS.get(type(value))
        if what is not None:
            self.error(errors.UnsupportedSyntaxError, f"{what} is not supported in "
                       "differentiated code", stmt)
        self.error(errors.UnsupportedSyntaxError, "an expression statement that is not a call "
                   "has no effect", stmt)

    def bind_free(self, obj, name):
        ident = self.ctx.namer.fresh(name) if self.ctx.free.get(name, obj) is not obj else name
        self.ctx.free[ident] = obj
        self.ctx.namer.reserve(ident)
        return Var(ident)

    def list_append(self, call):
        name = call.func.value.id
        if len(call.args) != 1 or call.keywords:
            self.error(errors.UnsupportedSyntaxError, "list.append takes one argument", call)
        lst = self.env[name]
        item = self.expr(call.args[0])
        self.bind(name, self.emit("list_append", [lst, item], name=self.local(name)))

    def if_(self, stmt):
        test = self.expr(stmt.test)
        self.refuse_records([test])
        if isinstance(test, Const):  # decided now (static arguments, inlined recursion)
            return self.block(stmt.body if test.value else stmt.orelse)
        body = self.nested(lambda: self.block(stmt.body))
        orelse = self.nested(lambda: self.block(stmt.orelse))
        self.loc = self.parsed.loc(stmt)
        self.out.append(If(test, body, orelse, self.loc))
        return False

    def for_(self, stmt):
        if stmt.orelse:
            self.error(errors.UnsupportedSyntaxError, "for ... else is not supported", stmt)
        loc = self.parsed.loc(stmt)
        evaluated = self.iterated_parts(stmt.iter, stmt)
        if evaluated is not None and (any(map(_holds_record, evaluated)) or (
                any(map(_nests_containers, evaluated)) and
                all(isinstance(e, Tup) or isinstance(e, Const) and
                    isinstance(e.value, (tuple, list)) for e in evaluated) and
                not _exits(stmt.body, {"break", "continue", "return"}))):
            self.unrolled_loop(stmt, evaluated)
            return
        if evaluated is not None and self.unrolled_constants(stmt, evaluated):
            return
        start, stop, step, prelude = self.iteration(stmt.iter, stmt.target, stmt, evaluated)
        kinds = _exits(stmt.body, {"break", "continue", "return"})
        brk = self.ctx.namer.fresh("stop") if kinds & {"break", "return"} else None
        cont = self.ctx.namer.fresh("skip") if "continue" in kinds else None
        if brk:
            self.out.append(Assign(brk, Const(False), loc))
        index = prelude[0]

        def body():
            if cont:
                self.out.append(Assign(cont, Const(False), loc))
            for bind in prelude[1]:
                bind()
            self.loops.append(Loop(brk, cont))
            try:
                self.block(stmt.body)
            finally:
                self.loops.pop()
        block = self.nested(body)
        self.loc = loc
        if any(isinstance(s, Assign) and s.target == index for s in walk(block)):
            # the body rebinds the loop variable (`t = t + 1`): the loop counts with a name
            # of its own, so the backward sees an ordinary variable it saves and restores
            trip = self.ctx.namer.fresh(index)
            block = [Assign(index, Var(trip), loc)] + block
            index = trip
        self.out.append(For(index, start, stop, step, block, loc, brk))

    def unrolled_constants(self, stmt, evaluated) -> bool:
        """`for key in ("W", "b"):` over constants that are not numbers: the body once per
        item, with the item a constant (so `params[key]` and `key in ...` are known when
        compiling). Numbers keep a loop: the code would grow with the count."""
        if _loop_call(stmt.iter, self.env) in ("enumerate", "zip") or len(evaluated) != 1 or \
                _exits(stmt.body, {"break", "continue", "return"}):
            return False
        sequence = evaluated[0]
        if not (isinstance(sequence, Const) and isinstance(sequence.value, (tuple, list))):
            return False
        items = [Const(v) for v in sequence.value]
        if not items or all(type(i.value) in (int, float, bool) for i in items):
            return False
        names = [t.id for t in gast.walk(stmt.target) if isinstance(t, gast.Name)]
        for item in items:
            self.loc = self.parsed.loc(stmt)
            self.constant_target(stmt.target, item.value, stmt)
            self.block(stmt.body)
        for name in names:  # after the loop, the names hold the last item, as in Python
            self.bind(name, self.env[name])
        return True

    def constant_target(self, target, value, stmt):
        """Bind the names of a loop target to (parts of) a constant, with no code."""
        if isinstance(target, gast.Name):
            self.env[target.id] = Const(value)
        elif isinstance(target, (gast.Tuple, gast.List)) and isinstance(value, (tuple, list)) \
                and len(value) == len(target.elts):
            for t, v in zip(target.elts, value):
                self.constant_target(t, v, stmt)
        else:
            self.error(errors.UnsupportedSyntaxError, f"cannot unpack {value!r} into "
                       f"{_describe(target)}", stmt)

    def iterated_parts(self, node, stmt):
        """The values a `for` loop over `node` iterates, evaluated once: the sequence, or
        the arguments of `enumerate(...)` / `zip(...)`; None for `range` and
        `reversed(range(...))`, whose arguments `iteration` reads itself."""
        kind = _loop_call(node, self.env)
        if kind in ("range", "reversed"):
            return None
        if kind not in ("enumerate", "zip"):
            return [self.iterated(node, stmt)]
        parts = []
        for p in node.args:
            if isinstance(p, gast.Starred):  # zip(*pairs): a tuple known while compiling
                seq = self.expr(p.value)
                if not isinstance(seq, Tup):
                    self.error(errors.UnsupportedSyntaxError, "*args needs a tuple whose "
                               "length is known", stmt)
                parts += list(seq.items)
            else:
                parts.append(self.iterated(p, stmt))
        return parts

    def unrolled_loop(self, stmt, evaluated):
        """A loop over a dict's items, a NamedTuple, or a sequence holding dicts: resolved at
        compile time, so the body is lowered once per item (straight-line code in which
        each item keeps its own adjoint and its own shape)."""
        kind = _loop_call(stmt.iter, self.env)
        if _exits(stmt.body, {"break", "continue", "return"}):
            self.error(errors.UnsupportedSyntaxError, "break, continue or return in a loop over "
                       "a dict, NamedTuple or a list of dicts is not supported (such a loop is "
                       "unrolled at compile time)", stmt)
        if kind == "enumerate" and (len(evaluated) != 1 or stmt.iter.keywords):
            self.error(errors.UnsupportedSyntaxError, "enumerate takes one sequence here", stmt)
        # (the sequence is made before the first trip: it holds its variables' values then)
        sequences = [self.compile_time_items(self.frozen(e), stmt) for e in evaluated]
        if kind == "enumerate":
            items = [Tup((Const(i), item)) for i, item in enumerate(sequences[0])]
        elif kind == "zip":
            items = [Tup(tuple(group)) for group in zip(*sequences)]
        else:
            items = sequences[0]
        targets = {n.id for n in gast.walk(stmt.target) if isinstance(n, gast.Name)}
        # Names the body assigns in straight-line code get a new name per assignment, as
        # outside loops (so `h` of each layer keeps its own shape), and are copied back to
        # their variable after the loop where they are variables (carried by an outer loop
        # or a branch)
        simple, compound = set(), set()
        for s in stmt.body:
            (compound if isinstance(s, (gast.If, gast.For, gast.While)) else simple).update(
                _assigned_names(s))
        renamed = (simple - compound - targets) & self.mutable
        outer = self.unrolled
        self.unrolled = outer | targets
        self.mutable -= renamed
        try:
            for item in items:
                self.loc = self.parsed.loc(stmt)
                self.bind_target(stmt.target, item)
                self.block(stmt.body)
        finally:
            self.unrolled = outer
        # a name only this loop made a variable stays an ordinary name (one per value)
        # when the loop is in straight-line code; else it is a variable again, copied back
        if len(self.ctx.blocks) == 1 and not self.early_return:
            renamed = {n for n in renamed if self.compound_counts.get(n, 0) != 1}
        self.mutable |= renamed
        for name in sorted(renamed):
            atom, local = self.env.get(name), self.local(name)
            if atom is not None and not _holds_record(atom) and atom != Var(local):
                self.out.append(Assign(local, atom, self.parsed.loc(stmt)))
                self.env[name] = Var(local)

    def compile_time_items(self, atom, stmt) -> list:
        """The items a loop over `atom` visits, where they are known at compile time."""
        if isinstance(atom, Static):
            return list(atom.items)
        if isinstance(atom, Tup):
            return list(atom.items)
        if isinstance(atom, Const) and isinstance(atom.value, (tuple, list)):
            return [Const(v) for v in atom.value]
        if isinstance(atom, Record) and atom.kind == trees.DICT:
            return [Const(k) for k in atom.keys]  # (iterating a dict gives its keys)
        if isinstance(atom, Record) and atom.kind == trees.NAMEDTUPLE:
            return list(atom.values)
        if isinstance(atom, Record):
            self.error(errors.UnsupportedSyntaxError, f"{atom.describe()} is not iterable", stmt)
        self.error(errors.UnsupportedSyntaxError, "zip of a sequence known only at run time "
                   "with a dict or a list of dicts is not supported", stmt)

    def iteration(self, node, target, stmt, evaluated=None):
        """(start, stop, step, (index name, [binders])) for `for target in node`;
        `evaluated`: the values `iterated_parts` gave."""
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id == "reversed" and len(node.args) == 1 \
                and isinstance(node.args[0], gast.Call) and isinstance(node.args[0].func, gast.Name) \
                and node.args[0].func.id == "range" and isinstance(target, gast.Name):
            # `for i in reversed(range(...))` (generated backward code, differentiated again):
            # count k up and read the range from its end
            span = self.emit("range", [self.expr(a) for a in node.args[0].args])
            length = self.emit("len", [span])
            k = self.ctx.namer.fresh("k")

            def bind_index():
                last = self.emit("sub_op", [self.emit("sub_op", [length, Const(1)]), Var(k)])
                self.bind(target.id, self.emit("getitem", [span, last],
                                               name=self.local(target.id)))
            self.mutable.add(target.id)
            return Const(0), length, Const(1), (k, [bind_index])
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id in ("range", "enumerate", "zip") and node.func.id not in self.env:
            kind = node.func.id
            if kind == "range":
                args = [self.expr(a) for a in node.args]
                if not 1 <= len(args) <= 3:
                    self.error(errors.UnsupportedSyntaxError, "range takes 1 to 3 arguments", stmt)
                start, stop, step = {1: lambda: (Const(0), args[0], Const(1)),
                                     2: lambda: (args[0], args[1], Const(1)),
                                     3: lambda: tuple(args)}[len(args)]()
                if not isinstance(target, gast.Name):
                    self.error(errors.UnsupportedSyntaxError, "the target of a range loop must "
                               "be a name", stmt)
                return start, stop, step, (self.loop_target(target.id), [])
            if kind == "enumerate":
                seq = evaluated[0] if evaluated is not None else self.iterated(node.args[0], stmt)
                if not (isinstance(target, gast.Tuple) and len(target.elts) == 2):
                    self.error(errors.UnsupportedSyntaxError, "unpack enumerate as i, x", stmt)
                index = self.loop_target(target.elts[0].id) \
                    if isinstance(target.elts[0], gast.Name) else self.ctx.namer.fresh("i")
                length = self.emit("len", [seq])
                return Const(0), length, Const(1), (index, [
                    lambda: self.bind_target(target.elts[1], self.emit(
                        "getitem", [seq, Var(index)], name=self.name_of(target.elts[1])))])
            seqs = evaluated if evaluated is not None else \
                [self.iterated(a, stmt) for a in node.args]
            lengths = [self.emit("len", [s]) for s in seqs]
            length = lengths[0] if len(lengths) == 1 else self.emit("min_builtin", lengths)
            if not (isinstance(target, gast.Tuple) and len(target.elts) == len(seqs)):
                self.error(errors.UnsupportedSyntaxError, "unpack zip into one name per "
                           "sequence", stmt)
            index = self.ctx.namer.fresh("i")
            return Const(0), length, Const(1), (index, [
                (lambda t, s: lambda: self.bind_target(t, self.emit(
                    "getitem", [s, Var(index)], name=self.name_of(t))))(t, s)
                for t, s in zip(target.elts, seqs)])
        seq = evaluated[0] if evaluated is not None else self.iterated(node, stmt)
        if isinstance(seq, Tup):  # a tuple of computed values, indexed by the loop at run time
            seq = self.tuple_value(seq)
        length = self.emit("len", [seq])
        index = self.ctx.namer.fresh("i")
        return Const(0), length, Const(1), (index, [
            lambda: self.bind_target(target, self.emit("getitem", [seq, Var(index)],
                                                       name=self.name_of(target)))])

    def iterated(self, node, stmt):
        """The value a `for` loop iterates over. Python evaluates it once, so a name the body
        rebinds (`for e in x: x = ...`) is read through a copy made before the loop."""
        seq = self.expr(node)
        if isinstance(node, gast.Name) and isinstance(seq, Var) and any(
                isinstance(n, gast.Name) and n.id == node.id and isinstance(n.ctx, gast.Store)
                for s in stmt.body for n in gast.walk(s)):
            items = self.ctx.namer.fresh(f"{node.id}_items")
            self.out.append(Assign(items, seq, self.parsed.loc(stmt)))
            seq = Var(items)
        return seq

    def loop_target(self, name):
        local = self.local(name)
        self.ctx.issued.add(local)
        self.ctx.user_names.add(local)
        self.mutable.add(name)
        self.env[name] = Var(local)
        return local

    def name_of(self, target):
        return self.local(target.id) if isinstance(target, gast.Name) else None

    def bind_target(self, target, atom):
        if isinstance(target, gast.Name):
            self.bind(target.id, atom)
        else:
            for i, t in enumerate(target.elts):
                self.bind_target(t, self.item_at(atom, i, len(target.elts), t))

    def while_(self, stmt):
        if stmt.orelse:
            self.error(errors.UnsupportedSyntaxError, "while ... else is not supported", stmt)
        loc = self.parsed.loc(stmt)
        kinds = _exits(stmt.body, {"break", "continue", "return"})
        brk = self.ctx.namer.fresh("stop") if kinds & {"break", "return"} else None
        cont = self.ctx.namer.fresh("skip") if "continue" in kinds else None
        if brk:
            self.out.append(Assign(brk, Const(False), loc))
        holder = {}

        def test():
            if brk:
                go = self.emit("not_op", [Var(brk)], name="go")
                name = go.name
                self.mutable.add(name)
                inner = self.nested(lambda: holder.setdefault(
                    "t", self.out.append(Assign(name, self.expr(stmt.test), loc))))
                self.out.append(If(go, inner, [], loc))
                holder["test"] = Var(name)
            else:
                holder["test"] = self.expr(stmt.test)
        test_body = self.nested(test)

        def body():
            if cont:
                self.out.append(Assign(cont, Const(False), loc))
            self.loops.append(Loop(brk, cont))
            try:
                self.block(stmt.body)
            finally:
                self.loops.pop()
        block = self.nested(body)
        self.loc = loc
        self.out.append(While(test_body, holder["test"], block, loc))

    def define_function(self, stmt):
        defaults = self.defaults_of(stmt.args)
        self.local_functions[stmt.name] = LocalFunction(stmt, self, defaults)

    def defaults_of(self, args):
        names = [a.id for a in args.args]
        defaults = {name: self.expr(d) for name, d in zip(names[len(names) - len(args.defaults):],
                                                          args.defaults)}
        for a, d in zip(args.kwonlyargs, args.kw_defaults):  # keyword-only: None, no default
            if d is not None:
                defaults[a.id] = self.expr(d)
        return defaults

    def assign(self, target, value, stmt):
        if isinstance(target, gast.Name) and isinstance(value, gast.Call) \
                and isinstance(value.func, gast.Attribute) and value.func.attr == "pop" \
                and not value.args and isinstance(value.func.value, gast.Name) \
                and value.func.value.id in self.env:
            # `x = stack.pop()`: the last item, and the list without it (both new values)
            name = value.func.value.id
            stack = self.env[name]
            self.bind(target.id, self.emit("getitem", [stack, Const(-1)],
                                           name=self.local(target.id)))
            self.bind(name, self.emit("getitem", [stack, Const(slice(None, -1))],
                                      name=self.local(name)))
            return
        if isinstance(target, gast.Name):
            if isinstance(value, gast.Lambda):
                self.local_functions[target.id] = LocalFunction(value, self,
                                                                self.defaults_of(value.args))
                return
            atom = self.expr(value, name=self.local(target.id))
            self.bind(target.id, atom)
            return
        if isinstance(target, (gast.Tuple, gast.List)):
            if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(target.elts):
                atoms = [self.expr(v) for v in value.elts]  # evaluate all before binding: swaps
                # a variable's value is copied first, so `a, b = b, a` does not read a new a
                atoms = [self.snapshot(a) if isinstance(a, Var) and self.is_variable(a.name)
                         else a for a in atoms]
                for t, a in zip(target.elts, atoms):
                    self.assign_atom(t, a, stmt)
                return
            source = self.expr(value)
            for i, t in enumerate(target.elts):
                self.assign_atom(t, self.item_at(source, i, len(target.elts), t), stmt)
            return
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            self.setitem(target, value, stmt)
            return
        self.error(errors.UnsupportedSyntaxError, f"assignment to {_describe(target)} is not "
                   "supported", stmt)

    def item_at(self, atom, i, count, target):
        """Item `i` of `atom` unpacked into `count` targets (`a, b = atom`)."""
        if isinstance(atom, (Record, Static)):  # unpacked as iterated: a dict gives its keys
            items = self.compile_time_items(atom, None)
            if len(items) != count:
                self.error(errors.UnsupportedSyntaxError, f"ValueError: {len(items)} values "
                           f"to unpack into {count} targets")
            return items[i]
        return self.emit("getitem", [atom, Const(i)], name=self.name_of(target))

    def assign_atom(self, target, atom, stmt):
        if isinstance(target, gast.Name):
            self.bind(target.id, atom)
        elif isinstance(target, (gast.Tuple, gast.List)):
            for i, t in enumerate(target.elts):
                self.assign_atom(t, self.item_at(atom, i, len(target.elts), t), stmt)
        else:
            self.error(errors.UnsupportedSyntaxError, f"assignment to {_describe(target)} is not "
                       "supported", stmt)

    def setitem(self, target, value, stmt):
        """`a[i] = v` as `a = setitem(a, i, v)`: a new array, so no value is changed in place."""
        name = target.value.id
        if name not in self.env:
            self.error(errors.NameResolutionError, f"{name!r} is assigned by index before it is "
                       "defined", stmt)
        array = self.env[name]
        if isinstance(array, Record):
            self.record_setitem(name, array, target, value, stmt)
            return
        aliases = [n for n, a in self.env.items() if a == array and n != name]
        if aliases:
            self.error(errors.UnsupportedSyntaxError, f"{name!r} is changed in place while "
                       f"{aliases[0]!r} refers to the same array; copy it first (np.copy)", stmt)
        index = self.index(target.slice)
        atom = value if isinstance(value, (Var, Const, Tup)) else self.expr(value)
        start = len(self.out)
        self.bind(name, self.emit("setitem", [array, index, atom], name=self.local(name)))
        self.mark_in_place(self.env.get(name), start)

    def record_setitem(self, name, record, target, value, stmt):
        """`d[k] = v` of a dict display of this function: the name is bound to a dict with
        the new item (no other name may see the dict: Python would change it for both)."""
        if record.kind != trees.DICT:
            self.error(errors.UnsupportedSyntaxError, f"{record.describe()} does not support "
                       "item assignment", stmt)
        if not record.local:
            self.error(errors.UnsupportedSyntaxError, f"{name!r} is a dict argument (or one "
                       "read from an argument); changing it in place is not supported: build a "
                       "new dict ({**d, key: value})", stmt)
        holders = [n for n, a in self.env.items() if n != name and _contains(a, record)]
        if holders:
            self.error(errors.UnsupportedSyntaxError, f"{name!r} is changed in place while "
                       f"{holders[0]!r} refers to it too; build a new dict instead", stmt)
        key = self.index(target.slice)
        if not isinstance(key, Const):
            self.error(errors.UnsupportedSyntaxError, "a dict's key must be known at compile "
                       "time (a constant)", stmt)
        atom = value if isinstance(value, (Var, Const, Tup)) else self.expr(value)
        self.bind(name, record.with_item(key.value, atom))

    def dict_display(self, node):
        """`{"W": W, "b": b, **other}`: a dict known at compile time (a `Record`)."""
        record = Record(trees.DICT, None, (), (), True)
        for k, v in zip(node.keys, node.values):
            value = self.expr(v)
            if k is None:  # **other
                if not (isinstance(value, Record) and value.kind == trees.DICT):
                    self.error(errors.UnsupportedSyntaxError, "** in a dict display needs a "
                               "dict known at compile time", node)
                for kk, vv in zip(value.keys, value.values):
                    record = record.with_item(kk, vv)
                continue
            key = self.expr(k)
            if not (isinstance(key, Const) and isinstance(key.value, (str, int)) and
                    not isinstance(key.value, bool)):
                self.error(errors.UnsupportedSyntaxError, "a dict display's keys must be "
                           "constant strings or ints", node)
            record = record.with_item(key.value, value)
        return record

    def mark_in_place(self, atom, start):
        """Tag the statements from `start` on that assign `atom`'s name as updates in place."""
        if isinstance(atom, Var):
            for stmt in self.out[start:]:
                if isinstance(stmt, Assign) and stmt.target == atom.name:
                    stmt.in_place = True

    def bind(self, name, atom):
        """Make the user name `name` refer to `atom`.

        An immutable name just becomes another name for the atom (so copies cost
        nothing); a variable assigned in a loop or branch gets an assignment of its own.
        """
        local = self.local(name)
        self.ctx.user_names.add(local)
        if _holds_record(atom) or _holds_record(self.env.get(name)):
            if self.bind_container(name, atom):
                return
        if name in self.unrolled and self.assignments.get(name, 0) == 1 and \
                not isinstance(atom, Tup) and not (isinstance(atom, Var) and
                                                   self.is_variable(atom.name)):
            # the target of an unrolled loop, assigned nowhere else: each trip's item is
            # the name's value as it is (a key stays a constant that indexes a dict)
            self.env[name] = atom
            return
        if name in self.mutable:
            self.no_function_values([atom], "a variable assigned in a loop or branch")
            self.ctx.issued.add(local)
            if isinstance(atom, Tup):  # a tuple held in a variable: a value with an adjoint
                atom = self.emit("make_tuple", list(atom.items))
            if atom != Var(local):
                self.out.append(Assign(local, atom, self.loc))
            self.env[name] = Var(local)
        elif isinstance(atom, Var) and self.is_variable(atom.name):
            # `z = y` where y is a variable assigned again later: z keeps today's value
            target = self._version(local)
            self.out.append(Assign(target, atom, self.loc))
            self.env[name] = Var(target)
        else:
            # (a tuple of values keeps today's value of each variable in it, as Python's)
            self.env[name] = self.frozen(atom) if isinstance(atom, Tup) else atom

    def frozen(self, atom):
        """A compile-time container whose variables (names assigned again later) are
        copied: it holds their values now, as a Python tuple or dict holds its items'."""
        if isinstance(atom, Var) and self.is_variable(atom.name):
            return self.snapshot(atom)
        if isinstance(atom, Tup):
            items = tuple(self.frozen(a) for a in atom.items)
            return atom if items == atom.items else Tup(items)
        if isinstance(atom, Record):
            values = tuple(self.frozen(a) for a in atom.values)
            return atom if values == atom.values else \
                Record(atom.kind, atom.cls, atom.keys, values, atom.local)
        return atom

    def bind_container(self, name, atom) -> bool:
        """Bind `name` to a compile-time container (True), or check that a name holding one
        may now take a run-time value (False: bound as usual).

        A container has no run-time value, so a name holding one is resolved where it is
        read. That is sound where the name has one container at each read: in straight-line
        code, where it is assigned once, or as the target of an unrolled loop. A name
        assigned again in a loop body or a branch would need a variable: refused."""
        in_block = len(self.ctx.blocks) > 1
        if in_block and self.assignments.get(name, 0) > 1 and name not in self.unrolled:
            self.error(errors.UnsupportedSyntaxError, f"{name!r} holds a dict, NamedTuple or "
                       "dataclass (or a sequence of them), which is resolved at compile time, and "
                       "is assigned again in a loop or branch; give each value its own name, or "
                       "assign it outside the loop or branch")
        if not _holds_record(atom):
            return False
        self.env[name] = self.frozen(atom)
        return True

    def is_variable(self, local_name):
        """Is this (prefixed) name one that is assigned more than once (a loop/branch variable)?"""
        base = local_name[len(self.prefix):] if self.prefix and \
            local_name.startswith(self.prefix) else local_name
        return base in self.mutable and self.env.get(base) == Var(local_name)

    def _version(self, name):
        """The name the next value assigned to the (prefixed) user name `name` gets: the name
        itself for its first value, unless an earlier inlining of the same function (whose
        names have the same prefix) gave it a value already, which may still be read."""
        base = name[len(self.prefix):] if self.prefix and name.startswith(self.prefix) else name
        if base in self.mutable:
            self.ctx.issued.add(name)
            return name
        if base in self.env or name in self.ctx.issued:
            return self.ctx.namer.fresh(name)
        self.ctx.namer.taken.discard(name)
        name = self.ctx.namer.fresh(name)
        self.ctx.issued.add(name)
        return name

    # -- expressions ---------------------------------------------------------------------------

    def emit(self, op, args, kwargs=(), name=None) -> Var:
        """Append `tmp = op(*args, **kwargs)` and return `tmp`, named after the user or the op.

        A non-differentiable primitive of constants is evaluated now (so tests on static
        arguments, such as the depth of an inlined recursion, are decided at compile time).
        """
        rule = RULES[op]
        args = [_as_dtype(a) for a in args]
        kwargs = [(k, _as_dtype(a)) for k, a in kwargs]
        self.no_function_values(list(args) + [a for _, a in kwargs], op)
        if op == "getitem" and isinstance(args[0], Tup) and isinstance(args[1], Const) \
                and isinstance(args[1].value, int):
            return args[0].items[args[1].value]  # unpacking a tuple of values: no code
        if op == "getitem" and isinstance(args[0], Tup) and isinstance(args[1], Const) \
                and isinstance(args[1].value, slice):  # `params[:-1]`: a tuple of its items
            part = args[0].items[args[1].value]
            return Tup(part) if part else Const(())
        if op == "len" and isinstance(args[0], Tup):
            return Const(len(args[0].items))
        if op == "getitem" and isinstance(args[0], (Record, Static)):
            return self.record_item(args[0], args[1])
        if op == "len" and isinstance(args[0], (Record, Static)):
            return Const(len(args[0].values if isinstance(args[0], Record) else args[0].items))
        self.refuse_records(list(args) + [a for _, a in kwargs], RULES[op].spelling)
        if rule.vjps:
            args = self.tuples_as_values(rule, args)
        if not rule.differentiable and rule.pure and not kwargs and \
                all(isinstance(a, Const) for a in args):
            try:
                value = rule.forward(*[a.value for a in args])
            except Exception:
                value = None
            else:
                if isinstance(value, (bool, int, float, np.bool_)):
                    return Const(value.item() if isinstance(value, np.generic) else value)
        call = Call(op, tuple(args), tuple(kwargs))
        if name is not None:
            target = self._version(name)
            if target in call.reads() and self.backward_reads_input(rule, call, target):
                # `y = np.sin(y)` for a variable: compute into a temporary first, so the
                # backward can read the old y (restored) and the new one (the temporary)
                temp = self.ctx.namer.fresh(name_for_call(op, rule.spelling, args))
                self.out.append(Assign(temp, call, self.loc))
                self.out.append(Assign(target, Var(temp), self.loc))
                return Var(target)
        else:
            target = self.ctx.namer.fresh(name_for_call(op, rule.spelling, args))
        self.out.append(Assign(target, call, self.loc))
        return Var(target)

    def refuse_records(self, atoms, what=None):
        """A dict, NamedTuple or dataclass (or `d.items()`) is resolved at compile time and
        has no run-time value: used as one, it is refused here, located."""
        record = next((r for r in map(_first_record, atoms) if r is not None), None)
        if record is None:
            return
        thing = record.what if isinstance(record, Static) else record.describe()
        use = f" ({what.text or what.kind})" if what is not None and \
            (what.text or what.kind) else ""
        self.error(errors.UnsupportedSyntaxError, f"{thing} is used as a value{use}; "
                   "only its items can be: index it with constant keys, read its fields, "
                   "unpack it, or loop over it")

    def tuples_as_values(self, rule, args):
        """`args` with each `Tup` at a position that has a VJP made a value of its own.

        A `Tup` is a compile-time tuple of atoms: it costs no code while it is only
        unpacked or indexed by constants, but it has no name, so no adjoint. Where one is
        an input the gradient flows through (an item of a list display `[(W, b)]`, a
        tuple indexed at run time, a nested tuple), it becomes `make_tuple(...)`, whose
        adjoint reaches each item (this call makes any nested tuple a value first)."""
        if not any(isinstance(a, Tup) for a in args):
            return args
        return [self.tuple_value(a) if isinstance(a, Tup) and rule.vjp_for(i) is not None else a
                for i, a in enumerate(args)]

    def tuple_value(self, tup):
        """`make_tuple(...)` of a compile-time tuple. One of a parameter tree is named after
        its path (`params`, `params_0`) and made once where it is made in straight-line code
        (its items, parameters, never change)."""
        known = self.ctx.tuple_values.get(tup)
        if known is not None:
            return known
        name = self.ctx.tuple_names.get(tup)
        value = self.emit("make_tuple", list(tup.items), name=name)
        if name is not None and len(self.ctx.blocks) == 1:
            self.ctx.tuple_values[tup] = value
        return value

    @staticmethod
    def backward_reads_input(rule, call, target):
        """Would this call's VJP read the value of the input that `target` also names?"""
        if not rule.vjps:
            return False
        params = list(rule.params)
        for i, atom in enumerate(call.args):
            if atom == Var(target):
                if i >= len(params) or reads_value_of(rule, params[i]):
                    return True
        return any(atom == Var(target) and (k not in params or reads_value_of(rule, k))
                   for k, atom in call.kwargs)

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
            left, right = self.expr(node.left), self.expr(node.right)
            if isinstance(left, Const) and isinstance(right, Const) and \
                    all(type(a.value) in (int, float) for a in (left, right)):
                return Const(_PY_OPS[op](left.value, right.value))
            joined = _joined_tuples(op, left, right)
            if joined is not None:  # `args + (ones,)`: a tuple made while compiling
                return joined
            return self.emit(op, [left, right], name=name)
        if isinstance(node, gast.UnaryOp):
            operand = self.expr(node.operand)
            if isinstance(node.op, gast.USub):
                if isinstance(operand, Const) and isinstance(operand.value, (int, float)):
                    return Const(-operand.value)
                return self.emit("neg_op", [operand], name=name)
            if isinstance(node.op, gast.UAdd):
                return operand
            if isinstance(node.op, gast.Not):
                return self.emit("not_op", [operand], name=name)
            self.error(errors.UnsupportedSyntaxError, f"the operator {type(node.op).__name__} "
                       "is not supported", node)
        if isinstance(node, gast.Compare):
            return self.compare(node, name)
        if isinstance(node, gast.BoolOp):
            return self.boolop(node, name)
        if isinstance(node, gast.IfExp):
            return self.ifexp(node, name)
        if isinstance(node, gast.Call):
            return self.call(node, name)
        if isinstance(node, gast.Attribute):
            return self.attribute(node, name)
        if isinstance(node, gast.Subscript):
            if isinstance(node.value, gast.Attribute) and node.value.attr in ("s_", "index_exp"):
                base = self.target_of(node.value.value) \
                    if isinstance(node.value.value, (gast.Name, gast.Attribute)) else None
                if isinstance(base, ModuleRef):  # np.s_[0, 1:3]: an index, as generated code
                    return self.index(node.slice)  # spells one outside a subscript
            value = self.expr(node.value)
            return self.emit("getitem", [value, self.index(node.slice)], name=name)
        if isinstance(node, (gast.Tuple, gast.List)):
            return self.sequence(node, name)
        if isinstance(node, gast.Dict):
            return self.dict_display(node)
        if isinstance(node, gast.Lambda):  # a function value (`return lambda x: ...`)
            return LocalFunction(node, self, self.defaults_of(node.args))
        if isinstance(node, (gast.ListComp, gast.GeneratorExp)):
            return self.comprehension(node, name)
        what = _UNSUPPORTED_EXPRESSIONS.get(type(node), type(node).__name__)
        self.error(errors.UnsupportedSyntaxError, f"{what} is not supported in "
                   "differentiated code", node)

    def no_function_values(self, atoms, use):
        """Refuse a function value where generated code would need it as a run-time value."""
        for atom in atoms:
            items = atom.items if isinstance(atom, Tup) else (atom,)
            for item in items:
                if isinstance(item, CallableRef) and \
                        getattr(item.obj, "_sourcegrad_gradient", False):
                    self.error(errors.UnsupportedSyntaxError, "a gradient called inside "
                               "differentiated code is differentiated once (reverse mode); a "
                               "higher derivative through it is not supported", None)
                if isinstance(item, _FUNCTION_VALUES):
                    what = f"the operation {use!r}" if use in RULES else use
                    self.error(errors.UnsupportedSyntaxError,
                               f"the function {_function_label(item)!r} is used as a value by "
                               f"{what}; a function value can be called, or passed to a Python "
                               "function that calls it (it is inlined), not stored or computed "
                               "with", None)

    def comprehension(self, node, name):
        """`[elt for t in it if c]` (and a generator expression, which is consumed whole
        where it is used: `sum(...)`, `np.stack(...)`) as the loop Python runs:

            items = []
            for t in it:
                if c:
                    items.append(elt)

        The comprehension's own names (t) get names of their own, as Python scopes them to
        the comprehension: a variable of the same name outside is not changed."""
        local = self.ctx.namer.fresh(self.local(name or "items"))
        acc = local[len(self.prefix):]
        self.ctx.user_names.add(local)
        self.mutable.add(acc)
        self.out.append(Assign(local, Const([]), self.loc))
        self.env[acc] = Var(local)
        renamed = {}
        for generator in node.generators:
            if getattr(generator, "is_async", 0):
                self.error(errors.UnsupportedSyntaxError, "an async comprehension is not "
                           "supported", node)
            for target in gast.walk(generator.target):
                if isinstance(target, gast.Name):
                    fresh = self.ctx.namer.fresh(self.local(target.id))
                    renamed[target.id] = fresh[len(self.prefix):]
        node = _RenameNames(renamed).visit(_copy_tree(node))
        def at_node(made):  # a statement made here reports the comprehension's line
            return gast.copy_location(made, node)
        items = at_node(gast.Name(id=acc, ctx=gast.Load(), annotation=None, type_comment=None))
        append = at_node(gast.Expr(value=at_node(gast.Call(
            func=at_node(gast.Attribute(value=items, attr="append", ctx=gast.Load())),
            args=[node.elt], keywords=[]))))
        body = [append]
        for generator in reversed(node.generators):
            for test in reversed(generator.ifs):
                body = [at_node(gast.If(test=test, body=body, orelse=[]))]
            body = [at_node(gast.For(target=generator.target, iter=generator.iter, body=body,
                                     orelse=[], type_comment=None))]
        loop = body[0]
        saved_loc = self.loc
        self.for_(loop)
        self.loc = saved_loc
        return Var(local)

    def mutable_temp(self, base):
        target = self.ctx.namer.fresh(base)
        self.mutable.add(target[len(self.prefix):] if target.startswith(self.prefix) else target)
        return target

    def branch_value(self, test, body_node, orelse_node, name, negate=False):
        """`target = body if test else orelse`, as an If whose branches assign one variable."""
        target = self.mutable_temp(name or "value")
        body = self.nested(lambda: self.out.append(Assign(target, self.expr(body_node), self.loc)))
        orelse = self.nested(lambda: self.out.append(
            Assign(target, self.expr(orelse_node) if orelse_node is not None else test,
                   self.loc)))
        if negate:
            body, orelse = orelse, body
        self.out.append(If(test, body, orelse, self.loc))
        return Var(target)

    def ifexp(self, node, name):
        test = self.expr(node.test)
        if isinstance(test, Const):
            return self.expr(node.body if test.value else node.orelse, name)
        return self.branch_value(test, node.body, node.orelse, name)

    def boolop(self, node, name):
        """`a and b`, `a or b` with Python's short-circuit: b is evaluated only when needed."""
        is_and = isinstance(node.op, gast.And)
        first = self.expr(node.values[0])
        if len(node.values) > 2:
            rest = gast.BoolOp(op=node.op, values=node.values[1:])
            gast.copy_location(rest, node)
        else:
            rest = node.values[1]
        if isinstance(first, Const):
            if bool(first.value) == is_and:
                return self.expr(rest, name)
            return first
        target = self.mutable_temp(name or ("both" if is_and else "either"))
        self.out.append(Assign(target, first, self.loc))
        more = self.nested(lambda: self.out.append(Assign(target, self.expr(rest), self.loc)))
        # the branch tests `first`, which the branch does not reassign: the backward replays
        # the same decision (testing `target` would see the value the branch gave it)
        test = first if not isinstance(first, Var) or not self.is_variable(first.name) else \
            self.snapshot(first)
        if is_and:
            self.out.append(If(test, more, [], self.loc))
        else:
            self.out.append(If(test, [], more, self.loc))
        return Var(target)

    def snapshot(self, atom):
        """A name of its own for the current value of a variable."""
        temp = self.ctx.namer.fresh(atom.name + "_now")
        self.out.append(Assign(temp, atom, self.loc))
        return Var(temp)

    def compare(self, node, name):
        ops = [type(o).__name__ for o in node.ops]
        left = self.expr(node.left)
        right = self.expr(node.comparators[0])
        if ops[0] in ("In", "NotIn"):
            if not (isinstance(left, Const) and isinstance(right, Const)):
                self.error(errors.UnsupportedSyntaxError, "a membership test (in, not in) is "
                           "supported where both sides are known when compiling (constants, "
                           "loop names over constants); here one is computed at run time",
                           node)
            found = left.value in right.value
            first = Const(found if ops[0] == "In" else not found)
            if len(ops) == 1:
                return first
            rest = gast.Compare(left=node.comparators[0], ops=node.ops[1:],
                                comparators=node.comparators[1:])
            gast.copy_location(rest, node)
            return self.expr(gast.copy_location(
                gast.BoolOp(op=gast.And(), values=[_AtomNode(first), rest]), node), name)
        if any(o not in COMPARISONS and o not in ("Is", "IsNot", "In", "NotIn") for o in ops):
            self.error(errors.UnsupportedSyntaxError, f"the comparison {ops} is not supported",
                       node)
        if ops[0] in ("Is", "IsNot"):
            if isinstance(left, Const) and isinstance(right, Const):
                same = left.value is right.value
                return Const(same if ops[0] == "Is" else not same)
            self.error(errors.UnsupportedSyntaxError, "`is` comparisons of computed values are "
                       "not supported", node)
        first = self.emit(COMPARISONS[ops[0]], [left, right], name=name if len(ops) == 1 else None)
        if len(ops) == 1:
            return first
        rest = gast.Compare(left=node.comparators[0], ops=node.ops[1:],
                            comparators=node.comparators[1:])
        gast.copy_location(rest, node)
        both = gast.BoolOp(op=gast.And(), values=[_AtomNode(first), rest])
        gast.copy_location(both, node)
        return self.expr(both, name)

    def sequence(self, node, name=None):
        items = tuple(self.expr(e) for e in node.elts)
        if any(map(_holds_record, items)):  # a list of dicts: known at compile time
            return Tup(items)
        if all(isinstance(i, Const) for i in items):
            values = [i.value for i in items]
            # a list stays a list: as an index it selects elements, where a tuple selects axes
            return Const(values if isinstance(node, gast.List) else tuple(values))
        if isinstance(node, gast.List):
            return self.emit("make_list", list(items), name=name)
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

    def lookup(self, ident):
        """A name that is not a local here: a nested function, an enclosing local, or a value."""
        if ident in self.local_functions:
            return self.local_functions[ident]
        if self.enclosing is not None:
            if ident in self.enclosing.env:
                return self.enclosing.env[ident]
            return self.enclosing.lookup(ident)
        return None

    def resolve(self, node):
        """What a name that is not a local stands for: a Python value from closure/globals.

        Every value read is recorded with where it came from: the generated code depends
        on it (numbers are inlined, functions inlined, arrays bound), so a gradient is
        regenerated when one of them is rebound.
        """
        ident = node.id
        if ident in self.closure:
            fn = self.parsed.fn
            cell = fn.__closure__[fn.__code__.co_freevars.index(ident)]
            self.ctx.dependencies.append(("cell", cell, ident, self.closure[ident]))
            return self.closure[ident]
        if ident in self.globals:
            self.ctx.dependencies.append(("global", self.globals, ident, self.globals[ident]))
            return self.globals[ident]
        if hasattr(builtins, ident):
            return getattr(builtins, ident)
        self.error(errors.NameResolutionError, f"name {ident!r} is not defined", node)

    def classify(self, value, ident, node):
        if isinstance(value, types.ModuleType):
            return ModuleRef(value)
        const = _static_value(value)
        if const is not None:
            return const
        if callable(value) and not isinstance(value, np.ndarray):
            return CallableRef(value)
        # an array or other object read from a global or closure cell: bound by name
        return self.bind_free(value, ident)

    def name(self, node, name=None):
        ident = node.id
        if isinstance(node, _AtomNode):
            return node.atom
        if ident in self.env:
            return self.env[ident]
        if ident in self.local_functions:  # `sq = lambda v: v * v`, read as a value
            return self.local_functions[ident]
        if ident in self.assigned and self.enclosing is None:
            self.error(errors.NameResolutionError, f"local variable {ident!r} is read before it "
                       "is assigned", node)
        found = self.lookup(ident)
        if found is not None:
            return found  # a local value, or a local function passed as a value
        ref = self.classify(self.resolve(node), ident, node)
        if isinstance(ref, ModuleRef):
            self.error(errors.UnsupportedSyntaxError, f"{ident!r} is a module used as a value; "
                       "only its functions and constants can be read", node)
        return ref  # a function value is resolved now, and inlined where it is called

    def target_of(self, func):
        """Resolve a call's function expression: ModuleRef, CallableRef, LocalFunction, or None."""
        if isinstance(func, gast.Name):
            if func.id in self.env:  # a parameter or variable holding a function value
                found = self.env[func.id]
                return found if isinstance(found, _FUNCTION_VALUES) else None
            found = self.lookup(func.id)
            if isinstance(found, _FUNCTION_VALUES):
                return found
            if found is not None:
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
            if isinstance(base, CallableRef):
                # a method of a library object that has a rule (scipy.stats.norm.logpdf)
                value = getattr(base.obj, func.attr, None)
                if value is not None and rule_for_function(value) is not None:
                    return CallableRef(value)
            if isinstance(func.value, (gast.Name, gast.Attribute)):
                obj = self.static_object(func.value)
                if obj is not _NOT_AN_OBJECT:  # model.predict(...): a method of a user object
                    found = self.object_attribute(obj, func)
                    return found if isinstance(found, _FUNCTION_VALUES) else None
        return None

    def static_object(self, node):
        """The object a name or attribute chain stands for when it is an instance of a user
        class known when compiling (a global, a closure value, an attribute of one), else
        `_NOT_AN_OBJECT`."""
        if isinstance(node, gast.Name):
            atom = self.env.get(node.id)
            if atom is None:
                atom = self.lookup(node.id)
            if atom is None:  # a global or closure value (not a local read too early)
                if node.id in self.assigned or \
                        node.id not in self.closure and node.id not in self.globals:
                    return _NOT_AN_OBJECT
                value = self.resolve(node)
                return value if _is_plain_object(value) else _NOT_AN_OBJECT
            if isinstance(atom, Var) and atom.name in self.ctx.free and \
                    _is_plain_object(self.ctx.free[atom.name]):
                return self.ctx.free[atom.name]  # an object passed on (`self` of a method)
            return _NOT_AN_OBJECT
        if isinstance(node, gast.Attribute):
            holder = self.static_object(node.value)
            if holder is not _NOT_AN_OBJECT:
                value = self.read_attribute(holder, node)
                if _is_plain_object(value):
                    return value
        return _NOT_AN_OBJECT

    def read_attribute(self, obj, node):
        """`obj.<attr>` read now; the code depends on it (rebinding it later rebuilds)."""
        try:
            value = getattr(obj, node.attr)
        except AttributeError:
            self.error(errors.NameResolutionError, f"{type(obj).__name__!r} object has no "
                       f"attribute {node.attr!r}", node)
        if isinstance(value, types.MethodType):
            self.ctx.dependencies.append(("method", obj, node.attr, value.__func__))
        else:
            self.ctx.dependencies.append(("attribute", obj, node.attr, value))
        return value

    def object_attribute(self, obj, node, name=None):
        """The atom (or function value) of `obj.<attr>` for an object known when compiling:
        numbers inlined, arrays bound by name, methods inlined where they are called."""
        value = self.read_attribute(obj, node)
        if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType) \
                and value.__self__ is obj:
            return MethodRef(value.__func__, self.bind_free(obj, _callee_name(node.value)))
        if isinstance(value, types.ModuleType):
            self.error(errors.UnsupportedSyntaxError, f"{_describe(node)} is a module read as a "
                       "value", node)
        return self.classify(value, node.attr, node)

    def attribute(self, node, name=None):
        obj = self.static_object(node.value)
        if obj is not _NOT_AN_OBJECT:  # cfg.lr, self.W, model.layers
            return self.object_attribute(obj, node, name)
        base = self.target_of(node.value) if isinstance(node.value, (gast.Name, gast.Attribute)) \
            else None
        if isinstance(base, ModuleRef):
            value = self.target_of(node)
            if isinstance(value, (Const, CallableRef)):
                return value  # a constant, or a function passed as a value (np.tanh)
            self.error(errors.UnsupportedSyntaxError, f"{_describe(node)} used as a value; only "
                       "calls of it are supported", node)
        receiver = self.expr(node.value)
        if isinstance(receiver, Record) and receiver.kind != trees.DICT:
            if node.attr not in receiver.keys:
                self.error(errors.UnsupportedSyntaxError, f"{receiver.describe()} has no field "
                           f"{node.attr!r} (its fields: {', '.join(receiver.keys)})", node)
            return receiver.values[receiver.keys.index(node.attr)]
        op = _ATTRS.get(node.attr)
        if op is None:
            self.error(errors.UnsupportedSyntaxError, f"the attribute .{node.attr} is not "
                       "supported (supported: .T, .shape, .ndim, .size, .dtype, and the fields "
                       "of a NamedTuple or dataclass argument)", node)
        return self.emit(op, [receiver], name=name)

    def call_args(self, node):
        """Positional atoms (with *args expanded) and keyword atoms of a call."""
        args = []
        for a in node.args:
            if isinstance(a, gast.Starred):
                seq = self.expr(a.value)
                if isinstance(seq, Tup):
                    args.extend(seq.items)
                elif isinstance(seq, Const) and isinstance(seq.value, (tuple, list)):
                    args.extend(Const(v) for v in seq.value)
                else:
                    self.error(errors.UnsupportedSyntaxError, "*args needs a tuple whose length "
                               "is known", node)
            else:
                args.append(self.expr(a))
        if any(k.arg is None for k in node.keywords):
            self.error(errors.UnsupportedSyntaxError, "**kwargs in calls is not supported", node)
        kwargs = [(k.arg, self.expr(k.value)) for k in node.keywords]
        return args, kwargs

    def call(self, node, name=None):
        func = node.func
        if isinstance(func, gast.Lambda):  # (lambda v: ...)(x)
            args, kwargs = self.call_args(node)
            local = LocalFunction(func, self, self.defaults_of(func.args))
            return self.inline_local(local, args, kwargs, node, name)
        if isinstance(func, gast.Call):  # grad(f)(x): the gradient is made while compiling
            target = self.expr(func)
        else:
            target = self.target_of(func)
        if target is None and isinstance(func, gast.Attribute):
            return self.method(node, name)
        if isinstance(target, LocalFunction):
            args, kwargs = self.call_args(node)
            return self.inline_local(target, args, kwargs, node, name)
        if isinstance(target, MethodRef):
            args, kwargs = self.call_args(node)
            return self.inline(target.fn, [target.receiver] + args, kwargs, node, name)
        if not isinstance(target, CallableRef):
            self.error(errors.UnsupportedSyntaxError, f"{_describe(func)} is not callable", node)
        obj = target.obj
        if obj in _COMPILE_TIME_BUILTINS and rule_for_function(obj) is None:
            return getattr(self, _COMPILE_TIME_BUILTINS[obj])(node, name)
        if getattr(obj, "_sourcegrad_makes_gradient", False):
            return self.make_gradient(obj, node)
        if getattr(obj, "_sourcegrad_gradient", False):
            return self.gradient_call(obj, func, node, name)
        if isinstance(obj, types.FunctionType) and rule_for_function(obj) is None and \
                (getattr(obj, "__module__", None) or "").split(".")[0] not in _LIBRARIES:
            args, kwargs = self.call_args(node)
            return self.inline(obj, args, kwargs, node, name)
        rule = rule_for_function(obj)
        draw = random_draws.function_rule(obj) if rule is None else None
        if draw is not None:  # np.random.normal(...): drawn in the forward pass only
            args, kwargs = self.call_args(node)
            result = self.emit(draw.name, args, kwargs, name=name)
            if obj in (np.random.default_rng, np.random.RandomState):
                self.ctx.generators.add(result.name)
            return result
        if rule is None:
            for arg in node.args:  # report unsupported syntax inside the call first
                self.expr(arg)
            self.no_rule(obj, func, node)
        if rule.sequence_input:
            return self.sequence_call(rule, node, name)
        into_item = next((k.value for k in node.keywords if k.arg == "out" and
                          isinstance(k.value, gast.Subscript) and
                          isinstance(k.value.value, gast.Name)), None)
        if into_item is not None and isinstance(rule.fn, np.ufunc):
            return self.ufunc_into_item(rule, node, into_item, name)
        args, kwargs = self.call_args(node)
        if rule.name in _BUILTIN_REDUCTIONS and len(args) > 1:
            return self.emit(_BUILTIN_REDUCTIONS[rule.name], args, kwargs, name=name)
        out = dict(kwargs).get("out")
        if out is not None and isinstance(rule.fn, np.ufunc):
            return self.ufunc_into(rule, args, [kv for kv in kwargs if kv[0] != "out"], out,
                                   node, name)
        self.check_binding(rule, args, kwargs, node)
        # (a tuple of values passed where the rule has a VJP, `einsum_grad(g, s, (A, B), 0)`
        # in generated code, becomes a value of its own in `emit`: its adjoint reaches A, B)
        return self.emit(rule.name, args, kwargs, name=name)

    # -- builtins decided while lowering -------------------------------------------------------

    def slice_call(self, node, name):
        """`slice(a, b)`: the index `a:b` (a value of its own where a bound is computed)."""
        args, kwargs = self.call_args(node)
        if kwargs or not 1 <= len(args) <= 3:
            self.error(errors.UnsupportedSyntaxError, "slice takes 1 to 3 positional "
                       "arguments", node)
        parts = [Const(None)] + args if len(args) == 1 else args
        parts = list(parts) + [Const(None)] * (3 - len(parts))
        if all(isinstance(p, Const) for p in parts):
            return Const(slice(*(p.value for p in parts)))
        return Slc(*parts)

    def callable_call(self, node, name):
        """`callable(v)`: known now, as a function value is never a value of the code."""
        args, kwargs = self.call_args(node)
        if kwargs or len(args) != 1:
            self.error(errors.UnsupportedSyntaxError, "callable takes one argument", node)
        value = args[0]
        if isinstance(value, _FUNCTION_VALUES):
            return Const(True)
        return Const(callable(value.value) if isinstance(value, Const) else False)

    def isinstance_call(self, node, name):
        """`isinstance(v, T)`: decided now for constants, tuples and functions; for a
        computed value, a test of its type (the signature fixes types, so analysis decides
        it per signature and the branch not taken is not compiled)."""
        if len(node.args) != 2 or node.keywords:
            self.error(errors.UnsupportedSyntaxError, "isinstance takes two arguments", node)
        value = self.expr(node.args[0])
        types_node = node.args[1]
        parts = types_node.elts if isinstance(types_node, gast.Tuple) else [types_node]
        classes = []
        for part in parts:
            ref = self.target_of(part) if isinstance(part, (gast.Name, gast.Attribute)) else None
            if not (isinstance(ref, CallableRef) and isinstance(ref.obj, type)):
                self.error(errors.UnsupportedSyntaxError, "the second argument of isinstance "
                           "must name classes known when compiling", node)
            classes.append(ref.obj)
        classes = tuple(classes)
        if isinstance(value, Const):
            return Const(isinstance(value.value, classes))
        if isinstance(value, Tup):  # a list or a tuple: which, is not kept here
            as_list, as_tuple = isinstance([], classes), isinstance((), classes)
            if as_list != as_tuple:
                self.error(errors.UnsupportedSyntaxError, "isinstance of a sequence known "
                           "while compiling cannot tell a list from a tuple here", node)
            return Const(as_list)
        if isinstance(value, CallableRef):
            return Const(isinstance(value.obj, classes))
        if isinstance(value, LocalFunction):
            return Const(isinstance(_function_stand_in, classes))
        if isinstance(value, Slc):
            return Const(isinstance(slice(None), classes))
        held = self.bind_free(classes if len(classes) > 1 else classes[0],
                              "_".join(c.__name__ for c in classes))
        return self.emit("isinstance_builtin", [value, held], name=name)

    def make_gradient(self, maker, node):
        """`grad(f, wrt=...)` inside differentiated code: made now (a function value), so
        calling it is a call of a gradient (`gradient_call`)."""
        args, kwargs = self.call_args(node)
        values = []
        for atom in args + [a for _, a in kwargs]:
            if isinstance(atom, CallableRef) and isinstance(atom.obj, types.FunctionType):
                values.append(atom.obj)
            elif isinstance(atom, Const):
                values.append(atom.value)
            else:
                self.error(errors.UnsupportedSyntaxError, "a gradient made inside "
                           "differentiated code takes a function defined at module level (or "
                           "imported) and constant options", node)
        made = maker(*values[:len(args)], **dict(zip([k for k, _ in kwargs], values[len(args):])))
        return CallableRef(made)

    def gradient_call(self, gradient, func, node, name):
        """`g(x)` for a gradient `g = grad(f)` (a Newton step, meta-learning): it runs as it
        runs anywhere, and its derivative is its pullback (`ops.call_gradient`)."""
        args, kwargs = self.call_args(node)
        if kwargs or type(gradient).__name__ != "Gradient" or gradient.with_value or \
                not gradient._single:
            self.error(errors.UnsupportedSyntaxError, "inside differentiated code a gradient "
                       "is supported as grad(f) with one argument to differentiate, called "
                       "with positional arguments", node)
        label = f"grad_{getattr(gradient.fn, '__name__', 'f')}"
        return self.emit("call_gradient", [self.bind_free(gradient, label), *args], name=name)

    def assert_(self, stmt):
        """`assert test, message`: checked in the forward pass, as Python checks it."""
        test = self.expr(stmt.test)
        message = Const(None) if stmt.msg is None else self.expr(stmt.msg)
        if not isinstance(message, Const):
            self.error(errors.UnsupportedSyntaxError, "the message of an assert must be a "
                       "constant", stmt)
        if isinstance(test, Const):
            if not test.value:  # fails on every call: say so now, where the code is
                self.error(errors.UnsupportedSyntaxError, "this assert fails for every call "
                           f"(AssertionError{': ' + str(message.value) if message.value else ''})",
                           stmt)
            return
        self.out.append(ExprStmt(Call("check_assert", (test, message)), self.loc))

    def ufunc_into(self, rule, args, kwargs, out, node, name):
        """`np.exp(u, out=u)` (generated code reusing a buffer, or the user's): the result is a
        new value, and the buffer's name is rebound to it as an update in place (so a view of
        the old buffer read later is caught by analysis.check_in_place_updates)."""
        buffer = next((n for n, a in self.env.items() if a == out), None)
        if buffer is None:
            self.error(errors.UnsupportedSyntaxError, "out= must name an array", node)
        self.check_binding(rule, args, kwargs, node)
        start = len(self.out)
        result = self.emit(rule.name, args, kwargs, name=self.local(buffer))
        self.bind(buffer, result)
        self.mark_in_place(self.env.get(buffer), start)
        return result

    def ufunc_into_item(self, rule, node, item, name):
        """`np.multiply(a, b, out=rows[t])` (generated code computing a step's value into
        its row, or the user's): `rows[t] = np.multiply(a, b)`, an update in place of rows,
        and the call's value is the item `rows[t]`, as numpy returns the view it wrote."""
        call = gast.Call(func=node.func, args=node.args,
                         keywords=[k for k in node.keywords if k.arg != "out"])
        gast.copy_location(call, node)
        result = self.call(call, name)
        self.setitem(item, result, node)
        return self.emit("getitem", [self.env[item.value.id], self.index(item.slice)],
                         name=name)

    # -- calls of Python functions: inlined ----------------------------------------------------

    def inline(self, fn, args, kwargs, node, name):
        """Lower a call of a Python function by lowering its body here, its names prefixed."""
        parsed = self.ctx.parsed_cache.get(fn)
        if parsed is None:
            parsed = parse(fn)
            self.ctx.parsed_cache[fn] = parsed
        tree = parsed.tree
        child = Lowerer(parsed, self.ctx, prefix=self.inline_prefix(tree.name))
        defaults = {}
        if fn.__defaults__:
            names = [a.id for a in tree.args.args]
            for pname, value in zip(names[len(names) - len(fn.__defaults__):], fn.__defaults__):
                defaults[pname] = child.classify(value, pname, tree)
        for pname, value in (fn.__kwdefaults__ or {}).items():
            defaults[pname] = child.classify(value, pname, tree)
        return self.run_inlined(child, tree, tree.args, tree.body, args, kwargs, defaults, node)

    def inline_local(self, local_fn, args, kwargs, node, name):
        scope = local_fn.scope
        fn_node = local_fn.node
        label = getattr(fn_node, "name", "lambda")
        child = Lowerer(scope.parsed, self.ctx, prefix=self.inline_prefix(label),
                        enclosing=scope)
        body = fn_node.body if isinstance(fn_node, gast.FunctionDef) else \
            [gast.copy_location(gast.Return(value=fn_node.body), fn_node.body)]
        return self.run_inlined(child, fn_node, fn_node.args, body, args, kwargs,
                                local_fn.defaults, node)

    def inline_prefix(self, label) -> str:
        """The prefix of an inlined function's names: `f_`, or `f2_`, `f3_`, ... inside an
        inlining of a function of the same name (a recursion unrolled): the inner call's
        variables must not be the outer call's, which it would overwrite."""
        prefix, depth = f"{label}_", 1
        while prefix in self.ctx.active_prefixes:
            depth += 1
            prefix = f"{label}{depth}_"
        return prefix

    def run_inlined(self, child, fn_node, arguments, body, args, kwargs, defaults, node):
        if self.ctx.inline_depth >= MAX_INLINE_DEPTH:
            self.error(errors.RecursionDepthError, "calls nest deeper than "
                       f"{MAX_INLINE_DEPTH} levels: recursion whose depth depends on the data "
                       "(or that an int argument bounds above that) cannot be differentiated",
                       node)
        if arguments.kwarg:
            self.error(errors.UnsupportedSyntaxError, "calling a function with a **kwargs "
                       "parameter is not supported", node)
        positional = [a.id for a in arguments.args]
        keyword_only = [a.id for a in arguments.kwonlyargs]
        bound = dict(defaults)
        if len(args) > len(positional) and not arguments.vararg:
            self.error(errors.UnsupportedSyntaxError, "too many arguments in this call", node)
        bound.update(zip(positional, args))
        for k, atom in kwargs:
            if k not in positional and k not in keyword_only:
                self.error(errors.UnsupportedSyntaxError, f"unexpected keyword argument {k!r}",
                           node)
            bound[k] = atom
        params = positional + keyword_only
        if arguments.vararg:  # `*args`: the extra arguments, a tuple known when compiling
            extra = tuple(args[len(positional):])
            bound[arguments.vararg.id] = Tup(extra) if extra else Const(())
            params.append(arguments.vararg.id)
        missing = [p for p in params if p not in bound]
        if missing:
            self.error(errors.UnsupportedSyntaxError, f"missing argument {missing[0]!r}", node)
        child.prepare(body, params)
        for p in params:
            child.env[p] = bound[p]
            if p in child.mutable:
                child.bind(p, bound[p])
        self.ctx.inline_depth += 1
        self.ctx.active_prefixes.append(child.prefix)
        try:
            result = child.function_body(body, fn_node)
            # A variable of the callee (assigned in its loops or branches) has the same name
            # in every inlining of the callee: the value returned is copied, or a second
            # call would change what the first returned
            result = child.frozen(result)
        finally:
            self.ctx.inline_depth -= 1
            self.ctx.active_prefixes.pop()
        self.loc = self.parsed.loc(node)
        return result

    def sequence_call(self, rule, node, name):
        """`np.concatenate([a, b], axis=0)` -> concatenate(a, b, axis=0)."""
        rest = node.args[1:]
        kwargs = [(k.arg, self.expr(k.value)) for k in node.keywords]
        if rest:
            kwargs = [("axis", self.expr(rest[0]))] + kwargs
        if node.args and isinstance(node.args[0], (gast.List, gast.Tuple)):
            items = [self.expr(e) for e in node.args[0].elts]
            return self.emit(rule.name, items, kwargs, name=name)
        seq = self.expr(node.args[0]) if node.args else None
        if isinstance(seq, Tup):  # a tuple known while compiling (`args + (ones,)`)
            return self.emit(rule.name, list(seq.items), kwargs, name=name)
        if isinstance(seq, Var):  # a list built at run time (append)
            return self.emit(f"{rule.name}_list", [seq], kwargs, name=name)
        self.error(errors.UnsupportedSyntaxError, f"{_describe(node.func)} needs a list or "
                   "tuple of arrays as its first argument", node)

    def method(self, node, name=None):
        func = node.func
        receiver = self.expr(func.value)
        if isinstance(receiver, Record):
            return self.record_method(receiver, node)
        if isinstance(receiver, Var) and (receiver.name in self.ctx.generators or
                                          random_draws.is_generator(
                                              self.ctx.free.get(receiver.name))):
            # rng.standard_normal(n): a draw from the user's generator, in the forward pass
            args, kwargs = self.call_args(node)
            draw = random_draws.method_rule(func.attr)
            return self.emit(draw.name, [receiver] + args, kwargs, name=name)
        op = op_for_method(func.attr)
        if op is None:
            self.error(errors.NoRuleError, f"the method .{func.attr}() has no derivative rule; "
                       "supported methods: " + ", ".join(array_methods()), node)
        args, kwargs = self.call_args(node)
        if func.attr in _VARARG_METHODS and len(args) > 1:
            args = [_pack(args)]
        if func.attr == "copy" and all(isinstance(a, Const) and a.value in ("C", "K", "A")
                                       for a in args):
            args = []  # (the memory layout of the copy changes no value)
        args = [receiver] + args
        self.check_binding(RULES[op], args, kwargs, node)
        return self.emit(op, args, kwargs, name=name)

    def record_method(self, record, node):
        """`d.items()`, `d.values()`, `d.keys()` (for loops and `len`) and `d.get(k, default)`
        of a dict known at compile time."""
        attr = node.func.attr
        args, kwargs = self.call_args(node)
        if record.kind != trees.DICT or attr not in ("items", "values", "keys", "get") or \
                kwargs or len(args) > (2 if attr == "get" else 0) or attr == "get" and not args:
            self.error(errors.UnsupportedSyntaxError, f".{attr}() of {record.describe()} is not "
                       "supported (supported: a dict's .items(), .values(), .keys() and "
                       ".get(key[, default]))", node)
        if attr == "get":
            if not isinstance(args[0], Const):
                self.error(errors.UnsupportedSyntaxError, "a dict's key must be known at "
                           "compile time (a constant)", node)
            key = args[0].value
            if key in record.keys:
                return record.values[record.keys.index(key)]
            return args[1] if len(args) > 1 else Const(None)
        keys = tuple(Const(k) for k in record.keys)
        items = {"keys": keys, "values": record.values,
                 "items": tuple(Tup((k, v)) for k, v in zip(keys, record.values))}[attr]
        return Static(items, f"{_describe(node.func)}()")

    def record_item(self, record, index):
        """`d["W"]`, `p[0]` of a container known at compile time, at a constant key."""
        if isinstance(record, Record) and record.kind == trees.DATACLASS:
            self.error(errors.UnsupportedSyntaxError, f"{record.describe()} is not subscriptable; "
                       "read its fields as attributes")
        if not isinstance(index, Const):
            self.error(errors.UnsupportedSyntaxError, f"{_first_record(record).describe()} is "
                       "indexed by a value known only at run time; its keys must be constants "
                       "(a loop over .items() is unrolled, so its keys are)")
        key = index.value
        if isinstance(record, Record) and record.kind == trees.DICT:
            if key not in record.keys:
                self.error(errors.UnsupportedSyntaxError, f"KeyError: {key!r} (the dict's keys: "
                           f"{', '.join(map(repr, record.keys))})")
            return record.values[record.keys.index(key)]
        items = record.values if isinstance(record, Record) else record.items
        try:
            picked = items[key]
        except (IndexError, TypeError) as exc:
            self.error(errors.UnsupportedSyntaxError, f"{type(exc).__name__}: {exc}")
        return Tup(picked) if isinstance(picked, tuple) else picked

    def check_binding(self, rule, args, kwargs, node):
        if not rule.params and not rule.varargs and not rule.vjps:
            return  # no signature known (non-differentiable, or a helper): arguments go through
        try:
            rule.signature().bind(*args, **dict(kwargs))
        except TypeError as exc:
            self.error(errors.UnsupportedSyntaxError, f"{_describe(node.func)}: {exc} (the "
                       f"derivative rule takes ({', '.join(rule.signature().parameters)}))", node)

    def no_rule(self, obj, func, node):
        label = _describe(func)
        base = self.target_of(func.value) if isinstance(func, gast.Attribute) and \
            isinstance(func.value, (gast.Name, gast.Attribute)) else None
        # the module the user found it in (scipy.special's ufuncs say they are numpy's)
        module = base.module.__name__ if isinstance(base, ModuleRef) else \
            getattr(obj, "__module__", None) or type(obj).__module__
        self.error(errors.NoRuleError, f"{label} ({module}) has no derivative rule. Register one "
                   "with sourcegrad.rules.defvjp(name, function, spelling, vjp_for_each_input...) "
                   "or rewrite the line with supported functions", node)


# builtins whose calls are lowered by a method of the Lowerer, not by a derivative rule
_COMPILE_TIME_BUILTINS = {slice: "slice_call", callable: "callable_call",
                          isinstance: "isinstance_call"}


def _as_dtype(atom):
    """A type passed to an operation (`x.astype(np.float32)`, `dtype=float`) is a constant
    of the code, not a function value."""
    if isinstance(atom, CallableRef) and isinstance(atom.obj, type) and \
            (issubclass(atom.obj, np.generic) or atom.obj in (float, int, bool, complex)):
        return Const(atom.obj)
    return atom


def _function_stand_in():
    """What isinstance sees for a function defined in the differentiated code."""


class _RenameNames(gast.NodeTransformer):
    """Rename the given names everywhere in a (copied) tree."""

    def __init__(self, names):
        self.names = names

    def visit_Name(self, node):
        if node.id in self.names:
            node.id = self.names[node.id]
        return node


def _copy_tree(node):
    return copy.deepcopy(node)


def _structure_atom(treedef, leaves, path, names):
    """The compile-time container of a tree argument: a `Tup` for a list or tuple (a
    `Const` when empty; `names` gets its path as a name), a `Record` for a dict, NamedTuple
    or dataclass."""
    if treedef.kind == trees.LEAF:
        return next(leaves)
    keys = treedef.keys or range(len(treedef.children))
    items = tuple(_structure_atom(c, leaves, f"{path}_{k}" if str(k).isidentifier() or
                                  str(k).isdigit() else f"{path}_{i}", names)
                  for i, (k, c) in enumerate(zip(keys, treedef.children)))
    if treedef.kind in (trees.LIST, trees.TUPLE):
        if not items:
            return Const([] if treedef.kind == trees.LIST else ())
        names.setdefault(Tup(items), path)
        return Tup(items)
    return Record(treedef.kind, treedef.cls, treedef.keys, items)


class _AtomNode(gast.Name):
    """An already-lowered atom standing in an expression tree (for chained comparisons)."""

    def __init__(self, atom):
        super().__init__(id="<atom>", ctx=gast.Load(), annotation=None, type_comment=None)
        self.atom = atom


_PY_OPS = {"add_op": lambda a, b: a + b, "sub_op": lambda a, b: a - b,
           "mul_op": lambda a, b: a * b, "div_op": lambda a, b: a / b,
           "pow_op": lambda a, b: a ** b, "mod_op": lambda a, b: a % b,
           "floordiv_op": lambda a, b: a // b, "matmul_op": lambda a, b: a @ b}
# Libraries whose Python functions are never inlined from their own source: a function of
# theirs is a primitive with a rule (sourcegrad.ops) or a NoRuleError.
_LIBRARIES = ("scipy",)
# min(a, b) / max(a, b) / sum(...) with several arguments: elementwise forms
_BUILTIN_REDUCTIONS = {"min_builtin": "min_builtin", "max_builtin": "max_builtin"}


def _loop_call(node, env):
    """"range", "enumerate", "zip" or "reversed" for a loop over such a call of the builtin
    (as `Lowerer.iteration` reads it), else None."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
            node.func.id not in env:
        if node.func.id in ("range", "enumerate", "zip"):
            return node.func.id
        if node.func.id == "reversed" and len(node.args) == 1 and \
                isinstance(node.args[0], gast.Call) and \
                isinstance(node.args[0].func, gast.Name) and node.args[0].func.id == "range":
            return "reversed"
    return None


def _joined_tuples(op, left, right):
    """`a + b` of two tuples known while compiling (a `Tup` or a constant tuple), else None."""
    def items(atom):
        if isinstance(atom, Tup):
            return atom.items
        if isinstance(atom, Const) and type(atom.value) is tuple:
            return tuple(Const(v) for v in atom.value)
        return None
    first, second = items(left), items(right)
    if op != "add_op" or first is None or second is None or \
            not (isinstance(left, Tup) or isinstance(right, Tup)):
        return None
    return Tup(first + second)


def _as_load(target):
    if isinstance(target, gast.Name):
        return gast.copy_location(gast.Name(id=target.id, ctx=gast.Load(), annotation=None,
                                            type_comment=None), target)
    if isinstance(target, gast.Subscript):
        return gast.copy_location(gast.Subscript(value=_as_load(target.value), slice=target.slice,
                                                 ctx=gast.Load()), target)
    raise errors.UnsupportedSyntaxError(f"augmented assignment to {_describe(target)} is not "
                                        "supported")


def _unique_dependencies(deps):
    seen, out = set(), []
    for kind, container, name, value in deps:
        key = (id(container), name)
        if key not in seen:
            seen.add(key)
            out.append((kind, container, name, value))
    return out


def _callee_name(func):
    if isinstance(func, gast.Name):
        return func.id
    if isinstance(func, gast.Attribute):
        return func.attr
    return "callee"


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


def lower(parsed: ParsedFunction, static=None, structure=None) -> Function:
    """Lower a parsed function to IR; `static` maps argument names to values the IR is
    specialised on (ints that decide a recursion's depth), `structure` argument names to
    the `trees.TreeDef` of arguments passed as their leaves."""
    return Lowerer(parsed).lower(static, structure)


def function_to_ir(fn, static=None, structure=None) -> Function:
    return lower(parse(fn), static, structure)
