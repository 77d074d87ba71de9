"""Memory plans: what a gradient may keep, and how many trips a checkpointed loop segment has.

`memory_plan(checkpoint_loops, memory)` checks the user's options of `grad` and gives a
`MemoryPlan` (None when nothing is asked: the gradient is then generated as always).
`loop_scheme(plan, trips, per_trip, per_snapshot)` says how a loop
(`sourcegrad.compiler.derive.checkpointing`) is checkpointed, from the plan and what the loop saves
per trip and per snapshot: `("segments", k)` (the sqrt scheme: a snapshot every k trips, one
segment's values held, each trip run twice), `("revolve", s, k)` (Griewank's binomial
checkpointing over units of k trips: at most s snapshots and one unit's values held, each
trip run forward about r + 1 times, r the least with C(s + r, s) >= n / k), or None (the loop
keeps every trip):

- `checkpoint_loops=k`: segments of k trips; `"sqrt"`: k = ceil(sqrt(n)) for n trips known
  when compiling (`segment_length`).
- `checkpoint_loops=("revolve", s)`: revolve over single trips with at most s snapshots
  (`"revolve"`: s = 32), for a `for` loop and a `while` loop alike.
- `memory=B` (bytes): a loop whose every trip's values fit in B is left as it is. One of known
  length n takes the sqrt scheme's k minimising the sum, sqrt(n * per_snapshot / per_trip),
  when n/k snapshots and one segment fit in B. Otherwise, and for a loop whose length is
  known only when it runs (a `while` loop), revolve over segments: a segment's values in
  half the budget (k = B / (2 * per_trip)), snapshots in the rest (s = (B - k * per_trip) /
  per_snapshot), so the budget holds whatever n; with s >= n / k that is the sqrt scheme
  (each trip runs twice), and each time n / k passes C(s + r, s) a trip runs once more.
  A budget below what a loop keeps at the least (one snapshot and one trip's values:
  revolve with one snapshot, each trip run again from the loop's start, quadratic time)
  is refused (`check_budget`: `MemoryBudgetError`, naming the smallest budget that works
  and the one at which each trip runs twice), never exceeded in silence.
- `memory="min"`: the fewest saved bytes at one extra forward: segments of the optimum k for
  a known length, k = 1024 for a while loop (O(sqrt(n)) memory while n stays below 10^6).

`choose_recomputed(plan, total, options)` picks the straight-line values (made once, outside
any loop) the backward makes again instead of keeping, under `memory=B`: while the values
kept pass the budget, the one whose recomputation costs the fewest operations per byte it
frees first (an elementwise `y = 2 * x` long before the matmul `h = X @ W`); `"min"`
recomputes every one that can be.

The bytes are those of the signature compiled (shapes and dtypes; 8 for a Python number).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ... import errors

__all__ = [
    "MemoryPlan",
    "memory_plan",
    "segment_length",
    "loop_scheme",
    "check_budget",
    "choose_recomputed",
]

# the segment of a while loop under memory="min" (its trip count is not known when compiling)
WHILE_SEGMENT = 1024
# the snapshots of checkpoint_loops="revolve": 10^6 trips in 7 forward runs each, 10^4 in 5
REVOLVE_SLOTS = 32


@dataclass(frozen=True)
class MemoryPlan:
    """The user's trade of time for memory (see the module docstring)."""

    loops: object = None  # checkpoint_loops: an int k, "sqrt", or ("revolve", s)
    memory: object = None  # a budget in bytes, or "min"

    def describe(self) -> str:
        if self.loops is not None:
            return f"checkpoint_loops={self.loops}"
        return f"memory={self.memory!r}"


def memory_plan(checkpoint_loops=None, memory=None):
    """The plan for grad's `checkpoint_loops=` and `memory=` (None when neither is given)."""
    if checkpoint_loops is None and memory is None:
        return None
    if isinstance(checkpoint_loops, str) and checkpoint_loops == "revolve":
        checkpoint_loops = ("revolve", REVOLVE_SLOTS)
    if checkpoint_loops is not None and not (
        (isinstance(checkpoint_loops, str) and checkpoint_loops == "sqrt")
        or _positive_int(checkpoint_loops)
        or (
            isinstance(checkpoint_loops, tuple)
            and len(checkpoint_loops) == 2
            and checkpoint_loops[0] == "revolve"
            and _positive_int(checkpoint_loops[1])
        )
    ):
        raise errors.SourcegradError(
            "checkpoint_loops must be a positive int (trips between snapshots), 'sqrt', "
            f"'revolve' or ('revolve', snapshots) with a positive int, got {checkpoint_loops!r}"
        )
    if memory is not None and not (
        memory == "min" or (isinstance(memory, int) and not isinstance(memory, bool) and memory > 0)
    ):
        raise errors.SourcegradError(
            f"memory must be a number of bytes (a positive int) or 'min', got {memory!r}"
        )
    if checkpoint_loops is not None and memory is not None:
        raise errors.SourcegradError(
            "give checkpoint_loops or memory, not both (a budget "
            "chooses the loops' segments itself)"
        )
    return MemoryPlan(checkpoint_loops, memory)


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def loop_scheme(plan, trips, per_trip, per_snapshot):
    """("segments", k), ("revolve", s, k) or None (the loop keeps every trip) for a loop of
    `trips` trips (None: not known when compiling); see the module docstring."""
    if isinstance(plan.loops, tuple):
        return ("revolve", plan.loops[1], 1)
    if plan.loops is not None or plan.memory == "min":
        return ("segments", segment_length(plan, trips, per_trip, per_snapshot))
    if trips is not None and trips * per_trip <= plan.memory:
        return None  # every trip's values fit
    if trips is not None:
        k = segment_length(plan, trips, per_trip, per_snapshot)
        if -(-trips // k) * per_snapshot + k * per_trip <= plan.memory:
            return ("segments", k)
    # half the budget to a segment's values, the rest to snapshots
    k = max(1, plan.memory // max(2 * per_trip, 1))
    return ("revolve", max(1, (plan.memory - k * per_trip) // max(per_snapshot, 1)), k)


def least_budget(trips, per_trip, per_snapshot) -> int:
    """The fewest bytes a loop keeps under any scheme: every trip's values where they fit in
    less (a short loop of known length), else one snapshot and one trip's values (revolve
    with one snapshot)."""
    least = per_trip + per_snapshot
    return least if trips is None else min(trips * per_trip, least)


def check_budget(plan, loops) -> None:
    """Refuse a `memory=B` that a loop cannot be kept in (see the module docstring). `loops`:
    (location, trips or None, bytes per trip, bytes per snapshot) of each loop that
    checkpointing may rewrite; the smallest budget that works is the largest of theirs."""
    if not isinstance(plan.memory, int) or not loops:
        return
    least = [least_budget(trips, per_trip, snap) for _, trips, per_trip, snap in loops]
    worst = max(range(len(loops)), key=least.__getitem__)
    if least[worst] <= plan.memory:
        return
    loc, trips, per_trip, per_snapshot = loops[worst]
    runs = (
        f"each of its {trips} trips up to {trips} times"
        if trips is not None
        else "each trip up to as many times as the loop has trips"
    )
    message = (
        f"memory={plan.memory} bytes cannot hold what this loop keeps at the least: one "
        f"trip's saved values ({per_trip} bytes) and one snapshot of its state "
        f"({per_snapshot} bytes); even that runs {runs} (quadratic time). The smallest "
        f"budget that works is memory={least[worst]}"
    )
    if trips is not None and trips * per_trip <= _at_most_twice(trips, per_trip, per_snapshot):
        message += f"; memory={trips * per_trip} keeps every trip's values (none runs twice)"
    elif trips is not None:
        message += f"; with memory={_at_most_twice(trips, per_trip, per_snapshot)} each "
        message += "trip runs at most twice"
    raise errors.MemoryBudgetError(message, loc, least[worst])


def _at_most_twice(trips, per_trip, per_snapshot) -> int:
    """A budget under which a loop of known length takes the sqrt scheme at its optimum k
    (`loop_scheme`: k = min(B / (2 * per_trip), optimum), snapshots and a segment in B)."""
    k = _optimum(trips, per_trip, per_snapshot)
    return max(-(-trips // k) * per_snapshot + k * per_trip, 2 * k * per_trip)


def segment_length(plan, trips, per_trip, per_snapshot) -> int:
    """k: the trips between snapshots of a loop (see the module docstring). `trips` is the
    loop's trip count when known when compiling, else None."""
    if plan.loops == "sqrt" or (plan.loops is None and plan.memory == "min"):
        if trips is None:
            return WHILE_SEGMENT
        return _optimum(trips, per_trip, per_snapshot)
    if plan.loops is not None:
        return plan.loops
    fits = max(1, plan.memory // max(2 * per_trip, 1))
    if trips is None:
        return fits
    return min(fits, _optimum(trips, per_trip, per_snapshot))


def _optimum(trips, per_trip, per_snapshot):
    """The k minimising trips / k * per_snapshot + k * per_trip."""
    return max(1, math.ceil(math.sqrt(max(trips, 1) * max(per_snapshot, 1) / max(per_trip, 1))))


def choose_recomputed(plan, total, options) -> list:
    """The values to recompute, in the order chosen (see the module docstring). `total`: the
    bytes the straight-line values kept hold; `options`: {name: (bytes, {step: operations})}
    with the steps (statements) that make it again from what stays available. A step shared
    by two values costs once: each choice makes the others' shared steps free."""
    if plan.memory is None:
        return []
    chosen, done, left = [], set(), dict(options)
    while left and (plan.memory == "min" or total > plan.memory):

        def price(name):
            nbytes, steps = left[name]
            ops = sum(c for step, c in steps.items() if step not in done)  # noqa: B023 (called in the iteration that made it)
            return (ops / max(nbytes, 1), name)

        name = min(left, key=price)
        nbytes, steps = left.pop(name)
        chosen.append(name)
        done |= set(steps)
        total -= nbytes
    if plan.memory != "min":
        # a cheap value chosen before a large one the budget needed anyway may be kept again
        for name in reversed(chosen[:-1]):
            if total + options[name][0] <= plan.memory:
                chosen.remove(name)
                total += options[name][0]
    return chosen
