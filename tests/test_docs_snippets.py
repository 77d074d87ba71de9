"""The ```python blocks of README.md and docs/**/*.md run, so no snippet uses an undefined name
or shows a result the code does not give.

A file's blocks run in order in one namespace (as a reader runs them in one session), in a
fresh temporary directory, with `examples/` importable; each block is written to a file
there first, since sourcegrad reads the source of the functions it differentiates. An HTML
comment on the line before a block changes what happens to it:

* `<!-- snippet: skip (why) -->`: the block is not run (an excerpt, or it needs an install);
* `<!-- snippet: gpu -->`: run only where CuPy finds a CUDA device;
* `<!-- snippet: needs MODULE -->`: run only where MODULE (an optional dependency) imports;
* `<!-- snippet: output -->` before a ```text block: that block is what the python block
  before it prints, compared as doctest compares (`...` matches anything);
* `<!-- snippet: golden generated/NAME.py -->`: the block is an excerpt of that committed
  golden gradient: its lines are the file's, in order (lines may be left out), so a change
  of the generated code must update the document too.
"""

from __future__ import annotations

import contextlib
import doctest
import glob
import importlib.util
import io
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M
)
MARKER = re.compile(r"<!--\s*snippet:\s*(?P<kind>[\w-]+)(?P<why>[^>]*)-->\s*$")
ANY_MARKER = re.compile(r"<!--\s*snippet:\s*(?P<kind>[\w-]+)(?P<why>[^>]*)-->")
KINDS = ("skip", "gpu", "output", "golden", "needs")
SLUG = re.compile(r"\W")


def documents():
    paths = [os.path.join(ROOT, "README.md")]
    paths += sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return [os.path.relpath(p, ROOT) for p in paths]


def runnable_documents():
    """The documents with a python block to run (the others have nothing to check)."""
    return [
        path
        for path in documents()
        if any(lang == "python" and marker != "skip" for _, lang, marker, _, _ in blocks(path))
    ]


def blocks(path):
    """[(line, lang, marker, argument, body)] of the fenced blocks in `path`, in order."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    out = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        indent = len(match.group("indent"))
        body = "\n".join(row[indent:] for row in match.group("body").split("\n"))
        out.append(
            (
                line,
                match.group("lang"),
                marker.group("kind") if marker else None,
                marker.group("why").strip() if marker else "",
                body,
            )
        )
    return out


def has_gpu():
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _not_in_order(excerpt, lines):
    """None if `excerpt`'s lines occur in `lines` in order (lines may be left out between
    them, as an excerpt leaves out a file's header), else the first line that does not."""
    position = 0
    for line in excerpt:
        try:
            position = lines.index(line, position) + 1
        except ValueError:
            return line
    return None


def _imports_found(body):
    """Whether every module a block imports at its top (`import dask.array as da` in the Dask
    golden) is installed: a golden of an optional backend is checked as an excerpt only."""
    names = re.findall(r"^(?:import|from) ([A-Za-z_][\w]*)", body, re.M)
    return all(importlib.util.find_spec(name) is not None for name in names)


def _check_output(expected, got, where):
    checker = doctest.OutputChecker()
    if not checker.check_output(expected, got, doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE):
        pytest.fail(f"{where}: the block before prints\n{got}\nbut the document shows\n{expected}")


@pytest.mark.parametrize("path", runnable_documents())
def test_python_blocks_run(path, tmp_path, monkeypatch):
    found = blocks(path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(os.path.join(ROOT, "examples"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace = {"__name__": "__snippet__"}
    printed = None
    for line, lang, marker, argument, body in found:
        where = f"{path}:{line}"
        if marker == "golden":
            golden = open(os.path.join(ROOT, argument), encoding="utf-8").read().splitlines()
            missing = _not_in_order(body.splitlines(), golden)
            assert missing is None, (
                f"{where}: this block is not an excerpt of {argument} as "
                f"it is now; from this line on it differs: {missing!r}"
            )
        if marker == "output":
            assert lang == "text", f"{where}: an output marker goes before a ```text block"
            assert printed is not None, f"{where}: no python block ran before this output"
            _check_output(body, printed, where)
            continue
        if (
            lang != "python"
            or marker == "skip"
            or (marker == "gpu" and not has_gpu())
            or (marker == "needs" and importlib.util.find_spec(argument) is None)
            or (marker == "golden" and not _imports_found(body))
        ):
            printed = None
            continue
        assert marker in (None, "gpu", "golden", "needs"), (
            f"{where}: unknown snippet marker {marker!r}"
        )
        stdout = io.StringIO()
        filename = tmp_path / f"{SLUG.sub('_', path)}_line{line}.py"
        filename.write_text(body, encoding="utf-8")
        try:
            code = compile(body, str(filename), "exec", dont_inherit=True)  # no __future__ of ours
            with contextlib.redirect_stdout(stdout):
                exec(code, namespace)
        except Exception as exc:
            sys.stdout.write(stdout.getvalue())
            raise AssertionError(
                f"the python block at {where} raised {type(exc).__name__}: {exc}"
            ) from exc
        printed = stdout.getvalue()


def test_markers_are_known():
    for path in documents():
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        for match in ANY_MARKER.finditer(text):
            assert match.group("kind") in KINDS, (path, match.group(0))
