"""Whether the source text inspect finds for a function is the code the function runs.

sourcegrad differentiates a function's source, read from its file when the gradient is
first built; Python runs the function's code object, compiled from the file as it was
at import. The two part when the file is edited after import without a reload (the
gradient would be of the new text, the function runs the old code), or when a tool
swaps `__code__` for code compiled from other text. `check_current(fn)` raises
`StaleSourceError`, located at the function's `def`, when they differ.

How: the whole file, as inspect reads it (linecache, refreshed when the file changed),
is compiled again and the code object it makes with fn's name at fn's first line is
compared with `fn.__code__`: bytecode, names, variables, flags and constants (nested
code objects recursively). Compiling the whole file, not the function's lines alone,
gives the compiler the context it had (the file's `__future__` imports, which names are
modules, closures, private-name mangling in classes), so one interpreter produces the
same code from the same text. An edit that moves the function moves its first line (the
code's `co_firstlineno` then finds no function of its name there); one that only
changes lines elsewhere in the file is no change to it. The compiled file is kept per
file while linecache's text of it is unchanged, so a new closure of a checked function
costs a dict lookup and a comparison. Where the file cannot be read (exec, the
interactive prompt) nothing is said: the front end reports that itself.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import types

from .. import errors
from ..errors import SourceLocation
from .frontend import function_run_by


class StaleSourceError(errors.SourcegradError):
    """The source on disk is not the code the function runs (edited after import)."""


# (file name, asserts rewritten) -> (linecache's lines, {(name, first line): [code objects]})
_FILES: dict = {}


def check_current(fn) -> None:
    """Raise StaleSourceError if fn's file no longer compiles to fn's code at its line."""
    fn = function_run_by(fn)
    if not isinstance(fn, types.FunctionType):
        return
    code = fn.__code__
    try:
        file = inspect.getsourcefile(fn)
    except TypeError:
        return
    if not file:
        return
    linecache.checkcache(file)
    lines = linecache.getlines(file, fn.__globals__)
    if not lines:
        return
    rewritten = "@pytest_ar" in fn.__globals__  # a test module whose asserts pytest rewrote
    known = _FILES.get((file, rewritten))
    if known is None or known[0] is not lines:
        known = (lines, _functions_of("".join(lines), code.co_filename, rewritten))
        _FILES[(file, rewritten)] = known
    table = known[1]
    if table is not None and any(
        _same(code, c) for c in table.get((code.co_name, code.co_firstlineno), ())
    ):
        return
    line = code.co_firstlineno
    text = lines[line - 1].rstrip("\n") if 0 < line <= len(lines) else ""
    why = "no longer compiles" if table is None else "is not the code Python runs for it"
    raise StaleSourceError(
        f"the source of {fn.__qualname__} in {file} {why}: the file was edited after the "
        "module was imported (or the function's code was replaced). Reload the module "
        "(importlib.reload) or restart, then differentiate again",
        SourceLocation(file, line, 0, text),
    )


def _functions_of(text: str, filename: str, rewritten: bool = False):
    """{(name, first line): code objects} of every function the text defines; None when it
    does not compile. `rewritten`: compile it as pytest compiles a test module, its asserts
    rewritten (so a function with an assert in a test file is not taken for edited)."""
    try:
        source = _rewritten_asserts(text, filename) if rewritten else text
        module = compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    table: dict = {}
    for code in _code_objects(module):
        table.setdefault((code.co_name, code.co_firstlineno), []).append(code)
    return table


def _rewritten_asserts(text: str, filename: str):
    """The module's syntax tree after pytest's assertion rewriting (pytest's own function
    for it; when it cannot be had, the text as it is, and the check compares as usual)."""
    try:
        from _pytest.assertion.rewrite import rewrite_asserts
    except ImportError:
        return text
    tree = ast.parse(text, filename)
    rewrite_asserts(tree, text.encode())
    return tree


def _code_objects(code):
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield const
            yield from _code_objects(const)


_COMPARED = (
    "co_code",
    "co_names",
    "co_varnames",
    "co_freevars",
    "co_cellvars",
    "co_argcount",
    "co_posonlyargcount",
    "co_kwonlyargcount",
    "co_flags",
)


def _same(a, b) -> bool:
    if any(getattr(a, f) != getattr(b, f) for f in _COMPARED):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) or isinstance(y, types.CodeType):
            if not (
                isinstance(x, types.CodeType) and isinstance(y, types.CodeType) and _same(x, y)
            ):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):
            return False
    return True
