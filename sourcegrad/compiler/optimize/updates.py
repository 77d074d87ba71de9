"""Writes through an index done in place where nothing can tell: `updates_in_place(body, ...)`.

The front end turns `x[i] = v` into `x = setitem(x, i, v)` (a copy with the part replaced)
and the reverse pass writes a masked or sliced read's adjoint as `unindex(g, x, i)` (zeros
the size of x with g at i) and a write's as `zero_at(g, i)` (a copy with zeros at i). Code
in the style of layer libraries does many of these on one array (im2col fills a buffer
kernel position by kernel position; `h[:, t, :] = h_t` every step; a leaky ReLU or a stable
sigmoid by masks), so the copies and full-size zeros cost more than the arithmetic. On the
top-level statements of a gradient:

- `y = setitem(x, i, v)` and `y = zero_at(x, i)` write into x's buffer (`x[i] = v`, then
  `y = x`) where x's value is an array this function made (never an input, never a view),
  nothing reads it after the write, and everything that read it before made a new array or
  a view no one reads after the write. A `zero_at` is moved down, past the reads of x that
  follow it and precede any read of its result, so the backward's adjoint chains qualify.
- a sum of adjoints one of which is `unindex(p, x, i)`, read only there, adds p at i into the
  other (`acc[i] += p`) where the other is an array this function made and nobody reads
  after (an index that may name an element twice, an integer array, is left as it is).
- `unbroadcast(a, b)` of two values of one boolean mask's part (`g[m]`, `y[m]`, or
  elementwise functions of such parts and numbers) is `a`: both have the part's length.

Takes and returns a statement list (`shapes`, `dtypes`: name -> shape, dtype of arrays).
"""

from __future__ import annotations

import numpy as np

from ..ir import Assign, Call, Const, ExprStmt, Marker, Slc, Tup, Var, reads_of, walk, writes_of
from .algebra import makes_new_value, ufunc_rule
from .cleanup import substitute
from .indices import comparison_masks, disjoint, int_items
from .masked_adjoints import dense_masked_adjoints

# ops whose result is a new array (beyond `makes_new_value`'s ufuncs, products, reductions)
_FRESH = frozenset(
    {
        "setitem",
        "zero_at",
        "unindex",
        "np_zeros",
        "np_zeros_like",
        "np_ones",
        "np_ones_like",
        "np_empty",
        "np_empty_like",
        "np_full",
        "np_full_like",
        "np_copy",
        "copy",
    }
)


def _fresh(value) -> bool:
    return isinstance(value, Call) and (
        (value.op in _FRESH and all(k != "out" for k, _ in value.kwargs)) or makes_new_value(value)
    )


def _basic_or_mask(index, dtypes, shapes) -> bool:
    """An index naming each element at most once: ints, slices, None, Ellipsis, boolean
    arrays (no integer arrays or lists)."""
    if isinstance(index, Const):
        items = index.value if isinstance(index.value, tuple) else (index.value,)
        return all(
            item is None or item is Ellipsis or isinstance(item, (int, slice, np.integer))
            for item in items
            if not isinstance(item, bool)
        ) and not any(isinstance(item, (list, np.ndarray)) for item in items)
    if isinstance(index, Slc):
        return True
    if isinstance(index, Tup):
        return all(_basic_or_mask(item, dtypes, shapes) for item in index.items)
    if isinstance(index, Var):
        dtype = dtypes.get(index.name)
        shape = shapes.get(index.name)
        if dtype is not None and np.dtype(dtype) == np.bool_ and shape:
            return True
        return shape == () and dtype is not None and np.dtype(dtype).kind in "iu"
    return False


def updates_in_place(body: list, params, shapes: dict, dtypes: dict) -> list:
    """See the module docstring."""
    if not any(
        type(s) is Assign
        and type(s.value) is Call
        and s.value.op in ("setitem", "zero_at", "unindex", "unbroadcast")
        for s in body
    ):
        return body
    body = _skip_disjoint_zero_ats(list(body))
    body = _sink_zero_ats(body)
    body = _drop_mask_unbroadcasts(body, shapes, dtypes)
    body = dense_masked_adjoints(body, shapes, dtypes)
    return _in_place(body, set(params), shapes, dtypes)


# --- the positions of values -----------------------------------------------------------------


class _Positions:
    """Per top-level statement: what it reads (its nested blocks too) and writes."""

    def __init__(self, body):
        self.reads = [set(reads_of(s)).union(*(reads_of(t) for t in walk([s]))) for s in body]
        self.writes = [{n for t in walk([s]) for n in writes_of(t)} for s in body]

    def next_write(self, name, after):
        """The position of the next statement after `after` assigning `name` (or the end)."""
        for k in range(after + 1, len(self.writes)):
            if name in self.writes[k]:
                return k
        return len(self.writes)

    def read_between(self, name, start, stop) -> list:
        """Positions in [start, stop) reading `name`."""
        return [k for k in range(start, stop) if name in self.reads[k]]

    def definition(self, name, before):
        """The position of the last statement before `before` assigning `name`, or None."""
        for k in range(before - 1, -1, -1):
            if name in self.writes[k]:
                return k
        return None


def _skip_disjoint_zero_ats(body):
    """`y = zero_at(x, i)` is `y = x` (no copy) where everything that reads y's value reads
    elements zero_at did not touch: `y[j]` with j disjoint from i, or another such zero_at
    of y whose readers in turn read none of i (the adjoint of a buffer filled part by part:
    im2col's columns, `h[:, t, :] = h_t` every step, reads each part once)."""
    pos = _Positions(body)
    counts: dict = {}
    for stmt in walk(body):
        for n in writes_of(stmt):
            counts[n] = counts.get(n, 0) + 1
    masks = comparison_masks(body, counts)

    def index_ok(index) -> bool:
        return int_items(index) is not None or isinstance(index, Var) and index.name in masks

    def readers_avoid(name, at, zeroed) -> bool:
        end = pos.next_write(name, at)
        for k in pos.read_between(name, at + 1, min(end + 1, len(body))):
            stmt = body[k]
            if not (type(stmt) is Assign and type(stmt.value) is Call and not stmt.value.kwargs):
                return False
            value = stmt.value
            if value.args[0] != Var(name) or name in {
                n for a in value.args[1:] for n in reads_of(Assign("_", a))
            }:
                return False
            if value.op == "getitem":
                if not all(disjoint(value.args[1], i, masks) for i in zeroed):
                    return False
            elif value.op == "zero_at":
                if not index_ok(value.args[1]) or not readers_avoid(
                    stmt.target, k, zeroed + [value.args[1]]
                ):
                    return False
            else:
                return False
        return True

    out = list(body)
    for k, stmt in enumerate(body):
        if (
            type(stmt) is Assign
            and type(stmt.value) is Call
            and stmt.value.op == "zero_at"
            and not stmt.value.kwargs
            and isinstance(stmt.value.args[0], Var)
            and index_ok(stmt.value.args[1])
            and readers_avoid(stmt.target, k, [stmt.value.args[1]])
        ):
            out[k] = Assign(stmt.target, stmt.value.args[0], stmt.loc, stmt.note)
    return out


def _sink_zero_ats(body):
    """Each `y = zero_at(x, i)` moved down to just after the last read of x's value that
    comes before any read of y and any new assignment of x, i or y: x then dies at it."""
    k = 0
    while k < len(body):
        stmt = body[k]
        if not (
            type(stmt) is Assign and type(stmt.value) is Call and stmt.value.op == "zero_at"
        ) or not isinstance(stmt.value.args[0], Var):
            k += 1
            continue
        x = stmt.value.args[0].name
        mine = set(stmt.value.reads()) | {stmt.target}
        last = k
        for j in range(k + 1, len(body)):
            other = body[j]
            touched = set(reads_of(other)).union(*(reads_of(t) for t in walk([other])))
            written = {n for t in walk([other]) for n in writes_of(t)}
            if stmt.target in touched or written & mine or isinstance(other, Marker):
                break
            if x in touched:
                last = j
        if last > k:
            body.insert(last + 1, stmt)
            del body[k]
            continue  # (the statement now at k is the next one)
        k += 1
    return body


# --- unbroadcast of two parts of one mask ----------------------------------------------------


def _drop_mask_unbroadcasts(body, shapes, dtypes):
    counts: dict = {}
    for s in walk(body):
        for n in writes_of(s):
            counts[n] = counts.get(n, 0) + 1
    part_of: dict = {}  # single-assigned name -> the mask name its value is a part of

    def mask_of(atom):
        if isinstance(atom, Var):
            return part_of.get(atom.name)
        return None

    def number(atom):
        return (
            isinstance(atom, Const)
            and isinstance(atom.value, (int, float))
            or (isinstance(atom, Var) and shapes.get(atom.name) == ())
        )

    out = []
    for stmt in body:
        if type(stmt) is Assign and type(stmt.value) is Call and counts.get(stmt.target) == 1:
            value = stmt.value
            if value.op == "unbroadcast" and len(value.args) == 2 and not value.kwargs:
                a, b = value.args
                if mask_of(a) is not None and mask_of(a) == mask_of(b):
                    stmt = Assign(stmt.target, a, stmt.loc, stmt.note)
                    part_of[stmt.target] = mask_of(a)
                    out.append(stmt)
                    continue
            if (
                value.op == "getitem"
                and not value.kwargs
                and isinstance(value.args[0], Var)
                and isinstance(value.args[1], Var)
                and counts.get(value.args[1].name) == 1
                and dtypes.get(value.args[1].name) is not None
                and np.dtype(dtypes[value.args[1].name]) == np.bool_
                and shapes.get(value.args[1].name) is not None
                and shapes.get(value.args[0].name) == shapes.get(value.args[1].name)
            ):
                part_of[stmt.target] = value.args[1].name
            elif ufunc_rule(value.op) is not None and not value.kwargs:
                masks = {mask_of(a) for a in value.args if not number(a)}
                if len(masks) == 1 and None not in masks:
                    part_of[stmt.target] = masks.pop()
        elif type(stmt) is Assign and isinstance(stmt.value, Var) and counts.get(stmt.target) == 1:
            if mask_of(stmt.value) is not None:
                part_of[stmt.target] = mask_of(stmt.value)
        out.append(stmt)
    return out


# --- writes into dead buffers ----------------------------------------------------------------


def _in_place(body, params, shapes, dtypes):
    rewrite = _InPlace(body, params, shapes, dtypes)
    for k, stmt in enumerate(body):
        if not (type(stmt) is Assign and type(stmt.value) is Call and not stmt.value.kwargs):
            continue
        if stmt.value.op in ("setitem", "zero_at") and isinstance(stmt.value.args[0], Var):
            rewrite.store_into(k, stmt)
        elif stmt.value.op in ("add_op", "iadd_op") and len(stmt.value.args) == 2:
            rewrite.add_into(k, stmt)
    return rewrite.rewritten() if rewrite.made else body


class _InPlace:
    """The positions of a body's reads and writes, and the in-place rewrites chosen so far
    (`made`: position -> (the statements replacing it, whether they write a buffer this
    function made); `rename`: target -> the buffer whose name its reads take)."""

    def __init__(self, body, params, shapes, dtypes):
        self.body, self.params, self.shapes, self.dtypes = body, params, shapes, dtypes
        self.pos = pos = _Positions(body)
        self.made: dict = {}
        self.rename: dict = {}
        self.written: dict = {}  # position -> the buffer a chosen rewrite writes there
        self.single_reads: dict = {}
        for reads in pos.reads:
            for n in reads:
                self.single_reads[n] = self.single_reads.get(n, 0) + 1
        self.counts: dict = {}
        for stmt in walk(body):
            for n in writes_of(stmt):
                self.counts[n] = self.counts.get(n, 0) + 1

    def owned_and_dead(self, x, at) -> bool:
        """x's value at position `at` is an array this function made, read by nothing after
        `at` (before x is assigned again), and no view of it made before is read after."""
        pos, body = self.pos, self.body
        if x in self.params or not self.shapes.get(x):
            return False
        d = pos.definition(x, at)
        if d is None:
            return False
        defining = body[d]
        if not (type(defining) is Assign and defining.target == x):
            return False
        if not (_fresh(defining.value) or (d in self.made and self.made[d][1])):
            return False
        end = pos.next_write(x, at)
        if pos.read_between(x, at + 1, end):
            return False
        return all(self.view_dead(k, at) for k in pos.read_between(x, d + 1, at))

    def view_dead(self, k, at) -> bool:
        """The statement at k, which reads x before the write at `at`, makes a new array, or
        a value (maybe a view of x: x[1:], x.T, a reshape) nothing reads after the write and
        that what reads it before turns into new arrays."""
        pos, body = self.pos, self.body
        reader = body[k]
        if not (type(reader) is Assign and type(reader.value) is Call):
            return False  # (a copy `y = x`, a push, a loop: x lives on under its name)
        if _fresh(reader.value):
            return True
        view = reader.target
        if pos.read_between(view, at, pos.next_write(view, k)):
            return False
        return all(  # (not a view of the view, nor kept under another name)
            type(body[j]) is Assign and type(body[j].value) is Call and _fresh(body[j].value)
            for j in pos.read_between(view, k + 1, at)
        )

    def renamable(self, target, buffer, k) -> bool:
        """Whether `target`'s reads may read `buffer` instead (no alias is ever made: code
        differentiated again refuses an array changed in place under two names): target is
        assigned once, buffer never again after k."""
        return target == buffer or (
            self.counts.get(target) == 1 and self.pos.next_write(buffer, k) == len(self.body)
        )

    def store_into(self, k, stmt):
        """`y = setitem(x, i, v)` (or zero_at) with x dead after: `x[i] = v`, y read as x."""
        value, target = stmt.value, stmt.target
        x = value.args[0].name
        if not self.renamable(target, x, k) or not self.owned_and_dead(x, k):
            return
        if tuple(self.shapes.get(target) or ()) != tuple(self.shapes[x]):
            return
        part = value.args[2] if value.op == "setitem" else Const(0.0)
        self.made[k] = (
            [ExprStmt(Call("store_item", (Var(x), value.args[1], part)), stmt.loc)],
            True,
        )
        self.written[k] = self.resolve(x)
        if target != x:
            self.rename[target] = x

    def add_into(self, k, stmt):
        """`y = acc + unindex(g, like, i)` (acc dead after, or `acc += ...`): `acc[i] += g`."""
        value, target = stmt.value, stmt.target
        for acc_atom, part_atom in (value.args, value.args[::-1]):
            if not (isinstance(acc_atom, Var) and isinstance(part_atom, Var)):
                continue
            acc, part = acc_atom.name, part_atom.name
            if acc == part or self.single_reads.get(part) != 1:
                continue
            if not self.renamable(target, acc, k):
                continue
            p = self.unindexed_into(acc, part, k)
            if p is None or self.changed_between(self.body[p].value.reads(), p, k):
                continue
            if value.op == "add_op" and not self.owned_and_dead(acc, k):
                continue
            if value.op == "iadd_op" and acc != target:
                continue
            g, _, index = self.body[p].value.args
            update = Assign(acc, Call("iadd_item", (Var(acc), index, g)), stmt.loc, stmt.note)
            self.made[p] = ([], False)
            self.made[k] = ([update], True)
            self.written[k] = self.resolve(acc)
            if target != acc:
                self.rename[target] = acc
            return

    def changed_between(self, names, p, k) -> bool:
        """Does a rewrite chosen between p and k write one of `names`' buffers in place?
        (Folding `unindex` from p into k moves its reads to k: an earlier choice may have
        taken the array it reads as dead after its last read at p.)"""
        buffers = {self.resolve(n) for n in names}
        return any(self.written.get(m) in buffers for m in range(p + 1, k))

    def unindexed_into(self, acc, part, k):
        """The position of `part = unindex(g, like, index)`, `like` shaped as acc, a basic
        index or a mask, its operands unchanged until k; None otherwise."""
        pos, shapes, dtypes = self.pos, self.shapes, self.dtypes
        p = pos.definition(part, k)
        if p is None or p in self.made:
            return None
        unindexed = self.body[p]
        if not (
            type(unindexed) is Assign
            and type(unindexed.value) is Call
            and unindexed.value.op == "unindex"
            and not unindexed.value.kwargs
        ):
            return None
        _, like, index = unindexed.value.args
        if not (
            isinstance(like, Var)
            and shapes.get(like.name) == shapes.get(acc)
            and dtypes.get(like.name) == dtypes.get(acc)
            and _basic_or_mask(index, dtypes, shapes)
            and all(pos.next_write(n, p) >= k for n in unindexed.value.reads())
        ):
            return None
        return p

    def resolve(self, name):
        while name in self.rename:
            name = self.rename[name]
        return name

    def rewritten(self):
        """The body with the chosen rewrites made and the renamed names read as their buffers."""
        mapping = {name: Var(self.resolve(name)) for name in self.rename}

        def renamed(stmts):
            return [substitute(s, mapping, renamed) for s in stmts]

        out = []
        for k, stmt in enumerate(self.body):
            for new in self.made[k][0] if k in self.made else [stmt]:
                if type(new) is Assign and new.target in mapping:  # (an update of a renamed name)
                    new = Assign(self.resolve(new.target), new.value, new.loc, new.note)
                out.append(substitute(new, mapping, renamed))
        return out
