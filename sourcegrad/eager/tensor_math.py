"""The eager Tensor math functions of the arithmetic, elementwise, reduction and
matrix-product families under one name (`tensor_math.sum`, `tensor_math.where`,
`tensor_math.binary_op`), for the modules above them (inplace, nn, linalg, fft) and for
tests. (Named for what it holds: `ops` is the registry, `sourcegrad/ops/`.)

Takes nothing of its own: it re-exports the public names of `arithmetic.py`,
`elementwise.py` (with the registry's elementwise ops, `REGISTERED`), `reductions.py` and
`products.py`. Which of them are `sourcegrad.<name>` functions, Tensor methods and numpy
dispatch entries is decided by `surface.py`, not here.
"""

from __future__ import annotations

from . import elementwise as _elementwise
from . import reductions as _reductions
from .arithmetic import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .products import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403

# the ops made from the registry's entries: {torch function name: op}. Elementwise ones
# first (their in-place variants are made from them, inplace.py), then the reductions.
REGISTERED = {**_elementwise.REGISTERED, **_reductions.REGISTERED}
# (the names this module had before the families were split out of it)
_from_registry = _elementwise.from_registry
_make_unary, _make_binary = _elementwise.make_unary, _elementwise.make_binary
