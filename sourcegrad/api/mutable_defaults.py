"""Refusing a function that changes one of its own default values in place.

Takes the function and the parameters its IR updates in place (`compiler.updated_parameters`);
returns nothing, or raises `errors.OutsideChangeError`, located at the change.

A default is made once, when the `def` runs: an array, list, dict or set default changed in
place (`def f(x, buf=np.zeros(3)): buf += x`, `def f(x, seen=[]): seen.append(1)`) is
changed for every later call, as Python runs it. The gradient's code takes each argument as
a value of its own and never changes it (an array argument is not changed, docs/sharp-bits.md),
so its second call computed the first call's function: the gradient and value of
`np.sum(buf * x)` stayed those of buf = 0 where Python's second call has buf = x. The
caller's own arrays are not concerned (their change is documented), the function's are.

Found from two sources: the IR's updates of a parameter (an array changed through a view or
another name included), and the source's statements that change a parameter's container
(`p.append(v)`, `p[k] = v`, `del p[k]`, `np.copyto(p, v)`, `out=p`), which the IR models as
new values of a list or dict.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np

from .. import errors
from ..errors import SourceLocation

# methods changing their object in place (list, dict, set, bytearray, ndarray)
_CHANGING_METHODS = frozenset(
    "append extend insert pop remove clear update setdefault popitem add discard "
    "difference_update intersection_update symmetric_difference_update sort reverse "
    "fill put resize itemset partition setfield __setitem__ __delitem__ __iadd__".split()
)
# numpy functions writing into their first argument
_WRITING_FUNCTIONS = frozenset("copyto put putmask place fill_diagonal put_along_axis".split())
_MUTABLE = (np.ndarray, list, dict, set, bytearray)


def check(fn, updated: dict) -> None:
    """Refuse `fn` where it changes in place a default of its own that can be changed (an
    array, list, dict, set): `updated` is {parameter name: location} of the IR's updates."""
    defaults = _mutable_defaults(fn)
    if not defaults:
        return
    found = {name: loc for name, loc in updated.items() if name in defaults}
    for name, loc in _changes_in_source(fn, set(defaults)).items():
        found.setdefault(name, loc)
    if not found:
        return
    name, loc = min(found.items(), key=lambda item: item[1].line or 0)
    kind = type(defaults[name]).__name__
    raise errors.OutsideChangeError(
        f"the function changes the default value of its parameter {name!r} (a {kind} made "
        "once, when the def ran) in place: Python keeps the change for every later call, "
        "but the gradient's code takes the default as a value of its own and never changes "
        "it, so a later call would compute with the first call's default. Default it to "
        f"None and make a new one inside (`if {name} is None: {name} = ...`), or keep the "
        "state outside the differentiated function (the check is made once for the "
        "function: a call passing its own value is refused too)",
        loc,
    )


def _mutable_defaults(fn) -> dict:
    """{parameter name: default} of fn's defaults that can be changed in place."""
    target = inspect.unwrap(fn) if callable(fn) else fn
    target = getattr(target, "__func__", target)  # (a bound method's function)
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return {}
    return {
        name: p.default
        for name, p in parameters.items()
        if p.default is not inspect.Parameter.empty and isinstance(p.default, _MUTABLE)
    }


def _changes_in_source(fn, names: set) -> dict:
    """{name: location} of the first statement of fn's source changing the container a name
    of `names` holds ({} where the source cannot be read)."""
    target = getattr(inspect.unwrap(fn), "__func__", inspect.unwrap(fn))
    try:
        lines, first = inspect.getsourcelines(target)
        tree = ast.parse(textwrap.dedent("".join(lines)))
        path = inspect.getsourcefile(target)
    except (OSError, TypeError, SyntaxError):
        return {}
    # (a name rebound in the function, `acc = list(acc)`, may no longer hold the default: left
    # to the IR's updates, which follow the values)
    names = names - {
        t.id
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr))
        for t in ast.walk(node.target if not isinstance(node, (ast.Assign, ast.With)) else node)
        if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
    }
    found: dict = {}
    for node in ast.walk(tree):
        name = _changed_name(node, names)
        if name is not None and name not in found and isinstance(node, (ast.stmt, ast.expr)):
            line = first + node.lineno - 1
            text = lines[node.lineno - 1].rstrip("\n") if node.lineno <= len(lines) else ""
            found[name] = SourceLocation(path or "<unknown>", line, node.col_offset, text)
    return found


def _changed_name(node, names):
    """The name of `names` whose container `node` changes in place, or None."""
    targets = []
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    for target in targets:
        if isinstance(target, ast.Subscript) and _is_name(target.value, names):
            return target.value.id
        if isinstance(node, ast.AugAssign) and _is_name(target, names):
            return target.id
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute):
        if func.attr in _CHANGING_METHODS and _is_name(func.value, names):
            return func.value.id
        if func.attr in _WRITING_FUNCTIONS and node.args and _is_name(node.args[0], names):
            return node.args[0].id
        if func.attr == "at" and node.args and _is_name(node.args[0], names):  # np.add.at
            return node.args[0].id
    for keyword in node.keywords:
        if keyword.arg == "out" and _is_name(keyword.value, names):
            return keyword.value.id
    return None


def _is_name(node, names) -> bool:
    return isinstance(node, ast.Name) and node.id in names
