"""Boolean masks of more than one dimension, in the numba backend's variant.

`masked_indexing(source)` takes the numpy backend's generated module text and returns it
with each read, write and update through a mask (a name only ever assigned a comparison,
`neg = x < 0`, or the value the backward restores into it) as calls of helpers:
`x[m]` as `masked_elements(x, m)`, `x[m] = v` as `write_masked(x, m, v)`, `x[m] += v` as
`write_masked(x, m, masked_elements(x, m) + v)` (numpy's meaning of it), and the runtime's
`unindex(g, x, m)` (the adjoint of `x[m]`), `setitem(x, m, v)` (a copy written through m),
`zero_at(g, m)` and `unbroadcast(g[m], y)` (the adjoints of a write through m and of an
operation on a selection, in a loop the optimizer leaves them in) as `unindex_masked`,
`setitem_masked`, `zero_at_masked` and `unbroadcast_masked` (the last for operands of one
dimension only: numba refuses any other, and the numpy code runs). numba indexes by
a boolean array of one dimension only (a 2-d mask fails inside numba's lowering); the
helpers (`MASKED`, which `numba_backend` writes into the module) do what numpy does, in
C order, for a mask of x's shape, and index as numba does for any other index (an int
compared with an int is a bool: numba's own indexing by it, as before this pass).
"""

from __future__ import annotations

import ast
import re

from .numba_stacks import replace_span, segment, span

MASKED = '''import numba.extending


def masked_elements(x, m):
    """x[m] (compiled by numba only: see below)."""
    raise NotImplementedError("compiled by numba only")


def write_masked(x, m, v):
    """x[m] = v (compiled by numba only: see below)."""
    raise NotImplementedError("compiled by numba only")


def _is_mask(x, m):
    """Whether m (numba's type) is a boolean array of x's dimensions, more than one (numba
    indexes by one of one dimension, and by one of fewer than x's numpy indexes x's leading
    dimensions: numba's own indexing, which refuses it, and the numpy code runs)."""
    return (
        isinstance(m, numba.types.Array)
        and isinstance(m.dtype, numba.types.Boolean)
        and isinstance(x, numba.types.Array)
        and m.ndim == x.ndim > 1
    )


@numba.extending.overload(masked_elements)
def _masked_elements(x, m):
    if not _is_mask(x, m):
        return lambda x, m: x[m]  # (numba's own indexing)

    def read(x, m):
        """x[m] for a mask m of x's shape: its elements where m is True, in C order."""
        if x.shape != m.shape:
            raise IndexError("boolean index did not match indexed array")
        return x.ravel()[m.ravel()]

    def read_rows(x, m):
        """read, for two dimensions in two loops (a strided x is not copied by ravel)."""
        if x.shape != m.shape:
            raise IndexError("boolean index did not match indexed array")
        rows, columns = x.shape
        out = np.empty(m.sum(), x.dtype)
        k = 0
        for i in range(rows):
            for j in range(columns):
                if m[i, j]:
                    out[k] = x[i, j]
                    k += 1
        return out

    return read_rows if m.ndim == 2 else read


@numba.extending.overload(write_masked)
def _write_masked(x, m, v):
    if not _is_mask(x, m):

        def put(x, m, v):
            x[m] = v  # (numba's own indexing)

        return put
    many = isinstance(v, numba.types.Array)

    def put_mask(x, m, v):
        """x[m] = v for a mask m of x's shape: v a number, or one value for each True of
        m (in C order), or a single one."""
        if x.shape != m.shape:
            raise IndexError("boolean index did not match indexed array")
        values = np.asarray(v).ravel()
        count = m.sum()
        if many and values.size != count and values.size != 1:
            raise ValueError("boolean array indexing assignment: values of the wrong size")
        k = 0
        for index in np.ndindex(x.shape):
            if m[index]:
                x[index] = values[k if values.size > 1 else 0]
                k += 1

    def put_rows(x, m, v):
        """put_mask, for two dimensions in two loops."""
        if x.shape != m.shape:
            raise IndexError("boolean index did not match indexed array")
        values = np.asarray(v).ravel()
        count = m.sum()
        if many and values.size != count and values.size != 1:
            raise ValueError("boolean array indexing assignment: values of the wrong size")
        step = 1 if values.size > 1 else 0
        rows, columns = x.shape
        k = 0
        for i in range(rows):
            for j in range(columns):
                if m[i, j]:
                    x[i, j] = values[k]
                    k += step

    return put_rows if m.ndim == 2 else put_mask


@numba.njit
def unindex_masked(g, x, m):
    """runtime.unindex(g, x, m), the adjoint of x[m]: zeros shaped like x, g where m is
    True (a mask names each element once)."""
    out = np.zeros_like(x)
    write_masked(out, m, g)
    return out


@numba.njit
def setitem_masked(x, m, v):
    """runtime.setitem(x, m, v): a copy of x with v written where m is True."""
    out = x.copy()
    write_masked(out, m, v)
    return out


@numba.njit
def zero_at_masked(g, m):
    """runtime.zero_at(g, m), the adjoint of a write through m for the array written: a
    copy of g with zeros where m is True."""
    out = g.copy()
    write_masked(out, m, 0.0)
    return out


def unbroadcast_masked(g, x):
    """runtime.unbroadcast(g, x) (compiled by numba only: see below)."""
    raise NotImplementedError("compiled by numba only")


@numba.extending.overload(unbroadcast_masked)
def _unbroadcast_masked(g, x):
    """For two arrays of one dimension (a mask's selections, `g[m]` and `y[m]`): g where the
    lengths agree, summed where x has one element, broadcast where g has one, as
    runtime.unbroadcast does; for any other types nothing (numba refuses the call: the numpy
    code runs)."""
    if not (
        isinstance(g, numba.types.Array)
        and isinstance(x, numba.types.Array)
        and g.ndim == x.ndim == 1
    ):
        return None

    def undo(g, x):
        n, m = g.shape[0], x.shape[0]
        if n == m:
            return g.copy()
        if m == 1:
            return np.full(1, g.sum())
        if n == 1:
            return np.full(m, g[0])
        raise ValueError("operands could not be broadcast together")

    return undo
'''


def masked_indexing(source: str) -> str:
    """The text with indexing through masks as the helpers' calls (module docstring)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    edits = []
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    handed = set()  # (a VJP's backward: parameters the forward returned as masks)
    for fn in functions:
        masks = _masks(fn, handed)
        if fn is functions[0] and len(functions) == 2:
            handed = _residual_masks(fn, functions[1], masks)
        if not masks:
            continue
        for node in ast.walk(fn):
            edit = _edit(source, node, masks, parents)
            if edit is not None:
                edits.append(edit)
    if not edits:
        return source
    lines = source.splitlines(keepends=True)
    innermost = [e for e in edits if not any(o is not e and _within(o, e) for o in edits)]
    for start, end, text in sorted(innermost, reverse=True):
        replace_span(lines, start, end, text)
    source = "".join(lines)
    return masked_indexing(source) if len(innermost) < len(edits) else source


def _within(inner, outer):
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def _masks(fn, handed=frozenset()):
    """The names fn only ever assigns a comparison of two operands, the value the backward
    restores from a stack (a value a comparison gave them) or a saved variable's `None`
    start; no parameter but
    those `handed` (masks a VJP's forward returned to fn, its backward)."""
    params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    compared, others = params & set(handed), params - set(handed)
    assigned = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            mask = isinstance(node.value, ast.Compare) and len(node.value.ops) == 1
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.add(id(target))
                    if mask:
                        compared.add(target.id)
                    elif not (_is_pop(node.value) or _is_none(node.value)):
                        others.add(target.id)
    for node in ast.walk(fn):  # (any other binding: a loop's target, an augmented one, ...)
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            if id(node) not in assigned:
                others.add(node.id)
    return compared - others


def _residual_masks(forward, backward, masks):
    """The backward's parameters that are masks of the forward: a VJP's forward returns
    `value, (residuals...)` and its backward takes the residuals, named alike, first."""
    returned = [n for n in ast.walk(forward) if isinstance(n, ast.Return)]
    if len(returned) != 1 or not isinstance(returned[0].value, ast.Tuple):
        return set()
    parts = returned[0].value.elts
    if len(parts) != 2 or not isinstance(parts[1], ast.Tuple):
        return set()
    params = [a.arg for a in backward.args.args]
    return {
        r.id
        for k, r in enumerate(parts[1].elts)
        if isinstance(r, ast.Name) and r.id in masks and k < len(params) and params[k] == r.id
    }


def _is_none(value):
    """`None`: the start a saved variable of a loop is given before it (`a = None  # saved`,
    which `numba_stacks` drops: the stack holds its values)."""
    return isinstance(value, ast.Constant) and value.value is None


def _is_pop(value):
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "pop"
        and not value.args
    )


def _edit(source, node, masks, parents):
    """(start, end, text) of the helper call replacing node, or None."""

    def text(n):
        return segment(source, n)

    if isinstance(node, ast.Subscript) and _is_mask_name(node.slice, masks):
        target, mask = text(node.value), node.slice.id
        parent = parents[node]
        if isinstance(node.ctx, ast.Load):
            return span(node) + (f"masked_elements({target}, {mask})",)
        if isinstance(parent, ast.Assign) and parent.targets == [node]:
            return span(parent) + (f"write_masked({target}, {mask}, {text(parent.value)})",)
        if isinstance(parent, ast.AugAssign) and isinstance(node.value, ast.Name):
            op = _OPERATORS.get(type(parent.op))
            if op is None:
                return None
            value = f"masked_elements({target}, {mask}) {op} ({text(parent.value)})"
            return span(parent) + (f"write_masked({target}, {mask}, {value})",)
        return None
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _RUNTIME_ARITY
        and len(node.args) == _RUNTIME_ARITY[node.func.id]
        and not node.keywords
        and _imported(source, node.func.id)
    ):
        return None
    args = ", ".join(text(a) for a in node.args)
    if node.func.id == "unbroadcast":  # (of a mask's selection: `unbroadcast(g[m], y)`)
        first = node.args[0]
        selection = (
            isinstance(first, ast.Subscript)
            and _is_mask_name(first.slice, masks)
            or isinstance(first, ast.Call)
            and isinstance(first.func, ast.Name)
            and first.func.id == "masked_elements"
        )
        return span(node) + (f"unbroadcast_masked({args})",) if selection else None
    if _is_mask_name(node.args[_RUNTIME_MASK_AT[node.func.id]], masks):
        return span(node) + (f"{node.func.id}_masked({args})",)
    return None


# the runtime's helpers this pass writes as the helpers' calls, by their number of arguments:
# unindex(g, x, m), setitem(x, m, v), zero_at(g, m), unbroadcast(g, y)
_RUNTIME_ARITY = {"unindex": 3, "setitem": 3, "zero_at": 2, "unbroadcast": 2}
_RUNTIME_MASK_AT = {"unindex": 2, "setitem": 1, "zero_at": 1}  # (the mask's position)


def _imported(source, name) -> bool:
    """Is `name` the runtime's helper (imported from it by the generated module)?"""
    return re.search(rf"^from sourcegrad\.runtime import .*\b{name}\b", source, re.M) is not None


_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def _is_mask_name(node, masks):
    return isinstance(node, ast.Name) and node.id in masks


__all__ = ["MASKED", "masked_indexing"]
