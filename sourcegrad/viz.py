"""Pictures: Graphviz DOT for an eager autograd graph and for a compiled gradient's data flow.

`eager_dot(tensor)` walks `tensor.grad_fn` and its `next_functions` (iteratively, so deep
graphs are fine) and names each node as `grad_fn` names it (`MulBackward0`,
`AccumulateGrad`); leaves are drawn as boxes with their shape, and the tensors a node
saved for backward (`_saved_self`, `_saved_other`, `_saved_result`, read as torch reads
them) are listed in its label with their shapes.

`compiled_dot(gradient)` draws the generated code of a `sourcegrad.grad` object (after
its first call): one node per statement, forward and backward in two clusters (each
loop's body a cluster inside them, its index an ellipse), edges from the values each
reads, the values the backward keeps from the forward (the saved manifest) drawn
filled, and a legend of the shapes and colours used.

`render(dot, path)` writes `path` as PNG, SVG or PDF (by its suffix) with Graphviz's `dot`
when it is installed; otherwise the DOT text beside it (`.dot`), with a
`GraphvizMissingWarning` naming what to install; it returns the path written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from typing import Any

from . import errors
from .compiler import Assign, Call, For, If, Marker, Pop, Push, Return, While, reads_of
from .ops import RULES


def _quote(text: object) -> str:
    """A DOT string; labels use DOT's own `\\n` escape for line breaks."""
    return '"' + str(text).replace('"', '\\"') + '"'


def eager_dot(tensor: Any, name: str = "output") -> str:
    """DOT text for the autograd graph that produced `tensor`.

    A node's label is its `grad_fn` name and the tensors it keeps for backward, as torch
    names them (`self (3, 4)` for `_saved_self`); a node whose saved tensors were freed by
    a backward pass lists none."""
    lines = ["digraph autograd {", "  rankdir=BT;", '  node [fontname="Helvetica"];']
    root = getattr(tensor, "grad_fn", None)
    lines.append(f"  out [label={_quote(f'{name} {tuple(tensor.shape)}')}, shape=oval];")
    if root is None:
        lines.append("}")
        return "\n".join(lines)
    ids: dict[int, str] = {}

    def node_id(node):
        if id(node) not in ids:
            ids[id(node)] = f"n{len(ids)}"
        return ids[id(node)]

    lines.append(f"  {node_id(root)} -> out;")
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        kind = type(node).__name__
        variable = getattr(node, "variable", None)
        if variable is not None:  # AccumulateGrad: a leaf
            label = f"{kind}\\nleaf {tuple(variable.shape)}"
            lines.append(
                f"  {node_id(node)} [label={_quote(label)}, shape=box, "
                'style=filled, fillcolor="#dbe8f5"];'
            )
        else:
            saved = saved_tensors(node)
            label = kind + "".join(f"\\nsaved {key} {shape}" for key, shape in saved)
            lines.append(f"  {node_id(node)} [label={_quote(label)}, shape=box];")
        for child, _ in getattr(node, "next_functions", ()):
            if child is None:
                continue
            lines.append(f"  {node_id(child)} -> {node_id(node)};")
            stack.append(child)
    lines.append("}")
    return "\n".join(lines)


# torch's names for what a node keeps: its first and second inputs and its result
SAVED_NAMES = ("self", "other", "result")


def saved_tensors(node: Any) -> list[tuple[str, tuple[int, ...]]]:
    """[(name, shape)] of the tensors `node` keeps for backward, read as torch reads them
    (`node._saved_self`, ...): an input kept only for its shape, a number, or anything freed
    by a backward pass is not a saved tensor."""
    out = []
    for key in SAVED_NAMES:
        try:
            value = getattr(node, f"_saved_{key}")
        except (AttributeError, RuntimeError):  # not kept, or freed after backward
            continue
        if value is not None and hasattr(value, "shape"):
            out.append((key, tuple(value.shape)))
    return out


SAVED_FILL = "#f5d99a"  # a value the backward pass reads from the forward pass


def compiled_dot(gradient: Any) -> str:
    """DOT text for the data flow of a compiled gradient (call it once first).

    One node per value, in a forward and a backward cluster; each loop's body is a cluster
    of its own inside them; a legend says what the shapes and colours mean."""
    # (long: one drawing: the nested `visit` fills the node set, the edges and the counts
    # that the clusters and the legend read after it)
    compiled = gradient._last
    from .errors import SourcegradError

    if compiled is None:
        raise SourcegradError(
            "call the gradient once first: its code is generated for the shapes of its inputs"
        )
    if compiled.ir is None:
        raise SourcegradError(
            "this gradient was loaded from the on-disk cache, which keeps "
            "its source but not its IR; disable the cache to draw it"
        )
    fn = compiled.ir
    saved = {item["name"] for item in compiled.saved if not item["input"]}
    lines = [f"digraph {_quote(fn.name)} {{", "  rankdir=TB;", '  node [fontname="Helvetica"];']
    for p in fn.params:
        lines.append(f"  {_quote(p)} [shape=invhouse, label={_quote(p)}];")
    edges = []
    defined = set(fn.params)
    facts = {"loops": 0, "result": False}

    def visit(block, sink, indent):
        """Nodes of `block`'s statements into `sink`, a loop's body as a nested cluster."""
        for stmt in block:
            if isinstance(stmt, (For, While)):
                facts["loops"] += 1
                inner = []
                if isinstance(stmt, For) and stmt.target not in defined:  # the loop index
                    inner.append(
                        f"{indent}  {_quote(stmt.target)} [shape=ellipse, "
                        f"label={_quote(stmt.target)}];"
                    )
                    defined.add(stmt.target)
                visit(
                    (stmt.test_body if isinstance(stmt, While) else []) + stmt.body,
                    inner,
                    indent + "  ",
                )
                if not inner:  # a loop that defines nothing new draws no box
                    continue
                kind = "reversed loop" if getattr(stmt, "reverse", False) else "loop"
                where = f", line {stmt.loc.line}" if stmt.loc is not None else ""
                sink.append(f"{indent}subgraph cluster_loop{facts['loops']} {{")
                sink.append(f"{indent}  label={_quote(kind + where)}; style=rounded;")
                sink.extend(inner)
                sink.append(f"{indent}}}")
            elif isinstance(stmt, If):
                visit(stmt.body + stmt.orelse, sink, indent)
            elif isinstance(stmt, (Assign, Pop)):
                target = stmt.target
                if isinstance(stmt, Assign) and isinstance(stmt.value, Call):
                    label = f"{target}\\n{RULES[stmt.value.op].family}"
                else:
                    label = target
                style = f', style=filled, fillcolor="{SAVED_FILL}"' if target in saved else ""
                if target not in defined:
                    sink.append(
                        f"{indent}{_quote(target)} [shape=box, label={_quote(label)}{style}];"
                    )
                    defined.add(target)
                for n in reads_of(stmt):
                    edges.append(f"  {_quote(n)} -> {_quote(target)};")
            elif isinstance(stmt, Push):
                for n in reads_of(stmt):
                    edges.append(f"  {_quote(n)} -> saved_stack;")
            elif isinstance(stmt, Return):
                facts["result"] = True
                for n in reads_of(stmt):
                    edges.append(f"  {_quote(n)} -> result;")

    marker = next((i for i, stmt in enumerate(fn.body) if isinstance(stmt, Marker)), len(fn.body))
    for section, block in (("forward", fn.body[:marker]), ("backward", fn.body[marker + 1 :])):
        nodes: list = []
        visit(block, nodes, "    ")
        lines.append(f"  subgraph cluster_{section} {{")
        lines.append(f"    label={_quote(section)};")
        lines.extend(nodes)
        lines.append("  }")
    if facts["result"]:
        lines.append('  result [shape=house, label="gradient"];')
    stack = any("saved_stack" in e for e in edges)
    if stack:
        lines.append('  saved_stack [shape=cylinder, label="saved (stack)"];')
    lines.extend(_legend(stack, facts["loops"] > 0))
    lines.extend(dict.fromkeys(edges))  # each edge once, in order
    lines.append("}")
    return "\n".join(lines)


def _legend(stack: bool, loops: bool) -> list:
    """A cluster saying what compiled_dot's shapes and colours mean (only those it drew)."""
    keys = [
        ("legend_input", "invhouse", "input", ""),
        ("legend_value", "box", "value computed", ""),
        (
            "legend_saved",
            "box",
            "read by the backward pass",
            f', style=filled, fillcolor="{SAVED_FILL}"',
        ),
    ]
    if stack:
        keys.append(("legend_stack", "cylinder", "stack: values a loop overwrites", ""))
    keys.append(("legend_result", "house", "the gradient returned", ""))
    out = ["  subgraph cluster_legend {", '    label="legend"; style=dashed; fontsize=10;']
    for name, shape, text, style in keys:
        out.append(f"    {name} [shape={shape}, label={_quote(text)}, fontsize=10{style}];")
    if loops:
        out.append(
            '    legend_loop [shape=box, style="rounded,dashed", fontsize=10, '
            'label="a loop body: one cluster per loop"];'
        )
    out.append("  }")
    return out


class GraphvizMissingWarning(errors.SourcegradWarning):
    """`render` was asked for a picture (.png, .svg, .pdf) but Graphviz's `dot` program is not
    installed: it wrote the DOT text beside it instead, and says where."""


RENDERED = ("png", "svg", "pdf")  # what `dot` draws here
TEXT = ("dot", "gv")  # DOT text, written as it is


def render(dot: str, path: str) -> str:
    """Write `dot` to `path` and return the path written.

    A `.png`, `.svg` or `.pdf` path is drawn by Graphviz's `dot` program. Without it (the
    program, from your system's packages: `apt install graphviz`, `brew install graphviz`,
    `conda install graphviz`; the pip package `graphviz` does not include it) the DOT text
    is written to the same name with `.dot` and a `GraphvizMissingWarning` says so. A `.dot`
    or `.gv` path gets the text; any other suffix is refused (`SourcegradError`)."""
    stem, ext = os.path.splitext(path)
    fmt = ext.lstrip(".").lower()
    if fmt not in RENDERED + TEXT:
        raise errors.SourcegradError(
            f"render writes .png, .svg or .pdf (drawn by Graphviz) or .dot/.gv (the text), "
            f"not {ext or 'a path without a suffix'!r}: {path}"
        )
    if fmt in RENDERED:
        if shutil.which("dot"):
            subprocess.run(["dot", f"-T{fmt}", "-o", path], input=dot.encode(), check=True)
            return path
        out = stem + ".dot"
        warnings.warn(
            f"Graphviz's dot program is not installed, so {path} was not drawn: the DOT text "
            f"is in {out} instead. Install Graphviz from your system's packages (apt install "
            "graphviz, brew install graphviz, conda install graphviz; the pip package "
            f"'graphviz' does not include the program), then: dot -T{fmt} {out} -o {path}",
            GraphvizMissingWarning,
            stacklevel=2,
        )
    else:
        out = path
    with open(out, "w") as f:
        f.write(dot + "\n")
    return out
