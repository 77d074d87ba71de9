"""Making tensors: `tensor`, `zeros`, `arange`, `randn`, `*_like`, ... and the random generator.

dtypes are inferred as torch infers them: Python floats give the default dtype
(float32), ints int64, bools bool; a numpy array keeps its dtype. A factory
asked for `requires_grad=True` with a non-floating dtype raises torch's error.

Random numbers come from a numpy `Generator` seeded by `manual_seed`. The
sequences are reproducible but are not torch's (torch's Mersenne-Twister
stream and its normal sampler are not reproduced).

`device="cuda"` puts the result on the GPU (a CuPy array; see `devices`). Random
tensors for the GPU are drawn on the host from the same generator and copied, so
`randn(3, device="cuda")` holds what `randn(3)` would have, seed for seed. The
`*_like` and `new_*` factories default to the device of the tensor they copy from.

Imports: `tensor` and the leaves only.

Why one module: every way torch makes a tensor without an input tensor, sharing one
handling of dtype, device, generator and out=.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from . import devices, dtypes, messages
from .out_arg import store
from .tensor import Size, Tensor

_wrap = Tensor._make


# --- random ----------------------------------------------------------------------------------

_DEFAULT_SEED = 67280421310721  # torch's default seed, for a deterministic start


class Generator:
    """A random-number generator (`torch.Generator`) backed by numpy's PCG64."""

    def __init__(self, device="cpu"):
        self._seed = _DEFAULT_SEED
        self._rng = np.random.default_rng(self._seed)

    def manual_seed(self, seed):
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def seed(self):
        self._seed = int(np.random.SeedSequence().entropy % (2**63))
        self._rng = np.random.default_rng(self._seed)
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return self._rng.bit_generator.state

    def set_state(self, state):
        self._rng.bit_generator.state = state
        return self


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator (and return it, as torch does)."""
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def numpy_rng(generator=None):
    """The numpy Generator behind `generator` (the default one when None); every random draw
    asks for it here, so `random_guard` sees each one."""
    if _GUARD[0] is not None:
        _GUARD[0]()
    return (generator or default_generator)._rng


_GUARD: list = [None]


class random_guard:  # noqa: N801 - used as a context manager, like no_grad
    """`with random_guard(fn):` calls fn() before every random draw inside the block (fn may
    raise: `func.vmap` refuses random ops in its default randomness mode); None: no guard."""

    def __init__(self, fn):
        self.fn = fn

    def __enter__(self):
        self.saved = _GUARD[0]
        _GUARD[0] = self.fn
        return self

    def __exit__(self, *exc):
        _GUARD[0] = self.saved
        return False


# --- helpers ---------------------------------------------------------------------------------


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = size[0]
    if len(size) == 1 and isinstance(size[0], Tensor):
        size = tuple(size[0].tolist())
    return tuple(int(s) for s in size)


def _finish(data, requires_grad, device=None):
    """Wrap factory output (moved to `device`); check requires_grad against the dtype."""
    if requires_grad and data.dtype.kind not in "fc":
        raise RuntimeError(messages.FLOAT_ONLY_FACTORY)
    if device is not None and device.type != "cpu":
        data = devices.to_device(data, device)
    return _wrap(data, bool(requires_grad))


def _into(name, out, data, dtype):
    """torch's `out=` for a factory: `data` written into `out` (resized when its shape
    differs, cast to its dtype), its version bumped, and `out` returned. As torch: a `dtype`
    other than out's is an error, and so is an out that requires grad (an out= function is
    not differentiable)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out.requires_grad:
        raise RuntimeError(
            f"aten::{name}(): functions with out=... arguments don't support "
            "automatic differentiation, but one of the arguments requires grad."
        )
    if dtype is not None and dtypes.as_dtype(dtype).dtype != out._data.dtype:
        raise RuntimeError(
            f"dtype {dtypes.as_dtype(dtype)._scalar_name} does not match dtype "
            f"of out parameter ({out.dtype._scalar_name})"
        )
    return store(out, data)


def _out_dtype(out, dtype):
    """The dtype a factory makes: the one asked for, else out's (torch infers it from out)."""
    return dtype if dtype is not None or out is None else out.dtype


def _np_dtype(dtype, default=None):
    if dtype is None:
        return (default or dtypes.DEFAULT_DTYPE[0]).dtype
    return dtypes.as_dtype(dtype).dtype


def _check_device(device):
    """The `device` a `device=` argument names (None: set_default_device's, else the CPU)."""
    if device is None:
        device = devices.default_device()
    if device is None:
        return None
    dev = devices.as_device(device)
    if dev.type == "cuda":
        devices.cupy()  # no CUDA device: say so now, before any work
    return dev


def _device_of(input, device):
    """The device for a `*_like` / `new_*` result: the one asked for, else the input's."""
    return _check_device(device) if device is not None else input.device


# --- from data -------------------------------------------------------------------------------


def _plain(data):
    """Nested lists/tuples with Tensors inside, as plain Python numbers and host arrays."""
    if isinstance(data, Tensor):
        return devices.host(data._data) if data._data.ndim else data._data.item()
    if type(data) in devices.DEVICE_TYPES:
        return data.get() if data.ndim else data.item()
    if isinstance(data, (list, tuple)):
        return [_plain(d) for d in data]
    return data


def _infer(data, want=None):
    """The numpy array torch.tensor would make from `data`, with torch's dtype inference.

    With a floating `want` dtype (`tensor(0.1, dtype=float64)`), Python floats are
    converted to it directly, not through the default dtype.
    """
    floating = want if want is not None and want.kind in "fc" else None
    if isinstance(data, np.ndarray):
        return np.array(data, copy=True)
    if isinstance(data, np.generic):
        return np.array(data)
    if isinstance(data, bool):
        return np.array(data, np.bool_)
    if isinstance(data, numbers.Integral):
        return np.array(data, np.int64)
    if isinstance(data, numbers.Real):
        return np.array(data, floating or dtypes.DEFAULT_DTYPE[0].dtype)
    if isinstance(data, numbers.Complex):
        return np.array(data, dtypes.default_complex_dtype().dtype)
    plain = _plain(data)
    arr = np.array(plain)
    if arr.dtype == object:
        raise ValueError("expected sequence of equal-length sequences")
    if arr.dtype.kind == "f" and not _has_arrays(plain):
        arr = arr.astype(floating or dtypes.DEFAULT_DTYPE[0].dtype)
    elif arr.dtype.kind == "f" and _has_arrays(plain):
        arr = arr.astype(_widest_float(plain))
    elif arr.dtype.kind == "c":
        arr = arr.astype(dtypes.default_complex_dtype().dtype)
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "b":
        raise TypeError(f"can't convert {arr.dtype} data to a tensor")
    return arr


def _has_arrays(plain):
    if isinstance(plain, np.ndarray):
        return True
    if isinstance(plain, list):
        return any(_has_arrays(p) for p in plain)
    return False


def _widest_float(plain):
    kinds = []

    def visit(p):
        if isinstance(p, np.ndarray):
            kinds.append(p.dtype)
        elif isinstance(p, list):
            for q in p:
                visit(q)
        elif isinstance(p, float):
            kinds.append(dtypes.DEFAULT_DTYPE[0].dtype)

    visit(plain)
    return np.result_type(*kinds) if kinds else dtypes.DEFAULT_DTYPE[0].dtype


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new leaf tensor holding a copy of `data` (a CuPy array's copy stays on its GPU)."""
    dev = _check_device(device)
    if isinstance(data, Tensor):
        warnings.warn(messages.COPY_CONSTRUCT, UserWarning, stacklevel=2)
        arr = devices.copy(data._data)
    elif devices.is_device_array(data):
        dtypes.from_numpy_dtype(data.dtype)
        arr = data.copy()
    else:
        arr = _infer(data, None if dtype is None else dtypes.as_dtype(dtype).dtype)
    if dtype is not None:
        arr = arr.astype(dtypes.as_dtype(dtype).dtype)
    if dev is not None and type(arr) is not np.ndarray:
        arr = devices.to_device(arr, dev)
    return _finish(arr, requires_grad, dev)


def as_tensor(data, dtype=None, device=None):
    """Like tensor(), but shares memory with a Tensor or array when no conversion is needed.

    A CuPy array gives a CUDA tensor on the same memory, as torch does for arrays with
    `__cuda_array_interface__`.
    """
    dev = _check_device(device)
    if isinstance(data, Tensor):
        out = data if dtype is None else data.to(dtype)
        return out if dev is None else out.to(dev)
    if isinstance(data, np.ndarray) or devices.is_device_array(data):
        want = data.dtype if dtype is None else dtypes.as_dtype(dtype).dtype
        dtypes.from_numpy_dtype(want)
        arr = data if data.dtype == want else data.astype(want)
        return _wrap(arr if dev is None else devices.to_device(arr, dev))
    return tensor(data, dtype=dtype, device=dev)


asarray = as_tensor


def from_numpy(ndarray):
    """A tensor sharing memory with `ndarray` (its dtype kept)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dtypes.from_numpy_dtype(ndarray.dtype)
    return _wrap(ndarray)


_LEGACY_SIGNATURES = """, but expected one of:
 * (*, torch.device device = None)
      didn't match because some of the keywords were incorrect: {keys}
 * (torch.Storage storage)
 * (Tensor other)
 * (tuple of ints size, *, torch.device device = None)
 * (object data, *, torch.device device = None)
"""


def legacy_tensor(cls, *args, dtype=None, **kwargs):
    """torch.Tensor(...): sizes give an uninitialised float tensor, data gives a float copy.
    It takes no dtype or requires_grad (torch.tensor does): those raise torch's TypeError.
    `dtype` is the legacy type's (`torch.LongTensor([1, 2])`: int64), the default dtype
    for `torch.Tensor`."""
    unexpected = [k for k in kwargs if k != "device"]
    if unexpected:
        got = ", ".join(
            [type(a).__name__ for a in args]
            + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
        )
        raise TypeError(
            f"new() received an invalid combination of arguments - got ({got})"
            + _LEGACY_SIGNATURES.format(keys=", ".join(unexpected))
        )
    dev = _check_device(kwargs.get("device"))
    want = dtypes.DEFAULT_DTYPE[0] if dtype is None else dtype
    d = want.dtype
    if not args:
        data = np.empty((0,), d)
    elif all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        data = np.empty(tuple(args), d)
    elif len(args) == 1 and isinstance(args[0], Size):
        data = np.empty(tuple(args[0]), d)
    elif len(args) == 1 and isinstance(args[0], Tensor):  # the callers make it an alias
        if dtype is not None and args[0].dtype != dtype:
            raise TypeError(
                f"expected TensorOptions({_options(want)}) (got TensorOptions("
                f"{_options(args[0].dtype)}))"
            )
        return args[0]
    elif len(args) == 1:
        if isinstance(args[0], str):
            raise TypeError("new(): invalid data type 'str'")
        if isinstance(args[0], numbers.Number):
            raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
        data = np.array(_plain(args[0]), dtype=d)
    else:
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(
            f"new() received an invalid combination of arguments - got ({got}), but expected "
            "one of:\n * (*, torch.device device = None)\n * (torch.Storage storage)\n"
            " * (Tensor other)\n * (tuple of ints size, *, torch.device device = None)\n"
            " * (object data, *, torch.device device = None)\n"
        )
    if dev is not None and dev.type != "cpu":
        data = devices.to_device(data, dev)
    t = cls._make(data)
    return t


def _options(dtype):
    return (
        f"dtype={dtype._c_name}, device=cpu, layout=Strided, requires_grad=false (default), "
        "pinned_memory=false (default), memory_format=(nullopt)"
    )


def rebuild(data, requires_grad, cls=Tensor):
    t = cls._make(data, requires_grad)
    if cls is not Tensor:
        t._get_extra().is_param = True
    return t


_rebuild = rebuild  # the name pickles made before it was public refer to


# --- filled tensors ---------------------------------------------------------------------------


def zeros(
    *size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False
):
    dev = _check_device(device)
    data = devices.make(dev, "zeros", _size(size), _np_dtype(_out_dtype(out, dtype)))
    return _into("zeros", out, data, dtype) if out is not None else _finish(data, requires_grad)


def ones(
    *size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False
):
    dev = _check_device(device)
    data = devices.make(dev, "ones", _size(size), _np_dtype(_out_dtype(out, dtype)))
    return _into("ones", out, data, dtype) if out is not None else _finish(data, requires_grad)


def empty(
    *size,
    dtype=None,
    device=None,
    requires_grad=False,
    out=None,
    layout=None,
    pin_memory=False,
    memory_format=None,
):
    dev = _check_device(device)
    if out is not None:  # torch.empty(n, out=t): t resized, its values left as they are
        if tuple(out.shape) != _size(size):
            return _into(
                "empty", out, devices.make(dev, "zeros", _size(size), out._data.dtype), dtype
            )
        return _into("empty", out, out._data, dtype)
    return _finish(devices.make(dev, "empty", _size(size), _np_dtype(dtype)), requires_grad)


def _fill_dtype(value):
    if isinstance(value, Tensor):
        return value.dtype
    return dtypes.scalar_dtype(value)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    dev = _check_device(device)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    wanted = _out_dtype(out, dtype)
    d = dtypes.as_dtype(wanted).dtype if wanted is not None else _fill_dtype(fill_value).dtype
    data = devices.make(dev, "full", _size((size,)), fill_value, d)
    return _into("full", out, data, dtype) if out is not None else _finish(data, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None):
    dev = _check_device(device)
    data = devices.make(dev, "eye", n, m, dtype=_np_dtype(_out_dtype(out, dtype)))
    return _into("eye", out, data, dtype) if out is not None else _finish(data, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    """Integers (int64) unless an argument or `dtype` is floating, as in torch."""
    dev = _check_device(device)
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if out is not None:
        dtype = _out_dtype(out, dtype)
    if dtype is None:
        floating = any(isinstance(v, float) for v in vals)
        d = dtypes.DEFAULT_DTYPE[0].dtype if floating else np.dtype(np.int64)
    else:
        d = dtypes.as_dtype(dtype).dtype
    n = max(0, math.ceil((end - start) / step))
    data = (
        (start + np.arange(n, dtype=np.float64) * step)
        if d.kind in "fc"
        else np.arange(start, start + n * step, step)[:n]
    )
    data = np.asarray(data).astype(d)
    return (
        _into("arange", out, data, None) if out is not None else _finish(data, requires_grad, dev)
    )


def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """torch.range (deprecated): includes `end`; float by default."""
    if end is None:
        start, end = 0, start
    n = int(math.floor((end - start) / step)) + 1
    d = _np_dtype(dtype)
    return _finish((start + np.arange(n) * step).astype(d), requires_grad, _check_device(device))


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    """torch's linspace: the first half counts up from start, the second down from end.

    As torch's CPU kernel computes it: start, end and the step in the result's dtype
    (double for integers), each value `start + step * i` (`end - step * j`) rounded once, as
    the fused multiply-add the kernel compiles to rounds it; long double holds the exact
    product, so float32 and float64 values are torch's to the bit (where long double is
    wider than double, as on x86)."""
    dev = _check_device(device)
    start = start.item() if isinstance(start, Tensor) else start
    end = end.item() if isinstance(end, Tensor) else end
    d = _np_dtype(_out_dtype(out, dtype))
    step_type = d if d.kind in "fc" else np.dtype(np.float64)
    if steps == 1:
        data = np.array([start], step_type)
    else:
        # start and end in the result's dtype first (an integer result truncates them)
        first, last = (
            (d.type(start), d.type(end)) if d.kind in "fc" else (math.trunc(start), math.trunc(end))
        )
        step = (step_type.type(last) - step_type.type(first)) / step_type.type(steps - 1)
        if d.itemsize < 4:  # half precision: each operation rounds to it (no fused form)
            wide = step_type.type
        else:
            wide = np.clongdouble if d.kind == "c" else np.longdouble
        up = np.arange(steps).astype(wide)
        down = up[::-1]
        data = np.where(
            up < steps // 2, wide(first) + wide(step) * up, wide(last) - wide(step) * down
        ).astype(step_type)
    data = data.astype(d)
    return (
        _into("linspace", out, data, dtype)
        if out is not None
        else _finish(data, requires_grad, dev)
    )


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    data = np.power(base, linspace(start, end, steps, dtype=dtypes.float64)._data)
    return _finish(data.astype(_np_dtype(dtype)), requires_grad, _check_device(device))


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    dev = _check_device(device)
    d = _np_dtype(_out_dtype(out, dtype))
    data = numpy_rng(generator).random(_size(size)).astype(d)
    return _into("rand", out, data, dtype) if out is not None else _finish(data, requires_grad, dev)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    dev = _check_device(device)
    d = _np_dtype(_out_dtype(out, dtype))
    data = numpy_rng(generator).standard_normal(_size(size)).astype(d)
    return (
        _into("randn", out, data, dtype) if out is not None else _finish(data, requires_grad, dev)
    )


def randint(
    low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False
):
    """randint(high, size) or randint(low, high, size)."""
    if size is None:
        low, high, size = 0, low, high
    d = np.dtype(np.int64) if dtype is None else dtypes.as_dtype(dtype).dtype
    return _finish(
        numpy_rng(generator).integers(low, high, _size((size,))).astype(d),
        requires_grad,
        _check_device(device),
    )


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    d = np.dtype(np.int64) if dtype is None else dtypes.as_dtype(dtype).dtype
    return _finish(
        numpy_rng(generator).permutation(n).astype(d), requires_grad, _check_device(device)
    )


def normal(
    mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False
):
    m = devices.host(mean._data) if isinstance(mean, Tensor) else mean
    s = devices.host(std._data) if isinstance(std, Tensor) else std
    shape = _size((size,)) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    d = _np_dtype(dtype) if dtype is not None or not isinstance(mean, Tensor) else mean._data.dtype
    dev = (
        _check_device(device)
        if device is not None
        else next((t.device for t in (mean, std) if isinstance(t, Tensor)), None)
    )
    return _finish(
        (m + s * numpy_rng(generator).standard_normal(shape)).astype(d), requires_grad, dev
    )


def bernoulli(input, p=None, *, generator=None):
    probs = devices.host(input._data) if p is None else np.full(input._data.shape, p)
    sample = (numpy_rng(generator).random(input._data.shape) < probs).astype(input._data.dtype)
    return _finish(sample, False, input.device)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """torch.multinomial: `num_samples` category indices per row of `input` (1-d or 2-d
    non-negative weights, normalised here), with torch's refusals. Without replacement a row
    with fewer non-zero weights than samples gives its non-zero categories first, then the
    zero-weight ones in random order (as torch, whose order among those differs)."""
    if input.is_cuda:
        return multinomial(input.cpu(), num_samples, replacement, generator=generator).to(
            input.device
        )
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.is_floating_point():
        raise RuntimeError(
            "multinomial only supports floating-point dtypes for input, got: "
            f"{input.dtype._scalar_name}"
        )
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = input.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    # (float64: float32 weights normalised in float32 can miss numpy's sum-to-one check)
    weights = np.asarray(input._data, dtype=np.float64).reshape(-1, n)
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    totals = weights.sum(-1, keepdims=True)
    if np.any(totals <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = numpy_rng(generator)
    rows = []
    for row in weights / totals:
        nonzero = int(np.count_nonzero(row))
        if replacement or num_samples <= nonzero:
            rows.append(rng.choice(n, num_samples, replace=replacement, p=row))
        else:
            first = rng.choice(n, nonzero, replace=False, p=row)
            rest = rng.permutation(np.flatnonzero(row == 0))[: num_samples - nonzero]
            rows.append(np.concatenate([first, rest]))
    out = np.stack(rows).astype(np.int64)
    return _wrap(out[0] if input.dim() == 1 else out)


# --- *_like ----------------------------------------------------------------------------------


def _like_dtype(input, dtype):
    return input._data.dtype if dtype is None else dtypes.as_dtype(dtype).dtype


def _filled(name, input, dtype, device, *fill):
    dev = _device_of(input, device)
    return devices.make(dev, name, input._data.shape, *fill, _like_dtype(input, dtype))


def zeros_like(
    input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None
):
    return _finish(_filled("zeros", input, dtype, device), requires_grad)


def ones_like(
    input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None
):
    return _finish(_filled("ones", input, dtype, device), requires_grad)


def empty_like(
    input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None
):
    return _finish(_filled("empty", input, dtype, device), requires_grad)


def full_like(
    input,
    fill_value,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
    memory_format=None,
    layout=None,
):
    return _finish(_filled("full", input, dtype, device, fill_value), requires_grad)


def rand_like(
    input, *, dtype=None, device=None, requires_grad=False, memory_format=None, generator=None
):
    d = _like_dtype(input, dtype)
    return _finish(
        numpy_rng(generator).random(input._data.shape).astype(d),
        requires_grad,
        _device_of(input, device),
    )


def randn_like(
    input, *, dtype=None, device=None, requires_grad=False, memory_format=None, generator=None
):
    d = _like_dtype(input, dtype)
    return _finish(
        numpy_rng(generator).standard_normal(input._data.shape).astype(d),
        requires_grad,
        _device_of(input, device),
    )


def randint_like(
    input, low=0, high=None, *, dtype=None, device=None, requires_grad=False, generator=None
):
    if high is None:
        low, high = 0, low
    d = _like_dtype(input, dtype)
    return _finish(
        numpy_rng(generator).integers(low, high, input._data.shape).astype(d),
        requires_grad,
        _device_of(input, device),
    )


# --- Tensor.new_* ----------------------------------------------------------------------------


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    return zeros(
        *size,
        dtype=dtype or self.dtype,
        device=_device_of(self, device),
        requires_grad=requires_grad,
    )


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    return ones(
        *size,
        dtype=dtype or self.dtype,
        device=_device_of(self, device),
        requires_grad=requires_grad,
    )


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    return empty(
        *size,
        dtype=dtype or self.dtype,
        device=_device_of(self, device),
        requires_grad=requires_grad,
    )


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(
        size,
        fill_value,
        dtype=dtype or self.dtype,
        device=_device_of(self, device),
        requires_grad=requires_grad,
    )


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    return tensor(
        data,
        dtype=dtype or self.dtype,
        device=_device_of(self, device),
        requires_grad=requires_grad,
    )


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input) -> bool:
    return input.is_floating_point()


def is_complex(input) -> bool:
    return input.is_complex()


def numel(input) -> int:
    return input._data.size


def is_nonzero(input) -> bool:
    if input._data.size != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input._data.reshape(-1)[0])
