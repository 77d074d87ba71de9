"""Batch normalisation of `sourcegrad.nn` against torch (F.batch_norm, BatchNorm1d/2d: running
statistics over several steps, momentum None, eval mode, state dicts), and a small convnet
trained for a few SGD steps in both libraries."""

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.nn.functional as F
from sourcegrad import nn

from .spatial_helpers import compare_fn, one_torch_thread, raises_like, to_np  # noqa: F401

torch = pytest.importorskip("torch")

R = np.random.default_rng(11)


def arr(*shape, dtype=np.float64):
    return R.standard_normal(shape).astype(dtype)


def _copy(src, dst):
    dst.load_state_dict(
        {k: sg.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    )


def _close(a, b, rtol=1e-10, atol=1e-12, msg=""):
    np.testing.assert_allclose(to_np(a), to_np(b), rtol=rtol, atol=atol, err_msg=msg)


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6), (3, 3, 4, 5)])
def test_functional_batch_norm_training_and_eval(shape):
    x, w, b = arr(*shape), arr(3), arr(3)
    compare_fn(torch, "batch_norm", [x, None, None, w, b], dict(training=True))
    compare_fn(torch, "batch_norm", [x, None, None, None, None], dict(training=True, eps=1e-3))
    # eval: the running statistics as given (they require no grad)
    import torch.nn.functional as TF

    rm, rv = torch.tensor(arr(3)), torch.tensor(np.abs(arr(3)) + 0.5)
    xs, ws, bs = (sg.tensor(a, requires_grad=True) for a in (x, w, b))
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    yt = TF.batch_norm(xt, rm, rv, wt, bt, training=False)
    ys = F.batch_norm(xs, sg.tensor(rm.numpy()), sg.tensor(rv.numpy()), ws, bs, training=False)
    _close(ys, yt)
    assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__ == "NativeBatchNormBackward0"
    r = R.standard_normal(shape)
    (yt * torch.tensor(r)).sum().backward()
    (ys * sg.tensor(r)).sum().backward()
    for s_, t_ in ((xs, xt), (ws, wt), (bs, bt)):
        _close(s_.grad, t_.grad)


def test_functional_batch_norm_updates_running_stats_in_place():
    x = arr(6, 3, 4)
    stats = []
    for lib, Fn in ((torch, torch.nn.functional), (sg, F)):
        rm, rv = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        Fn.batch_norm(lib.tensor(x), rm, rv, training=True, momentum=0.3)
        stats.append((rm, rv))
    assert [(rm._version, rv._version) for rm, rv in stats] == [(0, 0), (0, 0)]  # as torch
    _close(stats[1][0], stats[0][0])
    _close(stats[1][1], stats[0][1])  # the unbiased variance, as torch
    raises_like(
        torch,
        lambda: torch.nn.functional.batch_norm(torch.ones(1, 3), None, None, training=True),
        lambda: F.batch_norm(sg.ones(1, 3), None, None, training=True),
    )
    raises_like(
        torch,
        lambda: torch.nn.functional.batch_norm(
            torch.ones(2, 3), None, None, training=True, eps=0.0
        ),
        lambda: F.batch_norm(sg.ones(2, 3), None, None, training=True, eps=0.0),
    )
    grad_stats = [lib.zeros(3, requires_grad=True) for lib in (torch, sg)]
    raises_like(
        torch,
        lambda: torch.nn.functional.batch_norm(
            torch.ones(2, 3), grad_stats[0], None, training=True
        ),
        lambda: F.batch_norm(sg.ones(2, 3), grad_stats[1], None, training=True),
    )


@pytest.mark.parametrize(
    "cls, kwargs, shape",
    [
        ("BatchNorm1d", {}, (6, 4)),
        ("BatchNorm1d", dict(momentum=None), (5, 4, 3)),
        ("BatchNorm2d", dict(momentum=0.25, eps=1e-3), (4, 4, 3, 5)),
        ("BatchNorm2d", dict(affine=False), (3, 4, 2, 2)),
        ("BatchNorm2d", dict(track_running_stats=False), (3, 4, 2, 2)),
        ("BatchNorm1d", dict(bias=False, momentum=None), (6, 4)),
    ],
)
def test_batchnorm_modules_train_then_eval(cls, kwargs, shape):
    tm = getattr(torch.nn, cls)(4, **kwargs).double()
    sm = getattr(nn, cls)(4, **kwargs).double()
    assert repr(sm) == repr(tm)
    assert [
        (k, tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in sm.state_dict().items()
    ] == [(k, tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in tm.state_dict().items()]
    if tm.weight is not None:  # non-trivial affine parameters
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(arr(4)))
            if tm.bias is not None:
                tm.bias.copy_(torch.tensor(arr(4)))
    _copy(tm, sm)
    for step in range(3):
        x = arr(*shape) * (step + 1) + step
        xt, xs = torch.tensor(x, requires_grad=True), sg.tensor(x, requires_grad=True)
        yt, ys = tm(xt), sm(xs)
        _close(ys, yt, msg=f"output, step {step}")
        assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__
        r = R.standard_normal(shape)
        (yt * torch.tensor(r)).sum().backward()
        (ys * sg.tensor(r)).sum().backward()
        _close(xs.grad, xt.grad, msg=f"input gradient, step {step}")
        for (name, p), q in zip(tm.named_parameters(), sm.parameters()):
            _close(q.grad, p.grad, msg=f"{name} gradient, step {step}")
    for (name, a), b in zip(tm.state_dict().items(), sm.state_dict().values()):
        _close(b, a, msg=name)  # running_mean, running_var, num_batches_tracked
    tm.eval()
    sm.eval()
    x = arr(*shape)
    xt, xs = torch.tensor(x, requires_grad=True), sg.tensor(x, requires_grad=True)
    yt, ys = tm(xt), sm(xs)
    _close(ys, yt, msg="eval output")
    yt.pow(2).sum().backward()
    ys.pow(2).sum().backward()
    _close(xs.grad, xt.grad, msg="eval input gradient")
    for (name, a), b in zip(tm.state_dict().items(), sm.state_dict().values()):
        _close(b, a, msg=f"{name} after eval")  # eval leaves the statistics alone


def test_batchnorm_float32_and_errors():
    tm, sm = torch.nn.BatchNorm2d(3), nn.BatchNorm2d(3)
    for _ in range(2):
        x = arr(4, 3, 5, 5, dtype=np.float32) * 2 + 1
        yt, ys = tm(torch.tensor(x)), sm(sg.tensor(x))
        _close(ys, yt, rtol=1e-5, atol=1e-5)
    _close(sm.running_var, tm.running_var, rtol=1e-6, atol=1e-6)
    assert sm.running_mean.dtype == sg.float32
    raises_like(torch, lambda: tm(torch.ones(2, 3)), lambda: sm(sg.ones(2, 3)))
    raises_like(
        torch,
        lambda: torch.nn.BatchNorm1d(3)(torch.ones(2, 3, 1, 1)),
        lambda: nn.BatchNorm1d(3)(sg.ones(2, 3, 1, 1)),
    )
    raises_like(
        torch,
        lambda: torch.nn.BatchNorm1d(3)(torch.ones(1, 3)),
        lambda: nn.BatchNorm1d(3)(sg.ones(1, 3)),
    )


def test_batchnorm_loads_a_checkpoint_without_num_batches_tracked():
    sm = nn.BatchNorm1d(2)
    sm.num_batches_tracked.fill_(5)
    state = nn.BatchNorm1d(2).state_dict()  # a version-1 checkpoint had no counter
    del state["num_batches_tracked"]
    state._metadata[""] = {"version": 1}
    sm.load_state_dict(state)
    assert int(sm.num_batches_tracked) == 5  # the module keeps its own count, as torch


def _convnet(lib):
    nn_ = lib.nn
    return nn_.Sequential(
        nn_.Conv2d(1, 4, 3, padding=1),
        nn_.BatchNorm2d(4),
        nn_.ReLU(),
        nn_.MaxPool2d(2),
        nn_.Conv2d(4, 6, 3, stride=2, groups=2),
        nn_.ReLU(),
        nn_.AdaptiveAvgPool2d((2, 2)),
        nn_.Flatten(),
        nn_.Linear(24, 3),
    )


def test_small_convnet_trains_as_torch():
    """Conv-BN-ReLU-MaxPool-Conv-ReLU-AdaptiveAvgPool-Flatten-Linear, 3 SGD steps, float64.

    torch's side steps by hand (p -= lr * grad, what its SGD does without momentum): its
    optimizer's first step imports torch._dynamo, seconds of CPU this test need not spend."""
    tm, sm = _convnet(torch).double(), _convnet(sg).double()
    assert repr(sm) == repr(tm)
    _copy(tm, sm)
    sopt = sg.optim.SGD(sm.parameters(), lr=0.1)
    x, y = arr(8, 1, 10, 10), R.integers(0, 3, 8)
    losses = []
    for _ in range(3):
        lt = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(y))
        ls = F.cross_entropy(sm(sg.tensor(x)), sg.tensor(y))
        losses.append((ls.item(), lt.item()))
        tm.zero_grad()
        sopt.zero_grad()
        lt.backward()
        ls.backward()
        with torch.no_grad():
            for p in tm.parameters():
                p -= 0.1 * p.grad
        sopt.step()
    np.testing.assert_allclose([s for s, _ in losses], [t for _, t in losses], rtol=1e-10)
    assert losses[-1][1] < losses[0][1]
    for (name, a), b in zip(tm.state_dict().items(), sm.state_dict().values()):
        _close(b, a, rtol=1e-9, atol=1e-11, msg=name)
