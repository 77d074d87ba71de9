"""Differential fuzzing campaign: random programs, compiled gradient vs finite differences.

    python -m tests.fuzz.run_fuzz --n 10000 --seed 0 [--out fuzz_failures] [--jobs 2]
                                  [--minimize] [--timeout 60]

Prints how many programs were generated, compiled, rejected (by reason), matched,
mismatched and crashed, and writes every failing program (mismatched, crashed, and
generator errors, which are bugs in tests/fuzz/programs.py) to the output folder as a
runnable .py file whose header says what went wrong. Exits 1 when anything failed.
Program k of a campaign has seed f"{seed}-{k}": `generate("0-17")` rebuilds it. Programs
have self-updates in loop and branch bodies (`s -= E(s)`), except those of the campaigns
run before these existed (programs.EARLIER_CAMPAIGNS), which are rebuilt as they were;
likewise indexed updates whose index repeats an element (`a[[0, 0]] += v`), except in
programs.EARLIER_REPEATED_INDEX_CAMPAIGNS.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

from .programs import ZERO_D_ENV, check_program, generate, minimize

FAILING = ("mismatched", "crashed", "generator_error")


def seeds_of(n, seed, start=0):
    return [f"{seed}-{k}" for k in range(start, start + n)]


def _work(seeds, timeout):
    with tempfile.TemporaryDirectory(prefix="sgfuzz_") as d:
        return [check_program(generate(s), d, timeout) for s in seeds]


def run(seeds, timeout=60.0, jobs=1, progress=None):
    """Outcomes of the programs for `seeds`, in order."""
    if jobs <= 1:
        out = []
        with tempfile.TemporaryDirectory(prefix="sgfuzz_") as d:
            for i, s in enumerate(seeds):
                out.append(check_program(generate(s), d, timeout))
                if progress and (i + 1) % 500 == 0:
                    progress(i + 1, out)
        return out
    chunk = max(1, min(200, len(seeds) // (jobs * 4) or 1))
    parts = [seeds[i : i + chunk] for i in range(0, len(seeds), chunk)]
    out = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for res in pool.map(_work, parts, [timeout] * len(parts)):
            out += res
            if progress:
                progress(len(out), out)
    return out


def summarize(outcomes) -> dict:
    status = collections.Counter(o.status for o in outcomes)
    rejected = collections.Counter(o.reason for o in outcomes if o.status == "rejected")
    crashed = collections.Counter(
        o.reason.split("\n")[0][:100] for o in outcomes if o.status == "crashed"
    )
    mismatched = collections.Counter(o.reason for o in outcomes if o.status == "mismatched")
    skipped = collections.Counter(
        re.sub(r" \(line \d+\)", "", o.detail.split(":")[0])[:60]
        for o in outcomes
        if o.status == "skipped"
    )
    features = collections.Counter(f for o in outcomes for f in o.program.features)
    compiled = sum(
        1
        for o in outcomes
        if o.status in ("matched", "mismatched") or (o.status == "crashed" and o.gradient_source)
    )
    return {
        "generated": len(outcomes),
        "compiled": compiled,
        "status": status,
        "rejected": rejected,
        "crashed": crashed,
        "mismatched": mismatched,
        "skipped": skipped,
        "features": features,
    }


def format_summary(s) -> str:
    st = s["status"]
    lines = [
        f"generated   {s['generated']}",
        f"compiled    {s['compiled']}   (a gradient was generated and loaded)",
        f"rejected    {st['rejected']}   (SourcegradError)",
        f"matched     {st['matched']}",
        f"mismatched  {st['mismatched']}",
        (
            f"crashed     {st['crashed']}   (any other exception, in the compiler or in "
            "the generated code)"
        ),
        f"skipped     {st['skipped']}   (no inputs away from kinks)",
        f"generator errors {st['generator_error']}   (bugs in tests/fuzz/programs.py)",
    ]
    for title, key in (
        ("rejected by reason", "rejected"),
        ("crashed by error", "crashed"),
        ("mismatched in", "mismatched"),
        ("skipped because", "skipped"),
    ):
        if s[key]:
            lines.append(f"{title}:")
            lines += [f"  {v:6d}  {k}" for k, v in s[key].most_common()]
    lines.append(
        "features (programs using each): "
        + ", ".join(f"{k} {v}" for k, v in sorted(s["features"].items()))
    )
    return "\n".join(lines)


def write_failures(outcomes, out_dir, do_minimize=False) -> list:
    """Write failing programs as runnable files; returns their paths."""
    paths = []
    failing = [o for o in outcomes if o.status in FAILING]
    if not failing:
        return paths
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="sgfuzz_min_")
    for o in failing:
        stem = os.path.join(out_dir, f"{o.status}_{o.program.module_name}")
        paths.append(_write(o, stem + ".py"))
        if do_minimize and o.status != "generator_error":
            _, small = minimize(o.program, work, o, seconds=60)
            paths.append(_write(small, stem + "_min.py"))
    return paths


def _write(o, path):
    header = o.report().replace("--- program", "\n--- program", 1)
    shapes = ", ".join(f"{n}: {'float' if s == () else s}" for n, s in o.program.params)
    with open(path, "w") as fh:
        fh.write('"""' + header.replace('"""', "'''").replace("\\", "\\\\") + '\n"""\n')
        fh.write(f"# seed {o.program.seed!r}; parameters {shapes}\n")
        fh.write(o.program.source)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tests.fuzz.run_fuzz",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--n", type=int, default=10000, help="number of programs")
    ap.add_argument("--seed", default="0", help="campaign seed (program k: f'{seed}-{k}')")
    ap.add_argument("--start", type=int, default=0, help="first program index")
    ap.add_argument("--out", default="fuzz_failures", help="folder for failing programs")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per program")
    ap.add_argument("--minimize", action="store_true", help="also write reduced programs")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument(
        "--zero-d",
        action="store_true",
        help="give scalar inputs as 0-d arrays instead of Python floats",
    )
    args = ap.parse_args(argv)
    if args.zero_d:
        os.environ[ZERO_D_ENV] = "1"  # (read by draw_args, in the workers too)
    t0 = time.monotonic()

    def progress(done, outs):
        if not args.quiet:
            bad = sum(o.status in FAILING for o in outs)
            print(
                f"  {done}/{args.n} programs, {bad} failing, {time.monotonic() - t0:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    outcomes = run(seeds_of(args.n, args.seed, args.start), args.timeout, args.jobs, progress)
    summary = summarize(outcomes)
    print(format_summary(summary))
    paths = write_failures(outcomes, args.out, args.minimize)
    if paths:
        print(f"failing programs written to {args.out}/ ({len(paths)} files)")
    print(f"{time.monotonic() - t0:.1f} s")
    return 1 if any(o.status in FAILING for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
