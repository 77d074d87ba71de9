"""The package's outside: its version (module, command, metadata), license, typing marker,
and the command line used from outside the repository root."""

import os
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version

import pytest

import sourcegrad
from sourcegrad import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, cwd=ROOT):
    # PYTHONPATH: this checkout's package, also from another directory
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        return tomllib.load(fh)


def test_version_is_the_installed_metadata():
    try:
        expected = version("sourcegrad")
    except PackageNotFoundError:
        expected = "0+unknown"
    assert sourcegrad.__version__ == expected
    assert re.fullmatch(r"\d+(\.\d+)*(\S*)", sourcegrad.__version__)


def test_version_option_prints_the_version(capsys):
    with pytest.raises(SystemExit) as exit_info:  # argparse's version action exits 0
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"sourcegrad {sourcegrad.__version__}\n"


@pytest.mark.long
def test_python_m_sourcegrad_version():
    result = run("-m", "sourcegrad", "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"sourcegrad {sourcegrad.__version__}\n"


def test_license_file_matches_pyproject():
    assert pyproject()["project"]["license"] == "MIT"
    assert pyproject()["project"]["license-files"] == ["LICENSE"]
    text = open(os.path.join(ROOT, "LICENSE")).read()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the sourcegrad authors" in text


def test_py_typed_ships_with_the_package():
    assert os.path.isfile(os.path.join(os.path.dirname(sourcegrad.__file__), "py.typed"))
    assert "py.typed" in pyproject()["tool"]["setuptools"]["package-data"]["sourcegrad"]


def test_optional_extras_are_never_core_dependencies():
    project = pyproject()["project"]
    core = {re.split(r"[<>=\[ ]", d)[0] for d in project["dependencies"]}
    assert core == {"numpy", "gast", "astor"}
    extras = project["optional-dependencies"]
    assert {"test", "docs", "lint", "examples", "oracle", "cuda12", "dask"} <= set(extras)


@pytest.mark.long
def test_gen_check_works_from_another_directory(tmp_path):
    # the goldens of the checkout beside the package, named as from its root. A fresh
    # process, as `sourcegrad gen` always is: in this one a gradient compiled earlier from
    # another directory keeps the header it was generated with (the file named relative
    # to the directory then current), which is not what gen is checking here.
    result = run("-m", "sourcegrad", "gen", "--check", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "generated files are up to date" in result.stdout
    assert os.listdir(tmp_path) == []


def test_gen_refuses_examples_without_goldens(tmp_path, monkeypatch, capsys):
    (tmp_path / "examples").mkdir()
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "keep.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["gen"]) == 1
    err = capsys.readouterr().err
    assert "lists GOLDEN" in err and err.count("\n") == 1
    assert (tmp_path / "generated" / "keep.py").read_text() == "x = 1\n"  # nothing removed


def test_show_cupy_source_needs_no_cupy(monkeypatch, capsys):
    # the CuPy backend's source is printed from a numpy signature; nothing imports cupy
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    monkeypatch.chdir(ROOT)
    assert cli.main(["show", "examples/logreg.py:loss", "--backend", "cupy"]) == 0
    out = capsys.readouterr().out
    assert "import cupy as cp" in out and "def dloss_dw(w, X, y):" in out


@pytest.mark.long
def test_viz_is_available_after_import_sourcegrad():
    result = run("-c", "import sourcegrad; print(sourcegrad.viz.render.__name__)")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "render\n"


def test_bench_writes_json_only_where_asked():
    from sourcegrad.bench import runner

    assert runner.parse_args([]).json is None  # nothing lands in the current directory
    assert runner.parse_args(["--json", "out.json"]).json == "out.json"
