"""torch.special for the eager Tensor (`sourcegrad.special`), made from the registry's entries.

Takes the registry's entries whose torch names (`ops.Torch`) list `special` names and gives
`SPECIAL` ({torch.special name: function}); for the entries it makes, their top-level
functions too (`TOP_LEVEL`: `sourcegrad.lgamma`, `sourcegrad.digamma`, ...), Tensor methods
(`x.lgamma()`), in-place variants (`x.lgamma_()`) and `scipy.special.<fn>(tensor)` dispatch.
Each function is the generator of `eager.tensor_math` (`op_of_entry`) applied to one entry,
whose VJPs are the compiler's: one entry, both modes.

Most of torch.special is scipy.special's entries (ops/scipy_special.py), which the registry
holds only once scipy is imported (scipy is optional and costs a second to import): `load()`
imports it and makes them, on the first use of a name this module does not have yet
(`sourcegrad.special.gammaln`, `sourcegrad.lgamma`, `x.lgamma()`: a placeholder on the
class until then, `SCIPY_METHODS`). Without scipy those names
are missing (AttributeError naming scipy); erf, expit, exp2, expm1, log1p, sinc, round,
softmax, log_softmax and logsumexp are numpy ops and always there.

Where torch's op takes more than the entry (logit's eps, polygamma's order as a method
argument, multigammaln's p) a wrapper here adapts the generated op (`_ADAPTERS`). Where torch
records no node (the Bessel functions bessel_j0, ...: torch has no derivative for them, so
their result does not require grad), none is recorded here either (`Torch.node` is None).

Imports: `tensor_math`, `inplace`, `numpy_dispatch`, `operands`, `spec`, `tensor` and the registry;
installs the methods it makes on `Tensor` when it makes them (after `methods.py`).
"""

from __future__ import annotations

import importlib

import numpy as np

from ..ops import RULES
from . import inplace, numpy_dispatch, tensor_math
from .operands import default_np, needs_grad, result
from .spec import OpSpec, record
from .surface import TORCH_INPLACE_FUNCTIONS
from .tensor import Tensor

# torch.special's functions that are not elementwise registry entries: the eager ops of the
# same name (their own entries have no torch.special names to give)
_EAGER = {
    "softmax": tensor_math.softmax,
    "log_softmax": tensor_math.log_softmax,
    "logsumexp": tensor_math.logsumexp,
    "round": tensor_math.round,
}

SPECIAL: dict = dict(_EAGER)  # torch.special name -> function
TOP_LEVEL: dict = {}  # sourcegrad.<name> -> function, for the entries made here
METHODS: dict = {}  # Tensor method name -> function, for the entries made here
_MADE: set = set()  # the names of the entries already made
_STATE = {"scipy": None}  # None: not tried yet; then whether scipy.special's entries loaded


def _as_float(x):
    d = x._data
    return d if d.dtype.kind in "fc" else d.astype(default_np())


def _unrecorded(entry):
    """An entry torch does not differentiate in this spelling: its result requires no grad."""
    fn = entry.fn

    def op(input):
        d = _as_float(input)
        return Tensor._make(result(fn(d), d.dtype))

    return op


def _logit(entry):
    """torch.logit(input, eps=None): x clamped to [eps, 1 - eps] first when eps is given (its
    gradient zero outside, as torch's LogitBackward0; the clamp is a node of its own here)."""
    plain = tensor_math.op_of_entry(entry)
    plain_ = inplace.inplace_of(plain)

    def logit(input, eps=None, *, out=None):
        x = input if eps is None else tensor_math.clamp(input, eps, 1.0 - eps)
        return plain(x, out=out)

    def logit_(self, eps=None):
        if eps is not None:
            self.clamp_(eps, 1.0 - eps)
        return plain_(self)

    return logit, {"logit": logit, "logit_": logit_}


def _polygamma(entry):
    """torch.polygamma(n, input); as a method, x.polygamma(n)."""
    op = tensor_math.op_of_entry(entry)

    def polygamma(self, n):
        return op(n, self)

    return op, {"polygamma": polygamma}


def _multigammaln(entry):
    """torch.special.multigammaln(input, p), torch.mvlgamma, x.mvlgamma(p): the log of the
    multivariate gamma function, elementwise in input (the entry's rule, p static)."""
    spec = OpSpec(entry.torch.node, entry.name, n_arrays=1)
    scipy_special = importlib.import_module("scipy.special")  # loaded: the entry is registered

    def mvlgamma(input, p):
        d = _as_float(input)
        # the sum of gammaln scipy's multigammaln computes, without its refusal of
        # input <= (p - 1) / 2: torch gives inf there
        terms = scipy_special.gammaln(np.expand_dims(d, -1) - 0.5 * np.arange(p))
        value = np.sum(terms, axis=-1) + 0.25 * p * (p - 1) * np.log(np.pi)
        out = Tensor._make(result(value, d.dtype))
        if needs_grad(input):
            record(spec, out, (input,), {"d": p})
        return out

    return mvlgamma, {"mvlgamma": mvlgamma}


# entry name -> maker of (function, {Tensor method name: method}) where torch's op takes more
# than the entry's inputs
_ADAPTERS = {
    "scipy_logit": _logit,
    "scipy_polygamma": _polygamma,
    "scipy_multigammaln": _multigammaln,
}


class _Found(Exception):
    pass


class _Probe:
    """An operand that stops the first ufunc called on it and says which (`_ufunc_of`)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise _Found(ufunc)


def _ufunc_of(fn, n_inputs):
    """The ufunc `fn` is, or the one it passes its inputs to (scipy.special.zeta calls a
    ufunc of its own): a Tensor reaching it dispatches to the eager op, so the rules that call
    `fn` (digamma's VJP calls zeta) work on Tensors too, under create_graph. None if neither."""
    if isinstance(fn, np.ufunc):
        return fn
    try:
        fn(*[_Probe() for _ in range(n_inputs)])
    except _Found as found:
        return found.args[0]
    except Exception:  # noqa: BLE001 - a function that converts its inputs first
        return None
    return None


def _made_by_ops() -> dict:
    return {op.entry.name: op for op in tensor_math.REGISTERED.values()}


def _collect() -> dict:
    """Make the eager functions of the entries with torch.special names not made yet; return
    the Tensor methods made ({name: function}), for `load` to install."""
    already = _made_by_ops()
    methods = {}
    for entry in list(RULES.values()):
        names = entry.torch
        if names is None or entry.name in _MADE:
            continue
        _MADE.add(entry.name)
        op = already.get(entry.name)
        if op is None:
            if not names.special:
                continue  # an entry eager.tensor_math makes (or a later family's): not ours
            if entry.name in _ADAPTERS:
                op, adapted = _ADAPTERS[entry.name](entry)
                methods.update(adapted)
                for name in adapted.keys() & TORCH_INPLACE_FUNCTIONS:
                    TOP_LEVEL[name] = adapted[name]  # torch.logit_(x)
            elif names.node is None:
                op = _unrecorded(entry)
            else:
                op = tensor_math.op_of_entry(entry)
                for name in names.method:
                    methods[name] = op
                for name in names.inplace:
                    methods[name] = inplace.inplace_of(op)
                    if name in TORCH_INPLACE_FUNCTIONS:
                        TOP_LEVEL[name] = methods[name]  # torch.erfc_(x)
            op.__name__ = op.__qualname__ = (names.function or names.special)[0]
            op.entry = entry
            for name in names.function:
                TOP_LEVEL[name] = op
            ufunc = _ufunc_of(entry.fn, len(entry.params))
            if names.numpy and ufunc is not None and names.node is not None:
                numpy_dispatch.UFUNCS[ufunc] = op  # scipy.special.erfinv(tensor)
        for name in names.special:
            SPECIAL[name] = op
    METHODS.update(methods)
    return methods


def load() -> bool:
    """Register scipy.special's entries (importing scipy) and make their eager functions and
    methods, once. False when scipy is not installed."""
    if _STATE["scipy"] is None:
        try:
            importlib.import_module("scipy.special")
        except ImportError:
            _STATE["scipy"] = False
            return False
        importlib.import_module("sourcegrad.ops.scipy_special")
        _STATE["scipy"] = True
        for name, fn in _collect().items():
            setattr(Tensor, name, fn)
    return _STATE["scipy"]


def _missing(where, name):
    hint = "" if _STATE["scipy"] else " (torch.special's functions beyond numpy's need scipy)"
    return AttributeError(f"{where} has no attribute {name!r}{hint}")


def special_function(name):
    """`sourcegrad.special.<name>` (a module `__getattr__`: made on first use)."""
    if name not in SPECIAL and not name.startswith("_"):
        load()
    try:
        return SPECIAL[name]
    except KeyError:
        raise _missing("module 'sourcegrad.special'", name) from None


def top_level_function(name):
    """`sourcegrad.<name>` for the functions made here (`sourcegrad.lgamma`), on first use."""
    if name not in TOP_LEVEL and not name.startswith("_"):
        load()
    try:
        return TOP_LEVEL[name]
    except KeyError:
        raise _missing("module 'sourcegrad'", name) from None


# The Tensor methods `load` makes from scipy.special's entries
# (tests/eager/test_no_class_getattr.py checks this list against what it makes). Until then each is a placeholder on the class
# (`_OnFirstUse`). A class-level `__getattr__` would need no list, but CPython specialises no
# attribute read of a class that has one: every read of a Tensor's slots took about four
# times as long, 8% of an eager add.
SCIPY_METHODS = (
    "digamma",
    "digamma_",
    "erfc",
    "erfc_",
    "erfinv",
    "erfinv_",
    "i0",
    "i0_",
    "igamma",
    "igammac",
    "lgamma",
    "lgamma_",
    "logit",
    "logit_",
    "mvlgamma",
    "polygamma",
    "xlogy",
)


class _OnFirstUse:
    """A Tensor method `load` makes, before it has: the first read (`x.lgamma`) loads
    scipy.special's entries, whose methods replace every placeholder, and reads it again;
    without scipy, the AttributeError a missing method gives."""

    def __init__(self, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if load() and Tensor.__dict__.get(self.name) is not self:
            return getattr(owner if obj is None else obj, self.name)
        raise _missing("'Tensor' object", self.name)


def install_placeholders():
    """Put `_OnFirstUse` on Tensor for each of SCIPY_METHODS it does not have yet."""
    for name in SCIPY_METHODS:
        if name not in Tensor.__dict__:
            setattr(Tensor, name, _OnFirstUse(name))


_collect()
