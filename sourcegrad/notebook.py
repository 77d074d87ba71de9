"""How a compiled gradient shows itself in Jupyter: its generated source and what it saves.

`gradient_markdown(g)` takes a `sourcegrad.Gradient` (or VJP, JVP) and returns Markdown: one
line naming the gradient, the generated source of its most recent input signature in a
```python block (the notebook highlights it), and the saved-value manifest (`g.saved`) as a
table (a value kept per trip of a loop says so in its last column) with its total. Before
the first call there is no code yet, and it says so. `Gradient._repr_markdown_` calls it,
so a gradient left as a cell's last expression displays this way.
"""

from __future__ import annotations

from typing import Any

from .errors import SourcegradError


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


def saved_markdown(saved: list[dict[str, Any]]) -> str:
    """The saved-value manifest as a Markdown table, one row per value, in manifest order."""
    rows = [
        "| saved for the backward pass | shape | dtype | bytes | made by | read by, or why kept |",
        "|---|---|---|---:|---|---|",
    ]
    for item in saved:
        origin = "input" if item.get("input") else f"line {item.get('line')}"
        rows.append(
            "| "
            + " | ".join(
                _escape(str(cell))
                for cell in (
                    f"`{item['name']}`",
                    item.get("shape"),
                    item.get("dtype"),
                    item.get("bytes"),
                    origin,
                    ", ".join(item.get("read_by", ()))
                    if item.get("status", "saved") == "saved"
                    else f"{item['status']}: {item.get('why', '')}",
                )
            )
            + " |"
        )
    return "\n".join(rows)


def _total(saved: list[dict[str, Any]]) -> str:
    from .compiler.checkpointing import describe_total

    return _escape(describe_total(saved))


def _escape(text: str) -> str:
    return text.replace("|", "\\|")
