"""Sizes and shapes written from the user's own values (`len(Y)`, `X.shape[1]`, `y.size`,
a name the user bound: `n = len(X)`) instead of the numbers of one signature.

`DimensionSources(body, params, shapes, user_names)` reads a function's IR once: for each
value of known shape, which parameter's axis each of its axes is *by construction* (an
elementwise result's axis is the axis of an operand that has it unbroadcast; a
reduction keeps its operand's other axes; `a @ b` has a's rows and b's columns; `.T`
reverses; `x[i]` drops the first axis; a copy is its source), never by an equal number.
Then `size(name)`, `shape(name)` and `dimension(name, axis)` give the statements and the
atom that compute it from a parameter (always bound, never a reused buffer: reading its
shape keeps nothing alive), or None where no parameter names it by construction (the
caller keeps the number). A user's own top-level name for a parameter's dimension
(`n = X.shape[0]`, `n = len(X)`) is preferred.

Python ints either way: the code is as fast as with the numbers.
"""

from __future__ import annotations

from ...ops import RULES
from ..ir import Assign, Call, Const, Marker, Var, walk


class DimensionSources:
    def __init__(self, body, params, shapes: dict, user_names=(), fresh=None):
        self.shapes = shapes
        self.params = [p for p in params if shapes.get(p) is not None]
        self.fresh = fresh
        # name -> per axis, (parameter, axis) or None
        self.dims = {p: tuple((p, k) for k in range(len(shapes[p]))) for p in self.params}
        for stmt in walk(body):
            if type(stmt) is Assign and stmt.target not in self.dims:
                shape = shapes.get(stmt.target)
                if shape is not None:
                    dims = self._dims_of(stmt.value, tuple(shape))
                    if dims is not None and len(dims) == len(shape):
                        self.dims[stmt.target] = dims
        self.user_dims = self._user_dimension_names(body, params, set(user_names))

    def _user_dimension_names(self, body, params, user_names):
        """(parameter, axis) -> a user's name bound to it once at the top level before the
        backward (`n = X.shape[0]`, `n = len(X)`)."""
        counts: dict = {}
        for stmt in walk(body):
            if type(stmt) is Assign:
                counts[stmt.target] = counts.get(stmt.target, 0) + 1
        defs, named = {}, {}
        for stmt in body:
            if isinstance(stmt, Marker):
                break
            if type(stmt) is not Assign or counts[stmt.target] != 1 or stmt.target in params:
                continue
            value = stmt.value
            defs[stmt.target] = value
            if not isinstance(value, Call) or stmt.target not in user_names:
                continue
            array, axis = None, None
            if value.op == "len" and isinstance(value.args[0], Var):
                array, axis = value.args[0].name, 0
            elif (
                value.op == "getitem"
                and isinstance(value.args[0], Var)
                and isinstance(value.args[1], Const)
                and type(value.args[1].value) is int
            ):
                made = defs.get(value.args[0].name)
                if isinstance(made, Call) and made.op == "shape" and isinstance(made.args[0], Var):
                    array, axis = made.args[0].name, value.args[1].value
            if array in self.params and -len(self.shapes[array]) <= axis < len(self.shapes[array]):
                named.setdefault((array, axis % len(self.shapes[array])), stmt.target)
        return named

    def _dims_of(self, value, shape):
        dims, shapes = self.dims, self.shapes
        if type(value) is Var:
            known = shapes.get(value.name)
            return dims.get(value.name) if known is not None and tuple(known) == shape else None
        if type(value) is not Call or value.op not in RULES:
            return None
        op, args = value.op, value.args
        kind = RULES[op].kind
        if kind == "elementwise":
            out = []
            for k in range(len(shape)):
                source = None
                for a in args:
                    if type(a) is Var and a.name in dims:
                        s = shapes[a.name]
                        j = k - (len(shape) - len(s))
                        if j >= 0 and s[j] == shape[k] and dims[a.name][j] is not None:
                            source = dims[a.name][j]
                            break
                out.append(source)
            return tuple(out)
        x = args[0] if args else None
        if type(x) is not Var or x.name not in dims:
            return None
        xd = dims[x.name]
        if kind == "reduction":
            if len(args) > 2 or op == "vector_norm":  # (positions past the axis differ)
                return None
            kwargs = dict(value.kwargs)
            axis = kwargs.get("axis", args[1] if len(args) > 1 else Const(None))
            keep = kwargs.get("keepdims", Const(False))
            if not (isinstance(axis, Const) and isinstance(keep, Const)):
                return None
            axes = axis.value
            if axes is None:
                axes = tuple(range(len(xd)))
            elif type(axes) is int:
                axes = (axes,)
            if not (isinstance(axes, tuple) and all(type(a) is int for a in axes)):
                return None
            axes = {a % len(xd) for a in axes} if xd else set()
            if keep.value:
                return tuple(None if k in axes else d for k, d in enumerate(xd))
            return tuple(d for k, d in enumerate(xd) if k not in axes)
        if op == "T" and not value.kwargs:
            return tuple(reversed(xd))
        if RULES[op].product and len(args) == 2 and type(args[1]) is Var:
            yd = dims.get(args[1].name)
            if yd is None:
                return None
            if len(xd) == 2 and len(yd) == 2:
                return (xd[0], yd[1])
            if len(xd) == 2 and len(yd) == 1:
                return (xd[0],)
            if len(xd) == 1 and len(yd) == 2:
                return (yd[1],)
            return None
        if op == "getitem" and len(args) == 2 and xd:
            index = args[1]
            integer = (type(index) is Const and type(index.value) is int) or (
                type(index) is Var and shapes.get(index.name) is None and index.name not in dims
            )
            return xd[1:] if integer else None
        return None

    # ------------------------------------------------------------------ expressions

    def _whole(self, name, any_order=False):
        """The parameter whose shape `name` has axis for axis (or, `any_order`, whose
        axes `name`'s are in some order: the same size), if one does."""
        dims = self.dims.get(name)
        if not dims:
            return None
        first = dims[0]
        if first is None:
            return None
        p = first[0]
        full = tuple((p, k) for k in range(len(self.shapes[p])))
        if any_order:
            return p if None not in dims and sorted(dims) == list(full) else None
        return p if dims == full else None

    def size(self, target, name, loc=None, note=""):
        """Statements assigning `target` name's size read from a parameter, or None."""
        shape = self.shapes.get(name)
        if shape is None:
            return None
        p = self._whole(name, any_order=True)
        if p is not None and len(shape) > 0:
            return [Assign(target, Call("size", (Var(p),)), loc, note)]
        dims = self.dims.get(name)
        if dims is not None and len(dims) == 1 and dims[0] is not None:
            return self.dimension_into(target, dims[0], loc, note)
        return None

    def shape(self, target, name, loc=None, note=""):
        """Statements assigning `target` name's shape read from a parameter, or None."""
        p = self._whole(name)
        if p is None:
            return None
        return [Assign(target, Call("shape", (Var(p),)), loc, note)]

    def dimension_into(self, target, source, loc=None, note=""):
        array, axis = source
        user = self.user_dims.get(source)
        if user is not None:
            return [Assign(target, Var(user), loc, note)]
        if axis == 0 and self.fresh is not None:
            # named as a person names it, where it is printed as a statement of its own
            name = self.fresh(f"len_{array}")
            return [
                Assign(name, Call("len", (Var(array),)), loc, note),
                Assign(target, Var(name), loc, note),
            ]
        if axis == 0:
            return [Assign(target, Call("len", (Var(array),)), loc, note)]
        if self.fresh is None:
            return None
        shape_name = self.fresh(f"{array}_shape")
        return [
            Assign(shape_name, Call("shape", (Var(array),)), loc, note),
            Assign(target, Call("getitem", (Var(shape_name), Const(axis))), loc, note),
        ]

    def dimension(self, name, axis, loc=None, note=""):
        """(statements, atom) for axis `axis` of `name` read from a parameter (or a user's
        name for it), or None."""
        dims = self.dims.get(name)
        if dims is None or not 0 <= axis < len(dims) or dims[axis] is None or self.fresh is None:
            return None
        array, k = dims[axis]
        user = self.user_dims.get(dims[axis])
        if user is not None:
            return [], Var(user)
        base = f"len_{array}" if k == 0 else f"{array}_{k}"
        target = self.fresh(base)
        stmts = self.dimension_into(target, dims[axis], loc, note)
        return (stmts, Var(target)) if stmts else None


__all__ = ["DimensionSources"]
