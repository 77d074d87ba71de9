"""`sourcegrad.save` / `sourcegrad.load`: checkpoints in a safe format (no code on load).

A file is a zip archive holding `sourcegrad.json` (the object's structure, in JSON) and
one `.npy` array per tensor or ndarray, read back with `np.load(allow_pickle=False)`.
The structure may contain Tensors (Parameters stay Parameters; `requires_grad` is kept),
numpy arrays and scalars, None, bools, ints, floats (inf and nan included), complex
numbers, strings, bytes, lists, tuples, dicts and OrderedDicts (any of those as keys),
dtypes, devices and Sizes: state dicts, optimizer and scheduler state dicts, and nested
containers of them. Loading that needs nothing beyond numpy and JSON, so a file cannot
run code, whatever it holds.

Anything else (a Module object, a function, a user class) cannot be written that way.
`save` then pickles the whole object into the archive (as torch.save would). `load` with
`weights_only=True` (the default, as in torch 2.6+) unpickles it as torch's weights-only
unpickler does: only an allow-list of names resolves (sourcegrad's tensor, Parameter,
dtype, device and Size rebuilders, the numpy array they wrap, OrderedDict, set, ...) plus
the classes and functions the program allows with `add_safe_globals([...])` or
`with safe_globals([...]):`; any other name (a model's own class, `nn.Linear`) is refused,
with torch's message naming it, before anything of it runs. `weights_only=False`
unpickles anything: only for files from a trusted source. A plain pickle file is refused
under weights_only=True.

A checkpoint written by PyTorch's own `torch.save` (a zip holding `data.pkl` and raw
storages) is read the way torch's weights-only loader reads it: with an unpickler that
resolves only an allow-list of names (OrderedDict, torch's tensor and Parameter
rebuild functions, its storage types, dtypes, devices, Size) and so runs no other code.
Its tensors become sourcegrad Tensors (copies: storage shared between them is not
kept); bfloat16 storages are refused (numpy has no bfloat16). With
`weights_only=False`, names outside the allow-list (the user's classes) are imported
and called as pickle does.

Tensors are saved as copies of their values: two tensors sharing storage (a view and
its base, or the same tensor twice) load as independent tensors. `map_location`
(a device, a string, a dict {saved location: new location} or a callable taking
(tensor, saved location)) moves tensors when loading; without it they go back to the
device they were saved from.

Why one module: the pickled-object reader and the torch-checkpoint reader share the
user's allow-list (`add_safe_globals`, `safe_globals`: `_user_allowed`) and one refusal
(`_unsupported_global`, torch's message); split by format, what a weights-only load may
resolve would be decided in two places, and a name refused by one could pass the other.
"""

from __future__ import annotations

import collections
import io
import json
import math
import os
import pickle
import zipfile

import numpy as np

from .eager import devices, dtypes
from .eager.tensor import Size, Tensor
from .errors import SourcegradError
from .nn.parameter import Parameter

__all__ = [
    "save",
    "load",
    "WeightsOnlyLoadError",
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "safe_globals",
]

MANIFEST = "sourcegrad.json"
PICKLE = "data.pkl"
FORMAT = "sourcegrad-checkpoint"
VERSION = 1


class WeightsOnlyLoadError(SourcegradError, pickle.UnpicklingError):
    """load(weights_only=True) met something that needs unpickling, or a malformed file.

    It is a pickle.UnpicklingError as torch's weights-only failure is, so code that
    catches that keeps working."""


class _NeedsPickle(Exception):
    def __init__(self, obj):
        super().__init__(type(obj))
        self.obj = obj


def _qualname(obj) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


# --- writing -----------------------------------------------------------------------------


class _Writer:
    """Turns an object into JSON-able nodes and collects its arrays."""

    def __init__(self):
        self.arrays = []

    def _array(self, data) -> int:
        self.arrays.append(np.asarray(devices.host(data)))
        return len(self.arrays) - 1

    def encode(self, obj):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if type(obj) is int:
            return obj
        if type(obj) is float:
            return obj if math.isfinite(obj) else {"$float": repr(obj)}
        if isinstance(obj, Tensor):
            node = {
                "$tensor": self._array(obj.detach()._data),
                "requires_grad": bool(obj.requires_grad),
                "device": str(obj.device),
            }
            if isinstance(obj, Parameter):
                node["parameter"] = True
            return node
        if isinstance(obj, np.ndarray):
            if obj.dtype.hasobject:
                raise _NeedsPickle(obj)
            return {"$ndarray": self._array(obj)}
        if isinstance(obj, np.generic):
            if isinstance(obj, np.object_):
                raise _NeedsPickle(obj)
            return {"$npscalar": self._array(np.asarray(obj))}
        if type(obj) is complex:
            return {"$complex": [self.encode(obj.real), self.encode(obj.imag)]}
        if type(obj) is bytes:
            return {"$bytes": obj.hex()}
        if isinstance(obj, Size):
            return {"$size": list(obj)}
        if isinstance(obj, dtypes.dtype):
            return {"$dtype": str(obj).split(".")[-1]}
        if isinstance(obj, devices.device):
            return {"$device": str(obj)}
        if type(obj) is list:
            return [self.encode(v) for v in obj]
        if type(obj) is tuple:
            return {"$tuple": [self.encode(v) for v in obj]}
        if type(obj) in (dict, collections.OrderedDict):
            node = {"$dict": [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
            if type(obj) is collections.OrderedDict:
                node["ordered"] = True
                metadata = getattr(obj, "_metadata", None)  # nn.Module.state_dict() has it
                if metadata is not None:
                    node["metadata"] = self.encode(metadata)
            return node
        raise _NeedsPickle(obj)


def save(
    obj,
    f,
    pickle_module=None,
    pickle_protocol=2,
    _use_new_zipfile_serialization=True,
    _disable_byteorder_record=False,
):
    """Write obj to f (a path or a writable binary file object); see the module doc."""
    writer = _Writer()
    manifest = {"format": FORMAT, "version": VERSION}
    try:
        manifest["root"] = writer.encode(obj)
        pickled = None
    except _NeedsPickle as needs:
        # not expressible as data: pickle the object, as torch.save does; load() refuses it
        # unless weights_only=False
        writer.arrays = []
        manifest["pickled"] = PICKLE
        manifest["pickled_types"] = [_qualname(needs.obj)]
        pickled = (pickle_module or pickle).dumps(obj, protocol=max(pickle_protocol, 2))
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _write_zip(fh, manifest, writer.arrays, pickled)
    else:
        _write_zip(f, manifest, writer.arrays, pickled)


def _write_zip(fh, manifest, arrays, pickled):
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(MANIFEST, json.dumps(manifest, allow_nan=False))
        for i, array in enumerate(arrays):
            buf = io.BytesIO()
            np.save(buf, array, allow_pickle=False)
            zf.writestr(f"arrays/{i}.npy", buf.getvalue())
        if pickled is not None:
            zf.writestr(PICKLE, pickled)


# --- the weights-only allow-list -----------------------------------------------------------

_USER_SAFE: list = []  # what add_safe_globals / safe_globals allowed

UNSAFE_MESSAGE = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, "
    "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. \n\t(1) In "
    "PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will "
    "likely succeed, but it can result in arbitrary code execution. Do it only if you got the "
    "file from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please "
    "check the recommended steps in the following error message.\n\tWeightsUnpickler error: "
    "{error}\n\nCheck the documentation of torch.load to learn more about types accepted by "
    "default with weights_only https://pytorch.org/docs/stable/generated/torch.load.html."
)


def add_safe_globals(safe_globals) -> None:
    """Allow these classes and functions (or (object, "module.name") pairs) in weights-only
    loads, from now on."""
    _USER_SAFE.extend(safe_globals)


def get_safe_globals() -> list:
    return list(_USER_SAFE)


def clear_safe_globals() -> None:
    _USER_SAFE.clear()


class safe_globals:
    """`with safe_globals([Net, nn.Linear]):` allows those in the weights-only loads of the
    block only."""

    def __init__(self, safe_globals):
        self.safe_globals = list(safe_globals)

    def __enter__(self):
        self._saved = list(_USER_SAFE)
        add_safe_globals(self.safe_globals)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        _USER_SAFE[:] = self._saved
        return False


def _global_name(obj) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def _user_allowed() -> dict:
    allowed = {}
    for item in _USER_SAFE:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], str):
            allowed[item[1]] = item[0]
        else:
            allowed[_global_name(item)] = item
    return allowed


def _sourcegrad_defaults() -> dict:
    """The names sourcegrad's own pickles need and that run nothing else: its tensors (their
    data numpy arrays), Parameters, dtypes, devices and Sizes, and plain containers."""
    from .eager import factories

    defaults = {
        "collections.OrderedDict": collections.OrderedDict,
        "builtins.set": set,
        "builtins.frozenset": frozenset,
        "builtins.complex": complex,
        "builtins.slice": slice,
        "builtins.bytearray": bytearray,
        "_codecs.encode": __import__("codecs").encode,
        "sourcegrad.eager.factories.rebuild": factories.rebuild,
        "sourcegrad.eager.factories._rebuild": factories.rebuild,
        "sourcegrad.eager.tensor.Tensor": Tensor,
        "sourcegrad.eager.tensor.Size": Size,
        "sourcegrad.nn.parameter.Parameter": Parameter,
        "sourcegrad.eager.dtypes._by_name": dtypes.float32.__reduce__()[0],
        "sourcegrad.eager.devices.device": devices.device,
        "numpy.ndarray": np.ndarray,
        "numpy.dtype": np.dtype,
    }
    for core in ("numpy._core.multiarray", "numpy.core.multiarray"):
        defaults[core + "._reconstruct"] = np.ndarray.__reduce__(np.zeros(0))[0]
        defaults[core + ".scalar"] = np.float64(0).__reduce__()[0]
    return defaults


class _WeightsUnpickler(pickle.Unpickler):
    """Resolves only the allow-listed names (torch's weights-only rule): an instance of any
    other class is never made, a function of any other name never called."""

    def find_class(self, module, name):
        if module == "__builtin__":  # protocol 2 spells Python 3's builtins so
            module = "builtins"
        full = f"{module}.{name}"
        allowed = _sourcegrad_defaults()
        if full in allowed:
            return allowed[full]
        user = _user_allowed()
        if full in user:
            return user[full]
        raise _unsupported_global(full)


def _unsupported_global(full) -> "WeightsOnlyLoadError":
    return WeightsOnlyLoadError(
        UNSAFE_MESSAGE.format(
            error=f"Unsupported global: GLOBAL {full} was not an allowed global by default. "
            f"Please use `torch.serialization.add_safe_globals([{full}])` or the "
            f"`torch.serialization.safe_globals([{full}])` context manager to allowlist this "
            "global if you trust this class/function."
        )
    )


# --- reading -----------------------------------------------------------------------------


def _refuse(message):
    raise WeightsOnlyLoadError(
        "Weights only load failed. " + message + " Loading with weights_only=False runs "
        "arbitrary code from the file: do it only if you trust where the file comes from."
    )


class _Reader:
    def __init__(self, zf, map_location):
        self.zf = zf
        self.names = set(zf.namelist())
        self.map_location = map_location

    def _array(self, index):
        name = f"arrays/{index}.npy" if isinstance(index, int) and index >= 0 else None
        if name not in self.names:
            _refuse(f"The file is malformed: it has no array {index!r}.")
        try:
            return np.load(io.BytesIO(self.zf.read(name)), allow_pickle=False)
        except ValueError as e:  # an object array: would need pickle
            _refuse(f"Array {name} cannot be read without unpickling ({e}).")

    def _tensor(self, node):
        data = self._array(node["$tensor"])
        location = node.get("device", "cpu")
        t = _place(Tensor._make(data), location, self.map_location)
        if node.get("parameter"):
            return Parameter(t, requires_grad=bool(node.get("requires_grad", True)))
        if node.get("requires_grad"):
            t.requires_grad_(True)
        return t

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict) or len([k for k in node if k.startswith("$")]) != 1:
            _refuse(f"The file is malformed: unexpected node {str(node)[:80]!r}.")
        if "$tensor" in node:
            return self._tensor(node)
        if "$ndarray" in node:
            return self._array(node["$ndarray"])
        if "$npscalar" in node:
            return self._array(node["$npscalar"])[()]
        if "$float" in node:
            if node["$float"] not in ("inf", "-inf", "nan"):
                _refuse(f"The file is malformed: bad float {node['$float']!r}.")
            return float(node["$float"])
        if "$complex" in node:
            return complex(*(self.decode(v) for v in node["$complex"]))
        if "$bytes" in node:
            return bytes.fromhex(node["$bytes"])
        if "$size" in node:
            return Size(node["$size"])
        if "$dtype" in node:
            value = getattr(dtypes, node["$dtype"], None)
            if not isinstance(value, dtypes.dtype):
                _refuse(f"The file is malformed: unknown dtype {node['$dtype']!r}.")
            return value
        if "$device" in node:
            return devices.device(node["$device"])
        if "$tuple" in node:
            return tuple(self.decode(v) for v in node["$tuple"])
        if "$dict" in node:
            items = [(_hashable(self.decode(k)), self.decode(v)) for k, v in node["$dict"]]
            if node.get("ordered"):
                out = collections.OrderedDict(items)
                if "metadata" in node:
                    out._metadata = self.decode(node["metadata"])
                return out
            return dict(items)
        _refuse(f"The file is malformed: unknown node type {next(iter(node))!r}.")


def _hashable(key):
    try:
        hash(key)
    except TypeError:
        _refuse(f"The file is malformed: a dict key of type {type(key).__name__}.")
    return key


def _target_device(map_location, location):
    """Where a tensor saved on `location` goes: a device string, or a callable."""
    if map_location is None:
        if location.startswith("cuda") and not devices.is_available():
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
                "is False. If you are running on a CPU-only machine, please use torch.load with "
                "map_location=torch.device('cpu') to map your storages to the CPU."
            )
        return location
    if isinstance(map_location, dict):
        return str(map_location.get(location, location))
    if isinstance(map_location, (str, devices.device)):
        return str(map_location)
    if callable(map_location):
        return map_location
    raise TypeError(
        f"map_location must be None, a string, a device, a dict or a callable, "
        f"not {type(map_location).__name__}"
    )


def load(
    f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args
):
    """Read what `save` wrote from f (a path or a readable, seekable binary file object).

    weights_only (default True, as torch 2.6+): read only the safe format and refuse
    anything that would need unpickling; False: also unpickle a pickled object (runs
    code from the file).
    """
    weights_only = True if weights_only is None else bool(weights_only)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load(fh, map_location, pickle_module, weights_only, pickle_load_args)
    return _load(f, map_location, pickle_module, weights_only, pickle_load_args)


def _load(fh, map_location, pickle_module, weights_only, pickle_load_args):
    start = fh.tell() if hasattr(fh, "tell") else 0
    if hasattr(fh, "read") and fh.read(1) == b"":
        # (nothing left from here: a buffer saved into and not seeked back. zipfile would
        # find the archive behind the position; torch reads from it, and its unpickler
        # runs out of input)
        raise EOFError
    fh.seek(start)
    if not zipfile.is_zipfile(fh):
        fh.seek(start)
        if weights_only:
            _refuse(
                "The file is not a sourcegrad checkpoint (not a zip archive); it may be a pickle."
            )
        return (pickle_module or pickle).load(fh, **pickle_load_args)
    fh.seek(start)
    with zipfile.ZipFile(fh) as zf:
        if MANIFEST not in zf.namelist():
            pickles = [name for name in zf.namelist() if name.endswith("/data.pkl")]
            if len(pickles) == 1:
                return _load_torch_zip(
                    zf, pickles[0][: -len("data.pkl")], map_location, weights_only
                )
            _refuse("The zip archive has no sourcegrad manifest.")
        try:
            manifest = json.loads(zf.read(MANIFEST))
        except ValueError as e:
            _refuse(f"The manifest is not valid JSON ({e}).")
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            _refuse("The manifest is not a sourcegrad checkpoint's.")
        if manifest.get("version") != VERSION:
            _refuse(f"Unknown checkpoint version {manifest.get('version')!r}.")
        if "pickled" in manifest:
            if manifest["pickled"] != PICKLE or PICKLE not in zf.namelist():
                _refuse("The manifest names an unexpected pickle member.")
            data = zf.read(PICKLE)
            if weights_only:  # the allow-listed names only (see the module doc)
                return _weights_only_loads(data)
            return (pickle_module or pickle).loads(data, **pickle_load_args)
        if "root" not in manifest:
            _refuse("The manifest has no object.")
        return _Reader(zf, map_location).decode(manifest["root"])


# --- PyTorch's zip checkpoints --------------------------------------------------------------

_TORCH_STORAGES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
    "ComplexFloatStorage": np.complex64,
    "ComplexDoubleStorage": np.complex128,
}


class _StorageType:
    """What `torch.FloatStorage` & co. resolve to: the storage's numpy dtype."""

    def __init__(self, name):
        self.name = name
        self.dtype = np.dtype(_TORCH_STORAGES[name])


class _Storage:
    def __init__(self, array, location):
        self.array = array
        self.location = location


class _TorchUnpickler(pickle.Unpickler):
    """Unpickles torch's data.pkl resolving only allow-listed names (torch's weights-only
    rule); `persistent_load` reads the raw storages from the archive."""

    def __init__(self, data, zf, prefix, map_location, weights_only):
        super().__init__(io.BytesIO(data))
        self.zf = zf
        self.prefix = prefix
        self.map_location = map_location
        self.weights_only = weights_only
        self.storages = {}
        byteorder = prefix + "byteorder"
        self.byteorder = zf.read(byteorder).decode() if byteorder in zf.namelist() else "little"

    def find_class(self, module, name):
        if module == "__builtin__":  # protocol 2 spells Python 3's builtins so
            module = "builtins"
        allowed = {
            ("collections", "OrderedDict"): collections.OrderedDict,
            ("torch._utils", "_rebuild_tensor_v2"): self._rebuild_tensor_v2,
            ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
            ("torch", "device"): devices.device,
            ("torch", "Size"): Size,
            ("builtins", "complex"): complex,
            ("builtins", "set"): set,
            ("builtins", "frozenset"): frozenset,
        }
        if (module, name) in allowed:
            return allowed[module, name]
        if module == "torch" and name in _TORCH_STORAGES:
            return _StorageType(name)
        if module == "torch" and isinstance(getattr(dtypes, name, None), dtypes.dtype):
            return getattr(dtypes, name)
        user = _user_allowed()
        if f"{module}.{name}" in user:
            return user[f"{module}.{name}"]
        if module == "torch" and name == "BFloat16Storage":
            raise WeightsOnlyLoadError(
                "The checkpoint holds a bfloat16 tensor, which sourcegrad "
                "cannot represent (numpy has no bfloat16)."
            )
        if module.split(".")[0] == "torch" and not self.weights_only:
            raise WeightsOnlyLoadError(
                f"Unsupported global: GLOBAL {module}.{name}: sourcegrad "
                "rebuilds only tensors, Parameters, dtypes, devices and "
                "Sizes from a PyTorch checkpoint."
            )
        if self.weights_only:
            raise _unsupported_global(f"{module}.{name}")
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not (
            isinstance(pid, tuple)
            and len(pid) == 5
            and pid[0] == "storage"
            and isinstance(pid[1], _StorageType)
        ):
            _refuse(f"The checkpoint has an unexpected persistent id {str(pid)[:80]!r}.")
        _, storage_type, key, location, numel = pid
        if key not in self.storages:
            name = f"{self.prefix}data/{key}"
            if name not in self.zf.namelist():
                _refuse(f"The checkpoint has no storage {key!r}.")
            dtype = storage_type.dtype.newbyteorder("<" if self.byteorder == "little" else ">")
            array = np.frombuffer(self.zf.read(name), dtype=dtype)
            if array.size < numel:
                _refuse(f"Storage {key!r} is shorter than its {numel} elements.")
            self.storages[key] = _Storage(array.astype(storage_type.dtype), str(location))
        return self.storages[key]

    def _rebuild_tensor_v2(
        self, storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None
    ):
        array = storage.array
        size, stride = tuple(size), tuple(stride)
        if size:
            last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
            if min(size) > 0 and (storage_offset < 0 or min(stride) < 0 or last >= array.size):
                _refuse("A tensor reaches outside its storage.")
        if 0 in size:
            data = np.zeros(size, array.dtype)
        else:
            view = np.lib.stride_tricks.as_strided(
                array[storage_offset:],
                shape=size,
                strides=[s * array.itemsize for s in stride],
                writeable=False,
            )
            data = np.array(view)  # a copy: tensors do not share memory (module doc)
        t = _place(Tensor._make(data), storage.location, self.map_location)
        if requires_grad:
            t.requires_grad_(True)
        return t


def _rebuild_parameter(data, requires_grad, backward_hooks):
    return Parameter(data, requires_grad)


def _place(t, location, map_location):
    target = _target_device(map_location, location)
    if callable(target):
        moved = target(t, location)
        return moved if isinstance(moved, Tensor) else t
    return t if target == "cpu" else t.to(target)


def _weights_only_loads(data):
    try:
        return _WeightsUnpickler(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, WeightsOnlyLoadError):
        raise
    except (TypeError, ValueError, IndexError, KeyError, EOFError, AttributeError) as e:
        _refuse(f"The pickled object could not be read ({type(e).__name__}: {e}).")


def _load_torch_zip(zf, prefix, map_location, weights_only):
    data = zf.read(prefix + "data.pkl")
    try:
        return _TorchUnpickler(data, zf, prefix, map_location, weights_only).load()
    except (pickle.UnpicklingError, WeightsOnlyLoadError):
        raise
    except (TypeError, ValueError, IndexError, KeyError, EOFError, AttributeError) as e:
        _refuse(f"The PyTorch checkpoint could not be read ({type(e).__name__}: {e}).")
