"""`default_collate` (a list of samples -> one batch) and `default_convert`, as torch's.

Tensors are stacked along a new first dimension; numpy arrays and numpy scalars become
tensors (then stacked); Python floats a float64 tensor, ints (and bools) an int64 (bool)
tensor; strings and bytes stay a sequence; dicts, namedtuples, tuples and lists are
collated field by field (a batch of tuples gives a list, as torch does).
"""

import collections.abc
import copy
import re

import numpy as np

from ...eager.dtypes import float64
from ...eager.factories import as_tensor, tensor
from ...eager.shape_ops import stack
from ...eager.tensor import Tensor

__all__ = ["default_collate", "default_convert"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")
default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def default_convert(data):
    """numpy arrays (and those inside containers) to tensors; everything else unchanged."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        return _rebuild_mapping(data, converted)
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def _rebuild_mapping(elem, values):
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)  # keeps the mapping's type and extra attributes
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def _rebuild_sequence(elem, values):
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def default_collate(batch):
    """Collate a list of samples into a batch, with torch's type rules (see module doc)."""
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ in ("ndarray", "memmap"):
            if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
                raise TypeError(default_collate_err_msg_format.format(elem.dtype))
            return default_collate([as_tensor(b) for b in batch])
        if isinstance(elem, (np.bool_, np.number, np.object_)):
            return as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(
            elem, {key: default_collate([d[key] for d in batch]) for key in elem}
        )
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        return _rebuild_sequence(elem, [default_collate(samples) for samples in transposed])
    raise TypeError(default_collate_err_msg_format.format(elem_type))
