"""nn.utils.rnn (pack/pad of variable-length batches) and RNN/LSTM/GRU on a PackedSequence,
against torch (float64, torch's weights copied in through state_dict).

The packed layout (data, batch_sizes, sorted_indices, unsorted_indices), the padded batch
and lengths, the RNNs' packed outputs and final states (in the caller's batch order), and
the gradients wrt every sequence, the initial states and every parameter must agree with
torch's to ~1e-10; and torch's errors for bad lengths.
"""

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(11)
LENGTHS = (3, 6, 1, 6, 4)  # unsorted, with a tie: the stable sort's order matters
SEQS = [R.standard_normal((n, 4)) for n in LENGTHS]


def np_of(t):
    return None if t is None else t.detach().numpy()


def close(a, b):
    assert (a is None) == (b is None)
    if a is not None:
        np.testing.assert_allclose(np_of(b), np_of(a), rtol=1e-10, atol=1e-12)


def make(lib, kind):
    if kind == "lstm":
        return lib.nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3, dtype=lib.float64)
    if kind == "rnn":
        return lib.nn.RNN(
            4, 3, num_layers=2, bidirectional=True, nonlinearity="relu", dtype=lib.float64
        )
    return lib.nn.GRU(4, 3, num_layers=2, batch_first=True, dtype=lib.float64)


def run(lib, module, kind, enforce_sorted, with_hx):
    """Everything a packed forward and backward gives: layouts, outputs, gradients."""
    R_ = lib.nn.utils.rnn
    seqs = [lib.tensor(s, requires_grad=True) for s in SEQS]
    order = np.argsort([-n for n in LENGTHS], kind="stable") if enforce_sorted else range(5)
    seqs_in = [seqs[i] for i in order]
    packed = R_.pack_sequence(seqs_in, enforce_sorted=enforce_sorted)
    dirs = 2 if module.bidirectional else 1
    shape = (module.num_layers * dirs, 5)
    state = [
        lib.tensor(np.sin(np.arange(np.prod(shape) * w)).reshape(shape + (w,)), requires_grad=True)
        for w in ((3, 6) if kind == "lstm" else (3,))
    ]
    hx = (tuple(state) if kind == "lstm" else state[0]) if with_hx else None
    out, hidden = module(packed, hx)
    hidden = list(hidden) if kind == "lstm" else [hidden]
    padded, lengths = R_.pad_packed_sequence(
        out, batch_first=module.batch_first, padding_value=2.5, total_length=7
    )
    weights = lib.tensor(np.cos(np.arange(padded.numel())).reshape(tuple(padded.shape)))
    loss = (padded * weights).sum() + sum((h * h).sum() for h in hidden)
    loss = loss + sum(u.sum() for u in R_.unpack_sequence(out))
    loss.backward()
    layout = [packed.data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices]
    grads = [s.grad for s in seqs] + [p.grad for p in module.parameters()]
    grads += [s.grad for s in state] if with_hx else []
    return layout + [out.data, padded, lengths] + hidden + grads


@pytest.mark.parametrize("kind", ["lstm", "rnn", "gru"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("with_hx", [True, False])
def test_rnn_on_packed_sequence_matches_torch(kind, enforce_sorted, with_hx):
    reference = make(torch, kind)
    module = make(sg, kind)
    module.load_state_dict(
        {k: sg.tensor(v.detach().numpy().copy()) for k, v in reference.state_dict().items()}
    )
    expected = run(torch, reference, kind, enforce_sorted, with_hx)
    got = run(sg, module, kind, enforce_sorted, with_hx)
    assert len(got) == len(expected)
    for a, b in zip(expected, got):
        close(a, b)


def test_pack_padded_batch_first_and_pad_sequence_match_torch():
    results = []
    for lib in (torch, sg):
        R_ = lib.nn.utils.rnn
        seqs = [lib.tensor(s, requires_grad=True) for s in SEQS]
        left = R_.pad_sequence(seqs, batch_first=True, padding_side="left", padding_value=-1.0)
        padded = R_.pad_sequence(seqs, batch_first=True)
        packed = R_.pack_padded_sequence(
            padded, lib.tensor(list(LENGTHS)), batch_first=True, enforce_sorted=False
        )
        unpadded = R_.unpad_sequence(padded, lib.tensor(list(LENGTHS)), batch_first=True)
        (packed.data.sum() * 2 + left.pow(2).sum() + sum(u.sum() for u in unpadded)).backward()
        results.append([left, packed.data, packed.double().data] + [s.grad for s in seqs])
    for a, b in zip(*results):
        close(a, b)


@pytest.mark.parametrize(
    "lengths, enforce_sorted",
    [([2, 3, 1], True), ([3, 1, 0], True), ([3, 2], True), ([3, 0, 1], False)],
)
def test_pack_padded_sequence_errors_match_torch(lengths, enforce_sorted):
    with pytest.raises(RuntimeError) as expected:
        torch.nn.utils.rnn.pack_padded_sequence(
            torch.zeros(4, 3, 2), lengths, enforce_sorted=enforce_sorted
        )
    with pytest.raises(RuntimeError) as got:
        sg.nn.utils.rnn.pack_padded_sequence(
            sg.zeros(4, 3, 2), lengths, enforce_sorted=enforce_sorted
        )
    assert str(got.value) == str(expected.value)


def test_pad_packed_sequence_total_length_too_short_raises_as_torch():
    def attempt(lib):
        packed = lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(4, 3, 2), [3, 2, 1])
        lib.nn.utils.rnn.pad_packed_sequence(packed, total_length=2)

    with pytest.raises(ValueError) as expected:
        attempt(torch)
    with pytest.raises(ValueError) as got:
        attempt(sg)
    assert str(got.value) == str(expected.value)


def test_length_past_the_input_raises():
    # torch reads past the end of its input here (its result is garbage); sourcegrad raises
    with pytest.raises(RuntimeError, match="exceeds the input's sequence length"):
        sg.nn.utils.rnn.pack_padded_sequence(sg.zeros(4, 3, 2), [5, 3, 1])
