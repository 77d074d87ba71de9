"""torch functions the eager mode lacked, against torch 2.13 (values, dtypes, gradients in
float64, errors): frac, copysign, heaviside, aminmax, baddbmm, diag_embed, bincount,
searchsorted, bucketize, quantile/nanquantile, rot90, mode, cummax/cummin, logcumsumexp,
Tensor.unfold; their finite-difference cases are in test_gradients.py."""

import warnings

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import NoRuleError

torch = pytest.importorskip("torch")

R = np.random.default_rng(7)


def _outputs(result):
    if isinstance(result, tuple):
        return list(result)
    return [result]


def agree(fn, *values, grad=True, rtol=1e-10):
    """fn(module, *tensors) in sourcegrad and torch: the same outputs (values and dtypes) and,
    for float64 inputs, the same gradients of a weighted sum of the float outputs."""
    dtype_of = {np.dtype(np.float64): "float64"}
    ours_in, theirs_in = [], []
    for v in values:
        v = np.asarray(v)
        differentiable = grad and v.dtype == np.float64
        ours_in.append(sg.tensor(v, requires_grad=differentiable))
        theirs_in.append(torch.tensor(v, requires_grad=differentiable))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _outputs(fn(sg, *ours_in)), _outputs(fn(torch, *theirs_in))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert str(a.dtype) == str(b.dtype), (a.dtype, b.dtype)
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(
            np.asarray(a.detach()), b.detach().numpy(), rtol=rtol, atol=1e-12, equal_nan=True
        )
    if not any(t.requires_grad for t in ours_in):
        return ours
    floats = [(a, b) for a, b in zip(ours, theirs) if a.requires_grad]
    if not floats:  # (integer results: no gradient, in torch neither)
        assert not any(b.requires_grad for b in theirs)
        return ours
    weights = [R.normal(size=tuple(b.shape)) for _, b in floats]
    loss = sum((a * sg.tensor(w)).sum() for (a, _), w in zip(floats, weights))
    their_loss = sum((b * torch.tensor(w)).sum() for (_, b), w in zip(floats, weights))
    inputs = [t for t in ours_in if t.requires_grad]
    their_inputs = [t for t in theirs_in if t.requires_grad]
    mine = sg.autograd.grad(loss, inputs, allow_unused=True)
    reference = torch.autograd.grad(their_loss, their_inputs, allow_unused=True)
    for g, h in zip(mine, reference):
        h = torch.zeros(()) if h is None else h
        g = 0.0 if g is None else np.asarray(g)
        np.testing.assert_allclose(g + 0 * h.numpy(), h.numpy(), rtol=1e-9, atol=1e-12)
    return ours


def raises_as_torch(fn, *values):
    """fn raises in sourcegrad the exception torch raises, with its message."""
    with pytest.raises(Exception) as theirs:
        fn(torch, *(torch.tensor(v) for v in values))
    with pytest.raises(type(theirs.value)) as ours:
        fn(sg, *(sg.tensor(v) for v in values))
    assert str(ours.value) == str(theirs.value)


def node(result):
    return type(result.grad_fn).__name__


# --- elementwise ------------------------------------------------------------------------------


def test_frac():
    x = np.floor(R.uniform(-3, 3, 8)) + R.uniform(0.1, 0.9, 8)
    (y,) = agree(lambda m, a: m.frac(a), x)
    assert node(y) == "FracBackward0"
    agree(lambda m, a: a.frac(), x)
    agree(lambda m, a: (a * 1.0).frac_(), x)
    raises_as_torch(lambda m, a: m.frac(a), [1, 2])


def test_copysign():
    x, y = R.normal(size=(3, 4)), R.normal(size=4)
    x[0, 0] = 0.0
    (out,) = agree(lambda m, a, b: m.copysign(a, b), x, y)
    assert node(out) == "CopysignBackward0"
    agree(lambda m, a: m.copysign(a, -1.0), x)
    agree(lambda m, a, b: a.copysign(b), [1, -2, 3], [-1, 1, -1])  # (integers: float)
    # (torch's copysign_ keeps no copy of self for its backward: values only)
    agree(lambda m, a, b: (a * 1.0).copysign_(b), x, y, grad=False)


def test_heaviside_values_and_no_derivative_as_torch():
    agree(
        lambda m, a, b: m.heaviside(a, b), [-1.5, 0.0, -0.0, 2.0], [3.0, -1.0, 3.0, 7.0], grad=False
    )
    agree(lambda m, a, b: m.heaviside(a, b), [1, 0, -2], [5])
    raises_as_torch(lambda m, a, b: m.heaviside(a, b), [1.0, 0.0], [5])
    agree(lambda m, a, b: (a * 1).heaviside_(b), [1, 0, -2], [5])
    x = sg.tensor([1.0, 0.0], requires_grad=True)
    y = sg.heaviside(x, sg.tensor([0.5]))
    assert node(y) == "HeavisideBackward0"
    with pytest.raises(NoRuleError, match="heaviside"):
        y.sum().backward()


# --- scans ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp(dim):
    x = R.normal(size=(3, 4)) * 50  # (exp overflows: the scan must not)
    (y,) = agree(lambda m, a: m.logcumsumexp(a, dim), x)
    assert node(y) == "LogcumsumexpBackward0"
    agree(lambda m, a: a.logcumsumexp(dim), x)


def test_logcumsumexp_second_derivative_and_refusals():
    x = R.normal(size=5)
    a = sg.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    w = R.normal(size=5)
    (ga,) = sg.autograd.grad((sg.logcumsumexp(a, 0) * sg.tensor(w)).sum(), a, create_graph=True)
    (gb,) = torch.autograd.grad(
        (torch.logcumsumexp(b, 0) * torch.tensor(w)).sum(), b, create_graph=True
    )
    (hha,) = sg.autograd.grad((ga * ga).sum(), a)
    (hhb,) = torch.autograd.grad((gb * gb).sum(), b)
    np.testing.assert_allclose(np.asarray(hha), hhb.numpy(), rtol=1e-9)
    agree(lambda m, t: m.logcumsumexp(t, 0), np.float64(1.5))
    raises_as_torch(lambda m, t: m.logcumsumexp(t, 0), [1, 2])


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin(name):
    x = np.array([[1.0, 3.0, 3.0, 2.0, 5.0], [4.0, 0.0, 0.0, 6.0, -1.0]])
    values, indices = agree(lambda m, a: getattr(m, name)(a, 1), x)
    assert node(values) == f"{name.capitalize()}Backward0"
    agree(lambda m, a: getattr(a, name)(0), x)
    agree(lambda m, a: getattr(m, name)(a, 0), [1.0, np.nan, 2.0, np.nan, 0.0], grad=False)
    agree(lambda m, a: getattr(m, name)(a, 0), [True, False, True])
    agree(lambda m, a: getattr(m, name)(a, 0), np.float64(2.0))


# --- reductions -------------------------------------------------------------------------------


def test_aminmax():
    x = np.array([[1.0, 5.0, 5.0], [3.0, 2.0, 3.0]])  # (ties share the gradient)
    agree(lambda m, a: m.aminmax(a), x)
    agree(lambda m, a: m.aminmax(a, dim=0, keepdim=True), x)
    agree(lambda m, a: a.aminmax(dim=1), x)
    agree(lambda m, a: m.aminmax(a), [[1, 5], [3, 2]])
    raises_as_torch(lambda m, a: m.aminmax(a), np.zeros(0))
    raises_as_torch(lambda m, a: m.aminmax(a, dim=1), np.zeros((2, 0)))


def test_mode():
    agree(lambda m, a: m.mode(a), [1, 3, 3, 2, 2, 5])
    x = np.array([[2.0, 1.0, 1.0, 2.0], [3.0, 3.0, 1.0, 0.0]])
    values, _ = agree(lambda m, a: m.mode(a, 1), x)
    assert node(values) == "ModeBackward0"
    agree(lambda m, a: a.mode(0, keepdim=True), x)
    agree(lambda m, a: m.mode(a, 0), x.T)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interpolation):
    x = R.normal(size=(3, 5))
    for q in (0.4, [0.0, 0.25, 0.5, 1.0]):
        for dim, keepdim in ((None, False), (None, True), (1, False), (0, True), (-1, True)):
            agree(
                lambda m, a: m.quantile(
                    a,
                    m.tensor(q, dtype=m.float64) if isinstance(q, list) else q,
                    dim,
                    keepdim,
                    interpolation=interpolation,
                ),
                x,
            )


def test_nanquantile_and_nans():
    x = R.normal(size=(3, 5))
    x[0, 1] = x[2, :] = np.nan
    agree(lambda m, a: m.quantile(a, 0.3, 1), x)
    agree(lambda m, a: m.nanquantile(a, 0.3, 1), x)
    agree(lambda m, a: a.nanquantile(0.7), x)
    raises_as_torch(lambda m, a: m.quantile(a, 0.5), [1, 2])
    raises_as_torch(lambda m, a: m.quantile(a, 1.5), [1.0, 2.0])


# --- shapes -----------------------------------------------------------------------------------


def test_rot90():
    x = R.normal(size=(2, 3, 4))
    for k in (1, 2, 3, -1, 4):
        for dims in ((0, 1), (2, 0), (1, -1)):
            (y,) = agree(lambda m, a: m.rot90(a, k, dims), x)
    assert node(y) == "Rot90Backward0"
    agree(lambda m, a: a.rot90(), x)
    raises_as_torch(lambda m, a: m.rot90(a, 1, [0]), np.ones((2, 2)))
    raises_as_torch(lambda m, a: m.rot90(a, 1, [0, 0]), np.ones((2, 2)))


def test_diag_embed():
    x = R.normal(size=(2, 3))
    for offset, dim1, dim2 in ((0, -2, -1), (1, -2, -1), (-2, 0, 2), (0, 1, 0)):
        (y,) = agree(lambda m, a: m.diag_embed(a, offset, dim1, dim2), x)
    assert node(y) == "DiagEmbedBackward0"
    agree(lambda m, a: a.diag_embed(), x)


def test_unfold():
    x = R.normal(size=(3, 7))
    for dim, size, step in ((1, 3, 2), (1, 2, 1), (0, 2, 1), (-1, 7, 3), (0, 3, 5)):
        (y,) = agree(lambda m, a: a.unfold(dim, size, step), x)
    assert node(y) == "UnfoldBackward0"
    agree(lambda m, a: (a.unfold(1, 3, 1) * a.unfold(1, 3, 1)).sum(-1), x)  # (overlaps add)
    agree(lambda m, a: a.unfold(0, 1, 1), np.float64(3.0))
    raises_as_torch(lambda m, a: a.unfold(0, 8, 1), np.arange(7.0))
    raises_as_torch(lambda m, a: a.unfold(0, 3, 0), np.arange(7.0))


def test_a_write_into_unfolds_windows_raises_rather_than_not_reaching_the_tensor():
    # torch's windows are a view of the tensor (a write reaches it, or raises where windows
    # overlap); ours are a copy, read-only so that a write is never silently lost
    x = sg.arange(6.0)
    windows = x.unfold(0, 2, 2)
    with pytest.raises((RuntimeError, ValueError)):
        windows.add_(1.0)
    with pytest.raises((RuntimeError, ValueError)):
        windows[0] = 5.0
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0))


# --- products ---------------------------------------------------------------------------------


def test_baddbmm():
    c, a, b = R.normal(size=(2, 3)), R.normal(size=(4, 2, 5)), R.normal(size=(4, 5, 3))
    agree(lambda m, x, y, z: m.baddbmm(x, y, z), c, a, b)
    agree(lambda m, x, y, z: m.baddbmm(x, y, z, beta=0.5, alpha=-2.0), c, a, b)
    agree(lambda m, x, y, z: x.baddbmm(y, z, alpha=3), R.normal(size=(4, 2, 3)), a, b)
    # beta 0: input is not read (its NaNs do not reach the result)
    agree(lambda m, x, y, z: m.baddbmm(x, y, z, beta=0), np.full((2, 3), np.nan), a, b)


# --- integer helpers --------------------------------------------------------------------------


def test_bincount():
    agree(lambda m, a: m.bincount(a), [1, 1, 3])
    agree(lambda m, a: m.bincount(a, minlength=6), [1, 1, 3])
    agree(lambda m, a, w: m.bincount(a, w), [1, 1, 3], [0.5, 0.5, 1.0], grad=False)
    agree(lambda m, a, w: a.bincount(w.float()), [0, 2], [1.5, 2.0], grad=False)
    raises_as_torch(lambda m, a: m.bincount(a), [-1])
    raises_as_torch(lambda m, a: m.bincount(a), [[1]])
    raises_as_torch(lambda m, a: m.bincount(a), [1.0])


def test_searchsorted_and_bucketize():
    s, v = [1, 3, 5, 7, 9], [[3, 6, 9], [0, 5, 10]]
    for kw in ({}, {"right": True}, {"side": "right"}, {"side": "left"}, {"out_int32": True}):
        agree(lambda m, a, b: m.searchsorted(a, b, **kw), s, v)
    agree(lambda m, a: m.searchsorted(a, 5), s)
    agree(lambda m, a, b: m.searchsorted(a, b), [[1, 3, 5], [2, 4, 6]], [[3], [3]])
    agree(lambda m, a, b: m.searchsorted(a, b, sorter=m.argsort(a)), [5, 1, 3], [2, 4])
    for kw in ({}, {"right": True}, {"out_int32": True}):
        agree(lambda m, a, b: m.bucketize(a, b, **kw), v, s)
    agree(lambda m, a, b: m.bucketize(a, b), [0.5, 3.0, 3.5], [1.0, 3.0])


# --- scatter_reduce ---------------------------------------------------------------------------


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_scatter_reduce(reduce, include_self):
    x = np.array([[1.0, 5.0, 2.0, 2.0], [3.0, 3.0, 0.0, 1.0]])  # (ties: amax/amin share)
    index = np.array([[0, 1, 0], [2, 2, 3]])
    src = np.array([[5.0, 2.0, 1.0], [3.0, 3.0, 4.0]])

    def fn(m, a, s, i):
        return m.scatter_reduce(a, 1, i, s, reduce, include_self=include_self)

    agree(fn, x, src, index)
    agree(
        lambda m, a, s, i: a.scatter_reduce(1, i, s, reduce, include_self=include_self),
        x,
        src,
        index,
    )
    agree(lambda m, a, s, i: (a * 1).scatter_reduce_(1, i, s, reduce), x, src, index)
    # integers: values only (mean divides with the floor, as torch)
    agree(fn, x.astype(np.int64) * 3, src.astype(np.int64), index)


def test_scatter_reduce_prod_values():
    """(its gradient, zeros included, is in test_scatter_reduce_prod.py)"""
    x, index, src = np.array([1.0, 2.0, 3.0]), np.array([0, 0, 2]), np.array([2.0, 5.0, 4.0])
    for include_self in (True, False):
        agree(
            lambda m, a, s, i: m.scatter_reduce(a, 0, i, s, "prod", include_self=include_self),
            x,
            src,
            index,
            grad=False,
        )
    raises_as_torch(lambda m, a, i: m.scatter_reduce(a, 0, i, a, "foo"), x, index)
