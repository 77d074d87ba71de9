"""Adjoints of writes through a boolean mask computed on whole arrays: `dense_masked_adjoints`.

Code in the style of layer libraries writes a function of an array's masked elements into
another array through the mask (the stable sigmoid of course code: `z[pos] = np.exp(-x[pos])`,
`z[neg] = np.exp(x[neg])`). The reverse pass gives each such write a chain of compact values:
the output's adjoint gathered through the mask (`d_z[pos]`), times the value written (saved),
scattered back into zeros the size of x (`unindex(..., x, pos)`). numpy's boolean indexing
costs several times an elementwise pass over the whole array (16x32: ~4 µs a gather or a
scatter, ~1 µs a product), and such a chain has three of them.

Where every array in the chain is the same mask's part of a whole array — a gather `a[m]`,
or a value written through m into an array `z` that still holds it (`z[m] = e`: z's later
versions too, while they are written only through masks disjoint from m; z made by
`np.zeros_like` or the like, so that its other elements are numbers) — the chain is
computed on the whole arrays and the mask applied once at the end:
`unindex(d_z[m] * e, x, m)` -> `np.where(m, d_z * z, 0.0)`. Elementwise arithmetic is the
same arithmetic on the same numbers, element by element, so the masked elements get the same
bits; the others are discarded (outside the mask they multiply a fill number or values
the program computed itself by adjoints: an overflow warning there would need values near
the float range's end). Only `*`, `+`, `-` and negation are computed this way (no
division, no function that may be undefined outside the mask), on arrays of the mask's shape
and of one dtype, the result's.

`dense_masked_adjoints(body, shapes, dtypes)` takes the top-level statements of a gradient
(after `updates`' disjoint `zero_at`s became copies and its mask `unbroadcast`s dropped) and
the signature's shapes and dtypes (name -> shape, dtype), and returns the statements with
each such `unindex` rewritten (the gathers it no longer reads are left to dead-code
elimination); the chain's names, now whole arrays, get the mask's shape in `shapes`.
Imports the registry, `ir`, `algebra` (which op is which ufunc) and `indices`.
"""

from __future__ import annotations

import math

import numpy as np

from ...ops import RULES
from ..ir import Assign, Call, Const, Var, read_counts, walk, writes_of
from .algebra import ufunc_rule
from .indices import comparison_masks, disjoint


def _arithmetic(op) -> bool:
    """Python's `*`, `+`, `-` (binary or unary): defined for every pair of numbers."""
    spelling = RULES[op].spelling
    return spelling.kind in ("binop", "unaryop") and spelling.text in ("*", "+", "-")


def dense_masked_adjoints(body: list, shapes: dict, dtypes: dict) -> list:
    """See the module docstring."""
    if not any(
        type(s) is Assign and type(s.value) is Call and s.value.op == "unindex" for s in body
    ):
        return body
    return _Densify(body, shapes, dtypes).run()


class _Densify:
    def __init__(self, body, shapes, dtypes):
        self.body = list(body)
        self.shapes, self.dtypes = shapes, dtypes
        self.counts: dict = {}
        for stmt in walk(body):
            for n in writes_of(stmt):
                self.counts[n] = self.counts.get(n, 0) + 1
        self.uses = read_counts(body)
        self.masks = comparison_masks(body, self.counts)
        self.made = {}  # name assigned once at the top level -> its position
        for k, stmt in enumerate(body):
            if type(stmt) is Assign and self.counts.get(stmt.target) == 1:
                self.made[stmt.target] = k
        self.written = self._written_values()

    # -- facts ---------------------------------------------------------------------------------

    def _call(self, name):
        """The Call (without keywords) assigning `name` once at the top level, or None."""
        k = self.made.get(name)
        if k is None:
            return None
        value = self.body[k].value
        return value if type(value) is Call and not value.kwargs else None

    def _full_mask(self, mask) -> bool:
        """A boolean array assigned once, of a known shape with at least one axis."""
        if not isinstance(mask, Var) or self.counts.get(mask.name, 0) > 1:
            return False
        dtype, shape = self.dtypes.get(mask.name), self.shapes.get(mask.name)
        return (
            dtype is not None and np.dtype(dtype) == np.bool_ and bool(shape) and None not in shape
        )

    def _whole(self, array, mask, dtype) -> bool:
        """Is `array` a name assigned at most once, of the mask's shape and of `dtype`?"""
        return (
            isinstance(array, Var)
            and self.counts.get(array.name, 0) <= 1
            and self.shapes.get(array.name) == self.shapes.get(mask.name)
            and self.dtypes.get(array.name) is not None
            and np.dtype(self.dtypes[array.name]) == dtype
        )

    def _written_values(self) -> dict:
        """{e: (mask, z, position of z)} for each `z = setitem(z0, mask, e)` through a full
        mask of z0's shape, e of z0's dtype: z holds e at the mask. z is the latest version
        that still does: later versions written only through masks disjoint from it."""
        after = {}  # z -> (its next version, the mask that version writes through, position)
        root = {}  # a version -> the array the writes started from
        writes = []
        for k, stmt in enumerate(self.body):
            value = stmt.value if type(stmt) is Assign else None
            if (
                type(value) is not Call
                or value.op != "setitem"
                or value.kwargs
                or len(value.args) != 3
                or self.counts.get(stmt.target) != 1
            ):
                continue
            z0, mask, e = value.args
            if not (isinstance(z0, Var) and self._full_mask(mask)):
                continue
            root[stmt.target] = root.get(z0.name, z0.name)
            if not self._filled(root[stmt.target]):
                continue
            if z0.name in after:  # (two versions made from one: follow neither)
                after[z0.name] = None
            else:
                after[z0.name] = (stmt.target, mask, k)
            dtype = self.dtypes.get(z0.name)
            if isinstance(e, Var) and dtype is not None and self._whole(z0, mask, np.dtype(dtype)):
                if self._dtype_of(e) == np.dtype(dtype):  # (else z[m] is e cast)
                    writes.append((e.name, mask, stmt.target, k))
        written = {}
        for e, mask, z, k in writes:
            while after.get(z) is not None and disjoint(after[z][1], mask, self.masks):
                z, _, k = after[z]
            written[e] = (mask, z, k)
        return written

    def _dtype_of(self, atom, depth=0):
        """The dtype of a name: the signature's, or for a mask's part (whose length the
        signature does not know) its source's through the gather and the ufuncs that made
        it, as numpy resolves it; None where unknown."""
        if isinstance(atom, Const):
            return type(atom.value) if type(atom.value) in (int, float) else None
        if not isinstance(atom, Var):
            return None
        known = self.dtypes.get(atom.name)
        if known is not None:
            return np.dtype(known)
        value = self._call(atom.name)
        if value is None or depth > 32:
            return None
        if value.op == "getitem" and len(value.args) == 2 and self._full_mask(value.args[1]):
            return self._dtype_of(value.args[0], depth + 1)
        name = ufunc_rule(value.op)
        ufunc = getattr(np, name, None) if name is not None else None
        if not isinstance(ufunc, np.ufunc) or ufunc.nout != 1 or len(value.args) != ufunc.nin:
            return None
        operands = [self._dtype_of(a, depth + 1) for a in value.args]
        if any(o is None for o in operands) or all(o in (int, float) for o in operands):
            return None
        try:
            return np.dtype(ufunc.resolve_dtypes((*operands, None))[-1])
        except (TypeError, ValueError):
            return None

    def _filled(self, name) -> bool:
        """Is `name` made by `np.zeros_like`, `np.ones_like`, `np.zeros` or `np.ones`? (Outside
        the masks written, such an array holds numbers whose products with finite adjoints
        are finite: no warning numpy would not give.)"""
        value = self._call(name)
        return value is not None and RULES[value.op].fill is not None

    def _same_mask(self, a, b) -> bool:
        """One mask: the same name, or two names of the same comparison of the same operands
        (`z < 0` written twice)."""
        if a == b:
            return True
        if not (isinstance(a, Var) and isinstance(b, Var)):
            return False
        return a.name in self.masks and self.masks.get(a.name) == self.masks.get(b.name)

    # -- the rewrite ---------------------------------------------------------------------------

    def run(self) -> list:
        for k, stmt in enumerate(list(self.body)):
            value = stmt.value if type(stmt) is Assign else None
            if type(value) is not Call or value.op != "unindex" or value.kwargs:
                continue
            part, x, mask = value.args
            if not (self._full_mask(mask) and isinstance(x, Var)):
                continue
            dtype = self.dtypes.get(x.name)
            if (
                dtype is None
                or np.dtype(dtype).kind != "f"
                or not self._whole(x, mask, np.dtype(dtype))
            ):
                continue
            rewrites: dict = {}
            dense = self._dense(part, mask, np.dtype(dtype), k, rewrites)
            if dense is None or isinstance(dense, Const):
                continue
            for j, new in rewrites.items():
                self.body[j] = new
            where = Call("where", (mask, dense, Const(0.0)))
            self.body[k] = Assign(stmt.target, where, stmt.loc, stmt.note)
        return self.body

    def _dense(self, atom, mask, dtype, at, rewrites):
        """The whole-array atom whose mask part is `atom`'s value at position `at`, adding to
        `rewrites` ({position: statement}) the chain's statements computed on whole arrays;
        None where it cannot be."""
        if isinstance(atom, Const):
            value = atom.value
            ok = type(value) in (int, float) and math.isfinite(value)
            return atom if ok else None
        if not isinstance(atom, Var):
            return None
        name = atom.name
        held = self.written.get(name)
        if held is not None and self._same_mask(held[0], mask) and held[2] < at:
            z = Var(held[1])
            return z if self._whole(z, mask, dtype) else None
        k = self.made.get(name)
        if k is None or k >= at:
            return None
        stmt = self.body[k]
        if isinstance(stmt.value, Var):  # (a copy: a dropped unbroadcast or zero_at)
            return self._dense(stmt.value, mask, dtype, k, rewrites)
        value = stmt.value
        if type(value) is not Call or value.kwargs:
            return None
        if value.op == "getitem" and len(value.args) == 2:
            array, index = value.args
            if isinstance(index, Var) and self._same_mask(index, mask):
                return self._whole_source(array, mask, dtype, k)
            return None
        if not _arithmetic(value.op) or self.uses.get(name, 0) != 1:
            return None
        args = []
        for arg in value.args:
            dense = self._dense(arg, mask, dtype, k, rewrites)
            if dense is None:
                return None
            args.append(dense)
        if all(isinstance(a, Const) for a in args):
            return None
        rewrites[k] = Assign(name, Call(value.op, tuple(args)), stmt.loc, stmt.note)
        self.shapes[name] = self.shapes[mask.name]  # (whole now, no longer the mask's part)
        return atom

    def _whole_source(self, array, mask, dtype, at):
        """`array` (read at `at`) as a whole array of the mask's shape: itself, or through
        copies the name it copies; None where it is not one."""
        while isinstance(array, Var):
            k = self.made.get(array.name)
            if k is not None and k < at and isinstance(self.body[k].value, Var):
                array, at = self.body[k].value, k
                continue
            return array if self._whole(array, mask, dtype) else None
        return None
