"""numpy's transcendental ufuncs in the numba variant, as calls of glibc's vector math.

`vector_calls(source, ufuncs)` takes the numba variant's module text (after the fusion of
`numba_fusion`) and {numpy's name: libmvec's} of the ufuncs computed here four elements a
call (`numba_vector_math.ufuncs()`: empty where libmvec cannot be used), and returns the
text with each call `np.tanh(x)` or `np.tanh(x, out)` left in it written
`vector_math.tanh(x)`, `vector_math.tanh(x, out)`, and the import of
`numba_vector_math` that fusion writes (`as vector_math`, or the first free name like it)
where it is not there yet; the text as it is when there is no such call.

Why: numba compiles `np.tanh(x)` of an array to a loop calling libm's `tanh` one element at a
time, several times slower than numpy's own loop (4M elements: 68 ms against 8 ms; np.exp
20 ms against 3.6 ms), so the numba variant of a gradient whose time goes into a large
array's tanh or exp ran slower than the numpy code (an MLP's: 1.3x). `vector_math.tanh`
computes a float64 array's elements four at a call (11 ms for those 4M) and is numpy's
ufunc as numba compiles it for anything else: `numba_vector_math._ufunc`.
"""

from __future__ import annotations

import ast
import re

from .numba_stacks import replace_span, span

IMPORT = re.compile(
    r"^from sourcegrad\.compiler\.backends import numba_vector_math as (\w+)$", re.M
)


def vector_calls(source: str, ufuncs) -> str:
    """The text with numpy's calls of `ufuncs` written as numba_vector_math's (see the module
    docstring)."""
    if not ufuncs:
        return source
    tree = ast.parse(source)
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "np"
        and node.func.attr in ufuncs
        and 1 <= len(node.args) <= 2
        and not node.keywords
        and not any(isinstance(a, ast.Starred) for a in node.args)
    ]
    if not calls:
        return source
    imported = IMPORT.search(source)
    alias = imported.group(1) if imported else _free_name(tree)
    lines = source.splitlines(keepends=True)
    for node in sorted(calls, key=span, reverse=True):  # (from the last: spans stay put)
        replace_span(lines, *span(node.func), f"{alias}.{node.func.attr}")
    if not imported:  # (after the imports)
        at = max(k for k, text in enumerate(lines) if text.startswith("import "))
        lines.insert(
            at + 1, f"from sourcegrad.compiler.backends import numba_vector_math as {alias}\n"
        )
    return "".join(lines)


def _free_name(tree) -> str:
    """`vector_math`, or `vector_math_1`, ...: the first name the module does not use."""
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.arg for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) for a in n.args.args
    }
    name, k = "vector_math", 0
    while name in taken:
        k += 1
        name = f"vector_math_{k}"
    return name


__all__ = ["vector_calls"]
