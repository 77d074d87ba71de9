"""Finding and parsing a function's source: `parse(fn)` (a def, or a bound method: its
function's def, `self` bound to the object) and `parse_lambda(fn)` (a lambda, told apart
from others on its line by its code object's positions).

Takes a Python function; gives a `ParsedFunction` (its gast tree, file, first line, lines).
A function whose source cannot be read (typed at the prompt, made by exec of a string) is
refused by `unavailable(fn)`'s one-line located error, which `Gradient` raises as soon as
it is made, so that the traceback is short.
"""

from __future__ import annotations

import dataclasses
import inspect
import linecache
import textwrap
import types

import gast

from ... import errors
from ...errors import SourceLocation
from .. import source_text


@dataclasses.dataclass
class ParsedFunction:
    """A function's gast tree plus what is needed to resolve its names and report errors."""

    fn: object
    tree: gast.FunctionDef
    file: str
    first_line: int  # line of the `def` in the file
    lines: list
    # a bound method's object (`grad(model.loss)`): the value of the def's first parameter,
    # which the differentiated function then does not take (None: a plain function)
    receiver: object = None

    def loc(self, node) -> SourceLocation:
        line = getattr(node, "lineno", 1) + self.first_line - 1
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return SourceLocation(self.file, line, getattr(node, "col_offset", 0), text.rstrip("\n"))


def function_run_by(fn):
    """The Python function whose code runs when `fn` is called: `fn` itself, the function
    a `sourcegrad.checkpoint` holds (which calls it and nothing else), a bound method's.

    Not `inspect.unwrap`: a wrapper made with `functools.wraps` names in `__wrapped__` the
    function it calls, not what it does with its arguments and result (`return k * f(x)`);
    differentiating the wrapped function would silently drop the wrapper's part."""
    while getattr(fn, "_sourcegrad_checkpoint", False):
        fn = fn.__wrapped__
    if isinstance(fn, types.MethodType):  # `model.loss`: its function, self bound
        fn = fn.__func__
    return fn


def parse(fn) -> ParsedFunction:
    """Parse `fn`'s source. Works for module-level, nested and decorated functions (a
    decorated function is the wrapper the decorator returned: its own code is read), and
    for a bound method of a Python function (`model.loss`)."""
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        return dataclasses.replace(parse(fn.__func__), receiver=fn.__self__)
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
        source_lines, first_line = source_text.source_lines(fn.__code__, fn.__globals__)
    except (OSError, TypeError):
        # (inspect's own exception only says "could not get source code", from deep inside it)
        raise unavailable(fn) or errors.SourceNotFoundError(
            f"the source of {fn.__qualname__} cannot be found in its file; define it in a "
            "file or a notebook cell",
            _first_line(fn),
        ) from None
    file = _file_of(fn)
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


def unavailable(fn) -> errors.SourceNotFoundError | None:
    """The located error saying why the source of the Python function `fn` cannot be read,
    or None where it can (linecache holds its file's text, down to its first line: what
    inspect reads it from)."""
    code = fn.__code__
    file = _file_of(fn)
    if 0 < code.co_firstlineno <= len(linecache.getlines(file, fn.__globals__)):
        return None
    if file == "<stdin>":
        how = "was typed at the interactive prompt"
    elif file.startswith("<") and file.endswith(">"):
        how = "was made from a string by exec(), eval() or compile()"
    else:
        how = f"comes from {file}, which cannot be read (moved or deleted?)"
    kind = "a lambda" if code.co_name == "<lambda>" else fn.__qualname__
    return errors.SourceNotFoundError(
        f"{kind} {how}, so there is no source for sourcegrad to read (it differentiates a "
        "function's source): define it in a file or a notebook cell",
        _first_line(fn),
    )


def _file_of(fn) -> str:
    try:
        return inspect.getsourcefile(fn.__code__) or fn.__code__.co_filename
    except TypeError:
        return fn.__code__.co_filename


def _first_line(fn) -> SourceLocation:
    """Where fn's code says it starts (its text unknown)."""
    return SourceLocation(_file_of(fn), fn.__code__.co_firstlineno)


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
    file = _file_of(fn)
    lines = linecache.getlines(file, fn.__globals__)
    line = code.co_firstlineno
    missing = unavailable(fn)
    if missing is not None:
        raise missing
    text = lines[line - 1].rstrip("\n") if 0 < line <= len(lines) else ""
    here = SourceLocation(file, line, 0, text)
    try:
        module = gast.parse("".join(lines))
    except SyntaxError as exc:
        raise errors.SourceNotFoundError(
            f"the file of a lambda does not parse ({exc})", here
        ) from exc
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
