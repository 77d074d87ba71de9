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


def _outcome(lib, fn):
    try:
        return fn(lib).detach().numpy()
    except Exception as e:  # (the comparison is of the type and message)
        return (type(e).__name__, str(e).replace("sourcegrad", "torch"))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize(
    "offsets",
    [[1, 4], [0, 9], [0, 6, 4], [0, 2, 2, 8], [], [0, 4.0]],
    ids=["first-not-0", "past-the-end", "decreasing", "empty-bags", "no-bags", "float"],
)
def test_offsets_are_checked_as_torch_does(mode, offsets):
    """Offsets torch refuses used to give a number here: a first bag starting after 0 (the
    indices before it silently dropped), a last offset past the end (an empty bag), or
    decreasing offsets (an empty bag where torch refuses); and mode='max' with no bags
    failed in stack. (A last offset past the end with mode='max' crashes torch's process,
    so that case's oracle is its sum and mean modes' refusal.)"""
    is_float = any(isinstance(o, float) for o in offsets)

    def run(lib, mode=mode):
        weight = lib.tensor(WEIGHT.astype(np.float32))
        text = lib.tensor([1, 2, 4, 5, 4, 3, 2, 9])
        off = lib.tensor(offsets, dtype=lib.float64 if is_float else lib.long)
        return lib.nn.functional.embedding_bag(text, weight, off, mode=mode)

    # (float32: torch's float64 kernels give a number for decreasing offsets, its float32
    # ones refuse; torch's max mode crashes its process or gives garbage on those: its sum mode's
    # refusal, or its shape, is the oracle)
    oracle_mode = "sum" if mode == "max" and offsets in ([0, 9], [0, 6, 4], []) else mode
    theirs = _outcome(torch, lambda lib: run(lib, oracle_mode))
    ours = _outcome(sg, lambda lib: run(lib))
    if isinstance(theirs, tuple):
        assert ours == theirs
    elif offsets == []:
        assert ours.shape == theirs.shape == (0, 4)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("bad", [10, -1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_an_index_out_of_range_is_torchs_error(mode, padding_idx, bad, dtype):
    def run(lib):
        weight = lib.tensor(WEIGHT.astype(dtype))
        text = lib.tensor([1, 2, bad])
        off = lib.tensor([0])
        return lib.nn.functional.embedding_bag(
            text, weight, off, mode=mode, padding_idx=padding_idx
        )

    assert _outcome(sg, run) == _outcome(torch, run)
