"""The adjoint of a list whose items were all read by constant positions, built at once:
`gather_item_adjoints(body, params)` takes a statement list and returns one.

`q, k, v = np.split(x, 3, axis=2)` reads the list by items; the derivation gives each read
its own adjoint of the whole list (`unindex(d_q, parts, 0)`: zeros for every item but one)
and sums them (`add_adjoints`), so a GPT's attention backward made and added nine
zero arrays per layer before `np.concatenate` of the sum (~100 us of a ~2.5 ms backward).
Where the summed reads take the positions 0 .. k-1 once each, the sum is the list of their
adjoints itself: `unindex([d_q, d_k, d_v], parts, 0:k)` (zeros only for items past k, which
no read took). The reads' own statements are left to dead-code elimination.

Only names assigned once are trusted (the list, each item's adjoint, each partial sum),
and each partial sum must be read by the next one alone: an adjoint accumulator assigned
again, or a partial sum read elsewhere, leaves the code as it is.
"""

from __future__ import annotations

from ..ir import (
    Assign,
    Call,
    Const,
    Var,
    assignment_counts,
    child_blocks,
    read_counts,
    with_child_blocks,
)
from .cleanup import namer


def gather_item_adjoints(body: list, params=()) -> list:
    """`body` with each complete sum of item adjoints of one list made one `unindex` of the
    list of the items' adjoints (see the module docstring)."""
    counts = assignment_counts(body, params)
    reads = read_counts(body)
    return _block(body, counts, reads, namer(set(counts) | set(reads)))


def _block(stmts, counts, reads, fresh):
    defs, out, changed = {}, [], False
    for stmt in stmts:
        blocks = child_blocks(stmt)
        if blocks:
            new = [_block(b, counts, reads, fresh) for b in blocks]
            if any(n is not b for n, b in zip(new, blocks)):
                stmt, changed = with_child_blocks(stmt, new), True
        elif type(stmt) is Assign and counts.get(stmt.target) == 1:
            defs[stmt.target] = stmt
            found = (
                _items(stmt.value, defs, counts, reads) if _is(stmt.value, "add_adjoints") else None
            )
            if found is not None:
                items, parts = found
                if sorted(parts) == list(range(len(parts))):
                    listed = fresh(f"{stmt.target}_items")
                    out.append(
                        Assign(
                            listed,
                            Call("make_list", tuple(parts[i] for i in sorted(parts))),
                            stmt.loc,
                            "item adjoints",
                        )
                    )
                    stmt = Assign(
                        stmt.target,
                        Call("unindex", (Var(listed), items, Const(slice(0, len(parts))))),
                        stmt.loc,
                        stmt.note,
                    )
                    changed = True
        out.append(stmt)
    return out if changed else stmts


def _is(value, op):
    return type(value) is Call and value.op == op and not value.kwargs


def _items(value, defs, counts, reads):
    """(the list, {position: adjoint}) when `value` sums item adjoints of one list at
    distinct constant positions, through partial sums each assigned once and read once;
    else None."""
    if _is(value, "unindex") and len(value.args) == 3:
        g, items, index = value.args
        if (
            isinstance(items, Var)
            and counts.get(items.name) == 1
            and isinstance(index, Const)
            and type(index.value) is int
            and index.value >= 0
            and (isinstance(g, Const) or isinstance(g, Var) and counts.get(g.name) == 1)
        ):
            return items, {index.value: g}
        return None
    if not _is(value, "add_adjoints") or len(value.args) != 2:
        return None
    found = []
    for arg in value.args:
        stmt = defs.get(arg.name) if isinstance(arg, Var) else None
        if stmt is None or reads.get(arg.name) != 1:
            return None
        part = _items(stmt.value, defs, counts, reads)
        if part is None:
            return None
        found.append(part)
    (a, pa), (b, pb) = found
    if a != b or set(pa) & set(pb):
        return None
    return a, pa | pb
