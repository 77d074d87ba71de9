"""Abstract values: what the compiler knows of a value for one input signature.

An `AVal` holds a *stand-in*: a zero-strided array of the right shape and dtype (no
memory, whatever the shape), a sample Python number, or, for values such as `x.shape[0]`
that are known before the function runs, the value itself (`concrete`). What cannot be
known without the data (the length of `x[x > 0]`) is `UNKNOWN`; a list built in a loop is
a `ListOf` its items. `aval_of(x)` makes one from an argument and `signature_key(args)`
the key compiled code is cached under.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import errors
from ..ir import Const, Slc, Tup, Var


@dataclass(frozen=True)
class AVal:
    """An abstract value: a stand-in with the right type, shape and dtype.

    `known` is True when the stand-in *is* the value (shapes, sizes, static
    arguments); False when only its type and shape are meaningful.
    """

    stand_in: object
    known: bool = False
    # (for a number not known: which unknown it moves with, `value_shapes.origin_of`)
    origin: object = field(default=None, compare=False, repr=False)

    @property
    def shape(self):
        return shape_of(self.stand_in)

    @property
    def ndim(self):
        return np.ndim(self.stand_in)

    @property
    def dtype(self):
        return getattr(self.stand_in, "dtype", None)

    @property
    def is_python_scalar(self) -> bool:
        return isinstance(self.stand_in, (bool, int, float, complex))


def shape_of(value):
    """np.shape, also for a list of differently shaped items (a ragged list has no array
    shape: its "shape" is the tuple of its items' shapes, so two lists compare by structure)."""
    try:
        return np.shape(value)
    except ValueError:
        return ("list",) + tuple(shape_of(item) for item in value)


UNKNOWN = None  # an AVal slot whose shape cannot be known before the function runs


UNBOUND = object()  # a name a branch does not assign


def stand_in(shape, dtype):
    """A read-only array of `shape` and `dtype` that occupies one element of memory.

    Made once per (shape, dtype) and shared: it is read-only, and analysing a long
    function asks for the same few thousands of times (np.broadcast_to costs ~15 µs)."""
    dtype = np.dtype(dtype)
    try:
        key = (tuple(shape), dtype)
    except TypeError:  # an int shape
        key = ((shape,), dtype)
    made = _STAND_INS.get(key)
    if made is None:
        if len(_STAND_INS) >= 4096:  # (bounded: shapes come from user programs)
            _STAND_INS.clear()
        base = np.zeros((), dtype) if dtype.kind in "biu" else np.ones((), dtype)
        made = _STAND_INS[key] = np.broadcast_to(base, shape)
    return made


_STAND_INS: dict = {}  # (shape, dtype) -> its stand-in


def holds_complex(aval) -> bool:
    """Does an abstract value hold a complex number or array (or a tuple/list of them)? The
    rules are written for real numbers: the passes refuse complex values they differentiate."""
    if aval is None or aval is UNKNOWN:
        return False

    def complex_(v):
        if type(v) in (tuple, list):  # (not a ListOf: a list of unknown length)
            return any(complex_(i) for i in v)
        return isinstance(v, complex) or getattr(getattr(v, "dtype", None), "kind", "") == "c"

    return complex_(aval.stand_in)


def aval_of(value) -> AVal:
    """The abstract value of a concrete argument."""
    if isinstance(value, (bool, int, str, type(None), tuple, slice, type)):
        # (a class is a constant: np.ndarray has a `shape` and a `dtype`, descriptors)
        return AVal(value, known=True)
    if type(value) is float:  # (np.float64 is a float too: a numpy scalar, below)
        return AVal(1.0)
    if isinstance(value, complex):
        return AVal(1.0j)
    if isinstance(value, np.generic):
        return AVal(value.dtype.type(1))
    if isinstance(value, (np.matrix, np.ma.MaskedArray)):
        # (arguments are refused by name before this, api.arguments.check_array_kind; here,
        # such a value read from a global or an object)
        raise errors.CallArgumentsError(
            f"a {type(value).__name__} (shape {value.shape}) is read by the function: its "
            "operators are not ndarray's (np.matrix's `*` is a matrix product, a masked "
            "array's reductions skip masked entries), and the compiler models ndarray's: "
            "keep it as np.asarray(...)"
        )
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return AVal(stand_in(shape, dtype))
    return AVal(value, known=True)


def signature_key(args, nested: bool = False) -> tuple:
    """What a compiled gradient is specialised on: array types, shapes, dtypes, static values.

    A number inside a list, tuple or dict passed whole (`nested`) is keyed by its value: the
    container's abstract value is the container itself (`aval_of`: known), so the code made
    for it may have folded the number in (`x * p[0]` as `x` where p[0] is 1.0)."""
    key = []
    for a in args:
        t = type(a)
        if nested and (t in (float, complex) or isinstance(a, np.generic)):
            key.append((t, repr(a)))  # (repr: -0.0 is not 0.0, and nan is nan)
        elif t is float:
            key.append(float)
        elif t is np.ndarray:
            key.append((t, a.shape, a.dtype.str))
        elif hasattr(a, "__cuda_array_interface__"):
            key.append((t, a.shape, a.dtype.str))
        elif isinstance(a, np.generic):
            key.append((t,))
        elif isinstance(a, (bool, int, str, type(None))):
            key.append((t, a))
        elif isinstance(a, (tuple, list)):
            # (each item's own key: code made for a list of one shape is not code for another)
            key.append((t, signature_key(a, True)))
        elif isinstance(a, dict):
            key.append((t, tuple(a), signature_key(a.values(), True)))
        elif callable(a) and not hasattr(a, "shape"):
            key.append((t, a))  # a function argument is inlined: code per function
        else:
            key.append((t, getattr(a, "shape", None), str(getattr(a, "dtype", None))))
    return tuple(key)


def concrete(atom, env):
    """The stand-in for an atom (raising Unknown if it has none)."""
    if isinstance(atom, Const):
        return atom.value, True
    if isinstance(atom, Var):
        aval = env.get(atom.name, UNKNOWN)
        if aval is UNKNOWN:
            raise Unknown
        return aval.stand_in, aval.known
    if isinstance(atom, Tup):
        parts = [concrete(a, env) for a in atom.items]
        return tuple(p for p, _ in parts), all(k for _, k in parts)
    if isinstance(atom, Slc):
        parts = [concrete(a, env) for a in (atom.lower, atom.upper, atom.step)]
        return slice(*(p for p, _ in parts)), all(k for _, k in parts)
    raise TypeError(atom)


class Unknown(Exception):
    pass


class ListOf(list):
    """The stand-in of a list whose length is not known (appended to in a loop), all of
    whose items look alike: any item read gives that item's stand-in."""

    def __init__(self, item):
        super().__init__([item])
        self.item = item

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self
        return self.item

    def __len__(self):
        raise Unknown

    def __iter__(self):
        raise Unknown

    def __add__(self, other):
        return self
