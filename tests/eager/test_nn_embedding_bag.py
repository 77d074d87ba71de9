"""nn.EmbeddingBag and F.embedding_bag against torch (float64).

Every mode (sum, mean, max) on 2-d bags and on 1-d indices with offsets (an empty bag
among them, include_last_offset), with a padding index (positive and negative), per-sample
weights and max_norm: the output, the gradients wrt the weight and the per-sample weights,
the weight after max_norm's in-place renormalisation, the repr, and torch's errors (for
instance per-sample weights outside mode='sum') must be torch's.
"""

import itertools

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

WEIGHT = np.sin(np.arange(40.0)).reshape(10, 4)


def program(lib, mode, two_d, padding_idx, include_last_offset, per_sample, max_norm):
    bag = lib.nn.EmbeddingBag(
        10,
        4,
        mode=mode,
        padding_idx=padding_idx,
        include_last_offset=include_last_offset,
        max_norm=max_norm,
        _weight=lib.tensor(WEIGHT.copy()),
    )
    if two_d:
        indices, offsets = lib.tensor([[1, 2, 4], [4, 3, 2], [0, 0, 9]]), None
    else:
        indices = lib.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0])
        offsets = lib.tensor([0, 2, 2, 5] + ([9] if include_last_offset else []))
    weights = None
    if per_sample:
        values = np.cos(np.arange(indices.numel())).reshape(tuple(indices.shape))
        weights = lib.tensor(values, requires_grad=True)
    try:
        y = bag(indices, offsets, weights)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return [f"{type(e).__name__}: {e}"]
    cosine = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
    (y * cosine).sum().backward()
    return [repr(bag), y, bag.weight.grad, None if weights is None else weights.grad, bag.weight]


@pytest.mark.parametrize(
    "mode, two_d, padding_idx, include_last_offset, per_sample, max_norm",
    list(
        itertools.product(
            ("sum", "mean", "max"),
            (True, False),
            (None, 4, -6),
            (False, True),
            (False, True),
            (None, 0.9),
        )
    ),
)
def test_embedding_bag_matches_torch(
    mode, two_d, padding_idx, include_last_offset, per_sample, max_norm
):
    args = (mode, two_d, padding_idx, include_last_offset, per_sample, max_norm)
    expected, got = program(torch, *args), program(sg, *args)
    assert len(expected) == len(got)
    for a, b in zip(expected, got):
        if isinstance(a, str):
            assert a == b
        elif a is None:
            assert b is None
        else:
            np.testing.assert_allclose(
                b.detach().numpy(), a.detach().numpy(), rtol=1e-10, atol=1e-12
            )


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.nn.functional.embedding_bag(
            lib.tensor([[1, 2]]), lib.zeros(3, 2), offsets=lib.tensor([0])
        ),
        lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2]), lib.zeros(3, 2)),
        lambda lib: lib.nn.functional.embedding_bag(
            lib.tensor([1, 2]), lib.zeros(3, 2), lib.tensor([0]), mode="median"
        ),
        lambda lib: lib.nn.functional.embedding_bag(
            lib.tensor([1, 2]), lib.zeros(3), lib.tensor([0])
        ),
    ],
)
def test_embedding_bag_errors_match_torch(call):
    with pytest.raises(ValueError) as expected:
        call(torch)
    with pytest.raises(ValueError) as got:
        call(sg)
    assert (
        str(got.value).replace("sourcegrad", "torch").split("<class")[0]
        == str(expected.value).split("<class")[0]
    )
