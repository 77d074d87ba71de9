"""Timing, memory and reporting for `python -m sourcegrad.bench`.

The command is an orchestrator: every measurement runs in a child process it
starts with the thread pools pinned to one thread (OMP/OPENBLAS/MKL/... = 1 in
the environment before numpy loads, `threadpoolctl` when installed,
`torch.set_num_threads(1)`) and the process bound to one CPU.

Timing: one child per (workload, size) runs every variant in turn, the
hand-written gradient first. A variant's first call is timed alone; the child is
fresh, so nothing is cached and, for sourcegrad and jax, the first call compiles.
sourcegrad's first call is made as `Gradient.compile(args)` then the call, so its
compile time is reported inside the first call, and the first-call targets are
judged on it: at the large sizes a fresh process's first touch of its memory can
cost more than compiling (for a variant without the split, first call minus
median). The first call's result is checked against the hand-written gradient
(max |a - b| / max |b| per gradient, at most `RTOL`); a variant that fails the
check is reported as WRONG and not timed. The others are timed timeit-style:
calls are grouped so a sample lasts at least ~1 ms, samples are taken until a
time budget is spent (at least a few), and the median per call is reported.

Memory: one fresh child per (workload, size, variant) sets up the inputs,
calls the gradient once (compiling, warming caches), then resets the kernel's
peak-RSS mark (`/proc/self/clear_refs`, "5"), calls it again and reports
VmHWM minus the RSS before the call: the peak memory the gradient adds, its
result included. glibc is told to serve every allocation of 64 KiB or more with
mmap (`MALLOC_MMAP_THRESHOLD_`), so freed arrays leave RSS at once and a
buffer reused from the warm-up call cannot hide. This counts what torch and
jax allocate as well as numpy. For the numpy-based variants (hand, sourcegrad,
autograd) the JSON also holds the tracemalloc peak of a third call (numpy
reports its buffers to tracemalloc), as a cross-check. Where clear_refs cannot
be written, tracemalloc's peak is what is reported.

Why one module: the benchmark's one command: running, measuring and reporting share the
result rows.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback

from .formatting import fmt_bytes, fmt_time

RTOL = 1e-8
RATIO_TARGET = 1.10
MEMORY_TARGET = 1.10
NOISY = 1.25  # a median this much over the fastest sample: something else had the CPU
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "BLIS_NUM_THREADS",
)
OPENBLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
NUMPY_VARIANTS = ("hand", "sourcegrad", "numba", "autograd")

#: per-variant timing budget (seconds), min and max samples, by size class
BUDGET = {"small": (1.0, 5, 1000), "large": (3.0, 5, 30), "quick": (0.02, 1, 3)}

COMMAND = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m sourcegrad.bench"

DESCRIPTION = f"""\
Benchmark sourcegrad's compiled gradients against hand-written numpy gradients
and, where installed, HIPS autograd, torch (eager) and jax.jit(jax.grad).

Run it as

    {COMMAND}

OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, when this machine's environment sets
them, make OpenBLAS use kernels or blocking for a CPU other than this one: unset
both in the benchmark command only, as above, never in tests or CI.
Everything runs single-threaded (thread pools pinned to 1, one CPU).
`--backend dask` runs the Dask benchmark instead (the logistic-regression gradient
over data larger than memory on a dask.distributed cluster: --backend dask --help).
Exit status: 1 when a gradient disagrees with the hand-written one or a
measurement process crashed, else 0 (unsupported variants are reported, not
failures)."""


# --------------------------------------------------------------------------------------------
# the environment of a measuring process
# --------------------------------------------------------------------------------------------


def child_env(memory=False):
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = "1"
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["JAX_ENABLE_X64"] = "1"
    # XLA sizes its thread pool by the CPUs the process may run on: pin_threads binds one
    env["PYTHONHASHSEED"] = "0"
    if memory:
        env["MALLOC_MMAP_THRESHOLD_"] = str(64 * 1024)
        env["MALLOC_TRIM_THRESHOLD_"] = str(128 * 1024)
    # the child imports sourcegrad from wherever this process did
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def pin_threads(variants):
    """In a child: one thread everywhere, one CPU. Returns what was done, for the JSON."""
    done = {var: os.environ.get(var) for var in THREAD_VARS}
    if hasattr(os, "sched_setaffinity"):  # first, so pools sized at import see one CPU
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[-1]})
        done["cpu"] = cpus[-1]
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
        done["threadpoolctl"] = True
    except ImportError:
        done["threadpoolctl"] = False
    if "torch" in variants:
        try:
            import torch

            torch.set_num_threads(1)
            torch.set_num_interop_threads(1)
        except (ImportError, RuntimeError):
            pass
    return done


# --------------------------------------------------------------------------------------------
# measuring (in a child)
# --------------------------------------------------------------------------------------------


def first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def failure(exc):
    """How a failed variant is recorded: a SourcegradError is the compiler saying
    'not supported'; anything else is an error (a bug, or a peer that cannot do it)."""
    from sourcegrad import SourcegradError

    if isinstance(exc, SourcegradError):
        return f"unsupported: {first_line(exc)}"
    return f"error: {type(exc).__name__}: {first_line(exc)}"


def max_rel_error(got, ref):
    """Max over gradients of max |a - b| / max |b|; inf when shapes differ."""
    import numpy as np

    if len(got) != len(ref):
        return float("inf")
    worst = 0.0
    for a, b in zip(got, ref):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return float("inf")
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        err = float(np.max(np.abs(a - b))) if b.size else 0.0
        if not np.isfinite(err):
            return float("inf")
        worst = max(worst, err / scale if scale > 0 else err)
    return worst


def time_calls(call, first_s, size_class):
    """Per-call times (seconds) of `call`, timeit-style: a list of sample means."""
    budget, min_samples, max_samples = BUDGET[size_class]
    if first_s > 0.01:
        number = 1
    else:
        t0 = time.perf_counter()
        call()
        one = max(time.perf_counter() - t0, 1e-7)
        number = max(1, int(1e-3 / one))
    samples = []
    if size_class != "quick":  # a full collection costs ~0.1 s once torch is loaded
        gc.collect()
    deadline = time.perf_counter() + budget
    while len(samples) < max_samples and (
        len(samples) < min_samples or time.perf_counter() < deadline
    ):
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        samples.append((time.perf_counter() - t0) / number)
    return samples, number


def size_class(size, quick):
    return "quick" if quick else "large" if size.large else "small"


def measure_times(workload, size, variants, quick, log):
    """Check and time every variant of one case; a list of records (hand first)."""
    from . import workloads as W

    args = W.make_args(workload, size)
    records, ref = [], None
    for variant in variants:
        rec = {"variant": variant}
        records.append(rec)
        log(f"    {variant:<10} ", end="")
        try:
            if variant == "numba":  # (after sourcegrad's variant, whose compile it would slow)
                W.numba_disk_cache()
            prepared = W.prepare(workload, size, variant, args)
            call = prepared.call
            t0 = time.perf_counter()
            if prepared.compile is not None:  # the same work as a cold first call, in two parts
                prepared.compile()
                rec["compile_s"] = time.perf_counter() - t0
            out = call()
            rec["first_call_s"] = time.perf_counter() - t0
            grads = prepared.to_numpy(out)
            del out
        except Exception as exc:  # recorded and carried on: see failure()
            rec["status"] = failure(exc)
            if variant == "hand":
                rec["traceback"] = traceback.format_exc()
            log(rec["status"])
            continue
        if variant == "hand":
            ref = grads
            rec["status"] = "reference"
        elif ref is None:
            rec["status"] = "unchecked: the hand-written gradient failed"
            log(rec["status"])
            continue
        else:
            rec["max_rel_error"] = err = max_rel_error(grads, ref)
            if not err <= RTOL:
                rec["status"] = "WRONG"
                log(f"WRONG GRADIENT: max relative error {err:.3g} (> {RTOL:g}); not timed")
                continue
            rec["status"] = "ok"
        del grads
        try:
            samples, number = time_calls(
                call, rec["first_call_s"] - rec.get("compile_s", 0.0), size_class(size, quick)
            )
        except Exception as exc:  # a later call failing: recorded, and not timed
            rec["status"] = failure(exc)
            log(rec["status"])
            continue
        rec.update(
            median_s=statistics.median(samples),
            min_s=min(samples),
            samples=len(samples),
            calls_per_sample=number,
        )
        if prepared.after is not None:
            rec.update(prepared.after())
        rec["noisy"] = len(samples) >= 3 and rec["median_s"] > NOISY * rec["min_s"]
        log(
            f"{fmt_time(rec['median_s'])} median of {len(samples)} (first call "
            f"{fmt_time(rec['first_call_s'])}"
            + (f", compile {fmt_time(rec['compile_s'])}" if "compile_s" in rec else "")
            + (
                f", warm cache {fmt_time(rec['warm_first_call_s'])}"
                if "warm_first_call_s" in rec
                else ""
            )
            + ")"
        )
        del call
        if not quick:
            gc.collect()
    return records


def _status_kb():
    fields = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) * 1024
    return fields


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def measure_memory(workload, size, variant):
    """Peak memory the gradient adds, in this process (see the module docstring)."""
    import tracemalloc

    from . import workloads as W

    args = W.make_args(workload, size)
    rec = {}
    try:
        call = W.prepare(workload, size, variant, args).call
        out = call()  # compile, warm up
    except Exception as exc:
        return {"memory_status": failure(exc)}
    del out
    gc.collect()
    rss_ok = os.path.exists("/proc/self/status") and _reset_peak()
    if rss_ok:
        before = _status_kb()["VmRSS"]
        out = call()
        rec["peak_rss_bytes"] = max(0, _status_kb()["VmHWM"] - before)
        rec["memory_method"] = "rss"
        del out
        gc.collect()
    if variant in NUMPY_VARIANTS or not rss_ok:
        tracemalloc.start()
        out = call()
        rec["peak_traced_bytes"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del out
        if not rss_ok:
            rec["memory_method"] = "tracemalloc"
    rec["peak_bytes"] = rec.get("peak_rss_bytes", rec.get("peak_traced_bytes"))
    return rec


def worker(spec_path, out_path):
    """A child's main: run the measurements in the spec file, write JSON to out_path."""
    with open(spec_path) as fh:
        spec = json.load(fh)
    from . import workloads as W

    log = _logger()
    pinned = pin_threads(spec["variants"])
    results = []
    for name, size_name in spec["cases"]:
        workload = W.BY_NAME[name]
        size = workload.size(size_name, spec["quick"])
        if spec["kind"] == "time":
            log(f"  {name} {size_name} ({size.label})")
            results.append(measure_times(workload, size, spec["variants"], spec["quick"], log))
        else:
            results.append([measure_memory(workload, size, v) for v in spec["variants"]])
    with open(out_path, "w") as fh:
        json.dump({"pinned": pinned, "results": results}, fh)


def _logger():
    def log(text, end="\n"):
        print(text, end=end, file=sys.stderr, flush=True)

    return log


# --------------------------------------------------------------------------------------------
# orchestrating (in the parent)
# --------------------------------------------------------------------------------------------


def run_child(kind, cases, variants, quick, timeout):
    """Run a measuring child; its parsed JSON, or {"error": ...}."""
    with tempfile.TemporaryDirectory(prefix="sourcegrad-bench-") as tmp:
        spec_path, out_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec_path, "w") as fh:
            json.dump(
                {
                    "kind": kind,
                    "cases": [[w.name, s.name] for w, s in cases],
                    "variants": list(variants),
                    "quick": quick,
                },
                fh,
            )
        cmd = [sys.executable, "-m", "sourcegrad.bench", "--worker", spec_path, out_path]
        try:
            proc = subprocess.run(
                cmd,
                check=False,
                env=child_env(memory=kind == "memory"),
                timeout=timeout,
                stdout=subprocess.DEVNULL,
                stderr=None if kind == "time" else subprocess.PIPE,
                text=True,
            )
        except subprocess.TimeoutExpired:
            return {"error": f"measuring process timed out after {timeout} s"}
        if proc.returncode != 0 or not os.path.exists(out_path):
            tail = (proc.stderr or "").strip().splitlines()[-1:] if proc.stderr else []
            return {
                "error": f"measuring process exited with status {proc.returncode}"
                + (f": {tail[0]}" if tail else "")
            }
        with open(out_path) as fh:
            return json.load(fh)


def run(cases, variants, quick, memory=True, log=None):
    """Measure every case; the list of per-case result dicts, and the pinning record."""
    log = log or _logger()
    results, pinned = [], None
    timeout = 120 if quick else 900
    if quick:  # one process for all timings, one per variant for memory: fast enough for CI
        batches = [cases]
    else:  # one fresh process per case, so a first call is a cold one
        batches = [[c] for c in cases]
    for n, batch in enumerate(batches, 1):
        log(
            f"[timing {n}/{len(batches)}] "
            + (
                ", ".join(f"{w.name} {s.name}" for w, s in batch)
                if len(batch) == 1
                else f"{len(batch)} cases"
            )
        )
        out = run_child("time", batch, variants, quick, timeout)
        if "results" not in out and "hand" in variants and len(variants) > 2:
            # a peer crashed the process (jax compiling 10,000 unrolled steps: a segfault)
            log(f"  {out['error']}: hand and each other variant in a process of its own")
            out = _one_process_per_variant(batch, variants, quick, timeout)
        pinned = out.get("pinned", pinned)
        for i, (w, s) in enumerate(batch):
            records = (
                out["results"][i]
                if "results" in out
                else [{"variant": v, "status": f"error: {out['error']}"} for v in variants]
            )
            results.append(
                {
                    "workload": w.name,
                    "size": s.name,
                    "label": s.label,
                    "title": w.title,
                    "large": s.large,
                    "variants": records,
                }
            )
    if memory:
        _run_memory(cases, results, quick, timeout, log)
    return results, pinned


def _one_process_per_variant(batch, variants, quick, timeout):
    """The timing child's output for `batch` measured as hand and one other variant per
    process (hand is each process's reference): a variant that crashes its process is
    reported as that variant's error, the others are measured."""
    others = [v for v in variants if v != "hand"]
    parts = [run_child("time", batch, ["hand", v], quick, timeout) for v in others]
    measured = [p for p in parts if "results" in p]
    results = []
    for i in range(len(batch)):
        by_variant = {
            "hand": measured[0]["results"][i][0]
            if measured
            else {"variant": "hand", "status": f"error: {parts[0]['error']}"}
        }
        for v, part in zip(others, parts):
            by_variant[v] = (
                part["results"][i][1]
                if "results" in part
                else {"variant": v, "status": f"error: {part['error']}"}
            )
        results.append([by_variant[v] for v in variants])
    return {"pinned": measured[0].get("pinned") if measured else None, "results": results}


def _run_memory(cases, results, quick, timeout, log):
    todo = []  # (case index, record) of variants whose gradient is right
    for i, res in enumerate(results):
        for rec in res["variants"]:
            if rec.get("status") in ("reference", "ok"):
                todo.append((i, rec))
    if quick:
        by_variant = {}
        for i, rec in todo:
            by_variant.setdefault(rec["variant"], []).append((i, rec))
        groups = list(by_variant.values())
    else:
        groups = [[item] for item in todo]
    for n, group in enumerate(groups, 1):
        variant = group[0][1]["variant"]
        names = ", ".join(f"{results[i]['workload']} {results[i]['size']}" for i, _ in group)
        log(f"[memory {n}/{len(groups)}] {variant}: {names}")
        out = run_child("memory", [cases[i] for i, _ in group], [variant], quick, timeout)
        for k, (i, rec) in enumerate(group):
            if "error" in out:
                rec["memory_status"] = f"error: {out['error']}"
            else:
                rec.update(out["results"][k][0])
            if "peak_bytes" in rec:
                log(
                    f"    {results[i]['workload']} {results[i]['size']}: "
                    f"{fmt_bytes(rec['peak_bytes'])}"
                )


# --------------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------------


# (fmt_time, fmt_bytes: bench/formatting.py, which the workload families share)


def add_ratios(results):
    for res in results:
        hand = next((r for r in res["variants"] if r["variant"] == "hand"), {})
        for rec in res["variants"]:
            if rec.get("median_s") is not None and hand.get("median_s"):
                rec["ratio_to_hand"] = rec["median_s"] / hand["median_s"]
            if rec.get("peak_bytes") is not None and hand.get("peak_bytes"):
                rec["memory_ratio_to_hand"] = rec["peak_bytes"] / hand["peak_bytes"]


def targets(results):
    """The project's targets for sourcegrad, each with its measured value and whether met."""
    from . import workloads as W

    out = []
    for res in results:
        sg = next((r for r in res["variants"] if r["variant"] == "sourcegrad"), None)
        if sg is not None:
            out += [
                {
                    "target": target,
                    "workload": res["workload"],
                    "size": res["size"],
                    "measured": measured,
                    "met": bool(met),
                }
                for target, measured, met in _case_targets(
                    W.BY_NAME[res["workload"]], res["size"], sg
                )
            ]
    return out


# numba (issue 22), median × hand per (workload, size); first calls; reported, not asserted
NUMBA_RATIO_TARGETS = {
    ("rnn", "small"): 0.20,
    ("spring", "1000 steps"): 0.18,
    ("spring", "10000 steps"): 0.10,
    ("chain", "small"): 0.8,
    ("chain", "large"): 0.7,
}
NUMBA_WARM_FIRST_CALL_S = 0.050
NUMBA_COLD_FIRST_CALL_S = {"spring": 2.0}
NUMBA_0D_OVER_FLOATS = 1.2


def numba_targets(results):
    """The numba variant's targets (issue 22), each with its measured value and whether met."""
    out = []
    by_case = {(r["workload"], r["size"]): r for r in results}

    def record(res, variant="numba"):
        return next((v for v in res["variants"] if v["variant"] == variant), None) if res else None

    for res in results:
        nb = record(res)
        if nb is None:
            continue
        case = (res["workload"], res["size"])
        rows = []
        if case in NUMBA_RATIO_TARGETS and nb.get("ratio_to_hand") is not None:
            goal = NUMBA_RATIO_TARGETS[case]
            rows.append(
                (
                    f"numba median ≤ {goal:.2f}× hand",
                    f"{nb['ratio_to_hand']:.2f}×",
                    nb["ratio_to_hand"] <= goal,
                )
            )
        if nb.get("warm_first_call_s") is not None:
            warm = nb["warm_first_call_s"]
            rows.append(
                (
                    f"numba first call, warm cache ≤ {NUMBA_WARM_FIRST_CALL_S * 1e3:.0f} ms",
                    fmt_time(warm),
                    warm <= NUMBA_WARM_FIRST_CALL_S,
                )
            )
        cold_goal = NUMBA_COLD_FIRST_CALL_S.get(res["workload"])
        if cold_goal is not None and nb.get("first_call_s") is not None:
            rows.append(
                (
                    f"numba first call, cold ≤ {cold_goal:g} s",
                    fmt_time(nb["first_call_s"]),
                    nb["first_call_s"] <= cold_goal,
                )
            )
        floats = record(by_case.get(("scalar", "float")))
        if case == ("scalar", "0-d") and nb.get("median_s") and floats and floats.get("median_s"):
            ratio = nb["median_s"] / floats["median_s"]
            rows.append(
                (
                    f"numba on 0-d arrays ≤ {NUMBA_0D_OVER_FLOATS:g}× on Python floats",
                    f"{ratio:.2f}×",
                    ratio <= NUMBA_0D_OVER_FLOATS,
                )
            )
        if nb.get("status") == "ok" and nb.get("jitted") is False and not nb.get("numpy_by_choice"):
            rows.append(("compiled by numba", "no: the numpy code ran (JitFallbackWarning)", False))
        out += [
            {"target": t, "workload": case[0], "size": case[1], "measured": m, "met": bool(ok)}
            for t, m, ok in rows
        ]
    return out


def side_by_side(results, variants):
    """Median × hand-written numpy per case, one column per variant, and the numba variant's
    first calls (cold: compiling; warm: numba's disk cache)."""
    shown = [v for v in variants if v != "hand"]
    lines = [
        "| workload | size | hand | "
        + " | ".join(shown)
        + " | numba first call: cold / warm cache |",
        "|---|---|---:|" + "---:|" * len(shown) + "---|",
    ]
    for res in results:
        recs = {r["variant"]: r for r in res["variants"]}
        hand = recs.get("hand", {})
        cells = []
        for v in shown:
            r = recs.get(v, {})
            ratio = r.get("ratio_to_hand")
            text = f"{ratio:.2f}" if ratio is not None else r.get("status", "-").split(":")[0]
            if v == "numba" and r.get("jitted") is False:
                text += " (numpy code)"
            cells.append(text)
        nb = recs.get("numba", {})
        first = (
            f"{fmt_time(nb.get('first_call_s'))} / {fmt_time(nb.get('warm_first_call_s'))}"
            if nb.get("first_call_s") is not None
            else "-"
        )
        lines.append(
            f"| {res['workload']} | {res['size']} | {fmt_time(hand.get('median_s'))} | "
            + " | ".join(cells)
            + f" | {first} |"
        )
    return "\n".join(lines) + "\n"


def _case_targets(workload, size_name, sg):
    """(target, measured, met) for one case's sourcegrad record."""
    goal = workload.ratio_target or RATIO_TARGET
    rows = [f"median ≤ {goal:.2f}× hand"]
    if workload.compile_target_s is not None:
        rows.append(f"first call: compile ≤ {workload.compile_target_s * 1e3:.0f} ms")
    if size_name in workload.memory_target_sizes:
        rows.append(f"peak memory ≤ hand + {100 * (MEMORY_TARGET - 1):.0f}%")
    if sg.get("status") != "ok":  # unsupported, WRONG, error: the full message is in the table
        why = sg.get("status", "not run").split(":")[0]
        return [(target, why, False) for target in rows]
    ratio = sg["ratio_to_hand"]
    out = [(rows[0], f"{ratio:.2f}×", ratio <= goal)]
    if workload.compile_target_s is not None:
        compile_s = sg.get("compile_s", sg["first_call_s"] - sg["median_s"])
        out.append((rows[1], fmt_time(compile_s), compile_s <= workload.compile_target_s))
    if size_name in workload.memory_target_sizes:
        mratio = sg.get("memory_ratio_to_hand")
        if mratio is None:
            out.append((rows[-1], sg.get("memory_status", "not measured"), False))
        else:
            out.append(
                (
                    rows[-1],
                    f"{fmt_bytes(sg['peak_bytes'])} = {mratio:.2f}× hand",
                    mratio <= MEMORY_TARGET,
                )
            )
    return out


LEGEND = (
    "median: per call, single-threaded (noisy: the median is over "
    f"{NOISY:g}× the fastest sample, so another process had the CPU; rerun on a quiet "
    "machine); × hand: median over the hand-written gradient's; "
    "first call: cold, in a fresh process (sourcegrad: compile, then the first run); "
    "peak memory: peak RSS one call adds, its result included, in a fresh process per "
    "variant (page-granular: figures under 1 MiB are noise, and get no ratio); gradient: "
    f"max relative error against the hand-written gradient, a variant over {RTOL:g} is "
    "WRONG and not timed."
)


def _hand_peak(res):
    hand = next((r for r in res["variants"] if r["variant"] == "hand"), {})
    return hand.get("peak_bytes") or 0


def markdown(results, target_rows):
    lines = [
        ("| workload | size | variant | median | × hand | first call | peak memory | gradient |"),
        "|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        for k, rec in enumerate(res["variants"]):
            status = rec.get("status", "")
            if status == "ok":
                status = f"ok ({rec['max_rel_error']:.0e})"
            elif status == "WRONG":
                status = f"**WRONG** (max rel. error {rec['max_rel_error']:.2g}), not timed"
            ratio = rec.get("ratio_to_hand")
            mem = rec.get("peak_bytes")
            mem_text = fmt_bytes(mem) if mem is not None else rec.get("memory_status", "-")
            if (
                mem is not None
                and rec.get("memory_ratio_to_hand")
                and rec["variant"] != "hand"
                and _hand_peak(res) >= 1024**2
            ):
                mem_text += f" ({rec['memory_ratio_to_hand']:.2f}×)"
            lines.append(
                "| "
                + " | ".join(
                    [
                        res["workload"] if k == 0 else "",
                        f"{res['size']} ({res['label']})" if k == 0 else "",
                        rec["variant"],
                        fmt_time(rec.get("median_s"))
                        + (f" (min {fmt_time(rec['min_s'])}, noisy)" if rec.get("noisy") else ""),
                        f"{ratio:.2f}" if ratio is not None else "-",
                        fmt_time(rec.get("first_call_s"))
                        + (
                            f" (compile {fmt_time(rec['compile_s'])})" if "compile_s" in rec else ""
                        ),
                        mem_text.replace("|", "\\|"),
                        status.replace("|", "\\|"),
                    ]
                )
                + " |"
            )
    lines += [
        "",
        textwrap.fill(LEGEND, 100),
        "",
        "Targets for sourcegrad (reported, not asserted):",
        "",
        "| target | workload | size | measured | met |",
        "|---|---|---|---|---|",
    ]
    for t in target_rows:
        lines.append(
            f"| {t['target']} | {t['workload']} | {t['size']} | "
            f"{str(t['measured']).replace('|', chr(92) + '|')} | "
            f"{'yes' if t['met'] else '**no**'} |"
        )
    met = sum(t["met"] for t in target_rows)
    lines += ["", f"{met} of {len(target_rows)} targets met."]
    return "\n".join(lines) + "\n"


def meta(args, variants, pinned):
    import numpy as np

    versions = {"python": platform.python_version(), "numpy": np.__version__}
    for name in ("autograd", "torch", "jax"):
        if name in variants:
            try:
                from importlib.metadata import version

                versions[name] = version(name)
            except Exception:
                versions[name] = "?"
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((l.split(":", 1)[1].strip() for l in fh if l.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "command": " ".join(["python -m sourcegrad.bench"] + sys.argv[1:]),
        "quick": args.quick,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {"cpu": cpu, "cpus": os.cpu_count(), "platform": platform.platform()},
        "versions": versions,
        "pinned": pinned,
        "rtol": RTOL,
        "openblas_overrides": {v: os.environ.get(v) for v in OPENBLAS_OVERRIDES},
        "memory_method": "peak RSS (VmHWM after clear_refs) in a fresh process per variant; "
        "tracemalloc peak for numpy variants as peak_traced_bytes",
    }


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m sourcegrad.bench",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes and few repetitions: a smoke test for CI, not a measurement",
    )
    p.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only these workloads (repeat or comma-separate): "
        "scalar, logreg, mlp, rnn, chain, spring",
    )
    p.add_argument(
        "--variants",
        metavar="LIST",
        help="comma-separated subset of hand,sourcegrad,numba,autograd,torch,jax "
        "(hand always runs: it is the reference; --quick leaves numba out "
        "unless named here)",
    )
    p.add_argument(
        "--json",
        default=None,
        metavar="PATH",
        help="also write the results as JSON to PATH (default: none written)",
    )
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory processes")
    p.add_argument(
        "--layers",
        action="store_true",
        help="the layers family instead of the main table: code in the style of published "
        "numpy layer libraries, each against its authors' hand-written backward "
        "(dense, conv, batchnorm, layernorm, lstm, per_example, rnn_stack, softmax_naive; "
        "hand and sourcegrad, numba when named in --variants)",
    )
    p.add_argument(
        "--no-scaling",
        action="store_true",
        help="skip compile_scaling (compile time of long and nested functions)",
    )
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _eager_rows(quick, log):
    """The eager-mode measurements (skipped when only some workloads were asked for)."""
    try:
        import sourcegrad

        if not hasattr(sourcegrad, "tensor"):
            return []
        from .eager import measure

        log("eager: per-op overhead and a compiled region")
        return measure(quick)
    except Exception as exc:  # a failed side measurement must not lose the main table
        log(f"eager measurements failed: {type(exc).__name__}: {exc}")
        return []


def _scaling_rows(quick, log):
    """The compile_scaling section: compile time per statement of straight-line functions of
    10 to 10000 statements and of loops nested 1 to 4 deep (quick: 10 and 100, 1 and 2)."""
    try:
        from . import scaling

        log("compile_scaling: compile time against function size")
        if quick:
            return scaling.curve(scaling.QUICK_STRAIGHT_SIZES, scaling.QUICK_NESTING_DEPTHS, log)
        return scaling.curve(log=log)
    except Exception as exc:  # a failed side measurement must not lose the main table
        log(f"compile_scaling failed: {type(exc).__name__}: {exc}")
        return []


def _write_json(path, report):
    """The report as JSON at `path`, when --json asked for it (nothing lands in the current
    directory unasked)."""
    if path is None:
        return
    with open(path, "w") as fh:
        json.dump(report, fh, indent=1, default=str)


def _backend_option(argv):
    """(the backend named by `--backend`, the other arguments): `--backend dask` runs the
    Dask benchmark with its own options."""
    for i, item in enumerate(argv):
        if item.startswith("--backend"):
            backend = item.partition("=")[2] or (argv[i + 1] if i + 1 < len(argv) else "")
            rest = argv[:i] + argv[i + (1 if "=" in item else 2) :]
            if backend not in ("dask", "numpy"):
                raise SystemExit(
                    f"--backend {backend!r}: choose numpy or dask "
                    "(CuPy: python -m sourcegrad.bench.gpu)"
                )
            return backend, rest
    return "numpy", argv


def _variants(args, W, log):
    """(the variants to measure, those asked for but not installed)."""
    wanted = (
        (W.layers.VARIANTS if args.layers else W.VARIANTS)
        if not args.variants
        else ["hand"] + [v for v in args.variants.split(",") if v and v != "hand"]
    )
    unknown = [v for v in wanted if v not in W.VARIANTS]
    if unknown:
        raise SystemExit(
            f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(W.VARIANTS)}"
        )
    if (args.quick or args.layers) and not args.variants:  # (numba: seconds; asked by name)
        wanted = [v for v in wanted if v != "numba"]
    variants = [v for v in wanted if W.available(v)]
    skipped = [v for v in wanted if v not in variants]
    if skipped:
        log(f"not installed, skipped: {', '.join(skipped)}")
    return variants, skipped


def main(argv=None):
    backend, argv = _backend_option(list(sys.argv[1:] if argv is None else argv))
    if backend == "dask":
        from .dask_bench import main as dask_main

        return dask_main(argv)
    args = parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    from . import workloads as W

    log = _logger()
    only = [n for item in args.only or [] for n in item.split(",") if n]
    family = "layers" if args.layers else "main"
    cases = W.cases(only, args.quick, family)
    variants, skipped = _variants(args, W, log)
    overrides = [v for v in OPENBLAS_OVERRIDES if os.environ.get(v)]
    if overrides and not args.quick:
        log(
            f"warning: {', '.join(overrides)} set; BLAS timings may not be this CPU's. "
            f"Run: {COMMAND}"
        )
    log(
        f"{len(cases)} cases x {len(variants)} variants ({', '.join(variants)}), "
        f"single-threaded{', quick' if args.quick else ''}"
    )
    start = time.perf_counter()
    results, pinned = run(cases, variants, args.quick, memory=not args.no_memory, log=log)
    add_ratios(results)
    target_rows = targets(results) + numba_targets(results)
    table = markdown(results, target_rows) + (
        "\nThe layers family (median × each workload's own hand-written backward):\n\n"
        + W.layers.summary(results)
        if args.layers
        else "\nSide by side (median × hand-written numpy):\n\n" + side_by_side(results, variants)
    )
    report = {
        "meta": meta(args, variants, pinned),
        "skipped_variants": skipped,
        "results": results,
        "targets": target_rows,
        "table": table,
    }
    _write_json(args.json, report)  # now, so a failed side measurement loses nothing
    eager_rows = [] if args.layers else _eager_rows(args.quick, log)
    if eager_rows:
        report["eager"] = [
            dict(zip(("what", "seconds", "reference_seconds", "reference"), r)) for r in eager_rows
        ]
        _write_json(args.json, report)
    scaling_rows = [] if args.no_scaling or args.layers else _scaling_rows(args.quick, log)
    if scaling_rows:
        report["compile_scaling"] = scaling_rows
        _write_json(args.json, report)
    log(
        f"done in {time.perf_counter() - start:.0f} s"
        + (f"; results in {args.json}" if args.json else "")
    )
    print(table, end="")
    _print_side_tables(eager_rows, scaling_rows)
    wrong = _wrong(results)
    if wrong:
        log("FAILED: " + "; ".join(" ".join(w) for w in wrong))
        return 1
    return 0


def _print_side_tables(eager_rows, scaling_rows):
    """The eager and compile-scaling measurements' tables, after the main one."""
    if eager_rows:
        from .eager import markdown as eager_markdown

        print(eager_markdown(eager_rows), end="")
    if scaling_rows:
        from .scaling import MS_PER_STATEMENT_TARGET
        from .scaling import markdown as scaling_markdown

        print(
            f"\nCompile time against function size (compile_scaling; target: at most "
            f"{MS_PER_STATEMENT_TARGET:g} ms a statement at any size):\n"
        )
        print(scaling_markdown(scaling_rows))


def _wrong(results):
    """(workload, size, variant) of each wrong result, or measurement that failed."""
    return [
        (r["workload"], r["size"], v["variant"])
        for r in results
        for v in r["variants"]
        if v.get("status") == "WRONG"
        or (v["variant"] == "hand" and v.get("status") != "reference")
        or str(v.get("status", "")).startswith("error: measuring process")
        or str(v.get("memory_status", "")).startswith("error: measuring process")
    ]
