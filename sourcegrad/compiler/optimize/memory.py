"""Memory passes: dead buffers reused, unread saves dropped, first updates assigned.

`reuse_dead_buffers(body, params, shapes, dtypes, ...)` computes large elementwise results
into the buffer of a value no statement reads any more (`out=`, printed as an augmented
assignment where that reads better: `READABLE_BUFFER_MAX_BYTES`), never a pullback's
residuals; `drop_unread_saves(body)` drops pushes no pop reads; `assign_first_updates`
turns an accumulator's first `+=` into an assignment. Each takes and returns a statement
list. The thresholds are module constants, so tests can move them.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import replace

import numpy as np

from ...ops import RULES
from ..analysis.lifetimes import FREE_MIN_BYTES, trip_outliving
from ..ir import (
    Assign,
    Call,
    Const,
    For,
    Marker,
    Pop,
    Push,
    Return,
    Tup,
    Var,
    child_blocks,
    merge_notes,
    read_counts,
    reads_of,
    walk,
    writes_of,
)
from .algebra import fresh_result, makes_new_value, ufunc_rule
from .cleanup import assign_counts, substitute

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


# Under numba a call allocates through numba's runtime (malloc), without numpy's huge pages:
# from here on a new result's page faults cost more than computing into a dead buffer (the
# MLP at batch 4096, 32 MiB activations: 611 ms a call with new arrays, 507 ms with the
# numpy code's buffers); below it numba's own fusion of an expression (`d_h * (1.0 - h * h)`
# as one loop) wins over one pass per ufunc into a buffer
NUMBA_BUFFER_REUSE_MIN_BYTES = 1 << 18


def fusible_elementwise(body: list, params, shapes: dict, dtypes: dict) -> frozenset:
    """The names of the top-level elementwise statements the numba backend's fusion may
    make one pass over memory (`numba_fusion`): a ufunc of numbers and float64 arrays of its
    result's shape that are parameters or values such statements made. Computing one of
    these into a buffer (`out=`) would split the pass; the others are the numpy code's.
    Errs towards fusible (a number's operand of any kind): a statement named here wrongly
    only keeps its own allocation."""
    params = set(params)
    fusible: set = set()

    def fusible_operand(a, shape) -> bool:
        if not isinstance(a, Var) or a.name in fusible or not shapes.get(a.name):
            return True  # (a constant, a value the run made, or a number)
        return (
            a.name in params
            and tuple(shapes[a.name]) == tuple(shape)
            and dtypes.get(a.name) == np.float64
        )

    for stmt in body:
        if not (type(stmt) is Assign and type(stmt.value) is Call and not stmt.value.kwargs):
            continue
        shape = shapes.get(stmt.target)
        if (
            ufunc_rule(stmt.value.op) is not None
            and shape
            and dtypes.get(stmt.target) == np.float64
            and all(fusible_operand(a, shape) for a in stmt.value.args)
        ):
            fusible.add(stmt.target)
    return frozenset(fusible)


def drop_unread_saves(body: list) -> list:
    """The pushes of a variable whose restored values the backward never reads, with their
    pops: the saved-value stack without the values kept for nothing (a loop-invariant the
    loop batching now reads as rows, `U_xs` in an outer loop; a list the forward appends to,
    whose adjoint reads only its last value). The reverse pass pushes a
    variable where the forward overwrites it and pops it, into the same name, where the
    backward restores it, so dropping every push and pop of one name keeps the others in
    order; only when the counts of the two statements agree."""
    marker = next((i for i, s in enumerate(body) if isinstance(s, Marker)), None)
    if marker is None:
        return body
    tops = body[marker + 1 :]
    pops: dict = defaultdict(int)
    first_pop: dict = {}  # name -> the first top-level statement of the backward popping it
    for i, top in enumerate(tops):
        for s in walk([top]):
            if isinstance(s, Pop):
                pops[s.target] += 1
                first_pop.setdefault(s.target, i)
    # a restored value is read where the name is read from its first pop on: a read before
    # it is of the forward's last value (`np.stack(hs)`'s adjoint reads the whole list), and
    # a read inside the popping loop may be of the previous trip's pop
    read = {n for n, i in first_pop.items() for s in walk(tops[i:]) if n in reads_of(s)}
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
                or _saved_start(stmt) in dropped  # (`x_t = None`, for the first trip's push)
            ):
                continue
            out.append(substitute(stmt, {}, run) if child_blocks(stmt) else stmt)
        return out

    return run(body)


def _saved_start(stmt):
    """The name `stmt` starts as None for its pushes (reverse mode's `x_t = None  # saved`)."""
    if type(stmt) is Assign and stmt.value == Const(None) and stmt.note == "saved":
        return stmt.target
    return None


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
    counts = assign_counts(body, params)
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


def reuse_dead_buffers(
    body: list,
    params,
    shapes: dict,
    dtypes: dict,
    keep_residuals: bool = False,
    min_bytes: int | None = None,
    user_names=frozenset(),
    kept=frozenset(),
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
    `user_names` are the values not to overwrite there). The statements assigning `kept`
    (`fusible_elementwise`) make their own arrays.
    """
    min_bytes = BUFFER_REUSE_MIN_BYTES if min_bytes is None else min_bytes
    reuse = _DeadBuffers(body, params, shapes, dtypes, min_bytes, kept)
    if not reuse.owned:  # (no buffer to reuse: the last uses need not be found)
        return _in_trips(body, params, shapes, dtypes, min_bytes, user_names)
    out = reuse.rewritten(keep_residuals, user_names)
    return _in_trips(out, params, shapes, dtypes, min_bytes, user_names)


class _DeadBuffers:
    """`reuse_dead_buffers` on one body: the large arrays it makes (`owned`, each taken
    once), when each dies, and per shape and dtype a heap of the buffers dead so far."""

    def __init__(self, body, params, shapes, dtypes, min_bytes, kept):
        self.body, self.shapes, self.dtypes = body, shapes, dtypes
        self.sizes: dict = {}  # (shape, dtype) -> bytes (asked once a statement: math, not numpy)
        counts = assign_counts(body, params)
        self.owned = {
            s.target
            for s in body
            if type(s) is Assign
            and counts[s.target] == 1
            and s.target not in params
            and s.target not in kept
            and fresh_result(s.value)
            and self.large(s.target, min_bytes)
        }

    def large(self, name, min_bytes):
        size = self.nbytes(name)
        return size > 0 and size >= min_bytes

    def nbytes(self, name):
        shape, dtype = self.shapes.get(name), self.dtypes.get(name)
        # an operation on 0-d arrays returns a numpy scalar, which cannot be written into
        if shape is None or len(shape) == 0 or dtype is None:
            return 0
        key = (tuple(shape), dtype)
        size = self.sizes.get(key)
        if size is None:
            size = self.sizes[key] = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return size

    def find_lifetimes(self, keep_residuals):
        body, owned = self.body, self.owned
        self.last_use = last_use = _last_uses(body, self.shapes)
        self.made_at = made_at = {s.target: i for i, s in enumerate(body) if isinstance(s, Assign)}
        # a pullback's backward runs apart from its forward, maybe more than once: what the
        # forward made and the backward reads (the residuals) is never overwritten
        split = (
            next((i for i, s in enumerate(body) if isinstance(s, Marker)), -1)
            if keep_residuals
            else -1
        )
        # the buffers that fit a result: owned, of its shape and dtype, made before it and,
        # with residuals kept, not made by the forward and read by the backward
        self.kind = {n: (self.shapes[n], self.dtypes[n]) for n in owned}
        self.usable = {n for n in owned if not (made_at[n] < split < last_use[n])}
        # a large buffer the forward lets die before the backward begins is freed there (the
        # printer deletes its name: lifetimes.freed_after_last_use): the backward does not
        # take it, which would hold it through the backward's first statements
        self.backward_at = next((i for i, s in enumerate(body) if isinstance(s, Marker)), len(body))
        self.dead: dict = defaultdict(list)

    def rewritten(self, keep_residuals, user_names):
        self.find_lifetimes(keep_residuals)
        # per shape and dtype, a heap of the buffers dead so far, the one that died last on top
        # (then by name); each goes in once it is dead (after its statement and its last use),
        # and one taken is dropped when it comes to the top: O(n log n), where looking through
        # every buffer for every statement was quadratic in a long function's length
        dying = sorted((max(self.made_at[n], self.last_use[n]) + 1, n) for n in self.usable)
        k = 0
        out = list(self.body)
        for i, stmt in enumerate(self.body):
            while k < len(dying) and dying[k][0] <= i:
                n = dying[k][1]
                heapq.heappush(self.dead[self.kind[n]], (-self.last_use[n], n))
                k += 1
            if not (isinstance(stmt, Assign) and stmt.target in self.owned):
                continue
            ufunc = ufunc_rule(stmt.value.op)
            if ufunc is None:
                continue
            buffer = self.dying_operand(i, stmt)
            if self.nbytes(stmt.target) < READABLE_BUFFER_MAX_BYTES:
                if buffer is None or not _readable_reuse(
                    ufunc, stmt.value.args, buffer, user_names
                ):
                    continue
            elif buffer is None:
                buffer = self.dead_buffer(i, stmt.target)
            if buffer is not None:
                out[i] = Assign(
                    stmt.target,
                    Call(ufunc, stmt.value.args, (("out", Var(buffer)),)),
                    stmt.loc,
                    stmt.note,
                )
                self.owned.discard(buffer)  # its memory now holds the result, to be reused
        return out

    def freed_before_backward(self, n, i):
        return self.last_use[n] < self.backward_at < i and self.nbytes(n) >= FREE_MIN_BYTES

    def fits(self, n, i, target):
        return (
            n in self.owned
            and n in self.usable
            and n != target
            and self.made_at[n] < i
            and self.kind[n] == self.kind[target]
            and not self.freed_before_backward(n, i)
        )

    def dying_operand(self, i, stmt):
        """An operand that dies here (as a hand-written `np.exp(u, out=u)`) and fits."""
        return next(
            (
                a.name
                for a in stmt.value.args
                if isinstance(a, Var)
                and self.fits(a.name, i, stmt.target)
                and self.last_use[a.name] == i
            ),
            None,
        )

    def dead_buffer(self, i, target):
        """The buffer of target's kind that died last (its memory the likeliest in cache)."""
        heap = self.dead.get(self.kind[target], ())
        while heap and (heap[0][1] not in self.owned or self.freed_before_backward(heap[0][1], i)):
            heapq.heappop(heap)  # taken already, or freed before the backward
        return heapq.heappop(heap)[1] if heap else None


def _in_trips(body, params, shapes, dtypes, min_bytes, user_names):
    """A loop's trip is straight-line code too: what a trip makes and lets die in it (not
    carried to the next trip, not read after the loop) reuses buffers the same way."""
    out = list(body)
    for i, stmt in enumerate(out):
        if type(stmt) is For and not stmt.stop_flag:
            kept = trip_outliving(stmt, out[:i] + out[i + 1 :])
            # what outlives the trip is read at its end, as if returned: a buffer it may
            # refer to (`h = a.T`, h carried to the next trip) is never taken
            written = sorted(kept & {n for s in walk(stmt.body) for n in writes_of(s)})
            end = [Return(Tup(tuple(Var(n) for n in written)))] if written else []
            trip = reuse_dead_buffers(
                stmt.body + end, set(params) | kept, shapes, dtypes, False, min_bytes, user_names
            )[: len(stmt.body)]
            if trip != stmt.body:
                out[i] = replace(stmt, body=trip)
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
                and fresh_result(s.value)
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
