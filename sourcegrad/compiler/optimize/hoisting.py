"""Loop invariants and transposes taken once before the loop.

`hoist_loop_invariants(fn)` (on the primal, before differentiation) and
`hoist_transposes(body, params)` (on the gradient) take IR and return it with pure
statements whose operands the loop does not change computed once before the loop.
"""

from __future__ import annotations

from ...ops import RULES
from ..ir import Assign, Call, For, Function, If, While, child_blocks, walk, writes_of
from .cleanup import assign_counts, substitute


def hoist_loop_invariants(fn: Function) -> Function:
    """Move pure computations that do not change across iterations out of loops.

    Runs on the primal, before differentiation: a value computed once is not
    overwritten, so the backward reads it directly instead of saving it every
    iteration (`-k` in a spring integrator). Only temporaries at the top level of
    a loop body move (not user variables, nor anything under a branch).
    """
    counts = assign_counts(fn.body, fn.params)

    def run(stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, (For, While)):
                hoisted, stmt = _hoist(stmt, counts, fn.user_names)
                out.extend(run(hoisted))
            if isinstance(stmt, If):
                stmt = If(stmt.test, run(stmt.body), run(stmt.orelse), stmt.loc)
            elif isinstance(stmt, For):
                stmt = For(
                    stmt.target,
                    stmt.start,
                    stmt.stop,
                    stmt.step,
                    run(stmt.body),
                    stmt.loc,
                    stmt.stop_flag,
                    stmt.reverse,
                )
            elif isinstance(stmt, While):
                stmt = While(run(stmt.test_body), stmt.test, run(stmt.body), stmt.loc)
            out.append(stmt)
        return out

    return Function(
        fn.name,
        fn.params,
        run(fn.body),
        fn.source_file,
        fn.loc,
        fn.free,
        fn.user_names,
        fn.dependencies,
    )


def hoist_transposes(body: list, params) -> list:
    """`W.T` of a matrix the loop does not write, taken once before the loop instead of
    on every trip (the backward of `W @ h` in a loop reads `W.T @ d_h`). Only views: a
    transpose cannot fail, so taking it when the loop runs no trip changes nothing."""
    counts = assign_counts(body, params)

    def run(stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, (For, While)):
                hoisted, stmt = _hoist(stmt, counts, (), only=("T",))
                out.extend(hoisted)
            if child_blocks(stmt):
                stmt = substitute(stmt, {}, run)
            out.append(stmt)
        return out

    return run(body)


def _hoist(loop, counts, user_names, only=None):
    blocks = [loop.body] if isinstance(loop, For) else [loop.test_body, loop.body]
    written = {
        n for s in walk(blocks[0] + (blocks[1] if len(blocks) > 1 else [])) for n in writes_of(s)
    }
    if isinstance(loop, For):
        written.add(loop.target)
    hoisted = []
    changed = True
    new_blocks = [list(b) for b in blocks]
    while changed:
        changed = False
        for block in new_blocks:
            for stmt in list(block):
                if not (isinstance(stmt, Assign) and isinstance(stmt.value, Call)):
                    continue
                if stmt.target in user_names or counts[stmt.target] != 1:
                    continue
                rule = RULES[stmt.value.op]
                if not rule.pure or (only is not None and stmt.value.op not in only):
                    continue
                if any(n in written for n in stmt.value.reads()):
                    continue
                block.remove(stmt)
                hoisted.append(stmt)
                written.discard(stmt.target)
                changed = True
    if not hoisted:
        return [], loop
    if isinstance(loop, For):
        loop = For(
            loop.target,
            loop.start,
            loop.stop,
            loop.step,
            new_blocks[0],
            loop.loc,
            loop.stop_flag,
            loop.reverse,
        )
    else:
        loop = While(new_blocks[0], loop.test, new_blocks[1], loop.loc)
    return hoisted, loop
