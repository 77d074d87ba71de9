"""Code generation: an optimized `ir.Function` -> Python source -> a loaded module.

`generate(fn, info, backend)` returns the source text of a module defining one
function: the imports it needs (its array namespace, at most a few
`sourcegrad.runtime` helpers), then the function, with a comment before each
group of statements naming the user line it computes (`# line 7: ...`) or
differentiates (`# backward of line 7`), and the rules behind each backward
statement as a trailing comment. Temporaries read exactly once are folded back
into the expression that reads them, so the code reads like nested maths
rather than like A-normal form. Statements are printed with astor.

`load(source, name, free)` compiles the source into a fresh module whose file
*is* that source (it is registered with linecache), so tracebacks, pdb and
`inspect.getsource` show generated lines.

Everything here is deterministic: the same IR gives byte-identical text.
"""
from __future__ import annotations

import hashlib
import linecache
import os
import types
from dataclasses import dataclass

import astor
import gast

from .ir import Assign, Call, Const, Return, Slc, Tup, Var, reads_of
from .rules import RULES

MAX_LINE = 88


@dataclass(frozen=True)
class Backend:
    name: str
    module: str  # what to import
    alias: str   # what generated code calls it


BACKENDS = {"numpy": Backend("numpy", "numpy", "np"), "cupy": Backend("cupy", "cupy", "cp")}


@dataclass(frozen=True)
class SourceInfo:
    """What the header says the code was generated from."""

    file: str
    function: str
    wrt: tuple
    forward_names: frozenset  # values computed by the user's own statements


def _name(ident):
    return gast.Name(id=ident, ctx=gast.Load(), annotation=None, type_comment=None)


def _attr(value, attr):
    return gast.Attribute(value=value, attr=attr, ctx=gast.Load())


class Printer:
    """Turns IR expressions into gast expression trees for one backend."""

    def __init__(self, backend: Backend, inlined: dict):
        self.backend = backend
        self.inlined = inlined  # temp name -> gast expression folded in place of the name
        self.helpers: set = set()
        self.modules: set = set()

    def atom(self, atom, in_index=False):
        if isinstance(atom, Var):
            return self.inlined.get(atom.name) or _name(atom.name)
        if isinstance(atom, Tup):
            return gast.Tuple(elts=[self.atom(a, in_index) for a in atom.items], ctx=gast.Load())
        if isinstance(atom, Slc):
            parts = [None if isinstance(p, Const) and p.value is None else self.atom(p)
                     for p in (atom.lower, atom.upper, atom.step)]
            if in_index:
                return gast.Slice(lower=parts[0], upper=parts[1], step=parts[2])
            return gast.Call(func=_name("slice"), args=[p or gast.Constant(None, None)
                                                        for p in parts], keywords=[])
        return self.const(atom.value, in_index)

    def const(self, value, in_index=False):
        if isinstance(value, slice):
            parts = [None if v is None else self.const(v) for v in
                     (value.start, value.stop, value.step)]
            if in_index:
                return gast.Slice(lower=parts[0], upper=parts[1], step=parts[2])
            # outside a subscript an index is spelled np.s_[...]
            return gast.Subscript(value=_attr(_name(self.backend.alias), "s_"),
                                  slice=gast.Slice(lower=parts[0], upper=parts[1], step=parts[2]),
                                  ctx=gast.Load())
        if isinstance(value, tuple):
            if not in_index and any(isinstance(v, slice) or v is Ellipsis for v in value):
                return gast.Subscript(value=_attr(_name(self.backend.alias), "s_"),
                                      slice=self.const(value, True), ctx=gast.Load())
            return gast.Tuple(elts=[self.const(v, in_index) for v in value], ctx=gast.Load())
        if isinstance(value, list):
            return gast.List(elts=[self.const(v) for v in value], ctx=gast.Load())
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return gast.UnaryOp(op=gast.USub(), operand=gast.Constant(-value, None))
        return gast.Constant(value, None)

    def call(self, call: Call):
        rule = RULES[call.op]
        sp = rule.spelling
        args = [self.atom(a) for a in call.args]
        keywords = [gast.keyword(arg=k, value=self.atom(a)) for k, a in call.kwargs]
        if sp.kind == "binop":
            return gast.BinOp(left=args[0], op=_BINOP_NODES[sp.text](), right=args[1])
        if sp.kind == "compare":
            return gast.Compare(left=args[0], ops=[_COMPARE_NODES[sp.text]()],
                                comparators=[args[1]])
        if sp.kind == "unaryop":
            return gast.UnaryOp(op=gast.USub() if sp.text == "-" else gast.UAdd(), operand=args[0])
        if sp.kind == "attr":
            return _attr(args[0], sp.text)
        if sp.kind == "getitem":
            return gast.Subscript(value=args[0], slice=self.atom(call.args[1], in_index=True),
                                  ctx=gast.Load())
        if rule.sequence_input:
            args = [gast.List(elts=args, ctx=gast.Load())]
        if sp.kind == "func":
            func = _attr(_name(self.backend.alias), sp.text)
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


_BINOP_NODES = {"+": gast.Add, "-": gast.Sub, "*": gast.Mult, "/": gast.Div, "**": gast.Pow,
                "@": gast.MatMult, "%": gast.Mod, "//": gast.FloorDiv}
_COMPARE_NODES = {"<": gast.Lt, "<=": gast.LtE, ">": gast.Gt, ">=": gast.GtE, "==": gast.Eq,
                  "!=": gast.NotEq}


def _to_source(node) -> str:
    # astor's default pretty-printer wraps long lines at arbitrary points; statements here
    # are kept short by folding fewer temporaries instead
    return astor.to_source(gast.gast_to_ast(node),
                           pretty_source=lambda parts: "".join(parts)).rstrip("\n")


def _assign(target, expr):
    return gast.Assign(targets=[gast.Name(id=target, ctx=gast.Store(), annotation=None,
                                          type_comment=None)], value=expr, type_comment=None)


def _use_counts(body):
    counts: dict = {}
    for stmt in body:
        for n in reads_of(stmt):
            counts[n] = counts.get(n, 0) + 1
    return counts


def _relative(path):
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return os.path.basename(path)
    return os.path.basename(path) if rel.startswith("..") else rel


def generate(fn, info: SourceInfo, backend: Backend = BACKENDS["numpy"]) -> str:
    """The source of a module that defines `fn` (see the module docstring)."""
    body = fn.body
    counts = _use_counts(body)
    protected = set(fn.params) | set(fn.user_names)
    section_of = {s.target: "forward" if s.target in info.forward_names else "backward"
                  for s in body if isinstance(s, Assign)}
    readers = {}
    for stmt in body:
        for n in reads_of(stmt):
            readers.setdefault(n, stmt)

    inlined: dict = {}   # temp -> expression folded into its one reader
    folded: dict = {}    # temp -> (statement, note), to print it after all if the reader is long
    printer = Printer(backend, inlined)
    lines_out: list = []  # (section, line, text, code, note)

    def emit_line(stmt, note):
        code = _to_source(_assign(stmt.target, printer.value(stmt.value)))
        while len(code) + 4 > MAX_LINE:
            children = [n for n in reads_of(stmt) if n in inlined]
            if not children:
                break
            # too long: print the biggest folded operand as a statement of its own
            child = max(children, key=lambda n: len(_to_source(inlined[n])))
            del inlined[child]
            child_stmt, _ = folded.pop(child)
            emit_line(child_stmt, _merge_notes(
                [folded[n][1] for n in reads_of(child_stmt) if n in folded] + [child_stmt.note]))
            note = _merge_notes([folded[n][1] for n in reads_of(stmt) if n in folded]
                                + [stmt.note])
            code = _to_source(_assign(stmt.target, printer.value(stmt.value)))
        lines_out.append((section_of[stmt.target], _line_of(stmt),
                          stmt.loc.text if stmt.loc else "", code, note))

    for stmt in body:
        if isinstance(stmt, Return):
            lines_out.append(("return", None, "", _to_source(gast.Return(
                value=printer.atom(stmt.value))), ""))
            continue
        note = _merge_notes([folded[n][1] for n in reads_of(stmt) if n in folded] + [stmt.note])
        reader = readers.get(stmt.target)
        if (stmt.target not in protected and counts.get(stmt.target, 0) == 1
                and isinstance(stmt.value, Call) and reader is not None
                and section_of.get(getattr(reader, "target", None), "return")
                == section_of[stmt.target] and _line_of(reader) == _line_of(stmt)):
            inlined[stmt.target] = printer.value(stmt.value)
            folded[stmt.target] = (stmt, note)
            continue
        emit_line(stmt, note)

    return _header(info, fn, backend, printer) + _function_source(fn, lines_out)


def _line_of(stmt):
    return stmt.loc.line if getattr(stmt, "loc", None) else None


def _merge_notes(parts):
    seen = []
    for part in parts:
        for p in part.split(", "):
            if p and p not in seen:
                seen.append(p)
    return ", ".join(seen)


def _function_source(fn, lines_out) -> str:
    out = [f"def {fn.name}({', '.join(fn.params)}):"]
    previous = None
    block: list = []

    def flush():
        if not block:
            return
        width = min(max(len(code) for code, _ in block), 56)
        for code, note in block:
            if note:
                out.append(f"    {code.ljust(width)}  # {note}")
            else:
                out.append(f"    {code}")
        block.clear()

    for section, line, text, code, note in lines_out:
        key = (section, line)
        if key != previous and section != "return":
            flush()
            if section == "forward":
                out.append(f"    # line {line}: {text.strip()}")
            else:
                out.append(f"    # backward of line {line}: {text.strip()}" if line else
                           "    # inputs that do not reach the output")
            previous = key
        if section == "return":
            flush()
        block.append((code, note))
    flush()
    return "\n".join(out) + "\n"


def _header(info, fn, backend, printer) -> str:
    wrt = ", ".join(info.wrt)
    lines = [f"# Generated by sourcegrad from {_relative(info.file)}:{info.function}, "
             f"gradient with respect to {wrt}.",
             f"import {backend.module} as {backend.alias}" if backend.alias != backend.module
             else f"import {backend.module}"]
    for module in sorted(printer.modules):
        lines.append(f"import {module}")
    if printer.helpers:
        lines.append(f"from sourcegrad.runtime import {', '.join(sorted(printer.helpers))}")
    if fn.free:
        lines.append(f"# {', '.join(sorted(fn.free))}: bound from {info.function}'s globals "
                     "and closure when loaded")
    return "\n".join(lines) + "\n\n\n"


def load(source: str, name: str, free: dict):
    """Compile `source` into a new module whose file is the source itself."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<sourcegrad:{name}:{digest}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    module = types.ModuleType(f"sourcegrad_generated.{name}")
    module.__file__ = filename
    module.__dict__.update(free)
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


__all__ = ["generate", "load", "BACKENDS", "SourceInfo"]
