"""Branches the signature decides: `if` statements whose test is known for the inputs'
types and shapes (`isinstance(x, float)`, `x.ndim == 1`, `len(params) == 2`) keep only the
branch that runs.

Takes an `ir.Function` and the analysis' summary of it (`analysis.infer_shapes`: each
name's abstract value, joined over every value the name takes); gives the function with
each decided `if` replaced by the statements of its taken branch, or the same function
when none is decided. A test is decided only where the summary knows its value (the same
on every path and trip), which a test reading the data never is.

Why: the branch that never runs for this signature would otherwise be compiled, its
backward generated, and its code printed, for nothing; and numpy may reject its lines
for these shapes (`x @ W` written for a vector, never reached for a matrix).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..ir import Const, For, If, Var, While


def decide_branches(fn, env: dict):
    body, changed = _decided(fn.body, env)
    return replace(fn, body=body) if changed else fn


def _known_test(test, env):
    """True/False when the test's value is known for this signature, else None."""
    if isinstance(test, Const):
        value = test.value
    elif isinstance(test, Var):
        aval = env.get(test.name)
        if aval is None or not aval.known:
            return None
        value = aval.stand_in
    else:
        return None
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return None
    try:
        return bool(value)
    except (TypeError, ValueError):
        return None


def _decided(stmts, env):
    out, changed = [], False
    for stmt in stmts:
        if isinstance(stmt, If):
            taken = _known_test(stmt.test, env)
            if taken is not None:
                inner, _ = _decided(stmt.body if taken else stmt.orelse, env)
                out.extend(inner)
                changed = True
                continue
            body, a = _decided(stmt.body, env)
            orelse, b = _decided(stmt.orelse, env)
            if a or b:
                stmt = replace(stmt, body=body, orelse=orelse)
                changed = True
        elif isinstance(stmt, For):
            body, a = _decided(stmt.body, env)
            if a:
                stmt = replace(stmt, body=body)
                changed = True
        elif isinstance(stmt, While):
            test_body, a = _decided(stmt.test_body, env)
            body, b = _decided(stmt.body, env)
            if a or b:
                stmt = replace(stmt, test_body=test_body, body=body)
                changed = True
        out.append(stmt)
    return out, changed
