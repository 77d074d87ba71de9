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
(`d_v`), else under its first member's name. Codegen prints the function once to learn
where each name is read, then again with these names: the folding is the same both
times, so the reads are where the analysis saw them.
"""
from __future__ import annotations

import re

from .ir import Assign, While, child_blocks, walk

_VERSION = re.compile(r"_\d+$")


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
    defined_at = {stmt.target: i for i, stmt in enumerate(block)
                  if isinstance(stmt, Assign) and stmt.target in candidates}
    subtree = {id(block)} | {id(b) for stmt in walk(block) for b in child_blocks(stmt)}
    taken: set = set()
    for t, i in defined_at.items():
        if first_read.get(t, i + 1) <= i:
            continue  # read before it is made: the previous trip's value
        best = None
        for s, p in defined_at.items():
            if p >= i or s in taken or family(s) != family(t):
                continue
            # dead by statement i: read only in this block (nested statements counted at the
            # statement holding them), none after i
            if last_read.get(s, p) > i or not read_blocks.get(s, set()) <= subtree:
                continue
            if best is None or (last_read.get(s, p), p) > (last_read.get(best, -1),
                                                           defined_at[best]):
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


__all__ = ["shared_names", "family"]
