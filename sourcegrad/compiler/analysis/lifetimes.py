"""Printed names for dead arrays: rebinding a name lets its old array go.

`shared_names(fn, candidates, reads_at)` takes an optimized `ir.Function`, the names
that may share (arrays with at least one dimension, assigned once, printed as their own
statement where the IR has them: codegen decides which) and, per IR statement, the
names its printed text reads (`{id(stmt): names}`: a temporary folded into the line
that reads it is read there, not where the IR made it), and returns `{ir name: printed
name}` for the names that are printed as another one.

Why: a Python local keeps its array alive until the function returns. The compiler
gives every value its own name (`d_v_18`, `d_v_17`, ... one per version of `v`), so
a backward pass through twenty steps holds twenty dead adjoints at its end, where a
hand-written one rebinds one name (`dv = dv / (1 + v17 ** 2)`) and each step's array
is freed, and its memory reused, as soon as the next one exists. On small arrays that
allocation traffic is ~5% of a chain's gradient; on large ones it is peak memory.

Which names share: a chain of values of one family (the same name up to its `_N`
version suffix: `d_v_18`, `d_v_17`, `d_v`), each defined directly in one block and
dead (its name read nowhere after, in no other block) by the statement that makes the
next. A chain is printed under its family's base name when that is one of its members
(`d_v`), else under its first member's name. Codegen goes through the function once
without printing to learn where each name is read, then prints it with these names: the
folding is the same both times, so the reads are where the analysis saw them.

`freed_after_last_use(...)` gives the forward's arrays to be deleted after their last use,
in the forward or the backward (see its docstring).
"""

from __future__ import annotations

import heapq
import re
from functools import lru_cache

from ..ir import (
    Assign,
    Call,
    Marker,
    Push,
    Return,
    Var,
    While,
    child_blocks,
    reads_of,
    walk,
    writes_of,
)

_VERSION = re.compile(r"_\d+$")
# an array this large is deleted after its last use (`del h`): a smaller one is not worth
# the line (the memory a gradient holds at its peak is that of its large arrays)
FREE_MIN_BYTES = 1 << 20


@lru_cache(maxsize=65536)
def family(name: str) -> str:
    """A name without its version suffix (`d_v_18` -> `d_v`)."""
    return _VERSION.sub("", name)


def shared_names(fn, candidates, reads_at) -> dict:
    read_blocks: dict = {}  # name -> ids of the blocks whose statements read it
    for block in _blocks(fn.body):
        for stmt in block:
            for n in reads_at.get(id(stmt), ()):
                read_blocks.setdefault(n, set()).add(id(block))
    successor: dict = {}
    for block in _blocks(fn.body):
        _link_block(block, candidates, reads_at, read_blocks, successor)
    return _chain_names(successor)


def _blocks(body):
    """Every statement list of the function: the body and each nested block (a while
    loop's test statements are printed into its header: not one of them)."""
    yield body
    for stmt in walk(body):
        yield from (stmt.body,) if isinstance(stmt, While) else child_blocks(stmt)


def _link_block(block, candidates, reads_at, read_blocks, successor):
    """Record, for values defined in `block`, the next value of their family that may take
    their name (`successor[s] = t`)."""
    last_read: dict = {}  # name -> the last position in the block reading it (nested too)
    first_read: dict = {}
    for i, stmt in enumerate(block):
        for inner in walk([stmt]):
            for n in reads_at.get(id(inner), ()):
                last_read[n] = i
                first_read.setdefault(n, i)
    defined_at = {
        stmt.target: i
        for i, stmt in enumerate(block)
        if isinstance(stmt, Assign) and stmt.target in candidates
    }
    subtree = {id(block)} | {id(b) for stmt in walk(block) for b in child_blocks(stmt)}
    members: dict = {}  # family -> its values defined here, in block order
    for t in defined_at:
        members.setdefault(family(t), []).append(t)
    for names in members.values():
        # dead by statement i: read only in this block (nested statements counted at the
        # statement holding them), none after i
        dead = [s for s in names if read_blocks.get(s, set()) <= subtree]
        ordered = all(defined_at[a] < defined_at[b] for a, b in zip(names, names[1:]))
        if ordered and all(s in last_read for s in dead):
            _link_family(names, dead, defined_at, first_read, last_read, successor)
        else:
            _link_family_scan(names, dead, defined_at, first_read, last_read, successor)


def _link_family(names, dead, defined_at, first_read, last_read, successor):
    """`_link_family_scan` for a family whose values are all read: each value takes the
    name of the earlier one, not taken yet, whose last read is latest (then the latest
    made) among those dead by its statement. A heap of the values dead so far makes it
    O(n log n) in the family's size (a loop's `h` rebound thousands of times)."""
    # a value may give its name from the statement after both its own and its last read
    free_from = sorted(dead, key=lambda s: max(defined_at[s] + 1, last_read[s]))
    ready: list = []
    k = 0
    for t in names:
        i = defined_at[t]
        while (
            k < len(free_from) and max(defined_at[free_from[k]] + 1, last_read[free_from[k]]) <= i
        ):
            s = free_from[k]
            heapq.heappush(ready, (-last_read[s], -defined_at[s], s))
            k += 1
        if first_read.get(t, i + 1) <= i:
            continue  # read before it is made: the previous trip's value
        if ready:
            best = heapq.heappop(ready)[2]
            successor[best] = t


def _link_family_scan(names, dead, defined_at, first_read, last_read, successor):
    """For each value of one family defined in a block (in order), the earlier value that
    may give it its name: dead by its statement, not given already."""
    taken: set = set()
    dead = set(dead)
    for t in names:
        i = defined_at[t]
        if first_read.get(t, i + 1) <= i:
            continue  # read before it is made: the previous trip's value
        best = None
        for s in names:
            p = defined_at[s]
            if p >= i or s in taken or s not in dead:
                continue
            if last_read.get(s, p) > i:
                continue
            if best is None or (last_read.get(s, p), p) > (
                last_read.get(best, -1),
                defined_at[best],
            ):
                best = s
        if best is not None:
            successor[best] = t
            taken.add(best)


def _chain_names(successor) -> dict:
    heads = set(successor) - set(successor.values())
    printed = {}
    for head in sorted(heads):
        chain = [head]
        while chain[-1] in successor:
            chain.append(successor[chain[-1]])
        base = family(head)
        name = base if base in chain else head
        for member in chain:
            if member != name:
                printed[member] = name
    return printed


def in_place_names(fn, printed: dict, user_names) -> dict:
    """`printed` with a result computed into the buffer of a dying operand printed under
    that operand's name (`d_X_W1_plus_b1 = np.multiply(d_h, t, out=d_h)` is `d_h *= t`),
    or, where the result has a name from the user's (a value the user named, or its
    adjoint) and the buffer held temporaries of the same line, those printed under it
    (`h = X @ W1`, `h += b1`, `np.tanh(h, out=h)`). Two such names, or a buffer the user
    named, stay as they are (`z = np.subtract(logits, m, out=logits)`): each name means one
    thing. Top-level statements only (where the optimizer computes into dead buffers). A
    name is moved only where the values printed under the buffer's name are all made
    before the update (the last of them dies there) and those printed under the result's
    name all at it or after: the two never live at once."""
    # (long: one pass; its closures share the maps built at its top)
    printed = dict(printed)
    at: dict = {}  # name -> the top-level position of the statement assigning it
    nested: set = set()
    for i, stmt in enumerate(fn.body):
        for inner in walk([stmt]):
            if isinstance(inner, Assign):
                if inner is stmt and inner.target not in at:
                    at[inner.target] = i
                else:
                    nested.add(inner.target)

    def name(n):
        return printed.get(n, n)

    members: dict = {}  # printed name -> the top-level names printed as it
    for n in at:
        members.setdefault(name(n), []).append(n)
    in_blocks = {name(n) for n in nested}

    def group(p):
        """The names printed as `p`, None if one is assigned in a nested block."""
        return None if p in in_blocks else members.get(p, [])

    def user(n):
        return n in user_names or family(n) in user_names

    def named(n):  # a user's value or its adjoint (`d_h`, `dW1`)
        return (
            user(n)
            or n.startswith("d_")
            and user(n[2:])
            or n.startswith("d")
            and n[1:] in fn.params
        )

    split = next((i for i, s in enumerate(fn.body) if isinstance(s, Marker)), len(fn.body))

    def same_line(names, stmt, i):
        line = stmt.loc.line if stmt.loc else None
        return line is not None and all(
            (at[n] < split) == (i < split)
            and fn.body[at[n]].loc is not None
            and fn.body[at[n]].loc.line == line
            for n in names
        )

    for i, stmt in enumerate(fn.body):
        value = getattr(stmt, "value", None)
        if type(stmt) is not Assign or type(value) is not Call or len(value.kwargs) != 1:
            continue
        key, buffer = value.kwargs[0]
        # (an update that reads as one: `b op= c`, `np.f(b, out=b)`; `np.multiply(y, b,
        # out=b)` keeps its own name)
        if (
            key != "out"
            or type(buffer) is not Var
            or buffer != value.args[0]
            or buffer.name not in at
            or user(buffer.name)
            or stmt.target in nested
        ):
            continue
        before, after = name(buffer.name), name(stmt.target)
        if before == after:
            continue
        earlier, later = group(before), group(after)
        if (
            earlier is None
            or later is None
            or any(at[n] >= i for n in earlier)
            or any(at[n] < i for n in later)
        ):
            continue
        if not named(stmt.target):  # the result takes the buffer's name
            moved, new = later, before
        elif not named(buffer.name) and same_line(earlier, stmt, i):
            moved, new = earlier, after  # the line's temporaries take the user's name
        else:
            continue
        old = name(moved[0])
        for n in moved:
            if n == new:
                printed.pop(n, None)
            else:
                printed[n] = new
        members[new] = members.get(new, []) + members.pop(old)
    return printed


def freed_after_last_use(fn, candidates, local, reads_at, printed, sharing, handed=()) -> dict:
    """{top-level position: [printed names]}: arrays deleted (`del h`) after the statement
    that last reads them, so that their memory goes back then, not when the gradient
    returns. Without it a value the backward recomputes (`grad(f, memory=B)`) is held twice
    at once (the forward's, dead, and the backward's copy), and the values kept for the
    backward, or the buffers the backward computes into, all live to its end, beside the
    copies made there.

    `candidates`: the large arrays printed as their own statement (the ones worth a line);
    `local`: every name printed as its own statement (a Python local, where a folded
    temporary is none); `reads_at` as for `shared_names`; `printed`: the names they are
    printed as; `sharing`: name -> the names that may share its memory (views, copies).
    A name is freed only with every local sharing its memory (a view, a result computed
    into its buffer with `out=`), each assigned by top-level statements only, none an
    input, pushed on the stack or returned, and not just before the return. `handed`: the
    parameters the function was handed as its own (a VJP's backward taking its residuals
    from a list it empties, `codegen`): freed like the arrays it makes, as bound from its
    start."""
    # (long: two passes, the first collecting the maps (made_at, used_at, together, pushed)
    # the second chooses from; split, each piece would take or give all four)
    body = fn.body

    def name(n):
        return printed.get(n, n)

    made_at: dict = {}  # printed name -> the top-level positions assigning it
    nested: set = set()  # printed names assigned in a block (or by a pop, a loop)
    used_at: dict = {}  # printed name -> the last top-level position reading or writing it
    together: dict = {}  # printed name -> printed names sharing its memory
    pushed: set = set()

    def join(a, b):
        # (the smaller group moves into the larger, one set object per group: a long chain
        # of views and `out=` buffers joined pairwise was quadratic, ~3 ms a statement)
        first, second = together.get(a), together.get(b)
        if first is None:
            first = together[a] = {a}
        if second is None:
            second = together[b] = {b}
        if first is second:
            return
        if len(first) < len(second):
            first, second = second, first
        first |= second
        for n in second:
            together[n] = first

    for i, stmt in enumerate(body):
        for inner in walk([stmt]):
            writes = [name(n) for n in writes_of(inner)]
            value = getattr(inner, "value", None)
            buffers = (
                [name(a.name) for k, a in value.kwargs if k == "out" and isinstance(a, Var)]
                if isinstance(value, Call)
                else []
            )
            for b in buffers:
                for w in writes:
                    join(w, b)
            for n in set(writes) | set(buffers) | {name(n) for n in reads_at.get(id(inner), ())}:
                used_at[n] = i
            if isinstance(inner, Push):
                pushed |= {name(n) for n in reads_of(inner)}
            for n in writes:
                if inner is stmt and isinstance(stmt, Assign):
                    made_at.setdefault(n, []).append(i)
                else:
                    nested.add(n)
    for n, shared in sharing.items():
        for m in shared:
            join(name(n), name(m))
    local = {name(n) for n in local}
    ours = {name(n) for n in candidates}
    for n in handed:  # (bound before the first statement)
        made_at.setdefault(name(n), []).insert(0, -1)
        local.add(name(n))
    params = set(fn.params) - set(handed)
    freed: dict = {}
    done: set = set()
    for n in sorted(ours):
        group = together.get(n, {n}) & local  # (a folded temporary is no name to delete)
        if n in done:
            continue
        done |= group
        if (
            not group <= ours
            or group & (pushed | nested | params)
            or not all(m in made_at for m in group)
        ):
            continue
        last = max(used_at.get(m, made_at[m][-1]) for m in group)
        # (returned, or read by the last statement before the return: nothing to gain)
        if not isinstance(body[min(last + 1, len(body) - 1)], Return):
            freed.setdefault(last, []).extend(sorted(group))
    return {i: sorted(names) for i, names in freed.items()}


def trip_outliving(loop, rest) -> set:
    """The names a trip of `loop` may not treat as its own: its index, what the statements
    `rest` (those around the loop) read or write, and what a trip reads before it writes it
    (the previous trip's value)."""
    out = {loop.target} | {n for s in walk(rest) for n in (*reads_of(s), *writes_of(s))}
    written: set = set()
    for s in walk(loop.body):
        out |= {n for n in reads_of(s) if n not in written}
        written |= set(writes_of(s))
    return out


__all__ = [
    "shared_names",
    "family",
    "in_place_names",
    "freed_after_last_use",
    "trip_outliving",
    "FREE_MIN_BYTES",
]
