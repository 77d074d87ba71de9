"""Activity: which values need an adjoint.

`varied_values(fn, wrt)` returns the names that depend on a `wrt` parameter through
differentiable primitives; `active_values(fn, wrt)` those of them that also reach the
returned value: exactly the values that need an adjoint. `shift_invariant_maxima` finds
the maxima subtracted only for numerical stability (`x - x.max()` under a softmax), whose
gradient is zero, so the backward need not route through them.
"""

from __future__ import annotations

from ...ops import RULES
from ..ir import Assign, Call, Const, Return, Var, assignment_counts, atom_vars, reads_of, walk


def varied_values(fn, wrt: list) -> set:
    """Names that depend on `wrt` through differentiable primitives (a fixed point over loops)."""
    assigns = [s for s in walk(fn.body) if isinstance(s, Assign)]
    varied = set(wrt)
    changed = True
    while changed:
        changed = False
        for stmt in assigns:
            if stmt.target in varied or not any(n in varied for n in reads_of(stmt)):
                continue
            value = stmt.value
            if isinstance(value, Call):
                rule = RULES[value.op]
                if not (rule.differentiable and _varied_inputs_have_vjps(rule, value, varied)):
                    continue
            varied.add(stmt.target)
            changed = True
    return varied


def active_values(fn, wrt: list) -> set:
    """Names that depend on `wrt` through differentiable primitives and reach the return.

    Both sets are found by iterating to a fixed point over every assignment, so values
    carried around a loop are covered. Branch conditions carry no derivative.
    """
    return varied_values(fn, wrt) & useful_values(fn)


def useful_values(fn) -> set:
    """Names whose values reach the returned value (a fixed point over loops)."""
    assigns = [s for s in walk(fn.body) if isinstance(s, Assign)]
    useful = set()
    for stmt in walk(fn.body):
        if isinstance(stmt, Return):
            useful.update(reads_of(stmt))
    changed = True
    while changed:
        changed = False
        # usefulness flows from readers back to what they read: last statement first, so a
        # straight line settles in one round (first statement first took a round a statement)
        for stmt in reversed(assigns):
            if stmt.target in useful:
                new = set(reads_of(stmt)) - useful
                if new:
                    useful |= new
                    changed = True
    return useful


def shift_invariant_maxima(fn) -> set:
    """Maxima subtracted only to keep a log-softmax (or softmax) from overflowing.

    In `z = x - max(x, axis, keepdims=True)` followed by `z - log(sum(exp(z), axis,
    keepdims=True))` or `exp(z) / sum(exp(z), axis, keepdims=True)`, the result does not
    change when z is shifted along the axis, so the maximum's derivative contribution is
    exactly zero: it can be treated as a constant (as `jax.nn.logsumexp` stops its
    gradient). Only straight-line, single-assignment values, every use of z and its
    exponentials accounted for, qualify.
    """
    top = [s for s in fn.body if isinstance(s, Assign)]
    counts = assignment_counts(fn.body, fn.params)
    uses: dict = {}
    for stmt in walk(fn.body):
        for n in reads_of(stmt):
            uses.setdefault(n, []).append(stmt)

    def call(stmt, *ops):
        return isinstance(stmt, Assign) and isinstance(stmt.value, Call) and stmt.value.op in ops

    def reduction_axis(stmt):
        kw = dict(stmt.value.kwargs)
        keep, axis = kw.get("keepdims"), kw.get("axis")
        if keep != Const(True) or not isinstance(axis, Const):
            return _NOT_STATIC
        return axis.value

    found = set()
    for m_stmt in top:
        if not (call(m_stmt, "max", "amax") and counts.get(m_stmt.target) == 1):
            continue
        axis = reduction_axis(m_stmt)
        x = m_stmt.value.args[0]
        if axis is _NOT_STATIC or uses.get(m_stmt.target, []) == []:
            continue
        ok = True
        for z_stmt in uses[m_stmt.target]:
            if not (
                call(z_stmt, "sub_op", "subtract")
                and z_stmt.value.args == (x, Var(m_stmt.target))
                and counts.get(z_stmt.target) == 1
            ):
                ok = False
                break
            ok = ok and _normalized_only(z_stmt.target, axis, uses, counts, call, reduction_axis)
        if ok:
            found.add(m_stmt.target)
    return found


_NOT_STATIC = object()


def _normalized_only(z, axis, uses, counts, call, reduction_axis) -> bool:
    """Is every use of z inside `z - log(sum(exp(z)))` or `exp(z) / sum(exp(z))` over axis?"""
    sums, logs = set(), set()
    exps = [s for s in uses.get(z, []) if call(s, "exp")]
    for e in exps:
        for use in uses.get(e.target, []):
            if call(use, "sum") and reduction_axis(use) == axis:
                sums.add(use.target)
            elif not (call(use, "div_op", "divide") and use.value.args[0] == Var(e.target)):
                return False
    for e in exps:  # a division must be by one of these sums
        for use in uses.get(e.target, []):
            if call(use, "div_op", "divide") and use.value.args[1] not in map(Var, sums):
                return False
    for total in sums:
        for use in uses.get(total, []):
            if call(use, "log"):
                logs.add(use.target)
            elif not call(use, "div_op", "divide"):
                return False
    for use in uses.get(z, []):
        if call(use, "exp"):
            continue
        if not (
            call(use, "sub_op", "subtract")
            and use.value.args[0] == Var(z)
            and use.value.args[1] in map(Var, logs)
        ):
            return False
    for log in logs:
        if not all(
            call(u, "sub_op", "subtract") and u.value.args == (Var(z), Var(log))
            for u in uses.get(log, [])
        ):
            return False
    return all(counts.get(n) == 1 for n in sums | logs | {e.target for e in exps})


def _varied_inputs_have_vjps(rule, call, varied):
    """False when every varied input is one the rule gives no gradient (an index, a condition)."""
    if not rule.vjps:
        return True  # a primitive without rules yet: the reverse pass reports it
    for i, atom in enumerate(call.args):  # (a tuple literal carries its items' variation)
        if any(n in varied for n in atom_vars(atom)) and rule.vjp_for(i) is not None:
            return True
    params = rule.signature().parameters
    names = list(params)
    for k, atom in call.kwargs:
        if isinstance(atom, Var) and atom.name in varied and k in names:
            if rule.vjp_for(names.index(k)) is not None:
                return True
    return False
