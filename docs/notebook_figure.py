"""The picture of a gradient in a notebook (docs/img/notebook_gradient.png) and the HTML it
is drawn from (docs/img/notebook_gradient.html).

No browser runs on the machine that made them, so this is not a screenshot: the HTML is
exactly what `Gradient._repr_html_` returns for examples/logreg.py's gradient (Jupyter
shows it as the cell's output), and the PNG is drawn from the same pieces with matplotlib:
the code's tokens in the colours of `sourcegrad.notebook.HTML_STYLES`, the saved-value table
as its rows. Run from the repository root (needs matplotlib, the [examples] extra):

    python docs/notebook_figure.py
"""

from __future__ import annotations

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "examples")]  # this checkout's sourcegrad

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import logreg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.textpath import TextPath  # noqa: E402

import sourcegrad  # noqa: E402
from sourcegrad.notebook import HTML_STYLES, gradient_html, tokens  # noqa: E402

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>a sourcegrad gradient in a notebook</title></head>
<body style="font-family:sans-serif;max-width:60em;margin:2em auto">
<p style="font-family:monospace;color:#303f9f">In [3]: dloss</p>
{output}
</body></html>
"""


def _style(kind):
    style = dict(part.split(":") for part in HTML_STYLES[kind].split(";"))
    return {
        "color": style["color"],
        "weight": style.get("font-weight", "normal"),
        "style": style.get("font-style", "normal"),
    }


def draw(gradient, path, font_size=10.0):
    source = gradient.source.rstrip("\n")
    lines = [[]]
    for text, kind in tokens(source):
        for i, piece in enumerate(text.split("\n")):
            if i:
                lines.append([])
            if piece:
                lines[-1].append((piece, kind))
    rows = [
        (
            item["name"],
            str(item["shape"]),
            str(item["dtype"]),
            str(item["bytes"]),
            "input" if item.get("input") else f"line {item['line']}",
            ", ".join(item.get("read_by", ())),
        )
        for item in gradient.saved
    ]
    # a monospace character's advance: the width of 100 of them, a hundredth
    char = TextPath((0, 0), "M" * 100, size=font_size, prop={"family": "monospace"})
    char = char.get_extents().width / 100
    width_chars = max(len(line) for line in source.split("\n")) + 4
    line_h = font_size * 1.45
    height = line_h * (len(lines) + len(rows) + 7)
    width = char * width_chars + 40
    fig = plt.figure(figsize=(width / 72, height / 72), dpi=110)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    y = line_h
    ax.text(10, y, "In [3]:", family="monospace", size=font_size, color="#303f9f", va="center")
    ax.text(10 + 8 * char, y, "dloss", family="monospace", size=font_size, va="center")
    y += line_h * 1.3
    title = ax.text(10, y, "sourcegrad gradient", weight="bold", size=font_size, va="center")
    box = title.get_window_extent(renderer=fig.canvas.get_renderer())
    right = ax.transData.inverted().transform((box.x1, box.y0))[0]
    ax.text(right + 4, y, "of", size=font_size, va="center")
    name = gradient.fn.__qualname__
    ax.text(right + 4 + 2.2 * char, y, name, family="monospace", size=font_size, va="center")
    y += line_h * 0.8
    box_top = y
    ax.add_patch(
        plt.Rectangle(
            (8, box_top),
            width - 16,
            line_h * (len(lines) + 0.6),
            facecolor="#f6f8fa",
            edgecolor="#d0d7de",
        )
    )
    y += line_h * 0.8
    for line in lines:
        x = 16
        for piece, kind in line:
            options = _style(kind) if kind else {"color": "#1f2328"}
            ax.text(x, y, piece, family="monospace", size=font_size, va="center", **options)
            x += char * len(piece)
        y += line_h
    y += line_h * 0.6
    header = ("saved for the backward pass", "shape", "dtype", "bytes", "made by", "read by")
    columns = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for k, row in enumerate([header] + rows):
        x = 16
        for cell, size in zip(row, columns):
            ax.text(
                x,
                y,
                cell,
                family="monospace",
                weight="bold" if not k else "normal",
                size=font_size,
                va="center",
            )
            x += char * (size + 3)
        y += line_h
    total = re.sub(r"<[^>]+>", "", gradient_html(gradient).rsplit("<p>", 1)[-1])
    ax.text(16, y, total.strip(), size=font_size, va="center")
    fig.savefig(path, facecolor="white")
    plt.close(fig)


def main():
    dloss = sourcegrad.grad(logreg.loss)
    dloss(*logreg.example_args())
    out = os.path.join(ROOT, "docs", "img")
    with open(os.path.join(out, "notebook_gradient.html"), "w") as f:
        f.write(PAGE.format(output=gradient_html(dloss)))
    draw(dloss, os.path.join(out, "notebook_gradient.png"))
    print(f"wrote {out}/notebook_gradient.html and notebook_gradient.png")


if __name__ == "__main__":
    main()
