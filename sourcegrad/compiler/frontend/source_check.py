"""Whether the source text inspect finds for a function is the code the function runs.

sourcegrad differentiates a function's source, read from its file when the gradient is
first built; Python runs the function's code object, compiled from the file as it was
at import. The two part when the file is edited after import without a reload (the
gradient would be of the new text, the function runs the old code), or when a tool
swaps `__code__` for code compiled from other text. `check_current(fn)` raises
`StaleSourceError`, located at the function's `def`, when they differ.

How: the text, as inspect reads it (linecache, refreshed when the file changed), is
compiled again and the code object it makes with fn's name at fn's first line is
compared with `fn.__code__` on what decides behaviour: bytecode, names, variables,
constants (nested code objects recursively) and the flags that say what kind of code it
is. Not compared: positions, and the `__future__` flags (compiler options; what one
changes, such as annotations kept as strings, shows in the bytecode it produces).

The same text can compile to different but equivalent bytecode in different contexts,
so the text is compiled as each known compiler of it would have done, and a match with
either is a match (the text, compiled, gives exactly this code):

- the whole file as one module, as an import does. This gives the compiler the context it
  had: which names are modules (Python 3.11+ calls `np.f(x)` through a plain attribute
  load when `np` was imported in the same module), closures, private-name mangling in
  classes. Compiling a function's lines alone would not.
- each top-level statement as a module of its own, as IPython and Jupyter run a cell
  (and the interactive prompt runs one input): there the `def` did not see the cell's
  `import numpy as np`. A top-level statement holds everything that decides its code but
  the module-level names, which are globals either way.

Both compile with the code's own `__future__` flags (a file run by
`exec(compile(text, path, "exec"))` from a module with `from __future__ import annotations`
inherits that module's flag; so does an IPython cell after a cell that imported it).

An edit that moves the function moves its first line (the code's `co_firstlineno` then
finds no function of its name there); one that only changes lines elsewhere in the file
is no change to it. The compiled text is kept per file while linecache's text of it is
unchanged, so a new closure of a checked function costs a dict lookup and a comparison.
Where the file cannot be read (exec, the interactive prompt) nothing is said: the front
end reports that itself. Where the check cannot decide (the compiler itself fails on the
text for want of memory or recursion depth), it says nothing either.
"""

from __future__ import annotations
import __future__

import ast
import inspect
import linecache
import os
import types
from dataclasses import dataclass

from ... import errors
from ...errors import SourceLocation
from .source import function_run_by


class StaleSourceError(errors.SourcegradError):
    """The source on disk is not the code the function runs (edited after import)."""


def _future_flags() -> int:
    """The code flags a `from __future__ import` sets (nested_scopes' and generators' are
    not: every code has had those features since Python 2.2, and nested_scopes' flag is
    CO_NESTED, which says what kind of code it is)."""
    flags = 0
    for name in __future__.all_feature_names:
        if name not in ("nested_scopes", "generators"):
            flags |= getattr(__future__, name).compiler_flag
    return flags


FUTURE_FLAGS = _future_flags()


class _Undecided(Exception):
    """Compiling the text failed for a reason that says nothing about the text."""


@dataclass
class _Compiled:
    """A file's text compiled both ways, each {(name, first line): [code objects]}, or None
    where the text does not compile."""

    lines: list  # linecache's lines (the same list while the text is unchanged)
    whole: dict | None
    by_statement: dict | None = None
    statements_done: bool = False


# (file name, asserts rewritten, future flags) -> _Compiled
_FILES: dict = {}


def check_current(fn) -> None:
    """Raise StaleSourceError if fn's file no longer compiles to fn's code at its line."""
    fn = _function_of(fn)
    if fn is None:
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
    try:
        compiled = _compiled(file, lines, code, rewritten)
        if _found(code, compiled.whole) or _found(code, _by_statement(compiled, code, rewritten)):
            return
    except _Undecided:
        return
    raise _stale(fn, file, lines, compiled.whole is None)


def _stale(fn, file, lines, uncompilable) -> StaleSourceError:
    line = fn.__code__.co_firstlineno
    text = lines[line - 1].rstrip("\n") if 0 < line <= len(lines) else ""
    why = "no longer compiles" if uncompilable else "is not the code Python runs for it"
    if os.path.exists(file):
        fix = (
            "the file was edited after the module was imported (or the function's code was "
            "replaced). Reload the module (importlib.reload) or restart, then differentiate "
            "again"
        )
    else:  # text that linecache holds for no file: a notebook cell, an IPython input
        fix = "the cell that defines it was changed after it ran; run that cell again"
    return StaleSourceError(
        f"the source of {fn.__qualname__} in {file} {why}: {fix}",
        SourceLocation(file, line, 0, text),
    )


def _function_of(fn):
    """The Python function whose code runs when fn is called (a bound method's function),
    or None where fn is none."""
    fn = function_run_by(fn)
    return fn if isinstance(fn, types.FunctionType) else None


def _compiled(file, lines, code, rewritten) -> _Compiled:
    """The file's text compiled as one module with code's future flags (kept per file)."""
    key = (file, rewritten, code.co_flags & FUTURE_FLAGS)
    known = _FILES.get(key)
    if known is None or known.lines is not lines:
        source = _source("".join(lines), code.co_filename, rewritten, key[2])
        module = None if source is None else _module_code(source, code.co_filename, key[2])
        known = _Compiled(lines, None if module is None else _functions_of([module]))
        _FILES[key] = known
    return known


def _by_statement(compiled: _Compiled, code, rewritten):
    """The text compiled one top-level statement at a time (made when first asked for; a
    statement that does not compile alone is left out)."""
    if not compiled.statements_done:
        flags = code.co_flags & FUTURE_FLAGS
        tree = _source("".join(compiled.lines), code.co_filename, rewritten, flags, as_tree=True)
        if tree is not None:
            modules = [ast.Module(body=[stmt], type_ignores=[]) for stmt in tree.body]
            codes = [_module_code(m, code.co_filename, flags) for m in modules]
            compiled.by_statement = _functions_of([c for c in codes if c is not None])
        compiled.statements_done = True
    return compiled.by_statement


def _found(code, table) -> bool:
    return table is not None and any(
        same_behaviour(code, c) for c in table.get((code.co_name, code.co_firstlineno), ())
    )


# A notebook cell may `await` at its top level (IPython compiles it so); allowing it changes
# nothing inside a function
_COMPILE_FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def _source(text: str, filename: str, rewritten: bool, flags: int, as_tree: bool = False):
    """What to compile: the text, or its syntax tree where asked for or where pytest's
    assertion rewriting must be applied (as pytest compiles a test module, so a function
    with an assert in a test file is not taken for edited). None where it does not parse."""
    if not (rewritten or as_tree):
        return text
    try:
        tree = compile(
            text, filename, "exec", flags | _COMPILE_FLAGS | ast.PyCF_ONLY_AST, dont_inherit=True
        )
    except (SyntaxError, ValueError):
        return None
    except (RecursionError, MemoryError):
        raise _Undecided from None
    if rewritten:
        try:
            from _pytest.assertion.rewrite import rewrite_asserts
        except ImportError:
            return tree
        rewrite_asserts(tree, text.encode())
    return tree


def _module_code(source, filename: str, flags: int):
    """The module code the source (text or tree) compiles to, or None where it does not."""
    try:
        return compile(source, filename, "exec", flags | _COMPILE_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    except (RecursionError, MemoryError):
        raise _Undecided from None


def _functions_of(modules) -> dict:
    """{(name, first line): code objects} of every function the module codes define."""
    table: dict = {}
    for module in modules:
        for code in _code_objects(module):
            table.setdefault((code.co_name, code.co_firstlineno), []).append(code)
    return table


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
)


def same_behaviour(a, b) -> bool:
    """Whether code objects a and b do the same: equal bytecode, names, variables, argument
    counts, kind of code (flags but the future ones) and constants, nested code recursively."""
    if any(getattr(a, f) != getattr(b, f) for f in _COMPARED):
        return False
    if a.co_flags & ~FUTURE_FLAGS != b.co_flags & ~FUTURE_FLAGS:
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) or isinstance(y, types.CodeType):
            if not (
                isinstance(x, types.CodeType)
                and isinstance(y, types.CodeType)
                and same_behaviour(x, y)
            ):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):
            return False
    return True
