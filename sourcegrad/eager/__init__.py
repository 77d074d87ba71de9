"""Eager autograd: a numpy-backed Tensor with PyTorch's dynamic-graph semantics.

`import sourcegrad as torch` then works for torch-style autograd code: every name
in `__all__` is meant to be reachable as `sourcegrad.<name>`. The parts:

* `tensor.py`: the Tensor and its autograd state; `methods.py` installs the ops;
* the ops, by family: `arithmetic.py`, `elementwise.py`, `reductions.py`, `products.py`
  (re-exported together as `tensor_math`), `views.py`, `copies.py`, `joining.py`, `indexing.py`
  (as `shape_ops`), `inplace.py` (and `inplace_extra.py`: put_, set_, lerp_, ...), `linalg.py`, `fft.py`, `vector_ops.py`, `torch_extras.py`
  (torch's functions numpy lacks: logcumsumexp, cummax, quantile, ...), `torch_gaps.py`
  (more of them, composed: as_strided, block_diag, combinations, histc, cov, ...), `cholesky.py`
  (cholesky_ex, cholesky_solve, cholesky_inverse), `windows.py` (hann_window, ...), `spectral.py`
  (stft, istft); their derivatives
  are the registry's VJP lambdas (`sourcegrad.ops`), called through `spec.py` and `node.py`;
* `surface.py`: which functions, methods and numpy dispatch entries exist, from the
  registry entries' torch names and the eager-only ops' `@export` (this module's
  `__all__` is made from it); `out_forms.py` gives some of its functions out= (mm, argmax, ...);
* `engine.py`: backward as an iterative topological traversal;
* `function.py`: custom `autograd.Function`; `grad_mode.py`: no_grad and friends;
* `factories.py`, `dtypes.py`, `formatting.py`, `numpy_dispatch.py`;
* `devices.py`: where data lives, numpy on the CPU or CuPy on a CUDA GPU
  (`x.cuda()`, `device="cuda"`); `cuda.py` is `sourcegrad.cuda`.

Imports run one way, each layer importing only those below it (no cycle, no
module-global patching):

1. leaves: messages, dtypes, devices, grad_mode, hooks, anomaly, formatting, cuda;
2. `tensor.py` (the class, views, version counters);
3. the graph: `node.py`, `engine.py`, `spec.py`, `function.py` (and `gpu_helpers.py`);
4. the operations: `surface.py` and `operands.py` (shared operand helpers) <- `views.py`
   <- `copies.py`, `joining.py`, `indexing.py` (<- `shape_ops.py`) and `arithmetic.py` <-
   `elementwise.py` <- `reductions.py`, `products.py` (<- `tensor_math.py`); `factories.py`; then
   `inplace.py` (it uses all of these), `composites.py` (ops made of the others),
   `inplace_extra.py` (in-place ops made of inplace's and composites'),
   `torch_extras.py` (torch's functions numpy lacks, made of the others or recording their
   own entries), `torch_gaps.py` (more of them, made of the others) and `legacy.py` (torch.FloatTensor & co.);
5. the surface: `out_forms.py`, `numpy_dispatch.py`, then `methods.py`, which installs on `Tensor`
   every method that needs a layer above it (in one place, at import time);
6. this module.

Like torch, the namespace has `float`, `int`, `bool`, `sum`, `max`, `min`, `abs`,
`round`, `all`, `any` and `pow`: a module doing `from sourcegrad.eager import *`
shadows those builtins.
"""

import math as _math

from . import dtypes as _dtypes
from .dtypes import (
    bfloat16,
    bool,
    can_cast,
    cdouble,
    cfloat,
    complex64,
    complex128,
    double,
    dtype,
    finfo,
    float,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    iinfo,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    promote_types,
    set_default_dtype,
    short,
    uint8,
)
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .devices import device, get_default_device, set_default_device
from .tensor import Size, Tensor
from . import cuda  # noqa: E402 - sourcegrad.cuda: is_available(), device_count(), ...
from . import tensor_math as _tensor_math  # noqa: E402 - order matters: ops need the Tensor class
from .operands import operand_key as _operand_key  # noqa: E402
from . import shape_ops as _shape_ops  # noqa: E402,F401
from . import inplace as _inplace  # noqa: E402
from . import composites as _composites  # noqa: E402,F401 - lerp, tensordot, meshgrid, ...
from . import inplace_extra as _inplace_extra  # noqa: E402,F401 - put_, set_, lerp_, ...
from . import methods as _methods  # noqa: E402,F401 - installs the Tensor methods
from . import numpy_dispatch as _numpy_dispatch  # noqa: E402,F401
from .legacy import (
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from .factories import (
    Generator,
    arange,
    as_tensor,
    asarray,
    bernoulli,
    default_generator,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    initial_seed,
    is_complex,
    is_floating_point,
    is_nonzero,
    is_tensor,
    linspace,
    logspace,
    manual_seed,
    multinomial,
    normal,
    numel,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
    tensor,
    zeros,
    zeros_like,
)
from .formatting import set_printoptions
from .operands import return_types  # noqa: E402
from . import surface as _surface  # noqa: E402
from . import out_forms as _out_forms  # noqa: E402
from . import fft as _fft, vector_ops as _vector_ops  # noqa: E402,F401 - their ops' surface

_surface.check()  # every registry entry with torch names has its eager op
_out_forms.install()  # torch.mm(a, b, out=o), torch.argmax(x, 1, out=o), ...: out= on functions
_surface.inplace_functions(Tensor)  # torch.sin_(x), torch.relu_(x), ...: the in-place methods
# sourcegrad.<name> for every op of the surface: those the registry's entries name
# (ops.Torch: exp, sum, matmul, reshape, ...) and the eager-only ops' @export (view, cat, ...)
globals().update(_surface.FUNCTIONS)

e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
newaxis = None


def result_type(tensor1, tensor2):
    """torch.result_type: the dtype an op on these two operands produces."""
    return _dtypes.result_type(_operand_key(tensor1)[1], _operand_key(tensor2)[1])


def is_anomaly_enabled():
    from .anomaly import ANOMALY

    return ANOMALY.enabled


def is_anomaly_check_nan_enabled():
    from .anomaly import ANOMALY

    return ANOMALY.check_nan


__all__ = [
    # tensors, types and devices
    "Tensor",
    "Size",
    "device",
    "get_default_device",
    "set_default_device",
    "cuda",
    *_dtypes.__all__,  # the dtypes and their functions, as dtypes.py lists them
    "e",
    "pi",
    "inf",
    "nan",
    "newaxis",
    "set_printoptions",
    "return_types",
    # grad modes
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
    # factories and random numbers
    "tensor",
    "as_tensor",
    "asarray",
    "from_numpy",
    "zeros",
    "ones",
    "full",
    "empty",
    "eye",
    "arange",
    "linspace",
    "logspace",
    "rand",
    "randn",
    "randint",
    "randperm",
    "normal",
    "bernoulli",
    "multinomial",
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "Generator",
    "default_generator",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "rand_like",
    "randn_like",
    "randint_like",
    "is_tensor",
    "is_floating_point",
    "is_complex",
    "numel",
    "is_nonzero",
    # the legacy tensor types (torch.FloatTensor(2, 3), isinstance(x, torch.LongTensor))
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "ByteTensor",
    "CharTensor",
    "ShortTensor",
    "IntTensor",
    "LongTensor",
    "BoolTensor",
] + sorted(_surface.FUNCTIONS)  # the ops: the registry's entries' torch names, the @exports
