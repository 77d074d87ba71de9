"""An example that needs an optional extra says which one to install (not a raw
ModuleNotFoundError), and examples write files only where they are told to."""

import importlib.util
import os
import runpy
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name, *argv):
    """`python examples/NAME *argv`, in this process; what it exits with (None: it ended)."""
    saved = sys.argv
    sys.argv = [name, *argv]
    try:
        runpy.run_path(os.path.join(ROOT, "examples", name), run_name="__main__")
    except SystemExit as exc:
        return exc.code
    finally:
        sys.argv = saved
    return None


@pytest.mark.parametrize(
    "name, argv, hidden, extra",
    [
        ("digits_mlp.py", ["--epochs", "1"], "sklearn", '".[examples]"'),
        ("digits_convnet.py", ["--epochs", "1"], "sklearn", '".[examples]"'),
        ("digits_convnet.py", ["--torch"], "torch", '".[oracle]"'),
        ("char_lstm.py", ["--torch"], "torch", '".[oracle]"'),
        ("dask_out_of_core.py", [], "dask", '".[dask]"'),
        ("compare_training.py", [], "sklearn", '".[examples]"'),
    ],
)
def test_a_missing_extra_is_named(monkeypatch, tmp_path, name, argv, hidden, extra):
    monkeypatch.chdir(tmp_path)
    for module in [hidden] + [m for m in sys.modules if m.startswith(hidden + ".")]:
        monkeypatch.setitem(sys.modules, module, None)  # `import <module>` raises ImportError
    if hidden == "sklearn":  # (find_spec, which some examples ask, does not see sys.modules)
        real = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda n, *a: None if n == hidden else real(n, *a)
        )
    code = run_example(name, *argv)
    assert isinstance(code, str), f"{name} did not stop with a message (exit {code!r})"
    assert f"pip install -e {extra}" in code
    if hidden == "torch":
        assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in code
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="needs scikit-learn")
def test_digits_mlp_writes_nothing_unless_told(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    assert run_example("digits_mlp.py", "--epochs", "1") is None
    assert "test accuracy" in capsys.readouterr().out
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("written", ["digits_loss.png", "loss.png", "rnn_dataflow.dot"])
def test_what_the_readmes_commands_write_here_is_ignored_by_git(written):
    import shutil
    import subprocess

    if shutil.which("git") is None or not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    done = subprocess.run(["git", "check-ignore", "-q", written], cwd=ROOT)
    assert done.returncode == 0, f"git does not ignore {written}"
