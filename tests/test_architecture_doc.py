"""docs/architecture.md read against the code: the claims of it that can be checked.

The pipeline's stages (the page's numbered list = `compiler/pipeline.py`'s table), the import
floors it draws (= `tests/test_layout.py`'s FLOORS and COMPILER_FLOORS, which check the
imports themselves), every path it names exists, its Layout names every room of the package
and of the compiler, no module assigns to another sourcegrad module's globals, rules are
registered in `ops/` only (and by the random draws, as the page says), and a module over 500
lines says why it is one module.
"""

from __future__ import annotations

import ast
import pathlib
import re

import sourcegrad
from sourcegrad.compiler import pipeline

from . import test_layout

PACKAGE = pathlib.Path(sourcegrad.__file__).parent
REPO = PACKAGE.parent
PAGE = (REPO / "docs" / "architecture.md").read_text()


def _section(title):
    start = PAGE.index(f"## {title}")
    end = PAGE.find("\n## ", start + 1)
    return PAGE[start : end if end != -1 else len(PAGE)]


def test_the_stage_list_is_the_pipelines():
    """The page's stages 1-10 are the names and order pipeline.py's table gives."""
    table = re.findall(r"^ {4}(\d+) (\w+) ", pipeline.__doc__, re.M)
    page = re.findall(r"(?:^|; )(\d+)\. (\w+)", _section("The compiler"), re.M)
    assert [int(n) for n, _ in table] == list(range(1, 11))
    assert page == table, f"page {page} != pipeline.py {table}"
    # the stage functions the page and the door name are the pipeline's
    for name in ("prepare", "generate", "compile", "load", "lower"):
        assert callable(getattr(pipeline, name)) and name in sourcegrad.compiler.__all__


def _named_paths():
    """The paths the page names in backticks (`trace/rolling.py`, `frontend/`)."""
    return set(re.findall(r"`([\w/.]+(?:\.py|/))`", PAGE))


def test_every_path_the_page_names_exists():
    files = [p.relative_to(REPO).as_posix() for p in REPO.rglob("*") if ".git" not in p.parts]
    folders = {f + "/" for f in files if (REPO / f).is_dir()}
    known = set(files) | folders
    missing = [
        path
        for path in sorted(_named_paths())
        if not any(k == path or k.endswith("/" + path) for k in known)
    ]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def _layout():
    (block,) = re.findall(r"```\n(sourcegrad/\n.*?)```", _section("Layout"), re.S)
    return block


def test_the_layout_names_every_room_and_every_compiler_module():
    """Each module and package of sourcegrad/, and each module and folder of
    sourcegrad/compiler/, is named in the Layout drawing (a new room is drawn there)."""
    named = set(re.findall(r"[\w.]+(?:\.py\b|/(?!\w))", _layout()))
    rooms = {p.name + ("/" if p.is_dir() else "") for p in PACKAGE.iterdir()}
    rooms = {r for r in rooms if r.endswith((".py", "/")) and r != "__pycache__/"}
    compiler = {
        p.name + ("/" if p.is_dir() else "")
        for p in (PACKAGE / "compiler").iterdir()
        if p.name != "__pycache__" and p.name != "__init__.py" and (p.is_dir() or p.suffix == ".py")
    }
    assert not rooms - named, f"rooms of sourcegrad/ not in the Layout: {sorted(rooms - named)}"
    assert not compiler - named, f"compiler rooms not in the Layout: {sorted(compiler - named)}"
    stale = {n for n in named if n.endswith("/") and n.rstrip("/") not in _all_folder_names()}
    assert not stale, f"the Layout draws folders that do not exist: {sorted(stale)}"


def _all_folder_names():
    return {p.name for p in PACKAGE.rglob("*") if p.is_dir()} | {"sourcegrad"}


def _room_words(text):
    words = set(re.findall(r"[\w/]+", text))
    return {"" if w == "sourcegrad/__init__" else w for w in words}


def test_the_import_drawing_is_the_floors_the_layout_test_checks():
    """The page's `A <- B <- ...` drawing: each room it names stands on the floor it is
    drawn on, in test_layout's FLOORS (the test that checks the imports)."""
    (drawing,) = re.findall(r"```\n(runtime.*?)```", _section("Imports run one way"), re.S)
    groups = [_room_words(g) for g in drawing.replace("\n", " ").split("<-")]
    rooms = set().union(*test_layout.FLOORS)
    floor_of = {room: test_layout._floor(room) for room in rooms}
    drawn = {}
    for i, words in enumerate(groups):
        for room in words & rooms:
            drawn[room] = i
    floors = sorted({floor_of[r] for r in drawn})
    assert len(groups) == len(test_layout.FLOORS) == len(floors)
    wrong = {r: (i, floor_of[r]) for r, i in drawn.items() if floors[i] != floor_of[r]}
    assert not wrong, f"drawn on another floor than FLOORS puts them: {wrong}"
    assert {"runtime", "ops", "compiler", "eager", "api", "cli", ""} <= set(drawn)


def test_the_compiler_floors_paragraph_is_compiler_floors():
    (paragraph,) = re.findall(
        r"\(`COMPILER_FLOORS` in `tests/test_layout.py`, lowest first\):(.*?)Rooms on one",
        PAGE,
        re.S,
    )
    groups = []
    for part in paragraph.split(";"):
        names = re.findall(r"`(\w+)(?:\.py|/)`", part.split("(")[0])
        groups.append({"" if n == "__init__" else n for n in names})
    assert groups == test_layout.COMPILER_FLOORS


def _module_of(path):
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_assigns_to_another_modules_globals():
    """`module.name = value`, `setattr(module, ...)` or `del module.name` on a module of
    sourcegrad imported by another: none (the page's claim)."""
    modules = {_module_of(p) for p in PACKAGE.rglob("*.py")}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = _module_of(path)
        tree = ast.parse(path.read_text())
        bound = {}  # local name -> the sourcegrad module it names
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = test_layout._absolute(
                    here, path.name == "__init__.py", node.level, node.module
                )
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        bound[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in modules:
                        bound[alias.asname] = alias.name
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.Delete)):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("setattr", "delattr")
                and node.args
            ):
                targets = [ast.Attribute(node.args[0], "?")]
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    if t.value.id in bound and bound[t.value.id] != here:
                        found.append(f"{here}:{node.lineno} changes {bound[t.value.id]}")
    assert not found, "\n".join(found)


REGISTERING = {"defvjp", "defprimitive", "defnondiff", "defjvp", "deflinear", "alias", "mark"}
# outside ops/: the random draws' rules, made when a function is found to draw (the page
# says so in its Layout)
REGISTERS_OUTSIDE_OPS = {"sourcegrad.compiler.random_draws"}


def test_rules_are_registered_in_ops_only():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_of(path)
        if module.startswith("sourcegrad.ops") or module in REGISTERS_OUTSIDE_OPS:
            continue
        tree = ast.parse(path.read_text())
        registry_names = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("ops")
            for alias in node.names
            if alias.name in REGISTERING
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else None
                if name in registry_names or (
                    isinstance(f, ast.Attribute)
                    and f.attr in REGISTERING - {"alias", "mark"}
                    and isinstance(f.value, ast.Name)
                    and f.value.id in ("ops", "registry")
                ):
                    found.append(f"{module}:{node.lineno}")
    assert not found, f"rules registered outside sourcegrad/ops/: {found}"
    assert "random_draws" in _section("Layout")


# ("Why one module: ...", "Why its own module: ...", "One module, as torch's is: ...", or
# numpy_functions' "the file is long because ...")
WHY_ONE_MODULE = re.compile(
    r"why (one|its own) module|one module, as torch's is|long because", re.I
)


def test_a_module_over_500_lines_says_why_it_is_one_module():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        lines = text.count("\n")
        if lines > 500 and not WHY_ONE_MODULE.search(ast.get_docstring(ast.parse(text)) or ""):
            found.append(f"{path.relative_to(PACKAGE).as_posix()} ({lines} lines)")
    assert not found, f"modules over 500 lines that do not say why they are one: {found}"
