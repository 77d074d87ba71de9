"""Running generated gradients on Dask arrays (`backend="dask"`).

The code generator prints Dask code as it prints numpy code, with `dask.array` as the
array namespace (`da.exp(...)`, `X.T @ g`, `g.sum(axis=0)`): every statement builds a
task graph and nothing is computed until the function returns. This module takes what
the compiler made and:

- `check_source(source, file)` refuses, before anything runs, a generated statement that
  calls a `dask.array` function Dask does not have, naming the user's line it computes
  (file, line and the line's text);
- `computing(fn, source, file)` wraps the loaded generated function: it calls it (lazily),
  then computes everything it returned, the value and every gradient, with ONE
  `dask.compute`, so the forward shared by value and gradient is computed once and each
  chunk of the data is read once. An operation Dask refuses while the graph is built
  (`np.add.at` on a Dask array, say) becomes a located `DaskUnsupportedError`;
- `like_input(g, x)` gives the computed gradient of a Dask input its input's type: a Dask
  array (in memory, with the input's chunks). A numpy input's gradient stays numpy.

Data-dependent control flow (`while loss > tol:` on a Dask value) needs a Python bool:
Dask computes the condition when Python asks for it, once per trip of the loop.

Imports: numpy and sourcegrad.errors; dask lazily, when Dask code runs (sourcegrad
imports without Dask installed).
"""

from __future__ import annotations

import functools
import linecache
import re

import numpy as np

from ... import errors


class DaskUnsupportedError(errors.SourcegradError):
    """A statement of the generated Dask code that dask.array cannot compute."""


def is_dask(value) -> bool:
    """Whether `value` is a Dask collection (without importing Dask for other values)."""
    return type(value).__module__.startswith("dask.")


def check_inputs(args, params):
    """Refuse a Dask array whose shape is not known (chunks of unknown size, `nan`): the
    gradient is generated for shapes."""
    for name, a in zip(params, args):
        if is_dask(a) and any(n != n for n in getattr(a, "shape", ())):
            raise errors.ShapeError(
                f"argument {name!r} is a Dask array of unknown shape {a.shape}: gradients are "
                "generated for known shapes; call x.compute_chunk_sizes() first"
            )


_IMPORT = re.compile(r"^import dask\.array as (\w+)$", re.M)
_LINE_COMMENT = re.compile(r"^\s*# (?:line|backward of line) (\d+): ")


def check_source(source: str, file: str) -> None:
    """Raise DaskUnsupportedError for the first `da.<name>` of `source` that dask.array lacks.
    Without Dask installed nothing is checked (the code can be shown, not run)."""
    try:
        import dask.array as da
    except ImportError:
        return
    imported = _IMPORT.search(source)
    if imported is None:  # (the code calls no dask.array function)
        return
    calls = re.compile(r"\b" + imported.group(1) + r"\.([A-Za-z_][A-Za-z0-9_]*)")
    lines = source.splitlines()
    for number, text in enumerate(lines, 1):
        if text.lstrip().startswith("#"):
            continue
        for name in calls.findall(text.split("  #")[0]):
            if not hasattr(da, name):
                raise DaskUnsupportedError(
                    f"dask.array has no {name!r}, which the gradient of this line calls "
                    "(generated: " + text.strip() + '); use backend="numpy" on computed '
                    "arrays, or write the line with operations dask.array has",
                    user_location(lines, number, file),
                )


def user_location(lines, number, file) -> errors.SourceLocation | None:
    """The user's line that line `number` of generated `lines` computes or differentiates:
    the nearest `# line N: ...` / `# backward of line N: ...` comment above it."""
    for text in reversed(lines[:number]):
        found = _LINE_COMMENT.match(text)
        if found:
            line = int(found.group(1))
            return errors.SourceLocation(file, line, 0, linecache.getline(file, line))
    return None


_REFUSALS = (NotImplementedError, TypeError, AttributeError, ValueError)


def computing(fn, source: str, file: str):
    """`fn` (a loaded generated function), computing its result with one dask.compute."""
    generated = fn.__code__.co_filename

    @functools.wraps(fn)
    def run(*args):
        try:
            lazy = fn(*args)
        except errors.SourcegradError:
            raise
        except _REFUSALS as exc:  # how Dask (or numpy, given a Dask array) says it cannot
            loc = _failing_line(exc, generated, source, file)
            if loc is None:
                raise
            raise DaskUnsupportedError(
                f"dask.array cannot compute the gradient of this line ({type(exc).__name__}: "
                f'{exc}); use backend="numpy" on computed arrays',
                loc,
            ) from exc
        return compute(lazy)

    return run


def _failing_line(exc, generated, source, file):
    """Where in the user's source the generated line that raised `exc` comes from, or None
    when the generated code did not raise it."""
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == generated:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None:
        return None
    return user_location(source.splitlines(), line, file)


def compute(result):
    """`result` (an array, a number, or nested tuples of them) with every Dask collection in it
    computed by one dask.compute; numpy arrays that come back are the caller's own copies."""
    import dask

    leaves = []
    _collect(result, leaves)
    lazy = [i for i, v in enumerate(leaves) if is_dask(v)]
    if lazy:
        done = dask.compute(*(leaves[i] for i in lazy))
        for i, v in zip(lazy, done):
            # (a computed array may be the buffer behind a user's da.from_array: copy it)
            leaves[i] = v.copy() if type(v) is np.ndarray else v
    return _rebuild(result, iter(leaves))


def _collect(value, into):
    if type(value) is tuple:
        for item in value:
            _collect(item, into)
    else:
        into.append(value)


def _rebuild(value, leaves):
    if type(value) is tuple:
        return tuple(_rebuild(item, leaves) for item in value)
    return next(leaves)


def like_input(g, x):
    """The computed gradient `g` of the Dask array `x`: a Dask array of x's shape, dtype and
    chunks (its data in memory)."""
    import dask.array as da

    g = np.asarray(g, dtype=x.dtype)
    if g.shape != x.shape:
        g = np.broadcast_to(g, x.shape).copy()
    return da.from_array(g, chunks=x.chunks)


def refuse_transform(kind: str):
    """The error for a transformation the Dask backend does not run."""
    return errors.SourcegradError(
        f"backend='dask' computes grad and value_and_grad; {kind} is not supported on Dask "
        "arrays yet: use backend='numpy' on computed arrays"
    )


__all__ = [
    "DaskUnsupportedError",
    "is_dask",
    "check_inputs",
    "check_source",
    "computing",
    "compute",
    "like_input",
    "refuse_transform",
]
