"""The rule table, as it was spelled before `sourcegrad.ops`: a compatibility facade.

Everything here is `sourcegrad.ops` (the op registry); new code imports that. Generated
code of older versions calls `sourcegrad.rules.vjp_at_run_time`, and helpers that add
rules call `sourcegrad.rules.defvjp`, so both names stay.
"""

from .ops import *  # noqa: F401,F403
from .ops import __all__  # noqa: F401
from .ops.registry import func as _func  # noqa: F401
from .ops.registry import helper as _helper  # noqa: F401
