"""Pictures: Graphviz DOT for an eager autograd graph and for a compiled gradient's data flow.

`eager_dot(tensor)` walks `tensor.grad_fn` and its `next_functions` (iteratively, so deep
graphs are fine) and names each node as `grad_fn` names it (`MulBackward0`,
`AccumulateGrad`); leaves are drawn as boxes with their shape, and a node's saved
tensors (`_saved_*` attributes) are listed in its label.

`compiled_dot(gradient)` draws the generated code of a `sourcegrad.grad` object (after
its first call): one node per statement, forward and backward in two clusters, edges
from the values each reads, and the values the backward keeps from the forward (the
saved manifest) drawn filled.

`render(dot, path)` writes `path` as PNG or SVG (by its suffix) with Graphviz's `dot`
when it is installed, and the DOT text (`.dot`) otherwise; it returns the path written.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from .ir import Assign, Call, Marker, Pop, Push, Return, walk, reads_of
from .ops import RULES


def _quote(text) -> str:
    """A DOT string; labels use DOT's own `\\n` escape for line breaks."""
    return '"' + str(text).replace('"', '\\"') + '"'


def eager_dot(tensor, name="output") -> str:
    """DOT text for the autograd graph that produced `tensor`."""
    lines = ["digraph autograd {", "  rankdir=BT;", '  node [fontname="Helvetica"];']
    root = getattr(tensor, "grad_fn", None)
    lines.append(f"  out [label={_quote(f'{name} {tuple(tensor.shape)}')}, shape=oval];")
    if root is None:
        lines.append("}")
        return "\n".join(lines)
    ids = {}

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
            lines.append(f"  {node_id(node)} [label={_quote(label)}, shape=box, "
                         'style=filled, fillcolor="#dbe8f5"];')
        else:
            saved = [a[len("_saved_"):] for a in dir(node) if a.startswith("_saved_")]
            label = kind + (f"\\nsaved: {', '.join(saved)}" if saved else "")
            lines.append(f"  {node_id(node)} [label={_quote(label)}, shape=box];")
        for child, _ in getattr(node, "next_functions", ()):
            if child is None:
                continue
            lines.append(f"  {node_id(child)} -> {node_id(node)};")
            stack.append(child)
    lines.append("}")
    return "\n".join(lines)


def compiled_dot(gradient) -> str:
    """DOT text for the data flow of a compiled gradient (call it once first)."""
    compiled = gradient._last
    from .errors import SourcegradError
    if compiled is None:
        raise SourcegradError("call the gradient once first: its code is generated for the "
                              "shapes of its inputs")
    if compiled.ir is None:
        raise SourcegradError("this gradient was loaded from the on-disk cache, which keeps "
                              "its source but not its IR; disable the cache to draw it")
    fn = compiled.ir
    saved = {item["name"] for item in compiled.saved if not item["input"]}
    lines = [f"digraph {_quote(fn.name)} {{", "  rankdir=TB;", '  node [fontname="Helvetica"];']
    for p in fn.params:
        lines.append(f"  {_quote(p)} [shape=invhouse, label={_quote(p)}];")
    section = "forward"
    clusters = {"forward": [], "backward": []}
    edges = []
    defined = set(fn.params)
    for stmt in walk(fn.body):
        if isinstance(stmt, Marker):
            section = "backward"
            continue
        if isinstance(stmt, (Assign, Pop)):
            target = stmt.target
            if isinstance(stmt, Assign) and isinstance(stmt.value, Call):
                label = f"{target}\\n{RULES[stmt.value.op].family}"
            else:
                label = target
            style = ', style=filled, fillcolor="#f5d99a"' if target in saved else ""
            if target not in defined:
                clusters[section].append(f"    {_quote(target)} [shape=box, label={_quote(label)}"
                                         f"{style}];")
                defined.add(target)
            for n in reads_of(stmt):
                edges.append(f"  {_quote(n)} -> {_quote(target)};")
        elif isinstance(stmt, Push):
            for n in reads_of(stmt):
                edges.append(f"  {_quote(n)} -> saved_stack;")
        elif isinstance(stmt, Return):
            lines.append('  result [shape=house, label="gradient"];')
            for n in reads_of(stmt):
                edges.append(f"  {_quote(n)} -> result;")
    for section, nodes in clusters.items():
        lines.append(f"  subgraph cluster_{section} {{")
        lines.append(f"    label={_quote(section)};")
        lines.extend(nodes)
        lines.append("  }")
    if any("saved_stack" in e for e in edges):
        lines.append('  saved_stack [shape=cylinder, label="saved (stack)"];')
    lines.extend(dict.fromkeys(edges))  # each edge once, in order
    lines.append("}")
    return "\n".join(lines)


def render(dot: str, path: str) -> str:
    """Write `dot` to `path` (.png/.svg via Graphviz when installed, else .dot text)."""
    stem, ext = os.path.splitext(path)
    fmt = ext.lstrip(".").lower()
    if fmt in ("png", "svg", "pdf") and shutil.which("dot"):
        subprocess.run(["dot", f"-T{fmt}", "-o", path], input=dot.encode(), check=True)
        return path
    out = stem + ".dot"
    with open(out, "w") as f:
        f.write(dot + "\n")
    return out
