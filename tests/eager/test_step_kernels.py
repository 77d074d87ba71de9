"""The kernels a training step's backward spends its time in, made cheaper for issue 38
(eager speed), against torch: each keeps torch's numbers, including its edge cases, and
the test says which costly numpy call it no longer makes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.ops import nn as ops_nn

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_relu_backward_is_torchs_threshold_backward(dtype):
    """An inf or nan gradient where x <= 0 gives 0, a nan x passes the gradient on, -0.0
    gradients keep their sign: torch's threshold_backward, bit for bit."""
    x = np.array([np.nan, 0.0, -0.0, 1.0, 2.0, -1.0, 3.0, -2.0], dtype)
    g = np.array([1.0, np.inf, np.nan, -0.0, np.nan, -5.0, np.inf, 7.0], dtype)
    results = []
    for lib in (sg, torch):
        xs = lib.tensor(x, requires_grad=True)
        lib.relu(xs).backward(lib.tensor(g))
        results.append(xs.grad.numpy())
    ours, theirs = results
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours.view(f"u{ours.itemsize}"), theirs.view(f"u{ours.itemsize}"))


def test_relu_backward_makes_no_branchy_where(monkeypatch):
    """np.where over a float gradient with mixed signs mispredicts a branch per element (a
    (256, 256) gradient: ~570 us, ten times the masked bits relu_grad uses)."""
    x = sg.tensor(R.standard_normal((64, 32)).astype(np.float32), requires_grad=True)
    y = sg.relu(x)
    real_where = np.where

    def where(*args, **kwargs):
        raise AssertionError("np.where in relu's backward")

    monkeypatch.setattr(np, "where", where)
    y.sum().backward()
    monkeypatch.setattr(np, "where", real_where)
    np.testing.assert_array_equal(x.grad.numpy(), (x.detach().numpy() > 0).astype(np.float32))


def test_relu_grad_falls_back_for_what_it_does_not_mask():
    """Integer or broadcast operands: np.where's own result."""
    ans = np.array([0, 2, 3])
    g = np.array([5, 6, 7])
    np.testing.assert_array_equal(ops_nn.relu_grad(g, ans), [0, 6, 7])
    g = np.array([1.5], np.float32)
    np.testing.assert_array_equal(ops_nn.relu_grad(g, np.array([0.0, 1.0])), [0.0, 1.5])


def _gelu_grads(lib, x, g, create_graph=False):
    xs = lib.tensor(x, requires_grad=True)
    y = lib.nn.functional.gelu(xs)
    (gx,) = lib.autograd.grad(y, xs, lib.tensor(g), create_graph=create_graph)
    second = None
    if create_graph:
        (gx * gx).sum().backward()
        second = xs.grad.numpy()
    return y.detach().numpy(), gx.detach().numpy(), second


def test_gelu_float32_is_torchs_over_both_tails():
    """The float32 CDF (erfc from exp(-x^2/2) times a fitted polynomial) and the slope the
    forward keeps: torch's values and gradients from -12 to 12, infinities and zeros, with
    no warning (an infinite x's slope is nan, silently, as torch's). (torch's 1 + erf(x)
    loses the lower tail's relative precision: the tolerance is absolute there.)"""
    x = np.concatenate([np.linspace(-12, 12, 4001), [np.inf, -np.inf, 0.0, -0.0, np.nan]])
    x = x.astype(np.float32)
    g = R.standard_normal(x.shape).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = _gelu_grads(sg, x, g)
    theirs = _gelu_grads(torch, x, g)
    # torch's float32 kernel gives gelu(+inf) = nan where its AVX-512 path runs (seen with
    # torch 2.13 on an AMD EPYC with AVX-512), inf elsewhere and in float64: ours is inf,
    # gelu's limit, and either of torch's is accepted there
    at_inf = x == np.inf
    assert np.all(ours[0][at_inf] == np.inf)
    assert np.all(np.isnan(theirs[0][at_inf]) | (theirs[0][at_inf] == np.inf))
    theirs[0][at_inf] = np.inf
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=2e-6, atol=1e-6)


def test_gelu_backward_takes_no_exp_and_second_order_is_torchs(monkeypatch):
    """The backward multiplies by the kept slope (it took an exp of x's size before); under
    create_graph the slope is computed again from the Tensor, so that the second derivative
    is recorded (torch's, to float32 rounding)."""
    x = R.standard_normal((16, 24)).astype(np.float32)
    g = R.standard_normal((16, 24)).astype(np.float32)
    xs = sg.tensor(x, requires_grad=True)
    y = sg.nn.functional.gelu(xs)
    real_exp = np.exp
    shapes = []

    def exp(a, *args, **kwargs):
        shapes.append(np.shape(a))
        return real_exp(a, *args, **kwargs)

    monkeypatch.setattr(np, "exp", exp)
    y.backward(sg.tensor(g))
    monkeypatch.setattr(np, "exp", real_exp)
    assert shapes == []
    ours = _gelu_grads(sg, x, g, create_graph=True)
    theirs = _gelu_grads(torch, x, g, create_graph=True)
    np.testing.assert_allclose(xs.grad.numpy(), theirs[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "shape, k, dtype",
    [
        ((8, 32, 64), 1, "float32"),
        ((3, 4, 5), 2, "float64"),
        ((2, 7), 1, "float32"),
        ((4, 2, 3), 2, "float16"),
    ],
)
def test_layer_norm_array_kernel_gives_layer_norm_parts_numbers(shape, k, dtype):
    """The eager forward's layer-norm kernel (statistics written in place) gives the very
    numbers of `layer_norm_parts`, which compiled modules inline: eager and compiled layer
    norms agree bit for bit, on a transposed (non-contiguous) input too; and the eager
    layer norm built on it keeps torch's values and gradients."""
    from sourcegrad.ops import nn_layers

    x = (R.standard_normal(shape) * 3 + 1).astype(dtype)
    for arr in (x, np.ascontiguousarray(x.T).T):
        axes = tuple(range(arr.ndim - k, arr.ndim))
        for mine, theirs in zip(
            nn_layers.layer_norm_parts_of_array(arr, k, 1e-5),
            nn_layers.layer_norm_parts(arr, axes, 1e-5),
        ):
            assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
            np.testing.assert_array_equal(mine, theirs)
    if dtype == "float16":
        return  # (torch's CPU layer norm computes float16 in float32)
    w, b = R.standard_normal(shape[-k:]).astype(dtype), R.standard_normal(shape[-k:])
    g = R.standard_normal(shape).astype(dtype)
    results = []
    for lib in (sg, torch):
        xs = lib.tensor(x, requires_grad=True)
        ws, bs = lib.tensor(w, requires_grad=True), lib.tensor(b.astype(dtype), requires_grad=True)
        y = lib.nn.functional.layer_norm(xs, shape[-k:], ws, bs)
        y.backward(lib.tensor(g))
        results.append([t.detach().numpy() for t in (y, xs.grad, ws.grad, bs.grad)])
    tol = 2e-5 if dtype == "float32" else 1e-12
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, rtol=tol, atol=tol)


def test_leaf_grads_are_laid_out_as_torchs():
    """A leaf's `.grad` has torch's strides: a Linear's weight's is C-contiguous (it was the
    transposed copy of addmm's gradient for weight.T, so `weight.grad.view(-1)` raised and
    is_contiguous() was False), with or without a bias and for 3-d inputs; a transposed
    leaf's keeps the leaf's strides (torch's layout contract). The values are torch's."""
    x = R.standard_normal((6, 5)).astype(np.float32)
    x3 = R.standard_normal((2, 6, 5)).astype(np.float32)
    w = R.standard_normal((3, 5)).astype(np.float32)
    b = R.standard_normal(3).astype(np.float32)
    results = []
    for lib in (sg, torch):
        grads = []
        for inp, bias in ((x, b), (x3, b), (x, None), (x3, None)):
            ws = lib.tensor(w, requires_grad=True)
            bs = None if bias is None else lib.tensor(bias)
            lib.nn.functional.linear(lib.tensor(inp), ws, bs).pow(2).sum().backward()
            grads.append(ws.grad)
        wt = lib.tensor(w).t().requires_grad_()  # a transposed leaf: strides (1, 5)
        lib.addmm(lib.tensor(b), lib.tensor(x), wt).pow(2).sum().backward()
        grads.append(wt.grad)
        results.append(grads)
    for mine, theirs in zip(*results):
        assert mine.stride() == theirs.stride() and mine.is_contiguous() == theirs.is_contiguous()
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-5)
    for mine in results[0][:4]:
        assert mine.view(-1).shape == (15,)
