"""Checkpointed loops: recompute a loop's trips in the backward instead of saving every one.

`segment_loops(plan, fn, forward, backward, namer)` takes the primal `ir.Function` and the
two sweeps `reverse.reverse` made of it (plain statement lists, pushes and pops in place)
and returns the two sweeps with each top-level loop that saves values per trip rewritten
as the plan's scheme for it says (`memory_budget.loop_scheme`), into segments of k trips
(the sqrt scheme) or under revolve (below):

    forward                                   backward
    for seg in range(start, stop, k*step):    for seg in reversed(range(start, stop, k*step)):
        <push the loop's live state>              <pop the live state>
        for i in range(seg, seg_end, step):       for i in range(seg, seg_end, step):
            <the trip, saving nothing>                <the trip again, saving as before>
                                                  for i in reversed(range(seg, seg_end, step)):
                                                      <the trip's backward, as before>

A `while` loop is the online variant: its trip count is only known at the end, so the
forward pushes the live state when `trips % k == 0`, and the backward replays each segment
from its snapshot for `min(k, trips - seg)` trips. Either way the stack holds n/k
snapshots plus at most k trips' values at a time, and each trip runs twice: with
k = ceil(sqrt(n)) that is O(sqrt(n)) memory for one extra forward.

Under revolve (Griewank's binomial checkpointing: `checkpoint_loops=("revolve", s)`, or a
budget the sqrt scheme does not fit) the stack holds at most s snapshots and one unit's
values, a unit being a trip or a segment of k trips; the schedule is the runtime's
(`sourcegrad.runtime.revolve_schedule`, whose comments give the recursion and its bounds:
each unit runs forward at most r + 1 times, r the least with C(s + r, s) >= the units):

    forward                                   backward
    schedule = revolve_schedule(start, stop, step, s)
    next_snapshot = revolve_next(schedule)    for t in reversed(range(start, stop, step)):
    for t in range(start, stop, step):            restart = revolve_restart(schedule, t)
        if t == next_snapshot:                    <pop the live state>
            <push the live state>                 if restart != t: <push it back>
            next_snapshot = revolve_taken(...)    next_snapshot = revolve_next(schedule)
        <the trip, saving nothing>                for t_1 in range(restart, t, step):
                                                      if t_1 == next_snapshot: <push, ask>
                                                      <the trip t_1, saving nothing>
                                                  <the trip t again, saving as before>
                                                  <the trip's backward, as before>

A `while` loop's forward pushes only the state it began with (`trips == 0`) and the
backward makes its schedule once the trip count is known (the online variant: the offline
schedule after one counting sweep, so one forward sweep more than a `for` loop's). Over
segments, `t` walks `range(start, stop, k * step)` and each unit is a segment's trips.

The live state of a trip is each name the trip reads before it writes it (its loop-carried
values) that the loop, or anything after it, writes; names written only before the loop
hold the same value in both sweeps and are not pushed. The recomputed statements carry the
user's line with a note (`recomputed from the snapshot taken every 4 trips,
checkpoint_loops=4`, or `... taken by revolve, 32 snapshots at most, checkpoint_loops=
('revolve', 32)`), so the generated code says which line it recomputes and why; `manifest`
reads the notes back (each value's status, bytes and why) and `saved_bytes` adds them up.

Nothing here changes the code unless a plan asks for it: without one, `reverse` is
unchanged (and so is every golden in generated/). The manifest is made for every gradient:
without a plan it lists the values made once and the values kept per trip of a loop (the
stack's `saved.append(h)`, with the loops' trips where the signature fixes them), so
`saved_bytes` is what the backward keeps either way.

Why one module: segmenting a loop, revolve's schedule-driven form of it (the same
snapshot, replay and renaming statements), and the manifest that reads their comments back
are one transformation, read together; `memory_budget` (choosing the scheme) and the
runtime's schedule (`sourcegrad.runtime.Revolve`, which generated code calls) stand apart.
"""

from __future__ import annotations

import dataclasses
import math
import re

from ... import errors
from ...errors import SourceLocation
from ...ops import RULES
from ..ir import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    If,
    Marker,
    Pop,
    Push,
    Var,
    While,
    reads_of,
    substitute_atom,
    walk,
    writes_of,
)
from ..optimize.cleanup import (
    RECOMPUTED_NOTE,
    eliminate_dead_code,
    inline_shape_only_values,
    propagate_copies_and_cse,
)
from .memory_budget import check_budget, choose_recomputed, loop_scheme
from .row_blocks import IN_ROW_BLOCKS, SAVED_PER_BLOCK, in_row_blocks

__all__ = [
    "segment_loops",
    "recompute_regions",
    "recompute_under_budget",
    "known_trip_counts",
    "manifest",
    "saved_bytes",
    "describe_total",
    "RECOMPUTED",
    "SNAPSHOT",
    "CHECKPOINTED",
    "RECOMPUTED_BY_BUDGET",
]

# what the comments of the code that checkpointing writes say (the manifest reads them too)
RECOMPUTED = "recomputed from the snapshot taken"
SNAPSHOT = "snapshot of the loop's state taken"
# what a value recomputed under a budget says (`recompute_under_budget`), then its name
RECOMPUTED_BY_BUDGET = "recomputed in the backward, not saved"


def segment_loops(plan, fn, forward, backward, namer, env, trip_counts=None):
    """See the module docstring. `trip_counts` maps a loop's line to its trip count where
    known when compiling; `env` gives the bytes of what is pushed. Returns (forward,
    backward, [(line, k, kind)])."""
    primal_loops = [s for s in fn.body if isinstance(s, (For, While))]
    forward, backward = list(forward), list(backward)
    # a budget some loop cannot be kept in is refused before any loop is rewritten
    budgeted = []
    for loop in primal_loops:
        costs = _costs(loop, forward, backward, env, trip_counts)
        if costs is not None:
            budgeted.append((loop.loc, *costs[:3]))
    check_budget(plan, budgeted)
    done = []
    for loop in primal_loops:
        costs = _costs(loop, forward, backward, env, trip_counts)
        if costs is None:
            continue
        trips, per_trip, per_snapshot, fi, bi = costs
        fwd, bwd, later = forward[fi], backward[bi], forward[fi + 1 :]
        scheme = loop_scheme(plan, trips, per_trip, per_snapshot)
        if scheme is None:
            continue  # every trip's values fit in the budget
        kind, *size = scheme
        before = forward[fi - 1] if fi else None
        if kind == "revolve" and isinstance(loop, For):
            made = _revolve_for(fwd, bwd, later, *size, namer, plan, backward)
        elif kind == "revolve":
            made = _revolve_while(fwd, bwd, before, later, *size, namer, plan, backward)
        elif isinstance(loop, For):
            made = _segment_for(fwd, bwd, later, *size, namer, plan, backward)
        else:
            made = _segment_while(fwd, bwd, before, later, *size, namer, plan, backward)
        if made is None:
            continue
        forward[fi : fi + 1], backward[bi : bi + 1] = made
        done.append((loop.loc.line, scheme, type(loop).__name__.lower()))
    return forward, backward, done


def _costs(loop, forward, backward, env, trip_counts):
    """(trips or None, bytes saved per trip, bytes of a snapshot, the loop's index in the
    forward, in the backward) of a top-level loop that checkpointing may rewrite, or None
    for one it leaves as it is."""
    fi = _find(forward, lambda s: type(s) is type(loop) and s.loc == loop.loc)
    bi = _find(backward, lambda s: isinstance(s, For) and s.loc == loop.loc)
    if fi is None or bi is None:
        return None
    fwd = forward[fi]
    if not any(isinstance(s, Push) for s in walk(fwd.body)):
        return None  # it saves nothing per trip
    if not _replayable(fwd):
        return None  # running a trip again would print again, or draw other numbers
    trips = (trip_counts or {}).get(loop.loc.line)
    if trips is not None and trips <= 1:
        return None  # nothing to gain (and a loop that never runs has no values inferred)
    per_trip = sum(_bytes(env, s.value) for s in walk(fwd.body) if isinstance(s, Push))
    state = _live_state(fwd.body, forward[fi + 1 :])
    return trips, per_trip, sum(_bytes(env, Var(n)) for n in state), fi, bi


def _replayable(loop) -> bool:
    """May the backward run the loop's trips again? Not when a trip has an effect: a call made
    for it (`print`) or an impure one (a random draw: the replay would draw other numbers, and
    the gradient would be that of another sample)."""
    for s in walk(loop.test_body + loop.body if isinstance(loop, While) else loop.body):
        if isinstance(s, ExprStmt):
            return False
        if isinstance(s, Assign) and isinstance(s.value, Call) and not RULES[s.value.op].pure:
            return False
    return True


def _bytes(env, atom) -> int:
    """What a pushed value holds, for the signature compiled (8 for a number)."""
    aval = env.get(atom.name) if isinstance(atom, Var) else None
    dtype = getattr(aval, "dtype", None) if aval is not None else None
    if dtype is None:
        return 8
    return int(math.prod(aval.shape)) * dtype.itemsize


def _find(stmts, match):
    found = [i for i, s in enumerate(stmts) if match(s)]
    return found[0] if len(found) == 1 else None


def _without_pushes(stmts):
    out = []
    for s in stmts:
        if isinstance(s, Push):
            continue
        if isinstance(s, If):
            s = If(s.test, _without_pushes(s.body), _without_pushes(s.orelse), s.loc)
        elif isinstance(s, For):
            s = dataclasses.replace(s, body=_without_pushes(s.body))
        elif isinstance(s, While):
            s = dataclasses.replace(
                s, test_body=_without_pushes(s.test_body), body=_without_pushes(s.body)
            )
        out.append(s)
    return out


def _noted(stmts, note):
    """The trip as the backward re-runs it: each statement's comment says it is recomputed
    (`note`: from which snapshots, under which plan)."""
    out = []
    for s in stmts:
        loc = (
            s.loc
            if getattr(s, "loc", None) is None
            else SourceLocation(
                s.loc.file, s.loc.line, s.loc.col, f"{s.loc.text.strip()}  ({note})"
            )
        )
        if isinstance(s, If):
            s = If(s.test, _noted(s.body, note), _noted(s.orelse, note), loc)
        elif isinstance(s, For):
            s = dataclasses.replace(s, body=_noted(s.body, note), loc=loc)
        elif isinstance(s, While):
            s = dataclasses.replace(
                s, test_body=_noted(s.test_body, note), body=_noted(s.body, note), loc=loc
            )
        elif hasattr(s, "loc"):
            s = dataclasses.replace(s, loc=loc)
        out.append(s)
    return out


def _own_names(replay, backward, state, namer):
    """The replayed trip with its temporaries renamed (`W_h` -> `W_h_1`): those the rest of
    the backward never reads. The forward's then stay assigned once, so the printer folds them
    into the expressions that read them again, as it does without checkpointing."""
    elsewhere = {n for s in walk(backward) for n in (*reads_of(s), *writes_of(s))}
    pushed = {n for s in walk(replay) if isinstance(s, Push) for n in reads_of(s)}
    written = [n for s in walk(replay) if isinstance(s, Assign) for n in writes_of(s)]
    mapping = {
        n: Var(namer.fresh(n))
        for n in dict.fromkeys(written)
        if n not in elsewhere and n not in pushed and n not in state
    }
    return _renamed(replay, mapping) if mapping else replay


def _renamed(stmts, mapping):
    def atom(a):
        return substitute_atom(a, mapping)

    out = []
    for s in stmts:
        if isinstance(s, Assign):
            value = s.value
            if isinstance(value, Call):
                value = Call(
                    value.op,
                    tuple(map(atom, value.args)),
                    tuple((k, atom(a)) for k, a in value.kwargs),
                )
            else:
                value = atom(value)
            target = mapping[s.target].name if s.target in mapping else s.target
            s = dataclasses.replace(s, target=target, value=value)
        elif isinstance(s, Push):
            s = Push(atom(s.value), s.loc)
        elif isinstance(s, If):
            s = If(atom(s.test), _renamed(s.body, mapping), _renamed(s.orelse, mapping), s.loc)
        elif isinstance(s, For):
            s = dataclasses.replace(
                s,
                start=atom(s.start),
                stop=atom(s.stop),
                step=atom(s.step),
                body=_renamed(s.body, mapping),
            )
        elif isinstance(s, While):
            s = dataclasses.replace(
                s,
                test=atom(s.test),
                test_body=_renamed(s.test_body, mapping),
                body=_renamed(s.body, mapping),
            )
        out.append(s)
    return out


def _first_use(stmts, name):
    """ "read" if a trip through `stmts` may read `name` before writing it."""
    for s in stmts:
        if isinstance(s, If):
            uses = (_first_use(s.body, name), _first_use(s.orelse, name))
            if name in reads_of(s) or "read" in uses:
                return "read"
            if uses == ("write", "write"):
                return "write"
        elif isinstance(s, While):
            # the test's statements run first, at least once, then the test, then maybe
            # the body (an inner `while` writes its test's value before reading it)
            first = _first_use(s.test_body, name)
            if first is not None:
                return first
            if name in reads_of(s) or _first_use(s.body, name) == "read":
                return "read"
        elif isinstance(s, For):
            if name in reads_of(s):
                return "read"
            if s.target == name:
                return "write"  # (the loop sets its index before its body reads it)
            if _first_use(s.body, name) == "read":
                return "read"
        elif name in reads_of(s):
            return "read"
        elif name in writes_of(s):
            return "write"
    return None


def _live_state(trip, later, exclude=()):
    """Names a trip reads before writing that the loop or what follows it writes."""
    written = {n for s in walk(trip) for n in writes_of(s)}
    written |= {n for s in walk(later) for n in writes_of(s)}
    read = {n for s in walk(trip) for n in reads_of(s)}
    return sorted(n for n in read & written if n not in exclude and _first_use(trip, n) == "read")


def _snapshot_loc(loc, note):
    return SourceLocation(loc.file, loc.line, loc.col, f"{loc.text.strip()}  ({note})")


def _every(k, plan):
    """How the sqrt scheme's comments name its snapshots (`manifest` reads them back)."""
    return f"every {k} trips, {plan.describe()}"


def _segment_end(seg, span, stop, step, loc, namer):
    """`seg_end = min(seg + span, stop)` (max for a negative step), as statements."""
    nxt, end = namer.fresh("segment_next"), namer.fresh("segment_end")
    bound = "min_builtin" if step > 0 else "max_builtin"
    return [
        Assign(nxt, Call("add_op", (Var(seg), Const(span))), loc, "checkpoint segment"),
        Assign(end, Call(bound, (Var(nxt), stop)), loc, "checkpoint segment"),
    ], Var(end)


def _segment_backward(bwd, seg, end, step, namer):
    """The backward of a segment's trips, last first. With a step of 1 it counts from 0
    (`for i in reversed(range(segment_end - segment)): t = segment + i`): the optimizer
    batches the rank-one updates of such a loop into rows of one segment (a matrix product
    per segment, not an outer product per trip)."""
    if step != Const(1):
        return [For(bwd.target, Var(seg), end, step, bwd.body, bwd.loc, reverse=True)]
    reads = any(bwd.target in reads_of(s) for s in walk(bwd.body))
    length, index = namer.fresh("segment_length"), namer.fresh("i") if reads else bwd.target
    at = [Assign(bwd.target, Call("add_op", (Var(seg), Var(index))), bwd.loc)] if reads else []
    return [
        Assign(length, Call("sub_op", (end, Var(seg))), bwd.loc, "checkpoint segment"),
        For(index, Const(0), Var(length), Const(1), at + bwd.body, bwd.loc, reverse=True),
    ]


def _segment_for(fwd, bwd, later, k, namer, plan, whole):
    step = fwd.step
    if not (isinstance(step, Const) and isinstance(step.value, int) and step.value != 0):
        return None
    if (
        fwd.stop_flag is not None
        or (bwd.start, bwd.stop, bwd.step) != (fwd.start, fwd.stop, fwd.step)
        or not bwd.reverse
    ):
        return None
    state = _live_state(fwd.body, later, exclude={fwd.target})
    loc, span = fwd.loc, k * step.value
    seg = namer.fresh("segment")
    end_stmts, end = _segment_end(seg, span, fwd.stop, step.value, loc, namer)
    trip = _without_pushes(fwd.body)
    forward = For(
        seg,
        fwd.start,
        fwd.stop,
        Const(span),
        [Push(Var(n), _snapshot_loc(loc, f"{SNAPSHOT} {_every(k, plan)}")) for n in state]
        + end_stmts
        + [For(fwd.target, Var(seg), end, step, trip, loc)],
        loc,
    )
    end_stmts_b, end_b = _segment_end(seg, span, fwd.stop, step.value, loc, namer)
    backward = For(
        seg,
        fwd.start,
        fwd.stop,
        Const(span),
        [Pop(n, loc) for n in reversed(state)]
        + end_stmts_b
        + [
            For(
                fwd.target,
                Var(seg),
                end_b,
                step,
                _own_names(
                    _noted(fwd.body, f"{RECOMPUTED} {_every(k, plan)}"), whole, state, namer
                ),
                loc,
            ),
            *_segment_backward(bwd, seg, end_b, step, namer),
        ],
        loc,
        reverse=True,
    )
    return [forward], [backward]


def _segment_while(fwd, bwd, before, later, k, namer, plan, whole):
    """The online variant: the trip count is known only once the loop has run."""
    if not _counted_while(fwd, before):
        return None
    trips, loc = before.target, fwd.loc
    body = fwd.body[1:]  # (without the trip count)
    # a replayed trip runs the body, then the test's statements the next trip reads
    replay = body + fwd.test_body
    state = _live_state(replay, later, exclude={trips})
    phase, first = namer.fresh("phase"), namer.fresh("snapshot_now")
    snapshot = [
        Assign(phase, Call("mod_op", (Var(trips), Const(k))), loc, "checkpoint segment"),
        Assign(first, Call("eq", (Var(phase), Const(0))), loc, "checkpoint segment"),
        If(
            Var(first),
            [Push(Var(n), _snapshot_loc(loc, f"{SNAPSHOT} {_every(k, plan)}")) for n in state],
            [],
            loc,
        ),
    ]
    forward = While(fwd.test_body, fwd.test, snapshot + _without_pushes(fwd.body), loc)
    seg = namer.fresh("segment")
    end_stmts, end = _segment_end(seg, k, Var(trips), 1, loc, namer)
    backward = For(
        seg,
        Const(0),
        Var(trips),
        Const(k),
        [Pop(n, loc) for n in reversed(state)]
        + end_stmts
        + [
            For(
                namer.fresh("trip"),
                Var(seg),
                end,
                Const(1),
                _own_names(_noted(replay, f"{RECOMPUTED} {_every(k, plan)}"), whole, state, namer),
                loc,
            ),
            *_segment_backward(bwd, seg, end, Const(1), namer),
        ],
        loc,
        reverse=True,
    )
    return [forward], [backward]


def _revolve_note(slots, k, plan):
    """How revolve's comments name its snapshots (`manifest` reads them back)."""
    segments = "" if k == 1 else f" over segments of {k} trips"
    return f"by revolve{segments}, {slots} snapshots at most, {plan.describe()}"


def _snapshot_if_next(index, upcoming, schedule, state, loc, note, namer):
    """`if index == upcoming:` push the loop's state, and ask the schedule for the next."""
    now, taken = namer.fresh("snapshot_now"), _snapshot_loc(loc, f"{SNAPSHOT} {note}")
    return [
        Assign(now, Call("eq", (Var(index), Var(upcoming))), loc, "revolve"),
        If(
            Var(now),
            [Push(Var(n), taken) for n in state]
            + [
                Assign(
                    upcoming,
                    Call("revolve_taken", (Var(schedule), Var(index))),
                    taken,
                    "where the next goes",
                )
            ],
            [],
            loc,
        ),
    ]


def _revolve_trip(trip, step, schedule, state, advance, record, reverse_trip, loc, namer, note):
    """The backward of trip `trip` under revolve: restore the latest snapshot (kept on the
    stack unless it is this trip's own), run forward from it to the trip taking the snapshots
    the schedule asks for (`advance(index)`: a trip's statements, saving nothing), run the trip
    recording its values (`record`), then its backward (`reverse_trip`)."""
    restart, keep = namer.fresh("restart"), namer.fresh("keep_snapshot")
    again, upcoming = namer.fresh(trip), namer.fresh("next_snapshot")
    return [
        Assign(
            restart,
            Call("revolve_restart", (Var(schedule), Var(trip))),
            loc,
            "the latest snapshot's trip",
        ),
        *[Pop(n, loc) for n in reversed(state)],
        Assign(keep, Call("ne", (Var(restart), Var(trip))), loc, "kept for the trips before"),
        If(
            Var(keep),
            [Push(Var(n), _snapshot_loc(loc, f"{SNAPSHOT} {note}")) for n in state],
            [],
            loc,
        ),
        Assign(upcoming, Call("revolve_next", (Var(schedule),)), loc, "on the way to this trip"),
        For(
            again,
            Var(restart),
            Var(trip),
            step,
            _snapshot_if_next(again, upcoming, schedule, state, loc, note, namer) + advance(again),
            loc,
        ),
        *record,
        *reverse_trip,
    ]


def _trip_body(bwd, target):
    """The backward's trip, reading the loop's index under the name `target`."""
    return bwd.body if bwd.target == target else _renamed(bwd.body, {bwd.target: Var(target)})


def _revolve_for(fwd, bwd, later, slots, k, namer, plan, whole):
    """A `for` loop under revolve over segments of k trips (k = 1: over trips): the forward
    takes the schedule's first snapshots as it runs (it knows the trip count), the backward
    reverses one segment at a time (`_revolve_trip`): replayed saving its values, then its
    trips' backward, last first."""
    step = fwd.step
    if (
        fwd.stop_flag is not None
        or (bwd.start, bwd.stop, bwd.step) != (fwd.start, fwd.stop, fwd.step)
        or not bwd.reverse
        or (k > 1 and not (isinstance(step, Const) and isinstance(step.value, int)))
    ):
        return None
    state = _live_state(fwd.body, later, exclude={fwd.target})
    loc, note = fwd.loc, _revolve_note(slots, k, plan)
    replay = _noted(fwd.body, f"{RECOMPUTED} {note}")
    unit = fwd.target if k == 1 else namer.fresh("segment")
    span = step if k == 1 else Const(k * step.value)
    schedule, upcoming = namer.fresh("schedule"), namer.fresh("next_snapshot")
    plan_stmts = [
        Assign(
            schedule,
            Call("revolve_schedule", (fwd.start, fwd.stop, span, Const(slots))),
            loc,
            "binomial checkpointing (Griewank's revolve)",
        ),
        Assign(upcoming, Call("revolve_next", (Var(schedule),)), loc, "the first trip's"),
    ]
    take = _snapshot_if_next(unit, upcoming, schedule, state, loc, note, namer)
    if k == 1:
        forward = For(fwd.target, fwd.start, fwd.stop, step, take + _without_pushes(fwd.body), loc)

        def advance(index):
            trip = _renamed(_without_pushes(replay), {fwd.target: Var(index)})
            return _own_names(trip, whole, state, namer)

        record = _own_names(replay, whole, state, namer)
        reverse_trip = _trip_body(bwd, fwd.target)
    else:
        end_stmts, end = _segment_end(unit, span.value, fwd.stop, step.value, loc, namer)
        trips = For(fwd.target, Var(unit), end, step, _without_pushes(fwd.body), loc)
        forward = For(unit, fwd.start, fwd.stop, span, take + end_stmts + [trips], loc)

        def advance(index):  # (a segment before the one reversed is whole)
            after = namer.fresh("segment_next")
            trip = _own_names(_without_pushes(replay), whole, state, namer)
            return [
                Assign(after, Call("add_op", (Var(index), span)), loc, "checkpoint segment"),
                For(fwd.target, Var(index), Var(after), step, trip, loc),
            ]

        end_stmts, end = _segment_end(unit, span.value, fwd.stop, step.value, loc, namer)
        record = end_stmts + [
            For(fwd.target, Var(unit), end, step, _own_names(replay, whole, state, namer), loc)
        ]
        reverse_trip = _segment_backward(bwd, unit, end, step, namer)
    body = _revolve_trip(
        unit, span, schedule, state, advance, record, reverse_trip, loc, namer, note
    )
    backward = For(unit, fwd.start, fwd.stop, span, body, loc, reverse=True)
    return [*plan_stmts, forward], [backward]


def _revolve_while(fwd, bwd, before, later, slots, k, namer, plan, whole):
    """A `while` loop under revolve over segments of k trips: its trip count is known only
    once it has ended, so the forward keeps the state it began with (the first snapshot) and
    the backward plans the schedule for the trips counted: one forward sweep more than a
    `for` loop's."""
    if not _counted_while(fwd, before):
        return None
    trips, loc, note = before.target, fwd.loc, _revolve_note(slots, k, plan)
    body = fwd.body[1:]  # (without the trip count)
    replay = _noted(body + fwd.test_body, f"{RECOMPUTED} {note}")
    state = _live_state(body + fwd.test_body, later, exclude={trips})
    first = namer.fresh("first_trip")
    taken = _snapshot_loc(loc, f"{SNAPSHOT} {note}")
    forward = While(
        fwd.test_body,
        fwd.test,
        [
            Assign(first, Call("eq", (Var(trips), Const(0))), loc, "the state it began with"),
            If(Var(first), [Push(Var(n), taken) for n in state], [], loc),
        ]
        + _without_pushes(fwd.body),
        loc,
    )
    unit = namer.fresh("trip" if k == 1 else "segment")
    schedule = namer.fresh("schedule")
    plan_stmt = Assign(
        schedule,
        Call(
            "revolve_schedule",
            (Const(0), Var(trips), Const(k), Const(slots)),
            (("first_taken", Const(True)),),
        ),
        loc,
        "binomial checkpointing (Griewank's revolve)",
    )
    if k == 1:

        def advance(index):
            return _own_names(_without_pushes(replay), whole, state, namer)

        record = _own_names(replay, whole, state, namer)
        reverse_trip = _trip_body(bwd, unit)
    else:

        def advance(index):  # (a segment before the one reversed is whole)
            after = namer.fresh("segment_next")
            trip = _own_names(_without_pushes(replay), whole, state, namer)
            return [
                Assign(after, Call("add_op", (Var(index), Const(k))), loc, "checkpoint segment"),
                For(namer.fresh("trip"), Var(index), Var(after), Const(1), trip, loc),
            ]

        end_stmts, end = _segment_end(unit, k, Var(trips), 1, loc, namer)
        record = end_stmts + [
            For(
                namer.fresh("trip"),
                Var(unit),
                end,
                Const(1),
                _own_names(replay, whole, state, namer),
                loc,
            )
        ]
        reverse_trip = _segment_backward(bwd, unit, end, Const(1), namer)
    body = _revolve_trip(
        unit, Const(k), schedule, state, advance, record, reverse_trip, loc, namer, note
    )
    backward = For(unit, Const(0), Var(trips), Const(k), body, loc, reverse=True)
    return [forward], [plan_stmt, backward]


def _counted_while(fwd, before) -> bool:
    """Is `fwd` the counted form `reverse` makes of a while (`trips = 0` before it, `trips =
    trips + 1` first in its body), its test's statements saving nothing?"""
    return (
        isinstance(before, Assign)
        and before.value == Const(0)
        and bool(fwd.body)
        and isinstance(fwd.body[0], Assign)
        and fwd.body[0].target == before.target
        and not any(isinstance(s, Push) for s in walk(fwd.test_body))
    )


def known_trip_counts(fn, env) -> dict:
    """{line: trips} for the `for` loops (nested ones too) whose range is known when
    compiling: a `range` of numbers the signature fixes (`len(xs)`, a literal)."""

    def value(atom):
        if isinstance(atom, Const):
            return atom.value
        aval = env.get(atom.name) if isinstance(atom, Var) else None
        return aval.stand_in if aval is not None and getattr(aval, "known", False) else None

    counts: dict = {}
    for s in walk(fn.body):
        if isinstance(s, For) and s.loc is not None:
            bounds = [value(a) for a in (s.start, s.stop, s.step)]
            if all(isinstance(b, int) and not isinstance(b, bool) for b in bounds) and bounds[2]:
                trips = len(range(*bounds))
                # (two loops on one line with other counts: neither is known by its line)
                counts[s.loc.line] = trips if counts.get(s.loc.line, trips) == trips else None
    return {line: trips for line, trips in counts.items() if trips is not None}


_EVERY = re.compile(r"(?:every|over segments of) (\d+) trips")
_SLOTS = re.compile(r"by revolve(?: over segments of \d+ trips)?, (\d+) snapshots at most")


def _note(text, start):
    """The note a statement's comment carries from `start` (without its closing bracket)."""
    note = text[text.index(start) :]
    return note[:-1] if note.endswith(")") else note


_PER_BLOCK = re.compile(r"block of (\d+) rows, " + re.escape(SAVED_PER_BLOCK))
_BUDGET_NAMES = re.compile(re.escape(RECOMPUTED_BY_BUDGET) + r": ([\w, ]+);")


def manifest(saved, fn, env, trip_counts=None) -> list:
    """The saved-value manifest of a gradient: `saved` (the values read across the
    forward/backward boundary, `facts.saved_values`' entries) with a status and a reason
    each, then every value pushed on the stack (per trip of a loop, or a snapshot of a
    checkpointed loop) and, under a memory plan, every value the backward recomputes instead
    of saving. A value pushed in loops says which (`loops`: [line, trips or None], the
    outermost first, `trip_counts` giving the counts known when compiling) and, per trip,
    how many trips and bytes that makes: `saved_bytes` adds it all up."""
    listing = _Manifest(env, trip_counts or {})
    listing.out = [
        dict(
            e,
            status="saved",
            why="an input (costs nothing extra)"
            if e["input"]
            else f"read by the backward ({', '.join(e['read_by']) or 'kept'}); made once",
        )
        for e in saved
    ]
    cut = next((i for i, s in enumerate(fn.body) if isinstance(s, Marker)), len(fn.body))
    listing.visit(fn.body[:cut], (), False)
    listing.visit(fn.body[cut:], (), True)
    return listing.out


def _blocks(s) -> list:
    """The statement lists nested in a statement (a loop's test and body, an if's branches)."""
    if isinstance(s, For):
        return [s.body]
    if isinstance(s, While):
        return [s.test_body, s.body]
    if isinstance(s, If):
        return [s.body, s.orelse]
    return []


class _Manifest:
    """The manifest's entries as `manifest` walks the forward and the backward, each value
    listed once per status (`seen`)."""

    def __init__(self, env, counts):
        self.env, self.counts = env, counts
        self.out: list = []
        self.seen: set = set()

    def entry(self, name, loc, status, why, loops=()):
        aval = self.env.get(name)
        dtype = getattr(aval, "dtype", None) if aval is not None else None
        return {
            "name": name,
            "shape": aval.shape if aval is not None else None,
            "dtype": str(dtype)
            if dtype is not None
            else type(aval.stand_in).__name__
            if aval is not None
            else None,
            "bytes": _bytes(self.env, Var(name)),
            "line": loc.line if loc else None,
            "input": False,
            "read_by": [],
            "status": status,
            "why": why,
            **({"loops": [[line, self.counts.get(line)] for line in loops]} if loops else {}),
        }

    def first(self, key) -> bool:
        """Whether `key` is met for the first time (and remember it)."""
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def visit(self, stmts, loops, backward):
        for s in stmts:
            text = s.loc.text if getattr(s, "loc", None) is not None else ""
            if (
                isinstance(s, Push)
                and isinstance(s.value, Var)
                and not loops
                and SNAPSHOT not in text
            ):
                # (a value overwritten outside any loop: pushed once, popped once)
                if self.first((s.value.name, "overwritten")):
                    why = "overwritten later; the backward reads the value it held: made once"
                    self.out.append(self.entry(s.value.name, s.loc, "saved", why))
            elif isinstance(s, Push) and isinstance(s.value, Var):
                self.pushed_in_loop(s, text, loops, backward)
            elif isinstance(s, Assign) and backward and _BUDGET_NAMES.search(text):
                self.recomputed_by_budget(s, text)
            elif isinstance(s, Assign) and backward and _PER_BLOCK.search(text):
                if self.first((s.target, "block")):
                    self.out.append(self.per_block(s, text))
            elif isinstance(s, Assign) and backward and RECOMPUTED in text:
                if self.first((s.target, "recomputed")):
                    why = _note(text, RECOMPUTED) + ": not saved"
                    self.out.append(self.entry(s.target, s.loc, "recomputed", why))
            for block in _blocks(s):
                inner = loops
                line = s.loc.line if s.loc else None
                if isinstance(s, (For, While)) and loops[-1:] != (line,):
                    inner = loops + (line,)  # (a segment's trips: the loop's own line)
                self.visit(block, inner, backward)

    def pushed_in_loop(self, s, text, loops, backward):
        """A value pushed per trip of a loop (or of a segment's recomputation), or a
        snapshot of a checkpointed loop."""
        every, slots = _EVERY.search(text), _SLOTS.search(text)
        status = (
            "snapshot"
            if SNAPSHOT in text
            else "saved per trip of a segment"
            if backward
            else "saved per trip"
        )
        if not self.first((s.value.name, status, loops)):
            return
        why = (
            _note(text, SNAPSHOT)
            if status == "snapshot"
            else f"overwritten in the loop at line {loops[-1]}; the backward reads it"
        )
        if status == "saved per trip":
            why += ": " + _per_trip(loops, self.counts, _bytes(self.env, s.value))
        elif status == "saved per trip of a segment" and slots and not every:
            why += ": pushed while its trip is recorded (revolve: one trip at a time)"
        elif status == "saved per trip of a segment":
            why += ": pushed while a segment is recomputed (one segment at a time)"
        self.out.append(
            dict(
                self.entry(s.value.name, s.loc, status, why, loops),
                # (revolve records one trip at a time, from at most `slots` snapshots)
                every=int(every.group(1))
                if every
                else 1
                if slots and status != "snapshot"
                else None,
                slots=int(slots.group(1)) if slots and status == "snapshot" else None,
            )
        )

    def recomputed_by_budget(self, s, text):
        """The values a memory budget chose to recompute, named in the statement's note."""
        for name in _BUDGET_NAMES.search(text).group(1).split(", "):
            if name in self.env and (name, "recomputed") not in self.seen:
                self.seen.add((name, "recomputed"))
                self.out.append(
                    self.entry(
                        name,
                        s.loc,
                        "recomputed",
                        f"{RECOMPUTED_BY_BUDGET}: keeping it would pass the budget "
                        f"({text[text.rindex('; ') + 2 :].rstrip(')')}), and it is "
                        "among the cheapest values to make again per byte",
                    )
                )

    def per_block(self, s, text):
        """A value kept one row block at a time."""
        rows = int(_PER_BLOCK.search(text).group(1))
        return dict(
            self.entry(s.target, s.loc, "saved per row block", ""),
            why=f"{SAVED_PER_BLOCK}: under the budget, {IN_ROW_BLOCKS} "
            f"{rows} rows goes through the forward and the backward a block "
            "at a time (nothing recomputed)",
        )


def _per_trip(loops, counts, nbytes) -> str:
    """How many times a value pushed in `loops` (their lines, the outermost first) is kept:
    `per trip, 50 trips: 6,400 bytes`, or that the count is known only when a loop runs."""
    where = "" if len(loops) == 1 else f" of the loops at lines {', '.join(map(str, loops))}"
    unknown = [line for line in loops if counts.get(line) is None]
    if unknown:
        return (
            f"per trip{where} (the trip count of the loop at line {unknown[0]} is known only "
            "when it runs)"
        )
    trips = math.prod(counts[line] for line in loops)
    return f"per trip{where}, {trips} trips: {trips * nbytes:,} bytes"


_LOOP_STATUSES = ("saved per trip", "snapshot", "saved per trip of a segment")


def saved_bytes(entries, trips=None) -> int:
    """The most bytes the manifest's values hold at once: values made once, plus per-trip
    values times their loops' trips, or snapshots times the segments plus one segment's
    per-trip values, or (revolve) snapshots times the slots (at most one a unit) plus one
    unit's values, or one row block's values. A loop's trip count is the manifest's where
    the signature fixes it; `trips` stands for the count of a loop known only when it runs
    (a `while` loop), and without it such a loop is refused (`unknown_trip_loops`)."""
    total = 0
    for e in entries:
        status, nbytes = e["status"], e["bytes"]
        if status == "saved" and not e["input"] or status == "saved per row block":
            total += nbytes  # (one block's at a time)
        elif status in _LOOP_STATUSES:
            # (an entry of an older manifest names no loops: `trips` is its loop's)
            loops = e.get("loops") or [[e.get("line"), None]]
            outer, inner = _trips(loops[:1], trips), _trips(loops[1:], trips)
            if status == "saved per trip":
                total += nbytes * outer * inner
            elif status == "snapshot":
                units = -(-outer // (e.get("every") or 1))
                total += nbytes * (min(e["slots"], units) if e.get("slots") else units)
            else:
                total += nbytes * min(e.get("every") or outer, outer) * inner
    return total


def unknown_trip_loops(entries) -> list:
    """The lines of the loops a manifest's values are kept in whose trip count is known only
    when they run (`saved_bytes` needs `trips` for them)."""
    lines = {
        line
        for e in entries
        if e["status"] in _LOOP_STATUSES
        for line, count in e.get("loops") or [[e.get("line"), None]]
        if count is None
    }
    return sorted(lines, key=lambda line: (line is None, line))


def describe_total(entries) -> str:
    """`saved_bytes` in words: `6,536 bytes`, or, for the values of one loop whose trip count
    is known only when it runs (kept per trip, not checkpointed), so much and so much per
    trip; else what to ask for (`trips=n`)."""
    unknown = unknown_trip_loops(entries)
    if not unknown:
        return f"{saved_bytes(entries):,} bytes"
    statuses = {e["status"] for e in entries}
    if len(unknown) == 1 and not statuses & {"snapshot", "saved per trip of a segment"}:
        once = saved_bytes(entries, 0)
        return (
            f"{once:,} bytes and {saved_bytes(entries, 1) - once:,} bytes per trip of the loop "
            f"at line {unknown[0]} (its trip count is known only when it runs)"
        )
    return (
        f"as many bytes as `saved_bytes(..., trips=n)` says for n trips of the loop at line "
        f"{unknown[0]} (its trip count is known only when it runs)"
    )


def _trips(loops, trips) -> int:
    """The trips of nested loops ([line, count or None] each): `trips` for an unknown count."""
    out = 1
    for line, count in loops:
        if count is None and trips is None:
            raise errors.SourcegradError(
                f"the loop at line {line} runs a number of trips known only when it runs: "
                "give it (saved_bytes(..., trips=n)) to count what its trips keep"
            )
        out *= count if count is not None else trips
    return out


# --- sourcegrad.checkpoint(fn) (api.transforms): a call whose values the backward makes again

CHECKPOINTED = "checkpoint: recomputed in the backward, not saved"


def marked(stmts):
    """The statements of an inlined checkpointed call, their lines marked (`CHECKPOINTED`)."""
    out = []
    for s in stmts:
        if isinstance(s, Assign) and s.loc is not None and CHECKPOINTED not in s.loc.text:
            s = dataclasses.replace(
                s,
                loc=SourceLocation(
                    s.loc.file, s.loc.line, s.loc.col, f"{s.loc.text.strip()}  ({CHECKPOINTED})"
                ),
            )
        out.append(s)
    return out


def recompute_regions(fn, forward, backward, namer, env=None):
    """The sweeps with the values of checkpointed calls (statements `marked`, at the top level
    of the forward, assigned once) that the backward reads made again in the backward, under
    their own names, just before the first backward statement that reads one. What the calls
    read from outside them stays saved. Returns (forward, backward) unchanged when there is
    nothing to recompute (no checkpoint was asked: every golden is unchanged)."""
    marked_defs = {
        s.target: s
        for s in forward
        if isinstance(s, Assign) and s.loc is not None and CHECKPOINTED in s.loc.text
    }
    if not marked_defs:
        return forward, backward
    counts = {}
    for s in walk(forward + backward):
        for n in writes_of(s):
            counts[n] = counts.get(n, 0) + 1
    # (a draw is never made again: the backward reads the sample the forward drew)
    regions = {
        n: s
        for n, s in marked_defs.items()
        if counts.get(n) == 1
        and n not in fn.params
        and not (isinstance(s.value, Call) and not RULES[s.value.op].pure)
    }
    read = {n for s in walk(backward) for n in reads_of(s)}
    chain, todo = set(), [n for n in regions if n in read]
    while todo:
        n = todo.pop()
        if n in chain:
            continue
        chain.add(n)
        todo += [m for m in reads_of(regions[n]) if m in regions]
    if not chain:
        return forward, backward
    return forward, _made_again(forward, backward, chain, namer, lambda loc: loc, env)


def _made_again(forward, backward, chain, namer, located, env=None):
    """The backward with the forward's statements assigning `chain` copied into it under
    their own names (CSE leaves them: `RECOMPUTED_NOTE`), each just before the first backward
    statement, or copy, that reads it (so each lives no longer than the backward needs it),
    and the backward's reads of those names made reads of the copies. `located(loc)`: the
    location (and so the comment) a copy is printed under; `env` gets the copies' values."""
    copies = [s for s in forward if isinstance(s, Assign) and s.target in chain]
    mapping = {s.target: Var(namer.fresh(s.target)) for s in copies}
    for old, new in mapping.items():  # (a copy has its value's shape and dtype)
        if env is not None and old in env:
            env[new.name] = env[old]
    copies = [
        dataclasses.replace(s, note=RECOMPUTED_NOTE, loc=located(s.loc))
        for s in _renamed(copies, mapping)
    ]
    backward = _renamed(backward, mapping)
    readers: dict = {}  # copy name -> index of the first backward statement reading it
    for i, s in enumerate(backward):
        for n in {n for t in walk([s]) for n in reads_of(t)}:
            readers.setdefault(n, i)
    at = {}
    for c in reversed(copies):  # (a copy goes before the copies that read it)
        users = [readers.get(c.target, len(backward))] + [
            at[d.target] for d in copies if d.target in at and c.target in reads_of(d)
        ]
        at[c.target] = min(users)
    out = []
    for i, s in enumerate(backward + [None]):
        out += [c for c in copies if at[c.target] == i]
        if s is not None:
            out.append(s)
    return out


def recompute_under_budget(plan, fn, forward, backward, namer, env, ret, blocks=None):
    """Under `memory=B`: the straight-line values the backward reads (made once, at the top
    level of the forward) recomputed in the backward instead of kept, the cheapest per byte
    first, until the values kept fit in B (`memory_budget.choose_recomputed`). A value is
    made again from the function's inputs and the values still kept, each copy commented
    with the user's line and why. A function that updates an array in place keeps what it
    saves (a copy would read the array as changed), and a draw is never made again.
    The bytes counted are those of the values the backward reads once simplified as the
    optimizer will (a value read for its shape only is not kept); `ret` is the function's
    return. First, where the program is row-wise along a batch axis, the batch goes through
    the gradient in blocks of rows instead (`row_blocks`: nothing recomputed), where
    `blocks` names the differentiated inputs (None for a VJP: its forward must end before
    the cotangent is known). Returns
    (forward, backward, the names recomputed)."""
    # (long: the budget's steps in order: row blocks first, then the candidates, their cost,
    # the choice and the copies; `steps` and `located` close over the maps those steps
    # build)
    if plan.memory is None:
        return forward, backward, []
    # a batch whose rows go through the gradient a block at a time recomputes nothing
    blocked = (
        None
        if blocks is None
        else in_row_blocks(plan, fn, forward, backward, namer, env, ret, blocks)
    )
    if blocked is not None:
        return blocked[0], blocked[1], []
    if any(
        isinstance(s, ExprStmt) or (isinstance(s, Assign) and s.in_place)
        for s in walk(forward + backward)
    ):
        return forward, backward, []
    counts: dict = {}
    for s in walk(forward + backward):
        for n in writes_of(s):
            counts[n] = counts.get(n, 0) + 1
    made = {
        s.target: s
        for s in forward
        if isinstance(s, Assign)
        and counts.get(s.target) == 1
        and s.target not in fn.params
        and not (isinstance(s.value, Call) and not RULES[s.value.op].pure)
    }
    read = _read_once_simplified(fn, forward, backward, ret, env)
    written = {n for s in walk(forward) for n in writes_of(s)}
    kept = [n for n in dict.fromkeys(n for s in forward for n in writes_of(s)) if n in read]
    kept += sorted(n for n in read & written if n not in kept)
    saved = {n: _bytes(env, Var(n)) for n in kept}

    def steps(name):
        """{name: operations} of the statements making `name` again from what is
        available (inputs, kept values), or None where something it reads is neither."""
        out, todo = {}, [name]
        while todo:
            n = todo.pop()
            if n in out:
                continue
            if n not in made:
                return None
            out[n] = _operations(made[n], env)
            for m in reads_of(made[n]):
                if counts.get(m, 0) == 0 or (m in saved and m != name and m in made):
                    continue  # an input, a global, or a value kept (assigned once)
                todo.append(m)
        return out

    options = {}
    for n in saved:
        made_of = steps(n)
        if made_of is not None:
            options[n] = (saved[n], made_of)
    chosen = choose_recomputed(plan, sum(saved.values()), options)
    if not chosen:
        return forward, backward, []
    # what the copies make: the chosen values and what they are made of, less what stays kept
    chain = set(chosen)
    for n in chosen:
        chain |= {m for m in options[n][1] if m not in saved or m in chosen}
    on_line: dict = {}  # user line -> the values chosen there (named in its comment)
    for n in chosen:
        on_line.setdefault(made[n].loc.line if made[n].loc else None, []).append(n)

    def located(loc):
        if loc is None:
            return None
        names = on_line.get(loc.line)
        what = f": {', '.join(names)}" if names else ""
        return SourceLocation(
            loc.file,
            loc.line,
            loc.col,
            f"{loc.text.strip()}  ({RECOMPUTED_BY_BUDGET}{what}; {plan.describe()})",
        )

    return forward, _made_again(forward, backward, chain, namer, located, env), chosen


def _read_once_simplified(fn, forward, backward, ret, env) -> set:
    """The names the backward reads once the optimizer's first passes have run (values read
    for their shape only replaced by it, copies propagated, common values merged), a read
    of a value's shape (`x.size`) not counted."""
    shapes = {
        n: a.shape
        for n, a in env.items()
        if a is not None and not a.is_python_scalar and hasattr(a.stand_in, "shape")
    }
    body = inline_shape_only_values(forward + [Marker()] + backward + [ret], set(fn.params), shapes)
    body = eliminate_dead_code(propagate_copies_and_cse(body, fn.params))
    cut = next(i for i, s in enumerate(body) if isinstance(s, Marker))
    return {
        n
        for s in walk(body[cut + 1 :])
        if not (
            isinstance(s, Assign) and isinstance(s.value, Call) and RULES[s.value.op].static_result
        )
        for n in reads_of(s)
    }


def _operations(stmt, env) -> int:
    """About how many arithmetic operations `stmt` costs (a matmul: m * n * k; anything else:
    the elements it reads or writes), for the signature compiled."""

    def size(atom):
        aval = env.get(atom.name) if isinstance(atom, Var) else None
        shape = getattr(aval, "shape", None) if aval is not None else None
        return int(math.prod(shape)) if shape is not None else 1

    value = stmt.value
    out = size(Var(stmt.target))
    if not isinstance(value, Call):
        return 1
    if RULES[value.op].family in ("matmul", "dot") and value.args:
        aval = env.get(value.args[0].name) if isinstance(value.args[0], Var) else None
        shape = getattr(aval, "shape", None) if aval is not None else None
        return out * (shape[-1] if shape else 1)
    return max([out] + [size(a) for a in value.args])
