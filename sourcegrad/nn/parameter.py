"""`nn.Parameter`: a leaf tensor that requires grad and prints as `Parameter containing:`."""

from __future__ import annotations

import numpy as np

from ..eager import messages
from ..eager.tensor import Tensor


class Parameter(Tensor):
    """A Tensor subclass marking a model parameter; it shares storage with the data given."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = Tensor._make(np.empty((0,), np.float32))
        if requires_grad and data._data.dtype.kind not in "fc":
            raise RuntimeError(messages.FLOAT_ONLY_FACTORY)
        p = cls._make(data._data, bool(requires_grad))
        p._vc = data._get_vc()
        p._get_extra().is_param = True
        return p

    def __init__(self, data=None, requires_grad=True):
        pass


class _BufferMeta(type):
    """isinstance(t, Buffer) holds for tensors marked by Buffer(...), as in torch."""

    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """`nn.Buffer(t, persistent=True)`: assigned to a Module attribute, it is a buffer.

    Like torch's, the object made is a plain Tensor (a detached alias of the data)
    carrying a `persistent` flag.
    """

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = Tensor._make(np.empty((0,), np.float32))
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t
