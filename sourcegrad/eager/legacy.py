"""torch's legacy tensor types: `torch.FloatTensor`, `torch.LongTensor`, ... (tutorials still
use them). Calling one makes a tensor of its dtype as `torch.Tensor(...)` does (sizes give an
uninitialised tensor, data a copy, a tensor of that dtype an alias of it: AliasBackward0);
`isinstance(x, torch.FloatTensor)` asks whether x is a float32 tensor on the CPU;
`x.type(torch.LongTensor)` casts.

Imports: `factories` (the legacy constructor) and `views` (the alias).
"""

from __future__ import annotations

from . import dtypes, factories, views
from .tensor import Tensor

__all__ = [
    "tensortype",
    "legacy_new",
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "ByteTensor",
    "CharTensor",
    "ShortTensor",
    "IntTensor",
    "LongTensor",
    "BoolTensor",
]


def legacy_new(cls, *args, dtype=None, **kwargs):
    """`torch.Tensor(...)` (and the typed ones, with their dtype): see the module doc."""
    made = factories.legacy_tensor(cls, *args, dtype=dtype, **kwargs)
    if len(args) == 1 and made is args[0]:
        return views.alias(made)
    return made


class tensortype(type):
    """The class of torch's legacy tensor types (`torch.FloatTensor`, `torch.LongTensor`, ...):
    calling one makes a tensor of its dtype as `torch.Tensor(...)` does (sizes or data), and
    `isinstance(x, torch.FloatTensor)` asks whether x is a float32 tensor on the CPU."""

    dtype: dtypes.dtype

    def __call__(cls, *args, **kwargs):
        return legacy_new(Tensor, *args, dtype=cls.dtype, **kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __repr__(cls):
        return f"<class 'torch.{cls.__name__}'>"


def _legacy_type(d):
    return tensortype(
        d._tensor_type,
        (),
        {"dtype": d, "is_cuda": False, "is_sparse": False, "__module__": "torch"},
    )


FloatTensor = _legacy_type(dtypes.float32)
DoubleTensor = _legacy_type(dtypes.float64)
HalfTensor = _legacy_type(dtypes.float16)
ByteTensor = _legacy_type(dtypes.uint8)
CharTensor = _legacy_type(dtypes.int8)
ShortTensor = _legacy_type(dtypes.int16)
IntTensor = _legacy_type(dtypes.int32)
LongTensor = _legacy_type(dtypes.int64)
BoolTensor = _legacy_type(dtypes.bool)
LEGACY_TYPES = (
    FloatTensor,
    DoubleTensor,
    HalfTensor,
    ByteTensor,
    CharTensor,
    ShortTensor,
    IntTensor,
    LongTensor,
    BoolTensor,
)
