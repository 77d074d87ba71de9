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

The package, one module per part:

    source.py       finding and parsing a function's (or a lambda's) source
    values.py       what names stand for while lowering; the shared Context
    syntax.py       questions about the syntax tree; the constructs refused
    lowerer.py      the Lowerer, made of one mixin per kind of construct:
      statements.py, assignments.py, expressions.py, names.py, calls.py, containers.py
    source_check.py whether the source inspect finds is the code the function runs
                    (`check_current`, used by the api's caches; not imported here)
"""

from .lowerer import Lowerer, function_to_ir, lower
from .source import ParsedFunction, function_run_by, parse, parse_lambda
from .values import Context

__all__ = [
    "Context",
    "Lowerer",
    "ParsedFunction",
    "function_run_by",
    "function_to_ir",
    "lower",
    "parse",
    "parse_lambda",
]
