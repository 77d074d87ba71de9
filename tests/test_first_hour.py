"""The rough edges a new user meets in the first hour (issue 41): the command line's errors
are one line (`--debug`, before or after the command, shows the traceback), `show` imports
the file without running its `__main__` block, output piped into `head` ends quietly,
`viz.render` says when Graphviz is missing, functions made by `exec` are refused in one
line, and the f-string refusal says what to write instead."""

import io
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import sourcegrad
from sourcegrad import cli, viz

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def user_file(tmp_path):
    def write(text, name="user_code.py"):
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return str(path)

    return write


EXEC_MADE = """
    import numpy as np

    exec("def f(x):\\n    return np.sum(x * x)\\n", globals())
    EXAMPLES = {"f": lambda: (np.ones(3),)}
    """


def test_a_function_made_by_exec_is_traced(user_file, capsys):
    path = user_file(EXEC_MADE)
    assert cli.main(["show", f"{path}:f"]) == 0
    assert "# Traced (run on traced values)" in capsys.readouterr().out


@pytest.mark.usefixtures("source_front_end_only")
def test_a_function_made_by_exec_is_one_line_without_traceback(user_file, capsys):
    path = user_file(EXEC_MADE)
    assert cli.main(["show", f"{path}:f"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert captured.err.startswith("sourcegrad: error: <string>:1: f was made from a string")
    assert "define it in a file or a notebook cell" in captured.err


@pytest.mark.usefixtures("source_front_end_only")
@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_before_or_after_the_command_shows_the_exception(user_file, where):
    path = user_file(EXEC_MADE)
    argv = (
        ["--debug", "show", f"{path}:f"] if where == "before" else ["show", f"{path}:f", "--debug"]
    )
    with pytest.raises(sourcegrad.SourceNotFoundError, match="made from a string"):
        cli.main(argv)


def test_show_runs_the_top_level_code_but_not_the_main_block(user_file, capsys):
    path = user_file(
        """
        import numpy as np

        print("top-level code ran")

        def square(x):
            return np.sum(x * x)

        EXAMPLES = {"square": lambda: (np.ones(2),)}

        if __name__ == "__main__":
            print("the __main__ block ran")
        """
    )
    assert cli.main(["show", f"{path}:square"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("top-level code ran\n")
    assert "the __main__ block ran" not in out
    assert "def dsquare_dx(x):" in out


def test_an_exception_in_the_files_top_level_code_is_one_line(user_file, capsys):
    path = user_file("import numpy as np\n\nDATA = np.load('no-such-file.npy')\n")
    assert cli.main(["show", f"{path}:f", "--args", "x=(3,)"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"importing {path} raised FileNotFoundError" in err
    assert "its top-level code runs" in err
    assert "sourcegrad_user_user_code" not in sys.modules  # nothing half-imported kept
    with pytest.raises(cli.CLIError) as caught:
        cli.main(["show", f"{path}:f", "--args", "x=(3,)", "--debug"])
    assert isinstance(caught.value.__cause__, FileNotFoundError)


def test_show_help_says_the_file_is_imported(capsys):
    with pytest.raises(SystemExit):
        cli.main(["show", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "its top-level code runs" in out and '__name__ == "__main__"' in out


class _ClosedPipe(io.StringIO):
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_ends_the_command_quietly(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert cli.main(["show", "examples/logreg.py:loss"]) == 141
    assert capsys.readouterr().err == ""


@pytest.mark.long
def test_a_closed_pipe_in_a_real_process_prints_nothing_on_stderr():
    # (as `sourcegrad show ... | head -1`: the reader is gone before the command writes)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "sourcegrad", "show", "examples/mlp.py:mlp_loss", "--saved"],
            cwd=ROOT,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env=dict(os.environ, PYTHONPATH=ROOT),
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141


def test_render_without_graphviz_says_so_and_names_the_package(tmp_path, monkeypatch):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    with pytest.warns(viz.GraphvizMissingWarning) as caught:
        written = viz.render("digraph { a -> b }", str(tmp_path / "g.svg"))
    assert written == str(tmp_path / "g.dot")
    assert open(written).read() == "digraph { a -> b }\n"
    message = str(caught[0].message)
    assert "g.svg was not drawn" in message and str(tmp_path / "g.dot") in message
    assert "apt install graphviz" in message and "pip package 'graphviz'" in message
    assert isinstance(caught[0].message, sourcegrad.errors.SourcegradWarning)


def test_render_of_dot_text_is_written_as_asked_without_a_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        written = viz.render("digraph { a -> b }", str(tmp_path / "g.gv"))
    assert written == str(tmp_path / "g.gv") and open(written).read().startswith("digraph")


def test_render_refuses_a_suffix_it_cannot_write(tmp_path):
    with pytest.raises(sourcegrad.SourcegradError, match=r"\.png, \.svg or \.pdf"):
        viz.render("digraph { a -> b }", str(tmp_path / "g.jpeg"))
    assert os.listdir(tmp_path) == []


def uses_an_f_string(x):
    print(f"x = {x}")
    return np.sum(x * x)


@pytest.mark.usefixtures("source_front_end_only")
def test_the_f_string_refusal_says_what_to_write_instead():
    with pytest.raises(sourcegrad.UnsupportedSyntaxError) as caught:
        sourcegrad.grad(uses_an_f_string)(np.ones(2))
    message = str(caught.value)
    assert "an f-string is not supported in differentiated code" in message
    assert 'print("x =", x)' in message  # the hint
    assert caught.value.loc.text.strip() == 'print(f"x = {x}")'
