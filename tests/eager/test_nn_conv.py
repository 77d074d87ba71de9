"""Convolutions of `sourcegrad.nn` against torch: F.conv1d/2d/3d, F.conv_transpose1d/2d/3d
and the Conv/ConvTranspose modules (values, gradients of input, weight and bias, node names,
second derivatives, parameters, reprs, error messages)."""

import itertools
import warnings

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.nn.functional as F
from sourcegrad import nn

from .spatial_helpers import compare_fn, one_torch_thread, raises_like, to_np  # noqa: F401

torch = pytest.importorskip("torch")

R = np.random.default_rng(2024)


def arr(*shape, dtype=np.float64):
    return R.standard_normal(shape).astype(dtype)


# (stride, padding, dilation, groups) over a grid; channels 4 -> 6 so groups 1 and 2 fit
CONV2D_GRID = list(itertools.product([1, (2, 3)], [0, 1, (2, 0)], [1, 2], [1, 2]))


@pytest.mark.parametrize("stride, padding, dilation, groups", CONV2D_GRID)
def test_conv2d_grid_float64(stride, padding, dilation, groups):
    x, w, b = arr(2, 4, 7, 6), arr(6, 4 // groups, 3, 2), arr(6)
    compare_fn(
        torch,
        "conv2d",
        [x, w, b],
        dict(stride=stride, padding=padding, dilation=dilation, groups=groups),
    )


@pytest.mark.parametrize(
    "stride, padding, dilation, groups",
    [(1, 0, 1, 1), (3, 2, 1, 3), (2, 1, 2, 1), (3, 0, 2, 3), (1, 2, 2, 3)],
)
def test_conv1d_grid_float64(stride, padding, dilation, groups):
    x, w = arr(2, 3, 11), arr(6, 3 // groups, 3)
    compare_fn(
        torch,
        "conv1d",
        [x, w, None],
        dict(stride=stride, padding=padding, dilation=dilation, groups=groups),
    )


@pytest.mark.parametrize(
    "stride, padding, output_padding, dilation, groups",
    [
        (1, 0, 0, 1, 1),
        (2, 1, 1, 1, 1),
        (2, 0, 1, 1, 2),
        (3, 2, 2, 1, 1),
        ((2, 3), (1, 0), (1, 2), 1, 2),
        (1, 1, 1, 2, 1),
        (2, 1, 0, 2, 2),
    ],
)
def test_conv_transpose2d_float64(stride, padding, output_padding, dilation, groups):
    x, w, b = arr(2, 4, 5, 4), arr(4, 6 // groups, 3, 2), arr(6)
    compare_fn(
        torch,
        "conv_transpose2d",
        [x, w, b],
        dict(
            stride=stride,
            padding=padding,
            output_padding=output_padding,
            dilation=dilation,
            groups=groups,
        ),
    )


def test_conv3d_and_conv_transpose1d_3d():
    compare_fn(
        torch,
        "conv3d",
        [arr(1, 2, 5, 4, 4), arr(4, 1, 2, 3, 2), arr(4)],
        dict(stride=(1, 2, 1), padding=1, groups=2),
    )
    compare_fn(
        torch,
        "conv_transpose1d",
        [arr(2, 3, 6), arr(3, 2, 4), arr(2)],
        dict(stride=2, padding=1, output_padding=1),
    )
    compare_fn(
        torch, "conv_transpose3d", [arr(1, 2, 3, 2, 3), arr(2, 2, 2, 2, 2), None], dict(stride=2)
    )


@pytest.mark.parametrize(
    "padding, kernel, dilation",
    [("same", (3, 3), 1), ("same", (2, 4), 1), ("same", (3, 2), 2), ("valid", (3, 2), 1)],
)
def test_conv2d_padding_strings(padding, kernel, dilation):
    x, w = arr(2, 3, 6, 7), arr(5, 3, *kernel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note about a zero-padded copy
        ys, yt = compare_fn(
            torch, "conv2d", [x, w, arr(5)], dict(padding=padding, dilation=dilation)
        )
    if padding == "same":
        assert tuple(ys.shape[2:]) == (6, 7)
    # an even kernel pads the right end first, ConstantPadNdBackward0 as torch
    assert [type(f).__name__ for f, _ in ys.grad_fn.next_functions if f is not None] == [
        type(f).__name__ for f, _ in yt.grad_fn.next_functions if f is not None
    ]


def test_conv_unbatched_input_and_float32():
    ys, _ = compare_fn(torch, "conv2d", [arr(3, 6, 6), arr(4, 3, 3, 3), arr(4)], dict(padding=1))
    assert type(ys.grad_fn).__name__ == "SqueezeBackward1"
    compare_fn(
        torch,
        "conv2d",
        [
            arr(2, 4, 9, 8, dtype=np.float32),
            arr(6, 2, 3, 3, dtype=np.float32),
            arr(6, dtype=np.float32),
        ],
        dict(stride=2, padding=1, groups=2),
        rtol=1e-5,
        atol=1e-5,
    )
    compare_fn(
        torch,
        "conv_transpose2d",
        [arr(2, 4, 5, 5, dtype=np.float32), arr(4, 3, 3, 3, dtype=np.float32), None],
        dict(stride=2, padding=1, output_padding=1),
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize("transposed", [False, True])
def test_conv_second_derivatives_match_torch(transposed):
    x = arr(2, 4, 6, 5)
    w = arr(4, 3, 3, 2) if transposed else arr(6, 2, 3, 2)
    b = arr(6)
    conv_t = torch.nn.functional.conv_transpose2d if transposed else torch.nn.functional.conv2d
    conv_s = F.conv_transpose2d if transposed else F.conv2d
    kw = dict(stride=(2, 1), padding=(1, 0), groups=2, dilation=(1, 2))
    if transposed:
        kw["output_padding"] = (1, 0)
    got = []
    for lib, conv in ((torch, conv_t), (sg, conv_s)):
        ts = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = conv(*ts, **kw)
        gx, gw, gb = lib.autograd.grad((y * y * y).sum(), ts, create_graph=True)
        ((gx * gx).sum() + (gw * gw * gw).sum() + (gb * gb).sum()).backward()
        got.append([to_np(t.grad) for t in ts])
    for a, e in zip(*got):
        np.testing.assert_allclose(e, a, rtol=1e-9, atol=1e-9)


def test_conv_errors_match_torch():
    x = arr(2, 3, 8, 8)
    cases = [
        lambda lib, Fn: Fn.conv2d(lib.tensor(x), lib.tensor(arr(4, 2, 3, 3))),
        lambda lib, Fn: Fn.conv2d(lib.tensor(x), lib.tensor(arr(4, 3, 9, 9))),
        lambda lib, Fn: Fn.conv2d(lib.tensor(x), lib.tensor(arr(4, 3, 3, 3)), groups=2),
        lambda lib, Fn: Fn.conv2d(
            lib.tensor(x), lib.tensor(arr(4, 3, 3, 3)), stride=2, padding="same"
        ),
        lambda lib, Fn: Fn.conv2d(lib.tensor(x[0, 0]), lib.tensor(arr(4, 3, 3, 3))),
        lambda lib, Fn: Fn.conv2d(lib.tensor(x), lib.tensor(arr(4, 3, 3, 3)), padding="foo"),
        lambda lib, Fn: Fn.conv2d(lib.tensor(x), lib.tensor(arr(4, 3, 3, 3)), lib.tensor(arr(3))),
        lambda lib, Fn: Fn.conv2d(lib.tensor(x), lib.tensor(arr(4, 3, 3, 3, dtype=np.float32))),
        lambda lib, Fn: Fn.conv2d(lib.tensor(x), lib.tensor(arr(4, 3, 3, 3)), stride=0),
        lambda lib, Fn: Fn.conv2d(lib.tensor(x), lib.tensor(arr(4, 3, 3, 3)), padding=-1),
        lambda lib, Fn: Fn.conv1d(lib.tensor(x), lib.tensor(arr(4, 3, 3))),
        lambda lib, Fn: Fn.conv_transpose2d(
            lib.tensor(x), lib.tensor(arr(3, 4, 3, 3)), stride=2, output_padding=2
        ),
        lambda lib, Fn: Fn.conv_transpose2d(lib.tensor(x), lib.tensor(arr(4, 4, 3, 3))),
    ]
    import torch.nn.functional as TF

    for case in cases:
        raises_like(torch, lambda: case(torch, TF), lambda: case(sg, F))


def _copy(src, dst):
    dst.load_state_dict(
        {k: sg.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    )


@pytest.mark.parametrize(
    "cls, args, kwargs, shape",
    [
        ("Conv1d", (3, 4, 3), dict(stride=2, padding=1), (2, 3, 9)),
        ("Conv2d", (4, 6, (3, 3)), dict(padding="same", groups=2, bias=False), (2, 4, 6, 5)),
        ("Conv2d", (3, 4, 3), dict(padding=1, padding_mode="reflect"), (2, 3, 6, 5)),
        (
            "Conv2d",
            (3, 4, 3),
            dict(padding=(1, 2), padding_mode="circular", dilation=2),
            (2, 3, 7, 6),
        ),
        ("Conv2d", (3, 4, 3), dict(padding=1, padding_mode="replicate", stride=2), (2, 3, 6, 5)),
        (
            "ConvTranspose2d",
            (4, 6, 3),
            dict(stride=2, padding=1, output_padding=1, groups=2),
            (2, 4, 4, 3),
        ),
        ("ConvTranspose1d", (3, 2, 4), dict(stride=3, dilation=2), (2, 3, 5)),
        ("Conv3d", (2, 2, 2), dict(), (1, 2, 3, 3, 3)),
    ],
)
def test_conv_modules_match_torch(cls, args, kwargs, shape):
    tm = getattr(torch.nn, cls)(*args, **kwargs).double()
    sm = getattr(nn, cls)(*args, **kwargs).double()
    assert repr(sm) == repr(tm)
    assert [(k, tuple(v.shape)) for k, v in sm.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in tm.state_dict().items()
    ]
    # torch's initialisation bounds: kaiming_uniform(a=sqrt(5)) is U(-1/sqrt(fan_in), ...)
    fan_in = sm.weight.shape[1] * int(np.prod(sm.weight.shape[2:]))
    assert np.abs(to_np(sm.weight)).max() <= 1 / np.sqrt(fan_in)
    assert np.abs(to_np(sm.weight)).max() > 0.5 / np.sqrt(fan_in)
    _copy(tm, sm)
    x = arr(*shape)
    xt, xs = torch.tensor(x, requires_grad=True), sg.tensor(x, requires_grad=True)
    yt, ys = tm(xt), sm(xs)
    np.testing.assert_allclose(to_np(ys), to_np(yt), rtol=1e-10, atol=1e-12)
    r = R.standard_normal(tuple(yt.shape))
    (yt * torch.tensor(r)).sum().backward()
    (ys * sg.tensor(r)).sum().backward()
    np.testing.assert_allclose(to_np(xs.grad), to_np(xt.grad), rtol=1e-10, atol=1e-12)
    for (name, p), q in zip(tm.named_parameters(), sm.parameters()):
        np.testing.assert_allclose(
            to_np(q.grad), to_np(p.grad), rtol=1e-10, atol=1e-12, err_msg=name
        )


def test_conv_transpose_output_size():
    tm, sm = (
        torch.nn.ConvTranspose2d(2, 3, 3, stride=2).double(),
        nn.ConvTranspose2d(2, 3, 3, stride=2).double(),
    )
    _copy(tm, sm)
    x = arr(1, 2, 4, 4)
    yt, ys = tm(torch.tensor(x), output_size=[10, 9]), sm(sg.tensor(x), output_size=[10, 9])
    assert tuple(ys.shape) == tuple(yt.shape) == (1, 3, 10, 9)
    np.testing.assert_allclose(to_np(ys), to_np(yt), rtol=1e-10, atol=1e-12)
    raises_like(
        torch,
        lambda: tm(torch.tensor(x), output_size=[12, 9]),
        lambda: sm(sg.tensor(x), output_size=[12, 9]),
    )


def test_conv_module_argument_errors_match_torch():
    for kwargs in (dict(groups=0), dict(groups=2), dict(padding="same", stride=2)):
        raises_like(
            torch, lambda: torch.nn.Conv2d(3, 4, 3, **kwargs), lambda: nn.Conv2d(3, 4, 3, **kwargs)
        )
    # these messages print a set, whose order varies between processes (string hashing):
    # torch's own order comes from its cached bytecode, so compare the rest of the message
    for kwargs, words in (
        (dict(padding="full"), ("'same'", "'valid'")),
        (dict(padding_mode="zero"), ("'zeros'", "'reflect'", "'replicate'", "'circular'")),
    ):
        with pytest.raises(ValueError) as expected:
            torch.nn.Conv2d(3, 4, 3, **kwargs)
        with pytest.raises(ValueError) as got:
            nn.Conv2d(3, 4, 3, **kwargs)
        head, tail = str(expected.value).split("{")[0], str(expected.value).split("}")[1]
        assert str(got.value).startswith(head) and str(got.value).endswith(tail)
        assert all(w in str(got.value) for w in words)
    raises_like(
        torch,
        lambda: torch.nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect"),
        lambda: nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect"),
    )
