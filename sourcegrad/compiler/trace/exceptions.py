"""Exceptions in a trace: an operation that raises, and a function that catches it.

A trace runs the function once and records the path that run took. Where an operation on a
traced value raises (np.linalg.cholesky of a matrix that is not positive definite, a
floating-point error under `np.errstate(...="raise")`) and the function catches it (a try
statement), the code made from the run would take the except path on every call, and
another call's data, on which nothing raises, would get that path's gradient: refused,
located at the operation (`check_none_caught`). Where nothing raised, the code is the try
path; on another call's data it may raise where Python would catch: such code is marked
(`Trace.catches`, from `has_try_statement`) and the api traces again when it raises, so that
Python decides (its exception propagates, or the catch is refused here). The floating-point
errors the function made raise around an operation (`note_error_state`) are made to raise
when the code runs too (`Trace.raising`).

Takes the `Recorder` of the trace running; returns nothing, or raises a located
`UnsupportedSyntaxError`.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np

from ... import errors

# type errors are the signature's business (the same on every call of it), not the data's
_NOT_THE_DATA = (TypeError, AttributeError, NotImplementedError)


def note_raised(rec, rule, error) -> None:
    """An operation raised `error` while tracing: remembered, in case the function catches it."""
    if not isinstance(error, (errors.SourcegradError, *_NOT_THE_DATA)):
        spelling = rule.spelling
        what = {"func": f"np.{spelling.text}", "module": spelling.text}.get(spelling.kind)
        rec.raised = (rec.loc(), what or f"the operation {rule.family}", error)


def note_error_state(rec) -> None:
    """The floating-point errors numpy raises for the operation about to run, where the
    function asked for it (not the caller: the code runs under the caller's own state)."""
    now = np.geterr()
    for kind, how in now.items():
        if how == "raise" and rec.errors_at_start.get(kind) != how:
            rec.raising.add(kind)


def check_none_caught(rec) -> None:
    """After the run: refuse an exception an operation raised that the function caught."""
    if rec.raised is None:
        return
    loc, what, error = rec.raised
    raise errors.UnsupportedSyntaxError(
        f"{what} raised {type(error).__name__} ({error}) here while the function was traced "
        "(it has a try statement, or code the compiler cannot read), and the function went on: "
        "it caught the exception. The code made from one run takes that run's path on every "
        "call, and cannot tell from another call's data whether this raises, so it would "
        "give the except path's gradient where nothing raises. Decide with a condition on the "
        "data instead (an if statement, which the trace checks on each call), or catch the "
        "exception around the call of the gradient",
        loc,
    )


def has_try_statement(codes) -> bool:
    """Does any of the user code objects the trace ran hold a try statement (read from its
    source; True where the source cannot be read and the bytecode handles exceptions)?"""
    return any(_has_try(code) for code in codes)


def _has_try(code) -> bool:
    try:
        source = textwrap.dedent(inspect.getsource(code))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return bool(getattr(code, "co_exceptiontable", b"")) or "SETUP_FINALLY" in _opnames(code)
    tries = tuple(getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name))
    return any(isinstance(node, tries) for node in ast.walk(tree))


def _opnames(code) -> set:
    import dis

    return {instruction.opname for instruction in dis.get_instructions(code)}
