"""The eager shape, view, joining, copying and indexing ops under one name
(`shape_ops.reshape`, `shape_ops.cat`), for the modules above them and for tests.

Takes nothing of its own: it re-exports the public names of `views.py` (views and the
view machinery: `view_of`, `apply_steps`, `positions`), `copies.py`, `joining.py` and
`indexing.py`. Which of them are `sourcegrad.<name>` functions, Tensor methods and numpy
dispatch entries is decided by `surface.py`, not here.
"""

from __future__ import annotations

from .copies import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .joining import *  # noqa: F401,F403
from .views import *  # noqa: F401,F403
