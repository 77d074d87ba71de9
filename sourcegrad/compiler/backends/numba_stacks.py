"""The saved-value stack of the numba backend's variant: one list per saved variable.

`split_stack(source, typed)` takes the numpy backend's generated module text, whose one
saved-value stack (`saved`) holds the values of every variable the forward overwrites
(numbers, arrays, masks and, before a variable's first assignment, None), and returns the
text with one list per variable (`saved_x`), each of one type, as numba needs; the text
unchanged where the stack is used otherwise than codegen writes it. `PREVIOUS_VALUE` is
the helper the text then calls (`numba_backend` writes it into the module, compiled), and
`replace_span` and `span` the text edits both modules make.
"""

from __future__ import annotations

import ast
import functools
import re

from .numba_fusion import byte_col

PREVIOUS_VALUE = '''@numba.njit
def previous_value(stack):
    """The value a variable held before its last assignment, from the stack of the values
    each assignment gave it (`split_stack`); before the first, when it did not exist (and
    is never read), the first."""
    last = stack.pop()
    return stack[-1] if len(stack) else last
'''


def replace_span(lines, start, end, text):
    """Replace the text from `start` to `end` ((line, column) pairs, ast's) in `lines`."""
    (l0, c0), (l1, c1) = start, end
    first, last = lines[l0 - 1], lines[l1 - 1]
    lines[l0 - 1] = first[: byte_col(first, c0)] + text + last[byte_col(last, c1) :]
    for i in range(l0, l1):
        lines[i] = ""


@functools.lru_cache(maxsize=8)
def _lines(source):
    """The text's lines, with their ends, as ast numbers them (\\n, \\r\\n or \\r ends one)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", source)


def segment(source, node):
    """`ast.get_source_segment(source, node)`, without splitting the text into lines again
    at each call (ast does: minutes over the thousands of calls of an unrolled loop's
    2,700 lines)."""
    lines = _lines(source)
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first].encode()[node.col_offset : node.end_col_offset].decode()
    head = lines[first].encode()[node.col_offset :].decode()
    tail = lines[last].encode()[: node.end_col_offset].decode()
    return head + "".join(lines[first + 1 : last]) + tail


def span(node):
    """(start, end) of a node, as `replace_span` takes them."""
    return (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)


# the line codegen starts a function's saved-value stack with
_STACK_LINE = re.compile(
    r"^ +(\w+) = \[\]  # values the backward pass needs that the forward overwrites$", re.M
)
_SAVED_INIT = r"^ +{} = None +# saved\n"


def stack_name(source: str) -> str | None:
    """The name of the text's saved-value stack (codegen's `saved`), or None without one."""
    found = _STACK_LINE.search(source)
    return found.group(1) if found else None


def split_stack(source: str, typed: bool = False) -> str:
    """The text with its one saved-value stack (`saved`, a list holding the values of every
    variable the forward overwrites: numbers, arrays, masks and, before a variable's first
    assignment, None) as one list per variable (`saved_x`), each holding one type, as numba
    needs. The source unchanged where the stack is used otherwise than codegen writes it.

    Each push of a variable's old value (`saved.append(x)`) is paired with the pop that
    restores it into the same name (`x = saved.pop()`): reverse.py pushes a variable where
    the forward overwrites it and pops it into that name where the backward restores it, and
    no pass renames a pushed name (it is assigned more than once: copies are not propagated
    into it). The pops of one name then take its pushes in reverse order from its own stack
    as they did from the shared one (optimize.memory drops one name's pushes and pops alike).

    A variable first assigned inside a loop or branch starts as None in the numpy code, so
    that its first push has a value; numba cannot type a list of None and arrays. Where each
    of its assignments in the forward is a push then the assignment, the variable is pushed
    after the assignment instead (its new value) and restored as the value before the last
    one pushed (`previous_value`): the same values, and the None never exists (where the
    numpy code restored it, the backward never reads the variable again). A VJP's forward
    returns such a variable never assigned (in a branch not taken) as numba's zero value
    (0.0, False, an empty array), which its backward never reads either.
    `typed`: `numba.typed.List()` instead of `[]` (a VJP's stacks pass from the forward to
    the backward: numba would copy a Python list in and out)."""
    # (long: the stack's uses paired per name, then the edits made from the end, sharing one
    # parent map)
    found = _STACK_LINE.search(source)
    if found is None or re.search(r"\bprevious_value\b", source):
        return source
    stack = found.group(1)
    tree = ast.parse(source)
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    pushes, pops, residuals, params = [], [], [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.arg == stack:
            params.append(node)
        if not (isinstance(node, ast.Name) and node.id == stack):
            continue
        use = _stack_use(node, parents)
        if use is None:
            return source  # (used otherwise: left as it is, and numba may refuse it)
        kind, what = use
        {"push": pushes, "pop": pops, "residual": residuals, "init": []}[kind].append(what)
    names = list(dict.fromkeys(call.args[0].id for _, call in pushes))
    if not names or set(names) != {assign.targets[0].id for assign in pops}:
        return source
    taken = set(re.findall(r"\b\w+\b", source))
    stacks = {}
    for name in names:
        stacks[name] = _fresh(f"{stack}_{name}", taken)
        taken.add(stacks[name])
    boundary = _forward_end(source, tree)
    shifted = {
        n for n in names if _pushed_before_each_assignment(n, stack, tree, boundary, parents)
    }
    shifted &= {n for n in names if re.search(_SAVED_INIT.format(n), source, re.M)}
    lines = source.splitlines(keepends=True)
    edits = []  # (line, column) spans -> text, applied from the end
    for expr, call in pushes:
        name = call.args[0].id
        if name in shifted:  # after the assignment that follows it
            assign = _next_statement(expr, parents)
            pad = " " * expr.col_offset
            edits.append(((expr.lineno, 0), (expr.lineno + 1, 0), ""))
            edits.append(
                (
                    (assign.end_lineno + 1, 0),
                    (assign.end_lineno + 1, 0),
                    f"{pad}{stacks[name]}.append({name})\n",
                )
            )
        else:
            edits.append(span(call.func.value) + (stacks[name],))
    for assign in pops:
        name = assign.targets[0].id
        text = f"previous_value({stacks[name]})" if name in shifted else f"{stacks[name]}.pop()"
        edits.append(span(assign.value) + (text,))
    for node in residuals + params:
        edits.append(span(node) + (", ".join(stacks[n] for n in names),))
    empty = "numba.typed.List()" if typed else "[]"
    pad = found.group(0)[: len(found.group(0)) - len(found.group(0).lstrip())]
    init = f"{pad}# values the backward pass needs that the forward overwrites, a list each"
    init += "".join(f"\n{pad}{stacks[n]} = {empty}" for n in names)
    line = source.count("\n", 0, found.start()) + 1
    edits.append(((line, 0), (line, len(lines[line - 1]) - 1), init))
    for name in shifted:  # (never None: see above)
        for match in re.finditer(_SAVED_INIT.format(name), source, re.M):
            first = source.count("\n", 0, match.start()) + 1
            edits.append(((first, 0), (first + 1, 0), ""))
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        if start[0] > len(lines):
            lines.append(text)
        else:
            replace_span(lines, start, end, text)
    # (a section whose only statement was a variable's `= None` start: its comment goes too)
    return re.sub(
        r"^( +)# line \d+: .*\n(?=\1# (backward of )?line \d+: )", "", "".join(lines), flags=re.M
    )


def _stack_use(node, parents):
    """('push', (statement, call)), ('pop', assignment), ('residual', node), ('init', node)
    for the stack name's use, or None for another use."""
    parent = parents[node]
    if isinstance(parent, ast.Assign) and parent.targets == [node]:
        return ("init", node) if isinstance(parent.value, ast.List) else None
    if isinstance(parent, ast.Tuple) and isinstance(parents[parent], ast.Tuple):
        if isinstance(parents[parents[parent]], ast.Return):
            return "residual", node  # (a VJP's forward returns it to its backward)
        return None
    if not (isinstance(parent, ast.Attribute) and parent.value is node):
        return None
    call = parents[parent]
    statement = parents.get(call)
    if not (isinstance(call, ast.Call) and call.func is parent and not call.keywords):
        return None
    if (
        parent.attr == "append"
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Name)
        and isinstance(statement, ast.Expr)
    ):
        return "push", (statement, call)
    if (
        parent.attr == "pop"
        and not call.args
        and isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        return "pop", statement
    return None


def _fresh(name, taken):
    candidate, k = name, 1
    while candidate in taken:
        candidate, k = f"{name}_{k}", k + 1
    return candidate


def _forward_end(source, tree):
    """The line where the forward sweep ends: a VJP's forward function's last line, or the
    first `# backward of line` comment of a gradient function."""
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(functions) > 1:
        return functions[0].end_lineno
    found = re.search(r"^ +# backward of line \d+:", source, re.M)
    return source.count("\n", 0, found.start()) + 1 if found else source.count("\n") + 1


def _next_statement(statement, parents):
    body = next(
        b
        for b in (getattr(parents[statement], f, None) for f in ("body", "orelse"))
        if isinstance(b, list) and any(s is statement for s in b)
    )
    i = next(i for i, s in enumerate(body) if s is statement)
    return body[i + 1] if i + 1 < len(body) else None


def _pushed_before_each_assignment(name, stack, tree, boundary, parents):
    """Whether every assignment to `name` in the forward sweep (before `boundary`) but its
    `= None` start is `name = ...` right after a push of name."""
    pushed, assigned = 0, 0
    for node in ast.walk(tree):
        if not hasattr(node, "lineno") or node.lineno > boundary:
            continue
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            statement = parents[node]
            if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant):
                if statement.value.value is None:
                    continue  # (its start)
            assigned += 1
        elif isinstance(node, ast.Expr) and _is_push_of(node, stack, name):
            following = _next_statement(node, parents)
            if not (
                isinstance(following, ast.Assign)
                and len(following.targets) == 1
                and isinstance(following.targets[0], ast.Name)
                and following.targets[0].id == name
            ):
                return False
            pushed += 1
    return pushed == assigned > 0


def _is_push_of(statement, stack, name):
    call = statement.value
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == stack
        and call.func.attr == "append"
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Name)
        and call.args[0].id == name
    )


__all__ = ["PREVIOUS_VALUE", "replace_span", "segment", "span", "split_stack", "stack_name"]
