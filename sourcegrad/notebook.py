"""How a compiled gradient shows itself in Jupyter: its generated source and what it saves.

`gradient_markdown(g)` takes a `sourcegrad.Gradient` (or VJP, JVP) and returns Markdown: one
line naming the gradient, the generated source of its most recent input signature in a
```python block (the notebook highlights it), and the saved-value manifest (`g.saved`) as a
table (a value kept per trip of a loop says so in its last column) with its total. Before
the first call there is no code yet, and it says so. `gradient_html(g)` is the same as HTML,
the code highlighted here (inline colours: no stylesheet, no Pygments), which is what
Jupyter shows when both are offered. `Gradient._repr_html_` and `_repr_markdown_` call them,
so a gradient left as a cell's last expression displays this way.

`tokens(source)` cuts Python source into pieces with the kind each is coloured as
(keyword, name defined, comment, string, number); the notebook's HTML and the command
line's ANSI colours (`sourcegrad.cli.highlight`) both come from it.
"""

from __future__ import annotations

import html
import io
import keyword
import tokenize
from typing import Any, Optional

from .errors import SourcegradError

# how each kind of token is shown in HTML (inline styles, so any notebook front end keeps them)
HTML_STYLES = {
    "keyword": "color:#8f3fa8;font-weight:bold",
    "def": "color:#1f56c4;font-weight:bold",
    "comment": "color:#3f7f3f;font-style:italic",
    "string": "color:#b0531c",
    "number": "color:#127a8a",
}
_PRE_STYLE = (
    "background:#f6f8fa;border:1px solid #d0d7de;border-radius:4px;padding:0.6em 0.8em;"
    "overflow-x:auto;line-height:1.35;font-size:12.5px"
)


def tokens(source: str) -> list[tuple[str, Optional[str]]]:
    """`source` cut into `(text, kind)` pieces whose texts join to `source` again; `kind` is
    "keyword", "def" (the name a def defines), "comment", "string", "number" or None. Text
    that does not tokenize is one piece of no kind."""
    lines = source.splitlines(keepends=True)
    try:
        found = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return [(source, None)]
    out: list[tuple[str, Optional[str]]] = []
    last_line, last_col = 1, 0
    previous = None
    for tok in found:
        (start_line, start_col), (end_line, end_col) = tok.start, tok.end
        if start_line > len(lines):  # (the end marker, after the last line)
            break
        if start_line > last_line:  # the text between tokens (spaces, line ends) as it is
            out.append((lines[last_line - 1][last_col:], None))
            out.extend((line, None) for line in lines[last_line : start_line - 1])
            last_col = 0
        out.append((lines[start_line - 1][last_col:start_col], None))
        text = tok.string
        kind: Optional[str] = None
        if tok.type == tokenize.COMMENT:
            kind = "comment"
        elif tok.type == tokenize.STRING:
            kind = "string"
        elif tok.type == tokenize.NUMBER:
            kind = "number"
        elif tok.type == tokenize.NAME and keyword.iskeyword(text):
            kind = "keyword"
        elif tok.type == tokenize.NAME and previous == "def":
            kind = "def"
        out.append((text, kind))
        if tok.type == tokenize.NAME:
            previous = text
        last_line, last_col = end_line, end_col
    if last_line <= len(lines):
        out.append((lines[last_line - 1][last_col:], None))
        out.extend((line, None) for line in lines[last_line:])
    return [(text, kind) for text, kind in out if text]


def highlight_html(source: str) -> str:
    """`source` as an HTML `<pre>` block, its tokens coloured with inline styles."""
    body = "".join(
        f'<span style="{HTML_STYLES[kind]}">{html.escape(text)}</span>'
        if kind
        else html.escape(text)
        for text, kind in tokens(source)
    )
    return f'<pre style="{_PRE_STYLE}"><code>{body}</code></pre>'


def gradient_markdown(gradient: Any) -> str:
    title = f"**sourcegrad gradient** of `{gradient.fn.__qualname__}`"
    try:
        source = gradient.source
    except SourcegradError as exc:  # not called yet, or a form that prints no source
        return f"{title}: no generated code yet. {_escape(str(exc))}"
    fence = "```"
    while fence in source:  # a comment quoting the user's line may hold backticks
        fence += "`"
    parts = [title, "", fence + "python", source.rstrip("\n"), fence]
    try:
        saved = gradient.saved
    except SourcegradError:
        saved = None
    if saved:
        parts += [
            "",
            saved_markdown(saved),
            "",
            f"In all, not counting the inputs: {_total(saved)}.",
        ]
    elif saved is not None:
        parts += ["", "Nothing is saved for the backward pass."]
    return "\n".join(parts) + "\n"


def gradient_html(gradient: Any) -> str:
    """What `gradient_markdown` says, as HTML: the title, the generated source highlighted,
    the saved-value table and its total."""
    title = f"<p><b>sourcegrad gradient</b> of <code>{html.escape(gradient.fn.__qualname__)}</code>"
    try:
        source = gradient.source
    except SourcegradError as exc:  # not called yet, or a form that prints no source
        return f"<div>{title}: no generated code yet. {html.escape(str(exc))}</p></div>"
    parts = [f"{title}</p>", highlight_html(source.rstrip("\n") + "\n")]
    try:
        saved = gradient.saved
    except SourcegradError:
        saved = None
    if saved:
        parts += [
            saved_html(saved),
            f"<p>In all, not counting the inputs: {html.escape(_describe_total(saved))}.</p>",
        ]
    elif saved is not None:
        parts.append("<p>Nothing is saved for the backward pass.</p>")
    return "<div>" + "\n".join(parts) + "</div>"


_HEADER = (
    "saved for the backward pass",
    "shape",
    "dtype",
    "bytes",
    "made by",
    "read by, or why kept",
)


def _saved_rows(saved: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """The manifest's cells, one tuple per value (its name first), as text."""
    rows = []
    for item in saved:
        origin = "input" if item.get("input") else f"line {item.get('line')}"
        reason = (
            ", ".join(item.get("read_by", ()))
            if item.get("status", "saved") == "saved"
            else f"{item['status']}: {item.get('why', '')}"
        )
        rows.append(
            tuple(
                str(cell)
                for cell in (
                    item["name"],
                    item.get("shape"),
                    item.get("dtype"),
                    item.get("bytes"),
                    origin,
                    reason,
                )
            )
        )
    return rows


def saved_markdown(saved: list[dict[str, Any]]) -> str:
    """The saved-value manifest as a Markdown table, one row per value, in manifest order."""
    rows = ["| " + " | ".join(_HEADER) + " |", "|---|---|---|---:|---|---|"]
    for name, *rest in _saved_rows(saved):
        rows.append("| " + " | ".join(_escape(cell) for cell in (f"`{name}`", *rest)) + " |")
    return "\n".join(rows)


def saved_html(saved: list[dict[str, Any]]) -> str:
    """The saved-value manifest as an HTML table, one row per value, in manifest order."""
    head = "".join(
        f'<th style="text-align:{"right" if i == 3 else "left"}">{html.escape(cell)}</th>'
        for i, cell in enumerate(_HEADER)
    )
    body = []
    for name, *rest in _saved_rows(saved):
        cells = [f"<code>{html.escape(name)}</code>"] + [html.escape(cell) for cell in rest]
        body.append(
            "<tr>"
            + "".join(
                f'<td style="text-align:{"right" if i == 3 else "left"}">{cell}</td>'
                for i, cell in enumerate(cells)
            )
            + "</tr>"
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _total(saved: list[dict[str, Any]]) -> str:
    return _escape(_describe_total(saved))


def _describe_total(saved: list[dict[str, Any]]) -> str:
    from .compiler import describe_total

    return describe_total(saved)


def _escape(text: str) -> str:
    return text.replace("|", "\\|")
