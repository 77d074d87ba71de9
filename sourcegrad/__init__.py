"""sourcegrad: automatic differentiation by source transformation, plus an eager autograd.

Compiled mode: `grad`, `value_and_grad`, `show`, `check_grad` turn a numpy function
into generated Python gradient source (see `api`). Eager mode: a Tensor with
PyTorch's autograd semantics (see `eager`), so `import sourcegrad as torch` works
for code written against torch's autograd.
"""

from .api import (
    checkpoint,
    JVP,
    VJP,
    Gradient,
    check_grad,
    elementwise_grad,
    grad,
    grad_and_aux,
    hessian,
    hvp,
    jacobian,
    jvp,
    show,
    value_and_grad,
    vjp,
)
from .errors import (
    AliasedArgumentsError,
    NameResolutionError,
    NoRuleError,
    NonDifferentiableInputError,
    NonScalarOutputError,
    ShapeError,
    SourceLocation,
    SourceNotFoundError,
    SourcegradError,
    TraceEscapeError,
    UnsupportedSyntaxError,
    WrtError,
)

from ._version import __version__
from .trees import register_tree

# the compiler's vjp and jvp, for the ops that differentiate a function of the user's when they
# run (scipy.integrate.odeint: sourcegrad/ops/scipy_integrate.py)
from .ops.program import USER_FUNCTION_TRANSFORMS as _TRANSFORMS  # noqa: E402

_TRANSFORMS.update(vjp=vjp, jvp=jvp)

__all__ = [
    "Gradient",
    "VJP",
    "JVP",
    "check_grad",
    "checkpoint",
    "grad",
    "jacobian",
    "hessian",
    "hvp",
    "jvp",
    "show",
    "value_and_grad",
    "vjp",
    "elementwise_grad",
    "grad_and_aux",
    "SourcegradError",
    "SourceLocation",
    "UnsupportedSyntaxError",
    "SourceNotFoundError",
    "NoRuleError",
    "NameResolutionError",
    "NonScalarOutputError",
    "NonDifferentiableInputError",
    "WrtError",
    "ShapeError",
    "TraceEscapeError",
    "AliasedArgumentsError",
    "register_tree",
]

# The eager library mode (import sourcegrad as torch).
from .eager import *  # noqa: F401,F403,E402
from . import autograd, fft, func, linalg, nn, optim, special, utils  # noqa: E402,F401
from . import accelerator, amp, backends, distributed  # noqa: E402,F401
from .amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402,F401
from .backends._flags import (  # noqa: E402,F401 - torch's top-level switches
    are_deterministic_algorithms_enabled,
    get_float32_matmul_precision,
    is_deterministic_algorithms_warn_only_enabled,
    set_float32_matmul_precision,
    use_deterministic_algorithms,
)
from .serialization import load, save  # noqa: E402,F401
from .compiled.module import compile  # noqa: E402,F401
from . import viz  # noqa: E402,F401 - sourcegrad.viz after a plain `import sourcegrad`
from . import distributions  # noqa: E402,F401 - torch.distributions, on the eager Tensor
from . import jit, profiler, testing  # noqa: E402,F401 - torch.jit, torch.profiler, torch.testing
from . import export, hub, masked, onnx, sparse  # noqa: E402,F401 - importable, refused on use
from . import signal  # noqa: E402,F401 - torch.signal.windows
from .nn.top_level import *  # noqa: E402,F401,F403 - torch.conv2d, torch.layer_norm, ...
from .func import vmap  # noqa: E402,F401 - torch.vmap is torch.func.vmap


def __getattr__(name):
    # torch's functions made from scipy.special's rules (sourcegrad.lgamma, sourcegrad.digamma,
    # ...): on first use, so that importing sourcegrad does not import scipy
    from .eager.special import top_level_function

    return top_level_function(name)


def __dir__():
    from .eager.special import TOP_LEVEL, load as load_special

    load_special()
    return sorted(set(globals()) | set(TOP_LEVEL))
