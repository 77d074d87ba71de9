"""Train the two PyTorch-style examples three ways -- sourcegrad eager (`import sourcegrad as
torch`), sourcegrad with the model compiled (`torch.compile(model)`, sourcegrad's) and real
PyTorch -- then print the time per epoch of each and draw the loss curves in one picture.

Each run is the example file itself in a subprocess (so `--torch` really imports torch),
with one BLAS/OpenMP thread for all three: the timings compare the libraries, not how
each copes with a shared machine. The first epoch of a compiled run includes compiling.

Needs the [examples] extra (scikit-learn, matplotlib) and, for the third variant, the
[oracle] extra (torch; the variant is left out without it). The picture is written only
where --out says (the documentation's is docs/training_comparison.png).
Run: python examples/compare_training.py [--epochs 3] [--out docs/training_comparison.png]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = {"digits convnet": "digits_convnet.py", "char LSTM": "char_lstm.py"}
VARIANTS = {"sourcegrad eager": [], "sourcegrad.compile": ["--compile"], "torch": ["--torch"]}


def run(script, flags, epochs, max_batches, folder):
    out = os.path.join(folder, f"{script}{'_'.join(flags)}.json")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    root = os.path.dirname(HERE)  # this checkout's sourcegrad first
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    command = [
        sys.executable,
        os.path.join(HERE, script),
        *flags,
        "--epochs",
        str(epochs),
        "--json",
        out,
    ]
    if max_batches is not None:
        command += ["--max-batches", str(max_batches)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{script} {' '.join(flags)} failed:\n{done.stdout}{done.stderr}")
    with open(out) as f:
        return json.load(f)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-batches", type=int, default=None)
    parser.add_argument(
        "--out", default=None, metavar="PATH", help="draw the loss curves there (default: none)"
    )
    args = parser.parse_args(argv)
    import importlib.util

    needed = ["sklearn"] + (["matplotlib"] if args.out else [])
    missing = [m for m in needed if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(
            f"this example needs {' and '.join(missing)}, not installed: "
            'pip install -e ".[examples]"'
        )

    variants = {
        k: v
        for k, v in VARIANTS.items()
        if k != "torch" or importlib.util.find_spec("torch") is not None
    }
    if "torch" not in variants:
        print(
            'torch is not installed: the real-PyTorch variant is left out (pip install -e ".[oracle]")'
        )
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for example, script in EXAMPLES.items():
            for variant, flags in variants.items():
                results[example, variant] = run(
                    script, flags, args.epochs, args.max_batches, folder
                )
    print(f"{'example':16s} {'variant':20s} {'epoch times (s)':28s} {'final loss':>10s}")
    for (example, variant), r in results.items():
        times = " ".join(f"{t:.2f}" for t in r["epoch_times"])
        print(f"{example:16s} {variant:20s} {times:28s} {np.mean(r['losses'][-5:]):10.4f}")
    if args.out:
        draw(results, args.out)
    return results


def draw(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(EXAMPLES), figsize=(11, 4))
    styles = {
        "sourcegrad eager": dict(lw=2.5, alpha=0.6),
        "sourcegrad.compile": dict(lw=1.2, ls="--", color="k"),
        "torch": dict(lw=1.2, color="tab:red"),
    }
    for ax, example in zip(np.atleast_1d(axes), EXAMPLES):
        for (name, variant), r in results.items():
            if name == example:
                per_epoch = np.mean(r["epoch_times"][1:] or r["epoch_times"])
                ax.plot(
                    r["losses"], label=f"{variant} ({per_epoch:.2f} s/epoch)", **styles[variant]
                )
        ax.set_title(example)
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (cross-entropy)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    print(f"loss curves saved to {path}")


if __name__ == "__main__":
    main()
