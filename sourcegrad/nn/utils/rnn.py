"""`sourcegrad.nn.utils.rnn`: packed and padded variable-length batches, as torch.nn.utils.rnn.

`pack_padded_sequence(input, lengths)` takes a padded batch ((T, B, *), or (B, T, *) with
`batch_first`) and returns a `PackedSequence`: `data` holds the valid steps time-major (all
the sequences' step 0, then all their step 1, ...) in decreasing order of length,
`batch_sizes` how many sequences are still running at each step (a CPU int64 tensor), and
`sorted_indices` / `unsorted_indices` the permutation from the caller's batch order to
the sorted one and back (None when the caller sorted the batch already, enforce_sorted).
`pad_packed_sequence` is its inverse: (padded batch in the caller's order, lengths).
`pad_sequence` / `pack_sequence` and `unpad_sequence` / `unpack_sequence` go between a list
of tensors and the batch. The RNN modules take a PackedSequence (nn/modules/rnn.py).

Packing and padding are one `index_select` each (flat indices computed with numpy from the
lengths), so gradients flow back to the padded input, or to `data`, through the ordinary
nodes; padded positions take `padding_value` and get no gradient.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...eager import dtypes, factories, indexing, joining
from ...eager.tensor import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]

_PackedSequence = namedtuple(
    "PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"]
)


def _long(values, device=None):
    return factories.tensor(np.asarray(values, dtype=np.int64), device=device)


def invert_permutation(permutation):
    """The permutation that undoes `permutation` (None stays None)."""
    if permutation is None:
        return None
    perm = np.asarray(permutation.detach().cpu().numpy(), dtype=np.int64)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size, dtype=np.int64)
    return _long(inverse, permutation.device)


class PackedSequence(_PackedSequence):
    """A packed batch of variable-length sequences: data, batch_sizes, sorted_indices,
    unsorted_indices (a namedtuple, as torch's). Made by pack_padded_sequence."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # torch's legacy form PackedSequence((data, batch_sizes))
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """`data` converted as Tensor.to; the indices follow data's device; self if unchanged."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t):
            return None if t is None else t.to(data.device)

        return type(self)(
            data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices)
        )

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=dtypes.float64)

    def float(self):
        return self.to(dtype=dtypes.float32)

    def half(self):
        return self.to(dtype=dtypes.float16)

    def long(self):
        return self.to(dtype=dtypes.int64)

    def int(self):
        return self.to(dtype=dtypes.int32)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _lengths_array(lengths):
    if isinstance(lengths, Tensor):
        return np.asarray(lengths.detach().cpu().numpy(), dtype=np.int64).reshape(-1)
    return np.asarray(lengths, dtype=np.int64).reshape(-1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch of sequences of the given lengths (see the module docstring)."""
    lens = _lengths_array(lengths)
    sorted_indices = None
    if not enforce_sorted:
        order = np.argsort(-lens, kind="stable")  # torch's CPU sort keeps ties in order
        lens = lens[order]
        sorted_indices = _long(order, input.device)
        input = indexing.index_select(input, 0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    if lens.size != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} "
            f"(batch_size={batch})"
        )
    if lens.size and lens[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    if np.any(np.diff(lens) > 0):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
            "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
            "pack_sequence to sidestep this requirement if you do not need ONNX exportability."
        )
    if lens.size and lens[0] > steps:
        # torch reads past the end of the input here; a clear error instead of garbage
        raise RuntimeError(
            f"pack_padded_sequence: a length ({lens[0]}) exceeds the input's sequence "
            f"length ({steps})"
        )
    batch_sizes = (lens[None, :] > np.arange(lens[0] if lens.size else 0)[:, None]).sum(1)
    rows = np.concatenate([t * batch + np.arange(n) for t, n in enumerate(batch_sizes)])
    flat = input.reshape((steps * batch,) + tuple(input.shape[2:]))
    data = indexing.index_select(flat, 0, _long(rows, input.device))
    return PackedSequence(data, _long(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded batch in the caller's order, its lengths as an int64 tensor)."""
    data, batch_sizes = sequence.data, _lengths_array(sequence.batch_sizes)
    max_len = batch_sizes.size
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence "
                f"in input, but got total_length={total_length} and max sequence length "
                f"being {max_len}"
            )
        max_len = total_length
    batch = int(batch_sizes[0]) if batch_sizes.size else 0
    # row of `data` for each (t, b), or the extra padding row past its end
    where = np.full((max_len, batch), data.shape[0], dtype=np.int64)
    offset = 0
    for t, n in enumerate(batch_sizes):
        where[t, :n] = np.arange(offset, offset + n)
        offset += n
    lengths = (where < data.shape[0]).sum(0)
    pad = factories.full(
        (1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device
    )
    rows = _long(where.reshape(-1), data.device)
    padded = indexing.index_select(joining.cat([data, pad], 0), 0, rows)
    padded = padded.reshape((max_len, batch) + tuple(data.shape[1:]))
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        padded = indexing.index_select(padded, 0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[_lengths_array(sequence.unsorted_indices)]
    return padded, _long(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into (max L, B, *) (or (B, max L, *)), padded."""
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    max_len = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        extra = max_len - s.shape[0]
        if extra:
            fill = factories.full(
                (extra,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device
            )
            s = joining.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        rows.append(s)
    return joining.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences, each cut to its length, of a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[: int(n)] for seq, n in zip(padded_sequences, _lengths_array(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors of shapes (L_i, *)."""
    lengths = _long([s.shape[0] for s in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of tensors a PackedSequence was packed from, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
