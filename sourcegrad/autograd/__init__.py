"""`sourcegrad.autograd`: torch.autograd's API for the eager Tensor.

`backward` and `grad` run the engine (`sourcegrad.eager.engine`); `Function` is
the custom-function base class; `gradcheck` compares backward against central
finite differences; `graph` holds `Node`; `functional` has jacobian/hessian/vjp;
`forward_ad` is forward-mode AD (dual_level, make_dual, unpack_dual); `profiler` has
`profile` and `record_function`.
"""

from ..eager import grad_mode
from ..eager.anomaly import detect_anomaly, set_detect_anomaly
from ..eager.engine import backward, grad
from ..eager.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from . import forward_ad, function, functional, graph, profiler
from .function import Function, once_differentiable
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .variable import Variable

__all__ = [
    "backward",
    "grad",
    "Function",
    "once_differentiable",
    "gradcheck",
    "gradgradcheck",
    "GradcheckError",
    "graph",
    "functional",
    "forward_ad",
    "function",
    "profiler",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "detect_anomaly",
    "set_detect_anomaly",
    "Variable",
    "grad_mode",
]
