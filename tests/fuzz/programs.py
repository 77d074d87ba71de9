"""Random numerical programs, as Python source, for differential fuzzing of sourcegrad.

`generate(seed)` returns a `Program`: the text of a module with a function `f` (plus
module-level helpers and globals), the shapes of `f`'s parameters and the features it uses.
Programs use only what docs/guide/supported.md says the compiler supports: arithmetic with broadcasting
between (), (3,), (2, 3) (and the intermediate shapes (2,), (1, 3), (2, 1)), bounded unary
functions, reductions with axis/keepdims, matmul/dot/einsum, indexing and slicing,
reshape/transpose, where/maximum/clip, branches, fixed and data-dependent loops, break and
continue, helper calls (module-level, nested def, lambda, closures, static recursion),
augmented and indexed assignment, list append + stack, and self-updates in loop and branch
bodies (`s = s - (s * 2.0 - s)`, `s -= E(s)`, `s *= E(s)`: the target is read again by the
expression that replaces it).

`check_program(program)` is the differential harness: it writes the program to a file,
imports it, draws inputs away from kinks (a copy of the program whose comparisons, max/min,
clip, abs, sign, floor, %, std, ... report how close they are to a kink), compiles
`sourcegrad.value_and_grad` with respect to every argument and compares value and gradient
with plain-numpy central finite differences.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import itertools
import linecache
import math
import os
import random
import re
import signal
import string
import sys
import threading
import traceback
from dataclasses import dataclass, field

import numpy as np

SCALAR = ()
VEC = (3,)
MAT = (2, 3)
COL2 = (2,)
ROW = (1, 3)
COLK = (2, 1)
VAR_SHAPES = (SCALAR, VEC, MAT)
ALL_SHAPES = (SCALAR, VEC, MAT, COL2, ROW, COLK)
ARRAY_SHAPES = (VEC, MAT, COL2, ROW, COLK)


def _broadcast(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


# operand shape pairs whose broadcast is exactly the key shape
PAIRS = {
    s: [(a, b) for a in ALL_SHAPES for b in ALL_SHAPES if _broadcast(a, b) == s] for s in ALL_SHAPES
}
# shapes that broadcast to the key shape
COMPAT = {s: [a for a in ALL_SHAPES if _broadcast(a, s) == s] for s in ALL_SHAPES}

# ---------------------------------------------------------------------------------------------
# templates.  {a}, {b}: operands of the target shape / a broadcast partner; the other fields
# name shapes: m m2 -> (2, 3), v u -> (3,), w -> (2,), r r2 -> (1, 3), k -> (2, 1),
# s t s1 s2 s3 -> (), x -> any array shape; I2, J3: small integer indices.
# ---------------------------------------------------------------------------------------------

UNARY = [
    "np.sin({a})",
    "np.cos({a})",
    "np.tanh({a})",
    "np.arctan({a})",
    "-({a})",
    "np.exp(np.tanh({a}))",
    "np.exp(-({a}) ** 2)",
    "np.exp2(np.sin({a}))",
    "np.expm1(np.tanh({a}))",
    "np.log(1.0 + ({a}) ** 2)",
    "np.log1p(({a}) ** 2)",
    "np.log2(2.0 + np.sin({a}))",
    "np.log10(1.5 + np.cos({a}))",
    "np.sqrt(1.0 + ({a}) ** 2)",
    "np.sqrt(0.25 + np.square({a}))",
    "np.cbrt(2.0 + np.cos({a}))",
    "np.reciprocal(2.0 + np.sin({a}))",
    "np.tan(0.5 * np.tanh({a}))",
    "np.arcsin(0.9 * np.tanh({a}))",
    "np.arccos(0.8 * np.sin({a}))",
    "np.sinh(np.tanh({a}))",
    "np.cosh(np.tanh({a}))",
    "np.arcsinh({a})",
    "np.arccosh(1.5 + ({a}) ** 2)",
    "np.arctanh(0.8 * np.tanh({a}))",
    "np.abs({a})",
    "np.absolute({a})",
    "np.fabs({a})",
    "np.square({a})",
]
BINARY_UFUNCS = [
    "np.logaddexp({a}, {b})",
    "np.hypot({a}, {b})",
    "np.arctan2({a}, 1.5 + ({b}) ** 2)",
    "np.add({a}, {b})",
    "np.subtract({a}, {b})",
    "np.multiply({a}, {b})",
    "np.divide({a}, 1.5 + np.tanh({b}))",
]
POWERS = [
    "({a}) ** 2",
    "({a}) ** 3",
    "np.square({a})",
    "(1.5 + np.sin({a})) ** 1.5",
    "np.power(1.2 + np.cos({a}), 2.5)",
    "(1.0 + ({a}) ** 2) ** 0.5",
    "1.7 ** np.tanh({a})",
    "np.power(1.5 + np.tanh({a}), {b})",
    "(2.0 + np.cos({a})) ** np.sin({b})",
]
DIVISIONS = [
    "({a}) / (1.0 + ({b}) ** 2)",
    "({a}) / (2.0 + np.cos({b}))",
    "({a}) / 2.5",
    "np.divide({a}, 1.5 + np.sin({b}))",
    "0.8 / (1.5 + np.tanh({a}))",
]
MAXMIN = ["np.maximum({a}, {b})", "np.minimum({a}, {b})"]
CLIPS = [
    "np.clip({a}, -0.5, 0.6)",
    "np.clip({a}, -0.3, None)",
    "np.clip({a}, None, 0.4)",
    "np.clip({a}, {b} - 0.5, {b} + 0.5)",
]
CLIP_METHODS = ["({a}).clip(-0.4, 0.7)", "({a}).clip(0.1, 1.0)"]
NONDIFF = [
    "np.sign({a}) * ({b})",
    "np.floor(2.0 * ({a})) * ({b})",
    "(({a}) > 0.3) * ({b})",
    "np.round(({a}) * 1.5) * 0.5 + ({b})",
    "({a}) % 1.7",
    "(({a}) // 0.75) * ({b})",
]
BOUNDS = [
    "np.tanh({a})",
    "np.sin({a})",
    "0.5 * np.tanh({a})",
    "np.arctan({a})",
    "np.cos({a})",
    "np.tanh({a}) * 1.5",
]
PYSCALAR = [
    "math.sin({s})",
    "math.cos({s})",
    "math.tanh({s})",
    "math.exp(math.tanh({s}))",
    "math.log(1.0 + ({s}) ** 2)",
    "math.sqrt(1.0 + ({s}) ** 2)",
    "math.atan({s})",
    "abs({s})",
    "max({s}, {t})",
    "min({s}, {t})",
    "float({s})",
    "math.exp(-({s}) ** 2)",
    "math.hypot({s}, 1.0)",
]

STRUCT = {
    SCALAR: [
        "np.sum({x})",
        "np.mean({x})",
        "({x}).sum()",
        "({x}).mean()",
        "np.max({x})",
        "np.min({x})",
        "np.amax({x})",
        "np.amin({x})",
        "({x}).max()",
        "({x}).min()",
        "np.prod({x})",
        "({x}).prod()",
        "np.var({x})",
        "np.std({x})",
        "({x}).var()",
        "np.var({x}, ddof=1)",
        "({x}).std()",
        "np.sum({x}, axis=None)",
        "({v})[{J3}]",
        "({m})[{I2}, {J3}]",
        "({w})[{I2}]",
        "({r})[0, {J3}]",
        "({k})[{I2}, 0]",
        "np.dot({v}, {u})",
        "({v}) @ ({u})",
        "np.inner({v}, {u})",
        "np.einsum('i,i->', {v}, {u})",
        "({v}).dot({u})",
        "np.tensordot({v}, {u}, axes=1)",
        "np.sum(({m}) * ({m2}))",
        "np.einsum('ij,ij->', {m}, {m2})",
        "sum({v})",
        "np.sum({x}) / ({x}).size",
        "np.sum(({x}) ** 2) * ({x}).ndim",
        "np.sum({v}) / len({v})",
        "np.sum(({m})[:, 1:3])",
        "np.sum(({v})[({v}) > 0.1])",
        "np.sum({m}) / ({m}).shape[0]",
        "np.sum(np.argmax({v}) * ({v}))",
        "({w}) @ ({m}) @ ({v})",
        "np.sum({s})",
        "np.mean({s})",
    ],
    VEC: [
        "np.sum({m}, axis=0)",
        "np.mean({m}, axis=0)",
        "({m}).sum(axis=0)",
        "({m}).mean(axis=0)",
        "np.max({m}, axis=0)",
        "np.min({m}, axis=0)",
        "({m}).max(axis=0)",
        "np.prod({m}, axis=0)",
        "np.var({m}, axis=0)",
        "np.std({m}, axis=0)",
        "({m})[{I2}]",
        "({m})[1, :]",
        "({w}) @ ({m})",
        "np.dot({w}, {m})",
        "({m}).T @ ({w})",
        "np.matmul({w}, {m})",
        "np.einsum('ij,i->j', {m}, {w})",
        "np.tensordot({w}, {m}, axes=1)",
        "(({m}).T @ ({m2})) @ ({v})",
        "np.reshape({m}, (6,))[::2]",
        "({m}).ravel()[1:4]",
        "np.ravel({m})[[0, 3, 5]]",
        "({v})[::-1]",
        "({v})[[2, 0, 0]]",
        "np.take({v}, [1, 2, 0])",
        "np.concatenate([({v})[1:], ({v})[:1]])",
        "np.concatenate([{w}, np.array([{s}])])",
        "np.stack([{s1}, {s2}, {s3}])",
        "np.array([{s1}, {s2}, {s3}])",
        "np.squeeze({r})",
        "({r})[0]",
        "np.ravel({r})",
        "({r}).reshape(3)",
        "np.transpose({m})[:, 0]",
        "np.swapaxes({m}, 0, 1)[:, 1]",
        "np.mean(np.stack([{v}, {u}]), axis=0)",
        "np.broadcast_to({s}, (3,))",
        "({m})[{I2}, :] * ({m})[:, {J3}][0]",
    ],
    MAT: [
        "np.reshape(({m}).T, (2, 3))",
        "({m}).reshape(3, 2).T",
        "np.transpose(({m}).reshape(3, 2))",
        "np.swapaxes(({m}).reshape(3, 2), 0, 1)",
        "np.moveaxis(({m}).reshape(3, 2), 1, 0)",
        "np.stack([{v}, {u}])",
        "np.stack([{v}, {u}], axis=0)",
        "np.outer({w}, {v})",
        "np.concatenate([{r}, {r2}], axis=0)",
        "np.concatenate([{k}, ({m})[:, 1:]], axis=1)",
        "np.broadcast_to({v}, (2, 3))",
        "np.broadcast_to({k}, (2, 3))",
        "({m})[::-1]",
        "({m})[:, [2, 0, 1]]",
        "({m})[[1, 0]]",
        "({m}) @ (({m2}).T @ ({m}))",
        "np.einsum('i,j->ij', {w}, {v})",
        "np.array([{v}, {u}])",
        "({m}).T.T",
        "np.squeeze(np.expand_dims({m}, 0))",
        "np.tensordot({w}, {v}, axes=0)",
        "np.matmul({m}, np.eye(3))",
    ],
    COL2: [
        "({m}) @ ({v})",
        "np.dot({m}, {v})",
        "np.matmul({m}, {v})",
        "np.einsum('ij,j->i', {m}, {v})",
        "np.sum({m}, axis=1)",
        "np.mean({m}, axis=1)",
        "np.max({m}, axis=1)",
        "({m}).min(axis=1)",
        "np.prod({m}, axis=1)",
        "({m}).var(axis=1)",
        "({m})[:, {J3}]",
        "({v})[:2]",
        "({v})[1:]",
        "({v})[[0, 2]]",
        "np.array([{s}, {t}])",
        "np.squeeze({k})",
        "({k})[:, 0]",
        "({k}).ravel()",
        "np.squeeze({k}, axis=1)",
        "({m}).T[1]",
        "({v})[::2]",
    ],
    ROW: [
        "({v})[None, :]",
        "({v}).reshape(1, 3)",
        "np.expand_dims({v}, 0)",
        "({m})[0:1]",
        "({m})[1:]",
        "np.sum({m}, axis=0, keepdims=True)",
        "np.max({m}, axis=0, keepdims=True)",
        "({m}).mean(axis=0, keepdims=True)",
        "np.reshape({v}, (1, -1))",
    ],
    COLK: [
        "({w})[:, None]",
        "({w}).reshape(2, 1)",
        "np.expand_dims({w}, 1)",
        "({m})[:, :1]",
        "({m})[:, 2:]",
        "np.mean({m}, axis=1, keepdims=True)",
        "np.min({m}, axis=1, keepdims=True)",
        "({m}).sum(axis=1, keepdims=True)",
        "np.std({m}, axis=1, keepdims=True)",
    ],
}

CONSTANTS = {
    SCALAR: ["0.5", "1.5", "-0.7", "2.0", "0.25", "1.0", "-1.2"],
    VEC: [
        "np.array([0.5, -1.0, 2.0])",
        "np.ones(3)",
        "np.arange(3.0)",
        "np.linspace(-1.0, 1.0, 3)",
    ],
    MAT: [
        "np.arange(6.0).reshape(2, 3) * 0.2",
        "np.ones((2, 3))",
        "np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])",
    ],
    COL2: ["np.array([1.0, -0.5])", "np.ones(2)"],
    ROW: ["np.ones((1, 3))", "np.array([[0.2, -0.4, 0.6]])"],
    COLK: ["np.array([[0.5], [-1.5]])", "np.ones((2, 1))"],
}

# Self-updates (`_Gen.self_update`): terms that each read the updated variable {v} (so the
# statement's target is also its operand, several times), joined by + - *. {c} is a
# constant, {o} another expression broadcasting to {v}'s shape. The negations and
# differences make the backward negate the target's adjoint while updating it.
SELF_TERMS = [
    "{v}",
    "{v} * {c}",
    "{c} * {v}",
    "-{v}",
    "({v} * {c} - {v})",
    "({v} * {c} - {v})",
    "({c} * {v} + {v})",
    "({v} - {v} * {c})",
    "-({v} + {v} * {c})",
    "np.tanh({v}) * {v}",
    "np.sin({v})",
    "{v} * np.cos({o})",
    "({o} - {v})",
    "-{v} * ({o})",
    "({v} * np.tanh({o}) - {v})",
]
SELF_TERMS_OUTSIDE_LOOPS = ["{v} * {v}", "({v} - {o}) * {v}"]  # (squaring every trip overflows)
SELF_CONSTS = ["0.5", "2.0", "1.5", "0.25", "3.0", "-0.5"]
SELF_FORMS = [
    "{n} = {n} - ({e})",
    "{n} = {n} - ({e})",
    "{n} = {n} + ({e})",
    "{n} = {e}",
    "{n} = {e} - {n}",
]
SELF_FORMS_IN_PLACE = [
    "{n} -= {e}",
    "{n} -= {e}",
    "{n} += {e}",
    "{n} *= np.cos({e})",
    "{n} *= {e}",
    "{n} /= (1.5 + ({e}) ** 2)",
    "{n} /= 2.0 + np.sin({e})",
]
SELF_UPDATE_RATE = 0.5  # chance that a loop or branch body gets one

# Python forms (`_Gen.python_form`): a list comprehension, a generator expression over a
# matrix's rows, a function passed as a value. Drawn from a stream of their own and named
# from a counter of their own, so the rest of a program is the one the seed gave before.
PYTHON_FORM_RATE = 0.35  # chance that a body (or the function) gets one

# Campaigns run before the self-update forms existed: their programs are rebuilt without
# them, so the seeds in regression tables, reports and replay commands keep naming the
# programs those campaigns checked (`generate(seed, self_updates=...)` overrides).
EARLIER_CAMPAIGNS = frozenset(
    {
        "5",
        "6",
        "7",
        "11",
        "31",
        "41",
        "43",
        "51",
        "53",
        "61",
        "64",
        "81",
        "91",
        "131",
        "141",
        "321",
        "331",
        "341",
    }
)

# Repeated indices in indexed updates (`_Gen.repeated_index`): `a[[0, 0]] = v` keeps the last
# write, `a[[0, 0]] += v` adds once (numpy buffers the update), so the gradient of an
# overwritten write is zero. Targets of the shapes `_s_setitem` writes, {n} the array.
REPEATED_TARGETS = {
    VEC: {
        VEC: ["{n}[[0, 0, 2]]", "{n}[[1, 1, 1]]", "{n}[[2, 0, 2]]", "{n}[[-1, 2, 0]]"],
        COL2: ["{n}[[0, 0]]", "{n}[[2, 2]]", "{n}[[-1, 2]]", "{n}[np.array([1, 1])]"],
    },
    MAT: {
        MAT: ["{n}[[0, 0]]", "{n}[[1, -1]]"],
        VEC: ["{n}[[1, 1, 0], [0, 0, 2]]", "{n}[[0, 0, 0], [2, 2, 1]]"],
        COL2: ["{n}[[1, 1], [2, 2]]", "{n}[[0, -2], [1, 1]]", "{n}[:, [0, 0]][1]"],
    },
}
REPEATED_INDEX_RATE = 0.75  # chance that an indexed update's target repeats an element
# Campaigns run before the repeated-index targets existed (rebuilt without them).
EARLIER_REPEATED_INDEX_CAMPAIGNS = EARLIER_CAMPAIGNS | {"0"}
# Campaigns run before the Python forms existed (rebuilt without them).
EARLIER_PYTHON_FORM_CAMPAIGNS = EARLIER_REPEATED_INDEX_CAMPAIGNS

# Reliability forms (`_Gen.reliability_form`): where Python's meaning and a compiler's model
# of it part (the reliability issue, round 3): decorated helpers (functools.wraps), rule-less
# calls writing into arrays (np.copyto, np.put, ...), updates through functions that return
# their argument or a view, arrays held twice by containers, an array passed twice to a
# helper that changes it in place, generator expressions consumed after a name they read is
# rebound, powers of negative bases, reductions of one element. The right outcome is the
# number Python computes or a located refusal. Drawn from a stream of their own.
RELIABILITY_FORM_RATE = 0.3
# Campaigns run before the reliability forms existed (rebuilt without them).
# (and the quick slice's: test_fuzz_quick.py has a slice of its own for them, "rel-k")
EARLIER_RELIABILITY_FORM_CAMPAIGNS = EARLIER_PYTHON_FORM_CAMPAIGNS | {"pf1", "quick"}
# Loops of 9 and 10 iterations, which the trace rolls back into loops (`trace/rolling.py`):
# this share of `for ... in range` loops, drawn from a stream of their own; campaigns run
# before them are rebuilt without them.
LONG_LOOP_RATE = 0.3
EARLIER_LONG_LOOP_CAMPAIGNS = EARLIER_RELIABILITY_FORM_CAMPAIGNS | {"rel", "r8"}
# Functions of an array's masked elements written into another array through the masks (the
# stable sigmoid of course code: `z[pos] = np.exp(-x[pos])`, `z[neg] = np.exp(x[neg])`,
# `top[neg] = z[neg]`), whose adjoints the optimizer computes on whole arrays
# (optimize/masked_adjoints.py): masks that are complements or overlap, arrays started from
# a fill or a copy, chains with and without a division. Drawn from a stream of their own;
# campaigns run before them are rebuilt without them.
MASKED_WRITE_RATE = 0.3
EARLIER_MASKED_WRITE_CAMPAIGNS = EARLIER_LONG_LOOP_CAMPAIGNS | {"r9", "long", "long2", "long3"}
# Masks combined by Python's bitwise operators (`(a > 0) | (b < 0)`, `&`, `^`, `~`, and in
# place: `m |= c > 0`), then used to select (np.where), to scale (`e * m`) or to pick elements
# to sum: boolean arrays that carry no gradient, whose combinations both front ends read as
# numpy does. Drawn from a stream of their own; campaigns run before them are rebuilt without.
MASK_LOGIC_RATE = 0.3
EARLIER_MASK_LOGIC_CAMPAIGNS = EARLIER_MASKED_WRITE_CAMPAIGNS | {"mw"}
MASKED_FUNCTIONS = (
    "np.exp(-{a})",
    "np.exp({a})",
    "2.0 * np.sin({a})",
    "{a} * {a}",
    "0.5 * {a} - 1.0",
    "np.tanh({a}) + 1.0",
    "1.0 / (1.5 + np.cos({a}))",
)

# A decorator per kind of wrapper: one scaling the result, one shifting the first argument
# (both with functools.wraps and *args/**kwargs, as published decorators are written)
DECORATORS = """
def scale_result(k):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return k * fn(*args, **kwargs)

        return wrapper

    return deco


def shift_first(d):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(a, *rest, **kwargs):
            return fn(a + d, *rest, **kwargs)

        return wrapper

    return deco
"""

FIELD_SHAPES = {
    "m": MAT,
    "m2": MAT,
    "v": VEC,
    "u": VEC,
    "w": COL2,
    "r": ROW,
    "r2": ROW,
    "k": COLK,
    "s": SCALAR,
    "t": SCALAR,
    "s1": SCALAR,
    "s2": SCALAR,
    "s3": SCALAR,
}

_VIEW_FUNCS = {
    "reshape",
    "transpose",
    "ravel",
    "squeeze",
    "expand_dims",
    "broadcast_to",
    "swapaxes",
    "moveaxis",
}


def _is_fresh(src: str) -> bool:
    """Whether an expression certainly makes a new value (no view or alias of a variable)."""
    node = ast.parse(src.strip(), mode="eval").body
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):
        return True
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            if f.value.id == "np":
                return f.attr not in _VIEW_FUNCS
            if f.value.id == "math":
                return True
        if isinstance(f, ast.Name) and f.id in ("float", "abs"):
            return True
    return False


def _atom(src: str) -> str:
    """`src`, parenthesized when its top level is an operator (so that it nests safely:
    `a * (w @ m)` must not become `a * w @ m`)."""
    node = ast.parse(src, mode="eval").body
    if isinstance(
        node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp)
    ) and not _enclosed(src):
        return f"({src})"
    return src


def _enclosed(src: str) -> bool:
    """Whether the first parenthesis of `src` closes at its last character."""
    if not (src.startswith("(") and src.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(src):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return i == len(src) - 1
    return False


@dataclass
class Var:
    name: str
    shape: tuple
    owned: bool = True  # a fresh value no other name aliases: may be mutated in place
    frozen: bool = False  # a loop target or the iterated value: never assigned in the body


@dataclass
class IntVar:
    name: str
    hi: int  # values lie in range(hi)


@dataclass
class Func:
    name: str
    arity: int
    has_k: bool = False
    recursive: bool = False


@dataclass
class Program:
    seed: object
    source: str
    params: list  # [(name, shape)]
    features: set = field(default_factory=set)
    globals: dict = field(default_factory=dict)
    fn_name: str = "f"

    @property
    def module_name(self) -> str:
        return "sgfuzz_" + re.sub(r"\W", "_", str(self.seed))


class _Gen:
    def __init__(
        self,
        rng: random.Random,
        self_updates: random.Random | None = None,
        repeated_indices: random.Random | None = None,
        python_forms: random.Random | None = None,
        reliability_forms: random.Random | None = None,
        long_loops: random.Random | None = None,
        masked_writes: random.Random | None = None,
        mask_logic: random.Random | None = None,
    ):
        self.r = rng
        # self-updates draw from a stream of their own: the rest of a program is the one
        # the seed gave before they existed, with the self-updates inserted
        self.su = self_updates
        self.ri = repeated_indices  # likewise the repeated-index targets
        self.pf = python_forms  # likewise comprehensions and function values
        self.pf_counter = itertools.count()
        self.rf = reliability_forms  # likewise the reliability forms
        self.ll = long_loops  # likewise which `for ... in range` loops run long
        self.mw = masked_writes  # likewise the masked writes of functions
        self.ml = mask_logic  # likewise the masks combined by |, &, ^ (and |=, &=, ^=)
        self.lines: list[str] = []
        self.indent = 0
        self.env: list[Var] = []
        self.ints: list[IntVar] = []
        self.funcs: list[Func] = []
        self.globals: dict = {}
        self.features: set = set()
        self.counter = itertools.count()
        self.ew = None  # elementwise mode: the leaf names of a helper body
        self.returned = False

    # -- small utilities ----------------------------------------------------------------------

    def name(self, prefix):
        return f"{prefix}{next(self.counter)}"

    def emit(self, line):
        self.lines.append("    " * self.indent + line)

    def const(self, shape):
        return self.r.choice(CONSTANTS[shape])

    def wchoice(self, pairs):
        total = sum(w for _, w in pairs)
        x = self.r.random() * total
        for item, w in pairs:
            x -= w
            if x <= 0:
                return item
        return pairs[-1][0]

    def pair(self, shape, d):
        pairs = PAIRS[shape]
        exact = [p for p in pairs if shape in p]
        a, b = self.r.choice(exact if self.r.random() < 0.7 or len(exact) == len(pairs) else pairs)
        if self.r.random() < 0.5:
            a, b = b, a
        return self.expr(a, d), self.expr(b, d)

    # -- expressions --------------------------------------------------------------------------

    def leaf(self, shape):
        r = self.r
        if self.ew is not None:
            names = list(self.ew) + list(self.globals)
            return r.choice(names) if names and r.random() < 0.85 else self.const(SCALAR)
        cands = []
        for v in self.env:
            cands += [(c, w) for c, w in self.conversions(v, shape)]
        if shape == SCALAR:
            for iv in self.ints:
                cands.append(
                    (r.choice([f"({iv.name} + 1.0)", f"0.5 * {iv.name}", f"float({iv.name})"]), 0.5)
                )
            for g in self.globals:
                cands.append((g, 0.5))
                self.features.add("global")
        if not cands or r.random() < 0.06:
            return self.const(shape)
        return self.wchoice(cands)

    def conversions(self, v, shape):
        n, r, out = v.name, self.r, []
        if v.shape == shape:
            out.append((n, 6.0))
        if shape == SCALAR:
            if v.shape == VEC:
                idx = [iv.name for iv in self.ints if iv.hi <= 3] + ["0", "1", "2", "-1"]
                out += [
                    (f"{n}[{r.choice(idx)}]", 1),
                    (f"np.sum({n})", 1),
                    (f"np.mean({n})", 0.5),
                    (f"{n}.sum()", 0.5),
                ]
            elif v.shape == MAT:
                out += [
                    (f"{n}[{r.choice('01')}, {r.choice('012')}]", 1),
                    (f"np.sum({n})", 1),
                    (f"{n}.mean()", 0.5),
                ]
        elif shape == VEC:
            if v.shape == MAT:
                rows = [iv.name for iv in self.ints if iv.hi <= 2] + ["0", "1", "-1"]
                out += [
                    (f"{n}[{r.choice(rows)}]", 1),
                    (f"{n}[1, :]", 0.5),
                    (f"np.mean({n}, axis=0)", 0.5),
                ]
            elif v.shape == SCALAR:
                out += [
                    (f"{n} * np.array([1.0, -0.5, 0.25])", 0.5),
                    (f"np.array([{n}, 0.5, -{n}])", 0.3),
                ]
        elif shape == MAT:
            if v.shape == VEC:
                out += [
                    (f"np.stack([{n}, 0.5 * {n}])", 0.5),
                    (f"np.outer(np.array([1.0, -0.7]), {n})", 0.5),
                ]
            elif v.shape == SCALAR:
                out.append((f"{n} * np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])", 0.3))
        elif shape == COL2:
            if v.shape == MAT:
                out += [(f"{n}[:, {r.choice('012')}]", 1), (f"np.sum({n}, axis=1)", 1)]
            elif v.shape == VEC:
                out += [(f"{n}[:2]", 1), (f"{n}[1:]", 1), (f"{n}[[0, 2]]", 0.5)]
            elif v.shape == SCALAR:
                out.append((f"np.array([{n}, 0.5])", 0.3))
        elif shape == ROW:
            if v.shape == VEC:
                out += [(f"{n}[None, :]", 1), (f"{n}.reshape(1, 3)", 1)]
            elif v.shape == MAT:
                out += [
                    (f"{n}[{r.choice(['0:1', '1:2'])}]", 1),
                    (f"np.mean({n}, axis=0, keepdims=True)", 1),
                ]
        elif shape == COLK:
            if v.shape == MAT:
                j = r.choice([0, 1, 2])
                out += [(f"{n}[:, {j}:{j + 1}]", 1), (f"np.sum({n}, axis=1, keepdims=True)", 1)]
            elif v.shape == VEC:
                out += [(f"{n}[:2, None]", 1), (f"{n}[1:].reshape(2, 1)", 1)]
        return out

    def expr(self, shape, d):
        r = self.r
        if d <= 0 or r.random() < 0.2:
            return self.leaf(shape)
        kinds = [
            ("binop", 5),
            ("unary", 5),
            ("div", 1.5),
            ("pow", 1.5),
            ("maxmin", 1.0),
            ("clip", 0.8),
            ("where", 1.0),
            ("nondiff", 0.4),
            ("binufunc", 0.8),
        ]
        if self.funcs:
            kinds.append(("call", 2.0))
        if self.ew is None:
            kinds += [("struct", 4.0), ("ifexp", 0.6)]
            if shape == SCALAR:
                kinds.append(("pyscalar", 1.2))
        for _ in range(20):
            out = getattr(self, "_e_" + self.wchoice(kinds))(shape, d)
            if out is not None:
                return _atom(out)
        return self.leaf(shape)

    def _e_binop(self, shape, d):
        a, b = self.pair(shape, d - 1)
        return f"({a} {self.r.choice(['+', '-', '*', '+', '*'])} {b})"

    def _e_unary(self, shape, d):
        t = self.r.choice(UNARY)
        if "abs" in t:
            self.features.add("abs")
        return t.format(a=self.expr(shape, d - 1))

    def _e_binufunc(self, shape, d):
        a, b = self.pair(shape, d - 1)
        return self.r.choice(BINARY_UFUNCS).format(a=a, b=b)

    def operands(self, template, shape, d):
        """Fill {a} (and {b}) so that the template's result has exactly `shape`."""
        if "{b}" in template:
            a, b = self.pair(shape, d)
            return template.format(a=a, b=b)
        return template.format(a=self.expr(shape, d))

    def _e_div(self, shape, d):
        return self.operands(self.r.choice(DIVISIONS), shape, d - 1)

    def _e_pow(self, shape, d):
        return self.operands(self.r.choice(POWERS), shape, d - 1)

    def _e_maxmin(self, shape, d):
        self.features.add("maximum")
        a, b = self.pair(shape, d - 1)
        for _ in range(3):
            if a != b:
                break
            a, b = self.pair(shape, d - 1)
        return self.r.choice(MAXMIN).format(a=a, b=b)

    def _e_clip(self, shape, d):
        self.features.add("clip")
        a = self.expr(shape, d - 1)
        if shape != SCALAR and self.ew is None and self.r.random() < 0.3:
            return self.r.choice(CLIP_METHODS).format(a=a)
        t = self.r.choice(CLIPS)
        b = self.expr(self.r.choice(COMPAT[shape]), d - 1) if "{b}" in t else ""
        return t.format(a=a, b=b)

    def _e_where(self, shape, d):
        self.features.add("where")
        c = self.expr(self.r.choice(COMPAT[shape]), d - 1)
        a = self.expr(shape, d - 1)
        b = self.expr(self.r.choice(COMPAT[shape]), d - 1)
        if self.r.random() < 0.5:
            a, b = b, a
        return f"np.where({c} > {self.r.choice(['0.0', '0.2', '-0.3'])}, {a}, {b})"

    def _e_nondiff(self, shape, d):
        self.features.add("nondiff")
        return self.operands(self.r.choice(NONDIFF), shape, d - 1)

    def _e_ifexp(self, shape, d):
        self.features.add("ifexp")
        return f"({self.expr(shape, d - 1)} if {self.cond(d - 1)} else {self.expr(shape, d - 1)})"

    def _e_pyscalar(self, shape, d):
        self.features.add("math")
        t = self.r.choice(PYSCALAR)
        return t.format(
            s=self.expr(SCALAR, d - 1), t=self.expr(SCALAR, d - 1) if "{t}" in t else ""
        )

    def _e_call(self, shape, d):
        fn = self.r.choice(self.funcs)
        r = self.r
        if fn.recursive:
            self.features.add("recursion")
            return f"{fn.name}({self.expr(shape, d - 1)}, {r.randint(0, 3)})"
        if fn.arity == 1:
            args = [self.expr(shape, d - 1)]
        else:
            args = list(self.pair(shape, d - 1))
        if r.random() < 0.15 and fn.arity == 2:
            self.features.add("star_args")
            return f"{fn.name}(*({args[0]}, {args[1]}))"
        call = ", ".join(args)
        if fn.has_k and r.random() < 0.5:
            self.features.add("kwargs")
            kval = r.choice(["0.3", "1.2", self.expr(SCALAR, 0) if self.ew is None else "0.8"])
            call += f", k={kval}" if r.random() < 0.6 else f", {kval}"
        return f"{fn.name}({call})"

    def _e_struct(self, shape, d):
        t = self.r.choice(STRUCT[shape])
        fields = sorted({f for _, f, _, _ in string.Formatter().parse(t) if f})
        vals = {}
        for f in fields:
            if f == "x":
                vals[f] = self.expr(self.r.choice(ARRAY_SHAPES), d - 1)
            elif f == "I2":
                vals[f] = self.r.choice(["0", "1", "-1"])
            elif f == "J3":
                vals[f] = self.r.choice(["0", "1", "2", "-1", "-2"])
            else:
                vals[f] = self.expr(FIELD_SHAPES[f], d - 1)
        if "axis" in t:
            self.features.add("reduce_axis")
        if "keepdims" in t:
            self.features.add("keepdims")
        if "@" in t or "dot" in t or "matmul" in t or "einsum" in t or "tensordot" in t:
            self.features.add("matmul")
        if "max" in t or "min" in t:
            self.features.add("max_reduce")
        if "reshape" in t or "transpose" in t or ".T" in t:
            self.features.add("reshape")
        return t.format(**vals)

    def cond(self, d):
        """A scalar condition."""
        r = self.r
        roll = r.random()
        if roll < 0.15 and d > 0:
            self.features.add("boolop")
            op = r.choice(["and", "or"])
            left = self.cond(d - 1)
            right = self.cond(d - 1)
            if r.random() < 0.3:
                right = f"not ({right})"
            return f"({left} {op} {right})"
        if roll < 0.22:
            self.features.add("chained_compare")
            return f"(-0.5 < {self.expr(SCALAR, d)} < {r.choice(['0.5', '1.0', '2.0'])})"
        op = r.choice(["<", ">", "<=", ">="])
        return f"{self.expr(SCALAR, d)} {op} {r.choice(['0.0', '0.3', '-0.2', '1.0'])}"

    # -- statements ---------------------------------------------------------------------------

    def rhs(self, shape, d, bound):
        e = self.expr(shape, d)
        if bound or self.r.random() < 0.4:
            e = self.r.choice(BOUNDS).format(a=e)
        if not _is_fresh(e):
            e = f"({e}) * 1.0"
        return e

    def writable(self, shape=None, owned=None):
        return [
            v
            for v in self.env
            if not v.frozen
            and (shape is None or v.shape == shape)
            and (owned is None or v.owned == owned or v.shape == SCALAR)
        ]

    def block(self, n, depth, in_loop):
        saved_env, saved_ints = list(self.env), list(self.ints)
        self.indent += 1
        start = len(self.lines)
        slot = self.self_update_slot()
        if slot == "first":
            self.self_update(in_loop)
        for _ in range(n):
            if self.returned:
                break
            self.stmt(depth, in_loop)
        if slot == "last" and not self.returned:
            self.self_update(in_loop)
        if not self.returned:
            self.maybe_python_form(depth)
        if not self.returned:
            self.maybe_reliability_form()
        if not self.returned:
            self.maybe_masked_writes()
        if not self.returned:
            self.maybe_mask_logic()
        if len(self.lines) == start:
            self.emit("pass")
        self.indent -= 1
        self.env, self.ints = saved_env, saved_ints

    def stmt(self, depth, in_loop):
        kinds = [("assign_new", 4), ("assign_old", 2.5), ("aug", 2), ("setitem", 1), ("tuple", 0.8)]
        if depth < 2:
            kinds += [
                ("if", 1.5),
                ("for_range", 1.5),
                ("for_iter", 1.2),
                ("while", 0.8),
                ("for_break", 0.8),
                ("append", 0.8),
                ("for_continue", 0.4),
            ]
        if depth == 0:
            kinds += [("define", 0.8), ("early_return", 0.3)]
        if in_loop and depth > 0:
            kinds += [("break_if", 0.2)]
        for _ in range(10):
            kind = self.wchoice(kinds)
            if getattr(self, "_s_" + kind)(depth, in_loop) is not False:
                return

    def _s_assign_new(self, depth, in_loop):
        shape = self.r.choice(VAR_SHAPES)
        name = self.name("t")
        self.emit(f"{name} = {self.rhs(shape, self.r.randint(1, 3), in_loop)}")
        self.env.append(Var(name, shape))

    def update(self, v, in_loop):
        """Assign a new value to an existing variable (bounded inside loops)."""
        r = self.r
        if in_loop and r.random() < 0.4:
            e = self.expr(v.shape, 2)
            self.emit(f"{v.name} = 0.5 * {v.name} + 0.5 * np.sin({e})")
        else:
            self.emit(f"{v.name} = {self.rhs(v.shape, r.randint(1, 3), in_loop)}")

    def _s_assign_old(self, depth, in_loop):
        cands = self.writable()
        if not cands:
            return False
        self.update(self.r.choice(cands), in_loop)

    def _s_aug(self, depth, in_loop):
        cands = self.writable(owned=True)
        if not cands:
            return False
        self.features.add("augassign")
        v = self.r.choice(cands)
        self.aug(v)

    def aug(self, v):
        r = self.r
        e = self.expr(r.choice(COMPAT[v.shape]), r.randint(1, 2))
        form = r.choice(
            [
                "+= 0.3 * np.tanh({e})",
                "-= 0.4 * np.sin({e})",
                "*= 0.9",
                "*= np.cos({e})",
                "/= (1.5 + ({e}) ** 2)",
                "+= {e}",
            ]
        )
        if form == "+= {e}" and r.random() < 0.5:
            form = "-= 0.2 * np.arctan({e})"
        self.emit(f"{v.name} {form.format(e=e)}")

    def maybe_python_form(self, depth):
        """Now and then a comprehension or a function value (its own stream: self.r is
        swapped for it while it is drawn, and its names come from a counter of its own)."""
        if self.pf is None or self.pf.random() >= PYTHON_FORM_RATE:
            return
        saved, self.r = self.r, self.pf
        try:
            self.python_form(depth)
        finally:
            self.r = saved

    def pf_name(self, prefix):
        return f"{prefix}_{next(self.pf_counter)}"

    def python_form(self, depth):
        r = self.r
        kind = r.choice(["listcomp", "listcomp", "rows_genexp", "function_value"])
        mats = [v for v in self.env if v.shape == MAT]
        one_arg = [f for f in self.funcs if f.arity == 1 and not f.recursive and not f.has_k]
        if kind == "rows_genexp" and not mats:
            kind = "listcomp"
        if kind == "function_value" and not one_arg:
            kind = "listcomp"
        name = self.pf_name("c")
        if kind == "listcomp":
            self.features.add("comprehension")
            shape = r.choice(VAR_SHAPES)
            k = r.randint(2, 4)
            i = self.pf_name("j")
            self.ints.append(IntVar(i, k))
            try:
                item = self.rhs(shape, 2, True)
            finally:
                self.ints.pop()
            condition = r.choice(["", "", f" if {i} != 1", f" if {i} % 2 == 0"])
            if condition and k < 3:
                condition = ""  # keep at least one item
            reduce = r.choice(
                [
                    "np.sum(np.stack({c}), axis=0)",
                    "sum({c})",
                    "np.stack({c})[-1] * 1.0",
                    "np.mean(np.array({c}), axis=0)",
                ]
            )
            comp = f"[{item} for {i} in range({k}){condition}]"
            if reduce == "sum({c})" and r.random() < 0.5:
                comp = comp[1:-1]  # a generator expression
                self.features.add("generator_expression")
            self.emit(f"{name} = {reduce.format(c=comp)}")
            self.env.append(Var(name, shape))
        elif kind == "rows_genexp":
            self.features.add("generator_expression")
            m = r.choice(mats)
            e = self.pf_name("row")
            self.env.append(Var(e, VEC, False, True))
            try:
                item = self.expr(VEC, 2)
            finally:
                self.env.pop()
            self.emit(f"{name} = sum({item} * 1.0 for {e} in {m.name})")
            self.env.append(Var(name, VEC))
        else:
            self.features.add("function_value")
            f = r.choice(one_arg)
            apply = self.pf_name("apply")
            self.emit(f"def {apply}(fn, v):")
            self.emit(f"    return fn(v) {r.choice(['+', '-', '*'])} 0.5 * fn(0.5 * v)")
            shape = r.choice(VAR_SHAPES)
            self.emit(f"{name} = {apply}({f.name}, {self.expr(shape, 2)})")
            self.env.append(Var(name, shape))

    def maybe_reliability_form(self):
        """Now and then a reliability form (`RELIABILITY_FORM_RATE`), drawn from its own
        stream (self.r swapped for it) and named from the Python forms' counter."""
        if self.rf is None or self.rf.random() >= RELIABILITY_FORM_RATE:
            return
        saved, self.r = self.r, self.rf
        try:
            self.reliability_form()
        finally:
            self.r = saved

    def maybe_masked_writes(self):
        """Now and then (`MASKED_WRITE_RATE`) functions of an array's masked elements written
        into another through two masks, drawn from their own stream."""
        if self.mw is None or self.mw.random() >= MASKED_WRITE_RATE:
            return
        saved, self.r = self.r, self.mw
        try:
            self.masked_writes()
        finally:
            self.r = saved

    def maybe_mask_logic(self):
        """Now and then (`MASK_LOGIC_RATE`) masks combined by |, &, ^ (or in place: |=, &=,
        ^=) and used, drawn from their own stream."""
        if self.ml is None or self.ml.random() >= MASK_LOGIC_RATE:
            return
        saved, self.r = self.r, self.ml
        try:
            self.mask_logic()
        finally:
            self.r = saved

    def mask_logic(self):
        r = self.r
        shape = r.choice([VEC, MAT])
        self.features.add("mask_logic")
        mask = self.pf_name("mk")
        left, right = _atom(self.expr(shape, 2)), _atom(self.expr(shape, 2))
        cuts = ["0.0", "0.25", "-0.3"]
        operator = r.choice(["|", "&", "^"])
        self.emit(f"{mask} = ({left} > {r.choice(cuts)}) {operator} ({right} < {r.choice(cuts)})")
        if r.random() < 0.6:  # combined again, in place
            more = _atom(self.expr(shape, 1))
            self.emit(f"{mask} {r.choice(['|=', '&=', '^='])} {more} {r.choice(['>', '<'])} 0.1")
        used = f"~{mask}" if r.random() < 0.25 else mask
        name = self.pf_name("mv")
        kind = r.choice(["where", "where", "scale", "sum"])
        a = self.expr(shape, 2)
        if kind == "where":
            self.emit(f"{name} = np.where({used}, {a}, {self.expr(shape, 1)})")
        elif kind == "scale":
            self.emit(f"{name} = {_atom(a)} * {used}")
        else:  # the masked elements' sum, spread over the shape
            self.emit(f"{name} = {_atom(a)} + np.sum(np.where({used}, {a}, 0.0))")
        self.env.append(Var(name, shape))

    def masked_writes(self):
        r = self.r
        shape = r.choice([VEC, MAT])
        self.features.add("masked_function_write")
        src = self.pf_name("ms")
        self.emit(f"{src} = {self.expr(shape, 2)}")
        cut = r.choice(["0.0", "0.2", "-0.3"])
        pos, neg, z = self.pf_name("mp"), self.pf_name("mn"), self.pf_name("mz")
        self.emit(f"{pos} = {src} >= {cut}")
        # complementary masks (a comparison or `~`), or overlapping ones
        complement = r.choice([f"{src} < {cut}", f"~{pos}", f"{src} < {cut} + 0.4"])
        self.emit(f"{neg} = {complement}")
        start = r.choice(["np.zeros_like({s})", "np.zeros_like({s})", "np.ones_like({s})"])
        self.emit(f"{z} = {r.choice([start, '{s}.copy()']).format(s=src)}")
        for mask in (pos, neg):
            fn = r.choice(MASKED_FUNCTIONS).format(a=f"{src}[{mask}]")
            self.emit(f"{z}[{mask}] = {fn}")
        name = self.pf_name("mw")
        if r.random() < 0.5:  # the stable sigmoid's masked copy and quotient
            top = self.pf_name("mt")
            self.emit(f"{top} = np.ones_like({src})")
            self.emit(f"{top}[{neg}] = {z}[{neg}]")
            self.emit(f"{name} = {top} / (2.0 + {z} * {z})")
        else:
            self.emit(f"{name} = {z} * {src}")
        self.env.append(Var(name, shape))

    def reliability_form(self):
        r = self.r
        kind = r.choice(
            [
                "ruleless_write",
                "view_update",
                "container_alias",
                "passed_twice",
                "late_generator",
                "negative_power",
                "one_element",
            ]
        )
        self.features.add(kind)
        name = self.pf_name("q")
        vecs = [v for v in self.env if v.shape == VEC]
        if kind == "ruleless_write":
            e = self.expr(VEC, 2)
            form = r.choice(
                [
                    "np.copyto({n}, {e})",
                    "np.put({n}, [2, 0, 1], {e})",
                    "np.putmask({n}, {e} > 0.0, 0.5)",
                    "np.place({n}, {e} > 0.0, [0.25])",
                ]
            )
            self.emit(f"{name} = {r.choice(['np.zeros(3)', f'1.0 * ({e})'])}")
            self.emit(form.format(n=name, e=_atom(e)))
            self.env.append(Var(name, VEC))
        elif kind == "view_update":
            self.emit(f"{name} = 1.0 * ({self.expr(MAT, 2)})")
            view = r.choice(
                [
                    "np.atleast_1d({n})",
                    "np.atleast_2d({n})",
                    "np.real({n})",
                    "{n}.real",
                    "{n}.conj()",
                    "np.flip({n})",
                    "np.ravel({n})",
                    "{n}.T",
                    "{n}[0]",
                    "{n}.flatten()",
                ]
            ).format(n=name)
            alias = self.pf_name("q")
            self.emit(f"{alias} = {view}")
            self.emit(f"{alias} {r.choice(['*=', '+=', '-='])} {self.expr(SCALAR, 1)}")
            self.env.append(Var(name, MAT, owned=False))
        elif kind == "container_alias":
            self.emit(f"{name} = 1.0 * ({self.expr(VEC, 2)})")
            holder = self.pf_name("d")
            if r.random() < 0.5:
                self.emit(f'{holder} = {{"k": {name}}}')
                self.emit(f'{holder}["k"] {r.choice(["+=", "*="])} {self.expr(SCALAR, 1)}')
            else:
                self.emit(f"{holder} = [{name}, {name}]")
                self.emit(f"{holder}[0] {r.choice(['+=', '*='])} {self.expr(SCALAR, 1)}")
                self.emit(f"{name} = {name} + {holder}[1]")
            self.env.append(Var(name, VEC, owned=False))
        elif kind == "passed_twice":
            helper = self.pf_name("upd")
            self.emit(f"def {helper}(a, b):")
            self.emit(f"    a {r.choice(['*=', '+='])} 0.5")
            self.emit("    return a * b")
            self.emit(f"{name} = 1.0 * ({self.expr(VEC, 2)})")
            self.emit(f"{name} = {helper}({name}, {name})")
            self.env.append(Var(name, VEC, owned=False))
        elif kind == "late_generator":
            c = self.pf_name("c")
            gen = self.pf_name("gen")
            v = r.choice(vecs).name if vecs else self.expr(VEC, 1)
            self.emit(f"{c} = {self.expr(SCALAR, 1)}")
            self.emit(f"{gen} = ({_atom(v)}[i] * {c} for i in range(3))")
            self.emit(f"{c} = {self.expr(SCALAR, 1)}")
            self.emit(f"{name} = sum({gen})")
            self.env.append(Var(name, SCALAR))
        elif kind == "negative_power":
            shape = r.choice(VAR_SHAPES)
            e = self.expr(shape, 1)
            # (bases in [-1, -0.25]: the value stays the size of the others, which the
            # self-updates would otherwise grow past overflow in a value the function drops)
            forms = [
                "(-0.5 - 0.5 * np.tanh({e}) ** 2) ** 3",
                "(-0.5 - 0.5 * np.tanh({e}) ** 2) ** 3.0",
                "(-0.25 - 0.5 * np.abs(np.tanh({e}))) ** 2.0",
            ]
            # (no fractional power of a negative base: numpy's nan in a value the function
            # then drops makes 0 * nan = nan in the gradient, as in torch and JAX, where the
            # differences say 0; a Python float's complex result: test_reliability_numerics)
            form = r.choice(forms)
            self.emit(f"{name} = {form.format(e=e)}")
            self.env.append(Var(name, shape))
        else:
            m = self.expr(MAT, 1)
            form = r.choice(
                [
                    "np.std(({m})[:1, :1])",
                    "np.var(({m})[1:2, 2:])",
                    "np.std(({m})[0, :1])",
                    "np.var(({m})[:1, 1], ddof=0)",
                    "np.std(np.full(3, ({m})[0, 0]))",
                    "np.mean(({m})[:1, :1]) + np.std(({m})[1, 1:2])",
                ]
            )
            self.emit(f"{name} = {form.format(m=m)}")
            self.env.append(Var(name, SCALAR))

    def self_update_slot(self):
        """Where this loop or branch body gets a self-update: "first", "last" or None."""
        if self.su is None or self.su.random() >= SELF_UPDATE_RATE:
            return None
        return self.su.choice(["first", "last", "last"])

    def self_update(self, in_loop):
        """`s = s - (s * 2.0 - s)`, `s -= E(s)`, `s *= E(s)`, ...: a statement whose target
        is also its operand. Drawn from the self-update stream only (self.r is swapped for
        it: expressions draw from self.r, and they neither name nor emit anything)."""
        saved, self.r = self.r, self.su
        try:
            self._self_update(in_loop)
        finally:
            self.r = saved

    def _self_update(self, in_loop):
        r = self.r
        cands = self.writable()
        if not cands:
            return
        v = r.choice(cands)
        terms = SELF_TERMS + ([] if in_loop else SELF_TERMS_OUTSIDE_LOOPS)

        def term():
            t = r.choice(terms)
            o = self.expr(r.choice(COMPAT[v.shape]), 1) if "{o}" in t else None
            return t.format(v=v.name, c=r.choice(SELF_CONSTS), o=o and _atom(o))

        forms = SELF_FORMS + (SELF_FORMS_IN_PLACE if v.owned or v.shape == SCALAR else [])
        form = r.choice(forms)
        e = term()
        for _ in range(r.choice([1, 1, 2]) if "{n} = {e}" in form else r.choice([0, 1, 1, 2])):
            e = f"{e} {r.choice(['+', '-', '-', '*'])} {term()}"
        self.features.add("self_update")
        if "=" in form.split()[1] and form.split()[1] != "=":
            self.features.add("augassign")
        self.emit(form.format(n=v.name, e=e))

    def _s_setitem(self, depth, in_loop):
        r = self.r
        cands = [v for v in self.writable(owned=True) if v.shape in (VEC, MAT)]
        if not cands:
            return False
        self.features.add("setitem")
        v = r.choice(cands)
        n = v.name
        op = r.choice(["=", "=", "+=", "-=", "*="])
        if v.shape == VEC:
            idx = [iv.name for iv in self.ints if iv.hi <= 3] + ["0", "1", "2", "-1"]
            target, shape = r.choice(
                [
                    (f"{n}[{r.choice(idx)}]", SCALAR),
                    (f"{n}[1:]", COL2),
                    (f"{n}[:2]", COL2),
                    (f"{n}[[0, 2]]", COL2),
                    (f"{n}[::2]", COL2),
                    (f"{n}[:]", VEC),
                    (f"{n}[{n} > 0.5]", "mask"),
                ]
            )
        else:
            rows = [iv.name for iv in self.ints if iv.hi <= 2] + ["0", "1", "-1"]
            target, shape = r.choice(
                [
                    (f"{n}[{r.choice(rows)}]", VEC),
                    (f"{n}[{r.choice('01')}, {r.choice('012')}]", SCALAR),
                    (f"{n}[:, {r.choice('012')}]", COL2),
                    (f"{n}[:, 1:]", "scale"),
                    (f"{n}[:, :2]", COLK),
                    (f"{n}[0:1]", ROW),
                ]
            )
        target = self.repeated_index(v, shape, target)
        if shape == "mask":
            self.features.add("mask")
            self.emit(f"{target} {r.choice(['=', '*='])} {r.choice(['0.0', '0.5'])}")
            return
        if shape == "scale":
            self.emit(f"{target} *= 0.5")
            return
        e = self.expr(shape, r.randint(1, 2))
        if op == "*=":
            e = f"np.cos({e})"
        elif op != "=":
            e = f"0.5 * np.tanh({e})"
        self.emit(f"{target} {op} {e}")

    def repeated_index(self, v, shape, target):
        """`target`, or (drawn from the repeated-index stream only) a target of the same
        shape whose index names an element more than once."""
        if self.ri is None or self.ri.random() >= REPEATED_INDEX_RATE:
            return target
        choices = REPEATED_TARGETS.get(v.shape, {}).get(shape)
        if not choices:
            return target
        self.features.add("repeated_index")
        return self.ri.choice(choices).format(n=v.name)

    def _s_tuple(self, depth, in_loop):
        r = self.r
        if r.random() < 0.5:
            for shape in r.sample(VAR_SHAPES, 3):
                cands = [v for v in self.writable(shape) if v.owned]
                if len(cands) >= 2:
                    break
            else:
                return False
            self.features.add("swap")
            a, b = r.sample(cands, 2)
            self.emit(f"{a.name}, {b.name} = {b.name}, {a.name}")
            return
        self.features.add("tuple_assign")
        s1, s2 = r.choice(VAR_SHAPES), r.choice(VAR_SHAPES)
        n1, n2 = self.name("t"), self.name("t")
        e1, e2 = self.rhs(s1, 2, in_loop), self.rhs(s2, 2, in_loop)
        if r.random() < 0.5:
            self.emit(f"{n1}, {n2} = {e1}, {e2}")
        else:
            pk = self.name("pk")
            self.emit(f"{pk} = ({e1}, {e2})")
            self.emit(f"{n1}, {n2} = {pk}")
        self.env += [Var(n1, s1), Var(n2, s2)]

    def _s_if(self, depth, in_loop):
        self.features.add("if")
        r = self.r
        self.emit(f"if {self.cond(r.randint(1, 2))}:")
        self.block(r.randint(1, 3), depth + 1, in_loop)
        if r.random() < 0.3:
            self.features.add("elif")
            self.emit(f"elif {self.cond(1)}:")
            self.block(r.randint(1, 2), depth + 1, in_loop)
        if r.random() < 0.7:
            self.emit("else:")
            self.block(r.randint(1, 2), depth + 1, in_loop)

    def loop_body(self, depth, extra=None):
        """1-3 statements, at least one updating an outer variable."""
        r = self.r
        cands = self.writable()
        saved_env, saved_ints = list(self.env), list(self.ints)
        if extra:
            for item in extra:
                (self.ints if isinstance(item, IntVar) else self.env).append(item)
        self.indent += 1
        start = len(self.lines)
        slot = self.self_update_slot()
        if slot == "first":
            self.self_update(True)
        for _ in range(r.randint(0, 2)):
            self.stmt(depth + 1, True)
        if cands:
            v = r.choice(cands)
            if v.owned and r.random() < 0.4:
                self.features.add("augassign")
                self.aug(v)
            else:
                self.update(v, True)
        else:
            self.stmt(depth + 1, True)
        if slot == "last":
            self.self_update(True)
        if len(self.lines) == start:  # every statement kind declined (all variables frozen)
            self.emit("pass")
        self.indent -= 1
        self.env, self.ints = saved_env, saved_ints

    def _s_for_range(self, depth, in_loop):
        self.features.add("for_range")
        r = self.r
        i = self.name("i")
        spec, hi = r.choice(
            [(f"range({k})", k) for k in (2, 3, 4)]
            + [("range(1, 3)", 3), ("range(0, 5, 2)", 5), ("range(1, 4, 2)", 4)]
        )
        if self.ll is not None and self.ll.random() < LONG_LOOP_RATE:
            # long enough for the trace to roll the iterations it ran back into a loop
            spec, hi = self.ll.choice([("range(9)", 9), ("range(2, 12)", 12)])
            self.features.add("long_loop")
        self.emit(f"for {i} in {spec}:")
        self.loop_body(depth, [IntVar(i, hi)])

    def _s_for_iter(self, depth, in_loop):
        r = self.r
        mats = [v for v in self.env if v.shape == MAT]
        vecs = [v for v in self.env if v.shape == VEC]
        kind = r.choice(["rows", "elems", "enumerate", "zip", "list", "tuple"])
        extra, frozen = [], []
        if kind in ("rows", "enumerate") and mats:
            src = r.choice(mats)
            it, elem_shape, length = src.name, VEC, 2
            frozen.append(src)
        elif kind in ("elems", "enumerate") and vecs:
            src = r.choice(vecs)
            it, elem_shape, length = src.name, SCALAR, 3
            frozen.append(src)
        elif kind == "zip" and (mats or vecs):
            src = r.choice(mats + vecs)
            frozen.append(src)
            if src.shape == MAT:
                other = self.expr(COL2, 1)
                oshape = SCALAR
            else:
                other = self.expr(VEC, 1)
                oshape = SCALAR
            self.features.add("zip")
            a, b = self.name("e"), self.name("e")
            self.emit(f"for {a}, {b} in zip({src.name}, {other}):")
            self.freeze(frozen)
            self.loop_body(
                depth,
                [
                    Var(a, VEC if src.shape == MAT else SCALAR, False, True),
                    Var(b, oshape, False, True),
                ],
            )
            self.unfreeze(frozen)
            return
        elif kind == "list":
            self.features.add("for_list")
            a = self.name("c")
            self.emit(f"for {a} in [0.5, 1.0, 1.5]:")
            self.loop_body(depth, [Var(a, SCALAR, False, True)])
            return
        elif kind == "tuple":
            shape = r.choice(VAR_SHAPES)
            items = [self.expr(shape, 1) for _ in range(r.randint(2, 3))]
            self.features.add("for_tuple")
            a = self.name("e")
            self.emit(f"for {a} in ({', '.join(items)}):")
            self.loop_body(depth, [Var(a, shape, False, True)])
            return
        else:
            return False
        a = self.name("e")
        if kind == "enumerate":
            self.features.add("enumerate")
            j = self.name("j")
            self.emit(f"for {j}, {a} in enumerate({it}):")
            extra = [IntVar(j, length), Var(a, elem_shape, False, True)]
        else:
            self.features.add("for_rows")
            self.emit(f"for {a} in {it}:")
            extra = [Var(a, elem_shape, False, True)]
        self.freeze(frozen)
        self.loop_body(depth, extra)
        self.unfreeze(frozen)

    def freeze(self, vs):
        for v in vs:
            v.frozen_before = v.frozen
            v.frozen = True

    def unfreeze(self, vs):
        for v in vs:
            v.frozen = v.frozen_before

    def _driver_var(self):
        cands = self.writable()
        return self.r.choice(cands) if cands else None

    def scalar_of(self, v):
        return (
            v.name
            if v.shape == SCALAR
            else self.r.choice([f"np.sum({v.name})", f"np.mean({v.name})", f"np.max({v.name})"])
        )

    def _s_while(self, depth, in_loop):
        self.features.add("while")
        r = self.r
        v = self._driver_var()
        if v is None:
            return False
        n = self.name("n")
        limit = r.randint(2, 6)
        self.emit(f"{n} = 0")
        c = r.choice(["0.0", "0.5", "1.0", "-0.3"])
        style = r.random()
        if style < 0.6:
            self.emit(f"while {self.scalar_of(v)} {r.choice(['<', '>'])} {c} and {n} < {limit}:")
        elif style < 0.8:
            self.features.add("break")
            self.emit("while True:")
        else:
            self.features.add("break")
            self.emit(f"while {n} < {limit}:")
        self.indent += 1
        saved_env, saved_ints = list(self.env), list(self.ints)
        slot = self.self_update_slot()
        if slot == "first":
            self.self_update(True)
        for _ in range(r.randint(0, 1)):
            self.stmt(depth + 1, True)
        self.update(v, True)
        if slot == "last":
            self.self_update(True)
        self.emit(f"{n} += 1")
        if style >= 0.6:
            guard = f" or {n} >= {limit}" if style < 0.8 else ""
            self.emit(f"if {self.scalar_of(v)} {r.choice(['<', '>'])} {c}{guard}:")
            self.emit("    break")
        self.env, self.ints = saved_env, saved_ints
        self.indent -= 1
        self.ints.append(IntVar(n, limit + 1))

    def _s_for_break(self, depth, in_loop):
        self.features.add("break")
        r = self.r
        v = self._driver_var()
        if v is None:
            return False
        i = self.name("i")
        k = r.randint(2, 6)
        self.emit(f"for {i} in range({k}):")
        self.indent += 1
        saved_env, saved_ints = list(self.env), list(self.ints)
        self.ints.append(IntVar(i, k))
        slot = self.self_update_slot()
        if slot == "first":
            self.self_update(True)
        for _ in range(r.randint(0, 1)):
            self.stmt(depth + 1, True)
        self.update(v, True)
        if slot == "last":
            self.self_update(True)
        self.emit(
            f"if {self.scalar_of(v)} {r.choice(['<', '>'])} {r.choice(['0.0', '0.5', '-0.5'])}:"
        )
        self.emit("    break")
        self.env, self.ints = saved_env, saved_ints
        self.indent -= 1

    def _s_for_continue(self, depth, in_loop):
        self.features.add("continue")
        r = self.r
        i = self.name("i")
        k = r.randint(2, 5)
        self.emit(f"for {i} in range({k}):")
        self.indent += 1
        saved_ints = list(self.ints)
        self.ints.append(IntVar(i, k))
        if r.random() < 0.5:
            self.emit(f"if {i} % 2 == {r.randint(0, 1)}:")
        else:
            self.emit(f"if {self.cond(1)}:")
        self.emit("    continue")
        self.indent -= 1
        self.loop_body(depth, [IntVar(i, k)])
        self.ints = saved_ints

    def _s_break_if(self, depth, in_loop):
        self.features.add("break")
        self.emit(f"if {self.cond(1)}:")
        self.emit("    break")

    def _s_append(self, depth, in_loop):
        self.features.add("append_stack")
        r = self.r
        shape = r.choice(VAR_SHAPES)
        hs = self.name("hs")
        self.emit(f"{hs} = []")
        mats = [v for v in self.env if v.shape == MAT]
        k = r.randint(2, 4)
        extra = []
        if mats and r.random() < 0.3:
            m = r.choice(mats)
            e = self.name("e")
            self.emit(f"for {e} in {m.name}:")
            extra, k = [Var(e, VEC, False, True)], 2
            self.freeze([m])
        else:
            i = self.name("i")
            self.emit(f"for {i} in range({k}):")
            extra = [IntVar(i, k)]
            m = None
        self.indent += 1
        saved_env, saved_ints = list(self.env), list(self.ints)
        for item in extra:
            (self.ints if isinstance(item, IntVar) else self.env).append(item)
        if r.random() < 0.5:
            self.stmt(depth + 1, False)  # no break before the first append
        self.emit(f"{hs}.append({self.rhs(shape, 2, True)})")
        self.env, self.ints = saved_env, saved_ints
        self.indent -= 1
        if m is not None:
            self.unfreeze([m])
        name = self.name("t")
        if shape == VEC and r.random() < 0.3:
            self.emit(f"{name} = np.stack({hs})[:2] * 1.0")
            self.env.append(Var(name, MAT))
            return
        red = r.choice(
            [
                "np.sum(np.stack({hs}), axis=0)",
                "np.mean(np.array({hs}), axis=0)",
                "sum({hs})",
                "np.stack({hs})[-1] * 1.0",
                "np.max(np.stack({hs}), axis=0)",
                "np.stack({hs})[0] * np.stack({hs})[1]",
            ]
        )
        self.emit(f"{name} = {red.format(hs=hs)}")
        self.env.append(Var(name, shape))

    def helper_body(self, params, closure=()):
        """An elementwise body over `params` (works for any broadcastable shapes)."""
        saved = self.ew
        self.ew = list(params) + list(closure)
        lines = []
        if self.r.random() < 0.4:
            q = self.name("q")
            lines.append(f"{q} = {self.expr(SCALAR, self.r.randint(1, 2))}")
            self.ew.append(q)
        lines.append(f"return {self.uses_all(self.expr(SCALAR, self.r.randint(1, 3)), params)}")
        self.ew = saved
        return lines

    def uses_all(self, e, params):
        """`e`, extended so that every positional parameter reaches the result (which then has
        the broadcast shape of the arguments, whatever they are)."""
        used = {n.id for n in ast.walk(ast.parse(e, mode="eval")) if isinstance(n, ast.Name)}
        for p in params:
            if p in ("a", "b") and p not in used:
                e = f"{e} + {self.r.choice(['0.3', '-0.5', '1.0'])} * {p}"
        return e

    def _s_define(self, depth, in_loop):
        r = self.r
        arity = r.choice([1, 2])
        params = ["a", "b"][:arity]
        has_k = r.random() < 0.4
        closure = []
        if r.random() < 0.4:
            closure = [v.name for v in self.env if v.shape == SCALAR][:2]
            if closure:
                self.features.add("closure")
        if r.random() < 0.4:
            self.features.add("lambda")
            name = self.name("lam")
            saved = self.ew
            self.ew = params + (["k"] if has_k else []) + closure
            body = self.uses_all(self.expr(SCALAR, r.randint(1, 3)), params)
            self.ew = saved
            sig = ", ".join(params + (["k=0.5"] if has_k else []))
            self.emit(f"{name} = lambda {sig}: {body}")
        else:
            self.features.add("nested_def")
            name = self.name("g")
            sig = ", ".join(params + (["k=0.5"] if has_k else []))
            self.emit(f"def {name}({sig}):")
            for line in self.helper_body(params + (["k"] if has_k else []), closure):
                self.emit("    " + line)
        self.funcs.append(Func(name, arity, has_k))

    def _s_early_return(self, depth, in_loop):
        self.features.add("early_return")
        self.emit(f"if {self.cond(1)}:")
        self.emit(f"    return {self.final_expr()}")

    def final_expr(self):
        r = self.r
        terms = [self.expr(SCALAR, r.randint(1, 3))]
        live = [v for v in self.env if not v.frozen]
        for v in r.sample(live, min(len(live), r.randint(1, 3))):
            if v.shape == SCALAR:
                terms.append(
                    r.choice([f"{v.name} * {v.name}", f"np.tanh({v.name})", f"0.5 * {v.name}"])
                )
            else:
                terms.append(
                    r.choice(
                        [
                            f"np.sum({v.name} * {v.name})",
                            f"np.sum(np.tanh({v.name}))",
                            f"0.5 * np.sum({v.name})",
                        ]
                    )
                )
        return " + ".join(terms)

    # -- the module ---------------------------------------------------------------------------

    def module(self, seed):
        r = self.r
        header = ["import math", "", "import numpy as np", ""]
        for _ in range(r.choice([0, 0, 1, 2])):
            g = self.name("G")
            self.globals[g] = r.choice([0.75, -0.4, 1.3, 0.2])
            header.append(f"{g} = {self.globals[g]}")
        header.append("")
        for _ in range(r.choice([0, 1, 1, 2, 3])):
            if r.random() < 0.2:
                name = self.name("rec")
                inner = self.r.choice(
                    [
                        "np.sin({a}) * 0.9 + 0.1",
                        "np.tanh(1.2 * {a})",
                        "{a} * 0.8 + np.cos({a}) * 0.3",
                    ]
                )
                header += [
                    "",
                    f"def {name}(a, n):",
                    "    if n == 0:",
                    "        return a",
                    f"    return {name}({inner.format(a='a')}, n - 1)",
                    "",
                ]
                self.funcs.append(Func(name, 1, recursive=True))
                self.features.add("module_helper")
                continue
            arity = r.choice([1, 2])
            params = ["a", "b"][:arity]
            has_k = r.random() < 0.4
            name = self.name("h")
            sig = ", ".join(params + (["k=0.5"] if has_k else []))
            header.append("")
            if self.rf is not None and self.rf.random() < RELIABILITY_FORM_RATE:
                self.features.add("decorator")
                header.append(
                    self.rf.choice(
                        ["@scale_result(1.5)", "@scale_result(-0.5)", "@shift_first(0.25)"]
                    )
                )
            header += [f"def {name}({sig}):"]
            header += [
                "    " + line for line in self.helper_body(params + (["k"] if has_k else []))
            ]
            header.append("")
            self.funcs.append(Func(name, arity, has_k))
            self.features.add("module_helper")
        nparams = r.choice([1, 2, 2, 3])
        params = []
        for i in range(nparams):
            shape = r.choice(VAR_SHAPES)
            params.append((f"x{i}", shape))
            self.env.append(Var(f"x{i}", shape, owned=False))
        self.lines = [f"def f({', '.join(p for p, _ in params)}):"]
        self.indent = 1
        for _ in range(r.randint(2, 6)):
            self.stmt(0, False)
            if not self.returned:
                self.maybe_python_form(0)
            if not self.returned:
                self.maybe_reliability_form()
            if not self.returned:
                self.maybe_masked_writes()
            if not self.returned:
                self.maybe_mask_logic()
        self.emit(f"return {self.final_expr()}")
        if "decorator" in self.features:
            header = ["import functools"] + header[:4] + DECORATORS.split("\n") + header[4:]
        source = "\n".join(header).rstrip() + "\n\n\n" + "\n".join(self.lines) + "\n"
        return Program(seed, source, params, self.features, dict(self.globals))


def generate(seed, self_updates: bool | None = None) -> Program:
    """The program for `seed` (any int or str; deterministic across runs).

    `self_updates`: insert the self-update forms into loop and branch bodies; by default
    yes, except for the seeds of EARLIER_CAMPAIGNS (f"{campaign}-{k}"). Indexed updates
    repeat an element of their index except in EARLIER_REPEATED_INDEX_CAMPAIGNS."""
    if self_updates is None:
        self_updates = str(seed).split("-")[0] not in EARLIER_CAMPAIGNS or "-" not in str(seed)
    su = random.Random(f"{seed}/self-updates") if self_updates else None
    campaign = str(seed).split("-")[0] if "-" in str(seed) else None
    ri = (
        None
        if campaign in EARLIER_REPEATED_INDEX_CAMPAIGNS
        else random.Random(f"{seed}/repeated-indices")
    )
    pf = (
        None if campaign in EARLIER_PYTHON_FORM_CAMPAIGNS else random.Random(f"{seed}/python-forms")
    )
    rf = (
        None
        if campaign in EARLIER_RELIABILITY_FORM_CAMPAIGNS
        else random.Random(f"{seed}/reliability-forms")
    )
    ll = None if campaign in EARLIER_LONG_LOOP_CAMPAIGNS else random.Random(f"{seed}/long-loops")
    mw = (
        None
        if campaign in EARLIER_MASKED_WRITE_CAMPAIGNS
        else random.Random(f"{seed}/masked-writes")
    )
    ml = None if campaign in EARLIER_MASK_LOGIC_CAMPAIGNS else random.Random(f"{seed}/mask-logic")
    return _Gen(random.Random(seed), su, ri, pf, rf, ll, mw, ml).module(seed)


# =============================================================================================
# kink detection: a copy of the program whose non-smooth operations report their margin
# =============================================================================================

_CMP = {
    "Lt": lambda a, b: a < b,
    "LtE": lambda a, b: a <= b,
    "Gt": lambda a, b: a > b,
    "GtE": lambda a, b: a >= b,
    "Eq": lambda a, b: a == b,
    "NotEq": lambda a, b: a != b,
}


def _is_int(x):
    return isinstance(x, (int, np.integer)) or (isinstance(x, np.ndarray) and x.dtype.kind in "biu")


class Kinks:
    """Records the smallest relative distance to a kink seen while running a program."""

    def __init__(self):
        self.worst = math.inf
        self.where = ""

    # Where these are exactly at their kink, the point is singular whatever the direction.
    # Elsewhere an exact tie (a relative distance under 1e-12) is structural, like
    # np.max(np.stack([h, h])) or a comparison of a clipped value with its bound: the tied
    # values move together, the function is smooth there, finite differences are valid and
    # any tie-breaking whose weights sum to one gives the same gradient.
    SINGULAR = ("std", "hypot", "sqrt", "log")

    def note(self, dist, scale, what):
        d = np.abs(np.asarray(dist, dtype=float))
        s = np.maximum(1.0, np.abs(np.asarray(scale, dtype=float)))
        rel = (d / s).reshape(-1)
        if what not in self.SINGULAR:
            rel = rel[rel > 1e-12]
        if rel.size:
            m = float(np.min(rel))
            if m < self.worst:
                frame = sys._getframe(1)
                while frame is not None and not frame.f_code.co_filename.startswith("<instr"):
                    frame = frame.f_back
                line = f" (line {frame.f_lineno})" if frame is not None else ""
                self.worst, self.where = m, what + line

    def compare(self, operands, ops):
        result = True
        for a, op, b in zip(operands, ops, operands[1:]):
            if not (_is_int(a) and _is_int(b)):
                self.note(np.subtract(a, b), np.maximum(np.abs(a), np.abs(b)), "compare")
        for a, op, b in zip(operands, ops, operands[1:]):
            result = _CMP[op](a, b)
            if len(ops) > 1 and not result:
                return result
        return result

    def _pair(self, a, b, what):
        self.note(np.subtract(a, b), np.maximum(np.abs(a), np.abs(b)), what)

    def np_maximum(self, a, b, *rest, **kw):
        self._pair(a, b, "maximum")
        return np.maximum(a, b, *rest, **kw)

    def np_minimum(self, a, b, *rest, **kw):
        self._pair(a, b, "minimum")
        return np.minimum(a, b, *rest, **kw)

    def np_fmax(self, a, b, *rest, **kw):
        self._pair(a, b, "fmax")
        return np.fmax(a, b, *rest, **kw)

    def np_fmin(self, a, b, *rest, **kw):
        self._pair(a, b, "fmin")
        return np.fmin(a, b, *rest, **kw)

    def np_clip(self, a, lo=None, hi=None, **kw):
        for bound in (lo, hi):
            if bound is not None:
                self._pair(a, bound, "clip")
        return np.clip(a, lo, hi, **kw)

    def m_clip(self, obj, lo=None, hi=None, **kw):
        self.np_clip(obj, lo, hi)
        return obj.clip(lo, hi, **kw)

    def _abs(self, a):
        self.note(a, 1.0, "abs")

    def np_abs(self, a, *rest, **kw):
        self._abs(a)
        return np.abs(a, *rest, **kw)

    def np_absolute(self, a, *rest, **kw):
        self._abs(a)
        return np.absolute(a, *rest, **kw)

    def np_fabs(self, a, *rest, **kw):
        self._abs(a)
        return np.fabs(a, *rest, **kw)

    def np_sign(self, a, *rest, **kw):
        self._abs(a)
        return np.sign(a, *rest, **kw)

    def np_floor(self, a, *rest, **kw):
        self.note(np.subtract(a, np.round(a)), 1.0, "floor")
        return np.floor(a, *rest, **kw)

    def np_ceil(self, a, *rest, **kw):
        self.note(np.subtract(a, np.round(a)), 1.0, "ceil")
        return np.ceil(a, *rest, **kw)

    def np_round(self, a, *rest, **kw):
        self.note(np.subtract(a, np.floor(a)) - 0.5, 1.0, "round")
        return np.round(a, *rest, **kw)

    def np_hypot(self, a, b, *rest, **kw):
        out = np.hypot(a, b, *rest, **kw)
        self.note(out, 1.0, "hypot")
        return out

    def np_sqrt(self, a, *rest, **kw):
        self.note(a, 1.0, "sqrt")
        return np.sqrt(a, *rest, **kw)

    def np_log(self, a, *rest, **kw):
        self.note(a, 1.0, "log")
        return np.log(a, *rest, **kw)

    def _std(self, a, out):
        # (the std of one element is 0 whatever it is: constant, no kink)
        if np.size(a) > max(np.size(out), 1):
            self.note(out, 1.0, "std")
        return out

    def np_std(self, a, *args, **kw):
        return self._std(a, np.std(a, *args, **kw))

    def m_std(self, obj, *args, **kw):
        return self._std(obj, obj.std(*args, **kw))

    def _gap(self, a, axis, largest, what):
        a = np.asarray(a, dtype=float)
        if axis is None:
            a, axis = a.reshape(-1), 0
        if a.shape[axis] < 2:
            return
        s = np.sort(a, axis=axis)
        if largest:
            top, second = np.take(s, -1, axis=axis), np.take(s, -2, axis=axis)
        else:
            top, second = np.take(s, 0, axis=axis), np.take(s, 1, axis=axis)
        self.note(top - second, top, what)

    def np_max(self, a, axis=None, *args, **kw):
        self._gap(a, axis, True, "max")
        return np.max(a, axis, *args, **kw)

    np_amax = np_max

    def np_min(self, a, axis=None, *args, **kw):
        self._gap(a, axis, False, "min")
        return np.min(a, axis, *args, **kw)

    np_amin = np_min

    def m_max(self, obj, axis=None, *args, **kw):
        self._gap(obj, axis, True, "max")
        return obj.max(axis, *args, **kw)

    def m_min(self, obj, axis=None, *args, **kw):
        self._gap(obj, axis, False, "min")
        return obj.min(axis, *args, **kw)

    def np_argmax(self, a, axis=None, *args, **kw):
        self._gap(a, axis, True, "argmax")
        return np.argmax(a, axis, *args, **kw)

    def np_argmin(self, a, axis=None, *args, **kw):
        self._gap(a, axis, False, "argmin")
        return np.argmin(a, axis, *args, **kw)

    def b_max(self, *args, **kw):
        if len(args) == 2:
            self._pair(args[0], args[1], "builtin max")
        return max(*args, **kw)

    def b_min(self, *args, **kw):
        if len(args) == 2:
            self._pair(args[0], args[1], "builtin min")
        return min(*args, **kw)

    def b_abs(self, a):
        self._abs(a)
        return abs(a)

    def mod(self, a, b, floor_div=False):
        if not (_is_int(a) and _is_int(b)):
            q = np.divide(a, b)
            self.note((q - np.round(q)) * np.abs(b), 1.0, "mod")
        return a // b if floor_div else a % b


_KINK_NP = {
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "clip",
    "abs",
    "absolute",
    "fabs",
    "sign",
    "floor",
    "ceil",
    "round",
    "hypot",
    "sqrt",
    "log",
    "std",
    "max",
    "amax",
    "min",
    "amin",
    "argmax",
    "argmin",
}
_KINK_METHODS = {"max", "min", "clip", "std"}
_KINK_BUILTINS = {"max", "min", "abs"}


def _k(attr):
    return ast.Attribute(value=ast.Name(id="_K", ctx=ast.Load()), attr=attr, ctx=ast.Load())


class _Instrument(ast.NodeTransformer):
    def visit_Compare(self, node):
        self.generic_visit(node)
        ops = [type(o).__name__ for o in node.ops]
        if any(op not in _CMP for op in ops):
            return node
        return ast.copy_location(
            ast.Call(
                func=_k("compare"),
                args=[
                    ast.List(elts=[node.left] + node.comparators, ctx=ast.Load()),
                    ast.List(elts=[ast.Constant(op) for op in ops], ctx=ast.Load()),
                ],
                keywords=[],
            ),
            node,
        )

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, (ast.Mod, ast.FloorDiv)):
            return ast.copy_location(
                ast.Call(
                    func=_k("mod"),
                    args=[node.left, node.right, ast.Constant(isinstance(node.op, ast.FloorDiv))],
                    keywords=[],
                ),
                node,
            )
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "np":
            if f.attr in _KINK_NP:
                node.func = _k("np_" + f.attr)
            return node
        if (
            isinstance(f, ast.Attribute)
            and f.attr in _KINK_METHODS
            and not (isinstance(f.value, ast.Name) and f.value.id in ("np", "math"))
        ):
            return ast.copy_location(
                ast.Call(
                    func=_k("m_" + f.attr), args=[f.value] + node.args, keywords=node.keywords
                ),
                node,
            )
        if isinstance(f, ast.Name) and f.id in _KINK_BUILTINS:
            node.func = _k("b_" + f.id)
        return node


def instrumented(program: Program):
    """(namespace, Kinks): the program run with every kink-prone operation reporting."""
    tree = _Instrument().visit(ast.parse(program.source))
    ast.fix_missing_locations(tree)
    kinks = Kinks()
    ns = {"__name__": program.module_name + "_instrumented", "_K": kinks}
    exec(compile(tree, f"<instrumented {program.seed}>", "exec"), ns)  # noqa: S102
    return ns, kinks


# =============================================================================================
# the differential harness
# =============================================================================================

KINK_TOL = 1e-3
RTOL, ATOL = 1e-5, 1e-6


class GeneratorError(Exception):
    """The generated program itself is broken (a bug in this file, not in sourcegrad)."""


class _Timeout(BaseException):
    pass


@dataclass
class Outcome:
    program: Program
    status: str  # matched | mismatched | rejected | crashed | skipped | generator_error
    reason: str = ""
    detail: str = ""
    gradient_source: str = ""

    def report(self) -> str:
        shapes = ", ".join(f"{n}: {'float' if s == () else s}" for n, s in self.program.params)
        parts = [
            f"seed {self.program.seed!r}: {self.status} {self.reason}".rstrip(),
            f"--- program ({shapes}) ---",
            self.program.source,
        ]
        if self.detail:
            parts += ["--- detail ---", self.detail]
        if self.gradient_source:
            parts += ["--- generated gradient ---", self.gradient_source]
        return "\n".join(parts)


_LOADED = itertools.count()


def load(program: Program, directory: str):
    """Write the program to `directory` and import it; returns (module, path)."""
    name = f"{program.module_name}_{next(_LOADED)}"
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as fh:
        fh.write(program.source)
    linecache.checkcache(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, path


def unload(module, path):
    sys.modules.pop(module.__name__, None)
    try:
        os.remove(path)
    except OSError:
        pass


# scalar inputs as 0-d float64 arrays instead of Python floats (run_fuzz --zero-d): the
# compiled code reads them as numpy scalars, which this exercises
ZERO_D_ENV = "SOURCEGRAD_FUZZ_ZERO_D"


def draw_args(params, nrng):
    out = []
    zero_d = os.environ.get(ZERO_D_ENV) == "1"
    for _, shape in params:
        scale = nrng.choice([0.5, 1.0, 1.5])
        if shape == SCALAR:
            value = float(nrng.normal() * scale)
            out.append(np.array(value) if zero_d else value)
        else:
            out.append(nrng.normal(size=shape) * scale)
    return tuple(out)


def numeric_grad(fn, args, pos, eps):
    """Central differences in float64 (the same scheme as sourcegrad.api.numeric_grad)."""
    from sourcegrad.api import numeric_grad as ng

    return ng(fn, args, pos, eps)


def _copy_args(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _same_args(a, b):
    return all(
        (isinstance(x, np.ndarray) and np.array_equal(x, y))
        or (not isinstance(x, np.ndarray) and x == y)
        for x, y in zip(a, b)
    )


def _scale(value, nums):
    return max([1.0, abs(float(value))] + [float(np.max(np.abs(n))) for n in nums])


def _close(a, b, scale):
    return bool(np.allclose(a, b, rtol=RTOL, atol=ATOL * scale))


def select_inputs(program, fn, ns_fn, kinks, nrng, tries=12):
    """Inputs where the program is smooth: (args, value, numeric grads) or None.

    Redraws when an instrumented operation comes within KINK_TOL (relative) of a kink or
    when finite differences with two step sizes disagree (an undetected kink nearby).
    """
    n = len(program.params)
    program.redraws = {}
    for _ in range(tries):
        args = draw_args(program.params, nrng)
        kinks.worst = math.inf
        before = _copy_args(args)
        try:
            with np.errstate(all="ignore"):
                value_i = ns_fn(*args)
                value = fn(*args)
        except (ValueError, OverflowError) as exc:
            if not str(exc).startswith("math "):  # math domain/range error: it overflowed
                raise GeneratorError(
                    f"the forward pass raised {type(exc).__name__}: {exc}\n"
                    f"args = {before!r}\n" + traceback.format_exc()
                ) from exc
            _count(program, "not finite")
            continue
        except Exception as exc:  # the program is ours: any other error is a generator bug
            raise GeneratorError(
                f"the forward pass raised {type(exc).__name__}: {exc}\n"
                f"args = {before!r}\n" + traceback.format_exc()
            ) from exc
        if not _same_args(before, args):
            raise GeneratorError("the forward pass mutated its arguments")
        try:
            if np.ndim(value) != 0:
                raise TypeError(f"shape {np.shape(value)}")
            float(value)
        except (TypeError, ValueError) as exc:
            raise GeneratorError(f"the program returned {value!r} ({exc})") from exc
        if not np.isfinite(value) or abs(float(value)) > 1e8:
            _count(program, "not finite")
            continue
        try:  # (an intermediate that overflows, or is nan, in a value the function then drops:
            # its gradient is 0 * inf = nan, as in torch and JAX, where differences say 0)
            with np.errstate(over="raise", invalid="raise"):
                fn(*_copy_args(args))
        except (FloatingPointError, ValueError, OverflowError):
            _count(program, "an intermediate not finite")
            continue
        if float(value_i) != float(value):
            raise GeneratorError(f"the instrumented program computed {value_i}, not {value}")
        if kinks.worst < KINK_TOL:
            _count(program, "near a kink of " + kinks.where)
            continue
        with np.errstate(all="ignore"):
            nums = [numeric_grad(fn, args, pos, 1e-6) for pos in range(n)]
            coarse = [numeric_grad(fn, args, pos, 1e-5) for pos in range(n)]
        scale = _scale(value, nums)
        if not all(np.all(np.isfinite(g)) for g in nums):
            _count(program, "numeric gradient not finite")
            continue
        if not all(_close(a, b, scale) for a, b in zip(nums, coarse)):
            _count(program, "finite differences disagree between steps")
            continue
        return args, value, nums
    return None


def _count(program, why):
    program.redraws[why] = program.redraws.get(why, 0) + 1


def reason_of(exc) -> str:
    """A rejection reason with names and numbers taken out, for grouping."""
    msg = getattr(exc, "message", str(exc)).splitlines()[0] if str(exc) else ""
    msg = re.sub(r"'[^']*'", "'…'", msg)
    msg = re.sub(r"\b[a-z]+\d+\b", "N", msg)
    msg = re.sub(r"\d+", "#", msg)
    return f"{type(exc).__name__}: {msg[:120]}"


def _alarm(timeout):
    if (
        not timeout
        or threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
    ):
        return None

    def handler(signum, frame):
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    return old


def _cancel(old):
    if old is not None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def check_program(
    program: Program, directory: str, timeout: float | None = 60.0, rebind_globals: bool = True
) -> Outcome:
    """Compile `program`'s gradient and compare it with finite differences."""
    import sourcegrad

    nrng = np.random.default_rng(
        int.from_bytes(hashlib.sha256(str(program.seed).encode()).digest()[:8], "little")
    )
    old = _alarm(timeout)
    module = path = None
    try:
        try:
            ns, kinks = instrumented(program)
            module, path = load(program, directory)
            fn = getattr(module, program.fn_name)
        except Exception as exc:  # noqa: BLE001
            return Outcome(program, "generator_error", type(exc).__name__, traceback.format_exc())
        outcome = _check_once(program, fn, ns, kinks, nrng, sourcegrad)
        if outcome.status == "matched" and rebind_globals and program.globals:
            # rebinding a module global must regenerate the gradient
            for g, value in program.globals.items():
                setattr(module, g, value * -1.5 + 0.1)
                ns[g] = value * -1.5 + 0.1
            second = _check_once(program, fn, ns, kinks, nrng, sourcegrad)
            if second.status != "skipped":
                if second.status != "matched":
                    second.reason = "after rebinding a global: " + second.reason
                return second
        return outcome
    except _Timeout:
        return Outcome(program, "crashed", "timeout", f"no result after {timeout} s")
    finally:
        _cancel(old)
        if module is not None:
            unload(module, path)


def _check_once(program, fn, ns, kinks, nrng, sourcegrad) -> Outcome:
    try:
        picked = select_inputs(program, fn, ns[program.fn_name], kinks, nrng)
    except GeneratorError as exc:
        return Outcome(program, "generator_error", str(exc).splitlines()[0], str(exc))
    if picked is None:
        return Outcome(
            program,
            "skipped",
            "no smooth inputs found",
            ", ".join(f"{k}: {v}" for k, v in program.redraws.items()),
        )
    args, value, nums = picked
    # the plain gradient first, then value_and_grad (separately generated code)
    for with_value in (False, True):
        outcome = _compare(program, fn, args, value, nums, with_value, sourcegrad)
        if outcome.status != "matched":
            if with_value:
                outcome.reason = "value_and_grad: " + outcome.reason
            return outcome
    return outcome


def _same_results(a, b) -> bool:
    """The same values of the same types, nested alike (NaN equal to NaN), in memory of
    their own: a result must not be an array the other call also returned."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(_same_results(x, y) for x, y in zip(a, b))
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return (
            a is not b
            and a.shape == b.shape
            and a.dtype == b.dtype
            and bool(np.array_equal(a, b, equal_nan=True))
        )
    return bool(np.array_equal(a, b, equal_nan=True))


def _compare(program, fn, args, value, nums, with_value, sourcegrad) -> Outcome:
    wrt = tuple(range(len(args)))
    before = _copy_args(args)
    # (check=True: the first call is also computed from a trace of it, and the two front
    # ends must agree: each is the other's oracle)
    g = (sourcegrad.value_and_grad if with_value else sourcegrad.grad)(fn, wrt=wrt, check=True)
    try:
        with np.errstate(all="ignore"):
            result = g(*args)
            again = g(*args)  # a second call runs the signature's entry, not the general path
    except sourcegrad.errors.FrontEndMismatchError as exc:
        return Outcome(program, "mismatched", "the front ends disagree", str(exc))
    except sourcegrad.SourcegradError as exc:
        return Outcome(program, "rejected", reason_of(exc), str(exc))
    except _Timeout:
        raise
    except Exception as exc:  # noqa: BLE001 - a crash is what we are looking for
        src = ""
        try:
            src = g.source
        except Exception:  # noqa: BLE001
            pass
        return Outcome(
            program,
            "crashed",
            f"{type(exc).__name__}: {str(exc)[:200]}",
            "args = " + repr(before) + "\n" + traceback.format_exc(),
            src,
        )
    src = g.source
    args_txt = "args = " + repr(before)
    if not _same_args(before, args):
        return Outcome(program, "mismatched", "the gradient mutated its arguments", args_txt, src)
    if not _same_results(result, again):
        return Outcome(
            program,
            "mismatched",
            "the second call gave another result",
            f"{args_txt}\nfirst:  {result!r}\nsecond: {again!r}",
            src,
        )
    scale = _scale(value, nums)
    problems = []
    if with_value:
        try:
            got_value, grads = result
            value_ok = np.ndim(got_value) == 0 and bool(
                np.allclose(float(got_value), value, rtol=1e-9, atol=1e-12 * scale)
            )
        except (TypeError, ValueError):
            got_value, grads, value_ok = result, None, False
        if not value_ok:
            problems.append(f"value: compiled {got_value!r}, numpy {value!r}")
    else:
        grads = result
    if not isinstance(grads, tuple) or len(grads) != len(args):
        problems.append(f"gradients: expected a tuple of {len(args)}, got {grads!r}")
    else:
        for pos, (x, gx, num) in enumerate(zip(args, grads, nums)):
            if isinstance(x, float):
                if type(gx) is not float:
                    problems.append(
                        f"d/d{program.params[pos][0]}: type {type(gx).__name__}, expected float"
                    )
                    continue
            elif not isinstance(gx, np.ndarray) or gx.shape != x.shape or gx.dtype != x.dtype:
                problems.append(
                    f"d/d{program.params[pos][0]}: got {type(gx).__name__} "
                    f"{np.shape(gx)}, expected ndarray {x.shape}"
                )
                continue
            if not _close(gx, num, scale):
                err = float(np.max(np.abs(np.asarray(gx) - num)))
                problems.append(
                    f"d/d{program.params[pos][0]}: max abs error {err:.3g}\n"
                    f"  compiled: {np.asarray(gx)!r}\n  numeric:  {num!r}"
                )
    if problems:
        first = problems[0].splitlines()[0]
        return Outcome(
            program, "mismatched", first.split(":")[0], args_txt + "\n" + "\n".join(problems), src
        )
    return Outcome(program, "matched")


def run_many(seeds, directory, timeout=60.0, on_outcome=None):
    """Check every seed's program; returns the outcomes."""
    out = []
    for seed in seeds:
        program = generate(seed)
        o = check_program(program, directory, timeout)
        out.append(o)
        if on_outcome is not None:
            on_outcome(o)
    return out


# =============================================================================================
# reduction of a failing program
# =============================================================================================


def _same_failure(a: Outcome, b: Outcome) -> bool:
    if a.status != b.status:
        return False
    if a.status in ("crashed", "rejected"):
        norm = [re.sub(r"\b[a-z]+_?\d+\b|\d+", "N", o.reason) for o in (a, b)]
        return norm[0] == norm[1]
    if a.status == "mismatched":
        return ("value" in a.reason) == ("value" in b.reason)
    return True


def _is_np_array(node):
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("array", "stack", "concatenate")
    )


def _candidates(tree):
    """Smaller variants of a module: one statement dropped, a compound statement replaced by
    its body, or an expression replaced by one of its operands or by a constant."""
    bodies = []
    for node in ast.walk(tree):
        for attr in ("body", "orelse"):
            seq = getattr(node, attr, None)
            if isinstance(seq, list) and seq and isinstance(seq[0], ast.stmt):
                bodies.append(seq)
    for seq in bodies:
        for i in range(len(seq)):
            yield (
                lambda seq=seq, i=i: (
                    seq.__setitem__(slice(i, i + 1), [])
                    or (seq.append(ast.Pass()) if not seq else None)
                )
            )
            stmt = seq[i]
            if isinstance(stmt, (ast.If, ast.For, ast.While)):
                yield lambda seq=seq, i=i, stmt=stmt: seq.__setitem__(slice(i, i + 1), stmt.body)
                if getattr(stmt, "orelse", None):
                    yield lambda seq=seq, i=i, stmt=stmt: seq.__setitem__(
                        slice(i, i + 1), stmt.orelse
                    )
    for node in ast.walk(tree):
        for name, value in ast.iter_fields(node):
            if (
                isinstance(value, ast.expr)
                and not isinstance(value, (ast.Name, ast.Constant))
                and not isinstance(node, (ast.Attribute,))
                and name not in ("func", "target", "test")
                and not _is_np_array(value)
            ):
                subs = [
                    c
                    for c in ast.iter_child_nodes(value)
                    if isinstance(c, ast.expr)
                    and not isinstance(c, (ast.List, ast.Tuple))
                    and not (isinstance(c, ast.Constant) and isinstance(c.value, str))
                ]
                for sub in subs + [ast.Constant(1.0)]:
                    yield lambda node=node, name=name, sub=sub: setattr(node, name, sub)
            elif isinstance(value, list):
                for j, item in enumerate(value):
                    if (
                        isinstance(item, ast.expr)
                        and not isinstance(item, (ast.Name, ast.Constant))
                        and not isinstance(node, ast.Compare)
                        and not _is_np_array(item)
                    ):
                        for sub in [
                            c
                            for c in ast.iter_child_nodes(item)
                            if isinstance(c, ast.expr) and not isinstance(c, (ast.List, ast.Tuple))
                        ] + [ast.Constant(1.0)]:
                            yield lambda value=value, j=j, sub=sub: value.__setitem__(j, sub)


def minimize(
    program: Program,
    directory: str,
    outcome: Outcome | None = None,
    budget: int = 3000,
    seconds: float = 120.0,
) -> tuple[Program, Outcome]:
    """A smaller program that fails the same way (greedy, to a fixed point).

    Expression edits may change a variable's shape, so read the result as a lead, not as
    a program the generator would write.
    """
    import copy
    import time

    deadline = time.monotonic() + seconds
    outcome = outcome or check_program(program, directory)
    best, best_out = program, outcome
    tries = 0
    improved = True
    while improved and tries < budget and time.monotonic() < deadline:
        improved = False
        tree = ast.parse(best.source)
        n = sum(1 for _ in _candidates(tree))
        for k in range(n):
            tries += 1
            if tries >= budget or time.monotonic() > deadline:
                break
            trial = copy.deepcopy(ast.parse(best.source))
            edit = next(itertools.islice(_candidates(trial), k, None), None)
            if edit is None:
                break
            try:
                edit()
                src = ast.unparse(ast.fix_missing_locations(trial)) + "\n"
                ast.parse(src)
            except Exception:  # noqa: BLE001
                continue
            if len(src) >= len(best.source):
                continue
            cand = Program(best.seed, src, best.params, set(best.features), dict(best.globals))
            out = check_program(cand, directory, timeout=10)
            if _same_failure(out, outcome):
                best, best_out, improved = cand, out, True
                break
    return best, best_out
