"""The README's and the getting-started page's Python snippets run as Jupyter runs them: in
IPython's shell (`InteractiveShell.run_cell`, what a kernel calls), one cell per snippet in
one session, and all of them pasted into one cell. What a snippet prints is what the
document shows after it (`<!-- snippet: output -->`). A gradient left as a cell's last
expression is displayed as HTML (its source highlighted) and as Markdown.

The snippets chosen are those tests/test_docs_snippets.py runs as plain Python (its
markers: skip, gpu, needs MODULE, golden)."""

import contextlib
import html
import importlib.util
import io
import os
import re

import numpy as np
import pytest

import sourcegrad
from sourcegrad.notebook import gradient_html, tokens
from tests.test_docs_snippets import ROOT, _check_output, _imports_found, blocks, has_gpu
from tests.test_notebook import run_cell, shell  # noqa: F401 (the IPython shell fixture)

DOCUMENTS = ["README.md", "docs/getting-started.md"]


def cells(path):
    """[(line, code, expected output or None)] of the document's snippets that run here."""
    out = []
    found = blocks(path)
    for i, (line, lang, marker, argument, body) in enumerate(found):
        if (
            lang != "python"
            or marker == "skip"
            or (marker == "gpu" and not has_gpu())
            or (marker == "needs" and importlib.util.find_spec(argument) is None)
            or (marker == "golden" and not _imports_found(body))
        ):
            continue
        after = found[i + 1] if i + 1 < len(found) else None
        expected = after[4] if after is not None and after[2] == "output" else None
        out.append((line, body, expected))
    return out


@pytest.fixture
def session(shell, tmp_path, monkeypatch):  # noqa: F811
    """The shell with an empty namespace, in a fresh directory, `examples/` importable."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(os.path.join(ROOT, "examples"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    shell.reset(new_session=False)
    return shell


def printed_by(ipython, code):
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        run_cell(ipython, code)
    return stdout.getvalue()


@pytest.mark.parametrize("path", DOCUMENTS)
def test_each_snippet_as_a_cell_of_one_session(session, path):
    found = cells(path)
    assert found, f"{path} has no snippet that runs here"
    for line, code, expected in found:
        try:
            got = printed_by(session, code)
        except Exception as exc:
            raise AssertionError(
                f"{path}:{line}, run as a notebook cell, raised {type(exc).__name__}: {exc}"
            ) from exc
        if expected is not None:
            _check_output(expected, got, f"{path}:{line} (as a notebook cell)")


@pytest.mark.parametrize("path", DOCUMENTS)
def test_all_snippets_pasted_into_one_cell(session, path):
    found = cells(path)
    code = "\n\n".join(body for _, body, _ in found)
    got = printed_by(session, code)
    # each snippet's output, in order (what the snippets without one print, in between)
    expected = "..." + "...".join(e.strip() for _, _, e in found if e is not None) + "..."
    _check_output(expected, got, f"{path}, all snippets in one cell")


def test_a_gradient_as_a_cells_last_expression_displays_as_html_and_markdown(session):
    run_cell(
        session,
        """
        import numpy as np
        import sourcegrad

        def loss(w, X, y):
            return np.mean(np.log(1.0 + np.exp(-y * (X @ w))))

        rng = np.random.default_rng(0)
        X, y, w = rng.normal(size=(64, 10)), np.sign(rng.normal(size=64)), np.zeros(10)
        dloss = sourcegrad.grad(loss)
        dw = dloss(w, X, y)
        """,
    )
    data, _ = session.display_formatter.format(session.user_ns["dloss"])
    assert {"text/html", "text/markdown", "text/plain"} <= set(data)
    page = data["text/html"]
    assert page.startswith("<div><p><b>sourcegrad gradient</b> of <code>loss</code></p>")
    code = re.search(r"<pre[^>]*><code>(.*)</code></pre>", page, re.S).group(1)
    assert html.unescape(re.sub(r"<[^>]+>", "", code)) == session.user_ns["dloss"].source
    assert '<span style="color:#8f3fa8;font-weight:bold">def</span>' in code  # highlighted
    assert '<td style="text-align:left"><code>X</code></td>' in page
    assert "In all, not counting the inputs:" in page
    assert data["text/markdown"].startswith("**sourcegrad gradient** of `loss`")


# --- the HTML itself (sourcegrad.notebook), without IPython ----------------------------------


def clipped(x):
    if np.sum(x) < 1.0:  # "<" and "&" & quotes in the quoted line are escaped
        return np.sum(x * x)
    return np.sum(x)


def test_html_before_the_first_call_says_there_is_no_code_yet():
    page = sourcegrad.grad(clipped)._repr_html_()
    assert page.startswith("<div><p><b>sourcegrad gradient</b> of <code>clipped</code>: no ")
    assert "<pre" not in page


def test_html_escapes_the_source_and_keeps_every_character():
    g = sourcegrad.grad(clipped)
    g(np.array([0.1, 0.2]))
    page = gradient_html(g)
    code = re.search(r"<pre[^>]*><code>(.*)</code></pre>", page, re.S).group(1)
    assert "&lt;" in code and "&amp;" in code and "<span" in code
    assert html.unescape(re.sub(r"<[^>]+>", "", code)) == g.source


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    return x  # done\n",
        's = \'a\'\n\n\nt = """\nmany\nlines""" + s\n',
        "x = (1 +\n     2.5e-3)\n",
        "no newline at the end",
        "def broken(:\n",
        "",
    ],
)
def test_tokens_join_to_the_source(source):
    assert "".join(text for text, _ in tokens(source)) == source


def test_tokens_kinds():
    kinds = {text: kind for text, kind in tokens("def f(x):\n    return x * 2.0  # c\n") if kind}
    assert kinds == {
        "def": "keyword",
        "f": "def",
        "return": "keyword",
        "2.0": "number",
        "# c": "comment",
    }
