"""The torch-only ops, as spelled before `sourcegrad.ops`: a compatibility facade.

Their entries and forward functions now live in `sourcegrad.ops.nn` (and flip, roll,
cumsum, cumprod, tril, triu, tile, which the compiler now differentiates too, in
`ops.shape` and `ops.reductions`). `defvjp` here keeps its old meaning: a rule of a name
the registry already has is kept, and this call is skipped.
"""

from .ops import RULES
from .ops import defvjp as _defvjp
from .ops.nn import *  # noqa: F401,F403
from .ops.nn import (
    add_alpha,
    addmm,
    div_rounding,
    erf,
    fill,
    fill_tensor,
    fmod,  # noqa: F401
    index_put,
    leaky_relu,
    log_softmax,
    logsumexp,
    mse_loss,
    nll_index,
    nll_loss,
    nll_scale,
    put_mask,
    relu,
    rsqrt,
    sigmoid,
    softmax,
    split,
    sub_alpha,
    unbind,
    vector_norm,
)
from .runtime import cumprod_grad, tile_split_shape, tile_sum_axes  # noqa: F401


def defvjp(name, fn, spelling, *vjps, **options):
    """`ops.defvjp`, unless the registry already has a rule of that name (it wins)."""
    if name in RULES:
        return RULES[name]
    return _defvjp(name, fn, spelling, *vjps, **options)
