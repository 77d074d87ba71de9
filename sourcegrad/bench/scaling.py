"""Compile time against the size of the function: the `compile_scaling` section of the benchmark.

`straight_line_source(n)` writes a function of `n` assignments (elementwise chains with a
matmul every few statements and reads of values many statements back); `nested_source(depth)`
writes loops nested `depth` deep with a few statements at each level. `compile_seconds` writes
such source to a temporary module (the compiler reads source with `inspect`), imports it and
times `Gradient.compile` for its inputs (CPU time): parsing, lowering, the analyses, the
reverse pass, the optimizer, code generation and loading. `curve` measures a list of sizes and
returns rows of CPU milliseconds in all and per statement; compiling should cost the same per
statement at any size (the target: at most `MS_PER_STATEMENT_TARGET` at 2000 and 10000
statements).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time

import numpy as np

STRAIGHT_SIZES = (10, 100, 1000, 2000, 5000, 10000)
NESTING_DEPTHS = (1, 2, 3, 4)
QUICK_STRAIGHT_SIZES = (10, 100)
QUICK_NESTING_DEPTHS = (1, 2)
MS_PER_STATEMENT_TARGET = 2.0  # at 2000 and 10000 statements


def straight_line_source(n: int, name: str = "chain") -> str:
    """A function of `n` assignments `x1 .. xn` and a return: x_k reads x_{k-1} and, every
    few statements, a value from far back, so saved values and lifetimes span the function."""
    lines = [f"def {name}(x0, w, W):"]
    for k in range(1, n + 1):
        prev = f"x{k - 1}"
        far = f"x{max(0, k - 1 - (k * 7) % 50)}"
        kind = k % 5
        if kind == 0:
            expr = f"np.tanh({prev} * 1.01 + w)"
        elif kind == 1:
            expr = f"{prev} + 0.5 * {far}"
        elif kind == 2:
            expr = f"np.sin({prev}) * w - 0.1 * {prev}"
        elif kind == 3:
            expr = f"W @ {prev} * 0.1 + {far} * 0.9"
        else:
            expr = f"np.exp(-{prev} * {prev}) + {far}"
        lines.append(f"    x{k} = {expr}")
    lines.append(f"    return np.sum(x{n} * x{n})")
    return "\n".join(lines) + "\n"


def light_line_source(n: int, name: str = "light") -> str:
    """A cheaper long function for tests: `x_k = x_{k-1} * w` (and every fourth statement
    reads a value from far back), so `w`'s gradient sums n contributions."""
    lines = [f"def {name}(x0, w):"]
    for k in range(1, n + 1):
        extra = f" + x{k // 2}" if k % 4 == 0 else ""
        lines.append(f"    x{k} = x{k - 1} * w{extra}")
    lines.append(f"    return np.sum(x{n})")
    return "\n".join(lines) + "\n"


def straight_line_args(rng=None):
    rng = np.random.default_rng(0) if rng is None else rng
    return (
        rng.standard_normal(8) * 0.1,
        rng.standard_normal(8) * 0.1,
        rng.standard_normal((8, 8)) * 0.1,
    )


_LEVEL = ("h = np.tanh(h * w + {v})", "a = h * 0.5 + {v}", "h = h + np.sin(a) * 0.1")


def nested_source(depth: int, name: str = "nested") -> str:
    """Loops nested `depth` deep (two trips each), three statements at every level."""
    lines = [f"def {name}(x, w):", "    h = x"]
    for level in range(depth):
        pad = "    " * (level + 1)
        lines += [pad + s.format(v=f"0.{level + 1}") for s in _LEVEL]
        lines.append(pad + f"for i{level} in range(2):")
    pad = "    " * (depth + 1)
    lines += [pad + s.format(v="0.9") for s in _LEVEL]
    lines.append("    return np.sum(h * h)")
    return "\n".join(lines) + "\n"


def nested_statements(depth: int) -> int:
    """How many statements `nested_source(depth)` has (loops counted)."""
    return 2 + depth * (len(_LEVEL) + 1) + len(_LEVEL)


def nested_args(rng=None):
    rng = np.random.default_rng(0) if rng is None else rng
    return rng.standard_normal(8) * 0.1, rng.standard_normal(8) * 0.1


def load_function(source: str, name: str, directory: str):
    """Write `source` as a module in `directory`, import it and return its function `name`."""
    path = os.path.join(directory, f"sg_scaling_{name}_{abs(hash(source)):x}.py")
    with open(path, "w") as f:
        f.write("import numpy as np\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def compile_seconds(fn, args, wrt=0) -> float:
    """CPU seconds `sourcegrad.grad(fn)` takes to compile for `args` (a fresh Gradient): the
    process's CPU time, not the wall clock, which counts other processes' turns on a shared
    machine."""
    import sourcegrad

    g = sourcegrad.grad(fn, wrt=wrt)
    t0 = time.process_time()
    g.compile(args)
    return time.process_time() - t0


def curve(sizes=STRAIGHT_SIZES, depths=NESTING_DEPTHS, log=None):
    """Rows {"kind", "size", "statements", "ms", "ms_per_statement"} for straight-line
    functions of each size in `sizes` and loops nested each depth in `depths`."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            fn = load_function(straight_line_source(n), "chain", tmp)
            s = compile_seconds(fn, straight_line_args(), wrt=(0, 1, 2))
            rows.append(_row("straight-line", n, n + 1, s))
            if log:
                log(f"compile_scaling: {n} statements, {s * 1e3:.0f} ms")
        for d in depths:
            fn = load_function(nested_source(d), "nested", tmp)
            s = compile_seconds(fn, nested_args(), wrt=(0, 1))
            rows.append(_row("nested loops", d, nested_statements(d), s))
            if log:
                log(f"compile_scaling: nesting {d}, {s * 1e3:.0f} ms")
    return rows


def _row(kind, size, statements, seconds):
    return {
        "kind": kind,
        "size": size,
        "statements": statements,
        "ms": seconds * 1e3,
        "ms_per_statement": seconds * 1e3 / statements,
    }


def markdown(rows) -> str:
    out = [
        "| function | size | statements | compile (CPU) | per statement |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        size = f"{r['size']} statements" if r["kind"] == "straight-line" else f"depth {r['size']}"
        out.append(
            f"| {r['kind']} | {size} | {r['statements']} | {r['ms']:.1f} ms | "
            f"{r['ms_per_statement']:.3f} ms |"
        )
    return "\n".join(out)


if __name__ == "__main__":  # python -m sourcegrad.bench.scaling [N ...]: the curve alone
    sizes = tuple(int(a) for a in sys.argv[1:]) or STRAIGHT_SIZES
    print(
        markdown(
            curve(
                sizes,
                NESTING_DEPTHS if not sys.argv[1:] else (),
                log=lambda m: print(m, file=sys.stderr),
            )
        )
    )
