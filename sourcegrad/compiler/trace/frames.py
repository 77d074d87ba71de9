"""Whose code a frame runs: the user's, or sourcegrad's, numpy's or another library's.

The recorder names the user's line for each op it records (`is_user`), and the patches make
a buffer the generated code owns only for `np.zeros` called by the user's code (numpy's own
Python functions call it too, and must get an array). Takes code objects and file names;
returns yes or no. `loop_headers` reads a function's source for the lines of the loops the
trace may roll back into loops (`rolling`).
"""

from __future__ import annotations

import ast
import linecache
import os
import sysconfig
import textwrap
import tokenize

import numpy as np

from ...errors import SourceLocation
from ..source_text import source_lines

_HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_NUMPY = os.path.dirname(os.path.abspath(np.__file__))
_OURS = (_HERE, _NUMPY, "<__array", "<frozen")  # sourcegrad, numpy, their shims
_PYTHONS = sysconfig.get_paths()["stdlib"] + os.sep  # Python's own library
# the benchmark's programs in published styles stand for the user's code (sourcegrad.bench)
_USERS_IN_OURS = (os.path.join(_HERE, "bench", "layers.py"),)
_USERS_MODULE = "sourcegrad.bench.layers"


def is_user(code) -> bool:
    """Is `code` the user's (not sourcegrad's, numpy's, numpy's dispatch shims, Python's own
    library: contextlib, functools, linecache)?"""
    file = code.co_filename
    if file.startswith(_OURS):
        return file in _USERS_IN_OURS
    return not file.startswith(_PYTHONS) or "-packages" in file  # (installed code is)


def runs_user_code(frame) -> bool:
    """Is the frame running the user's code (`is_user`), and not code Python wrote for one of
    sourcegrad's or numpy's own classes (a dataclass's `__init__` or `__eq__`: file
    "<string>", the defining module's globals)?"""
    if not is_user(frame.f_code):
        return False
    if frame.f_code.co_filename.startswith("<"):
        module = frame.f_globals.get("__name__") or ""
        return module == _USERS_MODULE or not module.startswith(("sourcegrad.", "numpy."))
    return True


class ModuleBodies:
    """The module bodies running while a trace runs: a module imported inside it
    (`scipy.special.erf` imports scipy.special on first use; an `import` in the function).
    Its top level and all it calls run untraced: a new module's globals are not state from
    before the call, nor what the gradient's code depends on. `entered()` counts one and
    gives the local tracer that sees its end; `running` is how many are running."""

    def __init__(self):
        self.running = 0

    def entered(self):
        self.running += 1
        return self._ends

    def _ends(self, frame, event, arg):
        if event == "return":
            self.running -= 1
        return self._ends


def in_a_library(file) -> bool:
    """Is `file` an installed package's or Python's own (not code the user wrote)?"""
    return bool(file) and (file.startswith(_PYTHONS) or "-packages" in file)


def loop_headers(code, module_globals=None) -> dict:
    """The `for` loops of the function running `code` that a trace may roll (`rolling`),
    by the line of their header: those not inside another loop of it, with no `else`, no
    `break` or `return` in their body, and a body starting below the header (so that the
    header's line runs once per iteration). Empty where the source cannot be read."""
    try:
        lines, start = source_lines(code, module_globals)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError, tokenize.TokenError):
        # (TokenError: lines that are not the code's, as a compiled module's made-up file
        # name finds, `src/charset_normalizer/cd.py` when an import runs inside the trace)
        return {}
    function = next(
        (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None
    )
    if function is None:
        return {}
    headers = {}
    for loop in _outer_loops(function.body):
        line = start + loop.lineno - 1
        if not loop.orelse and loop.body[0].lineno > loop.lineno and not _exits(loop.body):
            text = linecache.getline(code.co_filename, line).rstrip("\n")
            headers[line] = SourceLocation(code.co_filename, line, loop.col_offset, text)
    return headers


def _outer_loops(stmts):
    for stmt in stmts:
        if isinstance(stmt, ast.For):
            yield stmt
        elif isinstance(stmt, (ast.While, ast.AsyncFor, ast.FunctionDef, ast.ClassDef)):
            continue
        else:
            for block in ("body", "orelse", "finalbody", "handlers"):
                yield from _outer_loops(getattr(stmt, block, []))


def _exits(stmts) -> bool:
    """Does a `break` or `return` (not of a nested function) leave these statements?"""
    for node in stmts:
        for sub in _walk_own(node):
            if isinstance(sub, (ast.Break, ast.Return)):
                return True
    return False


def _walk_own(node):
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield from _walk_own(child)
