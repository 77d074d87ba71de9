"""Eager-mode measurements, printed after the main table (run in the benchmark process itself):

* per-op overhead: forward + backward of a chain of 100 adds (`y = y + x`) on 1-element
  tensors, per add, sourcegrad's Tensor against torch's in the same run;
* a training step (zero_grad, forward, cross-entropy, backward, optimizer step) of the
  models of eager_models.py (an MLP, an LSTM language model, a small GPT), the same lines
  run by sourcegrad eagerly, by `sourcegrad.compile(model)` and by torch eagerly, from the
  same initial weights on the same batch, the three timed in turns (round-robin) so that
  a noisy machine slows all alike;
* a compiled region (`sourcegrad.compile`) against the same function run op by op on
  Tensors: the 2-layer MLP loss, batch 32, 64-128-10.

torch runs single-threaded (`torch.set_num_threads(1)`), as numpy's BLAS should for a fair
comparison (OPENBLAS_NUM_THREADS=1).
"""

from __future__ import annotations

import inspect
import time
import timeit
import types
import warnings

import numpy as np


def _chain(lib, length=100):
    x = lib.ones(1, requires_grad=True)
    y0 = lib.ones(1, requires_grad=True)

    def run():
        y = y0
        for _ in range(length):
            y = y + x
        y.sum().backward()

    return run


def torch_models():
    """eager_models.py run with torch in place of sourcegrad (the same source lines)."""
    from . import eager_models

    src = inspect.getsource(eager_models).replace(
        "\nimport sourcegrad as torch\n", "\nimport torch\n", 1
    )
    mod = types.ModuleType("sourcegrad_bench_torch_models")
    exec(compile(src, "<eager_models as torch>", "exec"), mod.__dict__)  # noqa: S102
    return mod


def batch(lib, spec, rng):
    shape, kind, high = spec
    if kind == "int":
        return lib.tensor(rng.integers(0, high, size=shape), dtype=lib.long)
    return lib.tensor(rng.normal(size=shape).astype(np.float32))


def torch_reference(name, torch):
    """(torch's eager_models module, its model of workload `name` seeded 0, that model's
    weights as numpy arrays, a batch x, y of torch tensors): what every variant starts from."""
    theirs = torch_models()
    make, _, xspec, yspec = theirs.workloads()[name]
    torch.manual_seed(0)
    ref = make()
    state = {k: v.detach().numpy().copy() for k, v in ref.state_dict().items()}
    rng = np.random.default_rng(0)
    return theirs, ref, state, batch(torch, xspec, rng), batch(torch, yspec, rng)


def step_variants(name, torch):
    """{variant: (step function, first loss)} for one workload of eager_models.py:
    "eager" and "compiled" (sourcegrad) and "torch", from torch's initial weights."""
    import sourcegrad

    from . import eager_models as ours

    theirs, ref, state, x, y = torch_reference(name, torch)
    variants = {"torch": (ref, theirs.workloads()[name][1](ref), x, y, theirs.train_step)}
    for variant in ("eager", "compiled"):
        make, make_opt, _, _ = ours.workloads()[name]
        model = make()
        model.load_state_dict({k: sourcegrad.tensor(v) for k, v in state.items()})
        opt = make_opt(model)
        run = sourcegrad.compile(model) if variant == "compiled" else model
        xs = sourcegrad.tensor(x.numpy())
        ys = sourcegrad.tensor(y.numpy())
        variants[variant] = (run, opt, xs, ys, ours.train_step)
    out = {}
    for variant, (model, opt, xv, yv, step) in variants.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = float(step(model, opt, xv, yv))

        def run(model=model, opt=opt, xv=xv, yv=yv, step=step):
            step(model, opt, xv, yv)

        out[variant] = (run, loss)
    return out


def time_round_robin(fns, number, rounds):
    """{name: best seconds per call}: each round times `number` calls of every function in
    turn; the best round counts."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / number)
    return best


def measure_steps(quick=False, names=("MLP", "LSTM LM", "GPT")):
    """Rows of (what, sourcegrad seconds, torch eager seconds, reference name), and the first
    losses {workload: {variant: loss}} (the three must agree)."""
    import torch

    torch.set_num_threads(1)
    rows, losses = [], {}
    for name in names:
        variants = step_variants(name, torch)
        losses[name] = {v: loss for v, (_, loss) in variants.items()}
        fns = {v: fn for v, (fn, _) in variants.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # one step a round: the best single step, which a machine shared with others
            # rarely spoils (a round of ten steps of the larger models was nearly always
            # interrupted, and the ratios moved by 30% from run to run)
            best = time_round_robin(fns, number=1, rounds=6 if quick else 70)
        rows.append((f"{name} training step, eager", best["eager"], best["torch"], "torch"))
        rows.append(
            (f"{name} training step, sourcegrad.compile", best["compiled"], best["torch"], "torch")
        )
    return rows, losses


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
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    if torch is None:
        per_op, reference = _best(_chain(sourcegrad), number) / 100, None
    else:  # in turns, as the training steps (a loaded machine slows both alike)
        best = time_round_robin(
            {"ours": _chain(sourcegrad), "torch": _chain(torch)}, number, 3 if quick else 9
        )
        per_op, reference = best["ours"] / 100, best["torch"] / 100
    rows.append(("per-op overhead (add, forward + backward)", per_op, reference, "torch"))
    if reference is not None:
        rows.extend(measure_steps(quick)[0])

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
