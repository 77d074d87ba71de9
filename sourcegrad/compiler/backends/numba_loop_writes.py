"""Adjoints of parts of arrays in the numba backend's variant: a loop's zeroing no one reads
again dropped, parts' adjoints added into one array in place.

`without_unread_zeroing(source)` takes the numpy backend's generated module text and returns
it without each statement `X = zero_at(X, index)` (a copy of X with zeros at index: the
adjoint of a write `h[:, t, :] = ...`, for the array written) of a loop where nothing can see
the zeros. The optimizer drops such copies from top-level statements (`optimize/updates.py`);
a loop the trace rolled keeps them (an RNN's `h[:, t, :] = h_t` over T steps copies the
whole adjoint of h at every step: the layers LSTM's backward spent 7% of its time there).

A statement is dropped where, in `for i in range(...)` over literal non-negative bounds
(each value of i once, none naming an element from the end), `index` holds i as an item of
its own (`(np.s_[:], i, np.s_[:])`: the zeros lie at i along that axis) and every other read
of X in the function is `X[index]`, the same index, in the same loop's body before the
statement (not in a nested block): each iteration reads its part before it is zeroed, the
later ones read parts at other values of i, and nothing reads X after the loop. X assigned
nowhere else in the loop. Anything else is left as it is.

`parts_added_in_place(source)` takes the same text and returns it with the adjoints of
parts of one array added into another's in place: `B = unindex(g, x, np.s_[:, 64:96])`
(zeros the size of x, g at the part) later added into `A`, itself made by `unindex(..., x,
...)` (`A += B`, `C = np.add(A, B, out=A)`), as `add_part(A, (slice(None, None), slice(64,
96)), g)` (the numba backend's helper for `A[:, 64:96] += g`, whose own form numba compiles
with its error message's string formatting: seconds) where B was made (and `C = A`): an
LSTM's four gates' adjoints, each a part of one product's, made one array with no zeros and
no sums of whole arrays (the optimizer does the same on top-level statements,
`optimize/updates.py`). Only where A and B are made in one block (no branch between), the
part a literal basic index (ints and slices of literal ints), x assigned nowhere from A's
statement to B's, A neither read nor assigned from B's statement to the sum, and B's value
read by the sum alone. The sums keep their order (each element adds the same numbers in the
same order, but that `0.0 + -0.0` is not computed: a zero's sign may differ).

`PARTS`: the helpers' text that writes and adds at a basic index (`setitem_basic`,
`unindex_at`, `unindex_one`, `add_part`), which the numba backend puts in its variant.

Why one module: both edits and `PARTS` are one rewrite of the adjoints of parts of arrays
(the helpers are what the added-in-place statements call), read together.

Takes and gives module text; imports `numba_stacks`' text edits.
"""

from __future__ import annotations

import ast
import re

from .numba_stacks import replace_span, segment, span


def without_unread_zeroing(source: str) -> str:
    if not re.search(r"^from sourcegrad\.runtime import .*\bzero_at\b", source, re.M):
        return source  # (`zero_at` is the runtime's: the code imports it)
    tree = ast.parse(source)
    edits = []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        for loop in (n for n in ast.walk(fn) if isinstance(n, ast.For)):
            counter = _counter(loop)
            if counter is None:
                continue
            for position, stmt in enumerate(loop.body):
                if _unread_zeroing(fn, loop, position, stmt, counter):
                    edits.append(span(stmt))
    if not edits:
        return source
    lines = source.splitlines(keepends=True)
    for start, end in sorted(edits, reverse=True):
        replace_span(lines, start, end, "pass")
    return "".join(lines)


def _counter(loop):
    """The name of `loop`'s counter where it is `for i in range(...)` (or `reversed(...)` of
    one) over literal non-negative ints, else None."""
    call = loop.iter
    if _is_call(call, "reversed") and len(call.args) == 1:
        call = call.args[0]
    if not (isinstance(loop.target, ast.Name) and _is_call(call, "range")) or call.keywords:
        return None
    bounds = call.args[:2]
    if not bounds or not all(_literal_int(b) is not None and _literal_int(b) >= 0 for b in bounds):
        return None
    if len(call.args) == 3 and _literal_int(call.args[2]) not in (1,):
        return None  # (a literal step of 1 only: the bounds above are the values' range)
    return loop.target.id


def _unread_zeroing(fn, loop, position, stmt, counter) -> bool:
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and _is_call(stmt.value, "zero_at")
        and len(stmt.value.args) == 2
        and not stmt.value.keywords
        and isinstance(stmt.value.args[0], ast.Name)
        and stmt.value.args[0].id == stmt.targets[0].id
    ):
        return False
    name = stmt.targets[0].id
    key = _index_key(stmt.value.args[1])
    if key is None or ("name", counter) not in key:
        return False
    if any(  # (the counter itself never assigned in the loop: it counts)
        isinstance(n, ast.Name) and n.id == counter and not isinstance(n.ctx, ast.Load)
        for s in loop.body
        for n in ast.walk(s)
    ):
        return False
    before = loop.body[:position]
    allowed = {id(stmt.value.args[0])}  # the Name nodes reading X as this pass allows
    for s in before:
        for node in ast.walk(s):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id == name
                and isinstance(node.ctx, ast.Load)
                and not _nested(s, node)
                and _index_key(node.slice) == key
            ):
                allowed.add(id(node.value))
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        if isinstance(node.ctx, ast.Load) and id(node) not in allowed:
            return False
        if (
            not isinstance(node.ctx, ast.Load)
            and _inside(loop, node)
            and node is not stmt.targets[0]
        ):
            return False
    return True


def _nested(stmt, node) -> bool:
    """Is `node` inside a block nested in `stmt` (a loop's or a branch's body)?"""
    for child in ast.walk(stmt):
        if isinstance(child, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
            if any(n is node for n in ast.walk(child)):
                return True
    return False


def _inside(loop, node) -> bool:
    return any(n is node for s in loop.body for n in ast.walk(s))


def _index_key(node):
    """An index of ints, names and slices of those as a comparable tuple, whether written
    as a subscript's (`[:, i, :]`) or as the code writes a zero_at's (`(np.s_[:], i,
    np.s_[:])`, `np.s_[:, i]`); None for any other."""
    if is_s_(node):
        node = node.slice
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    key = []
    for item in items:
        if is_s_(item) and isinstance(item.slice, ast.Slice):
            item = item.slice
        if isinstance(item, ast.Slice):
            parts = [item.lower, item.upper, item.step]
            if not all(p is None or _atom(p) is not None for p in parts):
                return None
            key.append(("slice", *(None if p is None else _atom(p) for p in parts)))
        elif _atom(item) is not None:
            key.append(_atom(item))
        else:
            return None
    return tuple(key)


def _atom(node):
    if isinstance(node, ast.Name):
        return ("name", node.id)
    value = _literal_int(node)
    return None if value is None else ("int", value)


def _literal_int(node):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def is_s_(node) -> bool:
    """Is `node` `np.s_[...]` (how generated code spells an index outside a subscript)?"""
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "s_"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "np"
    )


def _is_call(node, name) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def parts_added_in_place(source: str) -> str:
    if not re.search(r"^from sourcegrad\.runtime import .*\bunindex\b", source, re.M):
        return source
    while True:  # (one sum at a time: the next may read what this one moved)
        tree = ast.parse(source)
        edit = next(
            (
                e
                for fn in tree.body
                if isinstance(fn, ast.FunctionDef)
                for block in _blocks(fn)
                for e in _added_parts(source, fn, block)
            ),
            None,
        )
        if edit is None:
            return source
        lines = source.splitlines(keepends=True)
        for start, end, text in sorted(edit, reverse=True):
            replace_span(lines, start, end, text)
        source = "".join(lines)


def _blocks(fn):
    yield fn.body
    for node in ast.walk(fn):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if (
                node is not fn
                and isinstance(block, list)
                and block
                and isinstance(block[0], ast.stmt)
            ):
                yield block


def _added_parts(source, fn, block):
    """The edits (start, end, text) of each sum in `block` that `parts_added_in_place` may
    rewrite (the first one only is used: the text changes)."""
    for k, stmt in enumerate(block):
        part = _part_of(stmt)
        if part is None:
            continue
        b, x, index, g = part
        for j in range(k + 1, len(block)):
            total = _sum_of(block[j], b)
            if total is None:
                continue
            a, result = total
            if _movable(fn, block, k, j, a, b, x):
                moved = f"add_part({a}, {_numba_index(index)}, {segment(source, g)})"
                rest = "pass" if result is None else f"{result} = {a}"
                yield [(*span(stmt), moved), (*span(block[j]), rest)]
            break


def _part_of(stmt):
    """(B, x, the np.s_ index, g) of `B = unindex(g, x, np.s_[...])` at a literal basic
    index, else None."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and _is_call(stmt.value, "unindex")
        and len(stmt.value.args) == 3
        and not stmt.value.keywords
        and isinstance(stmt.value.args[1], ast.Name)
        and is_s_(stmt.value.args[2])
    ):
        return None
    key = _index_key(stmt.value.args[2])
    if key is None or any(part[0] == "name" for part in _parts(key)):
        return None  # (a name may hold an array of indices, which may repeat)
    g, x, index = stmt.value.args
    return stmt.targets[0].id, x.id, index, g


def _numba_index(index) -> str:
    """`np.s_[:, 64:96]` (ints and slices of literal ints: `_part_of`) as numba's source,
    `(slice(None, None), slice(64, 96))`: numba has no `np.s_`."""
    items = []
    for item in _index_key(index):
        if item[0] == "slice":
            bounds = [str(b[1]) if b else "None" for b in item[1:3]]
            items.append(f"slice({', '.join(bounds + ([str(item[3][1])] if item[3] else []))})")
        else:
            items.append(str(item[1]))
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _parts(key):
    """The ints and names of an index's key, slices' bounds included."""
    for item in key:
        if item[0] == "slice":
            yield from (p for p in item[1:] if p is not None)
        else:
            yield item


def _sum_of(stmt, b):
    """(A, None) for `A += B`, (A, C) for `C = np.add(A, B, out=A)`, else None."""
    if (
        isinstance(stmt, ast.AugAssign)
        and isinstance(stmt.op, ast.Add)
        and isinstance(stmt.target, ast.Name)
        and isinstance(stmt.value, ast.Name)
        and stmt.value.id == b
    ):
        return stmt.target.id, None
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    value, target = stmt.value, stmt.targets[0]
    if not (
        isinstance(target, ast.Name)
        and isinstance(value, ast.Call)
        and ast.unparse(value.func) == "np.add"
        and len(value.args) == 2
        and len(value.keywords) == 1
        and value.keywords[0].arg == "out"
        and all(isinstance(a, ast.Name) for a in (*value.args, value.keywords[0].value))
        and value.args[1].id == b
        and value.keywords[0].value.id == value.args[0].id
    ):
        return None
    return value.args[0].id, target.id


def _movable(fn, block, k, j, a, b, x) -> bool:
    """May `A += B` (block[j]) be done where B is made (block[k])? See the module docstring."""
    made = [
        i
        for i in range(k)
        if _part_of(block[i]) is not None
        and _part_of(block[i])[0] == a
        and _part_of(block[i])[1] == x
    ]
    if not made or a == b:
        return False
    start = made[-1]
    if any(_stores(s, x) for s in block[start + 1 : k]) or any(
        _stores(s, a) for s in block[start + 1 : k]
    ):
        return False
    if any(_loads(s, a) or _stores(s, a) for s in block[k + 1 : j]):
        return False
    # B's value read by the sum alone: up to B's next assignment in the block where there is
    # one (the sum's own included), else anywhere in the function
    later = [i for i in range(k + 1, len(block)) if _stores(block[i], b)]
    if later and later[0] >= j:
        readers = [i for i in range(k + 1, later[0] + 1) if _loads(block[i], b)]
        return readers == [j] and _count_loads(block[j], b) == 1
    stores = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Name) and n.id == b and not isinstance(n.ctx, ast.Load)
    ]
    loads = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Name) and n.id == b and isinstance(n.ctx, ast.Load)
    ]
    return len(stores) == 1 and len(loads) == 1 and _count_loads(block[j], b) == 1


def _loads(stmt, name) -> bool:
    return _count_loads(stmt, name) > 0


def _count_loads(stmt, name) -> int:
    return sum(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        for n in ast.walk(stmt)
    )


def _stores(stmt, name) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
        for n in ast.walk(stmt)
    )


# The numba backend's helpers writing at a basic index (ints and slices), one text: numba's own
# `x[i] = v` (and `x[i] += v`) of an array v compiles the string formatting of its shape
# error's message (`raise_with_shape_context`: 5-10 s, once a process; the LSTM's first
# call), so an array is written through the part's view by a ufunc, whose out= numba never
# checks against the input's shape (it reads past the input's end): checked here first.
PARTS = '''import numba.extending


def write_part(x, i, v):
    """x[i] = v at a basic index i (numba compiles the overload below; this is what it does)."""
    x[i] = v


def add_part(x, i, v):
    """x[i] += v at a basic index i (numba compiles the overload below; this is what it does)."""
    x[i] += v


def _part_ndim(x, i, v):
    """The dimensions of x[i] (numba's types) where it is an array that v, an array of no
    more dimensions, is written into; 0 where x[i] or v is a number (numba's own indexing
    serves); None for any other index or v (numba refuses the call: the numpy code runs)."""
    items = i.types if isinstance(i, numba.types.BaseTuple) else (i,)
    if not isinstance(x, numba.types.Array) or not all(
        isinstance(t, (numba.types.Integer, numba.types.SliceType)) for t in items
    ):
        return None
    ndim = x.ndim - sum(isinstance(t, numba.types.Integer) for t in items)
    if ndim == 0 or not isinstance(v, numba.types.Array):
        return 0
    return ndim if v.ndim <= ndim else None


@numba.njit
def _fits(v, part):
    """Raise numpy's error unless v broadcasts to part's shape."""
    shift = part.ndim - v.ndim
    for d in range(v.ndim):
        if v.shape[d] != 1 and v.shape[d] != part.shape[shift + d]:
            raise ValueError("could not broadcast input array into the part's shape")


@numba.extending.overload(write_part)
def _write_part(x, i, v):
    ndim = _part_ndim(x, i, v)
    if ndim is None:
        return None
    if ndim == 0:

        def put(x, i, v):
            x[i] = v

        return put

    def put_array(x, i, v):
        part = x[i]
        _fits(v, part)
        np.positive(v, part)

    return put_array


@numba.extending.overload(add_part)
def _add_part(x, i, v):
    ndim = _part_ndim(x, i, v)
    if ndim is None:
        return None
    if ndim == 0:

        def add(x, i, v):
            x[i] += v

        return add

    def add_array(x, i, v):
        part = x[i]
        _fits(v, part)
        np.add(part, v, part)

    return add_array


@numba.njit
def setitem_basic(x, i, v):
    """runtime.setitem at a basic index i (ints, slices): a copy of x with v written at x[i]."""
    out = x.copy()
    write_part(out, i, v)
    return out


@numba.njit
def unindex_at(g, x, i):
    """runtime.unindex at a basic index i: zeros shaped like x, g at x[i]."""
    out = np.zeros_like(x)
    write_part(out, i, g)
    return out


def unindex_one(g, x, i):
    """runtime.unindex at an index only numba's types tell (`y[k]` of an int array): at an
    int, zeros shaped like x, g at x[i]; at any other index numba refuses it (an array of
    indices adds up where they repeat), and the numpy code runs."""
    raise NotImplementedError("compiled by numba only")


@numba.extending.overload(unindex_one)
def _unindex_one(g, x, i):
    if isinstance(i, numba.types.Integer):

        def at(g, x, i):
            out = np.zeros_like(x)
            write_part(out, i, g)
            return out

        return at
    return None
'''


__all__ = ["PARTS", "parts_added_in_place", "without_unread_zeroing"]
