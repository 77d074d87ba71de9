"""The benchmark workloads, their hand-written gradients, and every variant that computes them.

Each `Workload` has

- `f`: the loss as plain numpy code, the way a user writes it; this is what
  `sourcegrad.grad` compiles (loops are written as the natural Python loops, even
  where the compiler does not support them yet);
- `hand`: the reference gradient, what an expert writes by hand in numpy: one
  pass forward keeping only what the backward reads, then the backward with
  in-place buffers where that is what an expert does (documented per workload);
- `xp`: the same loss written against a numpy-like module (`autograd.numpy`,
  `jax.numpy`, or `torch` where the spelling agrees), for the peers;
- `torch`: a torch spelling, where torch's names differ from numpy's.

`prepare(workload, size, variant, args)` turns one of `VARIANTS` into a
`Prepared`: a zero-argument `call` computing the gradient (with respect to
`workload.wrt`, always as a tuple), `to_numpy` turning its result into numpy
arrays for checking, and, for sourcegrad, `compile` (generate and load the
gradient for these inputs, so the runner can time compiling apart from
running); for the numba variant (sourcegrad's `backend="numba"`), `after`, which
times a first call with numba's disk cache warm. Inputs are converted to the variant's types once, outside the call
(zero-copy for torch), so a call times the forward and the backward only.

Why one module: the table of workloads, each a few lines (function, hand-written gradient,
peers' versions), read together.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import layers

# numba: sourcegrad's gradient compiled by numba (backend="numba")
VARIANTS = ("hand", "sourcegrad", "numba", "autograd", "torch", "jax")

# --------------------------------------------------------------------------------------------
# scalar: sin(x)*y + exp(x*y)/(1+x**2), on Python floats and on 0-d arrays
# --------------------------------------------------------------------------------------------


def scalar_float(x, y):
    return math.sin(x) * y + math.exp(x * y) / (1.0 + x**2)


def scalar_0d(x, y):
    return np.sin(x) * y + np.exp(x * y) / (1.0 + x**2)


def scalar_xp(xp, x, y):
    return xp.sin(x) * y + xp.exp(x * y) / (1.0 + x**2)


def _scalar_hand(m, x, y):
    e = m.exp(x * y)
    q = 1.0 + x * x
    eq = e / q
    return m.cos(x) * y + eq * (y - 2.0 * x / q), m.sin(x) + eq * x


def scalar_float_hand(x, y):
    """math on floats: the derivative written out, the common factor exp(xy)/(1+x^2) once."""
    return _scalar_hand(math, x, y)


def scalar_0d_hand(x, y):
    """The same with numpy functions, which is what 0-d array inputs need."""
    return _scalar_hand(np, x, y)


def scalar_args(rng, size):
    x, y = 0.7, -1.3
    if size.params["kind"] == "0-d":
        return np.array(x), np.array(y)
    return x, y


# --------------------------------------------------------------------------------------------
# logistic regression: mean(log(1 + exp(-y * (X @ w))))
# --------------------------------------------------------------------------------------------


def logreg(w, X, y):
    return np.mean(np.log(1.0 + np.exp(-y * (X @ w))))


def logreg_xp(xp, w, X, y):
    return xp.mean(xp.log(1.0 + xp.exp(-y * (X @ w))))


def logreg_hand(w, X, y):
    """d/dz_i = -y_i sigmoid(-y_i z_i) / n = -y_i / (1 + exp(y_i z_i)) / n, in one buffer."""
    t = X @ w
    t *= y
    np.exp(t, out=t)
    t += 1.0
    np.reciprocal(t, out=t)
    t *= y
    t *= -1.0 / y.size
    return (X.T @ t,)


def logreg_args(rng, size):
    n, d = size.params["n"], size.params["d"]
    X = rng.normal(size=(n, d))
    w = rng.normal(scale=d**-0.5, size=d)
    y = rng.choice([-1.0, 1.0], size=n)
    return w, X, y


# --------------------------------------------------------------------------------------------
# MLP: tanh(X@W1+b1)@W2+b2, max-shifted softmax cross-entropy, one-hot labels
# --------------------------------------------------------------------------------------------


def mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


def mlp_xp(xp, W1, b1, W2, b2, X, Y):
    h = xp.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - xp.max(logits, axis=1, keepdims=True)
    log_p = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
    return -xp.mean(xp.sum(Y * log_p, axis=1))


def mlp_torch(W1, b1, W2, b2, X, Y):
    import torch

    h = torch.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - torch.amax(logits, dim=1, keepdim=True)
    log_p = z - torch.log(torch.sum(torch.exp(z), dim=1, keepdim=True))
    return -torch.mean(torch.sum(Y * log_p, dim=1))


def mlp_hand(W1, b1, W2, b2, X, Y):
    """Softmax in place in the logits buffer, dlogits = (p - Y) / n (rows of Y sum to 1),
    and tanh' = 1 - h^2 computed in h's buffer once dW2 no longer needs h."""
    n = X.shape[0]
    h = X @ W1
    h += b1
    np.tanh(h, out=h)
    p = h @ W2
    p += b2
    p -= p.max(axis=1, keepdims=True)
    np.exp(p, out=p)
    p /= p.sum(axis=1, keepdims=True)
    p -= Y
    p /= n
    dW2 = h.T @ p
    db2 = p.sum(axis=0)
    dh = p @ W2.T
    np.square(h, out=h)
    np.subtract(1.0, h, out=h)
    dh *= h
    dW1 = X.T @ dh
    db1 = dh.sum(axis=0)
    return dW1, db1, dW2, db2


def mlp_args(rng, size):
    batch, n_in, n_hidden, n_out = (size.params[k] for k in ("batch", "n_in", "n_hidden", "n_out"))
    W1 = rng.normal(scale=n_in**-0.5, size=(n_in, n_hidden))
    b1 = rng.normal(scale=0.1, size=n_hidden)
    W2 = rng.normal(scale=n_hidden**-0.5, size=(n_hidden, n_out))
    b2 = rng.normal(scale=0.1, size=n_out)
    X = rng.normal(size=(batch, n_in))
    Y = np.eye(n_out)[rng.integers(0, n_out, size=batch)]
    return W1, b1, W2, b2, X, Y


# --------------------------------------------------------------------------------------------
# RNN: h = tanh(W@h + U@x_t + b) over T steps by a Python for, loss sum(h**2)
# --------------------------------------------------------------------------------------------


def rnn(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def rnn_xp(xp, W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = xp.tanh(W @ h + U @ xs[t] + b)
    return xp.sum(h**2)


def rnn_hand(W, U, b, h0, xs):
    """Backpropagation through time as an expert batches it: U @ x_t for every t in one
    GEMM, the states in one (T+1, H) buffer, the step adjoints da_t in the pre-activation
    buffer, and dW, dU, db as one GEMM (or sum) each over all steps."""
    T = xs.shape[0]
    H = np.empty((T + 1, h0.shape[0]))
    H[0] = h0
    A = xs @ U.T
    A += b
    for t in range(T):
        a = A[t]
        a += W @ H[t]
        np.tanh(a, out=H[t + 1])
    dh = 2.0 * H[T]
    dA = A  # the pre-activations are dead: their buffer takes the adjoints
    for t in range(T - 1, -1, -1):
        da = dA[t]
        np.square(H[t + 1], out=da)
        np.subtract(1.0, da, out=da)
        da *= dh
        if t:
            dh = W.T @ da
    return dA.T @ H[:-1], dA.T @ xs, dA.sum(axis=0)


def rnn_args(rng, size):
    hidden, n_in, steps = size.params["hidden"], size.params["n_in"], size.params["steps"]
    W = rng.normal(scale=0.9 * hidden**-0.5, size=(hidden, hidden))
    U = rng.normal(scale=n_in**-0.5, size=(hidden, n_in))
    b = rng.normal(scale=0.1, size=hidden)
    h0 = rng.normal(scale=0.5, size=hidden)
    xs = rng.normal(size=(steps, n_in))
    return W, U, b, h0, xs


# --------------------------------------------------------------------------------------------
# chain of 20 elementwise ufuncs on a vector
# --------------------------------------------------------------------------------------------


def chain(x):
    v = np.sin(x)
    v = np.cos(v)
    v = np.exp(v)
    v = np.log1p(v)
    v = np.sqrt(v)
    v = np.tanh(v)
    v = np.arctan(v)
    v = np.sinh(v)
    v = np.cosh(v)
    v = np.log(v)
    v = np.square(v)
    v = np.expm1(v)
    v = np.arcsinh(v)
    v = np.reciprocal(v)
    v = np.arccosh(v)
    v = np.log10(v)
    v = np.exp2(v)
    v = np.sin(v)
    v = np.arctan(v)
    v = np.tanh(v)
    return np.sum(v)


def chain_xp(xp, x):
    v = xp.sin(x)
    v = xp.cos(v)
    v = xp.exp(v)
    v = xp.log1p(v)
    v = xp.sqrt(v)
    v = xp.tanh(v)
    v = xp.arctan(v)
    v = xp.sinh(v)
    v = xp.cosh(v)
    v = xp.log(v)
    v = xp.square(v)
    v = xp.expm1(v)
    v = xp.arcsinh(v)
    v = xp.reciprocal(v)
    v = xp.arccosh(v)
    v = xp.log10(v)
    v = xp.exp2(v)
    v = xp.sin(v)
    v = xp.arctan(v)
    v = xp.tanh(v)
    return xp.sum(v)


_CHAIN_CONST = 2.0 * 0.5 * -1.0 * -1.0 * math.log(2.0) / math.log(10.0)


def chain_hand(x):
    """Reverse mode as an expert writes it for a long elementwise chain.

    The forward keeps only the 14 values the backward reads (v1 .. v20 numbered by
    step; a value not read is computed in place into the next one's buffer); the
    backward multiplies one adjoint buffer in place, computes each local derivative
    into a saved buffer once that value is dead, merges adjacent factors that share
    a value, and folds the constant factors into one multiply at the end.
    """
    v1 = np.sin(x)
    v3 = np.cos(v1)
    np.exp(v3, out=v3)
    v5 = np.log1p(v3)
    np.sqrt(v5, out=v5)
    v6 = np.tanh(v5)
    v7 = np.arctan(v6)
    v8 = np.sinh(v7)
    v9 = np.cosh(v8)
    v10 = np.log(v9)
    v12 = np.square(v10)
    np.expm1(v12, out=v12)
    v14 = np.arcsinh(v12)
    np.reciprocal(v14, out=v14)
    v15 = np.arccosh(v14)
    v17 = np.log10(v15)
    np.exp2(v17, out=v17)
    v18 = np.sin(v17)
    v20 = np.arctan(v18)
    np.tanh(v20, out=v20)
    # backward; g is d sum / d v_k, walking k down from 20
    g = v20
    np.square(g, out=g)
    np.subtract(1.0, g, out=g)  # tanh'      = 1 - v20^2
    np.square(v18, out=v18)
    v18 += 1.0
    g /= v18  # arctan'    = 1 / (1 + v18^2)
    np.cos(v17, out=v18)
    g *= v18  # sin'       = cos(v17)
    g *= v17  # exp2'      = ln2 v17 (ln2 folded)
    g /= v15  # log10'     = 1 / (v15 ln10) (ln10 folded)
    np.square(v14, out=v15)
    g *= v15  # reciprocal' = -v14^2 (sign folded)
    v15 -= 1.0
    np.sqrt(v15, out=v15)
    g /= v15  # arccosh'   = 1 / sqrt(v14^2 - 1)
    np.square(v12, out=v14)
    v14 += 1.0
    np.sqrt(v14, out=v14)
    g /= v14  # arcsinh'   = 1 / sqrt(1 + v12^2)
    v12 += 1.0
    g *= v12  # expm1'     = 1 + v12
    g *= v10  # square'    = 2 v10 (2 folded)
    g /= v9  # log'       = 1 / v9
    np.sinh(v8, out=v8)
    g *= v8  # cosh'      = sinh(v8)
    np.cosh(v7, out=v7)
    g *= v7  # sinh'      = cosh(v7)
    np.square(v6, out=v7)
    np.subtract(1.0, v7, out=v6)
    v7 += 1.0
    g *= v6
    g /= v7  # arctan' tanh' = (1 - v6^2) / (1 + v6^2)
    g /= v5  # sqrt'      = 0.5 / v5 (0.5 folded)
    np.add(v3, 1.0, out=v5)
    g *= v3
    g /= v5  # log1p' exp' = v3 / (1 + v3)
    np.sin(v1, out=v1)
    g *= v1  # cos'       = -sin(v1) (sign folded)
    np.cos(x, out=v1)
    g *= v1  # sin'       = cos(x)
    g *= _CHAIN_CONST
    return (g,)


def chain_args(rng, size):
    return (rng.uniform(-1.0, 1.0, size=size.params["n"]),)


# --------------------------------------------------------------------------------------------
# explicit-Euler damped spring, while t < T
# --------------------------------------------------------------------------------------------


def spring(k, c, x0, v0, dt, T):
    x = x0
    v = v0
    t = 0.0
    while t < T:
        a = -k * x - c * v
        x = x + dt * v
        v = v + dt * a
        t = t + dt
    return x * x + v * v


def spring_xp(xp, k, c, x0, v0, dt, T):
    return spring(k, c, x0, v0, dt, T)


def spring_hand(k, c, x0, v0, dt, T):
    """Forward sensitivities, what an expert writes for two parameters of an ODE: the
    tangents d(x, v)/dk and d(x, v)/dc stepped alongside the state, nothing stored."""
    x, v, t = x0, v0, 0.0
    xk = vk = xc = vc = 0.0
    while t < T:
        a = -k * x - c * v
        ak = -x - k * xk - c * vk
        ac = -k * xc - v - c * vc
        x, xk, xc = x + dt * v, xk + dt * vk, xc + dt * vc
        v, vk, vc = v + dt * a, vk + dt * ak, vc + dt * ac
        t = t + dt
    return 2.0 * (x * xk + v * vk), 2.0 * (x * xc + v * vc)


def spring_args(rng, size):
    steps, dt = size.params["steps"], 0.01
    # T half a step short of steps * dt, so rounding in t never adds or drops a step
    return 4.0, 0.5, 1.0, 0.0, dt, (steps - 0.5) * dt


# --------------------------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Size:
    """One size of a workload: `name` as in the table, `label` its dimensions."""

    name: str
    label: str
    params: dict = field(default_factory=dict, hash=False, compare=False)
    large: bool = False


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    f: Callable
    wrt: tuple
    make_args: Callable
    hand: Callable
    xp: Callable
    sizes: tuple
    quick: tuple
    torch: Callable | None = None  # when torch's spelling differs from numpy's
    per_size: dict = field(default_factory=dict, hash=False, compare=False)  # kind -> (f, hand)
    compile_target_s: float | None = None
    memory_target_sizes: tuple = ()
    ratio_target: float | None = None  # median × hand (default: the runner's RATIO_TARGET)
    family: str = "main"  # "layers": the published-style family (`layers`, --layers)

    def function(self, size):
        """The numpy function sourcegrad compiles for this size."""
        return self.per_size.get(size.params.get("kind"), (self.f, self.hand))[0]

    def reference(self, size):
        """The hand-written gradient for this size."""
        return self.per_size.get(size.params.get("kind"), (self.f, self.hand))[1]

    def size(self, name, quick=False):
        for s in self.quick if quick else self.sizes:
            if s.name == name:
                return s
        raise KeyError(f"{self.name} has no size {name!r}")


def _s(name, label, large=False, **params):
    return Size(name, label, params, large)


WORKLOADS = (
    Workload(
        "scalar",
        "sin(x)*y + exp(x*y)/(1+x**2)",
        scalar_0d,
        ("x", "y"),
        scalar_args,
        scalar_0d_hand,
        scalar_xp,
        sizes=(_s("float", "Python floats", kind="float"), _s("0-d", "0-d arrays", kind="0-d")),
        quick=(_s("float", "Python floats", kind="float"), _s("0-d", "0-d arrays", kind="0-d")),
        per_size={"float": (scalar_float, scalar_float_hand), "0-d": (scalar_0d, scalar_0d_hand)},
    ),
    Workload(
        "logreg",
        "mean(log(1 + exp(-y * (X @ w))))",
        logreg,
        ("w",),
        logreg_args,
        logreg_hand,
        logreg_xp,
        sizes=(
            _s("small", "X 64x10", n=64, d=10),
            _s("large", "X 100000x100", large=True, n=100000, d=100),
        ),
        quick=(_s("small", "X 16x4", n=16, d=4),),
    ),
    Workload(
        "mlp",
        "tanh(X@W1+b1)@W2+b2, softmax cross-entropy",
        mlp,
        ("W1", "b1", "W2", "b2"),
        mlp_args,
        mlp_hand,
        mlp_xp,
        torch=mlp_torch,
        sizes=(
            _s("small", "batch 32, 64-128-10", batch=32, n_in=64, n_hidden=128, n_out=10),
            _s(
                "large",
                "batch 4096, 784-1024-10",
                large=True,
                batch=4096,
                n_in=784,
                n_hidden=1024,
                n_out=10,
            ),
        ),
        quick=(_s("small", "batch 8, 6-5-3", batch=8, n_in=6, n_hidden=5, n_out=3),),
        compile_target_s=0.050,
        memory_target_sizes=("large",),
    ),
    Workload(
        "rnn",
        "for t in range(T): h = tanh(W@h + U@x_t + b); sum(h**2)",
        rnn,
        ("W", "U", "b"),
        rnn_args,
        rnn_hand,
        rnn_xp,
        sizes=(
            _s("small", "T=50, hidden 16, input 16", hidden=16, n_in=16, steps=50),
            _s("large", "T=50, hidden 512, input 512", large=True, hidden=512, n_in=512, steps=50),
        ),
        quick=(_s("small", "T=5, hidden 4, input 3", hidden=4, n_in=3, steps=5),),
        memory_target_sizes=("large",),
    ),
    Workload(
        "chain",
        "20 elementwise ufuncs, then sum",
        chain,
        ("x",),
        chain_args,
        chain_hand,
        chain_xp,
        sizes=(_s("small", "n=100", n=100), _s("large", "n=10,000,000", large=True, n=10**7)),
        quick=(_s("small", "n=10", n=10),),
        memory_target_sizes=("large",),
    ),
    Workload(
        "spring",
        "explicit-Euler damped spring, while t < T; d/d(k, c)",
        spring,
        ("k", "c"),
        spring_args,
        spring_hand,
        spring_xp,
        sizes=(
            _s("1000 steps", "Python floats, dt=0.01", steps=1000),
            _s("10000 steps", "Python floats, dt=0.01", steps=10000),
        ),
        quick=(_s("10 steps", "Python floats, dt=0.01", steps=10),),
        compile_target_s=0.200,
    ),
)

#: code in the style of published numpy layer libraries, each against its authors' backward
LAYERS = layers.workloads(Workload, _s)

BY_NAME = {w.name: w for w in WORKLOADS + LAYERS}


def cases(only=None, quick=False, family="main"):
    """The (workload, size) pairs to run, in table order; `only` is a list of workload names;
    `family`: "main" (the table's workloads) or "layers" (`LAYERS`)."""
    table = LAYERS if family == "layers" else WORKLOADS
    if only:
        names = [w.name for w in table]
        unknown = [n for n in only if n not in names]
        if unknown:
            raise SystemExit(
                f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(names)}"
            )
    return [
        (w, s) for w in table if not only or w.name in only for s in (w.quick if quick else w.sizes)
    ]


def make_args(workload, size, seed=0):
    """The inputs for one size, the same for every variant (a fixed seed)."""
    return workload.make_args(np.random.default_rng(seed), size)


# --------------------------------------------------------------------------------------------
# variants
# --------------------------------------------------------------------------------------------

_MODULE_OF = {"autograd": "autograd", "torch": "torch", "jax": "jax", "numba": "numba"}


def available(variant):
    """Whether a variant can run here (its package is installed); found without importing it."""
    module = _MODULE_OF.get(variant)
    return module is None or importlib.util.find_spec(module) is not None


def wrt_positions(workload):
    import inspect

    params = list(inspect.signature(workload.f).parameters)
    return tuple(params.index(n) for n in workload.wrt)


def _as_numpy(out):
    return tuple(np.asarray(g, dtype=np.float64) for g in out)


@dataclass
class Prepared:
    """One variant ready to run: see the module docstring."""

    call: Callable
    to_numpy: Callable = _as_numpy
    compile: Callable | None = None
    after: Callable | None = None  # measured after the timing: a dict for the record


def prepare(workload, size, variant, args):
    """A `Prepared` for one variant: `call()` computes the gradient tuple.

    Building it is cheap; compiling (sourcegrad, jax) happens in the first call, or
    in `compile()` where a variant has one. Errors surface from `prepare`, `compile`
    or the first call and are the runner's to record.
    """
    return _PREPARE[variant](workload, size, args, wrt_positions(workload))


def _prepare_hand(workload, size, args, wrt):
    fn = workload.reference(size)
    return Prepared(lambda: fn(*args))


def _prepare_sourcegrad(workload, size, args, wrt):
    import sourcegrad
    from sourcegrad.api import memory_caches

    g = sourcegrad.grad(workload.function(size), wrt=tuple(workload.wrt))
    compiled = []

    def first():
        g.compile(args)
        compiled.append(memory_caches.compile_count())

    def after():  # every call after the first had equal inputs: none may compile again
        return {"recompiles": memory_caches.compile_count() - compiled[0]} if compiled else {}

    return Prepared(lambda: g(*args), compile=first, after=after)


def numba_disk_cache():
    """In a measuring process (the runner's child, never a test's): sourcegrad's disk cache,
    and so numba's, in a fresh directory, its secret beside it; the directory."""
    import tempfile

    from sourcegrad import cache

    home = tempfile.mkdtemp(prefix="sourcegrad-bench-numba-")
    os.environ["XDG_CONFIG_HOME"] = os.path.join(home, "config")  # the cache's secret
    return cache.enable(os.path.join(home, "cache"))


def _prepare_numba(workload, size, args, wrt):
    """backend="numba". The first call compiles cold; where the disk cache is on
    (`numba_disk_cache`), `after` then forgets the compiled code in memory and times a first
    call again, which loads both caches (numba is already imported and initialised by then:
    its import is timed apart, `numba_import_s`)."""
    import sourcegrad
    from sourcegrad import api, cache

    started = time.perf_counter()
    import numba  # noqa: F401

    imported = time.perf_counter() - started
    f, wrt_names = workload.function(size), tuple(workload.wrt)
    g = sourcegrad.grad(f, wrt=wrt_names, backend="numba")

    def after():
        found = {
            "numba_import_s": imported,
            "jitted": "@numba.njit" in g.source,
            # (where numba has nothing to win, the numpy code runs by choice, said in the source)
            "numpy_by_choice": "# numba: the numpy code runs:" in g.source,
        }
        if cache.directory() is None:
            return found
        api.clear()
        again = sourcegrad.grad(f, wrt=wrt_names, backend="numba")
        t0 = time.perf_counter()
        again(*args)
        return dict(found, warm_first_call_s=time.perf_counter() - t0)

    return Prepared(lambda: g(*args), compile=lambda: g.compile(args), after=after)


def _prepare_autograd(workload, size, args, wrt):
    import autograd
    import autograd.numpy as anp

    g = autograd.grad(functools.partial(workload.xp, anp), argnum=wrt)
    return Prepared(lambda: g(*args))


def _prepare_torch(workload, size, args, wrt):
    import torch

    fn = workload.torch or functools.partial(workload.xp, torch)
    targs = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            a = torch.from_numpy(a)  # shares the numpy buffer
        elif i in wrt:
            a = torch.tensor(a, dtype=torch.float64)
        if i in wrt:
            a = a.detach().requires_grad_(True)
        targs.append(a)
    inputs = [targs[i] for i in wrt]

    def call():
        return torch.autograd.grad(fn(*targs), inputs)

    return Prepared(call, lambda out: tuple(g.detach().numpy() for g in out))


def _prepare_jax(workload, size, args, wrt):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    fn = functools.partial(workload.xp, jnp)
    # arrays and wrt values are traced; other Python numbers (dt, T) stay static
    dynamic = [i for i, a in enumerate(args) if i in wrt or isinstance(a, np.ndarray)]
    values = [jnp.asarray(args[i]) if isinstance(args[i], np.ndarray) else args[i] for i in dynamic]

    def f(*dyn):
        full = list(args)
        for i, v in zip(dynamic, dyn):
            full[i] = v
        return fn(*full)

    g = jax.jit(jax.grad(f, argnums=tuple(dynamic.index(i) for i in wrt)))

    def call():
        return jax.block_until_ready(g(*values))

    return Prepared(call)


_PREPARE = {
    "hand": _prepare_hand,
    "sourcegrad": _prepare_sourcegrad,
    "numba": _prepare_numba,
    "autograd": _prepare_autograd,
    "torch": _prepare_torch,
    "jax": _prepare_jax,
}
