"""A Gradient in Jupyter: its generated source in a highlighted block and its saved values
as a table (sourcegrad.notebook, through Gradient._repr_markdown_); functions defined in
cells that IPython runs are differentiated (one cell or several, a cell run again after an
edit), and a cell's text changed after it ran is refused."""

import atexit
import builtins
import linecache
import os
import sys
import textwrap

import numpy as np
import pytest

import sourcegrad
from sourcegrad.compiler.frontend.source_check import StaleSourceError
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


# --- cells run by IPython (as a Jupyter kernel runs them) -------------------------------------
# IPython compiles a cell one top-level statement at a time, so a `def` does not see the
# cell's `import numpy as np` (Python 3.11+ then calls `np.f(x)` through another bytecode
# than an import of the same text as a module makes): the staleness check must take the
# cell's text for the code it is.


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    """An IPython shell without history; what it changes in the process (two builtins,
    sys.modules["__main__"], an atexit hook) is put back after."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    saved_env, saved_main = os.environ.get("IPYTHONDIR"), sys.modules["__main__"]
    added = [name for name in ("__IPYTHON__", "display") if not hasattr(builtins, name)]
    os.environ["IPYTHONDIR"] = str(tmp_path_factory.mktemp("ipython"))
    config = Config()
    config.HistoryManager.enabled = False
    made = InteractiveShell.instance(config=config)
    try:
        yield made
    finally:
        atexit.unregister(made.atexit_operations)
        InteractiveShell.clear_instance()
        sys.modules["__main__"] = saved_main
        for name in added:
            if hasattr(builtins, name):
                delattr(builtins, name)
        if saved_env is None:
            os.environ.pop("IPYTHONDIR", None)
        else:
            os.environ["IPYTHONDIR"] = saved_env


def run_cell(shell, text):
    """Run one cell as a notebook does; raise what it raised."""
    result = shell.run_cell(textwrap.dedent(text), silent=True)
    error = result.error_before_exec or result.error_in_exec
    if error is not None:
        raise error
    return shell.user_ns


def central_differences(fn, x, eps=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        out.flat[i] = (fn(x + step) - fn(x - step)) / (2 * eps)
    return out


def test_one_cell_with_the_import_the_def_and_the_gradient(shell):
    ns = run_cell(
        shell,
        """
        import numpy as np
        import sourcegrad

        def loss(w, X, y):
            return np.mean(np.log(1.0 + np.exp(-y * (X @ w))))

        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(16, 3)), np.sign(rng.normal(size=16))
        w = rng.normal(size=3)
        dw = sourcegrad.grad(loss)(w, X, y)
        """,
    )
    expected = central_differences(lambda w: ns["loss"](w, ns["X"], ns["y"]), ns["w"])
    np.testing.assert_allclose(ns["dw"], expected, rtol=1e-6, atol=1e-9)


def test_definitions_split_across_cells(shell):
    run_cell(shell, "import numpy as np\nimport sourcegrad\n")
    run_cell(
        shell,
        """
        %precision 4
        def helper(x):
            return np.sin(x) * x

        def split(x):
            return np.sum(helper(x) ** 2)
        """,
    )
    ns = run_cell(shell, "x = np.array([0.3, -0.7, 1.1])\ng = sourcegrad.grad(split)(x)\n")
    expected = central_differences(ns["split"], ns["x"])
    np.testing.assert_allclose(ns["g"], expected, rtol=1e-6, atol=1e-9)


def test_a_cell_run_again_after_an_edit_differentiates_the_new_definition(shell):
    cell = """
        import numpy as np
        import sourcegrad

        def edited(x):
            return np.sum(np.sin(x) * {factor})

        x = np.array([0.3, -0.7, 1.1])
        g = sourcegrad.grad(edited)(x)
        """
    ns = run_cell(shell, cell.format(factor="2.0"))
    np.testing.assert_allclose(ns["g"], 2.0 * np.cos(ns["x"]))
    before = ns["edited"]
    ns = run_cell(shell, cell.format(factor="3.0"))
    np.testing.assert_allclose(ns["g"], 3.0 * np.cos(ns["x"]))
    # the function object the first run made still runs its own code, and is differentiated so
    np.testing.assert_allclose(sourcegrad.grad(before)(ns["x"]), 2.0 * np.cos(ns["x"]))


def test_a_cell_whose_text_changed_after_it_ran_is_refused(shell):
    ns = run_cell(shell, "import numpy as np\n\ndef changed(x):\n    return np.sum(x * 2.0)\n")
    fn = ns["changed"]
    name = fn.__code__.co_filename
    size, mtime, lines, full = linecache.cache[name]
    # the text linecache holds for the cell is no longer the one it ran (as under a kernel
    # that names cells by number and is given the edited cell under the same name)
    edited = [line.replace("2.0", "30.0") for line in lines]
    linecache.cache[name] = (size, mtime, edited, full)
    try:
        with pytest.raises(StaleSourceError) as caught:
            sourcegrad.grad(fn)(np.ones(2))
    finally:
        linecache.cache[name] = (size, mtime, lines, full)
    assert caught.value.loc.file == name and caught.value.loc.line == 3
    assert "def changed(x):" in str(caught.value) and "run that cell again" in str(caught.value)


def test_a_future_import_in_an_earlier_cell(shell):
    # the cells after it are compiled with its flag (annotations kept as strings)
    run_cell(shell, "from __future__ import annotations\n")
    ns = run_cell(
        shell,
        """
        import numpy as np
        import sourcegrad

        def annotated(x: np.ndarray) -> float:
            def scaled(v: np.ndarray, k: float) -> np.ndarray:
                return v * k
            return np.sum(np.tanh(scaled(x, 3.0)))

        x = np.array([0.3, -0.7, 1.1])
        g = sourcegrad.grad(annotated)(x)
        """,
    )
    expected = central_differences(ns["annotated"], ns["x"])
    np.testing.assert_allclose(ns["g"], expected, rtol=1e-6, atol=1e-9)
