"""Devices: where a tensor's data lives, numpy on the CPU or CuPy on a CUDA GPU.

A Tensor's `_data` is a `numpy.ndarray` (device `cpu`) or a `cupy.ndarray`
(device `cuda:<index>`); nothing else records the device, so an op's result is on
the device of its inputs simply because the array module is chosen from the data.
The ops call `np.*` functions, which NumPy hands to CuPy for CuPy arrays through
`__array_ufunc__` / `__array_function__` (NEP 13 and 18); the few places that
create arrays from nothing but a shape ask this module for the array module.

CuPy is imported only when a CUDA tensor is asked for. Without a CUDA device (or
without CuPy) that raises one clear RuntimeError, the analogue of torch's "Torch not
compiled with CUDA enabled"; `sourcegrad.cuda.is_available()` says so beforehand.

As in torch, an op refuses tensors on two devices, except that a 0-d CPU tensor
may take part in an op on the GPU, as a Python number would.

Imports: nothing of sourcegrad (a leaf of the eager package; cupy lazily).
"""

from __future__ import annotations

import contextlib

import numpy as np

# array type -> its module (numpy, and cupy once it is loaded); the types that live on a GPU
_MODULES: dict = {np.ndarray: np}
DEVICE_TYPES: set = set()
_CUPY: list = [None]  # the cupy module, once a device has been found
_NO_CUDA: list = [None]  # why there is no CUDA device, once that is known

MIXED = "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"
NUMPY_ON_DEVICE = (
    "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the "
    "tensor to host memory first."
)


class device:
    """Where a tensor lives (`torch.device`): `device("cpu")`, `device("cuda")`, `device(0)`.

    `device("cuda:1")` and `device("cuda", 1)` are the same; a bare int is a CUDA index,
    as in torch. `device("cuda")` (no index) means the current CUDA device and is not
    equal to `device("cuda", 0)`, as in torch. A string compares equal to the device it
    names (`x.device == "cpu"`).
    """

    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):  # noqa: A002 - torch's parameter name
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        else:
            text = str(type)
            if ":" in text:
                if index is not None:
                    raise RuntimeError(
                        "type (string) must not include an index because index "
                        f"was passed explicitly: {text}"
                    )
                text, _, number = text.partition(":")
                if not number.isdigit():
                    raise RuntimeError(f"Invalid device string: '{type}'")
                index = int(number)
            type = text
        if type not in ("cpu", "cuda"):
            raise RuntimeError(
                f"sourcegrad's eager tensors live on 'cpu' or 'cuda' (through CuPy), not {type!r}"
            )
        if index is not None:
            index = int(index)
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type = type
        self.index = index

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except RuntimeError:
                return False
        if not isinstance(other, device):
            return False
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")
_CUDA: dict = {}  # index -> device("cuda", index)


def as_device(value):
    """A `device` for what a `device=` argument may be (a device, a string or an int)."""
    return value if isinstance(value, device) else device(value)


_DEFAULT_DEVICE: list = [None]  # set_default_device's device; None: the CPU


def set_default_device(value) -> None:
    """torch.set_default_device: where factories put tensors when no device= is given
    (None: back to the CPU)."""
    _DEFAULT_DEVICE[0] = None if value is None else as_device(value)


def get_default_device() -> device:
    """torch.get_default_device."""
    return _DEFAULT_DEVICE[0] or CPU


def default_device():
    """The device set by set_default_device, or None for the CPU."""
    dev = _DEFAULT_DEVICE[0]
    return None if dev is None or dev.type == "cpu" else dev


# --- CuPy --------------------------------------------------------------------------------------


def cupy():
    """The cupy module, once a CUDA device is known to exist; a clear RuntimeError otherwise."""
    cp = _CUPY[0]
    if cp is not None:
        return cp
    if _NO_CUDA[0] is None:
        _NO_CUDA[0] = _find_cuda()
        if _NO_CUDA[0] is None:
            return _CUPY[0]
    raise RuntimeError(_NO_CUDA[0])


def _find_cuda():
    """Import CuPy and count the devices; the reason there is no CUDA device, or None."""
    try:
        import cupy as cp
    except Exception as e:  # noqa: BLE001 - not installed, or an install that cannot load
        return (
            f"no CUDA device is available (CuPy could not be imported: {e}); sourcegrad's "
            "CUDA tensors need CuPy and an NVIDIA GPU"
        )
    try:
        count = cp.cuda.runtime.getDeviceCount()
        reason = ""
    except Exception as e:  # noqa: BLE001 - CUDARuntimeError: no driver, no device
        count, reason = 0, f": {e}"
    if count <= 0:
        return (
            f"no CUDA device is available (CuPy found none{reason}); sourcegrad's CUDA "
            "tensors need an NVIDIA GPU"
        )
    register(cp, cp.ndarray)
    return None


def register(module, array_type):
    """Make `array_type` (cupy.ndarray) the arrays of the GPU, with `module` their functions."""
    _MODULES[array_type] = module
    DEVICE_TYPES.add(array_type)
    _CUPY[0] = module


def is_available() -> bool:
    """Whether CUDA tensors can be made here (CuPy imports and sees a device)."""
    try:
        cupy()
    except RuntimeError:
        return False
    return True


def device_count() -> int:
    if not is_available():
        return 0
    return int(_CUPY[0].cuda.runtime.getDeviceCount())


def current_index() -> int:
    return int(cupy().cuda.Device().id)


def synchronize(dev=None):
    """Wait for the work queued on a CUDA device (`torch.cuda.synchronize`)."""
    cp = cupy()
    index = None if dev is None else as_device(dev).index
    cp.cuda.Device(index if index is not None else cp.cuda.Device().id).synchronize()


# --- arrays and their devices ------------------------------------------------------------------


def is_device_array(x) -> bool:
    """Whether `x` is an array on a GPU (a cupy.ndarray)."""
    t = type(x)
    if t in DEVICE_TYPES:
        return True
    if t is np.ndarray or _CUPY[0] is not None or t in _OTHER_TYPES:
        return False
    # a CuPy array made before sourcegrad loaded CuPy itself
    if t.__module__.split(".")[0] == "cupy" and hasattr(x, "__cuda_array_interface__"):
        cupy()
        return t in DEVICE_TYPES
    _OTHER_TYPES.add(t)
    return False


_OTHER_TYPES: set = set()  # types seen that are not GPU arrays (numbers, lists, ...)


def xp_of(data):
    """The array module of `data`: numpy for host arrays and numbers, cupy for GPU arrays."""
    m = _MODULES.get(type(data))
    if m is not None:
        return m
    return _MODULES[type(data)] if is_device_array(data) else np


def cuda_device(index) -> device:
    d = _CUDA.get(index)
    if d is None:
        d = _CUDA[index] = device("cuda", index)
    return d


def device_of(data) -> device:
    """The device of an array (the CPU for numbers and numpy arrays)."""
    if type(data) is np.ndarray or not is_device_array(data):
        return CPU
    return cuda_device(int(data.device.id))


def same_place(data, dev) -> bool:
    """Whether array `data` is on device `dev` (`cuda` without an index: the current one)."""
    if dev.type == "cpu":
        return not is_device_array(data)
    if not is_device_array(data):
        return False
    index = current_index() if dev.index is None else dev.index
    return int(data.device.id) == index


def _index(dev, cp):
    if dev.index is None:
        return int(cp.cuda.Device().id)
    count = cp.cuda.runtime.getDeviceCount()
    if dev.index >= count:
        raise RuntimeError(
            f"CUDA error: invalid device ordinal (cuda:{dev.index} asked for, "
            f"{count} device(s) present)"
        )
    return dev.index


def using(dev):
    """A context in which CuPy allocates on device `dev` (nothing to do for the CPU)."""
    if dev is None or dev.type == "cpu":
        return contextlib.nullcontext()
    cp = cupy()
    return cp.cuda.Device(_index(dev, cp))


def module_for(dev):
    """The array module that makes arrays on device `dev`."""
    if dev is None or dev.type == "cpu":
        return np
    return cupy()


def make(dev, name, *args, **kwargs):
    """`xp.<name>(*args, **kwargs)` (zeros, ones, full, ...) on device `dev`."""
    if dev is None or dev.type == "cpu":
        return getattr(np, name)(*args, **kwargs)
    cp = cupy()
    with cp.cuda.Device(_index(dev, cp)):
        return getattr(cp, name)(*args, **kwargs)


def to_device(data, dev):
    """Array `data` on device `dev`: `data` itself if it is there already, else a copy."""
    if dev.type == "cpu":
        if type(data) is np.ndarray:
            return data
        if is_device_array(data):
            return data.get()
        return np.asarray(data)
    cp = cupy()
    index = _index(dev, cp)
    if is_device_array(data):
        if int(data.device.id) == index:
            return data
        with cp.cuda.Device(index):
            return cp.array(data, copy=True)
    with cp.cuda.Device(index):
        return cp.asarray(data)


def host(data):
    """A numpy view or copy of an array on any device (for printing and lists)."""
    if type(data) is np.ndarray:
        return data
    return data.get() if is_device_array(data) else np.asarray(data)


def copy(data):
    """An owned copy of an array on its own device, keeping its memory layout."""
    if type(data) is np.ndarray:
        return np.array(data, copy=True)
    return data.copy(order="K")


def contiguous_copy(data):
    """An owned C-ordered copy of an array on its own device (`reshape(-1)` of it is a view)."""
    if type(data) is np.ndarray:
        return np.array(data, copy=True, order="C")
    return data.copy(order="C")


def writeable(data) -> bool:
    """Whether each element of `data` has its own memory (not an expanded, zero-stride view)."""
    if type(data) is np.ndarray and not data.flags.writeable:
        return False
    return data.size == 0 or not any(s == 0 and n > 1 for s, n in zip(data.strides, data.shape))


def data_ptr(data) -> int:
    if type(data) is np.ndarray:
        return data.__array_interface__["data"][0]
    return int(data.data.ptr)


def mixed(*datas) -> RuntimeError:
    """torch's error for an op given tensors on two devices (the GPU named first)."""
    devs = []
    for d in datas:
        dev = device_of(d)
        if dev not in devs:
            devs.append(dev)
    devs.sort(key=lambda d: d.type == "cpu")
    return RuntimeError(MIXED.format(devs[0], devs[1] if len(devs) > 1 else devs[0]))


def check_same(*datas):
    """Raise torch's error unless all the arrays among `datas` are on one device."""
    first = None
    for d in datas:
        t = type(d)
        if t is np.ndarray:
            where = None
        elif t in DEVICE_TYPES:
            where = int(d.device.id)
        else:
            continue
        if first is None:
            first = (where,)
        elif first[0] != where:
            raise mixed(*[a for a in datas if type(a) is np.ndarray or type(a) in DEVICE_TYPES])
