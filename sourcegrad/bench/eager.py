"""Eager-mode measurements, printed after the main table (run in the benchmark process itself):

* per-op overhead: forward + backward of a chain of 100 adds on a 1-element tensor,
  per add, sourcegrad's Tensor against torch's in the same run;
* a compiled region (`sourcegrad.compile`) against the same function run op by op on
  Tensors: the 2-layer MLP loss, batch 32, 64-128-10.
"""

from __future__ import annotations

import timeit

import numpy as np


def _chain(lib, length=100):
    x = lib.ones(1, requires_grad=True)

    def run():
        y = x
        for _ in range(length):
            y = y + 1.0
        y.sum().backward()

    return run


def _mlp_loss(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


def _best(fn, number, repeat=5):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def measure(quick=False):
    """Rows of (what, sourcegrad seconds, reference seconds, reference name)."""
    import sourcegrad

    rows = []
    number = 5 if quick else 50
    per_op = _best(_chain(sourcegrad), number) / 100
    try:
        import torch

        torch.set_num_threads(1)
        reference = _best(_chain(torch), number) / 100
    except ImportError:
        reference = None
    rows.append(("per-op overhead (add, forward + backward)", per_op, reference, "torch"))

    rng = np.random.default_rng(0)
    t = sourcegrad

    def tensors():
        return (
            t.tensor(rng.normal(size=(64, 128)), dtype=t.float64, requires_grad=True),
            t.zeros(128, dtype=t.float64, requires_grad=True),
            t.tensor(rng.normal(size=(128, 10)), dtype=t.float64, requires_grad=True),
            t.tensor(rng.normal(size=(32, 64)), dtype=t.float64),
            t.tensor(np.eye(10)[rng.integers(0, 10, 32)], dtype=t.float64),
        )

    args = tensors()
    region = sourcegrad.compile(_mlp_loss)
    compiled = _best(lambda: region(*args).backward(), number)
    op_by_op = _best(lambda: _mlp_loss(*args).backward(), number)
    rows.append(("MLP loss, small: compiled region vs op by op", compiled, op_by_op, "op by op"))
    return rows


def markdown(rows):
    lines = [
        "",
        "Eager mode:",
        "",
        "| measurement | sourcegrad | reference | ratio |",
        "|---|---|---|---|",
    ]
    for what, mine, reference, name in rows:
        ratio = f"{mine / reference:.2f}" if reference else "n/a"
        ref = f"{reference * 1e6:.1f} µs ({name})" if reference else f"{name} not installed"
        lines.append(f"| {what} | {mine * 1e6:.1f} µs | {ref} | {ratio} |")
    return "\n".join(lines) + "\n"
