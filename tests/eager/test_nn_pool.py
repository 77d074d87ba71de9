"""Pooling, padding, interpolation and one_hot of `sourcegrad.nn` against torch: values,
gradients, node names, returned indices, modules' reprs and error messages."""

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.nn.functional as F
from sourcegrad import nn

from .spatial_helpers import compare_fn, one_torch_thread, raises_like, to_np  # noqa: F401

torch = pytest.importorskip("torch")

R = np.random.default_rng(7)


def arr(*shape, dtype=np.float64):
    return R.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize(
    "kernel, stride, padding, dilation, ceil_mode",
    [
        (2, None, 0, 1, False),
        (3, 2, 1, 1, False),
        (3, 2, 1, 1, True),
        ((2, 3), (2, 1), (1, 1), 2, False),
        (3, 3, 1, 1, True),
        (2, 1, 0, 2, True),
        ((3, 2), (3, 2), (1, 0), 1, True),
    ],
)
def test_max_pool2d(kernel, stride, padding, dilation, ceil_mode):
    x = arr(2, 3, 7, 8)
    for return_indices in (False, True):
        compare_fn(
            torch,
            "max_pool2d",
            [x],
            dict(
                kernel_size=kernel,
                stride=stride,
                padding=padding,
                dilation=dilation,
                ceil_mode=ceil_mode,
                return_indices=return_indices,
            ),
        )


def test_max_pool_ties_nan_unbatched_and_float32():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = np.nan
    compare_fn(torch, "max_pool2d", [x], dict(kernel_size=2, return_indices=True), grads=False)
    ties = np.round(arr(2, 2, 6, 6))  # many equal values: the first maximum wins, as torch
    compare_fn(
        torch, "max_pool2d", [ties], dict(kernel_size=3, stride=1, padding=1, return_indices=True)
    )
    compare_fn(torch, "max_pool2d", [arr(3, 5, 6)], dict(kernel_size=2, return_indices=True))
    compare_fn(
        torch,
        "max_pool2d",
        [arr(2, 3, 8, 8, dtype=np.float32)],
        dict(kernel_size=3, stride=2, padding=1),
        rtol=1e-6,
        atol=1e-6,
    )


@pytest.mark.parametrize(
    "kwargs",
    [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)],
)
def test_max_pool1d(kwargs):
    ys, _ = compare_fn(torch, "max_pool1d", [arr(2, 3, 9)], kwargs)
    assert type(ys.grad_fn.next_functions[0][0]).__name__ == "MaxPool2DWithIndicesBackward0"
    compare_fn(torch, "max_pool1d", [arr(3, 9)], dict(kwargs, return_indices=True))


@pytest.mark.parametrize(
    "kernel, stride, padding, ceil_mode, count_include_pad, divisor",
    [
        (2, None, 0, False, True, None),
        (3, 2, 1, False, True, None),
        (3, 2, 1, False, False, None),
        (3, 2, 1, True, True, None),
        (3, 2, 1, True, False, None),
        ((3, 2), (2, 3), (1, 1), True, False, None),
        (2, 1, 1, False, True, 3),
        ((3, 1), 2, (1, 0), True, True, 5),
    ],
)
def test_avg_pool2d(kernel, stride, padding, ceil_mode, count_include_pad, divisor):
    compare_fn(
        torch,
        "avg_pool2d",
        [arr(2, 3, 7, 6)],
        dict(
            kernel_size=kernel,
            stride=stride,
            padding=padding,
            ceil_mode=ceil_mode,
            count_include_pad=count_include_pad,
            divisor_override=divisor,
        ),
    )


def test_avg_pool1d_and_float32():
    ys, _ = compare_fn(
        torch,
        "avg_pool1d",
        [arr(2, 3, 9)],
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    )
    assert type(ys.grad_fn.next_functions[0][0]).__name__ == "AvgPool2DBackward0"
    compare_fn(
        torch,
        "avg_pool2d",
        [arr(2, 3, 8, 8, dtype=np.float32)],
        dict(kernel_size=3, stride=2, padding=1),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize("size", [1, (1, 1), 3, (2, 5), (None, 3), (7, 6), (4, 1)])
def test_adaptive_avg_pool2d(size):
    compare_fn(torch, "adaptive_avg_pool2d", [arr(2, 3, 7, 6)], dict(output_size=size))
    compare_fn(torch, "adaptive_avg_pool2d", [arr(3, 7, 6)], dict(output_size=size))


def test_adaptive_avg_pool1d():
    ys, _ = compare_fn(torch, "adaptive_avg_pool1d", [arr(2, 3, 10)], dict(output_size=4))
    assert type(ys.grad_fn.next_functions[0][0]).__name__ == "AdaptiveAvgPool2DBackward0"


def test_pooling_errors_match_torch():
    import torch.nn.functional as TF

    x = arr(2, 3, 8, 8)
    cases = [
        lambda Fn, lib: Fn.max_pool2d(lib.tensor(x), 3, padding=2),
        lambda Fn, lib: Fn.max_pool2d(lib.tensor(x), 9),
        lambda Fn, lib: Fn.avg_pool2d(lib.tensor(x), 3, padding=2),
        lambda Fn, lib: Fn.max_pool2d(lib.tensor(x), 2, stride=0),
        lambda Fn, lib: Fn.avg_pool2d(lib.tensor(x), 2, divisor_override=0),
        lambda Fn, lib: Fn.adaptive_avg_pool2d(lib.tensor(x), (2, 3, 4)),
    ]
    for case in cases:
        raises_like(torch, lambda: case(TF, torch), lambda: case(F, sg))


@pytest.mark.parametrize(
    "mode, widths, shape",
    [
        ("constant", (1, 2), (2, 3, 4)),
        ("constant", (1, 2, 0, 3), (2, 3, 4, 5)),
        ("constant", (-1, 2, 1, -2), (2, 3, 4, 5)),
        ("constant", (1, 1, 1, 1, 1, 1, 1, 1), (2, 3, 4, 5)),
        ("reflect", (2, 1), (2, 3, 4)),
        ("reflect", (1, 3, 2, 0), (2, 3, 4, 5)),
        ("reflect", (-1, 2, 1, 1), (1, 3, 4, 5)),
        ("reflect", (1, 1, 2, 2), (3, 4, 5)),
        ("replicate", (3, 1), (2, 3, 4)),
        ("replicate", (2, 0, 5, 1), (2, 3, 4, 5)),
        ("replicate", (1, 1, 1, 1, 1, 1), (1, 2, 3, 4, 3)),
        ("circular", (2, 1), (2, 3, 4)),
        ("circular", (1, 3, 2, 0), (2, 3, 4, 5)),
        ("circular", (-1, 2, 1, -1), (2, 3, 4, 5)),
    ],
)
def test_pad(mode, widths, shape):
    kwargs = dict(mode=mode)
    if mode == "constant":
        kwargs["value"] = 0.75
    ys, yt = compare_fn(torch, "pad", [arr(*shape), widths], kwargs, node=False)
    if mode != "circular":  # torch copies slices into an empty tensor (CopySlices)
        assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__


def test_pad_errors_match_torch():
    import torch.nn.functional as TF

    x = arr(1, 1, 3, 3)
    cases = [
        ((1, 2, 3), {}),
        ((1,) * 10, {}),
        ((3, 3), dict(mode="reflect")),
        ((1, 1), dict(mode="reflect", value=1.0)),
        ((3, 3, 1, 1), dict(mode="reflect")),
        ((4, 1, 1, 1), dict(mode="circular")),
        ((-2, -2), {}),
        ((1, 1), dict(mode="foo")),
        ((1, 1, 1, 1, 1, 1, 1, 1), dict(mode="replicate")),
    ]
    for widths, kwargs in cases:
        raises_like(
            torch,
            lambda: TF.pad(torch.tensor(x), widths, **kwargs),
            lambda: F.pad(sg.tensor(x), widths, **kwargs),
        )


@pytest.mark.parametrize(
    "shape, kwargs",
    [
        ((2, 3, 5, 4), dict(scale_factor=2)),
        ((2, 3, 5, 4), dict(size=(7, 3))),
        ((2, 3, 5, 4), dict(scale_factor=(1.7, 0.6))),
        ((2, 3, 6, 5), dict(size=4)),
        ((2, 3, 5, 4), dict(scale_factor=1.5, recompute_scale_factor=True)),
        ((2, 3, 7), dict(size=12)),
        ((2, 3, 7), dict(scale_factor=0.5)),
        ((2, 3, 5, 4), dict(size=(7, 9), mode="bilinear")),
        ((2, 3, 5, 4), dict(size=(7, 9), mode="bilinear", align_corners=True)),
        ((2, 3, 5, 4), dict(scale_factor=1.6, mode="bilinear")),
        ((2, 3, 8, 6), dict(size=(3, 4), mode="bilinear")),
        ((2, 3, 8, 6), dict(size=(1, 1), mode="bilinear", align_corners=True)),
        ((2, 3, 7), dict(size=11, mode="linear")),
        ((2, 3, 7), dict(size=3, mode="linear", align_corners=True)),
        ((2, 3, 7, 5), dict(size=(3, 2), mode="area")),
    ],
)
def test_interpolate(shape, kwargs):
    compare_fn(torch, "interpolate", [arr(*shape)], kwargs)


def test_interpolate_float32_and_errors():
    compare_fn(
        torch,
        "interpolate",
        [arr(2, 3, 5, 4, dtype=np.float32)],
        dict(scale_factor=1.7, mode="bilinear"),
        rtol=1e-5,
        atol=1e-6,
    )
    x32 = arr(2, 3, 5, 4, dtype=np.float32)
    # nearest picks the source index in float32 as torch's kernel: the same elements exactly
    compare_fn(torch, "interpolate", [x32], dict(size=(9, 11)), rtol=0, atol=0, grads=False)
    compare_fn(torch, "interpolate", [x32], dict(scale_factor=1.3), rtol=1e-6, atol=1e-6)
    import torch.nn.functional as TF

    x = arr(2, 3, 8, 8)
    cases = [dict(size=5, align_corners=True), dict(size=(5,)), dict(size=5, scale_factor=2)]
    for kwargs in cases:
        raises_like(
            torch,
            lambda: TF.interpolate(torch.tensor(x), **kwargs),
            lambda: F.interpolate(sg.tensor(x), **kwargs),
        )
    raises_like(
        torch,
        lambda: TF.interpolate(torch.tensor(x[0]), size=5, mode="bilinear"),
        lambda: F.interpolate(sg.tensor(x[0]), size=5, mode="bilinear"),
    )
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.interpolate(sg.tensor(x), size=5, mode="bicubic")


def test_one_hot():
    import torch.nn.functional as TF

    for args in (([1, 0, 3],), ([[1, 2], [0, 0]], 5), ([], 3)):
        t = TF.one_hot(torch.tensor(args[0], dtype=torch.long), *args[1:])
        s = F.one_hot(sg.tensor(args[0], dtype=sg.int64), *args[1:])
        assert s.dtype == sg.int64 and tuple(s.shape) == tuple(t.shape)
        np.testing.assert_array_equal(to_np(s), t.numpy())
    for values, dtype, n in (
        ([1, 2], "int32", -1),
        ([-1, 2], "int64", -1),
        ([1, 5], "int64", 3),
        ([], "int64", -1),
    ):
        raises_like(
            torch,
            lambda: TF.one_hot(torch.tensor(values, dtype=getattr(torch, dtype)), n),
            lambda: F.one_hot(sg.tensor(values, dtype=getattr(sg, dtype)), n),
        )


@pytest.mark.parametrize(
    "cls, args, kwargs, shape",
    [
        ("MaxPool2d", (3,), dict(stride=2, padding=1), (2, 3, 7, 7)),
        ("MaxPool2d", ((2, 3),), dict(dilation=2, ceil_mode=True), (2, 3, 9, 9)),
        ("MaxPool1d", (2,), {}, (2, 3, 7)),
        ("AvgPool2d", (3,), dict(stride=2, padding=1, count_include_pad=False), (2, 3, 7, 7)),
        ("AvgPool1d", (3,), dict(stride=2), (2, 3, 7)),
        ("AdaptiveAvgPool2d", ((2, 3),), {}, (2, 3, 7, 7)),
        ("AdaptiveAvgPool2d", (1,), {}, (2, 3, 7, 7)),
        ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 7)),
    ],
)
def test_pooling_modules(cls, args, kwargs, shape):
    tm, sm = getattr(torch.nn, cls)(*args, **kwargs), getattr(nn, cls)(*args, **kwargs)
    assert repr(sm) == repr(tm)
    assert list(sm.state_dict()) == []
    x = arr(*shape)
    xt, xs = torch.tensor(x, requires_grad=True), sg.tensor(x, requires_grad=True)
    yt, ys = tm(xt), sm(xs)
    np.testing.assert_allclose(to_np(ys), to_np(yt), rtol=1e-12, atol=1e-12)
    assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__
    yt.sum().backward()
    ys.sum().backward()
    np.testing.assert_allclose(to_np(xs.grad), to_np(xt.grad), rtol=1e-12, atol=1e-12)


def test_max_pool_module_return_indices():
    tm, sm = torch.nn.MaxPool2d(2, return_indices=True), nn.MaxPool2d(2, return_indices=True)
    x = arr(1, 2, 4, 6)
    (yt, it), (ys, i_s) = tm(torch.tensor(x)), sm(sg.tensor(x))
    np.testing.assert_array_equal(to_np(i_s), it.numpy())
    np.testing.assert_array_equal(to_np(ys), yt.numpy())


def test_pool_second_derivative_through_the_gather():
    """max_pool2d's VJP (a scatter-add) is differentiable: d/dx of <grad, v> as torch."""
    x, v = arr(1, 2, 5, 5), arr(1, 2, 5, 5)
    got = []
    for lib in (torch, sg):
        Fn = torch.nn.functional if lib is torch else F
        xt = lib.tensor(x, requires_grad=True)
        y = Fn.max_pool2d(xt * xt, 3, stride=1, padding=1)
        (g,) = lib.autograd.grad((y * y).sum(), xt, create_graph=True)
        (g * lib.tensor(v)).sum().backward()
        got.append(to_np(xt.grad))
    np.testing.assert_allclose(got[1], got[0], rtol=1e-10, atol=1e-12)


def test_integer_inputs_as_torch():
    """Integer pools and convolutions compute exactly (avg_pool2d rounds toward zero); the
    ops torch does not implement for integers refuse them (never a zero-weight average)."""
    import torch.nn.functional as TF

    x = np.arange(2 * 3 * 7 * 6).reshape(2, 3, 7, 6) - 100
    for kwargs in (
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        dict(kernel_size=3, stride=2, padding=1, divisor_override=5),
    ):
        yt, ys = TF.avg_pool2d(torch.tensor(x), **kwargs), F.avg_pool2d(sg.tensor(x), **kwargs)
        assert ys.dtype == sg.int64
        np.testing.assert_array_equal(to_np(ys), yt.numpy())
    for name, args in (
        ("max_pool2d", (3, 2, 1)),
        ("pad", ((1, 2, 0, 1), "replicate")),
        ("conv2d", (np.ones((2, 3, 2, 2), np.int64),)),
    ):
        yt = getattr(TF, name)(
            torch.tensor(x), *[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        )
        ys = getattr(F, name)(
            sg.tensor(x), *[sg.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        )
        np.testing.assert_array_equal(to_np(ys), yt.numpy())
    for fn in (
        lambda Fn, lib: Fn.adaptive_avg_pool2d(lib.tensor(x), 3),
        lambda Fn, lib: Fn.batch_norm(lib.tensor(x), None, None, training=True),
    ):
        raises_like(torch, lambda: fn(TF, torch), lambda: fn(F, sg))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.interpolate(sg.tensor(x), size=5)


@pytest.mark.parametrize(
    "cls, args, shape",
    [
        ("ZeroPad2d", (2,), (2, 3, 4, 5)),
        ("ZeroPad2d", ((1, 2, 3, 0),), (3, 4, 5)),
        ("ZeroPad1d", (1,), (2, 3, 4)),
        ("ConstantPad1d", ((2, 1), 3.5), (2, 3, 4)),
        ("ConstantPad2d", (1, -0.5), (2, 3, 4, 5)),
        ("ReflectionPad1d", ((1, 2),), (2, 3, 4)),
        ("ReflectionPad2d", (1,), (2, 3, 4, 5)),
        ("ReplicationPad1d", (3,), (2, 3, 4)),
        ("ReplicationPad2d", ((1, 0, 2, 3),), (2, 3, 4, 5)),
        ("CircularPad1d", (2,), (2, 3, 4)),
        ("CircularPad2d", ((1, 1, 2, 0),), (2, 3, 4, 5)),
        ("Upsample", ((7, 3),), (2, 3, 4, 5)),
        ("Upsample", (None, 2), (2, 3, 4, 5)),
        ("Upsample", (None, (1.5, 2), "bilinear", True), (2, 3, 4, 5)),
        ("Upsample", (6, None, "linear"), (2, 3, 4)),
        ("UpsamplingNearest2d", (None, 3), (1, 2, 3, 3)),
        ("UpsamplingBilinear2d", ((5, 7),), (1, 2, 3, 4)),
    ],
)
def test_padding_and_upsampling_modules(cls, args, shape):
    tm, sm = getattr(torch.nn, cls)(*args), getattr(nn, cls)(*args)
    assert repr(sm) == repr(tm)
    x = arr(*shape)
    xt, xs = torch.tensor(x, requires_grad=True), sg.tensor(x, requires_grad=True)
    yt, ys = tm(xt), sm(xs)
    np.testing.assert_allclose(to_np(ys), to_np(yt), rtol=1e-12, atol=1e-12)
    r = R.standard_normal(tuple(yt.shape))
    (yt * torch.tensor(r)).sum().backward()
    (ys * sg.tensor(r)).sum().backward()
    np.testing.assert_allclose(to_np(xs.grad), to_np(xt.grad), rtol=1e-12, atol=1e-12)
    if not cls.startswith("Circular"):
        assert type(ys.grad_fn).__name__ == type(yt.grad_fn).__name__


def test_circular_pad_module_checks_dims_as_torch():
    raises_like(
        torch,
        lambda: torch.nn.CircularPad2d(1)(torch.ones(2, 3)),
        lambda: nn.CircularPad2d(1)(sg.ones(2, 3)),
    )
