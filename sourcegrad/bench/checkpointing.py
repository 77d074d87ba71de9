"""Time against memory for long loops: `python -m sourcegrad.bench.checkpointing [--quick]`.

For the damped spring (a `while` loop of Python floats) and the RNN (a `for` loop of hidden
vectors) at many steps, the gradient without a memory plan and with `memory=BUDGET` (loops
checkpointed, `sourcegrad.checkpointing`), each row giving: the median time of a call, the
saved bytes (what the backward keeps from the forward at most at once, from the manifest:
values made once, plus per-trip values times the trips, or snapshots times the segments plus
one segment), the tracemalloc peak of a call (every Python float and numpy buffer the call
holds at once, its result included; in-process, so numbers only), and the time and peak
against the unbudgeted gradient. The saved bytes count a Python float as 8 bytes (its value);
on the stack it costs about 32 (the float object and the list's pointer), which the peak shows.

Targets (issue 23): within a 1 MB saved-value budget, at most 3x the unbudgeted time.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np

from .. import api
from ..checkpointing import saved_bytes
from .workloads import rnn, spring

BUDGET = 1_000_000
TIME_TARGET = 3.0


def _spring_case(steps):
    dt = 0.01
    return spring, (0, 1), (4.0, 0.5, 1.0, 0.0, dt, (steps - 0.5) * dt), steps


def _rnn_case(steps, hidden=16):
    rng = np.random.default_rng(0)
    return (
        rnn,
        (0, 1, 2),
        (
            rng.normal(size=(hidden, hidden)) * 0.3,
            rng.normal(size=(hidden, hidden)),
            rng.normal(size=hidden),
            rng.normal(size=hidden),
            rng.normal(size=(steps, hidden)),
        ),
        steps,
    )


def cases(quick=False):
    """(label, fn, wrt, args, trips) of the rows."""
    if quick:
        return [
            ("spring, 1000 steps", *_spring_case(1000)),
            ("rnn, T=200, hidden 16", *_rnn_case(200)),
        ]
    return [
        ("spring, 10^6 steps", *_spring_case(10**6)),
        ("rnn, T=10000, hidden 16", *_rnn_case(10_000)),
    ]


def _median_time(call, repeats):
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _peak(call):
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure(label, fn, wrt, args, trips, budget=BUDGET, repeats=3):
    """Two rows (no plan, memory=budget) for one case; the gradients are checked equal."""
    plain = api.grad(fn, wrt=wrt)
    planned = api.grad(fn, wrt=wrt, memory=budget)
    expected, got = plain(*args), planned(*args)
    worst = max(
        float(
            np.max(
                np.abs(np.asarray(g) - np.asarray(e)) / max(np.max(np.abs(np.asarray(e))), 1e-300)
            )
        )
        for g, e in zip(got, expected)
    )
    per_trip = sum(
        e["bytes"] for e in planned.saved if e["status"] == "saved per trip of a segment"
    )
    made_once = sum(e["bytes"] for e in plain.saved if not e["input"])
    rows = []
    for name, g, saved in (
        ("none", plain, made_once + per_trip * trips),
        (f"memory={budget}", planned, saved_bytes(planned.saved, trips)),
    ):
        rows.append(
            {
                "case": label,
                "plan": name,
                "seconds": _median_time(lambda: g(*args), repeats),
                "saved_bytes": saved,
                "peak_bytes": _peak(lambda: g(*args)),
                "rel_error": worst if g is planned else 0.0,
            }
        )
    base = rows[0]
    for row in rows:
        row["time_ratio"] = row["seconds"] / base["seconds"]
        row["peak_ratio"] = row["peak_bytes"] / base["peak_bytes"]
    return rows


def markdown(rows) -> str:
    out = [
        "| case | plan | time | x time | saved bytes | tracemalloc peak | x peak | max rel. "
        "difference |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['case']} | {r['plan']} | {r['seconds']:.3f} s | "
            f"{r['time_ratio']:.2f} | {r['saved_bytes']:,} | {r['peak_bytes']:,} | "
            f"{r['peak_ratio']:.3f} | {r['rel_error']:.1e} |"
        )
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m sourcegrad.bench.checkpointing", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--budget", type=int, default=BUDGET, help="bytes (default 1 MB)")
    args = parser.parse_args(argv)
    rows = []
    for label, fn, wrt, fn_args, trips in cases(args.quick):
        rows += measure(label, fn, wrt, fn_args, trips, args.budget, repeats=3 if args.quick else 2)
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
