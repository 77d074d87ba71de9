"""Differential fuzzer for eager in-place updates through views, torch as the oracle.

`generate(seed)` gives a `Program`: Python statements written for torch. A leaf `y` is
cloned into `a`; random in-place updates (`+=`, `-=`, `*=`, `/=`, `=`, `add_`, `mul_`,
`copy_`, `zero_`, `clamp_`, ...) go through random views of `a` (indexing, slicing,
`.T`, `transpose`, `view`/`reshape`, `select`, `narrow`, `diagonal`, `unsqueeze`,
`unbind`/`split` pieces, views made in no_grad mode, views kept from earlier), with
values read from a second leaf `x`, from `a` itself or constants; saved results of `a`
(for the version counter) and a few in-place updates of the leaves themselves are
mixed in. The program ends with reductions and view reads (`sum(dim)`, `mean(dim)`,
`.T[...]`, `a[...]`) and `out.backward()`.

`run_program(program, lib)` runs it with `lib` bound to the name `torch` and returns
what it observed: the error (statement, type, text) or the values of `a` and `out`,
the leaves' gradients, the versions and grad_fn names of `a` and the kept views.
`compare(program)` runs it on torch and on sourcegrad: "match", "error-match" (both
raised at the same statement, same type and text) or "mismatch" with the difference.

    python -m tests.fuzz.eager_inplace 10000 [seed-prefix]   # counts, first mismatches
"""

from __future__ import annotations

import dataclasses
import math
import random
import sys
import warnings

import numpy as np

import sourcegrad

SHAPES = [(3, 4), (3, 4), (2, 3), (4,), (2, 3, 2)]
X_SIZE = 24  # x holds enough values for a full-shape operand of any shape above


@dataclasses.dataclass
class Program:
    seed: str
    statements: list

    def text(self):
        return "\n".join(self.statements)


# --- generation --------------------------------------------------------------------------


class _Generator:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.shape = self.rng.choice(SHAPES)
        self.lines = []
        self.kept = {}  # name of a kept view -> its shape
        self.saved = []  # names of results that saved a view of a
        self.probe = {
            "torch": sourcegrad,
            "a": sourcegrad.zeros(self.shape),
            "x": sourcegrad.zeros(X_SIZE),
        }

    def shape_of(self, expr):
        """The shape `expr` has (evaluated on zeros, without grad), or None if it raises."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return tuple(eval(expr, dict(self.probe)).shape)
        except Exception:  # noqa: BLE001 - an invalid view: the caller picks another
            return None

    def const(self):
        return self.rng.choice(["0.5", "-1.25", "2.0", "0.13", "3.0", "-0.75"])

    # views ----------------------------------------------------------------------------
    def step(self, shape):
        """One view step valid for `shape`, as source text appended to an expression."""
        r, n = self.rng, len(shape)
        if n == 0:
            return None
        s0 = shape[0]
        options = [
            f"[{r.randrange(-s0, s0)}]" if s0 else None,
            f"[{r.randrange(0, s0 + 1)}:{r.randrange(0, s0 + 1)}]",
            f"[{r.randrange(0, max(s0, 1))}::2]",
            f".select(0, {r.randrange(s0)})" if s0 else None,
            f".narrow(0, {r.randrange(s0)}, 1)" if s0 else None,
            ".unsqueeze(0)",
            "[None]",
            ".view(-1)",
            ".reshape(-1)",
            ".flatten()",
            f"[..., {r.randrange(shape[-1])}]" if shape[-1] else None,
        ]
        if n >= 2:
            s1 = shape[1]
            options += [
                f"[:, {r.randrange(s1)}]" if s1 else None,
                f"[:, {r.randrange(0, s1 + 1)}:]",
                f"[{r.randrange(s0)}, {r.randrange(s1)}]" if s0 and s1 else None,
                ".T" if n == 2 else ".permute(2, 0, 1)",
                ".t()" if n == 2 else None,
                ".transpose(0, 1)",
                ".diagonal()",
                ".diagonal(1)",
                ".movedim(0, -1)",
                f".view({shape[0] * shape[1]}, -1)" if n == 3 else f".view({s1}, -1)",
                f".reshape(-1, {s0})",
            ]
        rare = [
            ".unbind(0)[0]",
            f".split(1)[{s0 - 1}]" if s0 else None,
            f".chunk(2, -1)[0]",
            ".detach()",
            ".clone()",
            f".unsqueeze(0).expand(2, {', '.join(map(str, shape))})",
        ]
        pool = [o for o in (options if r.random() < 0.9 else rare) if o is not None]
        return r.choice(pool)

    def view(self, min_dims=0):
        """(expression, shape) of a random view of `a` or of a kept view."""
        for _ in range(20):
            if self.kept and self.rng.random() < 0.3:
                expr = self.rng.choice(sorted(self.kept))
            else:
                expr = "a"
            for _ in range(self.rng.choice([0, 1, 1, 1, 2, 2, 3])):
                shape = self.shape_of(expr)
                st = self.step(shape) if shape is not None else None
                if st is None:
                    break
                expr += st
            shape = self.shape_of(expr)
            if shape is not None and len(shape) >= min_dims:
                return expr, shape
        return "a", self.shape

    # values ---------------------------------------------------------------------------
    def value(self, shape, for_division=False):
        r = self.rng
        numel = math.prod(shape)
        options = ["const", "x0"]
        if shape and shape[-1] <= X_SIZE:
            options.append("xrow")
        if numel and numel <= X_SIZE:
            options += ["xfull", "nograd"]
        if not for_division:
            options += ["asum", "kept"] if self.kept else ["asum"]
        kind = r.choice(options)
        if kind == "const":
            return self.const()
        if kind == "x0":
            return f"x[{r.randrange(X_SIZE)}]"
        if kind == "xrow":
            s = r.randrange(X_SIZE - shape[-1] + 1)
            return f"x[{s}:{s + shape[-1]}]"
        if kind == "xfull":
            return f"x[:{numel}].reshape({shape})"
        if kind == "nograd":
            return f"torch.full({shape}, {self.const()}, dtype=torch.float64)"
        if kind == "asum":
            return "(a.sum() * 0.1)"
        return f"{r.choice(sorted(self.kept))}.mean()"

    # statements -----------------------------------------------------------------------
    def inplace(self):
        r = self.rng
        expr, shape = self.view()
        op = r.choice(
            [
                "+=",
                "-=",
                "*=",
                "/=",
                "=",
                "add_",
                "add_alpha",
                "sub_",
                "mul_",
                "div_",
                "copy_",
                "zero_",
                "fill_",
                "clamp_",
                "clamp_min",
                "neg_",
                "exp_",
                "sigmoid_",
                "pow_",
                "masked_fill_",
            ]
        )
        value = self.value(shape, for_division=op in ("/=", "div_"))
        assignable = expr.endswith("]")
        if op == "=":
            if assignable:
                return f"{expr} = {value}"
            op = "copy_"
        if op in ("+=", "-=", "*=", "/="):
            if assignable or expr in self.kept:
                return f"{expr} {op} {value}"
            return f"t = {expr}\nt {op} {value}"
        calls = {
            "add_": f"add_({value})",
            "add_alpha": f"add_({value}, alpha=0.5)",
            "sub_": f"sub_({value})",
            "mul_": f"mul_({value})",
            "div_": f"div_({value})",
            "copy_": f"copy_({value})",
            "zero_": "zero_()",
            "fill_": f"fill_({self.const()})",
            "clamp_": "clamp_(-1.0, 2.5)",
            "clamp_min": "clamp_(min=0.25)",
            "neg_": "neg_()",
            "exp_": "exp_()",
            "sigmoid_": "sigmoid_()",
            "pow_": "pow_(2)",
            "masked_fill_": f"masked_fill_({expr}.detach() > 1.0, {self.const()})",
        }
        return f"{expr}.{calls[op]}"

    def statement(self, i):
        r = self.rng.random()
        if r < 0.55:
            return self.inplace()
        if r < 0.68:
            expr, shape = self.view()
            name = f"v{len(self.kept)}"
            self.kept[name] = shape
            self.probe[name] = eval(expr, dict(self.probe))
            if self.rng.random() < 0.2:
                return f"with torch.no_grad():\n    {name} = {expr}"
            return f"{name} = {expr}"
        if r < 0.78:
            expr, _ = self.view()
            name = f"s{len(self.saved)}"
            self.saved.append(name)
            f = self.rng.choice(
                [
                    "({e} * {e})",
                    "{e}.exp()",
                    "{e}.sin()",
                    "({e} + 1)",
                    "{e}.sigmoid()",
                    "{e}.pow(2)",
                    "({e} * 2)",
                ]
            )
            return f"{name} = {f.format(e=expr)}"
        if r < 0.84:
            idx = sorted(self.rng.sample(range(self.shape[0]), 2))
            return self.rng.choice(
                [
                    f"a[{idx}] = {self.const()}",
                    f"a[{idx}] += x[{self.rng.randrange(X_SIZE)}]",
                    "a[a.detach() > 1.0] = 0.5",
                    f"a.mul_({self.value(self.shape)})",
                ]
            )
        if r < 0.88:
            return f"with torch.no_grad():\n    {self.inplace()}".replace("\nt ", "\n    t ")
        if r < 0.91:
            return self.rng.choice(
                [
                    "y.add_(1.0)",
                    "y[0] = 1.0",
                    "y.T.mul_(2)",
                    "x.zero_()",
                    "with torch.no_grad():\n    y[0] += 1.0",
                ]
            )
        expr, shape = self.view()
        return f"{expr}.{self.rng.choice(['add_', 'mul_'])}({self.value(shape)})"

    def final(self):
        n = len(self.shape)
        dims = list(range(n))
        terms = ["(a * w).sum()"]
        for _ in range(self.rng.randrange(1, 4)):
            kind = self.rng.choice(["sumdim", "meandim", "view", "kept", "saved", "index"])
            if kind == "sumdim":
                terms.append(f"(a.sum(dim={self.rng.choice(dims)}) ** 2).sum()")
            elif kind == "meandim":
                terms.append(f"a.mean(dim={self.rng.choice(dims)}).sum()")
            elif kind == "view":
                expr, _ = self.view()
                terms.append(f"({expr} * {expr}).sum()")
            elif kind == "kept" and self.kept:
                terms.append(f"({self.rng.choice(sorted(self.kept))} ** 2).sum()")
            elif kind == "saved" and self.saved:
                terms.append(f"{self.rng.choice(self.saved)}.sum()")
            elif kind == "index":
                terms.append(f"(a[[{self.shape[0] - 1}, 0]] * 3).sum()")
        return "out = " + " + ".join(terms)


def generate(seed) -> Program:
    g = _Generator(seed)
    shape = g.shape
    numel = math.prod(shape)
    lines = [
        f"y = torch.arange(1., {numel + 1}., dtype=torch.float64).reshape({shape})"
        f".mul(0.25).sub(1.0).requires_grad_()",
        f"x = torch.linspace(0.5, 2.0, {X_SIZE}, dtype=torch.float64).requires_grad_()",
        f"w = torch.arange({numel}., dtype=torch.float64).reshape({shape}).add(1.0)",
        "a = y.clone()",
    ]
    for i in range(g.rng.randrange(1, 7)):
        lines.append(g.statement(i))
    lines.append(g.final())
    lines.append("out.backward()")
    return Program(str(seed), lines)


# --- running and comparing ---------------------------------------------------------------


def _values(t):
    return None if t is None else np.asarray(t.detach().tolist(), dtype=float)


def _name(t):
    fn = t.grad_fn
    return None if fn is None else type(fn).__name__


def run_program(program: Program, lib):
    """What running `program` with `lib` as `torch` shows: ("error", ...) or ("ok", dict)."""
    env = {"torch": lib}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, stmt in enumerate(program.statements):
            try:
                exec(stmt, env)
            except Exception as e:  # noqa: BLE001 - errors are compared with torch's
                return ("error", i, type(e).__name__, str(e).split("\n")[0])
        try:
            seen = {
                "a": _values(env["a"]),
                "out": _values(env["out"]),
                "y.grad": _values(env["y"].grad),
                "x.grad": _values(env["x"].grad),
                "a.version": env["a"]._version,
                "a.grad_fn": _name(env["a"]),
            }
            for k in sorted(n for n in env if n[0] in "vs" and n[1:].isdigit()):
                t = env[k]
                seen[k] = _values(t)
                seen[k + ".grad_fn"] = _name(t)
                seen[k + ".requires_grad"] = t.requires_grad
        except Exception as e:  # noqa: BLE001
            return ("error", len(program.statements), type(e).__name__, str(e).split("\n")[0])
    return ("ok", seen)


def _differences(want, have):
    out = []
    for k in want:
        a, b = want[k], have.get(k)
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            if (
                a is None
                or b is None
                or a.shape != b.shape
                or not np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True)
            ):
                out.append(f"{k}: torch {a!r} sourcegrad {b!r}")
        elif a != b:
            out.append(f"{k}: torch {a!r} sourcegrad {b!r}")
    return out


def compare(program: Program, torch):
    """("match" | "error-match" | "mismatch", detail) for `program` on torch and sourcegrad."""
    want = run_program(program, torch)
    have = run_program(program, sourcegrad)
    if want[0] == "error" or have[0] == "error":
        if want == have:
            return "error-match", want[2]
        return (
            "mismatch",
            f"torch {want if want[0] == 'error' else 'ran'}; "
            f"sourcegrad {have if have[0] == 'error' else 'ran'}",
        )
    diff = _differences(want[1], have[1])
    return ("mismatch", "; ".join(diff)) if diff else ("match", "")


def run_many(seeds, torch):
    """Counts of each status and the mismatching programs [(program, detail)]."""
    counts = {"programs": 0, "match": 0, "error-match": 0, "mismatch": 0}
    bad = []
    for seed in seeds:
        program = generate(seed)
        status, detail = compare(program, torch)
        counts["programs"] += 1
        counts[status] += 1
        if status == "mismatch":
            bad.append((program, detail))
    return counts, bad


def report(program, detail):
    return f"# seed {program.seed}\n{program.text()}\n# {detail}"


if __name__ == "__main__":
    import torch as _torch

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    prefix = sys.argv[2] if len(sys.argv) > 2 else "long"
    counts, bad = run_many([f"{prefix}-{i}" for i in range(n)], _torch)
    print(counts)
    for program, detail in bad[:5]:
        print(report(program, detail), "\n")
