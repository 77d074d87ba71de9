"""Time against memory: `python -m sourcegrad.bench.checkpointing [--quick]`.

For the damped spring (a `while` loop of Python floats) and the RNN (a `for` loop of hidden
vectors) at many steps, and the MLP at batch 4096 (straight-line code: values made once),
the gradient without a memory plan, with `memory=BUDGET` (loops checkpointed, values
recomputed: `sourcegrad.compiler.derive.checkpointing`; the plan column names the scheme the budget
chose for the loop: sqrt segments, or revolve over segments) and, for the loops, with
`checkpoint_loops="revolve"` (Griewank's binomial checkpointing over single trips, 32
snapshots), each row giving: the median time of a call, the
saved bytes (what the backward keeps from the forward at most at once, from the manifest:
values made once, plus per-trip values times the trips, or snapshots times the segments plus
one segment, or revolve's snapshots plus one segment, or one block's values where the batch goes
through in blocks of rows), the
tracemalloc peak of a call (every Python float and numpy buffer the call holds at once, its
result included; numbers only), the peak RSS of the process that ran the row (Linux's
VmHWM, else resource.getrusage's ru_maxrss: the interpreter, numpy and the inputs included,
so read it against the row without a plan), and the time and peaks against the unbudgeted gradient.
Each row runs in a fresh Python process, so one variant's memory never shows in another's.
The saved bytes count a Python float as 8 bytes (its value); on the stack it costs about 32
(the float object and the list's pointer), which the peak shows.

Targets (issue 23): the loops within a 1 MB saved-value budget at most 3x the unbudgeted
time; the MLP with a budget of half its saved bytes: memory halved, time at most 1.25x.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np

from .. import api
from ..compiler import saved_bytes
from .workloads import mlp, mlp_args, rnn, spring

BUDGET = 1_000_000
TIME_TARGET = 3.0
HALF = "half"  # a case's budget: half the saved bytes of its gradient without a plan


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


class _Size:
    def __init__(self, **params):
        self.params = params


def _mlp_case(batch, n_in, n_hidden, n_out=10):
    size = _Size(batch=batch, n_in=n_in, n_hidden=n_hidden, n_out=n_out)
    return mlp, (0, 1, 2, 3), mlp_args(np.random.default_rng(0), size), 1


def cases(quick=False):
    """(label, fn, wrt, args, trips, budget) of the rows (`budget` None: the one given)."""
    if quick:
        return [
            ("spring, 1000 steps", *_spring_case(1000), None),
            ("rnn, T=200, hidden 16", *_rnn_case(200), None),
            ("mlp, batch 256, 64-128-10", *_mlp_case(256, 64, 128), HALF),
        ]
    return [
        ("spring, 10^6 steps", *_spring_case(10**6), None),
        ("rnn, T=10000, hidden 16", *_rnn_case(10_000), None),
        ("mlp, batch 4096, 784-1024-10", *_mlp_case(4096, 784, 1024), HALF),
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


def run_row(quick, index, plan, repeats):
    """Time, tracemalloc peak and peak RSS of one variant of one case (`plan`: grad's keyword
    arguments), in this process."""
    _, fn, wrt, args, _, _ = cases(quick)[index]
    g = api.grad(fn, wrt=wrt, **plan)
    seconds = _median_time(lambda: g(*args), repeats)
    peak = _peak(lambda: g(*args))
    return {"seconds": seconds, "peak_bytes": peak, "rss_bytes": _peak_rss()}


def _peak_rss() -> int:
    """This process's peak RSS in bytes: Linux's VmHWM, that of this program only (ru_maxrss
    keeps the high-water mark from before the exec: a row started from a parent holding two
    gradients' arrays read the parent's peak), else ru_maxrss."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    # (Linux gives kilobytes, macOS bytes)
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def _in_fresh_process(quick, index, plan, repeats):
    command = [
        sys.executable,
        "-m",
        "sourcegrad.bench.checkpointing",
        "--row",
        str(index),
        "--row-plan",
        json.dumps(plan),
        "--repeats",
        str(repeats),
    ] + (["--quick"] if quick else [])
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _scheme(saved) -> str:
    """The loop scheme a manifest shows: sqrt segments of k trips, or revolve's snapshots."""
    snapshot = next((e for e in saved if e["status"] == "snapshot"), None)
    if snapshot is None:
        return ""
    if snapshot.get("slots"):
        over = f"segments of {snapshot['every']}" if snapshot["every"] else "trips"
        return f" (revolve over {over}, {snapshot['slots']:,} snapshots)"
    return f" (sqrt: segments of {snapshot['every']:,})"


def _worst(got, expected) -> float:
    return max(
        float(
            np.max(
                np.abs(np.asarray(g) - np.asarray(e)) / max(np.max(np.abs(np.asarray(e))), 1e-300)
            )
        )
        for g, e in zip(got, expected)
    )


def measure(index, quick=False, budget=BUDGET, repeats=3, fresh=True):
    """The rows (no plan, a memory budget, and revolve for a loop) for case `index` of
    `cases(quick)`, each timed and measured in a fresh process (`fresh=False`: in this one,
    where the peak RSS is this process's so far); the gradients are checked equal here."""
    label, fn, wrt, args, trips, own = cases(quick)[index]
    plain = api.grad(fn, wrt=wrt)
    expected = plain(*args)
    made_once = sum(e["bytes"] for e in plain.saved if e["status"] == "saved" and not e["input"])
    if own == HALF:
        budget = made_once // 2
    variants = [(f"memory={budget}", {"memory": budget})]
    if trips > 1:
        variants.append(("checkpoint_loops='revolve'", {"checkpoint_loops": "revolve"}))
    rows = []
    for name, plan in variants:
        planned = api.grad(fn, wrt=wrt, **plan)
        worst = _worst(planned(*args), expected)
        rows.append((name + _scheme(planned.saved), plan, saved_bytes(planned.saved, trips), worst))
    rows.insert(0, ("none", {}, saved_bytes(plain.saved, trips), 0.0))
    measured = []
    for name, plan, saved, worst in rows:
        measured.append(
            {
                "case": label,
                "plan": name,
                "saved_bytes": saved,
                "rel_error": worst,
                **(
                    _in_fresh_process(quick, index, plan, repeats)
                    if fresh
                    else run_row(quick, index, plan, repeats)
                ),
            }
        )
    rows, base = measured, measured[0]
    for row in rows:
        row["time_ratio"] = row["seconds"] / base["seconds"]
        row["peak_ratio"] = row["peak_bytes"] / base["peak_bytes"]
        row["rss_ratio"] = row["rss_bytes"] / base["rss_bytes"]
    return rows


def markdown(rows) -> str:
    out = [
        "| case | plan | time | x time | saved bytes | tracemalloc peak | x peak | peak RSS "
        "| x RSS | max rel. difference |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['case']} | {r['plan']} | {r['seconds']:.3f} s | "
            f"{r['time_ratio']:.2f} | {r['saved_bytes']:,} | {r['peak_bytes']:,} | "
            f"{r['peak_ratio']:.3f} | {r['rss_bytes'] / 2**20:.1f} MiB | "
            f"{r['rss_ratio']:.2f} | {r['rel_error']:.1e} |"
        )
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m sourcegrad.bench.checkpointing", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--budget", type=int, default=BUDGET, help="bytes (default 1 MB)")
    parser.add_argument(
        "--only", help="the cases whose label starts with this (spring, rnn, mlp)", default=""
    )
    # (one row, run in a process of its own by `measure`)
    parser.add_argument("--row", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--row-plan", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 2)
    if args.row is not None:
        print(json.dumps(run_row(args.quick, args.row, json.loads(args.row_plan), repeats)))
        return 0
    rows = []
    for index, case in enumerate(cases(args.quick)):
        if case[0].startswith(args.only):
            rows += measure(index, args.quick, args.budget, repeats)
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
