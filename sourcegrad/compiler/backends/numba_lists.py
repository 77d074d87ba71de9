"""Lists appended to in a loop, in the numba backend's variant: appended in place.

`appended_in_place(source, stack)` takes the numpy backend's generated module text and the
name of its saved-value stack (`saved`, or None), and returns the text with each list the
code builds by `xs = list_append(xs, item)` (the compiler never mutates a list: each
append makes a new one, `runtime.list_append`) appended to in place, `xs.append(item)`,
where nothing can tell the two apart; the text unchanged for the others. numba types
`xs = []` then `xs.append(item)` as a list of the items' type, and has no
`runtime.list_append`, `np.stack` of a list or `runtime.unstack_list`; those reads become
the helpers `STACK_APPENDED` and `UNSTACK_APPENDED` define (`numba_backend` writes them
into the module, compiled).

Where nothing can tell them apart: the list's other values are never read. The backward
pass restores a list the forward overwrote (`saved.append(xs)` before each append, `xs =
saved.pop()` in the backward); where the list is read only before the first pop and in no
loop a pop is in, the restored values are never read, and the pushes and pops go. Its
other reads (`len(xs)`, `np.stack(xs)`, `unstack_list(g, xs, 0)`) each read the list as it
is then, and make a new value. A VJP's forward may return the list to its backward (a
residual, as the saved stack is): it is rewritten in both functions or in neither, and made
as `numba.typed.List()` (a Python list would be copied out of numba and back in).

`unstack_list(g, xs, 0)`, the adjoint of `np.stack(xs)`, is the list of g's rows (copies):
here one copy of g, an array whose rows are those items. Only where the adjoint is read as
a list of arrays reads alike (`d[-1]`, `d[:-1]`, `d[i]`, `len(d)`, and names it is
assigned to, read so too); else the list is left as it is (numba refuses it, and the numpy
code runs).
"""

from __future__ import annotations

import ast

from .numba_stacks import replace_span, segment, span

STACK_APPENDED = '''@numba.njit
def stack_appended(items):
    """np.stack(items) of a list of equal-shape arrays: one array, the items its rows."""
    if len(items) == 0:
        raise ValueError("need at least one array to stack")
    out = np.empty((len(items),) + items[0].shape, items[0].dtype)
    for k in range(len(items)):
        if items[k].shape != items[0].shape:
            raise ValueError("all input arrays must have the same shape")
        out[k] = items[k]
    return out
'''

UNSTACK_APPENDED = '''@numba.njit
def unstack_appended(g, n):
    """runtime.unstack_list(g, items, 0), n = len(items), as one array: its rows the
    adjoints of the n items (a copy of g's first n rows, as np.take copies each)."""
    if n > g.shape[0]:
        raise IndexError("index out of bounds for the adjoint of np.stack")
    return g[:n].copy()
'''


def appended_in_place(source: str, stack: str | None) -> str:
    """The text with lists built by `list_append` appended to in place (see the module
    docstring); the source unchanged where that could differ."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    edits = []
    for fn in functions:
        starts = {}
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.List)
                and not node.value.elts
            ):
                starts.setdefault(node.targets[0].id, []).append(node)
        for name, assigns in starts.items():
            if name == stack or len(assigns) != 1:
                continue
            found = _list_edits(source, fn, name, stack, parents)
            if found is None:
                continue
            mine, returned = found
            others = [f for f in functions if f is not fn]
            if not returned and any(_is_name(n, name) for f in others for n in ast.walk(f)):
                continue  # (another function restores it, from pushes that would be gone)
            if returned:  # (a VJP's forward hands it to its backward: rewritten there too)
                theirs = _handed_edits(source, functions, name, stack, parents)
                if theirs is None:
                    continue
                # (numba's own typed list: a Python list would be copied out and back in)
                mine += theirs + [span(assigns[0].value) + ("numba.typed.List()",)]
            edits += mine
    if not edits:
        return source
    lines = source.splitlines(keepends=True)
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        replace_span(lines, start, end, text)
    return "".join(lines)


def _handed_edits(source, functions, name, stack, parents):
    """The edits in a VJP's backward of the list `name` its forward returns to it (a
    parameter named alike at the same place), or None."""
    if len(functions) != 2:
        return None
    forward, backward = functions
    returned = [n for n in ast.walk(forward) if isinstance(n, ast.Return)][0].value.elts[1]
    params = [a.arg for a in backward.args.args]
    place = [k for k, r in enumerate(returned.elts) if _is_name(r, name)]
    if len(place) != 1 or place[0] >= len(params) or params[place[0]] != name:
        return None
    found = _list_edits(source, backward, name, stack, parents, handed=True)
    return None if found is None else found[0]


def _list_edits(source, fn, name, stack, parents, handed=False):
    """(the edits making the list `name` of function `fn` appended in place, whether fn
    returns it to a VJP's backward), or None where the list is used otherwise. `handed`:
    fn is that backward, the list its parameter: its reads and restores only."""
    appends, pushes, pops, reads, returned = [], [], [], [], False
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        parent = parents[node]
        if isinstance(node.ctx, ast.Store):
            if not (isinstance(parent, ast.Assign) and parent.targets == [node]):
                return None
            value = parent.value
            if isinstance(value, ast.List) and not handed:
                continue  # (its start)
            if _is_call(value, "list_append", 2) and _is_name(value.args[0], name):
                appends.append(parent)
            elif _is_method_call(value, stack, "pop", 0):
                pops.append(parent)
            else:
                return None
        elif _is_call(parent, "list_append", 2) and parent.args[0] is node:
            assign = parents[parent]
            if not (isinstance(assign, ast.Assign) and _is_name(assign.targets[0], name)):
                return None  # (another name for the longer list: the two would share it)
        elif _is_method_call(parent, stack, "append", 1) and isinstance(
            parents.get(parent), ast.Expr
        ):
            pushes.append(parents[parent])
        elif _read(source, parent, node, parents) is not None:
            reads.append(_read(source, parent, node, parents))
        elif _residual(node, parents):
            returned = True
        else:
            return None
    if bool(appends) == handed:
        return None
    first_pop = min((p.lineno for p in pops), default=None)
    for read in [a.value for a in appends] + [r[0] for r in reads]:
        if first_pop is not None and read.lineno >= first_pop:
            return None  # (a read of a restored value)
        if any(_inside(read, loop) for pop in pops for loop in _loops_around(pop, parents)):
            return None
    if any(_alone_in_block(statement, parents) for statement in pushes + pops):
        return None  # (its block would be empty)
    edits = [_delete(statement) for statement in pushes + pops]
    for assign in appends:
        item = segment(source, assign.value.args[1])
        edits.append(span(assign) + (f"{name}.append({item})",))
    for call, text in reads:
        edits.append(span(call) + (text,))
    return edits, returned


def _residual(node, parents):
    """Whether the name is one of the residuals a VJP's forward returns: `return value,
    (residuals...)`."""
    tuple_ = parents[node]
    return (
        isinstance(tuple_, ast.Tuple)
        and isinstance(parents[tuple_], ast.Tuple)
        and isinstance(parents[parents[tuple_]], ast.Return)
        and parents[tuple_].elts[1:] == [tuple_]
    )


def _read(source, parent, node, parents):
    """(the call, its text in numba's variant) for a read of the list that makes a new
    value: `len(xs)`, `np.stack(xs)` (axis 0), `unstack_list(g, xs, 0)` whose result is
    read as a list of arrays reads alike; else None."""
    if _is_call(parent, "len", 1):
        return parent, f"len({node.id})"
    if (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr == "stack"
        and _is_name(parent.func.value, "np")
        and parent.args[:1] == [node]
        and _axis_zero(parent.args[1:], parent.keywords)
    ):
        return parent, f"stack_appended({node.id})"
    if (
        isinstance(parent, ast.Call)
        and _is_name(parent.func, "unstack_list")
        and len(parent.args) >= 2
        and parent.args[1] is node
        and _axis_zero(parent.args[2:], parent.keywords)
        and _read_as_rows(parent, parents)
    ):
        g = segment(source, parent.args[0])
        return parent, f"unstack_appended({g}, len({node.id}))"
    return None


def _read_as_rows(call, parents):
    """Whether the adjoint list `call` makes is assigned to a name and read only as its
    rows would be read alike: indexed by an int or sliced (`d[-1]`, `d[:-1]`, `d[i]`),
    `len(d)`, assigned to names read so too, or assigned such a slice of itself."""
    statement = parents[call]
    if not (
        isinstance(statement, ast.Assign)
        and statement.value is call
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        return False
    fn = statement
    while not isinstance(fn, ast.FunctionDef):
        fn = parents[fn]
    names, todo = set(), [statement.targets[0].id]
    while todo:
        name = todo.pop()
        if name in names:
            continue
        names.add(name)
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            parent = parents[node]
            if isinstance(node.ctx, ast.Store):
                if not (isinstance(parent, ast.Assign) and parent.targets == [node]):
                    return False
                if parent.value is call:
                    continue
                value = parent.value
                if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):
                    value = value.value
                if not isinstance(value, ast.Name):
                    return False
                todo.append(value.id)
            elif isinstance(parent, ast.Subscript) and parent.value is node:
                if not (isinstance(parent.ctx, ast.Load) and _row_index(parent.slice)):
                    return False
                if parent.slice.__class__ is ast.Slice:
                    assigned = parents[parent]
                    if not (isinstance(assigned, ast.Assign) and assigned.value is parent):
                        return False  # (a slice is read only as a name's new value)
                    todo.append(assigned.targets[0].id)
            elif _is_call(parent, "len", 1):
                continue
            elif isinstance(parent, ast.Assign) and parent.value is node:
                todo.extend(t.id for t in parent.targets if isinstance(t, ast.Name))
                if not all(isinstance(t, ast.Name) for t in parent.targets):
                    return False
            else:
                return False
    return True


def _row_index(index):
    """An int (a literal, maybe negative, or a name) or a slice of those (no step)."""

    def whole(node):
        return (
            node is None
            or isinstance(node, ast.Name)
            or isinstance(node, ast.Constant)
            and type(node.value) is int
            or isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int
        )

    if isinstance(index, ast.Slice):
        return index.step is None and whole(index.lower) and whole(index.upper)
    return index is not None and whole(index)


def _axis_zero(args, keywords):
    """Whether the rest of a call's arguments say axis 0 (or nothing)."""
    given = list(args) + [k.value for k in keywords if k.arg == "axis"]
    if len(given) > 1 or any(k.arg != "axis" for k in keywords):
        return False
    return not given or isinstance(given[0], ast.Constant) and given[0].value == 0


def _is_name(node, name):
    return isinstance(node, ast.Name) and node.id == name


def _is_call(node, function, nargs):
    return (
        isinstance(node, ast.Call)
        and _is_name(node.func, function)
        and len(node.args) == nargs
        and not node.keywords
    )


def _is_method_call(node, owner, method, nargs):
    return (
        owner is not None
        and isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
        and _is_name(node.func.value, owner)
        and len(node.args) == nargs
        and not node.keywords
    )


def _loops_around(node, parents):
    loops = []
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.For, ast.While)):
            loops.append(node)
    return loops


def _inside(node, other):
    return other.lineno <= node.lineno and node.end_lineno <= other.end_lineno


def _alone_in_block(statement, parents):
    parent = parents[statement]
    return any(getattr(parent, f, None) == [statement] for f in ("body", "orelse", "finalbody"))


def _delete(statement):
    """The edit deleting a one-statement line."""
    return (statement.lineno, 0), (statement.end_lineno + 1, 0), ""


__all__ = ["STACK_APPENDED", "UNSTACK_APPENDED", "appended_in_place"]
