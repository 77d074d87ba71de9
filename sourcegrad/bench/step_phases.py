"""Where a compiled training step's time goes, against torch's: the eager benchmark's models
(eager_models.py), phase by phase.

`python -m sourcegrad.bench.step_phases [--quick] [MLP "LSTM LM" GPT]` prints, per workload,
the best time of each phase of `train_step` (zero_grad, forward, loss, backward, optimizer
step) for `sourcegrad.compile(model)` and for torch, and inside the compiled forward and
backward the generated code's own time. The rest of those two phases is glue: in the
forward, the module's walk and guards, the signature key and the node; in the backward, the
eager engine, the loss's backward (cross-entropy, eager code) and the gradients' accumulation.

One step a round, the two variants in turns (a loaded machine slows both alike); each phase's
best over the rounds, so the phases' bests need not add up to the best step. Run it as the
eager benchmark (pinned, one BLAS thread: see bench/eager.py).
"""

from __future__ import annotations

import sys
import time
import warnings

PHASES = ("zero_grad", "forward", "loss", "backward", "optimizer step")


def _setup(name, torch):
    """{"compiled": (model, optimizer, x, y, F), "torch": (...)}: one workload of
    eager_models.py with torch's initial weights, on the same batch (bench/eager.py's)."""
    import sourcegrad
    import sourcegrad.nn.functional as sg_functional

    from . import eager_models as ours
    from .eager import torch_reference

    theirs, ref, state, x, y = torch_reference(name, torch)
    make, make_opt, _, _ = ours.workloads()[name]
    model = make()
    model.load_state_dict({k: sourcegrad.tensor(v) for k, v in state.items()})
    compiled = sourcegrad.compile(model)
    xs, ys = sourcegrad.tensor(x.numpy()), sourcegrad.tensor(y.numpy())
    return {
        "compiled": (compiled, make_opt(model), xs, ys, sg_functional),
        "torch": (ref, theirs.workloads()[name][1](ref), x, y, torch.nn.functional),
    }


def _phases(model, opt, x, y, F):
    """The seconds of each phase of one training step (bench/eager_models.train_step's)."""
    clock = time.perf_counter
    t0 = clock()
    opt.zero_grad(set_to_none=True)
    t1 = clock()
    logits = model(x)
    t2 = clock()
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    t3 = clock()
    loss.backward()
    t4 = clock()
    opt.step()
    t5 = clock()
    return [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4]


def _timed_generated(compiled_module, spent):
    """Wrap the generated forward and backward of the module's last compiled call so that
    each records its own seconds in `spent` ("generated forward", "generated backward")."""
    found = compiled_module.compiled()
    code = found.region.last._last._last  # region -> its VJP -> the Compiled of this signature
    forward, backward = code.fn

    def timed(fn, what):
        def run(*args):
            t0 = time.perf_counter()
            out = fn(*args)
            spent[what] = time.perf_counter() - t0
            return out

        return run

    code.fn = (timed(forward, "generated forward"), timed(backward, "generated backward"))


def measure(name, rounds=60):
    """{row: (compiled seconds, torch seconds or None)}: each phase's best, the generated
    code's own time inside the compiled forward and backward, and the glue (the rest)."""
    import torch

    torch.set_num_threads(1)
    variants = _setup(name, torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for variant in variants.values():  # (the first call compiles)
            _phases(*variant)
        spent = {}
        _timed_generated(variants["compiled"][0], spent)
        best = {v: [float("inf")] * (len(PHASES) + 5) for v in variants}
        for _ in range(rounds):
            for v, variant in variants.items():
                phases = _phases(*variant)
                extra = [0.0] * 4
                if v == "compiled":
                    gen_f, gen_b = spent["generated forward"], spent["generated backward"]
                    extra = [gen_f, phases[1] - gen_f, gen_b, phases[3] - gen_b]
                row = phases + extra + [sum(phases)]
                best[v] = [min(a, b) for a, b in zip(best[v], row)]
    names = [*PHASES, "generated forward", "forward glue", "generated backward", "backward glue"]
    out = {n: (best["compiled"][i], best["torch"][i]) for i, n in enumerate(PHASES)}
    out.update({n: (best["compiled"][i], None) for i, n in enumerate(names) if n not in out})
    out["step (sum of the phases)"] = (best["compiled"][-1], best["torch"][-1])
    return out


def markdown(name, rows):
    lines = [f"\n{name}: sourcegrad.compile against torch eager\n"]
    lines += ["| phase | compiled | torch | ratio |", "|---|---|---|---|"]
    for what, (mine, theirs) in rows.items():
        ref = f"{theirs * 1e6:.1f} µs" if theirs is not None else ""
        ratio = f"{mine / theirs:.2f}" if theirs else ""
        lines.append(f"| {what} | {mine * 1e6:.1f} µs | {ref} | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    names = [a for a in argv if a != "--quick"] or ["MLP", "LSTM LM", "GPT"]
    for name in names:
        print(markdown(name, measure(name, rounds=3 if quick else 60)))


if __name__ == "__main__":
    main()
