"""Every registry entry with torch names, in both modes, from one row each.

A row names an entry of `sourcegrad.ops` and the inputs to try it on (away from points
where it is not differentiable). From the entry alone the tests check:

* compiler: the gradient of `sum(op(x) * w)` against central finite differences, and
  its forward mode (JVP) and second derivative against finite differences of those;
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


ROWS = {
    "exp": normal, "exp2": normal, "expm1": normal, "log": positive, "log1p": positive,
    "log2": positive, "log10": positive, "sqrt": positive, "reciprocal": positive,
    "sin": normal, "cos": normal, "tan": unit, "arcsin": unit, "arccos": unit,
    "arctan": normal, "sinh": normal, "cosh": normal, "tanh": normal, "arcsinh": normal,
    "arccosh": lambda r: r.uniform(1.5, 3.0, size=(3, 4)), "arctanh": unit,
    "absolute": away_from_zero, "negative": normal, "torch_sign": away_from_zero,
    "torch_floor": off_integers, "torch_ceil": off_integers, "torch_trunc": off_integers,
    "relu": away_from_zero, "sigmoid": normal, "rsqrt": positive, "erf": normal,
    "sinc": lambda r: np.concatenate([r.uniform(-2.5, 2.5, size=(3, 3)), np.zeros((3, 1))], 1),
}
NAMES = sorted(ROWS)


def test_every_entry_with_torch_names_has_a_row():
    entries = {name for name, op in ops.RULES.items() if op.torch is not None}
    assert entries == set(ROWS)


def _inputs(name):
    r = np.random.default_rng(zlib.crc32(name.encode()))
    return ROWS[name](r), r.normal(size=(3, 4))


def _function(name):
    """`sum(op(x) * w)`, calling the entry's own forward function."""
    fn = ops.get(name).fn

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
    x, w = _inputs(name)
    np.testing.assert_allclose(sourcegrad.grad(f)(x, w), numeric_grad(f, (x, w), 0),
                               rtol=1e-6, atol=1e-8)
    t = np.random.default_rng(1).normal(size=x.shape)
    _, tangent = sourcegrad.jvp(f, (x, w), (t, np.zeros_like(w)))
    eps = 1e-6
    np.testing.assert_allclose(tangent, (f(x + eps * t, w) - f(x - eps * t, w)) / (2 * eps),
                               rtol=1e-6, atol=1e-8)
    gradient = sourcegrad.grad(f)
    hessian_t = sourcegrad.jvp(gradient, (x, w), (t, np.zeros_like(w)))[1]
    numeric = (gradient(x + eps * t, w) - gradient(x - eps * t, w)) / (2 * eps)
    np.testing.assert_allclose(hessian_t, numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", NAMES)
def test_eager_matches_torch(name):
    torch = pytest.importorskip("torch")
    entry = ops.get(name)
    names = entry.torch
    x, w = _inputs(name)
    tw = torch.tensor(w)

    def torch_side(call):
        tx = torch.tensor(x, requires_grad=True)
        out = call(tx)
        (g,) = torch.autograd.grad((out * tw).sum(), tx, create_graph=True)
        # (a constant first derivative, such as neg's, records nothing to differentiate)
        (gg,) = torch.autograd.grad((g * tw).sum(), tx, allow_unused=True) \
            if g.requires_grad else (None,)
        return out, g, gg

    def our_side(call):
        sx = sourcegrad.tensor(x, requires_grad=True)
        out = call(sx)
        (g,) = sourcegrad.autograd.grad((out * sourcegrad.tensor(w)).sum(), sx,
                                        create_graph=True)
        (gg,) = sourcegrad.autograd.grad((g * sourcegrad.tensor(w)).sum(), sx,
                                         allow_unused=True) if g.requires_grad else (None,)
        return out, g, gg

    def agree(ours, theirs, node):
        assert type(ours[0].grad_fn).__name__ == node
        for order, (a, b) in enumerate(zip(ours, theirs)):
            a = None if a is None else a.detach().numpy()
            b = None if b is None else b.detach().numpy(force=True)  # (torch's ZeroTensor)
            if b is None or a is None:  # (no second derivative: zero, or not recorded)
                assert (a is None or not np.any(a)) and (b is None or not np.any(b))
                continue
            if order == 2:  # where torch's second derivative is nan (sinc at 0), ours is finite
                assert np.all(np.isfinite(a))
                a, b = np.where(np.isfinite(b), a, 0.0), np.where(np.isfinite(b), b, 0.0)
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)

    theirs = torch_side(getattr(torch, names.function[0]))
    for function in names.function:
        agree(our_side(getattr(sourcegrad, function)), theirs, names.node)
    for method in names.method:
        agree(our_side(lambda t: getattr(t, method)()), theirs, names.node)
    for inplace in names.inplace:
        agree(our_side(lambda t: getattr(t * 1.0, inplace)()),
              torch_side(lambda t: getattr(t * 1.0, inplace)()), names.node)
    if names.numpy:
        agree(our_side(entry.fn), theirs, names.node)
