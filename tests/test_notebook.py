"""A Gradient in Jupyter: its generated source in a highlighted block and its saved values
as a table (sourcegrad.notebook, through Gradient._repr_markdown_)."""

import os
import sys

import numpy as np

import sourcegrad
from sourcegrad.notebook import saved_markdown

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples"))
import logreg  # noqa: E402


def test_markdown_before_the_first_call_says_there_is_no_code_yet():
    text = sourcegrad.grad(logreg.loss)._repr_markdown_()
    assert text.startswith("**sourcegrad gradient** of `loss`: no generated code yet.")
    assert "```" not in text


def test_markdown_shows_the_source_and_the_saved_table():
    g = sourcegrad.grad(logreg.loss)
    g(*logreg.example_args())
    text = g._repr_markdown_()
    assert "```python\n" + g.source.rstrip("\n") + "\n```" in text  # exactly the code that runs
    after = text[text.index("| saved for the backward pass") :].strip().splitlines()
    table = [row for row in after if row.startswith("|")]
    assert len(table) == 2 + len(g.saved)
    assert (
        after[-1]
        == f"In all, not counting the inputs: {g.saved_bytes(*logreg.example_args()):,} bytes."
    )
    rows = {row.split("|")[1].strip(): row for row in table[2:]}
    assert set(rows) == {f"`{item['name']}`" for item in g.saved}
    x_row = [cell.strip() for cell in rows["`X`"].split("|")[1:-1]]
    assert x_row == ["`X`", "(64, 10)", "float64", "5120", "input", "matmul"]


def test_a_fence_longer_than_any_backticks_in_the_source():
    def ticks(x):
        y = x * 2.0  # ``` (the generated code quotes this line, comment included)
        return np.sum(y * x)

    g = sourcegrad.grad(ticks)
    g(np.ones(2))
    text = g._repr_markdown_()
    assert "\n````python\n" in text and "\n````\n" in text


def test_saved_table_escapes_pipes():
    table = saved_markdown(
        [
            {
                "name": "a",
                "shape": (2,),
                "dtype": "float64",
                "bytes": 16,
                "input": False,
                "line": 3,
                "read_by": ["x|y"],
            }
        ]
    )
    assert table.splitlines()[-1] == "| `a` | (2,) | float64 | 16 | line 3 | x\\|y |"
