"""`Traced`: a value of a trace, standing for an array (or number) the generated code computes.

A `Traced` holds the IR atom naming it, its concrete value in this run (numpy computes it
alongside, so Python's own decisions, shapes and views are exact), and whether it carries a
gradient (`varied`: it depends on a differentiated argument through differentiable ops).
Every operation on it is handed to its `Recorder` (`recorder.py`), which records it as the
registry's op and returns the result as a new `Traced`.

Python reaches it through its operators and protocols:

- numpy's: `__array_ufunc__` (np.exp(t), np.add(t, 1), t + array) and `__array_function__`
  (np.sum(t), np.where(t > 0, t, 0), np.stack([t, u]));
- the array's own: attributes (`.T`, `.shape`, `.real`), methods (`t.sum(axis=0)`), indexing
  (`t[1:]`, `t[mask] = 0`), in-place operators (`t += u` changes t, as numpy does);
- the exits to plain Python: `bool()` (a guard), `float()`, `int()`, `.item()`,
  `.tolist()`, `__array__` (np.asarray reaches it where the patches do not): refused where
  the value carries a gradient, guarded where it does not.
"""

from __future__ import annotations

import numpy as np


class Traced:
    """A traced array or number (see the module docstring)."""

    __slots__ = ("_rec", "_atom", "_value", "_varied", "__weakref__")
    # ndarray's binary operators give way to ours (`array + t` calls t.__radd__)
    __array_priority__ = 10_000

    def __init__(self, rec, atom, value, varied):
        self._rec = rec
        self._atom = atom
        self._value = value
        self._varied = varied

    def __repr__(self):
        return f"Traced({self._atom.name}: {np.shape(self._value)} {self.dtype})"

    __hash__ = object.__hash__  # (a dict key by identity: == is elementwise)

    @property
    def __class__(self):
        """The class of the value it stands for, so that the user's `isinstance(x, np.ndarray)`
        (or `float`) takes the branch Python takes: it was False, and a traced function's
        `if isinstance(x, np.ndarray): x = x * 2` silently skipped. `type(t)` is still Traced,
        and isinstance(t, Traced) still holds (Python checks the type first)."""
        return type(self._value)

    # -- numpy's protocols -------------------------------------------------------------------

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return self._rec.ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return self._rec.function(func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        return self._rec.escape(self, "np.asarray (or a function that is not numpy's)")

    # -- static facts: the signature fixes them (a selection by a mask's: guarded, `fact`) ----

    @property
    def shape(self):
        return self._rec.fact(self, "shape", np.shape(self._value))

    @property
    def ndim(self):
        return np.ndim(self._value)

    @property
    def size(self):
        return self._rec.fact(self, "size", int(np.size(self._value)))

    @property
    def dtype(self):
        return np.asarray(self._value).dtype

    def __len__(self):
        if not np.ndim(self._value):
            raise TypeError("len() of unsized object")
        return self._rec.fact(self, "len", len(self._value))

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # -- attributes, methods, indexing -------------------------------------------------------

    @property
    def T(self):
        return self._rec.op("T", (self,))

    @property
    def real(self):
        return self._rec.op("real_attr", (self,))

    @property
    def imag(self):
        return self._rec.op("imag_attr", (self,))

    @property
    def flat(self):
        return _Flat(self)

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._rec.method(self, name)

    def __getitem__(self, index):
        return self._rec.op("getitem", (self, index))

    def __setitem__(self, index, value):
        self._rec.setitem(self, index, value)

    # -- the exits to plain Python -----------------------------------------------------------

    def __bool__(self):
        return self._rec.decided(self, bool)

    def __float__(self):
        return self._rec.leaves(self, float, "float()")

    def __int__(self):
        return self._rec.leaves(self, int, "int()")

    def __index__(self):
        return self._rec.leaves(self, int, "an index or a size")

    def __complex__(self):
        return self._rec.leaves(self, complex, "complex()")

    def item(self, *args):
        if args:
            return self[args if len(args) > 1 else args[0]].item()
        return self._rec.leaves(self, lambda v: np.asarray(v).item(), ".item()")

    def tolist(self):
        return self._rec.leaves(self, lambda v: np.asarray(v).tolist(), ".tolist()")


class _Flat:
    """`t.flat`: read as the flattened array (`t.flat[i]` is `t.ravel()[i]`); a write
    through it is a store into t at the flat positions' index (`stores.flat_store`)."""

    __slots__ = ("_of",)

    def __init__(self, of):
        self._of = of

    def __getitem__(self, index):
        return self._of.ravel()[index]

    def __iter__(self):
        return iter(self._of.ravel())

    def __len__(self):
        return self._of.size

    def __setitem__(self, index, value):
        self._of._rec.flat_setitem(self._of, index, value)


def _binary(op, reflected=False):
    if reflected:

        def method(self, other):
            return self._rec.op(op, (other, self))
    else:

        def method(self, other):
            return self._rec.op(op, (self, other))

    return method


def _in_place(op):
    def method(self, other):
        return self._rec.in_place(self, op, other)

    return method


# operators, as the AST front end lowers them (`sourcegrad.ops.OPERATORS`, COMPARISONS)
for _name, _op in {
    "add": "add_op",
    "sub": "sub_op",
    "mul": "mul_op",
    "truediv": "div_op",
    "pow": "pow_op",
    "matmul": "matmul_op",
    "mod": "mod_op",
    "floordiv": "floordiv_op",
    "or": "or_op",
    "and": "and_op",
    "xor": "xor_op",
}.items():
    setattr(Traced, f"__{_name}__", _binary(_op))
    setattr(Traced, f"__r{_name}__", _binary(_op, reflected=True))
    setattr(Traced, f"__i{_name}__", _in_place(_op))
for _name, _op in {"lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "eq": "eq", "ne": "ne"}.items():
    setattr(Traced, f"__{_name}__", _binary(_op))
Traced.__neg__ = lambda self: self._rec.op("neg_op", (self,))  # type: ignore[method-assign]
Traced.__pos__ = lambda self: self._rec.op("pos_op", (self,))  # type: ignore[method-assign]
Traced.__abs__ = lambda self: self._rec.op("abs_builtin", (self,))  # type: ignore[method-assign]
Traced.__invert__ = lambda self: self._rec.function(np.invert, (self,), {})  # type: ignore[method-assign]
