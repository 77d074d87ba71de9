"""`DataLoader`: batches from a dataset through a sampler and a collate function.

Map-style datasets are indexed by a sampler (sequential, or random with `shuffle=True`
from `generator`), grouped by a BatchSampler (`batch_size`, `drop_last`) and collated
with `default_collate`; `batch_size=None` yields single samples through
`default_convert`. Iterable datasets are batched in their own order. Loading always
happens in the main process: `num_workers > 0` is accepted and gives the same batches
(as torch's does for a map-style dataset), without parallelism; `get_worker_info()` is
therefore None. `pin_memory` is accepted and has no effect (there is no pinned memory):
without a GPU, each pass warns as torch's does.
"""

from __future__ import annotations

import itertools
import warnings

from ...eager import devices
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]


def get_worker_info():
    """None: samples are always loaded in the main process."""
    return None


class _InfiniteConstantSampler:
    def __iter__(self):
        while True:
            yield None


def _worker_options(num_workers, timeout, prefetch_factor, persistent_workers):
    """torch's checks of the worker options; returns the prefetch factor (2 by default
    with workers)."""
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; use num_workers=0 to "
            "disable multiprocessing."
        )
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing."
            "let num_workers > 0 to enable multiprocessing, otherwise set "
            "prefetch_factor to None."
        )
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    elif prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    return prefetch_factor


def _check_iterable_options(shuffle, sampler, batch_sampler):
    """An IterableDataset takes no shuffle, sampler or batch sampler (torch's errors)."""
    if shuffle not in {False, None}:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified shuffle "
            f"option, but got shuffle={shuffle}"
        )
    if sampler is not None:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified sampler "
            f"option, but got sampler={sampler}"
        )
    if batch_sampler is not None:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified "
            f"batch_sampler option, but got batch_sampler={batch_sampler}"
        )


class DataLoader:
    def __init__(
        self,
        dataset,
        batch_size=1,
        shuffle=None,
        sampler=None,
        batch_sampler=None,
        num_workers=0,
        collate_fn=None,
        pin_memory=False,
        drop_last=False,
        timeout=0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor=None,
        persistent_workers=False,
        pin_memory_device="",
        in_order=True,
    ):
        prefetch_factor = _worker_options(num_workers, timeout, prefetch_factor, persistent_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            _check_iterable_options(shuffle, sampler, batch_sampler)
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, "
                    "shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually "
                "exclusive with drop_last"
            )
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        return _LoaderIter(self)

    def __len__(self):
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


class _LoaderIter:
    """One pass over a DataLoader: `next()` gives the next (collated) batch."""

    def __init__(self, loader):
        self._loader = loader
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn(
                "pin_memory_device is deprecated, the current accelerator will be used as the "
                f"device,ignore pin_memory_device='{loader.pin_memory_device}'.",
                stacklevel=3,
            )
        if loader.pin_memory and not devices.is_available():
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, "
                "then device pinned memory won't be used.",
                stacklevel=3,
            )
        self._batches = self._iterable_batches() if loader._iterable else self._map_batches()

    def _map_batches(self):
        loader = self._loader
        dataset = loader.dataset
        getitems = getattr(dataset, "__getitems__", None)
        for index in loader._index_sampler:
            if loader._auto_collation:
                data = getitems(index) if callable(getitems) else [dataset[i] for i in index]
            else:
                data = dataset[index]
            yield loader.collate_fn(data)

    def _iterable_batches(self):
        loader = self._loader
        it = iter(loader.dataset)
        if not loader._auto_collation:
            for sample in it:
                yield loader.collate_fn(sample)
            return
        while True:
            batch = list(itertools.islice(it, loader.batch_size))
            if not batch or (loader.drop_last and len(batch) < loader.batch_size):
                return
            yield loader.collate_fn(batch)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._batches)

    def __len__(self):
        return len(self._loader)
