"""nn.PixelShuffle / PixelUnshuffle / ChannelShuffle and their F functions against torch:
values, gradients (float64), reprs, and torch's errors and messages."""

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")


def run(lib, module, shape):
    x = lib.tensor(np.sin(np.arange(int(np.prod(shape))) * 1.3).reshape(shape), requires_grad=True)
    y = module(x)
    (y * lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))).sum().backward()
    return repr(module), y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda nn: nn.PixelShuffle(2), (2, 8, 3, 2)),
        (lambda nn: nn.PixelShuffle(3), (2, 1, 9, 2, 2)),
        (lambda nn: nn.PixelShuffle(1), (2, 3, 2)),
        (lambda nn: nn.PixelUnshuffle(2), (2, 2, 4, 6)),
        (lambda nn: nn.PixelUnshuffle(3), (3, 6, 3)),
        (lambda nn: nn.ChannelShuffle(2), (2, 4, 3, 2)),
        (lambda nn: nn.ChannelShuffle(3), (2, 6, 5)),
    ],
)
def test_shuffles_match_torch(make, shape):
    expected = run(torch, make(torch.nn), shape)
    got = run(sg, make(sg.nn), shape)
    assert got[0] == expected[0]
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[2], expected[2])


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.nn.functional.pixel_shuffle(lib.zeros(1, 3, 2, 2), 2),
        lambda lib: lib.nn.functional.pixel_shuffle(lib.zeros(3, 2), 2),
        lambda lib: lib.nn.functional.pixel_shuffle(lib.zeros(1, 4, 2, 2), -1),
        lambda lib: lib.nn.functional.pixel_unshuffle(lib.zeros(1, 3, 3, 2), 2),
        lambda lib: lib.nn.functional.pixel_unshuffle(lib.zeros(1, 3, 4, 3), 2),
        lambda lib: lib.nn.functional.pixel_unshuffle(lib.zeros(1, 3, 4, 2), 0),
        lambda lib: lib.nn.functional.channel_shuffle(lib.zeros(1, 3, 2, 2), 2),
        lambda lib: lib.nn.functional.channel_shuffle(lib.zeros(2, 4), 2),
        lambda lib: lib.nn.functional.channel_shuffle(lib.zeros(1, 4, 2, 2), 0),
    ],
)
def test_shuffle_errors_match_torch(call):
    with pytest.raises(RuntimeError) as expected:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(sg)
    assert str(got.value) == str(expected.value)
