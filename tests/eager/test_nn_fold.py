"""nn.Unfold / nn.Fold and F.unfold / F.fold against torch (float64): the columns, the
folded sums (overlapping blocks add up), the gradient through both, reprs, and torch's
errors, over kernel sizes, dilations, paddings, strides and unbatched inputs."""

import itertools

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")


def program(lib, shape, kernel, dilation, padding, stride):
    values = np.sin(np.arange(int(np.prod(shape))) * 1.3).reshape(shape)
    x = lib.tensor(values, requires_grad=True)
    unfold = lib.nn.Unfold(kernel, dilation, padding, stride)
    fold = lib.nn.Fold(shape[-2:], kernel, dilation, padding, stride)
    try:
        cols = unfold(x)
    except RuntimeError as e:  # a kernel larger than the input: the message is compared
        return (str(e),)
    back = fold(cols * 1.5)
    (back * lib.tensor(np.cos(np.arange(back.numel())).reshape(tuple(back.shape)))).sum().backward()
    return repr(unfold), repr(fold), cols, back, x.grad


@pytest.mark.parametrize(
    "shape, kernel, dilation, padding, stride",
    list(
        itertools.product(
            [(2, 3, 5, 6), (3, 4, 4)], [2, (3, 2)], [1, (2, 1)], [0, (0, 2)], [1, (2, 3)]
        )
    ),
)
def test_unfold_and_fold_match_torch(shape, kernel, dilation, padding, stride):
    args = (shape, kernel, dilation, padding, stride)
    expected, got = program(torch, *args), program(sg, *args)
    assert len(got) == len(expected)
    assert got[:2] == expected[:2]
    for a, b in zip(expected[2:], got[2:]):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.nn.functional.unfold(lib.zeros(2, 3), 2),
        lambda lib: lib.nn.functional.unfold(lib.zeros(1, 1, 2, 2, 2), 1),
        lambda lib: lib.nn.functional.unfold(lib.zeros(1, 1, 2, 2), 3),
        lambda lib: lib.nn.functional.unfold(lib.zeros(1, 2, 3, 3).long(), 2),
        lambda lib: lib.nn.functional.fold(lib.zeros(1, 7, 4), (3, 3), 2),
        lambda lib: lib.nn.functional.fold(lib.zeros(1, 8, 5), (3, 3), 2),
        lambda lib: lib.nn.functional.fold(lib.zeros(1, 8, 4, 1), (3, 3), 2),
    ],
)
def test_fold_errors_match_torch(call):
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(Exception) as got:
        call(sg)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)
