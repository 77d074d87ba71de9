"""Finding and parsing a function's source: `parse(fn)` (a def) and `parse_lambda(fn)`
(a lambda, told apart from others on its line by its code object's positions).

Takes a Python function; gives a `ParsedFunction` (its gast tree, file, first line, lines).
"""

from __future__ import annotations

import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass

import gast

from ... import errors
from ...errors import SourceLocation


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


def function_run_by(fn):
    """The Python function whose code runs when `fn` is called: `fn` itself, or the function
    a `sourcegrad.checkpoint` holds (which calls it and nothing else).

    Not `inspect.unwrap`: a wrapper made with `functools.wraps` names in `__wrapped__` the
    function it calls, not what it does with its arguments and result (`return k * f(x)`);
    differentiating the wrapped function would silently drop the wrapper's part."""
    while getattr(fn, "_sourcegrad_checkpoint", False):
        fn = fn.__wrapped__
    return fn


def parse(fn) -> ParsedFunction:
    """Parse `fn`'s source. Works for module-level, nested and decorated functions (a
    decorated function is the wrapper the decorator returned: its own code is read)."""
    fn = function_run_by(fn)
    if not isinstance(fn, types.FunctionType):
        raise errors.SourceNotFoundError(
            f"{fn!r} is not a Python function with source; sourcegrad differentiates functions "
            "written in Python (register a rule for a builtin or numpy function)"
        )
    if fn.__code__.co_name == "<lambda>":
        return parse_lambda(fn)
    try:
        # (of the code object: inspect.getsourcelines(fn) follows __wrapped__)
        source_lines, first_line = inspect.getsourcelines(fn.__code__)
    except (OSError, TypeError) as exc:
        raise errors.SourceNotFoundError(
            f"the source of {fn.__qualname__} is not available ({exc}); functions defined with "
            "exec() or typed at the interactive prompt cannot be differentiated. Put it in a file."
        )
    file = inspect.getsourcefile(fn.__code__) or fn.__code__.co_filename
    module = gast.parse(textwrap.dedent("".join(source_lines)))
    tree = module.body[0]
    if isinstance(tree, gast.AsyncFunctionDef):
        raise errors.UnsupportedSyntaxError(
            f"{fn.__qualname__} is an async function; only plain functions can be differentiated",
            ParsedFunction(
                fn, tree, inspect.getsourcefile(fn.__code__) or "", first_line, source_lines
            ).loc(tree),
        )
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
        file = inspect.getsourcefile(fn.__code__) or code.co_filename
    except TypeError:
        file = code.co_filename
    lines = linecache.getlines(file, fn.__globals__)
    line = code.co_firstlineno
    if not lines:
        raise errors.SourceNotFoundError(
            f"the source of a lambda ({file}, line {line}) is not available; lambdas made with "
            "exec() or typed at the interactive prompt cannot be differentiated. Put it in a "
            "file."
        )
    text = lines[line - 1].rstrip("\n") if 0 < line <= len(lines) else ""
    here = SourceLocation(file, line, 0, text)
    try:
        module = gast.parse("".join(lines))
    except SyntaxError as exc:
        raise errors.SourceNotFoundError(f"the file of a lambda does not parse ({exc})", here)
    names = {}
    for node in gast.walk(module):
        if (
            isinstance(node, gast.Assign)
            and isinstance(node.value, gast.Lambda)
            and len(node.targets) == 1
            and isinstance(node.targets[0], gast.Name)
        ):
            names[id(node.value)] = node.targets[0].id
    params = list(code.co_varnames[: code.co_argcount])
    found = sorted(
        (
            n
            for n in gast.walk(module)
            if isinstance(n, gast.Lambda)
            and n.lineno == line
            and [a.id for a in n.args.args] == params
        ),
        key=lambda n: (n.lineno, n.col_offset),
    )
    if len(found) > 1:
        found = _lambdas_holding(found, code)
    if len(found) != 1:
        why = (
            "no lambda with these parameters starts there"
            if not found
            else f"{len(found)} lambdas on this line cannot be told apart"
            + ("" if hasattr(code, "co_positions") else " (Python 3.10 records no columns)")
        )
        raise errors.UnsupportedSyntaxError(
            f"cannot find the source of this lambda: {why}; put it on a line of its own, or "
            "define the function with def",
            here,
        )
    node = found[0]
    body = gast.copy_location(gast.Return(value=node.body), node.body)
    tree = gast.FunctionDef(
        name=names.get(id(node), "lambda"),
        args=node.args,
        body=[body],
        decorator_list=[],
        returns=None,
        type_comment=None,
        type_params=[],
    )
    gast.copy_location(tree, node)
    return ParsedFunction(fn, tree, file, 1, lines)


def _lambdas_holding(candidates, code) -> list:
    """The smallest of the candidate lambdas whose span holds every instruction's position
    (a list of one), or all of them where positions do not decide."""
    positions = [
        p
        for p in getattr(code, "co_positions", lambda: ())()
        if p[0] is not None and p[2] is not None and (p[1], p[3]) > (p[0], p[2])
    ]  # (positions with a span: not RESUME's)
    if not positions:
        return candidates

    def holds(node):
        return all(
            (node.lineno, node.col_offset) <= (p[0], p[2])
            and (p[1], p[3]) <= (node.end_lineno, node.end_col_offset)
            for p in positions
        )

    holding = [n for n in candidates if holds(n)]
    if not holding:
        return candidates
    smallest = min(
        holding,
        key=lambda n: (
            n.end_lineno - n.lineno,
            n.end_col_offset - n.col_offset if n.end_lineno == n.lineno else 0,
        ),
    )
    same = [
        n
        for n in holding
        if (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset)
        == (smallest.lineno, smallest.col_offset, smallest.end_lineno, smallest.end_col_offset)
    ]
    return same if len(same) > 1 else [smallest]
