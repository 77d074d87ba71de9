"""Rank-one updates in loops batched into one product after the loop.

`batch_rank_one_updates(body, params, shapes, dtypes)` takes a statement list and returns
one where a loop's rank-one updates (`acc += np.outer(u, v)`), bias sums (`acc += u`) and
row updates (`acc[t] += u`) write rows of a buffer inside the loop and are summed once
after it (`acc += U.T @ V`): one matrix product instead of T outer products.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from ..analysis.shape_names import DimensionSources
from ..ir import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    If,
    Slc,
    Tup,
    Var,
    While,
    child_blocks,
    read_counts,
    reads_of,
    walk,
    writes_of,
)
from .algebra import ufunc_rule
from .cleanup import assign_counts, namer


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


def over_all_rows(loop, array, defs, shape) -> bool:
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


def batch_rank_one_updates(
    body: list, params, shapes: dict, dtypes: dict, user_names=(), top_level=True
) -> list:
    """`for i in range(n): ... acc += np.outer(u, v)` -> the rows u and v stored in two
    (n, len) buffers in the loop, and one `acc += U.T @ V` after it. `top_level=False`: only
    loops inside another loop (under a memory plan: their buffers hold one segment's trips,
    a top-level loop's every trip).

    This is the gradient of a weight matrix through time (an RNN's dW): one matrix product
    over all steps instead of one outer product and one full-matrix addition per step,
    which is how BPTT is written by hand. Only for a loop over range(0, n) (each trip has
    its own row), an accumulator the loop touches nowhere else, and vectors of known shape.
    """
    return _RankOneBatcher(body, params, shapes, dtypes, user_names, top_level).run(body)


def _accumulation(stmt):
    """(acc, part) for `acc = acc + part` / `acc += part` with part a name; else None."""
    value = stmt.value if isinstance(stmt, Assign) else None
    if (
        isinstance(value, Call)
        and value.op in ("iadd_op", "add_op")
        and value.args[0] == Var(stmt.target)
        and isinstance(value.args[1], Var)
    ):
        return stmt.target, value.args[1].name
    return None


def _only_toucher(loop, acc, stmt) -> bool:
    """`stmt` is the only statement in the loop's body that reads or writes `acc`."""
    touching = [s for s in walk(loop.body) if acc in reads_of(s) or acc in writes_of(s)]
    return touching == [stmt]


@dataclass
class _LoopRows:
    """One loop being batched: the statements put before, in and after it, the ids of the
    updates taken out of its body, and the row buffer of each vector stored a row a trip."""

    loop: For
    body_out: list
    before: list = field(default_factory=list)
    after: list = field(default_factory=list)
    drop: set = field(default_factory=set)
    stored: dict = field(default_factory=dict)


class _RankOneBatcher:
    """The facts of one statement list (single-assignment values, read counts, fresh
    names) that `batch_rank_one_updates` reads while it rewrites its loops."""

    def __init__(self, body, params, shapes, dtypes, user_names, top_level):
        self.body, self.params, self.shapes, self.dtypes = body, params, shapes, dtypes
        self.user_names, self.top_level = user_names, top_level
        if not any(type(s) is For for s in walk(body)):
            self.counts = self.reads = self.defs = {}  # (no loop to batch: `batch` is never called)
            self.fresh = None
            return
        self.counts = assign_counts(body, params)
        self.reads = read_counts(body)
        self.fresh = namer(
            set(params) | {n for s in walk(body) for n in writes_of(s)} | set(self.reads)
        )
        self.defs = {
            s.target: s.value
            for s in walk(body)
            if isinstance(s, Assign) and self.counts[s.target] == 1
        }

    @functools.cached_property
    def sources(self):
        return DimensionSources(self.body, self.params, self.shapes, self.user_names, self.fresh)

    def run(self, stmts, nested=False):
        out = []
        for stmt in stmts:
            if isinstance(stmt, For):
                stmt = For(
                    stmt.target,
                    stmt.start,
                    stmt.stop,
                    stmt.step,
                    self.run(stmt.body, True),
                    stmt.loc,
                    stmt.stop_flag,
                    stmt.reverse,
                )
                before, stmt, after = (
                    self.batch(stmt) if nested or self.top_level else ([], stmt, [])
                )
                if after:
                    _start_from_product(out, after)
                out += before + [stmt] + after
                continue
            if isinstance(stmt, If):
                stmt = If(
                    stmt.test, self.run(stmt.body, nested), self.run(stmt.orelse, nested), stmt.loc
                )
            elif isinstance(stmt, While):
                stmt = While(
                    self.run(stmt.test_body, True), stmt.test, self.run(stmt.body, True), stmt.loc
                )
            out.append(stmt)
        return out

    def batch(self, loop):
        """(statements before the loop, the loop, statements after it) with the loop's
        rank-one updates, bias sums and row updates done after it from row buffers."""
        if not (loop.start == Const(0) and loop.step == Const(1)) or loop.stop_flag:
            return [], loop, []
        plan = _LoopRows(loop, list(loop.body))
        self.batch_outer_products(plan)
        self.batch_sums(plan)
        self.batch_row_updates(plan)
        if not plan.drop:
            return [], loop, []
        body_out = self.computed_into_rows(
            [s for s in plan.body_out if id(s) not in plan.drop],
            loop,
            plan.stored,
            {s.target for s in plan.before},
        )
        return (
            plan.before,
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
            plan.after,
        )

    def batch_outer_products(self, plan):
        """`acc += np.outer(u, v)` -> u and v stored a row a trip, `acc += U.T @ V` after."""
        loop, shapes = plan.loop, self.shapes
        made = {
            s.target: (i, s)
            for i, s in enumerate(loop.body)
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "outer"
        }
        for stmt in loop.body:
            accumulation = _accumulation(stmt)
            if accumulation is None:
                continue
            acc, part = accumulation
            if part not in made or self.counts[part] != 1 or self.reads[part] != 1:
                continue
            _, outer = made[part]
            u, v = outer.value.args
            if not all(
                isinstance(a, Var) and len(shapes.get(a.name) or ()) == 1 and a.name in self.dtypes
                for a in (u, v)
            ):
                continue
            if shapes.get(acc) != shapes[u.name] + shapes[v.name]:
                continue
            if not _only_toucher(loop, acc, stmt):
                continue
            index = plan.body_out.index(outer)
            del plan.body_out[index]
            v_rows = self.rows_of(v, outer.loc, plan, index)
            u_rows = self.rows_of(u, outer.loc, plan, index)
            plan.drop.add(id(stmt))
            transposed, product = self.fresh(f"{u_rows}_T"), self.fresh(f"{acc}_steps")
            plan.after += [
                Assign(transposed, Call("T", (Var(u_rows),)), stmt.loc, outer.note),
                Assign(
                    product, Call("matmul_op", (Var(transposed), Var(v_rows))), stmt.loc, outer.note
                ),
                Assign(acc, Call(stmt.value.op, (Var(acc), Var(product))), stmt.loc, stmt.note),
            ]

    def batch_sums(self, plan):
        """`acc += u` with u's rows stored: one sum after the loop."""
        buffers = {n for s in plan.before for n in writes_of(s)}
        for stmt in plan.loop.body:
            accumulation = _accumulation(stmt)
            if accumulation is None:
                continue
            acc, part = accumulation
            if (
                part not in plan.stored
                or self.counts[part] != 1
                or self.shapes.get(acc) != self.shapes.get(part)
                or plan.stored[part] not in buffers
            ):
                continue
            if not _only_toucher(plan.loop, acc, stmt):
                continue
            plan.drop.add(id(stmt))
            total = self.fresh(f"{acc}_steps")
            plan.after += [
                Assign(
                    total,
                    Call("sum", (Var(plan.stored[part]),), (("axis", Const(0)),)),
                    stmt.loc,
                    stmt.note,
                ),
                Assign(acc, Call(stmt.value.op, (Var(acc), Var(total))), stmt.loc, stmt.note),
            ]

    def batch_row_updates(self, plan):
        """`acc[t] += u` with u's rows stored: `acc[:n] += rows` after the loop."""
        loop = plan.loop
        for stmt in loop.body:
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
            if part not in plan.stored or self.counts[part] != 1:
                continue
            if not _only_toucher(loop, acc, stmt):
                continue
            plan.drop.add(id(stmt))
            rows = Var(plan.stored[part])
            if (
                _static_length(loop.stop, self.defs, self.shapes)
                == (self.shapes.get(acc) or (None,))[0]
            ):
                update = Call("iadd_op", (Var(acc), rows))  # every row of acc
            else:
                update = Call(
                    "iadd_item", (Var(acc), Slc(Const(None), loop.stop, Const(None)), rows)
                )
            plan.after.append(Assign(acc, update, stmt.loc, stmt.note))

    def rows_of(self, u, loc, plan, index):
        """The buffer holding u's row of each trip (one per vector assigned once a trip)."""
        loop, stored = plan.loop, plan.stored
        if u.name in stored and self.counts[u.name] == 1:
            return stored[u.name]
        array = self.item_array(u, loop, plan.body_out[:index])
        if array is not None:  # u is xs[t]: its rows are xs's first rows, stored already
            stored[u.name] = array
            return array
        rows = self.fresh(f"{u.name}_rows")
        dtype = self.dtypes[u.name]
        dtype = () if dtype == np.float64 else (("dtype", Const(str(dtype))),)
        # the row's length read from the parameter it is by construction (`len(h0)`)
        named = (
            None
            if self.user_names is None
            else self.sources.dimension(u.name, 0, loc, "one row per trip")
        )
        length = Const(self.shapes[u.name][0]) if named is None else named[1]
        plan.before.extend([] if named is None else named[0])
        plan.before.append(
            Assign(
                rows,
                Call("np_empty", (Tup((loop.stop, length)),), dtype),
                loc,
                "one row per trip",
            )
        )
        plan.body_out.insert(
            index, ExprStmt(Call("store_item", (Var(rows), Var(loop.target), u)), loc)
        )
        stored[u.name] = rows
        return rows

    def item_array(self, u, loop, earlier):
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
        shape = self.shapes.get(array)
        if (
            self.counts[array] != (1 if array in self.params else 0)
            or shape is None
            or tuple(shape[1:]) != tuple(self.shapes[u.name])
        ):
            return None
        return array if over_all_rows(loop, array, self.defs, shape) else None

    def computed_into_rows(self, body_out, loop, stored, buffers):
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
                or self.counts[u] != 1
            ):
                continue
            value = out[made[0]].value
            ufunc = ufunc_rule(value.op) if isinstance(value, Call) and not value.kwargs else None
            if ufunc is None:
                continue
            row = self.fresh(f"{rows}_row")
            loc = out[made[0]].loc
            del out[stores[0]]
            out[made[0] : made[0] + 1] = [
                Assign(row, Call("getitem", (Var(rows), Var(loop.target))), loc),
                Assign(u, Call(ufunc, value.args, (("out", Var(row)),)), loc, out[made[0]].note),
            ]
        return out


def _start_from_product(out, after):
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
