"""`sourcegrad.utils.data`: the semantics of torch.utils.data (orders differ: another RNG)."""

import collections
import warnings

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    random_split,
)

torch = pytest.importorskip("torch")


def _datasets(n=10):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    y = np.arange(n)
    return (
        TensorDataset(sg.tensor(x), sg.tensor(y)),
        torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
    )


@pytest.mark.parametrize(
    "batch_size,drop_last", [(3, False), (3, True), (5, False), (1, True), (12, False), (12, True)]
)
def test_unshuffled_batches_equal_torch_s(batch_size, drop_last):
    ds, tds = _datasets()
    ours = DataLoader(ds, batch_size=batch_size, drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(tds, batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    got, want = list(ours), list(theirs)
    assert len(got) == len(want)
    for (x, y), (tx, ty) in zip(got, want):
        assert isinstance(x, sg.Tensor) and x.dtype == sg.float32 and y.dtype == sg.int64
        np.testing.assert_array_equal(x.numpy(), tx.numpy())
        np.testing.assert_array_equal(y.numpy(), ty.numpy())


@pytest.mark.parametrize(
    "batch_size,drop_last,n_batches", [(3, False, 4), (3, True, 3), (4, True, 2), (10, False, 1)]
)
def test_shuffled_epochs_see_every_index_once(batch_size, drop_last, n_batches):
    ds, _ = _datasets()
    loader = DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=drop_last)
    assert len(loader) == n_batches
    orders = []
    for _ in range(3):
        batches = [y.tolist() for _, y in loader]
        assert len(batches) == n_batches
        full = batches if drop_last else batches[:-1]
        assert all(len(b) == batch_size for b in full)
        assert 0 < len(batches[-1]) <= batch_size
        seen = sum(batches, [])
        assert len(seen) == len(set(seen))
        if not drop_last:
            assert sorted(seen) == list(range(10))
        orders.append(seen)
    assert len({tuple(o) for o in orders}) > 1  # epochs are shuffled differently


def test_a_seeded_generator_reproduces_the_order():
    ds, _ = _datasets(50)

    def order(seed):
        loader = DataLoader(
            ds, batch_size=7, shuffle=True, generator=sg.Generator().manual_seed(seed)
        )
        return [y.tolist() for _, y in loader]

    assert order(3) == order(3)
    assert order(3) != order(4)
    sg.manual_seed(11)
    first = [y.tolist() for _, y in DataLoader(ds, batch_size=7, shuffle=True)]
    sg.manual_seed(11)
    assert first == [y.tolist() for _, y in DataLoader(ds, batch_size=7, shuffle=True)]


def test_default_collate_matches_torch():
    Point = collections.namedtuple("Point", "x y")
    samples = [
        [1, 2, 3],
        [1.5, 2.5],
        [True, False],
        ["a", "b"],
        [(1, "a", 2.0), (2, "b", 3.0)],
        [{"x": np.ones(2), "y": 3}, {"x": np.zeros(2), "y": 4}],
        [[np.float32(1), 2], [np.float32(3), 4]],
        [Point(1, 2.0), Point(3, 4.0)],
        [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)],
    ]

    def plain(value):
        if isinstance(value, (sg.Tensor, torch.Tensor)):
            return ("tensor", str(value.dtype).split(".")[-1], value.tolist())
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return (type(value).__name__, [plain(v) for v in value])
        return value

    for batch in samples:
        theirs = torch.utils.data.default_collate(batch)
        assert plain(default_collate(batch)) == plain(theirs), batch
    t = [sg.tensor([1.0, 2.0]), sg.tensor([3.0, 4.0])]
    assert default_collate(t).tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_default_collate_errors_match_torch():
    for batch in ([[1, 2], [3]], [object(), object()]):
        with pytest.raises(Exception) as theirs:
            torch.utils.data.default_collate(batch)
        with pytest.raises(type(theirs.value)) as ours:
            default_collate(batch)
        assert str(ours.value).split(";")[0] == str(theirs.value).split(";")[0]


def test_dict_samples_and_a_custom_collate_fn():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"i": i, "sq": sg.tensor([float(i * i)])}

    batches = list(DataLoader(Squares(), batch_size=2))
    assert [b["i"].tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    assert batches[1]["sq"].shape == (2, 1)
    sums = list(DataLoader(Squares(), batch_size=2, collate_fn=lambda b: sum(s["i"] for s in b)))
    assert sums == [1, 5, 4]
    single = list(DataLoader(Squares(), batch_size=None))
    assert len(single) == 5 and single[2]["i"] == 2


def test_iterable_dataset_is_batched_in_its_order():
    class Count(IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 7

    assert [b.tolist() for b in DataLoader(Count(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(DataLoader(Count(), batch_size=3, drop_last=True)) == 2
    assert [b.tolist() for b in DataLoader(Count(), batch_size=3, drop_last=True)] == [
        [0, 1, 2],
        [3, 4, 5],
    ]
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        DataLoader(Count(), shuffle=True)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(batch_size=2, shuffle=True, sampler=[0, 1]),
        dict(batch_sampler=[[0, 1]], batch_size=3),
        dict(batch_size=None, drop_last=True),
        dict(num_workers=-1),
        dict(prefetch_factor=2),
        dict(persistent_workers=True),
        dict(batch_size=0),
    ],
)
def test_loader_option_errors_match_torch(kwargs):
    ds, tds = _datasets()
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader(tds, **kwargs)
    with pytest.raises(ValueError) as ours:
        DataLoader(ds, **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_samplers():
    data = list(range(10))
    assert list(SequentialSampler(data)) == data
    perm = list(RandomSampler(data, generator=sg.Generator().manual_seed(0)))
    assert sorted(perm) == data and perm != data
    more = list(RandomSampler(data, num_samples=25, generator=sg.Generator().manual_seed(0)))
    assert len(more) == 25 and sorted(more[:20]) == sorted(data * 2)
    drawn = list(RandomSampler(data, replacement=True, num_samples=40))
    assert len(drawn) == 40 and set(drawn) <= set(data)
    assert sorted(SubsetRandomSampler([3, 5, 7])) == [3, 5, 7]
    weighted = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 50))
    assert len(weighted) == 50 and set(weighted) <= {1, 3}
    assert list(BatchSampler(data, 4, False)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert list(BatchSampler(data, 4, True)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(BatchSampler(data, 4, False)) == 3 and len(BatchSampler(data, 4, True)) == 2
    loader = DataLoader(data, batch_sampler=BatchSampler(SequentialSampler(data), 3, False))
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    for lib in (sg.utils.data, torch.utils.data):
        with pytest.raises(ValueError, match="num_samples should be a positive integer"):
            lib.RandomSampler([], num_samples=0)
        with pytest.raises(TypeError, match="replacement should be a boolean"):
            lib.RandomSampler(data, replacement=1)


@pytest.mark.parametrize(
    "lengths,sizes",
    [([3, 7], [3, 7]), ([0.3, 0.7], [3, 7]), ([0.33, 0.33, 0.34], [4, 3, 3]), ([0.5, 0.5], [5, 5])],
)
def test_random_split_sizes_match_torch_and_partition(lengths, sizes):
    ds, tds = _datasets()
    parts = random_split(ds, lengths, generator=sg.Generator().manual_seed(0))
    tparts = torch.utils.data.random_split(tds, lengths, generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [len(p) for p in tparts] == sizes
    indices = sum((p.indices for p in parts), [])
    assert sorted(indices) == list(range(10))
    assert all(isinstance(p, Subset) for p in parts)
    first = parts[0][0]
    assert first[1].item() == parts[0].indices[0]
    again = random_split(ds, lengths, generator=sg.Generator().manual_seed(0))
    assert [p.indices for p in again] == [p.indices for p in parts]


def test_random_split_errors_and_warnings_match_torch():
    for lib in (sg.utils.data, torch.utils.data):
        with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
            lib.random_split(range(10), [3, 3])
        with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
            lib.random_split(range(10), [-0.5, 1.5])
        with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
            assert [len(p) for p in lib.random_split(range(2), [0.9, 0.1])] == [2, 0]


def test_subset_concat_and_tensor_dataset_errors():
    ds, _ = _datasets()
    sub = Subset(ds, [9, 0, 4])
    assert len(sub) == 3 and sub[0][1].item() == 9
    both = ds + sub
    assert isinstance(both, ConcatDataset) and len(both) == 13 and both[10][1].item() == 9
    assert both[-1][1].item() == 4
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(sg.zeros(3), sg.zeros(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(DataLoader(ds, batch_size=4, num_workers=2))) == 3


def _torch_drawn(monkeypatch, seed):
    """Make sourcegrad's samplers draw their numbers from torch's generator (seeded), so that
    the indices they yield are torch's exactly when they ask for the same draws."""
    from sourcegrad.utils.data import sampler as sampler_module

    gen = torch.Generator().manual_seed(seed)

    def randint(low, high, size, generator=None):
        return sg.tensor(torch.randint(low, high, size, generator=gen).numpy())

    def randperm(n, generator=None):
        return sg.tensor(torch.randperm(n, generator=gen).numpy())

    monkeypatch.setattr(sampler_module, "randint", randint)
    monkeypatch.setattr(sampler_module, "randperm", randperm)


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("num_samples", [None, 5, 31, 32, 100])
def test_random_sampler_draws_as_torch_does(monkeypatch, replacement, num_samples):
    """The same draws in the same blocks (32 indices at a time with replacement): with torch's
    random numbers, sourcegrad's sampler yields torch's indices."""
    data = list(range(7))
    theirs = torch.utils.data.RandomSampler(
        data, replacement, num_samples, generator=torch.Generator().manual_seed(3)
    )
    _torch_drawn(monkeypatch, 3)
    ours = RandomSampler(data, replacement, num_samples, generator=sg.Generator())
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)


def test_infinite_random_sampler_is_lazy():
    """num_samples=int(1e10) with replacement (an "infinite" training loader): drawn 32 at a
    time, so the first batches come at once and nothing of size num_samples is allocated."""
    import itertools
    import tracemalloc

    data = TensorDataset(sg.arange(50.0).reshape(25, 2), sg.arange(25))
    sampler = RandomSampler(data, replacement=True, num_samples=int(1e10))
    assert len(sampler) == int(1e10)
    loader = DataLoader(data, batch_size=4, sampler=sampler)
    assert len(loader) == int(1e10) // 4
    tracemalloc.start()
    try:
        batches = list(itertools.islice(iter(loader), 100))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000
    assert all(x.shape == (4, 2) and set(y.tolist()) <= set(range(25)) for x, y in batches)
    theirs = torch.utils.data.RandomSampler(range(25), replacement=True, num_samples=int(1e10))
    assert len(theirs) == len(sampler)
