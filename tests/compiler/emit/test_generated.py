"""Generated code is deterministic, and generated/ is up to date with the examples."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

PRINT_SOURCES = """
import sys

import pytest
sys.path.insert(0, "examples")
import numpy as np, sourcegrad, logreg, mlp
g = sourcegrad.grad(logreg.loss)
g(*logreg.example_args())
h = sourcegrad.grad(mlp.mlp_loss, wrt=(0, 1, 2, 3))
h(*mlp.example_args())
print(g.source + h.source)
"""


def run(*args, **kwargs):
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, **kwargs
    )


@pytest.mark.long
def test_source_is_byte_identical_across_processes():
    env = dict(os.environ, PYTHONHASHSEED="random")
    first = run("-c", PRINT_SOURCES, env=env)
    second = run("-c", PRINT_SOURCES, env=dict(env, PYTHONHASHSEED="123"))
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert "def dloss_dw(w, X, y):" in first.stdout


@pytest.mark.long
def test_generated_folder_is_up_to_date():
    result = run("-m", "sourcegrad", "gen", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_golden_modules_import_and_compute_the_gradient():
    import importlib.util

    import numpy as np

    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import logreg

    path = os.path.join(ROOT, "generated", "logreg_loss_dw.py")
    spec = importlib.util.spec_from_file_location("golden_logreg", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = logreg.example_args()
    expected = __import__("sourcegrad").grad(logreg.loss)(*args)
    np.testing.assert_allclose(module.dloss_dw(*args), expected)


def test_cli_errors_are_one_line_and_exit_non_zero():
    result = run("-m", "sourcegrad", "show", "missing.py:f")
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert "file not found" in result.stderr


def test_demo_runs_and_verifies():
    result = run("-m", "sourcegrad", "demo")
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout


def test_show_forward_prints_the_jvp():
    result = run(
        "-m", "sourcegrad", "show", "examples/spring.py:final_position", "--wrt", "k", "--forward"
    )
    assert result.returncode == 0, result.stderr
    assert "def jvp_final_position(k, c, k_dot):" in result.stdout
    assert "forward-mode derivative (JVP) with respect to k" in result.stdout


def test_terminal_highlighting_only_adds_colours():
    import re

    from sourcegrad.cli import highlight

    for name in sorted(n for n in os.listdir(os.path.join(ROOT, "generated")) if n.endswith(".py")):
        source = open(os.path.join(ROOT, "generated", name)).read()
        coloured = highlight(source)
        assert "\x1b[" in coloured
        assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == source


def test_show_is_plain_when_piped():
    result = run("-m", "sourcegrad", "show", "examples/logreg.py:loss")
    assert result.returncode == 0 and "\x1b[" not in result.stdout


PLAIN_FILE = """import numpy as np


def loss(w, X, y, reg=0.1):
    p = 1 / (1 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)) + reg * np.sum(w * w)
"""


def test_show_with_shapes_on_the_command_line(tmp_path, capsys):
    from sourcegrad.cli import main

    path = tmp_path / "plain.py"
    path.write_text(PLAIN_FILE)
    assert main(["show", f"{path}:loss", "--args", "w=(10,), X=(64, 10), y=(64,)"]) == 0
    out = capsys.readouterr().out
    assert "def dloss_dw(w, X, y, reg):" in out and "X.T.dot(" in out
    assert (
        main(
            [
                "show",
                f"{path}:loss",
                "--args",
                "w=float32(10,), X=float32(64, 10), y=float32(64,), reg=float",
            ]
        )
        == 0
    )
    assert main(["show", f"{path}:loss"]) == 1
    assert "--args" in capsys.readouterr().err
    assert main(["show", f"{path}:loss", "--args", "w=(10,), X=(64, 10), z=(3,)"]) == 1
    assert "no parameter 'z'" in capsys.readouterr().err
    assert main(["show", f"{path}:loss", "--args", "w=(10,), X=(64, 10)"]) == 1
    assert "missing" in capsys.readouterr().err
