"""Every registry entry with torch names, in both modes, from one row each.

A row names an entry of `sourcegrad.ops` and the inputs to try it on (away from points
where it is not differentiable), with the static arguments both numpy's and torch's
function take in the same places (`Row(normal, 1)`: `np.cumsum(x, 1)`, `torch.cumsum(x, 1)`).
From the entry alone the tests check:

* compiler: the gradient of `sum(op(*xs, *static) * w)` against central finite differences,
  and its forward mode (JVP) and second derivative against finite differences of those;
* eager: `sourcegrad.<function>`, `Tensor.<method>`, the in-place variant and
  `np.<function>(tensor)` against torch (values, gradient, the node's name, and the
  second derivative through create_graph).

Adding an operation to both modes is its entry plus a row here.
"""

import zlib

import numpy as np
import pytest

import sourcegrad
from sourcegrad import ops
from sourcegrad.api import numeric_grad


def normal(r):
    return r.normal(size=(3, 4))


def unit(r):
    return r.uniform(-0.8, 0.8, size=(3, 4))


def positive(r):
    return r.uniform(0.5, 2.0, size=(3, 4))


def off_integers(r):
    # rounding ops: away from the integers, where they jump
    return np.floor(r.uniform(-3, 3, size=(3, 4))) + r.uniform(0.1, 0.9, size=(3, 4))


def away_from_zero(r):
    return r.choice([-1.0, 1.0], size=(3, 4)) * r.uniform(0.2, 2.0, size=(3, 4))


class Row:
    """Inputs (a function of a random generator: one array, or a tuple of them), the static
    arguments after them, and where numpy's function means another torch call than the
    function of the same name (np.var's ddof=0), that call as `numpy_like(torch, *xs)`."""

    def __init__(self, inputs, *static, numpy_like=None):
        self.inputs, self.static, self.numpy_like = inputs, static, numpy_like


def vectors(*sizes):
    return lambda r: tuple(r.normal(size=n) for n in sizes)


def with_nans(r):
    x = normal(r)
    x[0, 1] = x[2, 3] = np.nan
    return x


ROWS = {
    "exp": normal,
    "exp2": normal,
    "expm1": normal,
    "log": positive,
    "log1p": positive,
    "log2": positive,
    "log10": positive,
    "sqrt": positive,
    "reciprocal": positive,
    "sin": normal,
    "cos": normal,
    "tan": unit,
    "arcsin": unit,
    "arccos": unit,
    "arctan": normal,
    "sinh": normal,
    "cosh": normal,
    "tanh": normal,
    "arcsinh": normal,
    "arccosh": lambda r: r.uniform(1.5, 3.0, size=(3, 4)),
    "arctanh": unit,
    "absolute": away_from_zero,
    "negative": normal,
    "torch_sign": away_from_zero,
    "torch_floor": off_integers,
    "torch_ceil": off_integers,
    "torch_trunc": off_integers,
    "relu": away_from_zero,
    "sigmoid": normal,
    "rsqrt": positive,
    "erf": normal,
    "sinc": lambda r: np.concatenate([r.uniform(-2.5, 2.5, size=(3, 3)), np.zeros((3, 1))], 1),
    # two inputs (the second broadcast along the first's rows); maximum and minimum away
    # from ties, where they split the gradient
    "maximum": lambda r: (normal(r), r.normal(size=4) + 0.05),
    "minimum": lambda r: (normal(r), r.normal(size=4) + 0.05),
    "logaddexp": lambda r: (normal(r), r.normal(size=4)),
    "arctan2": lambda r: (normal(r), r.normal(size=4)),
    "hypot": lambda r: (normal(r), r.normal(size=4)),
    # reductions (their rows take the whole array; cumsum & co. along a dimension)
    "sum": normal,
    "mean": normal,
    "prod": normal,
    "max": normal,
    "min": normal,
    "amax": normal,
    "amin": normal,
    "var": Row(normal, numpy_like=lambda T, x: T.var(x, correction=0)),
    "std": Row(normal, numpy_like=lambda T, x: T.std(x, correction=0)),
    "cumsum": Row(normal, 1),
    # torch's functions numpy lacks (tests/eager/test_torch_gaps_ops.py tries more forms)
    "frac": off_integers,
    "copysign": lambda r: (away_from_zero(r), away_from_zero(r)[0]),
    "logcumsumexp": Row(normal, 1),
    "diag_embed": normal,
    "cumprod": Row(normal, 1),
    "logsumexp": Row(normal, 1),
    "softmax": Row(normal, 1),
    "log_softmax": Row(normal, 1),
    "np_nansum": with_nans,
    "np_nanmean": with_nans,
    # products
    "matmul": lambda r: (normal(r), r.normal(size=(4, 2))),
    "dot": vectors(4, 4),
    "outer": vectors(3, 4),
    # shapes and layouts
    "reshape": Row(normal, (4, 3)),
    "ravel": normal,
    "expand_dims": Row(normal, 1),
    "squeeze": lambda r: r.normal(size=(3, 1, 4)),
    "transpose": Row(normal, (1, 0)),
    "swapaxes": Row(normal, 0, 1),
    "moveaxis": Row(lambda r: r.normal(size=(2, 3, 4)), 0, 2),
    "broadcast_to": Row(normal, (2, 3, 4)),
    "flip": Row(normal, (0,)),
    "np_fliplr": normal,
    "np_flipud": normal,
    "roll": Row(normal, 1, 1),
    "tril": normal,
    "triu": normal,
    "tile": Row(normal, (2, 1)),
}


def in_unit(r):
    return r.uniform(0.1, 0.9, size=(3, 4))


# scipy.special's entries with torch names (torch.special), where scipy is installed
SCIPY_ROWS = {
    "scipy_erfc": normal,
    "scipy_erfinv": unit,
    "scipy_erfcx": normal,
    "scipy_gammaln": positive,
    "scipy_digamma": positive,
    "scipy_logit": in_unit,
    "scipy_ndtr": normal,
    "scipy_log_ndtr": normal,
    "scipy_ndtri": in_unit,
    "scipy_i0": normal,
    "scipy_i1": normal,
    "scipy_i0e": normal,
    "scipy_i1e": normal,
    "scipy_entr": in_unit,
    "scipy_xlogy": lambda r: (normal(r), r.uniform(0.5, 2.0, size=4)),
    "scipy_xlog1py": lambda r: (normal(r), r.uniform(0.5, 2.0, size=4)),
}
# entries with torch names whose torch op takes a static argument (polygamma's order,
# multigammaln's p), refuses one input's gradient (zeta, gammainc, gammaincc) or records no
# node (the Bessel functions): tests/eager/test_special.py and tests/compiler/ops/test_scipy.py;
# einsum, whose static subscripts come first and whose torch nodes are the products it
# lowers to: tests/eager/test_gradients.py, tests/eager/test_second_order.py (against torch)
# and tests/compiler/ops/test_numpy_functions.py
ELSEWHERE = {
    "einsum",
    "np_heaviside",  # (no derivative, as torch: tests/eager/test_torch_gaps_ops.py)
    "scipy_polygamma",
    "scipy_multigammaln",
    "scipy_zeta",
    "scipy_gammainc",
    "scipy_gammaincc",
    *(f"scipy_{name}" for name in ("j0", "j1", "y0", "y1", "k0", "k1")),
}
try:
    from sourcegrad.ops import scipy_special  # noqa: F401 - its entries have torch names too

    ROWS.update(SCIPY_ROWS)
except ImportError:
    pass
ROWS = {name: row if isinstance(row, Row) else Row(row) for name, row in ROWS.items()}
NAMES = sorted(ROWS)


def test_every_entry_with_torch_names_has_a_row():
    entries = {name for name, op in ops.RULES.items() if op.torch is not None}
    assert entries - ELSEWHERE == set(ROWS)


def _inputs(name):
    """(the op's array inputs, the weights of its output) for row `name`."""
    r = np.random.default_rng(zlib.crc32(name.encode()))
    xs = ROWS[name].inputs(r)
    xs = xs if isinstance(xs, tuple) else (xs,)
    return xs, r.normal(size=np.shape(ops.get(name).fn(*xs, *ROWS[name].static)))


def _function(name):
    """`sum(op(*xs, *static) * w)`, calling the entry's own forward function."""
    fn = ops.get(name).fn
    static = ROWS[name].static
    arrays = len(_inputs(name)[0])
    if arrays == 2:

        def f(x, y, w):
            return np.sum(fn(x, y) * w)
    elif len(static) == 2:
        a, b = static

        def f(x, w):
            return np.sum(fn(x, a, b) * w)
    elif len(static) == 1:
        (a,) = static

        def f(x, w):
            return np.sum(fn(x, a) * w)
    else:

        def f(x, w):
            return np.sum(fn(x) * w)

    return f


def _compiled(name):
    # the compiler differentiates the function its registry knows fn by: the entry itself,
    # or (torch_sign & co., whose numpy function numpy's rule owns) that rule
    return ops.rule_for_function(ops.get(name).fn) is ops.get(name)


@pytest.mark.parametrize("name", [n for n in NAMES if _compiled(n)])
def test_compiler_matches_finite_differences(name):
    f = _function(name)
    xs, w = _inputs(name)
    args = xs + (w,)
    wrt = tuple(range(len(xs)))
    for pos, g in zip(wrt, sourcegrad.grad(f, wrt=wrt)(*args)):
        np.testing.assert_allclose(g, numeric_grad(f, args, pos), rtol=1e-6, atol=1e-8)
    r = np.random.default_rng(1)
    ts = tuple(r.normal(size=np.shape(x)) for x in xs) + (np.zeros_like(w),)
    eps = 1e-6

    def along(fn, sign):
        return fn(*(a + sign * eps * t for a, t in zip(args, ts)))

    _, tangent = sourcegrad.jvp(f, args, ts)
    np.testing.assert_allclose(
        tangent, (along(f, 1) - along(f, -1)) / (2 * eps), rtol=1e-6, atol=1e-8
    )
    gradient = sourcegrad.grad(f)  # (with respect to the first input)
    hessian_t = sourcegrad.jvp(gradient, args, ts)[1]
    np.testing.assert_allclose(
        hessian_t, (along(gradient, 1) - along(gradient, -1)) / (2 * eps), rtol=1e-5, atol=1e-7
    )


@pytest.mark.parametrize("name", NAMES)
def test_eager_matches_torch(name):
    torch = pytest.importorskip("torch")
    entry = ops.get(name)
    names = entry.torch
    xs, w = _inputs(name)
    static = ROWS[name].static
    vs = [np.random.default_rng(2).normal(size=np.shape(x)) for x in xs]

    def side(T, call):
        """(output, first derivatives, second derivatives along vs) of
        sum(call(*xs, *static) * w)."""
        txs = [T.tensor(x, requires_grad=True) for x in xs]
        out = call(*txs, *static)
        gs = T.autograd.grad((out * T.tensor(w)).sum(), txs, create_graph=True)
        # (a constant first derivative, such as neg's, records nothing to differentiate)
        total = sum((g * T.tensor(v)).sum() for g, v in zip(gs, vs) if g.requires_grad)
        ggs = (
            T.autograd.grad(total, txs, allow_unused=True)
            if isinstance(total, T.Tensor)
            else (None,) * len(xs)
        )
        return (out,) + tuple(gs) + tuple(ggs)

    # scipy's and torch's special functions (their series and recurrences) agree to ~1e-9
    rtol = 1e-8 if name.startswith("scipy_") else 1e-10

    def agree(ours, theirs, node):
        assert type(ours[0].grad_fn).__name__ == node
        for i, (a, b) in enumerate(zip(ours, theirs)):
            a = None if a is None else a.detach().numpy()
            b = None if b is None else b.detach().numpy(force=True)  # (torch's ZeroTensor)
            if b is None or a is None:  # (no second derivative: zero, or not recorded)
                assert (a is None or not np.any(a)) and (b is None or not np.any(b))
                continue
            if i > len(xs):  # where torch's second derivative is nan (sinc at 0), ours is finite
                assert np.all(np.isfinite(a))
                a, b = np.where(np.isfinite(b), a, 0.0), np.where(np.isfinite(b), b, 0.0)
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12)

    if names.function:
        theirs = side(torch, getattr(torch, names.function[0]))
    else:  # torch.special's only
        theirs = side(torch, getattr(torch.special, names.special[0]))
    for function in names.function:
        agree(side(sourcegrad, getattr(sourcegrad, function)), theirs, names.node)
    for function in names.special:
        agree(side(sourcegrad, getattr(sourcegrad.special, function)), theirs, names.node)
    for method in names.method:
        agree(side(sourcegrad, lambda t, *rest: getattr(t, method)(*rest)), theirs, names.node)
    for inplace in names.inplace:
        try:
            reference = side(torch, lambda t, *rest: getattr(t * 1.0, inplace)(*rest))
        except NotImplementedError:  # torch has no derivative of asinh_, acosh_, atanh_
            reference = theirs  # sourcegrad's is the out-of-place op's
        agree(
            side(sourcegrad, lambda t, *rest: getattr(t * 1.0, inplace)(*rest)),
            reference,
            names.node,
        )
    if names.numpy:
        like = ROWS[name].numpy_like
        reference = theirs if like is None else side(torch, lambda *a: like(torch, *a))
        agree(side(sourcegrad, entry.fn), reference, names.node)
