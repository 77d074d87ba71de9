"""Optimizations on IR: copy propagation, CSE, dead-code elimination, shape-only values.

`optimize(fn, shapes)` takes an `ir.Function` (structured: loops and branches
allowed) and returns a new one computing the same result with:

* no copies of single-assignment names (`a = b` replaced by `b` everywhere);
* no repeated pure computation in one block (common subexpressions of
  single-assignment names share one name);
* no statement whose value is never read on the way to the return (liveness
  over loops is found by iterating to a fixed point; pushes, pops and calls made
  for their effect are kept);
* no value computed only for its `.shape` or `.size` when `shapes` (from the
  input signature) already knows it;
* with `dtypes` too: a loop's rank-one updates (`acc += np.outer(u, v)`), bias sums
  (`acc += u`) and row updates (`acc[t] += u`) done once after it from row buffers
  (`batch_rank_one_updates`), and large elementwise results computed into dead
  buffers (`reuse_dead_buffers`; never a pullback's residuals with `keep_residuals`);
* a loop-invariant transpose taken once before the loop (`hoist_transposes`).

Two passes run on the primal instead, before differentiation (api calls them):
`hoist_loop_invariants` and `batch_row_products` (`U @ xs[t]` for every row as one
`xs @ U.T` before the loop, and a bias the loop adds to it, `... + b`, added to all
rows there: `xs @ U.T + b`).

Names assigned more than once (variables of loops and branches, adjoint
accumulators) are never propagated or shared: their value depends on where they
are read. Constant folding and 0/1 algebra happen earlier, while rule templates
are instantiated, where the static facts are at hand.

Why one module: its passes share the IR walkers, the read counts and the buffer model they
keep up to date; splitting it by kind (cleanup, algebra, loops, memory) is the redesign's
next step (issue 17).
"""

from __future__ import annotations

import functools
import heapq
from collections import defaultdict

import numpy as np

from .ir import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    Function,
    If,
    Marker,
    Pop,
    Push,
    Return,
    Slc,
    Tup,
    Var,
    While,
    assignment_counts,
    child_blocks,
    merge_notes,
    read_counts,
    reads_of,
    substitute_atom,
    walk,
    writes_of,
)
from . import ops
from .lifetimes import FREE_MIN_BYTES
from .ops import RULES
from .shape_names import DimensionSources


def _assign_counts(body, params=()):
    """Assignment counts; a name never assigned (a free value) counts zero."""
    return defaultdict(int, assignment_counts(body, params))


def _substitute(stmt, mapping, rebuild_blocks):
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
    counts = _assign_counts(body, params)
    single = lambda n: counts[n] <= 1  # noqa: E731
    mapping: dict = {}
    assigns, stop_flags = [], set()  # (one walk for the sets below)
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

    def run(stmts, seen):
        seen = dict(seen)
        out = []
        rebuild = lambda b: run(b, seen)  # noqa: E731
        for stmt in stmts:
            stmt = _substitute(stmt, mapping, rebuild)
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
            out.append(stmt)
        return out

    # a name may be read before the statement that makes it a copy is reached (in a loop),
    # so substitute once more over the result
    first = run(body, {})
    deep = lambda b: [_deep(x, mapping) for x in b]  # noqa: E731
    return [_substitute(s, mapping, deep) for s in first]


def _deep(stmt, mapping):
    return _substitute(stmt, mapping, lambda b: [_deep(x, mapping) for x in b])


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
    warm = {} if warm is None else warm
    kept = []
    for stmt in reversed(stmts):
        kind = type(stmt)  # (no statement class is subclassed: the common case first)
        if kind is Assign:
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
    return kept


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
        counts = _assign_counts(body, params)
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
        return DimensionSources(body, params, shapes, user_names, _namer(taken))

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
                stmt = _substitute(stmt, {}, run)
            out.append(stmt)
        return out

    return run(body)


def _namer(taken: set):
    """`fresh(base)`: base, or base_1, base_2, ... whichever is not in `taken` (then taken)."""

    def fresh(base):
        name, i = base, 1
        while name in taken:
            name, i = f"{base}_{i}", i + 1
        taken.add(name)
        return name

    return fresh


def _static_length(stop, defs, shapes):
    """The number a loop's stop stands for when the signature fixes it (`len(xs)`,
    `xs.shape[0]`, a literal), else None."""
    if isinstance(stop, Const):
        return stop.value if isinstance(stop.value, int) else None
    length = defs.get(stop.name) if isinstance(stop, Var) else None
    if isinstance(length, Call) and length.op == "len" and isinstance(length.args[0], Var):
        array = length.args[0].name
    elif (
        isinstance(length, Call)
        and length.op == "getitem"
        and length.args[1] == Const(0)
        and isinstance(length.args[0], Var)
        and isinstance(defs.get(length.args[0].name), Call)
        and defs[length.args[0].name].op == "shape"
        and isinstance(defs[length.args[0].name].args[0], Var)
    ):
        array = defs[length.args[0].name].args[0].name
    else:
        return None
    shape = shapes.get(array)
    return shape[0] if shape else None


def _over_all_rows(loop, array, defs, shape) -> bool:
    """The loop is `for t in range(n)` with n the number of rows of `array`: its length
    (`len(xs)`, `xs.shape[0]`, read from `defs`, the single-assignment values) or, with
    its shape known, that number."""
    if not (loop.start == Const(0) and loop.step == Const(1)):
        return False
    length = defs.get(loop.stop.name) if isinstance(loop.stop, Var) else None
    return (
        length == Call("len", (Var(array),))
        or (
            isinstance(length, Call)
            and length.op == "getitem"
            and length.args[1] == Const(0)
            and isinstance(length.args[0], Var)
            and defs.get(length.args[0].name) == Call("shape", (Var(array),))
        )
        or (shape is not None and len(shape) > 0 and loop.stop == Const(shape[0]))
    )


def batch_rank_one_updates(body: list, params, shapes: dict, dtypes: dict, user_names=()) -> list:
    """`for i in range(n): ... acc += np.outer(u, v)` -> the rows u and v stored in two
    (n, len) buffers in the loop, and one `acc += U.T @ V` after it.

    This is the gradient of a weight matrix through time (an RNN's dW): one matrix product
    over all steps instead of one outer product and one full-matrix addition per step,
    which is how BPTT is written by hand. Only for a loop over range(0, n) (each trip has
    its own row), an accumulator the loop touches nowhere else, and vectors of known shape.
    """
    if not any(type(s) is For for s in walk(body)):
        counts = reads = defs = {}  # (no loop to batch: `batch` is never called)
        fresh = None
    else:
        counts = _assign_counts(body, params)
        reads = read_counts(body)
        fresh = _namer(set(params) | {n for s in walk(body) for n in writes_of(s)} | set(reads))
        defs = {
            s.target: s.value for s in walk(body) if isinstance(s, Assign) and counts[s.target] == 1
        }

    def rows_of(u, loop, loc, stored, before, body_out, index):
        """The buffer holding u's row of each trip (one per vector assigned once a trip)."""
        if u.name in stored and counts[u.name] == 1:
            return stored[u.name]
        array = item_array(u, loop, body_out[:index])
        if array is not None:  # u is xs[t]: its rows are xs's first rows, stored already
            stored[u.name] = array
            return array
        rows = fresh(f"{u.name}_rows")
        dtype = () if dtypes[u.name] == np.float64 else (("dtype", Const(str(dtypes[u.name]))),)
        # the row's length read from the parameter it is by construction (`len(h0)`)
        named = (
            None if user_names is None else sources().dimension(u.name, 0, loc, "one row per trip")
        )
        length = Const(shapes[u.name][0]) if named is None else named[1]
        before.extend([] if named is None else named[0])
        before.append(
            Assign(
                rows,
                Call("np_empty", (Tup((loop.stop, length)),), dtype),
                loc,
                "one row per trip",
            )
        )
        body_out.insert(index, ExprStmt(Call("store_item", (Var(rows), Var(loop.target), u)), loc))
        stored[u.name] = rows
        return rows

    @functools.cache
    def sources():
        return DimensionSources(body, params, shapes, user_names, fresh)

    def item_array(u, loop, earlier):
        """X when u is X[t] in this trip (t the loop's index, X written nowhere) and the
        loop runs over all of X's rows; None otherwise."""
        made = [s for s in earlier if u.name in writes_of(s)]
        if len(made) != 1 or not isinstance(made[0], Assign):
            return None
        value = made[0].value
        if not (
            isinstance(value, Call)
            and value.op == "getitem"
            and value.args[1] == Var(loop.target)
            and isinstance(value.args[0], Var)
        ):
            return None
        array = value.args[0].name
        shape = shapes.get(array)
        if (
            counts[array] != (1 if array in params else 0)
            or shape is None
            or tuple(shape[1:]) != tuple(shapes[u.name])
        ):
            return None
        return array if _over_all_rows(loop, array, defs, shape) else None

    def batch(loop):
        if not (loop.start == Const(0) and loop.step == Const(1)) or loop.stop_flag:
            return [], loop, []
        made = {
            s.target: (i, s)
            for i, s in enumerate(loop.body)
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "outer"
        }
        before, after, body_out, drop, stored = [], [], list(loop.body), set(), {}
        for stmt in loop.body:
            value = stmt.value if isinstance(stmt, Assign) else None
            if not (
                isinstance(value, Call)
                and value.op in ("iadd_op", "add_op")
                and value.args[0] == Var(stmt.target)
                and isinstance(value.args[1], Var)
            ):
                continue
            acc, part = stmt.target, value.args[1].name
            if part not in made or counts[part] != 1 or reads[part] != 1:
                continue
            _, outer = made[part]
            u, v = outer.value.args
            if not all(
                isinstance(a, Var) and len(shapes.get(a.name) or ()) == 1 and a.name in dtypes
                for a in (u, v)
            ):
                continue
            if shapes.get(acc) != shapes[u.name] + shapes[v.name]:
                continue
            touching = [s for s in walk(loop.body) if acc in reads_of(s) or acc in writes_of(s)]
            if touching != [stmt]:
                continue
            index = body_out.index(outer)
            del body_out[index]
            v_rows = rows_of(v, loop, outer.loc, stored, before, body_out, index)
            u_rows = rows_of(u, loop, outer.loc, stored, before, body_out, index)
            drop.add(id(stmt))
            transposed, product = fresh(f"{u_rows}_T"), fresh(f"{acc}_steps")
            after += [
                Assign(transposed, Call("T", (Var(u_rows),)), stmt.loc, outer.note),
                Assign(
                    product, Call("matmul_op", (Var(transposed), Var(v_rows))), stmt.loc, outer.note
                ),
                Assign(acc, Call(value.op, (Var(acc), Var(product))), stmt.loc, stmt.note),
            ]
        for stmt in loop.body:  # `acc += u` with u's rows stored: one sum after the loop
            value = stmt.value if isinstance(stmt, Assign) else None
            if not (
                isinstance(value, Call)
                and value.op in ("iadd_op", "add_op")
                and value.args[0] == Var(stmt.target)
                and isinstance(value.args[1], Var)
            ):
                continue
            acc, part = stmt.target, value.args[1].name
            if (
                part not in stored
                or counts[part] != 1
                or shapes.get(acc) != shapes.get(part)
                or stored[part] not in {n for s in before for n in writes_of(s)}
            ):
                continue
            touching = [s for s in walk(loop.body) if acc in reads_of(s) or acc in writes_of(s)]
            if touching != [stmt]:
                continue
            drop.add(id(stmt))
            total = fresh(f"{acc}_steps")
            after += [
                Assign(
                    total,
                    Call("sum", (Var(stored[part]),), (("axis", Const(0)),)),
                    stmt.loc,
                    stmt.note,
                ),
                Assign(acc, Call(value.op, (Var(acc), Var(total))), stmt.loc, stmt.note),
            ]
        for stmt in loop.body:  # `acc[t] += u` with u's rows stored: acc[:n] += rows after it
            value = stmt.value if isinstance(stmt, Assign) else None
            if not (
                isinstance(value, Call)
                and value.op == "iadd_item"
                and value.args[0] == Var(stmt.target)
                and value.args[1] == Var(loop.target)
                and isinstance(value.args[2], Var)
            ):
                continue
            acc, part = stmt.target, value.args[2].name
            if part not in stored or counts[part] != 1:
                continue
            touching = [s for s in walk(loop.body) if acc in reads_of(s) or acc in writes_of(s)]
            if touching != [stmt]:
                continue
            drop.add(id(stmt))
            if _static_length(loop.stop, defs, shapes) == (shapes.get(acc) or (None,))[0]:
                update = Call("iadd_op", (Var(acc), Var(stored[part])))  # every row of acc
            else:
                update = Call(
                    "iadd_item",
                    (Var(acc), Slc(Const(None), loop.stop, Const(None)), Var(stored[part])),
                )
            after.append(Assign(acc, update, stmt.loc, stmt.note))
        if not drop:
            return [], loop, []
        body_out = computed_into_rows(
            [s for s in body_out if id(s) not in drop], loop, stored, {s.target for s in before}
        )
        return (
            before,
            For(
                loop.target,
                loop.start,
                loop.stop,
                loop.step,
                body_out,
                loop.loc,
                loop.stop_flag,
                loop.reverse,
            ),
            after,
        )

    def computed_into_rows(body_out, loop, stored, buffers):
        """`u = f(a, b)` then `rows[t] = u` -> `u = f(a, b, out=rows[t])`: an elementwise
        result computed into its row of the buffer instead of copied there (as a
        hand-written BPTT computes each step's adjoint into its row)."""
        out = list(body_out)
        for u, rows in stored.items():
            if rows not in buffers:
                continue  # the rows of an input (xs itself): nothing is stored
            stores = [
                i
                for i, s in enumerate(out)
                if isinstance(s, ExprStmt)
                and s.value.op == "store_item"
                and s.value.args[0] == Var(rows)
            ]
            made = [i for i, s in enumerate(out) if u in writes_of(s)]
            if (
                len(stores) != 1
                or len(made) != 1
                or made[0] > stores[0]
                or not isinstance(out[made[0]], Assign)
                or counts[u] != 1
            ):
                continue
            value = out[made[0]].value
            ufunc = _ufunc_rule(value.op) if isinstance(value, Call) and not value.kwargs else None
            if ufunc is None:
                continue
            row = fresh(f"{rows}_row")
            loc = out[made[0]].loc
            del out[stores[0]]
            out[made[0] : made[0] + 1] = [
                Assign(row, Call("getitem", (Var(rows), Var(loop.target))), loc),
                Assign(u, Call(ufunc, value.args, (("out", Var(row)),)), loc, out[made[0]].note),
            ]
        return out

    def start_from_product(out, after):
        """`acc = zeros` before the loop and `acc += P` after it, nothing reading acc in
        between: `acc = P`."""
        for update in list(after):  # (after changes as products are computed into accs)
            if not (
                isinstance(update.value, Call)
                and update.value.op in ("iadd_op", "add_op")
                and update.value.args[0] == Var(update.target)
            ):
                continue
            acc = update.target
            for j in range(len(out) - 1, -1, -1):
                if acc in writes_of(out[j]) or acc in reads_of(out[j]) or child_blocks(out[j]):
                    break
            else:
                continue
            first = out[j]
            value = first.value if isinstance(first, Assign) else None
            if isinstance(value, Var):  # `d_W = zeros_like_W`, the zeros made just before
                value = next(
                    (s.value for s in out[:j] if isinstance(s, Assign) and s.target == value.name),
                    None,
                )
            later_reads = [s for s in walk(out[j + 1 :]) if acc in reads_of(s)]
            if (
                isinstance(value, Call)
                and value.op in ("np_zeros_like", "np_zeros")
                and not later_reads
            ):
                del out[j]
                product = update.value.args[1].name  # computed into acc itself
                if not any(isinstance(s, Assign) and s.target == product for s in after):
                    # a row buffer the loop filled: acc is that buffer
                    at = next(k for k, s in enumerate(after) if s is update)
                    after[at] = Assign(acc, Var(product), update.loc, update.note)
                    continue
                after[:] = [
                    Assign(acc, s.value, s.loc, s.note)
                    if isinstance(s, Assign) and s.target == product
                    else s
                    for s in after
                    if s is not update
                ]

    def run(stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, For):
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
                before, stmt, after = batch(stmt)
                if after:
                    start_from_product(out, after)
                out += before + [stmt] + after
                continue
            if isinstance(stmt, If):
                stmt = If(stmt.test, run(stmt.body), run(stmt.orelse), stmt.loc)
            elif isinstance(stmt, While):
                stmt = While(run(stmt.test_body), stmt.test, run(stmt.body), stmt.loc)
            out.append(stmt)
        return out

    return run(body)


# Below 16 KiB an allocation costs less than the keyword call computing into a buffer
# (`np.add(a, b, out=a)`: ~0.15 µs more than `a + b`); from there on, computing in place
# keeps the working set in cache (the MLP's 32 KiB activations: 5-8% faster, A/B in one
# process).
BUFFER_REUSE_MIN_BYTES = 1 << 14
# Below 256 KiB a result is computed only into the buffer of its first operand dying there,
# a temporary's or an adjoint's, where that reads as the update it is (`d_h *= 1.0 - h * h`,
# `np.tanh(h, out=h)`): a user's value (`h` squared into h's buffer) or any dead buffer of
# the shape is taken from here on only, where allocating costs page faults (an MLP with
# 4096x1024 activations: `d_h *= 1.0 - h * h` 56-70 ms, into h's buffer 27-35 ms)
READABLE_BUFFER_MAX_BYTES = 1 << 18
# CuPy allocates from a pool and fuses a statement's elementwise run into one kernel, which
# computing into buffers statement by statement would split
CUPY_BUFFER_REUSE_MIN_BYTES = 1 << 19
NEGATE_PRODUCTS_MIN_BYTES = 1 << 19  # (negate_products, measured at 800 KB)


def _ufunc_rule(op):
    """The rule spelled as the numpy ufunc for `op` (mul_op -> multiply), or None."""
    rule = RULES[op]
    if rule.kind != "elementwise":
        return None
    for candidate in (rule, RULES.get(rule.family)):
        if candidate is not None and isinstance(candidate.fn, np.ufunc):
            return candidate.name
    return None


def _fresh_result(value) -> bool:
    """A call whose result is a new array no other name refers to: an op the registry marks
    "fresh" (a matrix product's; not einsum's: np.einsum("ij->ji", a) is a view of a) or a
    ufunc's. (For lists and tuples, `+` and unindex make a new sequence holding the same
    items: `_last_uses` asks for an array result too.)"""
    return (
        isinstance(value, Call)
        and not value.kwargs
        and (ops.has(value.op, "fresh") or _ufunc_rule(value.op) is not None)
    )


def drop_unread_saves(body: list) -> list:
    """The pushes of a variable whose restored values the backward never reads, with their
    pops: the saved-value stack without the values kept for nothing (a loop-invariant the
    loop batching now reads as rows, `U_xs` in an outer loop). The reverse pass pushes a
    variable where the forward overwrites it and pops it, into the same name, where the
    backward restores it, so dropping every push and pop of one name keeps the others in
    order; only when the counts of the two statements agree."""
    marker = next((i for i, s in enumerate(body) if isinstance(s, Marker)), None)
    if marker is None:
        return body
    backward = list(walk(body[marker + 1 :]))
    read = {n for s in backward for n in reads_of(s)}
    pops: dict = defaultdict(int)
    for s in backward:
        if isinstance(s, Pop):
            pops[s.target] += 1
    pushes: dict = defaultdict(int)
    for s in walk(body[:marker]):
        if isinstance(s, Push) and isinstance(s.value, Var):
            pushes[s.value.name] += 1
    dropped = {n for n, k in pops.items() if n not in read and pushes[n] == k}
    if not dropped:
        return body

    def run(stmts):
        out = []
        for stmt in stmts:
            if (
                isinstance(stmt, Push)
                and isinstance(stmt.value, Var)
                and stmt.value.name in dropped
                or isinstance(stmt, Pop)
                and stmt.target in dropped
            ):
                continue
            out.append(_substitute(stmt, {}, run) if child_blocks(stmt) else stmt)
        return out

    return run(body)


def assign_first_updates(body: list, params, shapes: dict, dtypes: dict) -> list:
    """`acc = np.zeros_like(x)` ... `t = f(...)`; `acc += t`, with nothing in between reading
    or writing acc, -> `acc = f(...)`: the first write to an adjoint is an assignment. The
    loop batching leaves this shape behind (an adjoint the loop used to update row by row,
    now one product after it). Top-level statements; `t` a new array of acc's shape and
    dtype that nothing else reads, whose operands nothing between assigns."""
    if not any(
        type(s) is Assign and type(s.value) is Call and s.value.op in ("np_zeros_like", "np_zeros")
        for s in body
    ):
        return list(body)  # (no zeros to start from: nothing to look for)
    counts = _assign_counts(body, params)
    reads = read_counts(body)
    at = {s.target: i for i, s in enumerate(body) if isinstance(s, Assign)}

    def zeros(value):
        if isinstance(value, Var) and value.name in at and reads[value.name] == 1:
            value = body[at[value.name]].value
        return isinstance(value, Call) and value.op in ("np_zeros_like", "np_zeros")

    out = list(body)
    for i, stmt in enumerate(body):
        if not (isinstance(stmt, Assign) and counts[stmt.target] == 2 and zeros(stmt.value)):
            continue
        acc = stmt.target
        j = next(
            (
                k
                for k in range(i + 1, len(body))
                if any(acc in reads_of(s) or acc in writes_of(s) for s in walk([body[k]]))
            ),
            None,
        )
        update = body[j].value if j is not None and isinstance(body[j], Assign) else None
        if not (
            isinstance(update, Call)
            and update.op == "iadd_op"
            and update.args[0] == Var(acc)
            and isinstance(update.args[1], Var)
        ):
            continue
        part = update.args[1].name
        k = at.get(part)
        made = body[k].value if k is not None and k < j else None
        operands = {a for a in reads_of(body[k])} if made is not None else set()
        if (
            made is None
            or counts[part] != 1
            or reads[part] != 1
            or not makes_new_value(made)
            or shapes.get(part) != shapes.get(acc)
            or dtypes.get(part) != dtypes.get(acc)
            or shapes.get(acc) is None
            or any(operands & set(writes_of(s)) for s in walk(body[k + 1 : j]))
        ):
            continue
        out[i] = out[k] = None
        out[j] = Assign(acc, made, body[j].loc, merge_notes(body[k].note, body[j].note))
    return [s for s in out if s is not None]


def makes_new_value(value) -> bool:
    """Whether this call always returns a value nothing else refers to: a new array (or
    a scalar) from a ufunc written without out=, a product, or a reduction."""
    return _fresh_result(value) or (
        isinstance(value, Call)
        and ops.has(value.op, "reduction")
        and all(k not in ("out", "where") for k, _ in value.kwargs)
    )


def _family(op) -> str | None:
    """The computation an op spells (`x * y` and np.multiply: "multiply"), from the registry."""
    return ops.get(op).family if op in ops.RULES else None


# a sum or difference, and the operator that writes it
_SUM_OPERATORS = {"add": "add_op", "subtract": "sub_op"}


def _bilinear(op) -> bool:
    """Linear in each of its inputs separately (matmul, dot, outer, inner, tensordot)."""
    return op in ops.RULES and ops.get(op).linear == "multi"


def sink_scalar_factors(
    body: list, params, shapes: dict, dtypes: dict, numbers: frozenset = frozenset()
) -> list:
    """Multiply an adjoint by its constant factors once, where it is needed, instead of at
    every rule that contributes one: `d * 2.0`, `-d`, `d * math.log(2.0)`, `d / (2.0 * v)`.

    The backward is linear in the adjoint, so a number factor commutes with the rest of
    a chain of products and quotients: each array op that only scales is dropped, its
    factor carried with the value and folded into one product, which is applied when
    the value is read by anything that is not a product, a quotient or a sum with the
    same factor (the return, a matrix product, a loop). What an expert does by hand on
    an elementwise chain (`g *= ln2 / ln10` at the end). Backward statements at the top
    level only, values read once (a value read twice would carry its factor into both
    readers), and only constants: number literals and calls of numbers (`math.log(2.0)`).
    Floating arrays, and the floating numbers named in `numbers` (on Python floats a
    negation is an operation too: `a / b * -2.0` instead of `-a / b * 2.0`). Reordering a
    product changes its rounding, as any reassociation does.
    """
    marker = next((i for i, s in enumerate(body) if isinstance(s, Marker)), None)
    if marker is None:
        return body
    numbers = set(numbers)
    counts = _assign_counts(body, params)
    uses = read_counts(body)
    taken = set(params) | set(counts) | set(uses)
    constants = {
        s.target
        for s in body
        if isinstance(s, Assign)
        and isinstance(s.value, Call)
        and RULES[s.value.op].pure
        and not s.value.kwargs
        and counts[s.target] == 1
        and s.value.args
        and all(_number(a) for a in s.value.args)
        and not shapes.get(s.target)
    }

    def factor(atom):
        return _number(atom) or (isinstance(atom, Var) and atom.name in constants)

    def array(name):
        # floating values only: a boolean mask times a factor is a float array (a sum of two
        # masks carrying one factor would be a logical or, a negated mask an error)
        if name in numbers:
            return name not in constants  # (a constant is a factor, not a value scaled)
        dtype = dtypes.get(name)
        return len(shapes.get(name) or ()) > 0 and dtype is not None and _inexact(dtype)

    def run(materialized):
        """The rewritten backward, and the names bound to a value with factors applied.
        A value keeps its name while it carries factors unless it is bound later (then
        the value without them is `<name>_unscaled`)."""
        carried: dict = {}  # name -> (the name holding its value without the factors, factors)
        bound: set = set()
        held_names: set = set()  # arrays this pass names (values without their factors)
        out = list(body[: marker + 1])
        fresh = _namer(set(taken))

        def held_name(target):
            name = fresh(f"{target}_unscaled") if target in materialized else target
            held_names.add(name)
            if target in numbers:
                numbers.add(name)
            shapes[name], dtypes[name] = shapes.get(target), dtypes.get(target)
            return name

        def value_of(atom):
            """(the atom holding it without factors, its factors)."""
            if isinstance(atom, Var) and atom.name in carried:
                name, factors = carried[atom.name]
                return Var(name), factors
            return atom, ()

        def materialize(name, loc):
            """Bind `name` to its value, the factors applied: one product of numbers, then
            one array op."""
            held, factors = carried.pop(name)
            bound.add(name)
            number, scale = 1.0, None  # the numbers folded now; the named constants' product
            for atom, power in factors:
                if isinstance(atom, Const):
                    number = number * atom.value if power > 0 else number / atom.value
                elif scale is None and power > 0:
                    scale = atom
                else:
                    scale = emit(
                        name,
                        Call("mul_op" if power > 0 else "div_op", (scale or Const(1.0), atom)),
                        loc,
                    )
            if scale is None:
                value = (
                    Var(held)
                    if number == 1.0
                    else Call("neg_op", (Var(held),))
                    if number == -1.0
                    else Call("mul_op", (Var(held), Const(number)))
                )
            else:
                if number == -1.0:
                    scale = emit(name, Call("neg_op", (scale,)), loc)
                elif number != 1.0:
                    scale = emit(name, Call("mul_op", (Const(number), scale)), loc)
                value = Call("mul_op", (Var(held), scale))
            out.append(Assign(name, value, loc, "constant factors"))

        def emit(name, call, loc):
            target = fresh(f"{name}_scale")
            out.append(Assign(target, call, loc, "constant factors"))
            return Var(target)

        def sink(stmt, op, args, arrays):
            """(held name, factors) for a statement that scales or combines carried values,
            emitting what it computes without the factors; None if it reads them as is.
            `arrays`: per operand, whether it is an array that may stand for the result (a
            value carried as `-x` stands for x, read later where it is used: only a name
            assigned once holds the same value there)."""
            if _family(op) == "multiply" and len(args) == 2:
                (a, fa), (b, fb) = args
                if factor(b) and arrays[0]:
                    return a.name, fa + fb + ((b, 1),)
                if factor(a) and arrays[1]:
                    return b.name, fb + fa + ((a, 1),)
                if fa or fb:
                    held = held_name(stmt.target)
                    out.append(Assign(held, Call(op, (a, b)), stmt.loc, stmt.note))
                    return held, fa + fb
            elif _family(op) == "negative" and len(args) == 1 and arrays[0]:
                ((a, fa),) = args
                return a.name, fa + ((Const(-1.0), 1),)
            elif _family(op) == "divide" and len(args) == 2:
                (a, fa), (b, fb) = args
                if factor(b) and arrays[0]:
                    return a.name, fa + tuple((f, -p) for f, p in fb) + ((b, -1),)
                if fa or fb:
                    held = held_name(stmt.target)
                    out.append(Assign(held, Call(op, (a, b)), stmt.loc, stmt.note))
                    return held, fa + tuple((f, -p) for f, p in fb)
            elif (
                _family(op) in _SUM_OPERATORS
                and len(args) == 2
                and args[0][1]
                and args[0][1] == args[1][1]
                and uses[stmt.target] == 1
            ):
                (a, fa), (b, _) = args  # a * k + b * k = (a + b) * k
                held = held_name(stmt.target)
                out.append(
                    Assign(held, Call(_SUM_OPERATORS[_family(op)], (a, b)), stmt.loc, stmt.note)
                )
                return held, fa
            elif (
                _family(op) in _SUM_OPERATORS
                and len(args) == 2
                and not args[0][1]
                and args[1][1] == ((Const(-1.0), 1),)
            ):
                (a, _), (b, _) = args  # a + -b = a - b, and a - -b = a + b
                flipped = "sub_op" if _family(op) == "add" else "add_op"
                out.append(Assign(stmt.target, Call(flipped, (a, b)), stmt.loc, stmt.note))
                return stmt.target, ()
            elif _bilinear(op) and len(args) == 2 and bool(args[0][1]) != bool(args[1][1]):
                (a, fa), (b, fb) = args  # X.T @ (d * k) = (X.T @ d) * k: k on the smaller side
                held = held_name(stmt.target)
                out.append(Assign(held, Call(op, (a, b)), stmt.loc, stmt.note))
                return held, fa or fb
            elif (
                ops.has(op, "linear_in_first")
                and args
                and args[0][1]
                and not any(f for _, f in args[1:])
            ):
                (a, fa) = args[0]  # sum(a * k) = sum(a) * k
                held = held_name(stmt.target)
                out.append(
                    Assign(
                        held,
                        Call(op, (a,) + tuple(x for x, _ in args[1:]), stmt.value.kwargs),
                        stmt.loc,
                        stmt.note,
                    )
                )
                return held, fa
            return None

        for stmt in body[marker + 1 :]:
            value = stmt.value if isinstance(stmt, Assign) else None
            sinkable = (
                isinstance(value, Call)
                and not stmt.in_place
                and (not value.kwargs or ops.has(value.op, "linear_in_first"))
                and all(k != "out" for k, _ in value.kwargs)
                and counts[stmt.target] == 1
                and array(stmt.target)
                and (uses[stmt.target] == 1 or _family(value.op) in _SUM_OPERATORS)
            )  # (a + -b: no factor left)
            op = value.op if sinkable else None
            args = [value_of(a) for a in value.args] if sinkable else []
            arrays = [
                isinstance(a, Var)
                and (array(a.name) or a.name in held_names)
                and (counts[a.name] == 1 or a.name in held_names)
                for a, _ in args
            ]
            sunk = sink(stmt, op, args, arrays) if sinkable else None
            if sunk is not None:
                for a in value.args:  # (each was read once: here)
                    if isinstance(a, Var):
                        carried.pop(a.name, None)
                if sunk[1]:
                    carried[stmt.target] = sunk
                continue
            if carried:
                read = {n for s in walk([stmt]) for n in reads_of(s)}  # (in nested blocks too)
                for n in sorted(n for n in read if n in carried):
                    materialize(n, stmt.loc)
            out.append(stmt)
        for name in sorted(carried):  # (nothing reads them: dead-code elimination drops them)
            materialize(name, None)
        return out, bound

    _, bound = run(set())
    return run(bound)[0]


def _inexact(dtype) -> bool:
    """A floating or complex dtype (asked per statement: numpy's answer remembered)."""
    known = _INEXACT.get(dtype)
    if known is None:
        known = _INEXACT[dtype] = np.dtype(dtype).kind in "fc"
    return known


_INEXACT: dict = {}


def _number(atom) -> bool:
    return (
        isinstance(atom, Const)
        and isinstance(atom.value, (int, float))
        and not isinstance(atom.value, bool)
    )


def reuse_dead_buffers(
    body: list,
    params,
    shapes: dict,
    dtypes: dict,
    keep_residuals: bool = False,
    min_bytes: int | None = None,
    user_names=frozenset(),
) -> list:
    """Compute an elementwise result into a large buffer that is dead there:
    `t = np.exp(u, out=u)` when nothing reads u afterwards, or `t = np.cos(v, out=w)`
    with w an array of t's shape and dtype that nothing reads any more. A buffer can be
    taken when this function made it (not an input, not a view) and nothing holds a
    reference to it past that point: every reader made a new array from it, or a view
    that is itself dead by then. This is what a hand-written gradient does with its
    buffers: the backward of an elementwise chain then allocates nothing, and the peak
    memory is what the forward keeps. Top-level statements only (a value in a loop may
    be read by the next trip). Arrays of at least `min_bytes` (BUFFER_REUSE_MIN_BYTES);
    below READABLE_BUFFER_MAX_BYTES only where the update reads as one (`_readable_reuse`:
    `user_names` are the values not to overwrite there).
    """
    counts = _assign_counts(body, params)
    min_bytes = BUFFER_REUSE_MIN_BYTES if min_bytes is None else min_bytes

    sizes: dict = {}  # (shape, dtype) -> bytes (asked once a statement: math, not numpy)

    def nbytes(name):
        shape, dtype = shapes.get(name), dtypes.get(name)
        # an operation on 0-d arrays returns a numpy scalar, which cannot be written into
        if shape is None or len(shape) == 0 or dtype is None:
            return 0
        key = (tuple(shape), dtype)
        size = sizes.get(key)
        if size is None:
            size = sizes[key] = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return size

    def large(name):
        size = nbytes(name)
        return size > 0 and size >= min_bytes

    owned = {
        s.target
        for s in body
        if type(s) is Assign
        and counts[s.target] == 1
        and s.target not in params
        and _fresh_result(s.value)
        and large(s.target)
    }
    if not owned:
        return list(body)  # (no buffer to reuse: the last uses need not be found)
    last_use = _last_uses(body, shapes)
    made_at = {s.target: i for i, s in enumerate(body) if isinstance(s, Assign)}
    # a pullback's backward runs apart from its forward, maybe more than once: what the
    # forward made and the backward reads (the residuals) is never overwritten
    split = (
        next((i for i, s in enumerate(body) if isinstance(s, Marker)), -1) if keep_residuals else -1
    )
    # the buffers that fit a result: owned, of its shape and dtype, made before it and,
    # with residuals kept, not made by the forward and read by the backward
    kind = {n: (shapes[n], dtypes[n]) for n in owned}
    usable = {n for n in owned if not (made_at[n] < split < last_use[n])}
    # a large buffer the forward lets die before the backward begins is freed there (the
    # printer deletes its name: lifetimes.freed_after_last_use): the backward does not take
    # it, which would hold it through the backward's first statements
    backward_at = next((i for i, s in enumerate(body) if isinstance(s, Marker)), len(body))
    # per shape and dtype, a heap of the buffers dead so far, the one that died last on top
    # (then by name); each goes in once it is dead (after its statement and its last use),
    # and one taken is dropped when it comes to the top: O(n log n), where looking through
    # every buffer for every statement was quadratic in a long function's length
    dying = sorted((max(made_at[n], last_use[n]) + 1, n) for n in usable)
    dead: dict = defaultdict(list)
    k = 0
    out = list(body)

    def freed_before_backward(n):
        return last_use[n] < backward_at < i and nbytes(n) >= FREE_MIN_BYTES

    for i, stmt in enumerate(body):
        while k < len(dying) and dying[k][0] <= i:
            n = dying[k][1]
            heapq.heappush(dead[kind[n]], (-last_use[n], n))
            k += 1
        if not (isinstance(stmt, Assign) and stmt.target in owned):
            continue
        ufunc = _ufunc_rule(stmt.value.op)
        if ufunc is None:
            continue
        target = stmt.target

        def fits(n):
            return (
                n in owned
                and n in usable
                and n != target
                and made_at[n] < i
                and kind[n] == kind[target]
                and not freed_before_backward(n)
            )

        # an operand that dies here first (as a hand-written `np.exp(u, out=u)`), then the
        # buffer that died last (its memory is the likeliest to be in cache)
        buffer = next(
            (
                a.name
                for a in stmt.value.args
                if isinstance(a, Var) and fits(a.name) and last_use[a.name] == i
            ),
            None,
        )
        if nbytes(target) < READABLE_BUFFER_MAX_BYTES:
            if buffer is not None and _readable_reuse(ufunc, stmt.value.args, buffer, user_names):
                out[i] = Assign(
                    target,
                    Call(ufunc, stmt.value.args, (("out", Var(buffer)),)),
                    stmt.loc,
                    stmt.note,
                )
                owned.discard(buffer)
            continue
        if buffer is None:
            heap = dead.get(kind[target], ())
            while heap and (heap[0][1] not in owned or freed_before_backward(heap[0][1])):
                heapq.heappop(heap)  # taken already, or freed before the backward
            if heap:
                buffer = heapq.heappop(heap)[1]
        if buffer is not None:
            out[i] = Assign(
                target, Call(ufunc, stmt.value.args, (("out", Var(buffer)),)), stmt.loc, stmt.note
            )
            owned.discard(buffer)  # its memory now holds the result, which can be reused
    return out


_AUGMENTED = (np.add, np.subtract, np.multiply, np.divide)


def _readable_reuse(ufunc, args, buffer, user_names) -> bool:
    """Whether computing `ufunc(*args)` into `buffer`, an operand, reads as an update of it:
    `buffer op= b` (the first operand of + - * /) or `np.f(buffer, out=buffer)` (a unary
    ufunc), and `buffer` is a temporary or an adjoint, not a value the user named (its
    name would then print something else: h's buffer holding h * h)."""
    if _family_name(buffer) in user_names or buffer in user_names:
        return False
    if len(args) == 1:
        return True
    return RULES[ufunc].fn in _AUGMENTED and args[0] == Var(buffer)


def _family_name(name: str) -> str:
    """A name without its version suffix (`v_18` -> `v`): the user's name of a version."""
    head, _, tail = name.rpartition("_")
    return head if head and tail.isdigit() else name


def _last_uses(body: list, shapes: dict) -> dict:
    """name -> the index of the last top-level statement that reads it, or could through
    a value holding a reference to it (a view, a list, an alias): only a reader that
    makes a new array ends the reference. A value something returns, pushes or stores
    is used to the end."""
    readers: dict = defaultdict(list)
    for i, stmt in enumerate(body):
        for s in walk([stmt]):
            for n in reads_of(s):
                readers[n].append((i, s))
    forever = len(body)
    memo: dict = {}

    def last(name, seen=()):
        if name in memo:
            return memo[name]
        if name in seen:
            return forever
        end = -1
        for i, s in readers.get(name, ()):
            if (
                isinstance(s, Assign)
                and _fresh_result(s.value)
                and len(shapes.get(s.target) or ()) > 0
            ):  # an array, not a list or a number
                end = max(end, i)
            elif isinstance(s, Assign):  # it may refer to `name`'s memory: follow it
                end = max(end, i, last(s.target, seen + (name,)))
            else:
                end = forever
        memo[name] = end
        return end

    return defaultdict(lambda: -1, {name: last(name) for name in list(readers)})


class _Cleaner:
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


def optimize(
    fn: Function,
    shapes: dict | None = None,
    dtypes: dict | None = None,
    keep_residuals: bool = False,
    backend: str = "numpy",
    numbers: frozenset = frozenset(),
) -> Function:
    """Copy propagation and CSE, then dead-code elimination (see the module docstring).

    `shapes` (name -> shape tuple, from the signature) lets values that are computed
    only for their shape be replaced by that shape; with `dtypes` too, rank-one updates
    accumulated in a loop become one matrix product after it. `backend` sets the size
    from which results are computed into dead buffers (never for dask and numba);
    `numbers` names the values that
    are floating numbers (Python floats, numpy floating scalars).
    """
    clean = _Cleaner(fn.params)
    body = clean(fn.body)
    arrays = bool(shapes) and bool(dtypes)
    # sizes read from the inputs (`len(Y)`) where code is read; numbers where a kernel is
    # fused (cupy.fuse, numba_fusion), which a call in an elementwise run would break up
    user_names = fn.user_names if backend not in ("cupy", "numba") else None
    if shapes:
        body = clean(inline_shape_only_values(body, set(fn.params), shapes, user_names))
    if arrays:
        # (an accumulator that became a row buffer is a copy of it now)
        body = clean(batch_rank_one_updates(body, set(fn.params), shapes, dtypes, user_names))
        body = eliminate_dead_code(assign_first_updates(body, set(fn.params), shapes, dtypes))
    if arrays or numbers:
        shapes, dtypes = dict(shapes or {}), dict(dtypes or {})  # (the pass names new values)
        body = eliminate_dead_code(
            sink_scalar_factors(body, set(fn.params), shapes, dtypes, numbers)
        )
    if arrays:
        body = eliminate_dead_code(drop_unread_saves(body))
    # (dask arrays are immutable: no `out=`; numba fuses runs of elementwise statements into
    # one pass over memory (numba_fusion), which computing into buffers would split)
    if arrays and backend not in ("dask", "numba"):
        body = reuse_dead_buffers(
            body,
            set(fn.params),
            shapes,
            dtypes,
            keep_residuals,
            CUPY_BUFFER_REUSE_MIN_BYTES if backend == "cupy" else None,
            frozenset(fn.user_names),
        )
    body = hoist_transposes(body, set(fn.params))
    return Function(
        fn.name,
        fn.params,
        body,
        fn.source_file,
        fn.loc,
        fn.free,
        fn.user_names,
        fn.dependencies,
        fn.stack,
    )


def batch_row_products(fn: Function, env: dict) -> Function:
    """`for t in range(len(xs)): ... U @ xs[t] ...` -> `U_xs = xs @ U.T` before the loop and
    `U_xs[t]` in it: the products of a matrix the function never writes with every row
    of an array it never writes, as one matrix product instead of one per trip.

    Runs on the primal, with its abstract values (`env`), before differentiation, which
    then sees an ordinary product and an ordinary item: its backward is one product
    after the backward loop too. Only for a loop over all the rows of `xs` (range of its
    length, no break) and 2-d float arrays; `x_t @ V` (a row times a matrix) likewise.
    A row of a matrix product equals the vector product up to the order of the sums
    (rounding), which is the change every optimizing compiler makes to a product.
    """
    counts = _assign_counts(fn.body, fn.params)
    defs = {
        s.target: s.value for s in walk(fn.body) if isinstance(s, Assign) and counts[s.target] == 1
    }
    taken = (
        set(fn.params)
        | set(fn.free)
        | set(defs)
        | {n for s in walk(fn.body) for n in (*writes_of(s), *reads_of(s))}
    )

    def never_written(name):
        return counts[name] == (1 if name in fn.params else 0)

    def matrix(name):
        aval = env.get(name)
        return (
            aval is not None
            and isinstance(aval.stand_in, np.ndarray)
            and aval.stand_in.ndim == 2
            and aval.stand_in.dtype.kind == "f"
        )

    fresh = _namer(taken)

    def batch(loop):
        items = {
            s.target: s.value.args[0].name
            for s in loop.body
            if isinstance(s, Assign)
            and isinstance(s.value, Call)
            and s.value.op == "getitem"
            and counts[s.target] == 1
            and s.value.args[1] == Var(loop.target)
            and isinstance(s.value.args[0], Var)
        }
        before, body = [], []
        for stmt in loop.body:
            value = stmt.value if isinstance(stmt, Assign) else None
            if (
                isinstance(value, Call)
                and value.op == "matmul_op"
                and all(isinstance(a, Var) for a in value.args)
            ):
                left, right = (a.name for a in value.args)
                row, other = (right, left) if right in items else (left, right)
                rows = items.get(row)
                if (
                    rows is not None
                    and other not in items
                    and never_written(rows)
                    and never_written(other)
                    and matrix(rows)
                    and matrix(other)
                    and loop.stop_flag is None
                    and counts[loop.target] == 2
                    and _over_all_rows(loop, rows, defs, env[rows].shape)
                ):
                    product = fresh(f"{other}_{rows}" if row == right else f"{rows}_{other}")
                    if row == right:  # U @ xs[t] is row t of xs @ U.T
                        transposed = fresh(f"{other}_T")
                        before += [
                            Assign(transposed, Call("T", (Var(other),)), stmt.loc),
                            Assign(
                                product, Call("matmul_op", (Var(rows), Var(transposed))), stmt.loc
                            ),
                        ]
                    else:  # xs[t] @ V is row t of xs @ V
                        before.append(
                            Assign(product, Call("matmul_op", (Var(rows), Var(other))), stmt.loc)
                        )
                    stmt = Assign(
                        stmt.target,
                        Call("getitem", (Var(product), Var(loop.target))),
                        stmt.loc,
                        stmt.note,
                    )
            body.append(stmt)
        body = _add_invariants_to_rows(body, loop, before, counts, env, fresh)
        return before, For(
            loop.target,
            loop.start,
            loop.stop,
            loop.step,
            body,
            loop.loc,
            loop.stop_flag,
            loop.reverse,
        )

    changed = False

    def run(stmts):
        nonlocal changed
        out = []
        for stmt in stmts:
            if isinstance(stmt, For):
                before, stmt = batch(stmt)
                changed = changed or bool(before)
                out += before
            if child_blocks(stmt):
                stmt = _substitute(stmt, {}, run)
            out.append(stmt)
        return out

    body = run(fn.body)
    if not changed:
        return fn
    return Function(
        fn.name, fn.params, body, fn.source_file, fn.loc, fn.free, fn.user_names, fn.dependencies
    )


def _add_invariants_to_rows(body, loop, before, counts, env, fresh):
    """`s = p + rows[t]; r = s + b` -> `r = p + rows_plus_b[t]`, and `r = rows[t] + b` ->
    `r = rows_plus_b[t]`, with `rows_plus_b = rows + b` before the loop, for the batched
    products `before` made (`rows`) and a `b` the loop never writes that adds to a row as
    it adds to every row (a bias: `W @ h + U @ x_t + b` adds it once for all rows, as BPTT
    is written by hand). Reassociating the sum changes its rounding only."""
    batched = {s.target for s in before if isinstance(s, Assign) and s.value.op == "matmul_op"}
    written = {n for s in walk(body) for n in writes_of(s)} | {loop.target}
    reads = read_counts(body)
    index = {s.target: i for i, s in enumerate(body) if isinstance(s, Assign)}

    def add_args(stmt):
        ok = (
            isinstance(stmt, Assign)
            and isinstance(stmt.value, Call)
            and stmt.value.op == "add_op"
            and counts[stmt.target] == 1
        )
        return stmt.value.args if ok else None

    def row_of(atom, i):
        """The batched array whose row `atom` is, when nothing else reads that row."""
        if not (isinstance(atom, Var) and atom.name in index and index[atom.name] < i):
            return None
        value = body[index[atom.name]].value
        ok = (
            isinstance(value, Call)
            and value.op == "getitem"
            and isinstance(value.args[0], Var)
            and value.args[0].name in batched
            and value.args[1:] == (Var(loop.target),)
            and reads[atom.name] == 1
            and counts[atom.name] == 1
        )
        return value.args[0].name if ok else None

    def invariant(atom, row):
        """A term the loop never changes, shaped to add to one row as to all of them."""
        if isinstance(atom, Const):
            return isinstance(atom.value, float)
        aval = env.get(atom.name) if isinstance(atom, Var) else None
        return (
            aval is not None
            and atom.name not in written
            and getattr(aval.stand_in, "dtype", np.dtype(float)).kind == "f"
            and (aval.shape == () or row.name in env and aval.shape == env[row.name].shape)
        )

    def shifted(rows, term, loc):
        name = fresh(f"{rows}_plus_{term.name if isinstance(term, Var) else 'c'}")
        before.append(Assign(name, Call("add_op", (Var(rows), term)), loc))
        return Call("getitem", (Var(name), Var(loop.target)))

    out = list(body)
    for i, stmt in enumerate(body):
        args = add_args(stmt)
        if args is None or out[i] is None:
            continue
        for k, row in enumerate(args):
            rows, other = row_of(row, i), args[1 - k]
            if rows is None:
                continue
            if invariant(other, row):  # rows[t] + b
                out[index[row.name]] = None
                out[i] = Assign(stmt.target, shifted(rows, other, stmt.loc), stmt.loc, stmt.note)
                break
            users = [j for j in range(i + 1, len(body)) if stmt.target in reads_of(body[j])]
            outer = (
                add_args(body[users[0]]) if len(users) == 1 and reads[stmt.target] == 1 else None
            )
            if outer is None:
                continue
            total = body[users[0]]
            term = outer[1] if outer[0] == Var(stmt.target) else outer[0]
            if (
                term == Var(stmt.target)
                or not invariant(term, row)
                or any(total.target in reads_of(s) for s in walk(body[i + 1 : users[0]]))
            ):
                continue  # (the sum moves up to statement i: nothing in between reads it)
            # p + rows[t] + b: the row of rows + b where the partial sum was
            out[index[row.name]] = Assign(
                row.name, shifted(rows, term, total.loc), body[index[row.name]].loc
            )
            out[i] = Assign(total.target, stmt.value, total.loc, total.note)
            out[users[0]] = None
            break
    return [s for s in out if s is not None]


def negate_products(fn: Function, env: dict) -> Function:
    """`t = -a; u = t * b` -> `p = a * b; u = -p`, for an array `a` the function did not make
    (an input: `-y * (X @ w)`) and a product of `t`'s shape. The same numbers (negation
    is exact and commutes with the product), but the negation is of a value the function
    made, so it can be done in that value's buffer, and the backward reads `a`, which it
    has anyway, instead of keeping `-a`: one array less to allocate and hold. Only for
    arrays of at least NEGATE_PRODUCTS_MIN_BYTES: a small array costs little to allocate,
    and the negation its backward then applies separately would cost more. Top-level
    statements of the primal, before differentiation.
    """
    counts = _assign_counts(fn.body, fn.params)
    reads = read_counts(fn.body)
    made = {s.target for s in walk(fn.body) if isinstance(s, Assign)}
    fresh = _namer(set(fn.params) | set(fn.free) | made | set(reads))

    def shape(atom):
        """The shape of a large array (None for anything else)."""
        aval = env.get(atom.name) if isinstance(atom, Var) else None
        value = getattr(aval, "stand_in", None)
        return (
            value.shape
            if isinstance(value, np.ndarray)
            and value.size * value.itemsize >= NEGATE_PRODUCTS_MIN_BYTES
            else None
        )

    negated = {
        s.target: s.value.args[0]
        for s in fn.body
        if isinstance(s, Assign)
        and isinstance(s.value, Call)
        and s.value.op == "neg_op"
        and counts[s.target] == 1
        and reads[s.target] == 1
        and isinstance(s.value.args[0], Var)
        and s.value.args[0].name not in made
    }
    body, dropped = [], set()
    for stmt in fn.body:
        value = stmt.value if isinstance(stmt, Assign) else None
        if isinstance(value, Call) and value.op == "mul_op" and counts[stmt.target] == 1:
            for k, t in enumerate(value.args):
                a = negated.get(t.name) if isinstance(t, Var) else None
                if a is None or shape(t) is None or shape(t) != shape(Var(stmt.target)):
                    continue
                args = list(value.args)
                args[k] = a
                other = args[1 - k]
                product = fresh(f"{a.name}_{other.name if isinstance(other, Var) else 'c'}")
                body.append(Assign(product, Call("mul_op", tuple(args)), stmt.loc))
                stmt = Assign(stmt.target, Call("neg_op", (Var(product),)), stmt.loc, stmt.note)
                dropped.add(t.name)
                break
        body.append(stmt)
    if not dropped:
        return fn
    body = [s for s in body if not (isinstance(s, Assign) and s.target in dropped)]
    return Function(
        fn.name, fn.params, body, fn.source_file, fn.loc, fn.free, fn.user_names, fn.dependencies
    )


def hoist_loop_invariants(fn: Function) -> Function:
    """Move pure computations that do not change across iterations out of loops.

    Runs on the primal, before differentiation: a value computed once is not
    overwritten, so the backward reads it directly instead of saving it every
    iteration (`-k` in a spring integrator). Only temporaries at the top level of
    a loop body move (not user variables, nor anything under a branch).
    """
    counts = _assign_counts(fn.body, fn.params)

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
    counts = _assign_counts(body, params)

    def run(stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, (For, While)):
                hoisted, stmt = _hoist(stmt, counts, (), only=("T",))
                out.extend(hoisted)
            if child_blocks(stmt):
                stmt = _substitute(stmt, {}, run)
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
