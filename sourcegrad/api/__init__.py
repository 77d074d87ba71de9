"""The compiled API: `grad`, `value_and_grad`, `vjp`, `jvp`, `hessian`, `show`, `check_grad`.

`grad(f)` returns a `Gradient`: a callable that, on its first call with a given input
signature (array shapes and dtypes, Python scalar types, static values), runs the
compiler's pipeline (`sourcegrad.compiler`, the package's one door: its stages are listed and
run in `sourcegrad.compiler.pipeline`), loads what it prints, and caches the loaded function
per signature; later calls go straight to it. This package keeps signatures, the caches
(memory and disk), source information and the user-facing objects; it imports the compiler
package, never its modules.

The package, in the order its modules import one another:

- `arguments`: which arguments are differentiated (`wrt`, `argnums`, `argnum`), and
  whether they can be;
- `memory_caches`: what is kept per function, per code and per signature, and for how long;
- `results`: the gradients given their inputs' types (the last step of every call);
- `compiling`: the compiling step of a gradient, from a signature to loaded code: the
  compiler's stages run with the caches between them;
- `gradient`: `Gradient` and its kinds (`VJP`, `JVP`, the gradient of tree leaves), and
  how a call runs;
- `transforms`: the public constructors (`grad`, `value_and_grad`, `vjp`, `hvp`, ...);
- `checks`: `numeric_grad` and `check_grad` (central finite differences).

Imports run one way: the compiler (its package), `sourcegrad.ops` and `sourcegrad.runtime`
below, `sourcegrad.cli` and the package's `__init__` above.
"""

from .arguments import Wrt
from .memory_caches import Compiled, clear
from .checks import GradientCheckError, check_grad, numeric_grad
from .gradient import JVP, VJP, Gradient, jvp
from .transforms import (
    checkpoint,
    elementwise_grad,
    grad,
    grad_and_aux,
    hessian,
    hvp,
    jacobian,
    show,
    value_and_grad,
    vjp,
)

__all__ = [
    "JVP",
    "VJP",
    "Compiled",
    "Gradient",
    "GradientCheckError",
    "Wrt",
    "check_grad",
    "checkpoint",
    "clear",
    "elementwise_grad",
    "grad",
    "grad_and_aux",
    "hessian",
    "hvp",
    "jacobian",
    "jvp",
    "numeric_grad",
    "show",
    "value_and_grad",
    "vjp",
]
