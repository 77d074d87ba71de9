"""The cross-check: two front ends as each other's oracle.

`grad(f, check=True)` (or `SOURCEGRAD_CHECK=1` in the environment, for a whole test suite)
computes the first call of each signature twice: by the code made from f's source (the
AST front end) and by the code made from a trace of the same call (`compiler.trace`), each
from its own IR through the same pipeline. Where they differ, `FrontEndMismatchError` shows
both; where the source front end does not read f (the call was traced anyway), there is
nothing to compare.

Random draws: both computations start from the generators' same states (the trace's draws
are the first computation's), and the generators end where one call leaves them.

Takes a `Gradient` and a call's arguments; gives the call's result (or raises).
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import errors, trees
from ..compiler import generators_read_by

RTOL = 1e-7  # two IRs of one function: the same operations, perhaps in another order


def checked(gradient, args, call):
    """`call(*args)` (the gradient's general path), compared with the traced gradient's."""
    generators = [np.random.mtrand._rand] + generators_read_by(gradient.fn, args)
    before = _states(generators)
    result = call(*args)
    if getattr(gradient._last, "trace", None) is not None or gradient.backend_for(args) not in (
        "numpy",
        "numba",
    ):
        return result  # (traced already; or CuPy, Dask arrays: compared on the numpy path)
    after = _states(generators)
    _restore(before)
    other = type(gradient)(
        gradient.fn, gradient._wrt_given, gradient.value_asked, gradient.backend, gradient.has_aux
    )
    other.reads_source = False
    try:
        # (numpy's warnings were the first computation's to give)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            traced = other(*args)
    except errors.OutsideChangeError:
        # (the function changes an object outliving the call: the trace cannot stand for it,
        # and has put back what it changed; the source's code makes the change on each call)
        return result
    finally:
        _restore(after)
    mismatch = _difference(result, traced)
    if mismatch is not None:
        raise errors.FrontEndMismatchError(
            f"the cross-check failed: the gradient of {gradient._label} made from its source "
            f"and the one made from a trace of the same call differ ({mismatch}).\n"
            f"from the source: {result!r}\nfrom the trace:  {traced!r}"
        )
    return result


def _states(generators):
    return [
        (g, g.bit_generator.state if isinstance(g, np.random.Generator) else g.get_state())
        for g in generators
    ]


def _restore(states):
    for g, state in states:
        if isinstance(g, np.random.Generator):
            g.bit_generator.state = state
        else:
            g.set_state(state)


def _difference(a, b):
    """Where `a` and `b` differ (a short description), or None where they agree: the same
    structure (`trees.flatten`: tuples, dicts, dataclasses, ...) and close leaves."""
    leaves_a, def_a = trees.flatten(a)
    leaves_b, def_b = trees.flatten(b)
    if def_a != def_b:
        return "different structures"
    for i, (x, y) in enumerate(zip(leaves_a, leaves_b)):
        x, y = np.asarray(x), np.asarray(y)
        where = f"leaf {i}" if len(leaves_a) > 1 else "the result"
        if x.shape != y.shape:
            return f"{where}: shapes {x.shape} and {y.shape}"
        if x.dtype.kind in "biufc" and y.dtype.kind in "biufc":
            with np.errstate(all="ignore"):
                scale = float(np.max(np.abs(x), initial=0.0)) if x.size else 0.0
                apart = np.abs(x - y) > RTOL * (np.abs(y) + scale)
                apart &= ~(np.isnan(x) & np.isnan(y)) & ~(x == y)
            if np.any(apart):
                worst = float(np.nanmax(np.abs(x - y)))
                return f"{where}: largest difference {worst:.3g}"
        elif not np.array_equal(x, y):
            return f"{where}: different values"
    return None
