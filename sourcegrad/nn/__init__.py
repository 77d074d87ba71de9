"""`sourcegrad.nn`: torch.nn for the eager mode.

`Parameter` and `Buffer`; `Module` and the containers; layers built from the
eager ops (`modules/`); `functional` (the layers' functions, activations,
losses); `init` (weight initialisations); `utils` (gradient clipping, parameter
vectors). `import sourcegrad as torch` then `torch.nn.Linear(...)` etc. works as
in torch. Further layer families go in `modules/` as their own files and are
exported from `modules/__init__.py`. The functions of the spatial layers are in
`conv_ops`, `pool_ops`, `pad_ops` and `norm_ops`, re-exported by `functional` (their
registry entries in `sourcegrad.ops.nn_layers`, their array kernels in `ops.nn_kernels`).
"""

from . import functional, init
from .parameter import Buffer, Parameter
from . import modules, utils
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from . import parallel
from .parallel import DataParallel

__all__ = [
    "Parameter",
    "Buffer",
    "functional",
    "init",
    "modules",
    "utils",
    "parallel",
    "DataParallel",
] + list(_modules_all)
