"""Cleanup passes: copy propagation and CSE, dead-code elimination, shape-only values.

`propagate_copies_and_cse(body, params)`, `eliminate_dead_code(body)` and
`inline_shape_only_values(body, params, shapes)` take a statement list and return a new
one: no copies of single-assignment names (`a = b` replaced by `b` everywhere), no repeated
pure computation in one block, no statement whose value is never read on the way to the
return, no value computed only for its `.shape` or `.size` when `shapes` knows it.
`Cleaner` runs the first two to a fixed point. Also the small shared helpers of the other
passes (`assign_counts`, `substitute`, `namer`).

Why one module: the cleanup passes run together to a fixed point after every other pass, and
share one model of what a statement reads and writes (a call made for its effect writes into
its operands: neither merged nor removed); split, that model would be written twice.
"""

from __future__ import annotations

import functools
from collections import defaultdict

import numpy as np

from ...ops import RULES
from ..analysis.shape_names import DimensionSources
from ..ir import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    If,
    Pop,
    Push,
    Return,
    Slc,
    Tup,
    Var,
    While,
    assignment_counts,
    child_blocks,
    reads_of,
    substitute_atom,
    walk,
    with_child_blocks,
    writes_of,
)


def assign_counts(body, params=()):
    """Assignment counts; a name never assigned (a free value) counts zero."""
    return defaultdict(int, assignment_counts(body, params))


def substitute(stmt, mapping, rebuild_blocks):
    kind = type(stmt)  # (no statement class is subclassed)
    if (kind is Assign and not stmt.in_place or kind in _SIMPLE) and mapping.keys().isdisjoint(
        reads_of(stmt)
    ):
        # nothing it reads is replaced: the statement itself (rebuilding each statement of a
        # long function on every round was most of this pass; an update in place is
        # rebuilt below as before, which drops its `in_place` mark)
        return stmt
    sub = lambda a: substitute_atom(a, mapping)  # noqa: E731
    if isinstance(stmt, Assign):
        value = stmt.value
        if isinstance(value, Call):
            value = Call(
                value.op,
                tuple(sub(a) for a in value.args),
                tuple((k, sub(a)) for k, a in value.kwargs),
            )
        else:
            value = sub(value)
        return Assign(stmt.target, value, stmt.loc, stmt.note)
    if isinstance(stmt, ExprStmt):
        v = stmt.value
        return ExprStmt(
            Call(v.op, tuple(sub(a) for a in v.args), tuple((k, sub(a)) for k, a in v.kwargs)),
            stmt.loc,
        )
    if isinstance(stmt, Return):
        return Return(sub(stmt.value), stmt.loc)
    if isinstance(stmt, Push):
        return Push(sub(stmt.value), stmt.loc)
    if isinstance(stmt, If):
        return If(sub(stmt.test), rebuild_blocks(stmt.body), rebuild_blocks(stmt.orelse), stmt.loc)
    if isinstance(stmt, For):
        return For(
            stmt.target,
            sub(stmt.start),
            sub(stmt.stop),
            sub(stmt.step),
            rebuild_blocks(stmt.body),
            stmt.loc,
            _stop_flag(stmt.stop_flag, mapping),
            stmt.reverse,
        )
    if isinstance(stmt, While):
        return While(
            rebuild_blocks(stmt.test_body), sub(stmt.test), rebuild_blocks(stmt.body), stmt.loc
        )
    return stmt


_SIMPLE = frozenset((ExprStmt, Return, Push))


def _stop_flag(flag, mapping):
    """A loop's stop flag after copy propagation: a copy's source, or none for a flag that is
    always False (a `break` under a condition that is never true)."""
    value = mapping.get(flag) if flag is not None else None
    if isinstance(value, Var):
        return value.name
    if isinstance(value, Const):
        assert not value.value, "a loop flag propagated as a true constant"
        return None
    return flag


def _hashable(atom):
    if type(atom) is Var:  # (the common case first)
        return ("var", atom.name)
    if isinstance(atom, Const):
        try:
            hash(atom.value)
        except TypeError:
            return None
        return ("const", type(atom.value).__name__, repr(atom.value))
    if isinstance(atom, Var):
        return ("var", atom.name)
    if isinstance(atom, Tup):
        items = tuple(_hashable(a) for a in atom.items)
        return None if None in items else ("tup", items)
    if isinstance(atom, Slc):
        parts = tuple(_hashable(a) for a in (atom.lower, atom.upper, atom.step))
        return None if None in parts else ("slice", parts)
    return None


# the note of a value the backward makes again on purpose (sourcegrad.checkpoint): it is not
# merged with the forward's equal value, which would keep that value instead
RECOMPUTED_NOTE = "checkpoint"


# (a transpose is a view made in ~0.1 µs, a length or shape a read of a field: `g.T @ h`
# and `np.empty((n, len(h0)))` twice read better than a name each for g.T and len(h0))
_NOT_MERGED = frozenset(("T", "len", "shape", "size"))


def propagate_copies_and_cse(body: list, params=()) -> list:
    # (long: the sets (written, handed over, transposed, stop flags) the nested `run` reads
    # as it rewrites are collected first; split, they would be passed to it one by one)
    counts = assign_counts(body, params)
    single = lambda n: counts[n] <= 1  # noqa: E731
    mapping: dict = {}
    assigns, stop_flags = [], set()  # (one walk for the sets below)
    # arrays a call made for its effect may write into (`np.copyto(a, v)`, `out=a`): two
    # equal `np.zeros(3)` filled by different calls are two arrays, never one
    written = _writes_into(body)
    for s in walk(body):
        if type(s) is Assign:
            assigns.append(s)
        elif type(s) is For and s.stop_flag:
            stop_flags.add(s.stop_flag)
    # values handed to a variable that may be updated in place (`d_W = part; d_W += ...`)
    # must keep an array of their own: they are never shared with an equal computation
    handed_over = {
        s.value.name for s in assigns if isinstance(s.value, Var) and not single(s.target)
    }
    # `a = b.T` (both assigned once): a later `a.T` is b itself (a saved `U_T` transposed back)
    transposed = {
        s.target: s.value.args[0]
        for s in assigns
        if isinstance(s.value, Call)
        and s.value.op == "T"
        and not s.value.kwargs
        and isinstance(s.value.args[0], Var)
        and single(s.target)
        and single(s.value.args[0].name)
    }

    key_reads: dict = {}  # a computation's key -> the names it reads

    def run(stmts, seen):
        seen = dict(seen)
        out = []
        rebuild = lambda b: run(b, seen)  # noqa: E731
        for stmt in stmts:
            # an array a call writes into (`store_item(t1, -1, v)`) holds two values under one
            # name: what was computed of it before is not what is computed after, nor inside a
            # loop holding the write (`np.sum(t1)` merged across it: fuzz r9-8247)
            if written and (into := _writes_into([stmt])):
                for key in [k for k in seen if key_reads[k] & into]:
                    del seen[key]
            stmt = substitute(stmt, mapping, rebuild)
            if type(stmt) is Assign and counts[stmt.target] <= 1:
                value = stmt.value
                if type(value) is not Call:
                    if isinstance(value, Const) and value.value and stmt.target in stop_flags:
                        pass  # a loop that always stops after one trip keeps its flag
                    elif isinstance(value, Const) or (
                        isinstance(value, Var) and single(value.name)
                    ):
                        mapping[stmt.target] = value
                        continue
                elif (
                    value.op == "T"
                    and not value.kwargs
                    and stmt.target not in handed_over
                    and isinstance(value.args[0], Var)
                    and value.args[0].name in transposed
                ):
                    inner = transposed[value.args[0].name]
                    mapping[stmt.target] = mapping.get(inner.name, inner)
                    continue
                elif (
                    RULES[value.op].pure
                    and all(counts[n] <= 1 for n in reads_of(stmt))
                    and stmt.target not in handed_over
                    and stmt.target not in written
                    and stmt.note != RECOMPUTED_NOTE
                    and value.op not in _NOT_MERGED
                ):
                    # (a transpose is a view made in ~0.1 µs: `g.T @ h` and `g.T @ xs` read
                    # better than a name for g.T; hoist_transposes names one a loop reads)
                    # `math.cos(x)` and `np.cos(x)` are one computation (one rule family)
                    key = (
                        RULES[value.op].family,
                        tuple(map(_hashable, value.args)),
                        tuple((k, _hashable(a)) for k, a in value.kwargs),
                    )
                    if None not in key[1] and all(h is not None for _, h in key[2]):
                        if key in seen:
                            mapping[stmt.target] = Var(seen[key])
                            continue
                        seen[key] = stmt.target
                        key_reads[key] = frozenset(reads_of(stmt))
            out.append(stmt)
        return out

    # a name may be read before the statement that makes it a copy is reached (in a loop),
    # so substitute once more over the result
    first = run(body, {})
    deep = lambda b: [_deep(x, mapping) for x in b]  # noqa: E731
    return [substitute(s, mapping, deep) for s in first]


def _writes_into(stmts) -> set:
    """The names the statements (and those nested in them) may write into as arrays: the
    operands of a call made for its effect, or of one given `out=`."""
    names: set = set()
    for s in walk(stmts):
        value = getattr(s, "value", None)
        if type(value) is Call and (
            type(s) is ExprStmt or type(s) is Assign and any(k == "out" for k, _ in value.kwargs)
        ):
            names.update(reads_of(s))
    return names


def _deep(stmt, mapping):
    return substitute(stmt, mapping, lambda b: [_deep(x, mapping) for x in b])


def _pure(stmt) -> bool:
    """No effect but its value (a call writing into a buffer, `out=`, has one)."""
    value = stmt.value
    return not isinstance(value, Call) or (
        RULES[value.op].pure and all(k != "out" for k, _ in value.kwargs)
    )


def _live_in(stmts, live_out, warm=None):
    """Liveness without removing anything."""
    _, live = _dce_block(stmts, set(live_out), remove=False, warm=warm)
    return live


def _dce_block(stmts, live, remove=True, warm=None):
    """(kept statements, names live before them) given the names live after them.

    `live` is the caller's own set, updated in place (a copy per statement made a long
    function's dead-code pass quadratic). `warm`: per loop, the names live after it and
    the values it carries, from its last fixpoint in this pass (see the For case)."""
    # (long: the dead-code pass's backward walk, one branch per statement kind (a loop's
    # with its fixpoint), kept in one frame: it is the pass's hot path)
    warm = {} if warm is None else warm
    kept = []
    for stmt in reversed(stmts):
        kind = type(stmt)  # (no statement class is subclassed: the common case first)
        if kind is Assign:
            if remove and type(stmt.value) is Var and stmt.value.name == stmt.target:
                continue  # `dxs = dxs`: the adjoint of `xs = xs * 1.0`, nothing done
            if stmt.target in live or not _pure(stmt):
                live.discard(stmt.target)
                live.update(reads_of(stmt))
                kept.append(stmt)
            elif not remove:
                kept.append(stmt)
        elif kind is Return:
            live = set(reads_of(stmt))
            kept.append(stmt)
        elif isinstance(stmt, Pop):
            live.discard(stmt.target)
            kept.append(stmt)
        elif isinstance(stmt, (Push, ExprStmt)):
            live.update(reads_of(stmt))
            kept.append(stmt)
        elif isinstance(stmt, If):
            body, live_body = _dce_block(stmt.body, set(live), remove, warm)
            orelse, live_else = _dce_block(stmt.orelse, set(live), remove, warm)
            if remove and not body and not orelse:
                continue
            kept.append(If(stmt.test, body, orelse, stmt.loc))
            live = live_body | live_else | set(reads_of(stmt))
        elif isinstance(stmt, For):
            # the fixpoint starts from what the loop carried the last time this pass met it
            # with fewer names live after it (liveness only grows with them): an enclosing
            # loop's fixpoint meets it again, and starting from nothing each time made the
            # pass exponential in the nesting depth
            base = live | ({stmt.stop_flag} if stmt.stop_flag else set())
            seen_base, seen = warm.get(id(stmt), (None, ()))
            carried = set(seen) if seen_base is not None and seen_base <= base else set()
            converged = False
            for _ in range(len(stmts) + 8):
                out = base | carried
                live_body = _live_in(stmt.body, out, warm)
                new = live_body - {stmt.target}
                if new <= carried:
                    converged = True
                    break
                carried |= new
            warm[id(stmt)] = (base, frozenset(carried))
            out = base | carried
            if remove or not converged:
                body, live_body = _dce_block(stmt.body, out, remove, warm)
            else:  # nothing to remove, and the last trip computed this liveness
                body = stmt.body
            if remove and not body and stmt.target not in live:
                continue
            kept.append(
                For(
                    stmt.target,
                    stmt.start,
                    stmt.stop,
                    stmt.step,
                    body,
                    stmt.loc,
                    stmt.stop_flag,
                    stmt.reverse,
                )
            )
            live = (live | (live_body - {stmt.target})) | set(reads_of(stmt))
        elif isinstance(stmt, While):
            carried = set()
            for _ in range(len(stmts) + 8):
                out = live | carried
                after_body = _live_in(
                    stmt.body, out | _live_in(stmt.test_body, out | set(reads_of(stmt)), warm), warm
                )
                new = _live_in(stmt.test_body, after_body | out | set(reads_of(stmt)), warm)
                new |= after_body
                if new <= carried:
                    break
                carried |= new
            out = live | carried
            test_out = out | set(reads_of(stmt))
            body, _ = _dce_block(
                stmt.body, out | _live_in(stmt.test_body, test_out, warm), remove, warm
            )
            test_body, live_test = _dce_block(stmt.test_body, test_out, remove, warm)
            kept.append(While(test_body, stmt.test, body, stmt.loc))
            live = live | live_test | carried
        else:
            kept.append(stmt)
    return list(reversed(kept)), live


def eliminate_dead_code(body: list) -> list:
    kept, _ = _dce_block(body, set())
    return _cancel_pushed_pops(kept)


def _cancel_pushed_pops(stmts: list) -> list:
    """`stmts` without a value pushed and popped straight back (a trip recorded and then
    reversed at once, as under revolve, once the trip's own statements are dead): the pop
    becomes a copy of what was pushed, or nothing when it restores the same name. Returns
    `stmts` itself when there is none (the Cleaner's fixed point compares statements)."""
    if not any(type(s) is Pop or type(s) in (If, For, While) for s in stmts):
        return stmts
    out, pushed, changed = [], [], False  # pushed: positions in `out` of the pending pushes
    for stmt in stmts:
        if type(stmt) in (If, For, While):
            blocks = child_blocks(stmt)
            new = [_cancel_pushed_pops(b) for b in blocks]
            if any(n is not b for n, b in zip(new, blocks)):
                stmt, changed = with_child_blocks(stmt, new), True
            out.append(stmt)
            pushed = []
        elif type(stmt) is Push:
            if type(stmt.value) is Var:
                pushed.append(len(out))
            else:
                pushed = []
            out.append(stmt)
        elif type(stmt) is Pop and pushed and _restores(out[pushed[-1]], stmt):
            del out[pushed.pop()]
            changed = True
        else:
            # (a statement between that leaves the pushed names alone keeps them pending:
            # the backward's first adjoints come between a trip's pops)
            if type(stmt) is Pop or not {out[i].value.name for i in pushed}.isdisjoint(
                writes_of(stmt)
            ):
                pushed = []
            out.append(stmt)
    return out if changed else stmts


def _restores(push, pop) -> bool:
    return push.value.name == pop.target


def inline_shape_only_values(body: list, params, shapes: dict, user_names=()) -> list:
    """Read the shape of a value computed only for its shape from the signature instead.

    A reduction's result may be needed by the backward only for `.shape` or `.size`;
    with the input shapes fixed, those are known, so the value need not be computed.
    They are read from a parameter whose axes the value's are by construction (`len(Y)`,
    `X.size`: shape_names.DimensionSources), the numbers only where none is or where
    `user_names` is None (code whose elementwise runs are fused: numbers keep them whole).
    """

    def reads_shape(s):
        return type(s) is Assign and type(s.value) is Call and s.value.op in ("shape", "size")

    # the values read by a `.shape` or `.size` (then: read by nothing else)
    candidates = {n for s in walk(body) if reads_shape(s) for n in reads_of(s)}
    replace = set()
    if candidates:
        counts = assign_counts(body, params)
        read_otherwise = {
            n for s in walk(body) if not reads_shape(s) for n in reads_of(s) if n in candidates
        }
        replace = {
            name
            for name in candidates - read_otherwise
            if name not in params and shapes.get(name) is not None and counts[name] <= 1
        }

    @functools.cache
    def sources():
        taken = set(params) | {n for s in walk(body) for n in writes_of(s)}
        taken |= {n for s in walk(body) for n in reads_of(s)}
        return DimensionSources(body, params, shapes, user_names, namer(taken))

    def run(stmts):
        out = []
        for stmt in stmts:
            if (
                isinstance(stmt, Assign)
                and isinstance(stmt.value, Call)
                and stmt.value.op in ("shape", "size")
                and isinstance(stmt.value.args[0], Var)
                and stmt.value.args[0].name in replace
            ):
                name = stmt.value.args[0].name
                shape = shapes[name]
                named = (
                    None
                    if user_names is None
                    else getattr(sources(), stmt.value.op)(stmt.target, name, stmt.loc, stmt.note)
                )
                if named is not None:
                    out.extend(named)
                    continue
                value = shape if stmt.value.op == "shape" else int(np.prod(shape, dtype=np.int64))
                stmt = Assign(stmt.target, Const(value), stmt.loc, stmt.note)
            elif child_blocks(stmt):
                stmt = substitute(stmt, {}, run)
            out.append(stmt)
        return out

    return run(body)


def namer(taken: set):
    """`fresh(base)`: base, or base_1, base_2, ... whichever is not in `taken` (then taken)."""

    def fresh(base):
        name, i = base, 1
        while name in taken:
            name, i = f"{base}_{i}", i + 1
        taken.add(name)
        return name

    return fresh


class Cleaner:
    """`eliminate_dead_code(propagate_copies_and_cse(body))`, skipped for a body made of the
    very statements of one such round left unchanged: that body is the round's fixed point
    (the round is a function of the statements). Between two rounds, a pass with nothing
    to do returns its input's statements (so does a round on them), and on a long
    function a round costs a fifth of the optimizer."""

    def __init__(self, params):
        self.params = params
        self.settled = None  # the statements a round left unchanged

    def __call__(self, body):
        if self.settled is not None and _same(body, self.settled):
            return body
        out = eliminate_dead_code(propagate_copies_and_cse(body, self.params))
        self.settled = out if _same(out, body) else None
        return out


def _same(a, b) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
