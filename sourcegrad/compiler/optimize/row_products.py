"""Row products in loops taken once before the loop, on the primal.

`batch_row_products(fn)` takes the primal `ir.Function` and returns one where a loop's
`U @ xs[t]` for every row `t` is computed once before the loop as `xs @ U.T` (and a bias the
loop adds to it, `... + b`, added to all rows there: `xs @ U.T + b`), the loop reading row
`t` of the result.
"""

from __future__ import annotations

import numpy as np

from ..ir import (
    Assign,
    Call,
    Const,
    For,
    Function,
    Var,
    child_blocks,
    read_counts,
    reads_of,
    walk,
    writes_of,
)
from .cleanup import assign_counts, namer, substitute
from .rank_one import over_all_rows


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
    batcher = _RowProducts(fn, env)
    body = batcher.run(fn.body)
    if not batcher.changed:
        return fn
    return Function(
        fn.name, fn.params, body, fn.source_file, fn.loc, fn.free, fn.user_names, fn.dependencies
    )


class _RowProducts:
    """What `batch_row_products` knows of the primal (single-assignment values, names
    taken) while it rewrites its loops; `changed` once a loop's products are batched."""

    def __init__(self, fn, env):
        self.fn, self.env = fn, env
        self.counts = counts = assign_counts(fn.body, fn.params)
        self.defs = {
            s.target: s.value
            for s in walk(fn.body)
            if isinstance(s, Assign) and counts[s.target] == 1
        }
        taken = (
            set(fn.params)
            | set(fn.free)
            | set(self.defs)
            | {n for s in walk(fn.body) for n in (*writes_of(s), *reads_of(s))}
        )
        self.fresh = namer(taken)
        self.changed = False

    def never_written(self, name):
        return self.counts[name] == (1 if name in self.fn.params else 0)

    def matrix(self, name):
        aval = self.env.get(name)
        return (
            aval is not None
            and isinstance(aval.stand_in, np.ndarray)
            and aval.stand_in.ndim == 2
            and aval.stand_in.dtype.kind == "f"
        )

    def run(self, stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, For):
                before, stmt = self.batch(stmt)
                self.changed = self.changed or bool(before)
                out += before
            if child_blocks(stmt):
                stmt = substitute(stmt, {}, self.run)
            out.append(stmt)
        return out

    def batch(self, loop):
        items = {
            s.target: s.value.args[0].name
            for s in loop.body
            if isinstance(s, Assign)
            and isinstance(s.value, Call)
            and s.value.op == "getitem"
            and self.counts[s.target] == 1
            and s.value.args[1] == Var(loop.target)
            and isinstance(s.value.args[0], Var)
        }
        before: list = []
        body = [self.batched(stmt, loop, items, before) for stmt in loop.body]
        body = _add_invariants_to_rows(body, loop, before, self.counts, self.env, self.fresh)
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

    def batched(self, stmt, loop, items, before):
        """`y = U @ xs[t]` (or `xs[t] @ V`) -> `y = U_xs[t]`, the product of all rows added
        to `before`; any other statement as it is."""
        value = stmt.value if isinstance(stmt, Assign) else None
        if not (
            isinstance(value, Call)
            and value.op == "matmul_op"
            and all(isinstance(a, Var) for a in value.args)
        ):
            return stmt
        left, right = (a.name for a in value.args)
        row, other = (right, left) if right in items else (left, right)
        rows = items.get(row)
        if not (
            rows is not None
            and other not in items
            and self.never_written(rows)
            and self.never_written(other)
            and self.matrix(rows)
            and self.matrix(other)
            and loop.stop_flag is None
            and self.counts[loop.target] == 2
            and over_all_rows(loop, rows, self.defs, self.env[rows].shape)
        ):
            return stmt
        fresh = self.fresh
        product = fresh(f"{other}_{rows}" if row == right else f"{rows}_{other}")
        if row == right:  # U @ xs[t] is row t of xs @ U.T
            transposed = fresh(f"{other}_T")
            before += [
                Assign(transposed, Call("T", (Var(other),)), stmt.loc),
                Assign(product, Call("matmul_op", (Var(rows), Var(transposed))), stmt.loc),
            ]
        else:  # xs[t] @ V is row t of xs @ V
            before.append(Assign(product, Call("matmul_op", (Var(rows), Var(other))), stmt.loc))
        return Assign(
            stmt.target,
            Call("getitem", (Var(product), Var(loop.target))),
            stmt.loc,
            stmt.note,
        )


def _add_invariants_to_rows(body, loop, before, counts, env, fresh):
    """`s = p + rows[t]; r = s + b` -> `r = p + rows_plus_b[t]`, and `r = rows[t] + b` ->
    `r = rows_plus_b[t]`, with `rows_plus_b = rows + b` before the loop, for the batched
    products `before` made (`rows`) and a `b` the loop never writes that adds to a row as
    it adds to every row (a bias: `W @ h + U @ x_t + b` adds it once for all rows, as BPTT
    is written by hand). Reassociating the sum changes its rounding only."""
    # (long: the two forms the rewrite matches, with their small helper closures over the
    # loop's reads and writes, in one place)
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
