"""Logistic regression fitted on data larger than memory: the compiled gradient on Dask arrays.

The data are never stored: X (rows x cols) is drawn chunk by chunk from a seeded generator,
and each gradient-descent step makes one pass over it (the loss and the gradient in one
`dask.compute`, with a progress bar). `w` stays a numpy array; its gradient comes back as
one. With --plot PATH (and matplotlib) the loss curve is saved.

Run: python examples/dask_out_of_core.py [--rows 2e8] [--steps 10] [--plot loss.png]
(2e8 rows of 20 float64 columns are 32 GB; the default, 2e6 rows, is a quick look.)
Needs the [dask] extra: pip install -e ".[dask]"
"""

import argparse
import sys

import numpy as np

try:
    import dask.array as da
    from dask.diagnostics import ProgressBar
except ImportError:
    sys.exit(
        "this example needs dask, which is not installed: "
        'pip install -e ".[dask]" (or pip install "sourcegrad[dask]")'
    )

import sourcegrad


def loss(w, X, y):
    return np.mean(np.log(1.0 + np.exp(-y * (X @ w))))


def make_data(rows, cols=20, chunk_rows=500_000, seed=0):
    """Lazy Dask arrays: X drawn chunk by chunk, y = sign(X @ true_w + noise)."""
    rng = da.random.default_rng(seed)
    X = rng.standard_normal((rows, cols), chunks=(chunk_rows, cols))
    true_w = np.random.default_rng(seed).normal(size=cols)
    y = da.sign(X @ true_w + 0.5 * rng.standard_normal(rows, chunks=chunk_rows))
    return X, y


def fit(rows, steps, lr=1.0, progress=True):
    X, y = make_data(rows)
    w = np.zeros(X.shape[1])
    dloss = sourcegrad.value_and_grad(loss)  # backend "auto": Dask code for Dask inputs
    losses = []
    for step in range(steps):
        if progress:
            with ProgressBar():
                value, dw = dloss(w, X, y)
        else:
            value, dw = dloss(w, X, y)
        w -= lr * dw
        losses.append(float(value))
        print(f"step {step:3d}  loss {value:.4f}", flush=True)
    return w, losses


def plot(losses, path):
    try:
        import matplotlib
    except ImportError:
        print('matplotlib is not installed: no plot (pip install -e ".[examples]")')
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(losses, marker="o")
    ax.set_xlabel("gradient-descent step (one pass over the data)")
    ax.set_ylabel("logistic loss")
    fig.tight_layout()
    fig.savefig(path)
    print(f"loss curve: {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, default=2e6)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--plot", default=None, metavar="PATH")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    w, losses = fit(int(args.rows), args.steps, progress=not args.no_progress)
    if args.plot:
        plot(losses, args.plot)
    print(f"fitted w[:3] = {np.round(w[:3], 3)}; final loss {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
