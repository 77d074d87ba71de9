"""Eager programs written as outsiders write them (the probes of session 54), each of which gave
a result that differed from torch's: checked against torch (CPU), the oracle for eager mode.
"""

import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

BACKENDS = [torch, sg]


def _array(t):
    return np.asarray(t.detach().tolist(), dtype=np.float64)


# -- b ** e at b = 0, e < 0: d/de of inf is -inf ---------------------------------------------
# (the exponent's rule took log(np.where(b, b, 1)): inf * log 1 = NaN where torch gives
# inf * log 0 = -inf)


def _power_grads(T):
    b = T.tensor([0.0, 2.0, 0.0, -2.0, 0.0], dtype=T.float64, requires_grad=True)
    e = T.tensor([-1.0, -1.0, 2.0, 2.0, 0.0], dtype=T.float64, requires_grad=True)
    (b**e).sum().backward()
    return _array(b.grad), _array(e.grad)


def test_power_exponent_gradient_at_a_zero_base_is_torchs():
    with np.errstate(divide="ignore", invalid="ignore"):  # (0 ** -1: the forward's own)
        got, want = _power_grads(sg), _power_grads(torch)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert got[1][0] == -np.inf  # was NaN


def test_power_of_a_python_zero_and_two_to_a_tensor():
    def grads(T, base):
        e = T.tensor([-1.0, 0.5, 2.0], dtype=T.float64, requires_grad=True)
        (base**e).sum().backward()
        return _array(e.grad)

    with np.errstate(divide="ignore"):
        for base in (0.0, 2.0):
            np.testing.assert_allclose(grads(sg, base), grads(torch, base), rtol=1e-15)


def test_power_exponent_second_derivative_keeps_float64():
    # (the rule's masked log must stay in the exponent's dtype under create_graph: a Python
    # base made it torch's default float32, a relative error of 3e-9)
    def second(T):
        a = T.tensor([-0.59, 0.59, -0.91, -0.24], dtype=T.float64, requires_grad=True)
        (g,) = T.autograd.grad(T.pow(2.0, a).sum(), a, create_graph=True)
        (h,) = T.autograd.grad(g.sum(), a)
        return _array(g), _array(h)

    for g, w in zip(second(sg), second(torch)):
        np.testing.assert_allclose(g, w, rtol=1e-15)


# -- the second derivative of a vector norm where x or the norm is 0 --------------------------
# (the rule divided by np.where(norm == 0, 1, norm) and raised a masked |x| to p - 1: their
# derivatives there were the seed itself (p = 2, x = 0) or 0, where torch's are NaN)


@pytest.mark.parametrize("x", [[0.0, 3.0, 4.0], [0.0, 0.0, 0.0], [0.0, -2.0, 1.0]])
@pytest.mark.parametrize("p", [2, 3, 4, 0.5, 0.3, -1, -2, 1.2, 1.5, 2.5, 5.5])
def test_vector_norm_second_derivative_is_torchs(x, p):
    def second(T):
        t = T.tensor(x, dtype=T.float64, requires_grad=True)
        (g,) = T.autograd.grad(T.linalg.vector_norm(t, ord=p), t, create_graph=True)
        (g * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum().backward()
        return _array(g), _array(t.grad)

    with np.errstate(divide="ignore", invalid="ignore"):
        got, want = second(sg), second(torch)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def test_vector_norm_second_derivative_at_zero_was_the_seed():
    t = sg.zeros(3, dtype=sg.float64, requires_grad=True)
    (g,) = sg.autograd.grad(sg.linalg.vector_norm(t), t, create_graph=True)
    (g * sg.tensor([1.0, 2.0, 3.0], dtype=sg.float64)).sum().backward()
    assert np.isnan(_array(t.grad)).all()  # was [1, 2, 3]; torch's NaN


def test_vector_norm_first_derivative_over_a_dim_with_a_zero_row():
    data = np.array([[0.0, 0.0, 0.0], [3.0, 0.0, -4.0]])
    grads = []
    for T in BACKENDS:
        t = T.tensor(data, dtype=T.float64, requires_grad=True)
        for p in (2, 0.5, 1.5, 3):
            T.linalg.vector_norm(t, ord=p, dim=1, keepdim=True).sum().backward()
        grads.append(_array(t.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    assert np.isfinite(grads[0]).all()


# -- out= given to an op that takes **kwargs ------------------------------------------------
# (sum, mean, cumsum, var, softmax, ... take **kwargs for numpy's spellings and swallowed out=:
# `torch.sum(x, 0, out=o)` returned the sum and left o as it was, [-7, -7, -7] where torch's
# o is [5, 7, 9])

OUT_OPS = [
    "sum",
    "mean",
    "prod",
    "nansum",
    "nanmean",
    "amax",
    "amin",
    "var",
    "std",
    "norm",
    "cumsum",
    "cumprod",
    "softmax",
    "log_softmax",
]


@pytest.mark.parametrize("name", OUT_OPS)
def test_out_is_written(name):
    def written(T):
        x = T.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], dtype=T.float64)
        o = T.full((3,), -7.0, dtype=T.float64)
        with np.errstate(all="ignore"):
            returned = getattr(T, name)(x, 0, out=o)
        assert returned is o
        return _array(o)

    with warnings.catch_warnings():  # (o resized to the result's shape: torch's warning)
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(written(sg), written(torch), rtol=1e-12)


def test_out_of_quantile_and_into_a_view():
    for T in BACKENDS:
        y = T.zeros(6, dtype=T.float64)
        T.cumsum(T.arange(5.0, dtype=T.float64), 0, out=y[1:])
        np.testing.assert_array_equal(_array(y), [0, 0, 1, 3, 6, 10])
        o = T.zeros((), dtype=T.float64)
        T.quantile(T.arange(5.0, dtype=T.float64), 0.25, out=o)
        assert float(o) == 1.0


def test_out_refuses_what_requires_grad_as_torch():
    for T in BACKENDS:
        x = T.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            T.sum(x, 0, out=T.zeros(()))


def test_max_min_refuse_a_tensor_out():
    # (torch takes a (values, indices) pair there; a Tensor is its TypeError, not ignored)
    for T in BACKENDS:
        with pytest.raises(TypeError):
            T.max(T.ones(2, 3), 0, out=T.zeros(3))


def test_numpy_forms_write_out_and_refuse_keywords():
    t = sg.tensor([-1.0, 0.5, 2.0])
    assert np.clip(t, 0, 1, out=t) is t  # left t unclipped
    np.testing.assert_array_equal(_array(t), [0.0, 0.5, 1.0])
    o = sg.zeros(3)
    np.sum(sg.ones(2, 3), 0, out=o)
    np.testing.assert_array_equal(_array(o), [2.0, 2.0, 2.0])
    o = sg.zeros(6)
    np.concatenate([sg.ones(3), sg.ones(3) * 2], out=o)
    np.testing.assert_array_equal(_array(o), [1, 1, 1, 2, 2, 2])
    mask = np.array([True, False, True])
    # numpy's where=/initial= were dropped: np.sum(t, where=m) gave 2.0 where numpy gives 4.0
    for call in (
        lambda: np.sum(sg.tensor([1.0, -2.0, 3.0]), where=mask),
        lambda: np.max(sg.tensor([1.0, -2.0, 3.0]), initial=10.0),
        lambda: np.mean(sg.tensor([1.0, -2.0, 3.0]), where=mask),
        lambda: np.clip(sg.tensor([1.0, -2.0, 3.0]), 0, 1, where=mask),
    ):
        with pytest.raises(sg.errors.UnsupportedAPIError):
            call()


# -- in-place writes whose operand shares part of the memory written -------------------------
# (torch refuses them; numpy computes them from a copy, so such code ran here and raises in
# torch)

OVERLAPS = {
    "iadd_shifted": lambda T, y: y[1:].__iadd__(y[:-1]),
    "add_transpose": lambda T, y: y.view(3, 2).add_(y.view(2, 3).t()),
    "mul_element": lambda T, y: y.mul_(y[1]),
    "setitem_shifted": lambda T, y: y.__setitem__(slice(1, None), y[:-1]),
    "copy_transposed": lambda T, y: y.view(2, 3).copy_(y.view(3, 2).t()),
    "index_put": lambda T, y: y.index_put_((T.tensor([1, 2]),), y[:2]),
    "scatter": lambda T, y: y[1:].scatter_(0, T.tensor([0, 1]), y[:2]),
    "clamp_bound": lambda T, y: y[1:].clamp_(min=y[:-1]),
    "exp_out": lambda T, y: T.exp(y[:-1], out=y[1:]),
    "cumsum_out": lambda T, y: T.cumsum(y[:-1], 0, out=y[1:]),
}
ALLOWED = {
    "add_itself": lambda T, y: y.add_(y),
    "add_same_view": lambda T, y: y.view(2, 3).add_(y.view(2, 3)),
    "disjoint": lambda T, y: y[:3].add_(y[3:]),
    "strided": lambda T, y: y[0:5:2].add_(y[1:6:2]),
    "fill_element": lambda T, y: y[1:].fill_(y[0]),
    "setitem_element": lambda T, y: y.__setitem__(slice(1, None), y[0]),
    "masked_fill_element": lambda T, y: y.masked_fill_(y > 2, y[0]),
    "index_fill_element": lambda T, y: y.index_fill_(0, T.tensor([1]), y[0]),
    "copy_expanded": lambda T, y: y[1:3].copy_(y[0:1].expand(2)),
    "clone_first": lambda T, y: y[1:].add_(y[:-1].clone()),
}


@pytest.mark.parametrize("name", sorted(OVERLAPS))
def test_partial_overlap_is_refused_as_torch(name):
    for T in BACKENDS:
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            OVERLAPS[name](T, T.arange(6.0))


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_overlap_torch_allows_runs(name):
    got = []
    for T in BACKENDS:
        y = T.arange(6.0)
        ALLOWED[name](T, y)
        got.append(_array(y))
    np.testing.assert_array_equal(got[0], got[1])


def test_partial_overlap_refused_with_gradients_too():
    # (y[1:] += y[:-1] gave a gradient where torch raises)
    for T in BACKENDS:
        x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 1
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            y[1:] += y[:-1]


def test_reductions_refuse_keywords_they_do_not_read():
    # (x.sum(0, where=m) summed every element: any keyword left after axis=/keepdims=/out=
    # is torch's TypeError)
    x = sg.ones(2, 3)
    for call in (
        lambda: x.sum(0, where=True),
        lambda: sg.mean(x, 0, initial=1.0),
        lambda: sg.nansum(x, 0, bogus=1),
        lambda: x.max(0, bogus=1),
        lambda: sg.norm(x, 2, 1, bogus=1),
    ):
        with pytest.raises(TypeError, match="unexpected keyword argument"):
            call()
    np.testing.assert_array_equal(_array(x.sum(axis=0, keepdims=True)), [[2.0, 2.0, 2.0]])


# -- numpy's ufuncs writing into Tensors ---------------------------------------------------


@pytest.mark.parametrize(
    "index, want",
    [
        ([0, 1], [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]),  # rows 0 and 1: gave a[0, 1] alone
        ([0, 0], [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]),  # row 0 twice: gave a[0, 0] once
        ((0, 1), [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]),  # a tuple: one index per axis
        (np.array([2, 2]), [[0.0, 0.0], [0.0, 0.0], [2.0, 2.0]]),
    ],
)
def test_add_at_reads_numpys_index(index, want):
    a = sg.zeros(3, 2)
    np.add.at(a, index, 1.0)
    b = np.zeros((3, 2))
    np.add.at(b, index, 1.0)
    np.testing.assert_array_equal(b, want)
    np.testing.assert_array_equal(_array(a), want)


@pytest.mark.parametrize(
    "write",
    [
        lambda w: np.multiply(w, 5.0, out=w),
        lambda w: np.exp(w, out=(w,)),
        lambda w: np.add(w, 1.0, out=w, where=np.array([True, False, True])),
        lambda w: np.multiply.at(w, [0], 5.0),
        lambda w: np.add.at(w, [0], 5.0),
    ],
)
def test_ufunc_writes_into_a_saved_tensor_are_seen_by_backward(write):
    # (y = x * w saves w; numpy wrote into w's array behind its version counter, and backward
    # gave the gradient of a product with the new w: x.grad 5 where it is 1)
    x = sg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = sg.tensor([1.0, 1.0, 1.0])
    y = x * w
    write(w)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_ufunc_out_values_as_numpys():
    o = sg.zeros(3)
    assert np.add(sg.ones(3), 2.0, out=o) is o
    np.testing.assert_array_equal(_array(o), [3.0, 3.0, 3.0])
    w = sg.tensor([1.0, 2.0, 3.0])
    np.add(w, 1.0, out=w, where=np.array([True, False, True]))
    np.testing.assert_array_equal(_array(w), [2.0, 2.0, 4.0])
    w = sg.ones(3)
    np.maximum.at(w, [0, 2, 2], 2.0)
    np.testing.assert_array_equal(_array(w), [2.0, 1.0, 2.0])


@pytest.mark.parametrize(
    "write",
    [
        lambda w: np.copyto(w, np.array([5.0, 5.0, 5.0])),
        lambda w: np.put(w, [0], 5.0),
        lambda w: np.place(w, np.array([True, False, False]), [5.0]),
        lambda w: np.putmask(w, np.array([True, False, False]), 5.0),
        lambda w: np.fill_diagonal(w.view(1, 3), 5.0),
        lambda w: np.put_along_axis(w, np.array([0]), 5.0, 0),
    ],
)
def test_numpy_writes_into_a_saved_tensor_are_seen_by_backward(write):
    # (numpy's own function wrote into w's array behind its version counter: x.grad 5 where
    # the product computed had w = 1, with no error)
    x = sg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = sg.tensor([1.0, 1.0, 1.0])
    y = x * w
    write(w)
    assert float(w[0]) == 5.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_numpy_writing_functions_values():
    w = sg.zeros(2, 3)
    np.fill_diagonal(w, 7.0)
    np.testing.assert_array_equal(_array(w), [[7, 0, 0], [0, 7, 0]])
    w = sg.zeros(3)
    np.copyto(w, 4.0, where=np.array([True, False, True]))
    np.testing.assert_array_equal(_array(w), [4, 0, 4])
    w = sg.arange(6.0).view(2, 3)
    np.put(w, [0, 5], [-1.0, -2.0])
    np.testing.assert_array_equal(_array(w), [[-1, 1, 2], [3, 4, -2]])


def test_cat_stack_squeeze_refuse_keywords_they_do_not_read():
    # (dropped: torch.squeeze(x, 0, out=o) left o as it was)
    for call in (
        lambda: sg.cat([sg.ones(2), sg.ones(2)], 0, bogus=1),
        lambda: sg.stack([sg.ones(2)], 0, bogus=1),
        lambda: sg.squeeze(sg.ones(1, 2), 0, out=sg.zeros(2)),
    ):
        with pytest.raises(TypeError, match="unexpected keyword argument"):
            call()
    assert sg.ones(1, 2).squeeze(axis=0).shape == (2,)  # numpy's spelling still read
