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
    gast.Assert: "an assert statement",
    gast.AnnAssign: "an annotated assignment",
}
_UNSUPPORTED_EXPRESSIONS = {
    gast.Lambda: "a lambda (other than one assigned to a name)",
    gast.ListComp: "a list comprehension", gast.SetComp: "a set comprehension",
    gast.DictComp: "a dict comprehension", gast.GeneratorExp: "a generator expression",
    gast.Await: "await", gast.Yield: "yield (a generator)", gast.YieldFrom: "yield from",
    gast.Dict: "a dict display", gast.Set: "a set display", gast.JoinedStr: "an f-string",
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

    @property
    def out(self) -> list:
        return self.blocks[-1]


@dataclass
class LocalFunction:
    """A nested def or lambda: its node, the scope it closes over, its default atoms."""

    node: object
    scope: object
    defaults: dict


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
    for node in _walk_no_defs(stmt, False):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
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

    def error(self, cls, message, node=None):
        raise cls(message, self.parsed.loc(node) if node is not None else self.loc)

    @property
    def out(self):
        return self.ctx.out

    # -- entry points --------------------------------------------------------------------------

    def lower(self, static=None) -> Function:
        """Lower the function being differentiated (`static`: values of some arguments)."""
        static = static or {}
        tree = self.parsed.tree
        args = tree.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            self.error(errors.UnsupportedSyntaxError,
                       "*args, **kwargs, keyword-only and positional-only parameters are not "
                       "supported yet", tree)
        params = [a.id for a in args.args]
        self.prepare(tree.body, params)
        for name in params:
            self.ctx.namer.reserve(name)
            self.ctx.user_names.add(name)
            # an argument lowered as its value (an int that bounds a recursion) is a constant
            # where the body does not assign it
            self.env[name] = Const(static[name]) if name in static and \
                name not in self.assigned else Var(name)
        result = self.function_body(tree.body, tree)
        self.out.append(Return(result, self.loc))
        fn = Function(tree.name, params, self.ctx.blocks[0], self.parsed.file,
                      self.parsed.loc(tree), self.ctx.free, self.ctx.user_names)
        # modules (np, math) are not expected to be rebound; everything else is checked
        fn.dependencies = [d for d in _unique_dependencies(self.ctx.dependencies)
                           if not isinstance(d[3], types.ModuleType)]
        return fn

    def prepare(self, body, params):
        """Find the names this function assigns, and which must stay mutable variables.

        `a[i] = v` and `xs.append(v)` assign `a` and `xs` too: the compiler turns them
        into new values bound to the same name.
        """
        self.assigned = {n for stmt in body for n in _assigned_names(stmt)}
        compound = set()
        for stmt in body:
            if isinstance(stmt, (gast.If, gast.For, gast.While)):
                compound |= _assigned_names(stmt)
        non_tail = any(_exits([s], {"return"}) for s in body[:-1])
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
        else:
            what = _UNSUPPORTED_STATEMENTS.get(type(stmt), type(stmt).__name__)
            self.error(errors.UnsupportedSyntaxError, f"{what} is not supported in "
                       "differentiated code", stmt)
        return False

    def return_(self, stmt):
        if stmt.value is None:
            self.error(errors.UnsupportedSyntaxError, "return without a value", stmt)
        value = self.expr(stmt.value)
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
        start, stop, step, prelude = self.iteration(stmt.iter, stmt.target, stmt)
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

    def iteration(self, node, target, stmt):
        """(start, stop, step, (index name, [binders])) for `for target in node`."""
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
                seq = self.iterated(node.args[0], stmt)
                if not (isinstance(target, gast.Tuple) and len(target.elts) == 2):
                    self.error(errors.UnsupportedSyntaxError, "unpack enumerate as i, x", stmt)
                index = self.loop_target(target.elts[0].id) \
                    if isinstance(target.elts[0], gast.Name) else self.ctx.namer.fresh("i")
                length = self.emit("len", [seq])
                return Const(0), length, Const(1), (index, [
                    lambda: self.bind_target(target.elts[1], self.emit(
                        "getitem", [seq, Var(index)], name=self.name_of(target.elts[1])))])
            seqs = [self.iterated(a, stmt) for a in node.args]
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
        seq = self.iterated(node, stmt)
        if isinstance(seq, Tup):  # a tuple of computed values, indexed by the loop at run time
            seq = self.emit("make_tuple", list(seq.items))
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
                self.bind_target(t, self.emit("getitem", [atom, Const(i)], name=self.name_of(t)))

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
        return {name: self.expr(d) for name, d in zip(names[len(names) - len(args.defaults):],
                                                     args.defaults)}

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
                self.assign_atom(t, self.emit("getitem", [source, Const(i)],
                                              name=self.name_of(t)), stmt)
            return
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            self.setitem(target, value, stmt)
            return
        self.error(errors.UnsupportedSyntaxError, f"assignment to {_describe(target)} is not "
                   "supported", stmt)

    def assign_atom(self, target, atom, stmt):
        if isinstance(target, gast.Name):
            self.bind(target.id, atom)
        elif isinstance(target, (gast.Tuple, gast.List)):
            for i, t in enumerate(target.elts):
                self.assign_atom(t, self.emit("getitem", [atom, Const(i)],
                                              name=self.name_of(t)), stmt)
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
        aliases = [n for n, a in self.env.items() if a == array and n != name]
        if aliases:
            self.error(errors.UnsupportedSyntaxError, f"{name!r} is changed in place while "
                       f"{aliases[0]!r} refers to the same array; copy it first (np.copy)", stmt)
        index = self.index(target.slice)
        atom = value if isinstance(value, (Var, Const, Tup)) else self.expr(value)
        start = len(self.out)
        self.bind(name, self.emit("setitem", [array, index, atom], name=self.local(name)))
        self.mark_in_place(self.env.get(name), start)

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
        if name in self.mutable:
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
            self.env[name] = atom

    def is_variable(self, local_name):
        """Is this (prefixed) name one that is assigned more than once (a loop/branch variable)?"""
        base = local_name[len(self.prefix):] if self.prefix and \
            local_name.startswith(self.prefix) else local_name
        return base in self.mutable and self.env.get(base) == Var(local_name)

    def _version(self, name):
        """The name the next value assigned to the (prefixed) user name `name` gets."""
        base = name[len(self.prefix):] if self.prefix and name.startswith(self.prefix) else name
        if base in self.mutable:
            return name
        if base in self.env:
            return self.ctx.namer.fresh(name)
        self.ctx.namer.taken.discard(name)
        return self.ctx.namer.fresh(name)

    # -- expressions ---------------------------------------------------------------------------

    def emit(self, op, args, kwargs=(), name=None) -> Var:
        """Append `tmp = op(*args, **kwargs)` and return `tmp`, named after the user or the op.

        A non-differentiable primitive of constants is evaluated now (so tests on static
        arguments, such as the depth of an inlined recursion, are decided at compile time).
        """
        rule = RULES[op]
        if op == "getitem" and isinstance(args[0], Tup) and isinstance(args[1], Const) \
                and isinstance(args[1].value, int):
            return args[0].items[args[1].value]  # unpacking a tuple of values: no code
        if op == "len" and isinstance(args[0], Tup):
            return Const(len(args[0].items))
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
            return self.sequence(node)
        what = _UNSUPPORTED_EXPRESSIONS.get(type(node), type(node).__name__)
        self.error(errors.UnsupportedSyntaxError, f"{what} is not supported in "
                   "differentiated code", node)

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
        if any(o not in COMPARISONS and o not in ("Is", "IsNot") for o in ops):
            self.error(errors.UnsupportedSyntaxError, "membership comparisons (in, not in) are "
                       "not supported", node)
        left = self.expr(node.left)
        right = self.expr(node.comparators[0])
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

    def sequence(self, node):
        items = tuple(self.expr(e) for e in node.elts)
        if all(isinstance(i, Const) for i in items):
            values = [i.value for i in items]
            # a list stays a list: as an index it selects elements, where a tuple selects axes
            return Const(values if isinstance(node, gast.List) else tuple(values))
        if isinstance(node, gast.List):
            return self.emit("make_list", list(items))
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
        if ident in self.assigned and self.enclosing is None:
            self.error(errors.NameResolutionError, f"local variable {ident!r} is read before it "
                       "is assigned", node)
        found = self.lookup(ident)
        if found is not None and not isinstance(found, LocalFunction):
            return found
        if found is not None:
            self.error(errors.UnsupportedSyntaxError, f"the function {ident!r} is used as a "
                       "value; only calls of it are supported", node)
        ref = self.classify(self.resolve(node), ident, node)
        if isinstance(ref, (ModuleRef, CallableRef)):
            self.error(errors.UnsupportedSyntaxError, f"{ident!r} is a "
                       f"{'module' if isinstance(ref, ModuleRef) else 'function'} used as a value; "
                       "only calls of it are supported", node)
        return ref

    def target_of(self, func):
        """Resolve a call's function expression: ModuleRef, CallableRef, LocalFunction, or None."""
        if isinstance(func, gast.Name):
            if func.id in self.env:
                return None
            found = self.lookup(func.id)
            if isinstance(found, LocalFunction):
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
        target = self.target_of(func)
        if target is None and isinstance(func, gast.Attribute):
            return self.method(node, name)
        if isinstance(target, LocalFunction):
            args, kwargs = self.call_args(node)
            return self.inline_local(target, args, kwargs, node, name)
        if not isinstance(target, CallableRef):
            self.error(errors.UnsupportedSyntaxError, f"{_describe(func)} is not callable", node)
        obj = target.obj
        if isinstance(obj, types.FunctionType) and rule_for_function(obj) is None and \
                (getattr(obj, "__module__", None) or "").split(".")[0] not in _LIBRARIES:
            args, kwargs = self.call_args(node)
            return self.inline(obj, args, kwargs, node, name)
        rule = rule_for_function(obj)
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
        if rule.vjps:
            # a tuple of values passed where the rule has a VJP (`einsum_grad(g, s, (A, B), 0)`
            # in generated code) becomes a value of its own, so its adjoint reaches A and B
            args = [self.emit("make_tuple", list(a.items))
                    if isinstance(a, Tup) and rule.vjp_for(i) is not None else a
                    for i, a in enumerate(args)]
        return self.emit(rule.name, args, kwargs, name=name)

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
        child = Lowerer(parsed, self.ctx, prefix=f"{tree.name}_")
        defaults = {}
        if fn.__defaults__:
            names = [a.id for a in tree.args.args]
            for pname, value in zip(names[len(names) - len(fn.__defaults__):], fn.__defaults__):
                defaults[pname] = child.classify(value, pname, tree)
        return self.run_inlined(child, tree, tree.args, tree.body, args, kwargs, defaults, node)

    def inline_local(self, local_fn, args, kwargs, node, name):
        scope = local_fn.scope
        fn_node = local_fn.node
        label = getattr(fn_node, "name", "lambda")
        child = Lowerer(scope.parsed, self.ctx, prefix=f"{label}_", enclosing=scope)
        body = fn_node.body if isinstance(fn_node, gast.FunctionDef) else \
            [gast.copy_location(gast.Return(value=fn_node.body), fn_node.body)]
        return self.run_inlined(child, fn_node, fn_node.args, body, args, kwargs,
                                local_fn.defaults, node)

    def run_inlined(self, child, fn_node, arguments, body, args, kwargs, defaults, node):
        if self.ctx.inline_depth >= MAX_INLINE_DEPTH:
            self.error(errors.RecursionDepthError, "calls nest deeper than "
                       f"{MAX_INLINE_DEPTH} levels: recursion whose depth depends on the data "
                       "(or that an int argument bounds above that) cannot be differentiated",
                       node)
        if arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
            self.error(errors.UnsupportedSyntaxError, "calling a function with *args, **kwargs "
                       "or keyword-only parameters is not supported", node)
        params = [a.id for a in arguments.args]
        bound = dict(defaults)
        if len(args) > len(params):
            self.error(errors.UnsupportedSyntaxError, "too many arguments in this call", node)
        bound.update(zip(params, args))
        for k, atom in kwargs:
            if k not in params:
                self.error(errors.UnsupportedSyntaxError, f"unexpected keyword argument {k!r}",
                           node)
            bound[k] = atom
        missing = [p for p in params if p not in bound]
        if missing:
            self.error(errors.UnsupportedSyntaxError, f"missing argument {missing[0]!r}", node)
        child.prepare(body, params)
        for p in params:
            child.env[p] = bound[p]
            if p in child.mutable:
                child.bind(p, bound[p])
        self.ctx.inline_depth += 1
        try:
            result = child.function_body(body, fn_node)
        finally:
            self.ctx.inline_depth -= 1
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
        if isinstance(seq, Var):  # a list built at run time (append)
            return self.emit(f"{rule.name}_list", [seq], kwargs, name=name)
        self.error(errors.UnsupportedSyntaxError, f"{_describe(node.func)} needs a list or "
                   "tuple of arrays as its first argument", node)

    def method(self, node, name=None):
        func = node.func
        op = op_for_method(func.attr)
        if op is None:
            self.error(errors.NoRuleError, f"the method .{func.attr}() has no derivative rule; "
                       "supported methods: " + ", ".join(array_methods()), node)
        receiver = self.expr(func.value)
        args, kwargs = self.call_args(node)
        if func.attr in _VARARG_METHODS and len(args) > 1:
            args = [_pack(args)]
        if func.attr == "copy":
            args = []
        args = [receiver] + args
        self.check_binding(RULES[op], args, kwargs, node)
        return self.emit(op, args, kwargs, name=name)

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


def lower(parsed: ParsedFunction, static=None) -> Function:
    """Lower a parsed function to IR; `static` maps argument names to values the IR is
    specialised on (ints that decide a recursion's depth)."""
    return Lowerer(parsed).lower(static)


def function_to_ir(fn, static=None) -> Function:
    return lower(parse(fn), static)
