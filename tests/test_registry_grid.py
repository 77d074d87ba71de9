"""The test grid generated from the registry: every entry's examples (`EXAMPLES` beside the
entries in sourcegrad/ops/, see ops/examples.py), in the compiler and in eager mode.

For each example the grid writes a function `f(a0, ..., w0, ...)` calling the entry as user
code would (an operator, a method, `fn(...)` for the function object itself) and returning the
sum of its float outputs times fixed random weights, then checks:

* compiler, float64: `sourcegrad.grad` against central differences, and the Hessian-vector
  product (`sourcegrad.hvp`, forward over reverse) against differences of the gradient;
* compiler, float32 (grid only): the gradient of float32 inputs is float32 and close to the
  float64 one;
* eager (entries that `np.<fn>(tensor)` reaches): `f` run on Tensors, its `.backward()`
  gradient equal to the compiled one; in the grid, its second derivative (create_graph) equal
  to the compiled HVP.

The default run tries each entry's first example in float64; `pytest -m grid` every example in
both dtypes. Every differentiable entry has examples or is in UNCOVERED with the reason.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import linecache
import types
import zlib

import numpy as np
import pytest

import sourcegrad
from sourcegrad import ops
from sourcegrad.api import numeric_grad
from sourcegrad.bench import coverage
from sourcegrad.ops import examples

# (imports the optional libraries that are installed, scipy's, and registers their families;
# without scipy the grid covers the rest)
coverage.counts()

# (np.row_stack, an entry while numpy has it, warns that it is deprecated)
pytestmark = pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated")

FAMILIES = (
    "elementwise",
    "reductions",
    "linalg",
    "shape",
    "program",
    "nn",
    "numpy_linalg",
    "numpy_functions",
    "fft",
    "complex_values",
    "scipy_special",
    "scipy_stats",
    "scipy_linalg",
    "scipy_signal",
    "scipy_integrate",
)

# Differentiable entries without examples, and why. A new entry lands here (and fails
# test_every_entry_has_examples_or_a_reason) until its family's EXAMPLES has it.
_BACKWARD_HELPER = "a helper generated backward code calls, tested through the entries using it"
_EAGER_KERNEL = "an eager-only kernel (torch.nn), tested against torch in tests/eager"
_OUTPUT_LIST = "an eager-only kernel whose VJP takes the list of its outputs' gradients"
UNCOVERED = {
    **dict.fromkeys(
        (
            "scatter_along undiagonal unrepeat unpad select_grads gradient_adjoint "
            "interp_adjoint interp_slope_adjoint trapezoid_adjoint gap_inverse fit hermitian_fold "
            "real_if_close_checked gradient_of multi_dot_grad quantile_grad quantile_tangent "
            "average_weights unaverage_weights polyval_coefficients_adjoint cho_factor_of "
            "cho_factor_back"
        ).split(),
        _BACKWARD_HELPER,
    ),
    **dict.fromkeys(
        (
            "convolution lowered_convolution batch_norm_train batch_norm_eval layer_norm embedding "
            "constant_pad "
            "resample nll_loss nll_loss2d index_put fill_tensor torch_div_rounding "
            "smooth_l1_loss huber_loss binary_cross_entropy binary_cross_entropy_with_logits "
            "xlogy linalg_cross cdist"
        ).split(),
        _EAGER_KERNEL,
    ),
    # complex results whose losses must not depend on the eigenvectors' phases (a weighted
    # sum of the outputs does): tests/compiler/ops/test_numpy_linalg.py, tests/eager/test_linalg*
    "linalg_eig": "complex eigenvectors: phase-invariant losses in test_numpy_linalg.py",
    "linalg_eigvals": "complex results: real losses of them in test_numpy_linalg.py",
    "np_heaviside": "no derivative, as torch has none: its rule raises (test_torch_gaps_ops.py)",
    "split": _OUTPUT_LIST,
    "unbind": _OUTPUT_LIST,
    "lstm_layer": _OUTPUT_LIST + " (torch's float32 LSTM layer: tests/eager/test_nn_rnn.py)",
}


def _examples() -> dict:
    table = {}
    for family in FAMILIES:
        if family.startswith("scipy_") and importlib.util.find_spec("scipy") is None:
            continue
        module = importlib.import_module(f"sourcegrad.ops.{family}")
        for name, variants in getattr(module, "EXAMPLES", {}).items():
            assert name in ops.RULES, f"{family}.EXAMPLES names no entry {name!r}"
            assert name not in table, f"{name!r} has examples twice"
            table[name] = variants
    return table


EXAMPLES = _examples()


def _in_scope(op) -> bool:
    """A differentiable entry user code can reach (not the program's own list plumbing)."""
    return (
        op.differentiable
        and any(v is not None for v in op.vjps)
        and op.spelling.kind not in ("helper", "list", "tuple", "pycall")
    )


def test_every_entry_has_examples_or_a_reason():
    import sourcegrad.nn  # noqa: F401  (registers the eager kernels)

    scope = {name for name, op in ops.RULES.items() if _in_scope(op)}
    assert sorted(scope - set(EXAMPLES)) == sorted(UNCOVERED)
    assert all(EXAMPLES[name] for name in EXAMPLES)


# --- writing a case's function -----------------------------------------------------------------

_SOURCES = itertools.count()


def _call(op, names):
    """The expression calling `op` on parameter names (and keyword `kw_*` text)."""
    kind, text = op.spelling.kind, op.spelling.text
    if kind == "binop":
        return f"{names[0]} {text} {names[1]}"
    if kind == "unaryop":
        return f"{text}{names[0]}"
    if kind == "builtin":
        return f"{text}({', '.join(names)})"
    if kind == "attr":
        return f"{names[0]}.{text}"
    if kind == "method":
        return f"{names[0]}.{text}({', '.join(names[1:])})"
    if kind == "getitem":
        return f"{names[0]}[{', '.join(names[1:])}]"
    return f"fn({', '.join(names)})"


class Case:
    """One example of one entry, turned into a function and its arguments."""

    def __init__(self, name, index, example):
        self.name, self.example = name, example
        op = ops.get(name)
        r = np.random.default_rng(zlib.crc32(f"{name}/{index}".encode()))
        params, self.args, self.wrt = [], [], []

        functions = {}

        def text(value):
            """The source of an argument; arrays become parameters a0, a1, ...; a function
            (odeint's dynamics) a name of the namespace"""
            if isinstance(value, types.FunctionType):
                functions[value.__name__] = value
                return value.__name__
            if isinstance(value, (examples.Arg, np.ndarray)):
                params.append(f"a{len(self.args)}")
                domain = value.domain if isinstance(value, examples.Arg) else None
                if isinstance(value, examples.Arg):
                    self.wrt.append(len(self.args))
                    value = examples.draw(value, r)
                self.args.append(value)
                if domain == "spd":  # (entries reading one triangle: symmetric inputs)
                    return f"({params[-1]} + np.swapaxes({params[-1]}, -1, -2)) / 2"
                if domain == "simplex":  # (scipy refuses a point off the simplex)
                    return f"{params[-1]} / np.sum({params[-1]}, axis=0)"
                return params[-1]
            if isinstance(value, list):
                return f"[{', '.join(map(text, value))}]"
            if isinstance(value, tuple) and any(
                isinstance(v, (examples.Arg, np.ndarray)) for v in value
            ):
                return f"({', '.join(map(text, value))},)"
            if isinstance(value, float) and np.isinf(value):
                return "np.inf" if value > 0 else "-np.inf"
            return repr(value)

        texts = [text(v) for v in example.args]
        texts += [f"{k}={text(v)}" for k, v in example.kwargs.items()]
        call = _call(op, texts)
        out = eval(
            compile(call, "<example>", "eval"),
            {"fn": op.fn, "np": np, **functions},
            dict(zip(params, self.args)),
        )
        parts = example.loss or _float_parts(out)
        self.weights = []
        terms = []
        env = {"np": np, "out": out}
        for part in parts:
            value = eval(part, env)
            self.weights.append(r.normal(size=np.shape(value)))
            w = f"w{len(self.weights) - 1}"
            terms.append(f"np.sum({part} * {w})")
        weights = [f"w{i}" for i in range(len(self.weights))]
        source = (
            f"def f({', '.join(params + weights)}):\n"
            f"    out = {call}\n"
            f"    return {' + '.join(terms)}\n"
        )
        file = f"<registry grid {next(_SOURCES)}: {name}>"
        linecache.cache[file] = (len(source), None, source.splitlines(True), file)
        namespace = {"fn": op.fn, "np": np, **functions}
        exec(compile(source, file, "exec", dont_inherit=True), namespace)
        self.f, self.source = namespace["f"], source
        self.all_args = self.args + self.weights

    def __repr__(self):
        return f"{self.name}: {self.source}"


def _float_parts(out, prefix="out"):
    """Expressions of the float (and complex: real and imaginary) parts of a result."""
    if isinstance(out, (tuple, list)):
        return [p for i, o in enumerate(out) for p in _float_parts(o, f"{prefix}[{i}]")]
    if np.iscomplexobj(out):
        return [f"np.real({prefix})", f"np.imag({prefix})"]
    if np.issubdtype(np.asarray(out).dtype, np.floating):
        return [prefix]
    return []


def _close(ours, numeric, rtol, what):
    ours, numeric = np.asarray(ours, dtype=float), np.asarray(numeric, dtype=float)
    scale = max(1.0, float(np.max(np.abs(numeric), initial=0.0)))
    np.testing.assert_allclose(ours, numeric, rtol=rtol, atol=rtol * scale, err_msg=what)


def _check_compiled(case):
    args, wrt, rtol = case.all_args, tuple(case.wrt), case.example.rtol
    grads = sourcegrad.grad(case.f, wrt=wrt)(*args)  # (a tuple: wrt is one)
    for pos, g in zip(wrt, grads):
        assert np.shape(g) == np.shape(args[pos])
        _close(g, numeric_grad(case.f, args, pos), rtol, f"{case!r} d/da{pos}")
    return grads


def _hvp_parts(case):
    """(direction, compiled HVP, differences of the gradient) in the first input."""
    args, pos = case.all_args, case.wrt[0]
    v = np.random.default_rng(3).normal(size=np.shape(args[pos]))
    v = float(v) if isinstance(args[pos], float) else v
    gradient = sourcegrad.grad(case.f, wrt=pos)
    eps = 1e-5

    def at(step):
        moved = list(args)
        moved[pos] = args[pos] + step * v
        return gradient(*moved)

    ours = sourcegrad.hvp(case.f, wrt=pos)(*args, v)
    return v, ours, (at(eps) - at(-eps)) / (2 * eps)


def _check_hvp(case):
    _, ours, numeric = _hvp_parts(case)
    _close(ours, numeric, max(case.example.rtol * 10, 1e-5), f"{case!r} HVP")
    return ours


def _eager_entries():
    from sourcegrad.eager import numpy_dispatch

    reached = {id(f) for f in list(numpy_dispatch.UFUNCS) + list(numpy_dispatch.FUNCTIONS)}
    return {
        name
        for name, op in ops.RULES.items()
        if (op.spelling.kind == "func" and id(op.fn) in reached)
        or op.spelling.kind in ("binop", "unaryop", "getitem")
        or (op.spelling.kind in ("attr", "method") and hasattr(sourcegrad.Tensor, op.spelling.text))
    }


EAGER = _eager_entries()


# Examples the eager mode refuses (loudly), and why.
EAGER_GAPS = {
    ("dot", 6): "np.dot of N-d Tensors is refused (NotImplementedError) in eager mode",
    ("concatenate", 2): "np.concatenate(axis=None) of Tensors crashes (TypeError) in eager mode",
    ("fft_fftshift", 1): "np.fft.fftshift(tensor, axes=...) crashes (TypeError) in eager mode",
    ("fft_ifftshift", 1): "np.fft.ifftshift(tensor, axes=...) crashes (TypeError) in eager mode",
    ("imag_attr", 0): "Tensor.imag of a real Tensor raises RuntimeError, as torch's does",
    ("imag_attr", 1): "Tensor.imag of a real Tensor raises RuntimeError, as torch's does",
}


def _check_eager(case, grads, hvp=None):
    tensors = [
        # (float64: a Python float would make a float32 tensor, as torch's does)
        sourcegrad.tensor(a, dtype=sourcegrad.float64, requires_grad=True) if i in case.wrt else a
        for i, a in enumerate(case.all_args)
    ]
    loss = case.f(*tensors)
    assert isinstance(loss, sourcegrad.Tensor), f"{case!r}: eager mode left the Tensor"
    wanted = [tensors[i] for i in case.wrt]
    if not loss.requires_grad:  # (a result that is constant in its inputs: matrix_power(a, 0))
        for pos, b in zip(case.wrt, grads):
            _close(np.zeros_like(b), b, 1e-10, f"{case!r} eager d/da{pos}")
        return
    ours = sourcegrad.autograd.grad(loss, wanted, create_graph=hvp is not None, allow_unused=True)
    for pos, a, b in zip(case.wrt, ours, grads):
        a = np.zeros_like(b) if a is None else a.detach().numpy()  # (an input left unused)
        _close(a, b, 1e-10, f"{case!r} eager d/da{pos}")
    if hvp is not None:
        v, _, _ = _hvp_parts(case)
        first = ours[0]
        if first is not None and first.requires_grad:
            (second,) = sourcegrad.autograd.grad(
                (first * sourcegrad.tensor(v)).sum(), [wanted[0]], allow_unused=True
            )
            second = np.zeros_like(hvp) if second is None else second.detach().numpy()
        else:  # a constant first derivative records nothing further
            second = np.zeros_like(hvp)
        _close(second, hvp, 1e-9, f"{case!r} eager HVP")


def _check_float32(case, grads64):
    # (Python floats stay: they have no float32)
    args = [
        a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == np.float64 else a
        for a in case.all_args
    ]
    wrt = tuple(case.wrt)
    grads = sourcegrad.grad(case.f, wrt=wrt)(*args)  # (a tuple: wrt is one)
    for pos, g, g64 in zip(wrt, grads, grads64):
        if isinstance(args[pos], float):
            continue
        assert np.asarray(g).dtype == np.float32, f"{case!r}: d/da{pos} is {np.asarray(g).dtype}"
        _close(g, g64, 2e-3, f"{case!r} float32 d/da{pos}")


# --- the cases -----------------------------------------------------------------------------------


def _params(first_only):
    out = []
    for name in sorted(EXAMPLES):
        for i, example in enumerate(EXAMPLES[name][:1] if first_only else EXAMPLES[name]):
            out.append(pytest.param(name, i, example, id=f"{name}-{i}"))
    return out


@pytest.mark.parametrize("name, index, example", _params(first_only=True))
def test_default_case(name, index, example):
    case = Case(name, index, example)
    grads = _check_compiled(case)
    if example.hvp:
        _check_hvp(case)
    if name in EAGER and (name, index) not in EAGER_GAPS:
        _check_eager(case, grads)


@pytest.mark.grid
@pytest.mark.parametrize("name, index, example", _params(first_only=False))
def test_grid_case(name, index, example):
    case = Case(name, index, example)
    grads = _check_compiled(case)
    hvp = _check_hvp(case) if example.hvp else None
    if name in EAGER and (name, index) not in EAGER_GAPS:
        _check_eager(case, grads, hvp)
    _check_float32(case, grads)


# Variants the grid found wrong (regression tests, in the default run): matmul's gradient in
# a 1-D b under an N-d A was wrong (every element the same); matmul 1-D @ N-d, np.dot N-d @
# 1-D, tensordot with unsorted axis pairs, concatenate(axis=None) and dirichlet's gradient
# (templates.keeps_shape on a tuple) crashed.
# irfft's and imag's gradients in a real input were complex (numpy's ComplexWarning as they
# were cast; imag of a 0-d input crashed).
FIXED = [
    ("matmul", 5),
    ("matmul_op", 5),
    ("matmul", 7),
    ("dot", 5),
    ("tensordot", 1),
    ("concatenate", 2),
    ("scipy_dirichlet_pdf", 0),
    ("fft_irfft", 0),
    ("fft_irfftn", 0),
    ("np_imag", 0),
    ("np_imag", 1),
    ("imag_attr", 1),
]


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("name, index", FIXED)
def test_variants_the_grid_found_wrong(name, index):
    if name.startswith("scipy_"):
        pytest.importorskip("scipy")
    case = Case(name, index, EXAMPLES[name][index])
    _check_compiled(case)
    _check_hvp(case)
