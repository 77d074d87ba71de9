"""nn.AdaptiveMaxPool1d/2d, nn.LPPool1d/2d and nn.LocalResponseNorm (and their F functions)
against torch (float64): outputs, indices, gradients (with ties, as after a ReLU: torch sends
a window's gradient to its first maximum only), reprs, a nan maximum, and torch's errors."""

import itertools

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

CASES = [
    ("AdaptiveMaxPool2d((3, 2))", (2, 3, 7, 5)),
    ("AdaptiveMaxPool2d(1)", (2, 3, 4, 4)),
    ("AdaptiveMaxPool2d((None, 3))", (3, 5, 7)),
    ("AdaptiveMaxPool2d(4)", (1, 2, 3, 3)),
    ("AdaptiveMaxPool1d(3)", (2, 3, 8)),
    ("AdaptiveMaxPool1d(5)", (3, 4)),
    ("AdaptiveMaxPool2d((2, 3), return_indices=True)", (2, 3, 7, 5)),
    ("AdaptiveMaxPool1d(3, True)", (2, 3, 8)),
    ("LPPool2d(2, 2)", (2, 3, 4, 5)),
    ("LPPool2d(1.5, (3, 2), stride=(2, 1), ceil_mode=True)", (2, 3, 7, 5)),
    ("LPPool1d(3, 2, stride=1)", (2, 3, 7)),
    ("LPPool2d(1, 2)", (1, 2, 4, 4)),
    ("LocalResponseNorm(3)", (2, 5, 3, 3)),
    ("LocalResponseNorm(2, alpha=0.1, beta=0.5, k=2.0)", (2, 4, 6)),
    ("LocalResponseNorm(4)", (2, 6, 2, 2, 2)),
]


def program(lib, expr, shape, ties):
    module = eval("lib.nn." + expr)  # noqa: S307 - the constructors above
    values = np.sin(np.arange(int(np.prod(shape))) * 1.7).reshape(shape)
    if ties or expr.startswith("LPPool"):
        values = np.maximum(values, 0)  # (odd powers of negative sums are nan in torch too)
    x = lib.tensor(values, requires_grad=True)
    y = module(x)
    indices = None
    if isinstance(y, tuple):
        y, indices = y
    (y * lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))).sum().backward()
    return repr(module), y, x.grad, indices


@pytest.mark.parametrize("case, ties", list(itertools.product(CASES, (False, True))))
def test_extra_pooling_matches_torch(case, ties):
    expected, got = program(torch, *case, ties), program(sg, *case, ties)
    assert got[0] == expected[0]
    for a, b in zip(expected[1:], got[1:]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(
                b.detach().numpy(), a.detach().numpy(), rtol=1e-10, atol=1e-12
            )


def test_adaptive_max_pool_takes_nan_as_torch():
    results = []
    for lib in (torch, sg):
        x = lib.tensor([[[1.0, float("nan"), 3.0, 2.0]]])
        out, index = lib.nn.functional.adaptive_max_pool1d(x, 2, return_indices=True)
        results.append((out.numpy(), index.numpy()))
    np.testing.assert_array_equal(results[1][0], results[0][0])
    np.testing.assert_array_equal(results[1][1], results[0][1])


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.nn.functional.adaptive_max_pool2d(lib.zeros(3, 4), 2),
        lambda lib: lib.nn.functional.adaptive_max_pool1d(lib.zeros(3, 4, 5), (2, 3)),
        lambda lib: lib.nn.functional.adaptive_max_pool2d(lib.zeros(1, 1, 3, 4), (2, 3, 4)),
        lambda lib: lib.nn.functional.adaptive_max_pool1d(lib.zeros(2, 3, 4, 5), 2),
    ],
)
def test_adaptive_max_pool_errors_match_torch(call):
    with pytest.raises(RuntimeError) as expected:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(sg)
    assert str(got.value) == str(expected.value)
