"""Analyses over the IR for one input signature: abstract values, shapes, activity, checks.

The modules, in the order they import one another:

- `values`: abstract values (`AVal`, `UNKNOWN`, `ListOf`), `aval_of`, `signature_key`;
- `calls`: a primitive's abstract result (`abstract_call`) and the shape functions;
- `infer`: shape inference over a function's body (`infer_shapes`);
- `activity`: which values need an adjoint (`varied_values`, `active_values`);
- `checks`: in-place updates, complex values and rule-less calls refused, located.

And two analyses the later stages ask (not imported here: each is imported where it is used):

- `shape_names`: the user's own expressions for sizes (`DimensionSources`), for `optimize`;
- `lifetimes`: which arrays are dead when, so printed names can share them, for `optimize`
  (buffer reuse) and `emit` (names rebound, arrays freed).

Each takes an `ir.Function` (and abstract values) and returns plain data: a dict of
abstract values, a set of names, or None after a check.
"""

from .activity import active_values, shift_invariant_maxima, varied_values
from .calls import abstract_call
from .checks import (
    check_dropped_inputs,
    check_in_place_updates,
    check_real_values,
    check_keywords,
    check_unmodelled_calls,
    is_view,
    memory_sources,
    updated_parameters,
)
from .infer import eval_value, infer_shapes
from .values import UNKNOWN, AVal, ListOf, aval_of, holds_complex, signature_key, stand_in

__all__ = [
    "UNKNOWN",
    "AVal",
    "ListOf",
    "abstract_call",
    "active_values",
    "aval_of",
    "check_dropped_inputs",
    "check_in_place_updates",
    "check_real_values",
    "check_keywords",
    "check_unmodelled_calls",
    "eval_value",
    "holds_complex",
    "infer_shapes",
    "is_view",
    "memory_sources",
    "shift_invariant_maxima",
    "signature_key",
    "stand_in",
    "updated_parameters",
    "varied_values",
]
