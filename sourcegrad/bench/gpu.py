"""`python -m sourcegrad.bench.gpu`: the benchmark workloads and the eager seed on a CUDA GPU.

One prepared script, meant to finish well inside five minutes on a GPU. For the
array workloads of `workloads.py` (logreg, mlp, rnn, chain; both sizes, float64,
inputs made by `workloads.make_args` and copied to the device once) it checks and
times, on CuPy:

- **compiled**: `sourcegrad.grad(f, wrt, backend="cupy")`, the generated CuPy
  gradient (runs of elementwise operations fused into `cupy.fuse` kernels);
- **hand (CuPy)**: the hand-written gradient of `workloads.py`, run with `np`
  bound to `cupy` (the same in-place buffers and `out=` ufuncs, on the device);
- **eager (CUDA)**: the loss `f` itself called on `sourcegrad.tensor(...,
  device="cuda")` inputs, gradients from the eager engine (`autograd.grad`);
- **torch (CUDA)**: torch's autograd on CUDA tensors, where torch has CUDA.

The scalar and spring workloads run on Python floats and are not GPU work.

Each variant's first call is checked against the hand-written numpy gradient on
the host (max |a - b| / max |b| per gradient at most `RTOL`, as the CPU benchmark
checks); a wrong or failing variant is reported and not timed. Timing: the device
is synchronized (`cupy.cuda.Device().synchronize()`) before every timer read;
calls are grouped so a sample lasts at least a millisecond, samples are taken for
`--budget` seconds (at least 3), and the median per call is reported, with the
first call (which includes generating code and compiling kernels) apart. Then the
four sections of examples/seed_walkthrough.py run with `.cuda()` tensors, their
values checked and their time (forward and backward) compared with the CPU.

Output: markdown tables on stdout (`--json PATH` also writes the numbers).
Exit status: 0 when every check passes, 1 when one fails. Without a CUDA device
(or without CuPy) it prints one line saying so, measures nothing and exits with
status 0, or 2 with `--strict` (for a job that must run on a GPU).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
import types
import warnings

import numpy as np

RTOL = 1e-8
GPU_WORKLOADS = ("logreg", "mlp", "rnn", "chain")
DEADLINE_S = 240.0  # past this, variants are still checked but no longer timed


def no_device_reason():
    """Why CUDA tensors cannot be made here (one line), or None when a GPU is there."""
    from sourcegrad.eager import devices

    try:
        devices.cupy()
    except RuntimeError as e:
        return " ".join(str(e).split())
    return None


# --- timing ------------------------------------------------------------------------------------


class Timer:
    def __init__(self, sync, budget, deadline):
        self.sync = sync
        self.budget = budget
        self.deadline = deadline

    def first(self, call):
        self.sync()
        t0 = time.perf_counter()
        out = call()
        self.sync()
        return out, time.perf_counter() - t0

    def median(self, call):
        """Median seconds per call, calls grouped into samples of at least ~1 ms."""
        if time.perf_counter() > self.deadline:
            return None
        self.sync()
        t0 = time.perf_counter()
        call()
        self.sync()
        single = time.perf_counter() - t0
        number = max(1, min(1000, int(1e-3 / max(single, 1e-7))))
        samples = []
        start = time.perf_counter()
        while len(samples) < 3 or (
            time.perf_counter() - start < self.budget and len(samples) < 200
        ):
            self.sync()
            t0 = time.perf_counter()
            for _ in range(number):
                call()
            self.sync()
            samples.append((time.perf_counter() - t0) / number)
        return statistics.median(samples)


def rel_error(got, expected):
    """max over gradients of max |a - b| / max |b| (the CPU benchmark's check)."""
    worst = 0.0
    if len(got) != len(expected):
        return float("inf")
    for a, b in zip(got, expected):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return float("inf")
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        diff = float(np.max(np.abs(a - b))) if b.size else 0.0
        worst = max(worst, diff / scale if scale else diff)
    return worst


# --- the variants --------------------------------------------------------------------------


def with_cupy(fn, cp):
    """`fn` with the name `np` in its globals bound to cupy (a hand-written numpy gradient)."""
    scope = dict(fn.__globals__)
    scope["np"] = cp
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)


def prepare(variant, workload, size, host_args, cp):
    """(call, to_host) for one variant: call() computes the gradient tuple on the device."""
    from . import workloads

    wrt = workloads.wrt_positions(workload)
    dev_args = tuple(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host_args)
    to_host = lambda out: tuple(cp.asnumpy(g) for g in out)  # noqa: E731
    if variant == "hand (CuPy)":
        fn = with_cupy(workload.reference(size), cp)
        return (lambda: fn(*dev_args)), to_host
    if variant == "compiled":
        import sourcegrad

        g = sourcegrad.grad(workload.function(size), wrt=tuple(workload.wrt), backend="cupy")
        return (lambda: g(*dev_args)), to_host
    if variant == "eager (CUDA)":
        import sourcegrad as sg

        f = workload.function(size)
        targs = [
            sg.as_tensor(a).requires_grad_(i in wrt) if isinstance(a, cp.ndarray) else a
            for i, a in enumerate(dev_args)
        ]
        inputs = [targs[i] for i in wrt]

        def call():
            return sg.autograd.grad(f(*targs), inputs)

        return call, lambda out: tuple(t.cpu().numpy() for t in out)
    if variant == "torch (CUDA)":
        import torch

        fn = workload.torch or functools.partial(workload.xp, torch)
        targs = []
        for i, a in enumerate(host_args):
            if isinstance(a, np.ndarray) or i in wrt:
                a = torch.tensor(a, dtype=torch.float64, device="cuda")
                if i in wrt:
                    a.requires_grad_(True)
            targs.append(a)
        inputs = [targs[i] for i in wrt]

        def call():
            return torch.autograd.grad(fn(*targs), inputs)

        return call, lambda out: tuple(g.detach().cpu().numpy() for g in out)
    raise KeyError(variant)


def torch_cuda():
    """Whether torch is installed with a usable CUDA device (checked without failing)."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - not installed, or installed without CUDA
        return False


def run_workloads(cp, timer, quick, only):
    from . import workloads

    variants = ["hand (CuPy)", "compiled", "eager (CUDA)"]
    if torch_cuda():
        variants.append("torch (CUDA)")
    rows = []
    for w in workloads.WORKLOADS:
        if w.name not in GPU_WORKLOADS or (only and w.name not in only):
            continue
        for size in w.quick if quick else w.sizes:
            host_args = workloads.make_args(w, size)
            expected = workloads._as_numpy(w.reference(size)(*host_args))
            hand_median = None
            for variant in variants:
                row = {
                    "workload": w.name,
                    "size": size.name,
                    "label": size.label,
                    "variant": variant,
                    "status": "ok",
                    "error": None,
                    "first_s": None,
                    "median_s": None,
                }
                try:
                    call, to_host = prepare(variant, w, size, host_args, cp)
                    out, row["first_s"] = timer.first(call)
                    row["error"] = rel_error(to_host(out), expected)
                    if not row["error"] <= RTOL:
                        row["status"] = "WRONG"
                    else:
                        row["median_s"] = timer.median(call)
                        if row["median_s"] is None:
                            row["status"] = "ok (not timed: time budget spent)"
                except Exception as e:  # noqa: BLE001 - reported in the table, the run goes on
                    row["status"] = f"ERROR: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
                if variant == "hand (CuPy)":
                    hand_median = row["median_s"]
                row["vs_hand"] = (
                    row["median_s"] / hand_median if row["median_s"] and hand_median else None
                )
                rows.append(row)
    return rows


# --- the seed walkthrough on the GPU -------------------------------------------------------


def seed_sections(torch, device):
    """The four sections of examples/seed_walkthrough.py on `device`; what each one gives."""

    def graph():
        w = torch.tensor([2.0], device=device, requires_grad=True)
        b = torch.tensor([3.0], device=device, requires_grad=True)
        x = torch.tensor([4.0]).to(device)
        y = w * x + b
        names = (
            type(y.grad_fn).__name__,
            tuple(type(n).__name__ for n, _ in y.grad_fn.next_functions),
        )
        y.backward()
        return (y.item(), names, w.grad.item(), b.grad.item())

    def accumulation():
        x = torch.tensor([3.0], device=device, requires_grad=True)
        seen = []
        for _ in range(3):
            y = x**2
            y.backward()
            seen.append(x.grad.item())
        x.grad.zero_()
        return tuple(seen) + (x.grad.item(),)

    def inference():
        with torch.inference_mode():
            features = torch.randn(64, 512, device=device)
            predictions = features @ torch.randn(512, 10, device=device)
        return (
            tuple(predictions.shape),
            predictions.requires_grad,
            predictions.grad_fn is None,
            str(predictions.device).split(":")[0],
        )

    class CustomReLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input_tensor):
            ctx.save_for_backward(input_tensor)
            return input_tensor.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (input_tensor,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input_tensor <= 0] = 0
            return grad_input

    def custom_function():
        z = torch.tensor([-2.0, 3.0, 5.0], requires_grad=True, device=device)
        CustomReLU.apply(z).sum().backward()
        return tuple(z.grad.tolist())

    return {
        "1. dynamic graph": graph,
        "2. gradient accumulation": accumulation,
        "3. inference_mode": inference,
        "4. custom Function": custom_function,
    }


SEED_EXPECTED = {
    "1. dynamic graph": (11.0, ("AddBackward0", ("MulBackward0", "AccumulateGrad")), 4.0, 1.0),
    "2. gradient accumulation": (6.0, 12.0, 18.0, 0.0),
    "3. inference_mode": ((64, 10), False, True, None),  # device type filled in per device
    "4. custom Function": (0.0, 1.0, 1.0),
}


def run_seed(timer):
    import sourcegrad as sg

    rows = []
    cuda = seed_sections(sg, "cuda")
    cpu = seed_sections(sg, "cpu")
    for name, section in cuda.items():
        row = {"section": name, "status": "ok", "cuda_s": None, "cpu_s": None}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = section()
                expected = SEED_EXPECTED[name]
                if name.startswith("3."):
                    expected = expected[:3] + ("cuda",)
                if got != expected:
                    row["status"] = f"WRONG: {got!r}"
                else:
                    row["cuda_s"] = timer.median(section)
                    row["cpu_s"] = timer.median(cpu[name])
        except Exception as e:  # noqa: BLE001
            row["status"] = f"ERROR: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
        rows.append(row)
    return rows


# --- report --------------------------------------------------------------------------------


def _ms(s):
    return "-" if s is None else (f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.2f} s")


def markdown(header, rows, seed_rows):
    lines = [
        header,
        "",
        "| workload | size | variant | check (max rel. err) | first call | median | vs hand |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        err = "-" if r["error"] is None else f"{r['error']:.1e}"
        status = (
            err
            if r["status"] == "ok"
            else (r["status"] if r["error"] is None else f"{r['status']} ({err})")
        )
        ratio = "-" if r["vs_hand"] is None else f"{r['vs_hand']:.2f}"
        lines.append(
            f"| {r['workload']} | {r['size']} ({r['label']}) | {r['variant']} | "
            f"{status} | {_ms(r['first_s'])} | {_ms(r['median_s'])} | {ratio} |"
        )
    lines += [
        "",
        "Eager seed walkthrough (examples/seed_walkthrough.py), each section forward and backward:",
        "",
        "| section | check | CUDA | CPU |",
        "|---|---|---|---|",
    ]
    for r in seed_rows:
        lines.append(f"| {r['section']} | {r['status']} | {_ms(r['cuda_s'])} | {_ms(r['cpu_s'])} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sourcegrad.bench.gpu", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--quick", action="store_true", help="the tiny sizes and a short time budget (a smoke test)"
    )
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", choices=GPU_WORKLOADS, help="only these workloads"
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds of timing per variant (default 0.5, 0.05 with --quick)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit with status 2 (not 0) when there is no CUDA device",
    )
    args = parser.parse_args(argv)

    reason = no_device_reason()
    if reason is not None:
        print(f"sourcegrad.bench.gpu: {reason}; nothing measured")
        return 2 if args.strict else 0

    from sourcegrad.eager import devices

    cp = devices.cupy()
    budget = args.budget if args.budget is not None else (0.05 if args.quick else 0.5)
    timer = Timer(lambda: cp.cuda.Device().synchronize(), budget, time.perf_counter() + DEADLINE_S)
    import sourcegrad

    name = sourcegrad.cuda.get_device_name()
    header = (
        f"sourcegrad on {name} (CuPy {cp.__version__}; torch with CUDA: "
        f"{'yes' if torch_cuda() else 'no'}), float64, timing budget {budget} s per "
        "variant"
    )
    start = time.perf_counter()
    rows = run_workloads(cp, timer, args.quick, args.only)
    seed_rows = run_seed(timer)
    print(markdown(header, rows, seed_rows))
    print(f"total {time.perf_counter() - start:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "workloads": rows, "seed": seed_rows}, f, indent=1)
    failed = [r for r in rows + seed_rows if not r["status"].startswith("ok")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
