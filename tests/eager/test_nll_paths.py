"""nll_loss's and cross_entropy's two paths, against torch: the one where every target counts
with weight one (the forward sums the picked log-probabilities, the backward assigns
-g / N at each row's target) and the general one (class weights, ignored targets, no
reduction), which share the registry entry. Values, gradients, grad_fn names, second
derivatives under create_graph; and the eager layer norm (the other reduction over a GPT's
rows) in each float dtype, float16 and empty inputs included.
"""

from __future__ import annotations

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

TOL = {
    "float16": dict(rtol=2e-3, atol=2e-3),
    "float32": dict(rtol=2e-5, atol=2e-6),
    "float64": dict(rtol=1e-12, atol=1e-13),
}
R = np.random.default_rng(2038)


def _close(ours, theirs, dtype):
    np.testing.assert_allclose(
        ours.detach().numpy().astype(np.float64),
        theirs.detach().numpy().astype(np.float64),
        **TOL[dtype],
    )


def _targets(n, classes, ignore):
    """n class indices; `ignore`: a quarter of them set to the ignored index -1."""
    t = R.integers(0, classes, n)
    if ignore:
        t[R.permutation(n)[: n // 4]] = -1
    return t


def _both(fn, x, target, *extra):
    """fn(lib, input, target, *extra) in both libraries: (ours, torch's), inputs included."""
    xs, xt = sg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ts, tt = sg.tensor(target), torch.tensor(target)
    es = [sg.tensor(e) for e in extra]
    et = [torch.tensor(e) for e in extra]
    return (fn(sg, xs, ts, *es), xs), (fn(torch, xt, tt, *et), xt)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
def test_class_index_losses_are_torchs(dtype, reduction, ignore, weighted, loss):
    x = R.standard_normal((37, 11)).astype(dtype)
    if loss == "nll_loss":
        x = np.log(np.exp(x) / np.exp(x).sum(1, keepdims=True)).astype(dtype)
    target = _targets(37, 11, ignore)
    weight = [R.uniform(0.5, 2.0, 11).astype(dtype)] if weighted else []

    def fn(lib, t, y, *w):
        f = getattr(lib.nn.functional, loss)
        return f(t, y, *w, ignore_index=-1, reduction=reduction)

    (ys, xs), (yt, xt) = _both(fn, x, target, *weight)
    _close(ys, yt, dtype)
    assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__
    g = R.standard_normal(tuple(yt.shape)).astype(dtype)
    (gs,) = sg.autograd.grad(ys, xs, sg.tensor(g), create_graph=True)
    (gt,) = torch.autograd.grad(yt, xt, torch.tensor(g), create_graph=True)
    _close(gs, gt, dtype)
    if loss == "cross_entropy":  # (nll_loss is linear in its input: no second derivative)
        c = R.standard_normal(x.shape).astype(dtype)
        (hs,) = sg.autograd.grad((gs * sg.tensor(c)).sum(), xs)
        (ht,) = torch.autograd.grad((gt * torch.tensor(c)).sum(), xt)
        _close(hs, ht, dtype)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_nll_loss_of_one_sample_and_byte_targets_is_torchs(reduction):
    x = R.standard_normal(7).astype(np.float32)
    for target in (np.int64(3), np.array(3, np.uint8)):
        (ys, xs), (yt, xt) = _both(
            lambda lib, t, y: lib.nn.functional.nll_loss(t, y, reduction=reduction), x, target
        )
        _close(ys, yt, "float32")
        ys.backward()
        yt.backward()
        _close(xs.grad, xt.grad, "float32")
    x2 = R.standard_normal((5, 7)).astype(np.float32)
    target = R.integers(0, 7, 5).astype(np.uint8)
    (ys, xs), (yt, xt) = _both(
        lambda lib, t, y: lib.nn.functional.cross_entropy(t, y, reduction=reduction), x2, target
    )
    _close(ys, yt, "float32")
    ys.backward()
    yt.backward()
    _close(xs.grad, xt.grad, "float32")


def test_nll_loss_with_every_target_ignored_is_torchs_nan():
    x = R.standard_normal((4, 3)).astype(np.float32)
    target = np.full(4, -100)
    (ys, xs), (yt, xt) = _both(lambda lib, t, y: lib.nn.functional.nll_loss(t, y), x, target)
    assert np.isnan(ys.item()) and np.isnan(yt.item())
    ys.backward()
    yt.backward()
    np.testing.assert_array_equal(np.isnan(xs.grad.numpy()), np.isnan(xt.grad.numpy()))


def test_nll_loss_refuses_a_target_out_of_range_as_torch():
    x = R.standard_normal((4, 3)).astype(np.float32)
    target = np.array([0, 1, 3, 2])
    with pytest.raises(IndexError) as ours:
        sg.nn.functional.nll_loss(sg.tensor(x, requires_grad=True), sg.tensor(target))
    with pytest.raises(IndexError) as theirs:
        torch.nn.functional.nll_loss(torch.tensor(x, requires_grad=True), torch.tensor(target))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(8, 32, 64), (3, 5), (0, 4), (2, 3, 4, 5)])
def test_layer_norm_statistics_are_torchs(dtype, shape):
    x = (R.standard_normal(shape) * 3 + 1).astype(dtype)
    normalized = shape[-1:] if len(shape) < 4 else shape[-2:]
    w = R.standard_normal(normalized).astype(dtype)
    b = R.standard_normal(normalized).astype(dtype)
    (ys, xs), (yt, xt) = _both(
        lambda lib, t, y, ww, bb: lib.nn.functional.layer_norm(t, normalized, ww, bb),
        x,
        np.zeros(1),
        w,
        b,
    )
    _close(ys, yt, dtype)
    assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__
    if dtype == "float16":  # (torch computes float16's backward in float32)
        return
    g = R.standard_normal(shape).astype(dtype)
    (gs,) = sg.autograd.grad(ys, xs, sg.tensor(g))
    (gt,) = torch.autograd.grad(yt, xt, torch.tensor(g))
    _close(gs, gt, dtype)
