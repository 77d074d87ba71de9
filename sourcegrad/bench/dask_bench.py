"""`python -m sourcegrad.bench --backend dask`: the logistic-regression gradient over data that
need not fit in memory, on a dask.distributed cluster.

The data are never stored: `X` (rows x cols, float64) is drawn chunk by chunk from a seeded
generator (`dask.array.random.default_rng(seed)`) and `y = sign(X @ true_w + noise)` from
the same chunks, so a 5e8 x 20 dataset (80 GB) is as cheap to describe as a small one and
every pass regenerates it chunk by chunk. On it, each timed once after a check:

- **sourcegrad (dask)**: `sourcegrad.grad(logreg)(w, X, y)` with `w` a numpy array and
  `X`, `y` Dask arrays: the generated Dask code and its one `dask.compute`;
- **hand-written dask.array**: the same gradient written by hand with dask.array
  (`X.T @ (-y / (1 + da.exp(y * (X @ w)))) / n`), one `.compute()`;
- **data only**: one pass that only reads the data (`X.sum(axis=0)`, `y.sum()`): the cost
  of generating the chunks, which every pass above pays too;
- **numpy in memory**: `sourcegrad.grad(logreg)` and the hand-written numpy gradient on
  the first `--numpy-rows` rows held in memory (the largest size that fits, given).

Before timing, the three gradients are checked against each other on the first
`--check-rows` rows (max |a - b| / max |b| at most 1e-10). Throughput is rows per second of
wall-clock time; the ratio sourcegrad / hand-written dask is the target (at most 1.2).

The peak resident memory of the process after the Dask passes (before the numpy data are
made) shows the data streamed through in chunks (with in-process workers, the default).

`--scheduler ADDRESS` runs on an existing cluster (`tcp://host:8786`) instead of starting a
LocalCluster; `--workers`, `--threads` and `--memory-limit` size the LocalCluster.
Output: a markdown table on stdout; `--json PATH` also writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from . import workloads

TARGET_RATIO = 1.2  # sourcegrad's Dask gradient at most this much slower than hand-written
RTOL = 1e-10


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m sourcegrad.bench --backend dask", description=(__doc__ or "").split("\n")[0]
    )
    p.add_argument("--rows", type=float, default=5e8, help="rows of X (default 5e8: 80 GB)")
    p.add_argument("--cols", type=int, default=20, help="columns of X (default 20)")
    p.add_argument(
        "--chunk-rows",
        type=float,
        default=5e5,
        help="rows per chunk (default 5e5: 80 MB chunks of 20 columns)",
    )
    p.add_argument(
        "--numpy-rows",
        type=float,
        default=2e7,
        help="rows for numpy in memory (the largest that fits; default 2e7; 0: no numpy rows)",
    )
    p.add_argument(
        "--no-data-only",
        action="store_true",
        help="skip the pass that only generates and sums the data",
    )
    p.add_argument("--check-rows", type=float, default=2e5, help="rows the check runs on")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="an existing dask.distributed scheduler (default: a LocalCluster)",
    )
    p.add_argument("--workers", type=int, default=1, help="LocalCluster workers (default 1)")
    p.add_argument("--threads", type=int, default=2, help="threads per worker (default 2)")
    p.add_argument(
        "--memory-limit",
        default="4GiB",
        help="per LocalCluster worker (in-process workers: of this whole process)",
    )
    p.add_argument(
        "--processes",
        action="store_true",
        help="LocalCluster workers in processes (default: threads in this process)",
    )
    p.add_argument("--json", default=None, metavar="PATH")
    return p.parse_args(argv)


def dataset(rows, cols, chunk_rows, seed):
    """(w0, X, y, true_w): lazy Dask data drawn chunk by chunk from `seed`."""
    import dask.array as da

    rng = da.random.default_rng(seed)
    X = rng.standard_normal((rows, cols), chunks=(chunk_rows, cols))
    noise = rng.standard_normal(rows, chunks=chunk_rows)
    true_w = np.random.default_rng(seed).normal(size=cols)
    y = da.sign(X @ true_w + 0.1 * noise)
    return np.zeros(cols), X, y, true_w


def hand_dask_gradient(w, X, y):
    """The logistic-regression gradient written by hand with dask.array (lazy)."""
    import dask.array as da

    # d/dz_i = -y_i sigmoid(-y_i z_i) / n = -y_i / (1 + exp(y_i z_i)) / n (as logreg_hand)
    return X.T @ (-y / (1.0 + da.exp(y * (X @ w)))) / y.shape[0]


def _relative(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def check(args, log):
    """The three gradients on the first rows agree (or SystemExit)."""
    import sourcegrad

    n = int(args.check_rows)
    w, X, y, true_w = dataset(n, args.cols, int(args.chunk_rows), args.seed)
    w = 0.1 * true_w  # a point where the gradient is not tiny
    ours = sourcegrad.grad(workloads.logreg)(w, X, y)
    hand = hand_dask_gradient(w, X, y).compute()
    Xn, yn = X.compute(), y.compute()
    (numpy,) = workloads.logreg_hand(w, Xn, yn)
    errors = {
        "sourcegrad (dask) vs numpy": _relative(ours, numpy),
        "hand-written dask vs numpy": _relative(hand, numpy),
    }
    for what, err in errors.items():
        log(f"check on {n} rows: {what}: max rel. difference {err:.1e}")
    if max(errors.values()) > RTOL:
        raise SystemExit("the Dask gradients disagree with numpy's: not timed")
    return errors


def measure(args, log):
    """The measurements (a dict), on the cluster the Client in use points at."""
    import dask

    import sourcegrad

    rows, cols, chunk = int(args.rows), args.cols, int(args.chunk_rows)
    w, X, y, _ = dataset(rows, cols, chunk, args.seed)
    gb = rows * (cols + 1) * 8 / 1e9
    log(
        f"data: {rows:.3g} x {cols} float64 (+ y): {gb:.1f} GB, chunks of {chunk} rows "
        f"({X.numblocks[0]} chunks), generated per pass"
    )
    g = sourcegrad.grad(workloads.logreg)
    g.compile((w, X, y))  # code generation apart from the pass (milliseconds)
    results = []

    def add(name, seconds, n, note=""):
        results.append(
            {
                "variant": name,
                "rows": n,
                "seconds": seconds,
                "rows_per_s": n / seconds,
                "note": note,
            }
        )
        log(f"{name}: {n:.3g} rows in {seconds:.2f} s = {n / seconds:.3g} rows/s")

    if not args.no_data_only:
        seconds, _ = _timed(lambda: dask.compute(X.sum(axis=0), y.sum()))
        add("data only (generate the chunks, sum them)", seconds, rows, "every pass pays this")
    ours_seconds, ours = _timed(lambda: g(w, X, y))
    add("sourcegrad, backend dask", ours_seconds, rows)
    hand_seconds, hand = _timed(lambda: hand_dask_gradient(w, X, y).compute())
    add("hand-written dask.array", hand_seconds, rows)
    agree = _relative(ours, hand)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9  # (Linux: KiB)
    log(f"peak resident memory of this process after the Dask passes: {peak:.2f} GB")
    log(f"full data: sourcegrad vs hand-written dask max rel. difference {agree:.1e}")
    ratio = ours_seconds / hand_seconds
    n = min(rows, int(args.numpy_rows))
    if n:
        # (made by threads in this process: in-process workers would count it as theirs)
        numpy_in_memory(w, *dask.compute(X[:n], y[:n], scheduler="threads"), add)
    return {
        "rows": rows,
        "cols": cols,
        "chunk_rows": chunk,
        "gigabytes": gb,
        "results": results,
        "ratio_sourcegrad_over_hand_dask": ratio,
        "full_data_agreement": agree,
        "peak_rss_gb_after_dask": peak,
    }


def numpy_in_memory(w, Xn, yn, add):
    """sourcegrad's numpy gradient and the hand-written one on data held in memory."""
    import sourcegrad

    n = Xn.shape[0]
    numpy_grad = sourcegrad.grad(workloads.logreg)
    numpy_grad(w, Xn[:10], yn[:10])
    numpy_grad(w, Xn, yn)  # compiled for this shape before the timed call
    best = min(_timed(lambda: numpy_grad(w, Xn, yn))[0] for _ in range(3))
    add("sourcegrad, numpy in memory", best, n, "data already in memory; best of 3")
    best = min(_timed(lambda: workloads.logreg_hand(w, Xn, yn))[0] for _ in range(3))
    add("hand-written numpy in memory", best, n, "data already in memory; best of 3")


def markdown(report) -> str:
    lines = [
        f"\nLogistic-regression gradient, X {report['rows']:.3g} x {report['cols']} "
        f"float64 ({report['gigabytes']:.1f} GB, generated chunk by chunk, "
        f"{report['chunk_rows']} rows a chunk) on {report['cluster']}:\n",
        "| variant | rows | seconds | rows/s | note |",
        "|---|---:|---:|---:|---|",
    ]
    for r in report["results"]:
        lines.append(
            f"| {r['variant']} | {r['rows']:.3g} | {r['seconds']:.2f} | "
            f"{r['rows_per_s']:.3g} | {r['note']} |"
        )
    ratio = report["ratio_sourcegrad_over_hand_dask"]
    lines.append(
        f"\nPeak resident memory after the Dask passes (workers in this process): "
        f"{report['peak_rss_gb_after_dask']:.2f} GB for {report['gigabytes']:.1f} "
        "GB of data."
    )
    lines.append(
        f"\nsourcegrad / hand-written dask: {ratio:.2f}x (target: at most "
        f"{TARGET_RATIO}x) -- {'met' if ratio <= TARGET_RATIO else 'NOT met'}\n"
    )
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    try:
        import distributed
    except ImportError:
        print(
            'dask and distributed are not installed (pip install "sourcegrad[dask]"): '
            "nothing measured"
        )
        return 0

    def log(message):
        print(f"[dask bench] {message}", flush=True)

    if args.scheduler:
        client, cluster = distributed.Client(args.scheduler), None
        where = f"the cluster at {args.scheduler}"
    else:
        cluster = distributed.LocalCluster(
            n_workers=args.workers,
            threads_per_worker=args.threads,
            processes=args.processes,
            memory_limit=args.memory_limit,
            dashboard_address=None,
        )
        client = distributed.Client(cluster)
        where = (
            f"a LocalCluster of {args.workers} worker(s) x {args.threads} thread(s), "
            f"{args.memory_limit} each"
        )
    try:
        errors = check(args, log)
        report = measure(args, log)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    report.update(cluster=where, check=errors)
    print(markdown(report), end="")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0 if report["full_data_agreement"] <= RTOL else 1
