"""The eager surface: which `sourcegrad.<name>` functions, Tensor methods, in-place methods
and numpy dispatch entries exist, and which op each one calls.

Takes, while the op modules are imported:

* for an op of the registry (`sourcegrad.ops`, an entry with torch names `ops.Torch`): the
  op itself, made from the entry by a generator (`elementwise.py`, `reductions.py`) or
  written by hand and marked `@implements("<entry>")`, and optionally its numpy call form
  (`@numpy_form("<entry>")`, where numpy's signature differs from torch's). Its names are
  the entry's: `Torch.function` (functions and `__all__`), `Torch.method`, `Torch.inplace`
  (`@implements("<entry>", inplace=True)` for a hand-written in-place op) and `Torch.numpy`
  (whether `np.<fn>(tensor)` dispatches to it);
* for an op the compiler has no entry for (`view`, `isclose`, `atleast_1d`, ...): the
  `@export(...)` at its definition, which names its functions, methods and numpy functions.

Returns the tables the surface modules read once every op module is imported:
`FUNCTIONS` (`eager/__init__` and its `__all__`), `METHODS` (`methods.py` installs them
on `Tensor`) and `NUMPY` (`numpy_dispatch.py`: `__array_ufunc__` for a ufunc,
`__array_function__` for another function). A name defined twice is an error at import.

Imports: `sourcegrad.ops` only (no eager module), so every op module may import it.
"""

from __future__ import annotations

from ..ops import RULES

FUNCTIONS: dict = {}  # name -> op: sourcegrad.<name>
METHODS: dict = {}  # name -> op: Tensor.<name> (in-place methods included)
NUMPY: dict = {}  # numpy function or ufunc -> the op that serves np.<fn>(tensor)
IMPLEMENTED: dict = {}  # registry entry name -> its eager op (made or hand-written)


def _add(table, name, op, what):
    old = table.get(name)
    if old is not None and old is not op:
        raise ValueError(f"the eager {what} {name!r} is defined twice ({old!r} and {op!r})")
    table[name] = op


def add_entry(entry, op):
    """Give op the surface that registry entry `entry`'s torch names describe."""
    names = entry.torch
    if names is None:
        raise TypeError(f"op {entry.name!r} has no torch names (ops.Torch) to make its surface")
    IMPLEMENTED[entry.name] = op
    for name in names.function:
        _add(FUNCTIONS, name, op, "function")
    for name in names.method:
        _add(METHODS, name, op, "method")
    if names.numpy and entry.fn not in NUMPY:
        NUMPY[entry.fn] = op


def made_by_special(entry) -> bool:
    """Is registry entry `entry` one of scipy.special's (`ops/scipy_special.py`, named
    `scipy_<fn>`), whose eager ops `eager.special` makes when scipy is first needed?"""
    return entry.name.startswith("scipy_") and bool(entry.torch and entry.torch.special)


def by_hand(entry) -> bool:
    """Is registry entry `entry`'s eager op written by hand (`@implements`), not made from it?"""
    op = IMPLEMENTED.get(entry.name)
    return op is not None and getattr(op, "entry", None) is not entry


def implements(entry_name, inplace=False):
    """Mark a hand-written function as the eager op of registry entry `entry_name` (or, with
    `inplace`, as its in-place variant): its names come from the entry's torch names."""

    def mark(op):
        entry = RULES[entry_name]
        if not inplace:
            add_entry(entry, op)
        else:
            for name in entry.torch.inplace:
                _add(METHODS, name, op, "method")
        return op

    return mark


def numpy_form(entry_name):
    """Mark a function as what `np.<fn>(tensor)` calls for registry entry `entry_name` (numpy's
    signature adapted to the op's), instead of the op itself."""

    def mark(adapter):
        entry = RULES[entry_name]
        if not entry.torch.numpy:
            raise TypeError(f"op {entry_name!r}: its torch names say numpy does not dispatch")
        NUMPY[entry.fn] = adapter
        return adapter

    return mark


def export(*names, methods=None, numpy=()):
    """Declare the surface of an op with no registry entry, at its definition: `names` are
    its functions (`sourcegrad.<name>`), `methods` its Tensor methods (by default the same
    names), `numpy` the numpy functions that dispatch to it."""

    def mark(op):
        for name in names:
            _add(FUNCTIONS, name, op, "function")
        for name in names if methods is None else methods:
            _add(METHODS, name, op, "method")
        for fn in numpy:
            _add(NUMPY, fn, op, "numpy dispatch of")
        return op

    return mark


# The in-place methods torch also has as functions (torch.sin_(x), torch.relu_(x), ...; torch
# 2.x's top-level names ending in "_"): `inplace_functions` exports those sourcegrad has.
TORCH_INPLACE_FUNCTIONS = frozenset(
    "abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ "
    "atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ detach_ erf_ "
    "erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ gcd_ i0_ index_put_ lcm_ ldexp_ log10_ "
    "log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ round_ "
    "rsqrt_ selu_ celu_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ threshold_ trunc_ "
    "xlogy_ zero_".split()
)


def inplace_functions(tensor_class):
    """Export as `sourcegrad.<name>_` the in-place methods torch has as functions too (those
    of the surface, and those the Tensor class defines itself: detach_)."""
    for name in sorted(TORCH_INPLACE_FUNCTIONS):
        method = METHODS.get(name, tensor_class.__dict__.get(name))
        # (not a placeholder of a method made on first use, special.SCIPY_METHODS: those
        # functions are made with it, special.TOP_LEVEL)
        if callable(method):
            _add(FUNCTIONS, name, method, "function")


def check():
    """Every registry entry with torch names has its eager op (raises TypeError naming the
    ones without: their eager op is to be written by hand and marked `@implements`)."""
    missing = [
        n
        for n, e in RULES.items()
        if e.torch is not None and n not in IMPLEMENTED and not made_by_special(e)
    ]
    if missing:
        raise TypeError(
            f"registry entries {missing} have torch names but no eager op: the eager ops are "
            "made for elementwise ops of one or two inputs and plain reductions; write the "
            "others by hand and mark them @surface.implements(<entry>)"
        )
