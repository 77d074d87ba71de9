"""Code generation: an optimized `ir.Function` -> Python source -> a loaded module.

`generate(fn, info, backend)` returns the source text of a module defining one
function: the imports it needs (its array namespace, at most a few
`sourcegrad.runtime` helpers), then the function, with a comment before each
group of statements naming the user line it computes (`# line 7: ...`) or
differentiates (`# backward of line 7`), and the rules behind each backward
statement as a trailing comment. Temporaries read exactly once are folded back
into the expression that reads them, so the code reads like nested maths
rather than like A-normal form (never past a statement that changes what they
read, a buffer written with `out=` included, with every view of it). Numbers
use the math module; reductions of arrays are written as methods (`d.sum(axis=0)`,
faster than `np.sum` on small arrays), a product of arrays of one or two dimensions as
`a.dot(b)` (matmul's ufunc dispatch costs ~0.25 µs a call), a float squared as `x * x`;
parameters given as 0-d arrays are read once as the numpy scalars they hold
(`SourceInfo.unwrapped`). A function is gone through twice: a dry run, which prints
nothing, tells `lifetimes` where each name's printed text is read (the folds do not depend
on the names printed, so it decides them for both), and the printing writes a dead
array's name rebound by the next value of its family (`d_v = d_v * w`; `d_v *= w`
for a result computed into its buffer), so each array is freed when the next
exists (the facts about the body both need are found once). A VJP's backward handed its
residuals (`SourceInfo.hands_over`: a compiled region's) takes them in one list it empties,
and deletes every array after its last use (`_handed_over`). Statements are
printed by `pyprint`, which writes what astor would (astor prints what it does not cover).

`load(source, name, free)` compiles the source into a fresh module whose file
*is* that source (it is registered with linecache), so tracebacks, pdb and
`inspect.getsource` show generated lines.

Everything here is deterministic: the same IR gives byte-identical text.

Why one module: the writer and the printer make one printing together (the names, the
folds and the fused kernels they decide are read by both).
"""

from __future__ import annotations

import ast
import bisect
import functools
import hashlib
import linecache
import math
import os
import textwrap
import types
from dataclasses import dataclass, replace

import astor
import gast
import numpy as np

from ... import errors
from ...ops import RULES
from ..analysis import memory_sources
from ..analysis.lifetimes import freed_after_last_use, in_place_names, shared_names, trip_outliving
from ..ir import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    If,
    Marker,
    Pop,
    Push,
    Return,
    Slc,
    Tup,
    Var,
    While,
    assignment_counts,
    atom_vars,
    merge_notes,
    read_counts,
    reads_of,
    walk,
    writes_of,
)
from . import linebreak, pyprint

MAX_LINE = linebreak.MAX_LINE  # (88, black's)
# `a @ b` is printed `a.dot(b)` when both are arrays of one or two dimensions of at most this
# many elements: there matmul's dispatch (~1 µs) is a noticeable part of the product (a
# 16x16 matrix times a vector: 2.1 µs against 1.1 µs; the logistic regression's 64x10 X:
# 2.4 against 1.4); from about 2^15 multiply-adds on the two take the same time (measured
# on the benchmark's shapes, single-threaded)
DOT_MAX_SIZE = 1024
_DOT_NOTE = "# a.dot(b) is a small a @ b without matmul's dispatch: ~1 µs a call faster"


@dataclass(frozen=True)
class Backend:
    name: str
    module: str  # what to import
    alias: str  # what generated code calls it


BACKENDS = {
    "numpy": Backend("numpy", "numpy", "np"),
    "cupy": Backend("cupy", "cupy", "cp"),
    "dask": Backend(
        "dask", "dask.array", "da"
    ),  # (sourcegrad.compiler.backends.dask_backend runs it)
    # numba compiles the numpy code (sourcegrad.compiler.backends.numba_backend rewrites what it needs)
    "numba": Backend("numpy", "numpy", "np"),
}


@dataclass(frozen=True)
class SourceInfo:
    """What the header says the code was generated from."""

    file: str
    function: str
    wrt: tuple
    forward_names: frozenset  # values computed by the user's own statements
    arrays: frozenset = frozenset()  # values that are arrays with at least one dimension
    scalars: frozenset = frozenset()  # values that are Python floats
    # small arrays of one or two dimensions (a @ b of two of them as a.dot(b): DOT_MAX_SIZE)
    matrices: frozenset = frozenset()
    unwrapped: tuple = ()  # parameters given as 0-d arrays, read as the numpy scalars they hold
    what: str = "gradient"  # or "forward-mode derivative (JVP)"
    # arrays of at least FREE_MIN_BYTES: deleted after their last use (lifetimes)
    large: frozenset = frozenset()
    # made from a trace (compiler.trace): why the source front end did not read it
    traced: str = ""
    # a VJP whose backward takes its residuals in one list it empties (`_handed_over`)
    hands_over: bool = False


def _name(ident):
    made = _NAMES.get(ident)
    if made is None:
        if len(_NAMES) >= 1 << 16:  # (bounded: names come from user programs)
            _NAMES.clear()
        made = _NAMES[ident] = gast.Name(id=ident, ctx=_LOAD, annotation=None, type_comment=None)
    return made


# The trees printed here are never changed once made, so one node serves every reading of a
# name, and one `Load` every node (a long function's code reads names ~10^5 times).
_LOAD = gast.Load()
_NAMES: dict = {}


def _attr(value, attr):
    return gast.Attribute(value=value, attr=attr, ctx=_LOAD)


class Printer:
    """Turns IR expressions into gast expression trees for one backend."""

    def __init__(
        self,
        backend: Backend,
        inlined: dict,
        scalars=frozenset(),
        arrays=frozenset(),
        printed=None,
        matrices=frozenset(),
    ):
        self.backend = backend
        self.inlined = inlined  # temp name -> gast expression folded in place of the name
        self.printed = printed or {}  # name -> the name it is printed as (see lifetimes)
        self.scalars = scalars  # names holding Python floats: math is much faster on them
        self.arrays = arrays  # names holding arrays: reductions are written as methods
        self.matrices = matrices  # names holding small arrays of one or two dimensions
        self.dot_used = False  # whether a @ b was written a.dot(b) (said once, in a comment)
        self.helpers: set = set()
        self.modules: set = set()
        self.uses_backend = False  # whether the code calls the array namespace at all
        # in code the rules wrote (the backward), `np.log(2.0)` is a number and can be
        # math.log(2.0); in the user's code it stays a numpy float (it sets dtypes there)
        self.rule_code = False

    def namespace(self, attr):
        """`np.<attr>` (or `cp.<attr>`)."""
        self.uses_backend = True
        return _attr(_name(self.backend.alias), attr)

    def all_scalars(self, call):
        atoms = call.atoms()
        return (
            bool(atoms)
            and all(
                (isinstance(a, Var) and a.name in self.scalars)
                or (
                    isinstance(a, Const)
                    and isinstance(a.value, (int, float))
                    and not isinstance(a.value, bool)
                )
                for a in atoms
            )
            and (any(isinstance(a, Var) for a in atoms) or self.rule_code and _math_defined(call))
        )

    def atom(self, atom, in_index=False):
        if isinstance(atom, Var):
            return self.inlined.get(atom.name) or _name(self.printed.get(atom.name, atom.name))
        if isinstance(atom, Tup):
            return gast.Tuple(elts=[self.atom(a, in_index) for a in atom.items], ctx=_LOAD)
        if isinstance(atom, Slc):
            parts = [
                None if isinstance(p, Const) and p.value is None else self.atom(p)
                for p in (atom.lower, atom.upper, atom.step)
            ]
            if in_index:
                return gast.Slice(lower=parts[0], upper=parts[1], step=parts[2])
            return gast.Call(
                func=_name("slice"),
                args=[p or gast.Constant(None, None) for p in parts],
                keywords=[],
            )
        return self.const(atom.value, in_index)

    def const(self, value, in_index=False):
        if isinstance(value, type) and issubclass(value, np.generic):
            return self.namespace(value.__name__)  # a dtype: np.float32
        if isinstance(value, type) and value in (float, int, bool, complex):
            return _name(value.__name__)
        if isinstance(value, slice):
            parts = [
                None if v is None else self.const(v) for v in (value.start, value.stop, value.step)
            ]
            if in_index:
                return gast.Slice(lower=parts[0], upper=parts[1], step=parts[2])
            # outside a subscript an index is spelled np.s_[...]
            return gast.Subscript(
                value=self.namespace("s_"),
                slice=gast.Slice(lower=parts[0], upper=parts[1], step=parts[2]),
                ctx=_LOAD,
            )
        if isinstance(value, tuple):
            if not in_index and any(isinstance(v, slice) or v is Ellipsis for v in value):
                return gast.Subscript(
                    value=self.namespace("s_"), slice=self.const(value, True), ctx=_LOAD
                )
            return gast.Tuple(elts=[self.const(v, in_index) for v in value], ctx=_LOAD)
        if isinstance(value, list):
            return gast.List(elts=[self.const(v) for v in value], ctx=_LOAD)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return gast.UnaryOp(op=gast.USub(), operand=gast.Constant(-value, None))
        return gast.Constant(value, None)

    def call(self, call: Call):
        rule = RULES[call.op]
        sp = rule.spelling
        args = [self.atom(a) for a in call.args]
        keywords = [gast.keyword(arg=k, value=self.atom(a)) for k, a in call.kwargs]
        if (
            sp.kind == "binop"
            and sp.text == "@"
            and self.backend.name == "numpy"
            and all(isinstance(a, Var) and a.name in self.matrices for a in call.args)
        ):
            # `a.dot(b)`: for arrays of one or two dimensions the same product as `a @ b`
            # (the same BLAS call), without matmul's ufunc dispatch (~1 µs a call: a tenth
            # of a small product, noise on a large one, where the user's `@` is kept)
            self.dot_used = True
            return gast.Call(func=_attr(args[0], "dot"), args=[args[1]], keywords=[])
        if (
            sp.kind == "binop"
            and sp.text == "**"
            and call.args[1] == Const(2)
            and isinstance(args[0], gast.Name)
            and call.args[0].name in self.scalars
        ):
            # `x * x`: a Python float squares by multiplication ~3x faster than by pow
            # (numpy squares an array by multiplication already)
            return gast.BinOp(left=args[0], op=gast.Mult(), right=_name(args[0].id))
        if sp.kind == "binop":
            return gast.BinOp(left=args[0], op=_BINOP_NODES[sp.text](), right=args[1])
        if sp.kind == "compare":
            return gast.Compare(
                left=args[0], ops=[_COMPARE_NODES[sp.text]()], comparators=[args[1]]
            )
        if sp.kind == "unaryop":
            op = {"-": gast.USub, "+": gast.UAdd, "not": gast.Not, "~": gast.Invert}[sp.text]()
            return gast.UnaryOp(op=op, operand=args[0])
        if sp.kind == "list":
            return gast.List(elts=args, ctx=_LOAD)
        if sp.kind == "tuple":
            return gast.Tuple(elts=args, ctx=_LOAD)
        if sp.kind == "pycall":
            return gast.Call(func=args[0], args=args[1:], keywords=keywords)
        if sp.kind == "attr":
            return _attr(args[0], sp.text)
        if sp.kind == "method":  # `rng.normal(0.0, 1.0, n)`: the first argument is the object
            return gast.Call(func=_attr(args[0], sp.text), args=args[1:], keywords=keywords)
        if sp.kind == "getitem":
            return gast.Subscript(
                value=args[0], slice=self.atom(call.args[1], in_index=True), ctx=_LOAD
            )
        if rule.sequence_input:
            args = [gast.List(elts=args, ctx=_LOAD)]
        if sp.kind == "func" and rule.math is not None and self.all_scalars(call):
            # Python floats in, Python float out: the math module, as one writes it by hand (a
            # domain error raises ValueError there instead of returning nan: loud, never a
            # silently wrong number)
            self.modules.add("math")
            func = _attr(_name("math"), rule.math)
        elif (
            sp.kind == "func"
            and rule.method is not None
            and call.args
            and isinstance(call.args[0], Var)
            and call.args[0].name in self.arrays
        ):
            # `x.sum(axis=0)`: the method skips np.sum's Python-level dispatch (about 0.8 µs
            # a call, most of a reduction of a small array)
            return gast.Call(func=_attr(args[0], rule.method), args=args[1:], keywords=keywords)
        elif sp.kind == "func":
            func = self.namespace(sp.text)
        elif sp.kind == "module":
            head, _, tail = sp.text.partition(".")
            self.modules.add(head)
            func = _attr(_name(head), tail)
        elif sp.kind == "helper":
            self.helpers.add(sp.text)
            func = _name(sp.text)
        else:  # builtin
            func = _name(sp.text)
        return gast.Call(func=func, args=args, keywords=keywords)

    def value(self, value):
        return self.call(value) if isinstance(value, Call) else self.atom(value)


def _math_defined(call) -> bool:
    """A call of constants that the math module computes (no domain error, finite)."""
    name = RULES[call.op].math
    if name is None:
        return False
    try:
        value = getattr(math, name)(*(a.value for a in call.args))
    except (ValueError, OverflowError, TypeError):
        return False
    return not call.kwargs and math.isfinite(value)


_BINOP_NODES = {
    "+": gast.Add,
    "-": gast.Sub,
    "*": gast.Mult,
    "/": gast.Div,
    "**": gast.Pow,
    "@": gast.MatMult,
    "%": gast.Mod,
    "//": gast.FloorDiv,
    "|": gast.BitOr,
    "&": gast.BitAnd,
    "^": gast.BitXor,
}
# ufuncs written as an augmented assignment when they compute into their first operand
_IN_PLACE_OPERATORS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.divide: "/"}
_COMPARE_NODES = {
    "<": gast.Lt,
    "<=": gast.LtE,
    ">": gast.Gt,
    ">=": gast.GtE,
    "==": gast.Eq,
    "!=": gast.NotEq,
}


def _expr_source(node) -> str:
    """An expression's source without the parentheses astor puts around a bare expression."""
    return _to_source(gast.Expr(value=node))


def _to_source(node) -> str:
    # pyprint writes what astor would, several times faster; astor prints what it does not
    try:
        text = pyprint.to_source(node)
    except (pyprint.Unprintable, KeyError):
        return _astor_source(node)
    if _CHECK_PRINTER:
        assert text == _astor_source(node), (text, _astor_source(node))
    return text


_CHECK_PRINTER = os.environ.get("SOURCEGRAD_CHECK_PRINTER") == "1"  # (tests: pyprint == astor)


def _astor_source(node) -> str:
    # astor's default pretty-printer wraps long lines at arbitrary points; statements here
    # are kept short by folding fewer temporaries instead
    return astor.to_source(_to_ast(node), pretty_source=lambda parts: "".join(parts)).rstrip("\n")


def _to_ast(node):
    """`gast.gast_to_ast` for the nodes the Printer makes (expressions, assignments,
    `return`): the same `ast` tree, built directly (gast's generic translator, copying
    locations, was half the cost of printing a statement)."""
    if isinstance(node, list):
        return [_to_ast(n) for n in node]
    if not isinstance(node, gast.AST):
        return node
    kind = type(node)
    made = _AST_OF.get(kind)
    if made is None:
        target = getattr(ast, kind.__name__)
        # ast.Name has no annotation or type_comment; the rest have gast's fields
        made = _AST_OF[kind] = (target, tuple(f for f in kind._fields if f in target._fields))
    target, fields = made
    return target(**{f: _to_ast(getattr(node, f)) for f in fields})


_AST_OF: dict = {}  # gast node class -> (ast node class, the fields they share)


def _assign(target, expr):
    return gast.Assign(
        targets=[gast.Name(id=target, ctx=gast.Store(), annotation=None, type_comment=None)],
        value=expr,
        type_comment=None,
    )


def _relative(path):
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return os.path.basename(path)
    return os.path.basename(path) if rel.startswith("..") else rel


class _Facts:
    """What both printings of a function need to know about its body (not its names)."""

    def __init__(self, fn, arrays, matrices):
        self.arrays = arrays | _buffers_made(fn.body)
        self.matrices = _matrices_made(fn.body, matrices)
        self.uses = read_counts(fn.body)
        assigned = assignment_counts(fn.body, fn.params)
        # only a temporary assigned once and read once may be folded into its reader
        self.protected = (
            set(fn.params) | set(fn.user_names) | {n for n, c in assigned.items() if c > 1}
        )
        self.sharing = _memory_sharing(fn.body)
        self.uses_stack = any(isinstance(s, Push) for s in walk(fn.body))
        self._following: dict = {}  # id(block) -> (the block, its _Following)

    def following(self, stmts, changed_by):
        """The block's `_Following`, one per block of the IR (its index depends on the
        statements and on `sharing` only; `changed_by` is either printing's)."""
        known = self._following.get(id(stmts))
        if known is not None and known[0] is stmts:
            return known[1]
        made = _Following(stmts, changed_by)
        self._following[id(stmts)] = (stmts, made)  # (holding the block keeps its id its own)
        return made


class _Writer:
    """Prints a function body: comments per user line, folded temporaries, nested blocks."""

    def __init__(
        self,
        fn,
        backend,
        arrays=frozenset(),
        scalars=frozenset(),
        printed=None,
        matrices=frozenset(),
        facts=None,
        dry=False,
    ):
        self.fn = fn
        # a dry run prints nothing: it finds what a printing would read where (reads_at,
        # own_slot) for lifetimes, and the folds, which the printing then reuses
        self.dry = dry
        # what the body's statements say, whatever the names are printed as: computed once
        # and handed to the second printing (`facts`)
        self.facts = facts = facts or _Facts(fn, arrays, matrices)
        self.arrays = arrays = facts.arrays
        matrices = facts.matrices
        self.uses = facts.uses
        self.protected = facts.protected
        self.sharing = facts.sharing
        # dead arrays' names rebound by the next value of their family (see lifetimes)
        self.printed = printed or {}
        # what a first printing tells lifetimes: per IR statement, the names its printed
        # text reads, and the assignments printed where the IR has them
        self.reads_at: dict = {}
        self.own_slot: set = set()
        self.slot = None  # the IR statement being printed
        self.inlined: dict = {}
        self.folded: dict = {}
        self.folded_reads: dict = {}
        self.fold_depths: dict = {}  # folded temp -> how deep its printed expression nests
        self.printer = Printer(backend, self.inlined, scalars, arrays, self.printed, matrices)
        self.lines: list = []  # (indent, kind, line, text, code, note)
        self.section = "forward"
        self.uses_stack = facts.uses_stack
        # CuPy: a statement that is a run of elementwise operations becomes one fused kernel
        self.fuse = backend.name == "cupy"
        self.elementwise_ops: dict = {}  # folded temp -> how many elementwise ops it holds
        self.kernels: list = []  # (name, params, expression) of fused functions
        self.dot_noted = False
        # top-level position -> the large arrays deleted after it, read no more (lifetimes)
        self.freed: dict = {}
        # the same in a top-level loop's trip: id(loop) -> {position in its body: names}
        self.freed_in_trips: dict = {}

    def expr(self, atom_or_call):
        return self.printer.value(atom_or_call)

    def write_block(self, stmts, indent, freed=None):
        start = len(self.lines)
        following = self.facts.following(stmts, self.changed_by)
        freed = self.freed if stmts is self.fn.body else freed or {}
        for i, stmt in enumerate(stmts):
            self.statement(stmt, following.after(i), indent)
            if i in freed:
                self.add(indent, "code", stmt, f"del {', '.join(freed[i])}", FREED_NOTE)
        if len(self.lines) == start and not self.dry:
            self.lines.append((indent, "code", None, "", "pass", ""))

    def record(self, names):
        """Note that the statement being printed reads `names` (for lifetimes)."""
        self.reads_at.setdefault(id(self.slot), set()).update(names)

    def printed_reads(self, stmt):
        """Names a statement's printed text reads: its operands, and what the temporaries
        folded into it read."""
        names = set()
        for n in reads_of(stmt):
            names.add(n)
            if n in self.inlined:
                names |= self.folded_reads.get(n, set())
        return names

    def reads_with_folded(self, stmt):
        """Names a statement's printed expression reads, through the temporaries folded into it."""
        names = set()
        for n in reads_of(stmt):
            names |= self.folded_reads.get(n, {n})
        return names

    def foldable_into_next(self, stmt, rest):
        """A single-use temporary read later in this block, on the same line (or by an `if`),
        with nothing in between reassigning what it reads (a pop, an accumulator), and not
        so deeply nested already that folding it could never print on one line.

        `rest` says where `stmt` is in its block (`_Following.after`): the first statement
        after it that reads the temporary, that stops the search (a marker, a return), or
        that changes what it reads is looked up, not scanned for, so a block of n
        statements is printed in O(n log n) however far apart a temporary and its reader are."""
        following, i = rest
        # the same answer in the dry run and the printing (the folds do not depend on the
        # names printed): found once
        known = following.foldable.get(i)
        if known is not None and known[0] is stmt:
            return known[1]
        found = self._foldable(stmt, following, i)
        following.foldable[i] = (stmt, found)
        return found

    def _foldable(self, stmt, following, i):
        if stmt.target in self.protected or self.uses.get(stmt.target, 0) != 1:
            return False
        copy = isinstance(stmt.value, Var)  # a snapshot of a variable, `d_h_now = d_h`
        if not copy and not (isinstance(stmt.value, Call) and RULES[stmt.value.op].pure):
            return False
        if self.fold_depth(stmt) > _MAX_FOLD_DEPTH:
            return False
        reads = self.reads_with_folded(stmt)
        read_at = following.first("read", stmt.target, i)
        stop_at = following.first_stop(i)
        change_at = min((following.first("change", n, i) for n in reads), default=_NEVER)
        at = min(read_at, stop_at, change_at)
        if at == _NEVER:
            return False
        later = following.stmts[at]
        if at == stop_at:
            return isinstance(later, Return) and copy and stmt.target in reads_of(later)
        if at == read_at and stmt.target in reads_of(later):
            # a constant (`math.log(2.0)`) or a copy of a name (`v_now = v`) reads as well
            # in any line
            if (
                _line_of(later) == _line_of(stmt)
                or isinstance(later, (If, While))
                or not reads
                or copy
            ):
                return True
            # the next statement copies it into its variable (`d_h = d_h_1`) or adds it, an
            # adjoint's contribution, into its accumulator: one statement, as by hand
            return (
                at == i + 1
                and type(later) is Assign
                and (isinstance(later.value, Var) or "accumulate" in later.note.split(", "))
            )
        # read inside a nested block (keep it a name), or what it reads changes before
        return False

    def fold_depth(self, stmt) -> int:
        """How many operations deep `stmt`'s printed expression nests, through the
        temporaries folded into it (bounded: see _MAX_FOLD_DEPTH)."""
        return 1 + max(
            (self.fold_depths.get(n, 0) for n in reads_of(stmt) if n in self.inlined), default=0
        )

    def changed_by(self, stmt) -> set:
        """Names whose value `stmt` changes: what it assigns, and every name sharing memory
        with a buffer it writes in place (`np.exp(u, out=w)` changes w's views too)."""
        if type(stmt) is Assign and (type(stmt.value) is not Call or not stmt.value.kwargs):
            return {stmt.target}  # (the common case: no buffer written with out=)
        changed = set(writes_of(stmt))
        for buffer in _writes(stmt)[len(writes_of(stmt)) :]:
            changed |= self.sharing.get(buffer, {buffer})
        return changed

    def statement(self, stmt, rest, indent):
        if isinstance(stmt, _Break):  # printed for the loop holding it
            self.record(atom_vars(stmt.test))
            self.write(stmt, rest, indent)
            return
        outer, self.slot = self.slot, stmt
        try:
            self.write(stmt, rest, indent)
        finally:
            self.slot = outer

    def write(self, stmt, rest, indent):
        # (long: the printer's dispatch, one branch per statement kind, each a few lines)
        kind = type(stmt)  # (no statement class is subclassed: the common case first)
        if kind is not Assign and kind not in _NO_READS_RECORDED:
            self.record(self.printed_reads(stmt))
        if kind is Marker:
            self.section = "backward"
            self.printer.rule_code = True
            return
        if kind is Assign:
            if self.foldable_into_next(stmt, rest):
                self.fold_depths[stmt.target] = self.fold_depth(stmt)
                if self.fuse:  # (read only to fuse kernels)
                    self.elementwise_ops[stmt.target] = self.elementwise_count(stmt)
                self.folded_reads[stmt.target] = self.reads_with_folded(stmt)
                if self.dry:
                    self.inlined[stmt.target] = True
                    return
                self.inlined[stmt.target] = self.expr(stmt.value)
                self.folded[stmt.target] = (stmt, self.note_of(stmt))
                return
            if self.dry:
                # (a printing may split a long line into statements of its own: the same
                # names are read at this statement's slot, those of the split temporaries
                # besides, which are never lifetimes' candidates)
                self.record(self.printed_reads(stmt))
            else:
                self.emit_assign(stmt, indent)
            self.own_slot.add(stmt.target)
        elif self.dry and not isinstance(stmt, (If, For, While)):
            return
        elif isinstance(stmt, Return):
            self.add(
                indent,
                "return",
                None,
                _to_source(gast.Return(value=self.printer.atom(stmt.value))),
                "",
            )
        elif isinstance(stmt, Push):
            self.add(
                indent,
                "code",
                stmt,
                f"{self.fn.stack}.append({_expr_source(self.expr(stmt.value))})",
                "",
            )
        elif isinstance(stmt, Pop):
            self.add(indent, "code", stmt, f"{stmt.target} = {self.fn.stack}.pop()", "")
        elif isinstance(stmt, ExprStmt) and RULES[stmt.value.op].spelling.kind == "store":
            buffer, index, value = (
                _expr_source(self.printer.atom(a, in_index=i == 1))
                for i, a in enumerate(stmt.value.args)
            )
            self.add(indent, "code", stmt, f"{buffer}[{index}] = {value}", "")
        elif isinstance(stmt, ExprStmt):
            self.add(indent, "code", stmt, _expr_source(self.expr(stmt.value)), "")
        elif isinstance(stmt, If):
            if not self.dry:
                self.add(indent, "code", stmt, f"if {_expr_source(self.expr(stmt.test))}:", "")
            self.write_block(stmt.body, indent + 1)
            if stmt.orelse:
                if not self.dry:
                    self.lines.append((indent, "code", None, "", "else:", ""))
                self.write_block(stmt.orelse, indent + 1)
        elif isinstance(stmt, For):
            self.record(self.printed_reads(stmt))
            if not self.dry:
                self.add(indent, "code", stmt, self.for_header(stmt), "")
            body = stmt.body + (
                [_Break(Var(stmt.stop_flag), stmt.loc, when_true=True)] if stmt.stop_flag else []
            )
            self.write_block(body, indent + 1, self.freed_in_trips.get(id(stmt)))
        elif isinstance(stmt, While):
            self.while_(stmt, indent)
        elif isinstance(stmt, _Break):
            test = _expr_source(self.expr(stmt.test))
            self.lines.append(
                (
                    indent,
                    "code",
                    None,
                    "",
                    f"if {test}:" if stmt.when_true else f"if not {test}:",
                    "",
                )
            )
            self.lines.append((indent + 1, "code", None, "", "break", ""))
        else:
            raise AssertionError(stmt)

    def for_header(self, stmt):
        args = [stmt.start, stmt.stop, stmt.step]
        if stmt.step == Const(1):
            args = args[:2]
            if stmt.start == Const(0):
                args = args[1:]
        text = f"range({', '.join(_expr_source(self.expr(a)) for a in args)})"
        if stmt.reverse:
            text = f"reversed({text})"
        return f"for {stmt.target} in {text}:"

    def while_(self, stmt, indent):
        test_names = {s.target for s in stmt.test_body if isinstance(s, Assign)}
        simple = all(
            isinstance(s, Assign)
            and s.target not in self.protected
            and self.uses.get(s.target, 0) == 1
            and isinstance(s.value, Call)
            for s in stmt.test_body
        ) and (not isinstance(stmt.test, Var) or stmt.test.name in test_names or not stmt.test_body)
        self.record(self.printed_reads(stmt))
        if simple:
            for s in stmt.test_body:
                self.record(self.printed_reads(s))  # printed in the header
                self.inlined[s.target] = True if self.dry else self.expr(s.value)
            if not self.dry:
                self.add(indent, "code", stmt, f"while {_expr_source(self.expr(stmt.test))}:", "")
            self.write_block(stmt.body, indent + 1)
            return
        if not self.dry:
            self.add(indent, "code", stmt, "while True:", "")
        self.write_block(stmt.test_body + [_Break(stmt.test, stmt.loc)] + stmt.body, indent + 1)

    def note_of(self, stmt):
        return merge_notes(
            *[self.folded[n][1] for n in reads_of(stmt) if n in self.folded], stmt.note
        )

    def render_assign(self, stmt):
        value = stmt.value
        in_place = self.in_place(stmt)
        if in_place is not None:
            return in_place
        if isinstance(value, Call) and RULES[value.op].spelling.kind == "augassign":
            return self.aug_assign(stmt, RULES[value.op].spelling.text, value.args[1])
        if (
            isinstance(value, Call)
            and self.printer.rule_code
            and stmt.target in self.printer.scalars
            and RULES[value.op].spelling.kind == "binop"
            and len(value.args) == 2
        ):
            # a Python float's update, `dc = dc - d_a * v`, as one writes it: `dc -= d_a * v`
            # (floats are immutable: the same statement); an array's `a = a + b` makes a
            # new array, which `a += b` would not
            first, text = value.args[0], RULES[value.op].spelling.text
            if (
                text in "+-*/"
                and isinstance(first, Var)
                and first.name not in self.inlined
                and self.printed.get(first.name, first.name) == self.target(stmt)
            ):
                return self.aug_assign(stmt, text, value.args[1])
        if isinstance(value, Call) and RULES[value.op].spelling.kind == "augassign_item":
            buffer, index, part = value.args
            assert buffer == Var(stmt.target), "an item update assigns the array it updates"
            item = gast.Subscript(
                value=_name(stmt.target),
                ctx=gast.Store(),
                slice=self.printer.atom(index, in_index=True),
            )
            op = _BINOP_NODES[RULES[value.op].spelling.text]()
            return _to_source(gast.AugAssign(target=item, op=op, value=self.printer.atom(part)))
        return _to_source(_assign(self.target(stmt), self.expr(value)))

    def in_place(self, stmt):
        """`d_v *= v_9` for `d_v = np.multiply(d_v, v_9, out=d_v)`, and a bare call for other
        results computed into the buffer of the name they are printed as: nothing to bind."""
        value = stmt.value
        if not (
            isinstance(value, Call)
            and len(value.kwargs) == 1
            and value.kwargs[0][0] == "out"
            and isinstance(value.kwargs[0][1], Var)
        ):
            return None
        buffer = value.kwargs[0][1].name
        if self.printed.get(buffer, buffer) != self.target(stmt):
            return None
        operator = _IN_PLACE_OPERATORS.get(RULES[value.op].fn)
        first = value.args[0] if value.args else None
        if (
            operator is not None
            and isinstance(first, Var)
            and first.name not in self.inlined
            and self.printed.get(first.name, first.name) == self.target(stmt)
        ):
            return self.aug_assign(stmt, operator, value.args[1])
        return _expr_source(self.expr(value))

    def aug_assign(self, stmt, operator, operand) -> str:
        """`target op= operand` for the name `stmt` assigns."""
        name = gast.Name(id=self.target(stmt), ctx=gast.Store(), annotation=None, type_comment=None)
        return _to_source(
            gast.AugAssign(
                target=name, op=_BINOP_NODES[operator](), value=self.printer.atom(operand)
            )
        )

    def target(self, stmt) -> str:
        return self.printed.get(stmt.target, stmt.target)

    def elementwise_count(self, stmt):
        """How many elementwise operations the statement's printed expression holds (0: not a
        purely elementwise expression)."""
        value = stmt.value
        if not isinstance(value, Call):
            return 0
        rule = RULES[value.op]
        if rule.kind != "elementwise" or rule.spelling.kind not in ("binop", "unaryop", "func"):
            return 0
        count = 1
        for n in reads_of(stmt):
            if n in self.inlined:
                inner = self.elementwise_ops.get(n, 0)
                if not inner:
                    return 0
                count += inner
        return count

    def fused(self, stmt):
        """For CuPy: `target = kernel(leaves...)` with the expression in a `cupy.fuse` kernel."""
        if not self.fuse or not isinstance(stmt.value, Call) or self.elementwise_count(stmt) < 2:
            return None
        expression = self.expr(stmt.value)
        leaves = sorted(
            {
                n.id
                for n in gast.walk(expression)
                if isinstance(n, gast.Name) and n.id != self.printer.backend.alias
            }
        )
        if not any(leaf in self.arrays for leaf in leaves):
            return None  # numbers: nothing to fuse on a GPU
        name = f"fused_{stmt.target}"
        taken = {k[0] for k in self.kernels}
        base, i = name, 1
        while name in taken:
            name, i = f"{base}_{i}", i + 1
        self.kernels.append((name, leaves, expression))
        return f"{self.target(stmt)} = {name}({', '.join(leaves)})"

    def emit_assign(self, stmt, indent):
        note = self.note_of(stmt)
        fused = self.fused(stmt)
        if fused is not None:
            self.record(self.printed_reads(stmt))
            self.add(indent, "code", stmt, fused, note)
            return
        code = self.render_assign(stmt)
        while len(code) + 4 * (indent + 1) > MAX_LINE:
            children = [n for n in reads_of(stmt) if n in self.inlined and n in self.folded]
            if not children:
                break
            # too long: print the biggest folded operand as a statement of its own
            child = max(children, key=lambda n: len(_to_source(self.inlined[n])))
            del self.inlined[child]
            child_stmt, _ = self.folded.pop(child)
            self.emit_assign(child_stmt, indent)
            note = self.note_of(stmt)
            code = self.render_assign(stmt)
        self.record(self.printed_reads(stmt))
        if code == f"{self.target(stmt)} = {self.target(stmt)}":
            return  # a copy folded into the name it copies (`dxs = dxs`): nothing to print
        value = stmt.value
        if isinstance(value, Var) and value.name in self.folded:
            # a value copied into its variable (`d_h = 2.0 * h`) is under its own line
            stmt = self.folded[value.name][0]
        self.add(indent, "code", stmt, code, note)

    def add(self, indent, kind, stmt, code, note):
        loc = getattr(stmt, "loc", None)
        if self.printer.dot_used and not self.dot_noted:
            self.dot_noted = True  # said once, before the first line that does it
            self.lines.append(
                (
                    indent,
                    "comment",
                    _comment_key(self.section, loc),
                    loc.text if loc else "",
                    _DOT_NOTE,
                    "",
                )
            )
        self.lines.append(
            (indent, kind, _comment_key(self.section, loc), loc.text if loc else "", code, note)
        )

    def render(self) -> str:
        out = []
        previous = {}
        block: list = []

        def flush():
            if not block:
                return
            # notes aligned in a block, except lines the note would take past MAX_LINE:
            # their note is a comment line above them
            fits = [len(pad) + len(code) + len(note) + 4 <= MAX_LINE for pad, code, note in block]
            width = min(
                max(
                    (len(code) for (_, code, note), ok in zip(block, fits) if ok and note),
                    default=0,
                ),
                56,
            )
            for (pad, code, note), ok in zip(block, fits):
                if not note:
                    out.extend(_broken(pad, code))
                elif not ok:
                    out.append(f"{pad}# {note}")
                    out.extend(_broken(pad, code))
                elif len(pad) + width + len(note) + 4 <= MAX_LINE:
                    out.append(f"{pad}{code.ljust(width)}  # {note}")
                else:
                    out.append(f"{pad}{code}  # {note}")
            block.clear()

        if self.uses_stack:
            out.append(
                f"    {self.fn.stack} = []  # values the backward pass needs that the "
                "forward overwrites"
            )
        for indent, kind, key, text, code, note in self.lines:
            pad = "    " * (indent + 1)
            if key is not None and kind != "return" and previous.get(indent) != key:
                flush()
                section, line, _ = key
                label = f"line {line}" if section == "forward" else f"backward of line {line}"
                out.append(
                    textwrap.indent(
                        comment_lines(f"{label}: {text.strip()}", MAX_LINE - len(pad)), pad
                    )
                )
                previous[indent] = key
                for deeper in [k for k in previous if k > indent]:
                    del previous[deeper]
            if kind == "comment":
                flush()
                out.append(f"{pad}{code}")
                continue
            if kind == "return" or code.endswith(":") or code in ("pass", "else:"):
                flush()
                out.extend(_broken(pad, code))
                if code.endswith(":"):
                    for deeper in [k for k in previous if k > indent]:
                        del previous[deeper]
                    if key is not None:
                        # the body's statements of the header's own line (a while loop's
                        # trip count) are under the comment printed before the header
                        previous[indent + 1] = key
                continue
            block.append((pad, code, note))
        flush()
        return "\n".join(out) + "\n"


def _broken(pad, code):
    """`code` at indentation `pad` as the lines black breaks it into (one when it fits)."""
    if len(pad) + len(code) <= MAX_LINE:
        return (pad + code,)
    return linebreak.split(code, len(pad) // 4)


# A folded expression nests at most this many operations: each prints at least a few
# characters, so a deeper one can never fit in MAX_LINE and would be split again anyway. It
# bounds the depth of the trees astor prints and Python compiles (a sum of a weight's
# contributions from thousands of statements, folded whole, is thousands of levels deep:
# RecursionError in astor and in compile()), and of emit_assign's splitting.
_MAX_FOLD_DEPTH = 24
_NEVER = float("inf")


class _Following:
    """Where, after each statement of a block, the statements that end a temporary's fold
    search are: an index built on first use, per name, of the positions of the statements
    reading it or changing its value (nested statements counted at the position of the
    compound statement holding them), and of the markers and returns."""

    def __init__(self, stmts, changed_by):
        self.stmts = stmts
        self.changed_by = changed_by
        self.read_at = self.change_at = self.stops = None
        self.foldable: dict = {}  # position -> (the statement, whether it folds into a reader)

    def after(self, i):
        return self, i

    def _build(self):
        self.read_at, self.change_at, self.stops = {}, {}, []
        for p, stmt in enumerate(self.stmts):
            if isinstance(stmt, (Marker, Return)):
                self.stops.append(p)
            for s in walk([stmt]) if type(stmt) in (If, For, While) else (stmt,):
                for n in reads_of(s):
                    _note(self.read_at, n, p)
                for n in self.changed_by(s):
                    _note(self.change_at, n, p)

    def first(self, kind, name, i):
        """The first position after i of a statement that reads (`kind` "read") or changes
        ("change") `name`; _NEVER if there is none."""
        if self.stops is None:
            self._build()
        at = (self.read_at if kind == "read" else self.change_at).get(name)
        if not at:
            return _NEVER
        k = bisect.bisect_right(at, i)
        return at[k] if k < len(at) else _NEVER

    def first_stop(self, i):
        if self.stops is None:
            self._build()
        k = bisect.bisect_right(self.stops, i)
        return self.stops[k] if k < len(self.stops) else _NEVER


def _note(index, name, p):
    at = index.setdefault(name, [])
    if not at or at[-1] != p:
        at.append(p)


@dataclass
class _Break:
    """`if not test: break` inside a `while True:` loop (a while whose test needs statements),
    or `if test: break` at the end of a loop with a stop flag."""

    test: object
    loc: object = None
    when_true: bool = False


# the note of `del h`: a large array read no more (lifetimes.freed_after_last_use)
FREED_NOTE = "read no more: the memory goes back now"

# statements whose reads `write` records itself, where it prints them (or not at all)
_NO_READS_RECORDED = frozenset((Assign, _Break, For, While))


def _trip_loops(fn) -> list:
    """The top-level loops whose trips reuse buffers and free arrays as straight-line code
    does (optimize.memory.reuse_dead_buffers, lifetimes.freed_after_last_use)."""
    return [s for s in fn.body if type(s) is For and not s.stop_flag]


def generate(fn, info: SourceInfo, backend: Backend = BACKENDS["numpy"]) -> str:
    """The source of a module that defines `fn` (see the module docstring)."""
    return generate_module([fn], info, backend)


def generate_module(fns, info: SourceInfo, backend: Backend = BACKENDS["numpy"]) -> str:
    """The source of a module defining each function of `fns` (a VJP's forward and backward)."""
    backend = _unshadowed(backend, fns)
    printer = Printer(backend, {})
    kernels, bodies = [], []
    for fn in fns:
        # a dry run finds where each name is read: print with dead arrays' names shared
        # (not the forward's values: `g.saved` names each as the source does; sharing a dead
        # one's name with the next, `v_1 = np.exp(v_1)`, was measured: <1% on small arrays)
        dry = _Writer(fn, backend, info.arrays, info.scalars, None, info.matrices, dry=True)
        dry.write_block(fn.body, 0)
        candidates = {
            n
            for n in dry.own_slot
            if n in dry.arrays and n not in dry.protected and n not in info.forward_names
        }
        printed = in_place_names(fn, shared_names(fn, candidates, dry.reads_at), fn.user_names)
        for loop in _trip_loops(fn):  # (a trip's buffers too: optimize.memory reuses them)
            printed = in_place_names(replace(fn, body=loop.body), printed, fn.user_names)
        writer = _Writer(fn, backend, info.arrays, info.scalars, printed, info.matrices, dry.facts)
        # a backward handed its residuals (`SourceInfo.hands_over`): they are its own
        handed = fn.params[:-1] if info.hands_over and fn is fns[-1] and len(fns) == 2 else []
        writer.freed, writer.freed_in_trips = _freed(fn, info, dry, printed, handed)
        writer.write_block(fn.body, 0)
        unwrapped = [p for p in info.unwrapped if p in fn.params]
        many = len(unwrapped) > 1
        unwrap = (
            ""
            if not unwrapped
            else f"    {', '.join(unwrapped)} = {', '.join(p + '[()]' for p in unwrapped)}  "
            + (
                "# 0-d arrays as numpy scalars: their arithmetic is ~8x cheaper\n"
                if many
                else "# a 0-d array as a numpy scalar: its arithmetic is ~8x cheaper\n"
            )
        )
        params = fn.params
        if handed:
            params, taking = _handed_over(fn, handed)
            unwrap = taking + unwrap
        signature = "\n".join(linebreak.split(f"def {fn.name}({', '.join(params)}):", 0))
        bodies.append(signature + "\n" + unwrap + writer.render())
        kernels.extend(writer.kernels)
        printer.helpers |= writer.printer.helpers
        printer.modules |= writer.printer.modules
        printer.uses_backend |= writer.printer.uses_backend or bool(writer.kernels)
    fused = "".join(
        f"@{backend.alias}.fuse()\n"
        + "\n".join(linebreak.split(f"def {name}({', '.join(params)}):", 0))
        + "\n"
        + "\n".join(linebreak.split(f"return {_expr_source(expression)}", 1))
        + "\n\n\n"
        for name, params, expression in kernels
    )
    if fused:
        fused = "# elementwise runs fused into one CuPy kernel each\n" + fused
    return _header(info, fns, backend, printer) + fused + "\n\n".join(bodies)


def _freed(fn, info, dry, printed, handed):
    """(freed, freed_in_trips) of a `_Writer` printing `fn`: the arrays deleted after their
    last use at the top level, and in each trip of a top-level loop (`_trip_loops`). Those
    of at least FREE_MIN_BYTES; in a backward `handed` its residuals, every array, them
    included: the memory goes back while it runs, for its own arrays to reuse, where the
    residuals all held to its end made the heap grow past them every call."""
    at_top = info.arrays & (dry.own_slot | set(handed)) if handed else info.large & dry.own_slot
    freed = freed_after_last_use(
        fn,
        at_top,
        dry.own_slot,
        dry.reads_at,
        printed,
        dry.sharing,
        [n for n in handed if n in info.arrays],
    )
    trip_loops = {id(loop) for loop in _trip_loops(fn)}
    in_trips = {
        id(loop): freed_after_last_use(
            replace(
                fn,
                body=loop.body,
                params=[
                    *fn.params,
                    *sorted(trip_outliving(loop, fn.body[:i] + fn.body[i + 1 :])),
                ],
            ),
            info.large & dry.own_slot,
            dry.own_slot,
            dry.reads_at,
            printed,
            dry.sharing,
        )
        for i, loop in enumerate(fn.body)
        if id(loop) in trip_loops  # (by identity: `in` compares statements field by field)
    }
    return freed, in_trips


def _handed_over(fn, handed):
    """(parameters, first lines) of a backward handed its residuals `handed` in one list,
    which it empties: then each array goes when the backward frees it, not when it returns
    (its caller holds the list, where it would hold each argument)."""
    taken = set(fn.params) | {n for stmt in walk(fn.body) for n in writes_of(stmt)} | set(fn.free)
    name = "residuals"
    while name in taken:
        name += "_"
    lines = [
        "    # the residuals, from the list the caller hands over: emptied, so that each array",
        "    # is freed after its last use (`del`)",
        "    (",
        *(f"        {n}," for n in handed),
        f"    ) = {name}",
        f"    {name}.clear()",
    ]
    return [name, *fn.params[len(handed) :]], "\n".join(lines) + "\n"


def _unshadowed(backend, fns) -> Backend:
    """`backend`, its alias changed (`da_`) where the functions name something else so (a
    parameter or variable `da`, a global `cp` that is not CuPy): the import would shadow it,
    or it the module."""
    taken = (
        {n for fn in fns for n in fn.params}
        | {n for fn in fns for stmt in walk(fn.body) for n in writes_of(stmt)}
        | {
            n
            for fn in fns
            for n, v in fn.free.items()
            if getattr(v, "__name__", None) != backend.module
        }
    )
    alias = backend.alias
    while alias in taken:
        alias += "_"
    return backend if alias == backend.alias else replace(backend, alias=alias)


def _writes(stmt):
    """Names a statement assigns, and the buffers it writes in place (`out=`)."""
    value = getattr(stmt, "value", None)
    buffers = (
        [a.name for k, a in value.kwargs if k == "out" and isinstance(a, Var)]
        if isinstance(value, Call)
        else []
    )
    return writes_of(stmt) + buffers


def _memory_sharing(body) -> dict:
    """name -> the names that may share its memory: views of it (`x.T`, `x[1:]`), views
    of those, and copies of the name (`y = x`), both ways."""
    group: dict = {}
    for stmt in walk(body):
        if not isinstance(stmt, Assign):
            continue
        value = stmt.value
        sources = [value] if isinstance(value, Var) else memory_sources(value)
        for source in sources:
            merged = group.get(source.name, {source.name}) | group.get(stmt.target, {stmt.target})
            for name in merged:
                group[name] = merged
    return group


def _buffers_made(body) -> set:
    """Names of the arrays the optimizer allocates (`rows = np.empty((T, 16))`): arrays,
    though the signature's abstract values never saw them."""
    return {
        s.target
        for s in walk(body)
        if isinstance(s, Assign)
        and isinstance(s.value, Call)
        and s.value.op in _ALLOCATIONS
        and s.value.args
        and isinstance(s.value.args[0], Tup)
        and s.value.args[0].items
    }


_ALLOCATIONS = ("np_empty", "np_zeros", "np_ones")


def _matrices_made(body, matrices) -> frozenset:
    """`matrices` and the small arrays of one or two dimensions the optimizer makes: row
    buffers of a known size (`np.empty((8, 16))`), their transposes and copies."""
    made = set(matrices)
    for s in walk(body):
        if not isinstance(s, Assign):
            continue
        value = s.value
        if isinstance(value, Var) and value.name in made:
            made.add(s.target)
        elif (
            isinstance(value, Call)
            and value.op in _ALLOCATIONS
            and value.args
            and isinstance(value.args[0], Tup)
            and len(value.args[0].items) in (1, 2)
            and all(isinstance(d, Const) for d in value.args[0].items)
            and math.prod(d.value for d in value.args[0].items) <= DOT_MAX_SIZE
        ):
            made.add(s.target)
        elif (
            isinstance(value, Call)
            and value.op == "T"
            and isinstance(value.args[0], Var)
            and value.args[0].name in made
        ):
            made.add(s.target)
    return frozenset(made)


def _line_of(stmt):
    return stmt.loc.line if getattr(stmt, "loc", None) else None


def _header(info, fns, backend, printer) -> str:
    wrt = ", ".join(info.wrt)
    origin = f"# Generated by sourcegrad from {_relative(info.file)}:{info.function},"
    what = f"{info.what} with respect to {wrt}."
    lines = [
        f"{origin} {what}"
        if len(origin) + len(what) < MAX_LINE
        else origin + "\n" + comment_lines(what, MAX_LINE - 2).replace("# ", "#   ", 1)
    ]
    if info.traced:  # (which lines were traced, and why: the manifest's `traced` too)
        lines.append(comment_lines(f"Traced (run on traced values): {info.traced}", MAX_LINE))
    if printer.uses_backend:
        lines.append(
            f"import {backend.module} as {backend.alias}"
            if backend.alias != backend.module
            else f"import {backend.module}"
        )
    for module in sorted(printer.modules):
        lines.append(f"import {module}")
    if printer.helpers:
        lines.extend(
            linebreak.split(
                f"from sourcegrad.runtime import {', '.join(sorted(printer.helpers))}", 0
            )
        )
    read = {n for fn in fns for stmt in walk(fn.body) for n in reads_of(stmt)}
    free = sorted(n for n in fns[0].free if n in read)  # (a decided branch's may go unread)
    if free:
        lines.append(
            f"# {', '.join(free)}: bound from {info.function}'s globals and closure when loaded"
        )
    return "\n".join(lines) + "\n\n\n"


def _comment_key(section, loc):
    """What a statement's line comment says: one comment per run of statements that say the
    same (a line's own text, or one a pass extended with a note, as checkpointing does)."""
    return (section, loc.line, loc.text) if loc else None


def comment_lines(text: str, width: int = MAX_LINE) -> str:
    """`text` as comment lines of at most `width` characters (the later ones indented)."""
    return (
        "\n".join(
            textwrap.wrap(
                text,
                width,
                initial_indent="# ",
                subsequent_indent="#   ",
                break_on_hyphens=False,
                break_long_words=False,
            )
        )
        or "#"
    )


def load(source: str, name: str, free: dict):
    """Compile `source` into a new module whose file is the source itself."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<sourcegrad:{name}:{digest}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    module = types.ModuleType(f"sourcegrad_generated.{name}")
    module.__file__ = filename
    module.__dict__.update(free)
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except ModuleNotFoundError as missing:
        library = _OPTIONAL_LIBRARIES.get((missing.name or "").split(".")[0])
        if library is None:
            raise
        # CuPy (Dask) code can be generated and shown without CuPy (Dask); only running it
        # needs the library
        module.__getattr__ = functools.partial(_needs_library, name, *library)
    return module


# the array libraries of the optional backends: (what it is called, how to install it)
_OPTIONAL_LIBRARIES = {
    "cupy": ("CuPy", "pip install cupy-cuda12x"),
    "dask": ("Dask", 'pip install "sourcegrad[dask]"'),
}


def _needs_library(module_name, library, install, attr):
    def unrunnable(*args, **kwargs):
        raise errors.SourcegradError(
            f"{module_name} is {library} code and {library} is not "
            f"installed: it can be shown but not run ({install})"
        )

    return unrunnable


__all__ = ["generate", "generate_module", "load", "BACKENDS", "SourceInfo"]
