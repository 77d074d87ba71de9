"""The eager `Tensor`: a numpy array plus torch's autograd metadata.

A Tensor is deliberately small (`__slots__`): its data (`_data`, an ndarray),
the node that made it (`_grad_fn`, `_output_nr`), whether it requires grad,
its `.grad`, a version counter shared with its views and `detach()`es, a weak
reference to its `AccumulateGrad` (so every use of a leaf in one graph shares
that node, as in torch) and, for views, the base tensor. Rarely used state
(hooks, `retain_grad`, how a view was taken) lives in `_extra`.

The ops themselves are functions in `tensor_math.py`, `shape_ops.py` and `inplace.py`
that serve both as `sourcegrad.exp(x)` and as `x.exp()`; `methods.py` attaches
them to this class. What stays here is what is about the tensor itself:
properties, autograd state, conversions and printing.

Imports: the leaves only (devices, dtypes, messages, formatting, grad_mode, hooks).
The layers above give the class the methods that need them, in one place:
`methods.py` (`backward`, `_edge`, `cpu`, `to`, the numpy protocol, ...).

Why one module: the Tensor class itself (storage, views, version counter, grad bookkeeping,
its properties); its methods are attached from `methods.py` and the op modules.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

import numpy as np

from . import devices, dtypes, messages
from .devices import CPU
from .formatting import tensor_repr
from .grad_mode import STATE
from .hooks import add_hook

_new = object.__new__
_GPU_TYPES = devices.DEVICE_TYPES  # the array types of data on a GPU (cupy.ndarray)
FROM_NUMPY = dtypes.FROM_NUMPY

# how a view was made (torch's CreationMeta): views made in no_grad mode, and the outputs of
# unbind/split, may not be modified in place with grad mode on (inplace.check_view_rebase);
# nor, here, the real or imaginary part of a complex tensor (fft.real, fft.imag: torch
# changes the complex base through it, which our CopySlices does not model)
DEFAULT_VIEW, NO_GRAD_VIEW, MULTI_OUTPUT_VIEW, COMPLEX_PART_VIEW = 0, 1, 2, 3


def stale_view_requires_grad(t) -> bool:
    """Whether `t` requires grad, for a view that did not when it was taken.

    Its base may have come to require grad since, by an in-place op with an operand that
    does (`b.mul_(y)`); torch's view then requires grad too, its grad_fn an
    AsStridedBackward0 into the base. Callers check `t._requires_grad` first (the fast path).
    """
    if t._base is None or not t._base._requires_grad:
        return False
    if t._extra.fn_version != t._vc.value:
        t._rebuild_view()  # inplace.refresh_view, installed by methods.py
    return t._requires_grad


class VersionCounter:
    """How many in-place ops a tensor's storage has seen; shared by views and detach()."""

    __slots__ = ("value",)

    def __init__(self, value=0):
        self.value = value


class Extra:
    """The rarely used part of a tensor's state, allocated on first use."""

    __slots__ = (
        "view_steps",
        "fn_version",
        "creation",
        "hooks",
        "post_hooks",
        "retains_grad",
        "is_param",
        "fw_grad",
    )

    def __init__(self):
        self.view_steps = None  # how this view was taken from its base (see shape_ops)
        self.fn_version = 0  # the version at which this view's grad_fn was made
        self.creation = DEFAULT_VIEW  # how the view was made (torch's CreationMeta)
        self.hooks = None  # leaf tensor hooks {id: fn(grad)}
        self.post_hooks = None  # post-accumulate-grad hooks {id: fn(tensor)}
        self.retains_grad = False
        self.is_param = False
        self.fw_grad = None  # the tangent at the open forward-AD level (dual_state)


class Size(tuple):
    """A tensor's shape (`torch.Size`): a tuple that prints as torch prints it."""

    def __repr__(self):
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))


class _SizeMethod(int):
    """`Tensor.size`: torch's method, `x.size()` / `x.size(0)`, that is also numpy's `x.size`.

    The rule table's lambdas are written for arrays and read `x.size` as the number
    of elements; under create_graph they run on Tensors, so the attribute has to be
    both things at once.
    """

    def __new__(cls, shape):
        n = 1
        for d in shape:
            n *= d
        obj = int.__new__(cls, n)
        obj._shape = shape
        return obj

    def __call__(self, dim=None):
        if dim is None:
            return Size(self._shape)
        return self._shape[dim]


_warned_float = [False]


class Tensor:
    """A numpy-backed tensor with torch's dynamic-graph autograd."""

    __slots__ = (
        "_data",
        "_grad_fn",
        "_output_nr",
        "_requires_grad",
        "_grad",
        "_vc",
        "_acc",
        "_inference",
        "_base",
        "_extra",
        "__weakref__",
        "__dict__",
    )
    # the slots' types (annotations only: __slots__ makes the attributes)
    _data: Any  # an ndarray, or a CuPy array on a CUDA device
    _grad_fn: Any  # the node that made it (eager.node), or None
    _output_nr: int
    _requires_grad: bool
    _grad: Any  # a Tensor or None
    _vc: VersionCounter | None
    _acc: Any  # its AccumulateGrad node, made on first use
    _inference: bool
    _base: Tensor | None
    _extra: Extra | None
    _rebuild_view: Any  # inplace.refresh_view, installed by methods.py

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def _make(cls, data, requires_grad=False):
        """Wrap an ndarray (no copy). The one constructor every op goes through."""
        t = _new(cls)
        t._data = data
        t._grad_fn = None
        t._output_nr = 0
        t._requires_grad = requires_grad
        t._grad = None
        t._vc = None
        t._acc = None
        t._inference = STATE.inference
        t._base = None
        t._extra = None
        return t

    def __init__(self, *args, **kwargs):
        pass

    @staticmethod
    def _dtype_of(data) -> dtypes.dtype:
        return FROM_NUMPY[data.dtype]

    @staticmethod
    def _dtype_of_np(np_dtype) -> dtypes.dtype:
        return FROM_NUMPY[np.dtype(np_dtype)]

    def _get_vc(self) -> VersionCounter:
        vc = self._vc
        if vc is None:
            vc = self._vc = VersionCounter()
        return vc

    def _get_extra(self) -> Extra:
        ex = self._extra
        if ex is None:
            ex = self._extra = Extra()
        return ex

    def _refresh_view(self):
        """After an in-place op changed its base, a view's grad_fn must see the change."""
        if self._extra.fn_version != self._vc.value:
            self._rebuild_view()  # inplace.refresh_view, installed by methods.py

    # --- metadata ---------------------------------------------------------------------------

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    @property
    def size(self):
        return _SizeMethod(self._data.shape)

    @property
    def dtype(self) -> dtypes.dtype:
        return FROM_NUMPY[self._data.dtype]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    @property
    def device(self) -> devices.device:
        d = self._data
        return CPU if type(d) not in _GPU_TYPES else devices.device_of(d)

    @property
    def is_cuda(self) -> bool:
        return type(self._data) in _GPU_TYPES

    @property
    def is_cpu(self) -> bool:
        return not self.is_cuda

    def get_device(self) -> int:
        """The CUDA device index, or -1 on the CPU (torch's convention)."""
        return self.device.index if self.is_cuda else -1

    is_sparse = False
    is_quantized = False
    is_meta = False
    is_nested = False

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def is_contiguous(self, memory_format=None) -> bool:
        return self._data.flags.c_contiguous

    def is_inference(self) -> bool:
        return self._inference

    def _is_view(self) -> bool:
        return self._base is not None

    def data_ptr(self) -> int:
        return devices.data_ptr(self._data)

    def stride(self, dim=None):
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[dim]

    def storage_offset(self) -> int:
        base = self._base._data if self._base is not None else self._data
        return (self.data_ptr() - devices.data_ptr(base)) // self._data.itemsize

    @property
    def _version(self) -> int:
        vc = self._vc
        return vc.value if vc is not None else 0

    # --- autograd state ---------------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad or stale_view_requires_grad(self)

    @requires_grad.setter
    def requires_grad(self, flag):
        self._set_requires_grad(flag, messages.FLOAT_ONLY_SETTER)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad in place and return self (only on leaves, floating dtypes)."""
        self._set_requires_grad(requires_grad, messages.FLOAT_ONLY_METHOD)
        return self

    def _set_requires_grad(self, flag, dtype_message):
        flag = bool(flag)
        if self._grad_fn is not None:
            if not flag:
                raise RuntimeError(messages.NON_LEAF_REQUIRES_GRAD)
            return
        if flag and self._data.dtype.kind not in "fc":
            raise RuntimeError(dtype_message)
        if flag and self._inference and not STATE.inference:
            raise RuntimeError(messages.INFERENCE_REQUIRES_GRAD)
        self._requires_grad = flag

    @property
    def is_leaf(self) -> bool:
        if self._base is not None:
            self._refresh_view()
        return self._grad_fn is None

    @property
    def grad_fn(self):
        if self._base is not None:
            self._refresh_view()
        return self._grad_fn

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def retains_grad(self) -> bool:
        return self._extra is not None and self._extra.retains_grad

    @property
    def grad(self):
        g = self._grad
        if g is None and self._grad_fn is not None and not self.retains_grad:
            # torch warns only when a non-leaf's grad is read and there is none
            warnings.warn(messages.NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    "assigned grad expected to be a Tensor or None but got grad of "
                    f"type {type(value).__name__}"
                )
            if value._data.shape != self._data.shape:
                raise RuntimeError(
                    "attempting to assign a gradient of size "
                    f"'{messages.shape_text(value._data.shape)}' to a tensor of size "
                    f"'{messages.shape_text(self._data.shape)}'. Please ensure that the "
                    "gradient and the tensor are the same size"
                )
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{value.dtype._c_name}' to a "
                    f"tensor with grad_dtype '{self.dtype._scalar_name}'. The gradient must "
                    "match the tensor's grad_dtype (defaults to the tensor's dtype). You can "
                    "set the tensor's grad_dtype attribute with a specific dtype, or None to "
                    "allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a "
                    "tensor and its gradient may break downstream systems that assume they "
                    "match."
                )
            if value.device.type != self.device.type:
                raise RuntimeError(
                    f"attempting to assign a gradient with device type '{value.device.type}' "
                    f"to a tensor with device type '{self.device.type}'. Please ensure that "
                    "the gradient and the tensor are on the same device"
                )
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def data(self):
        """The same storage as a leaf that requires no grad and has its own version counter."""
        out = Tensor._make(self._data)
        return out

    @data.setter
    def data(self, value):
        self._data = value._data if isinstance(value, Tensor) else np.asarray(value)

    def retain_grad(self):
        """Keep the gradient of this non-leaf in `.grad` at the next backward."""
        if not self._requires_grad:
            raise RuntimeError(messages.RETAIN_GRAD_NO_GRAD)
        if self.grad_fn is None:
            return  # a leaf keeps its grad anyway
        ex = self._get_extra()
        if ex.retains_grad:
            return
        ex.retains_grad = True
        self._grad_fn._hooks().retained[self._output_nr] = weakref.ref(self)

    def _hook_dict(self, create=True):
        ex = self._extra if not create else self._get_extra()
        if ex is None:
            return None
        if ex.hooks is None and create:
            ex.hooks = {}
        return ex.hooks

    def _post_hook_dict(self, create=True):
        ex = self._extra if not create else self._get_extra()
        if ex is None:
            return None
        if ex.post_hooks is None and create:
            ex.post_hooks = {}
        return ex.post_hooks

    def register_hook(self, hook):
        """hook(grad) runs when this tensor's gradient is computed; it may return a new one."""
        if not self._requires_grad:
            raise RuntimeError(messages.HOOK_NO_GRAD)
        fn = self.grad_fn
        if fn is None:
            return add_hook(self._hook_dict(), hook)
        hooks = fn._hooks().tensor.setdefault(self._output_nr, {})
        return add_hook(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """hook(tensor) runs after this leaf's .grad has been accumulated."""
        if self.grad_fn is not None:
            raise RuntimeError(messages.POST_HOOK_NON_LEAF)
        if not self._requires_grad:
            raise RuntimeError(messages.HOOK_NO_GRAD)
        return add_hook(self._post_hook_dict(), hook)

    def detach(self):
        """A leaf sharing this tensor's storage and version counter, with no grad."""
        out = Tensor._make(self._data)
        out._vc = self._get_vc()
        out._inference = self._inference
        return out

    def detach_(self):
        if self._base is not None:
            raise RuntimeError(messages.DETACH_VIEW)
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        return self

    # --- conversion -------------------------------------------------------------------------

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.reshape(-1)[0].item()

    def tolist(self):
        return self._data.tolist()

    def numpy(self, force=False):
        if type(self._data) in _GPU_TYPES:
            if force:
                return devices.host(self._data)
            raise TypeError(devices.NUMPY_ON_DEVICE.format(self.device))
        if self._requires_grad and not force:
            raise RuntimeError(messages.NUMPY_REQUIRES_GRAD)
        return self._data

    def __array__(self, dtype=None, copy=None):
        if type(self._data) in _GPU_TYPES:
            raise TypeError(devices.NUMPY_ON_DEVICE.format(self.device))
        if self._requires_grad:
            raise RuntimeError(messages.NUMPY_REQUIRES_GRAD)
        data = self._data
        if dtype is not None and np.dtype(dtype) != data.dtype:
            return data.astype(dtype)
        return data.copy() if copy else data

    def __float__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if self._requires_grad and not _warned_float[0]:
            _warned_float[0] = True  # torch warns once per process
            warnings.warn(messages.FLOAT_WARNING, UserWarning, stacklevel=2)
        return float(self._data.reshape(-1)[0])

    def __int__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self._data.reshape(-1)[0])

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._data.reshape(-1)[0])

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(-1)[0])

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __contains__(self, element):
        if isinstance(element, Tensor):
            element = element._data
        return bool((self._data == element).any())

    def __hash__(self):
        return id(self)

    def __repr__(self):
        if self._extra is not None and self._extra.is_param:
            return "Parameter containing:\n" + tensor_repr(self)
        return tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) "
                "support the deepcopy protocol at the moment.  If you were "
                "attempting to deepcopy a module, this may be because of a "
                "torch.nn.utils.weight_norm usage, see "
                "https://github.com/pytorch/pytorch/pull/103001"
            )
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)._make(self._data.copy(), self._requires_grad)
        if self._extra is not None and self._extra.is_param:
            out._get_extra().is_param = True
        if self._grad is not None:
            out._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = out
        return out
