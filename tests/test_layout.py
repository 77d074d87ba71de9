"""The house rules of the package's layout, read from its source: no module imports another
module's private (`_underscored`) name, no module imports the package's modules in a
circle (module-level imports; an import inside a function runs later and is not an edge)."""

from __future__ import annotations

import ast
import pathlib

import sourcegrad

ROOT = pathlib.Path(sourcegrad.__file__).parent


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path, path.name == "__init__.py"


def _absolute(module, package_is_self, level, target):
    """The module a relative `from ... import` names."""
    if level == 0:
        return target
    base = module.split(".")
    if not package_is_self:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports(module, path, is_package, module_level_only):
    tree = ast.parse(path.read_text())
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            yield _absolute(module, is_package, node.level, node.module), node
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node


def _imported_modules(module, path, is_package, module_level_only):
    """(name, import node) for each module name an import names: the module imported from,
    and for `from . import x` the module x too."""
    for target, node in _imports(module, path, is_package, module_level_only):
        yield target, node
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                yield f"{target}.{alias.name}", node


def test_no_module_imports_another_modules_private_name():
    modules = {name for name, _, _ in _modules()}
    found = []
    for module, path, is_package in _modules():
        for target, node in _imports(module, path, is_package, module_level_only=False):
            if not isinstance(node, ast.ImportFrom) or target not in modules:
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and f"{target}.{alias.name}" not in modules:
                    found.append(f"{module} imports {target}.{alias.name} (line {node.lineno})")
    assert not found, "\n".join(found)


def test_module_level_imports_have_no_circle():
    modules = {name for name, _, _ in _modules()}
    edges: dict = {m: set() for m in modules}
    for module, path, is_package in _modules():
        for name, _ in _imported_modules(module, path, is_package, module_level_only=True):
            if name in modules and name != module and not module.startswith(name + "."):
                edges[module].add(name)  # (a package's own __init__ runs first anyway)
    state: dict = {}
    circles = []

    def visit(m, path):
        state[m] = "open"
        for n in sorted(edges[m]):
            if state.get(n) == "open":
                circles.append(" -> ".join(path[path.index(n) :] + [n]))
            elif n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(modules):
        if m not in state:
            visit(m, [m])
    assert not circles, "\n".join(circles)


# The floors of the house, lowest first: a module imports only from its own floor or below
# (at module level or inside a function alike), and the compiler and the eager library,
# side by side on one floor, never import each other.
# the eager library and what is built on it (torch's names)
EAGER_SIDE = {
    "eager",
    "nn",
    "optim",
    "autograd",
    "utils",
    "fft",
    "linalg",
    "signal",
    "func",
    "serialization",
    "special",
    "amp",
    "backends",
    "accelerator",
    "distributed",
    "distributions",
    "testing",
    "jit",
    "profiler",
    # torch namespaces named only, refusing every use (`unsupported` makes their refusals)
    "unsupported",
    "onnx",
    "hub",
    "export",
    "sparse",
    "masked",
}
FLOORS = [
    # leaves: the helpers generated code imports, errors, parameter trees, the disk cache
    {"runtime", "errors", "_version", "trees", "cache"},
    # the op registry
    {"ops"},
    # the compiler, and beside it the eager side
    {"compiler"} | EAGER_SIDE,
    # the compiled API, and what joins the two modes
    {
        "api",
        "notebook",
        "viz",
        "compiled",
        "misc",  # autograd's flatten and optimizers, used with the compiled API
        "extend",  # autograd's primitive, defvjp, defjvp
        "test_util",  # autograd's check_grads
    },
    # the command line, benchmarks, the demo, the package's surface
    {"cli", "bench", "demo", "__main__", ""},
]


def _room(module):
    """The top-level name under sourcegrad ('' for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _floor(room):
    return next(i for i, rooms in enumerate(FLOORS) if room in rooms)


def test_imports_run_one_way():
    modules = {name for name, _, _ in _modules()}
    rooms = {_room(m) for m in modules}
    assert rooms <= set().union(*FLOORS), f"rooms on no floor: {rooms - set().union(*FLOORS)}"
    found = []
    for module, path, is_package in _modules():
        for name, node in _imported_modules(module, path, is_package, module_level_only=False):
            if name not in modules or name == "sourcegrad":
                continue
            here, there = _room(module), _room(name)
            if here == there:
                continue
            sideways = {here, there} & {"compiler"} and {here, there} & EAGER_SIDE
            if _floor(there) > _floor(here) or sideways:
                found.append(f"{module} imports {name} (line {node.lineno})")
    assert not found, "\n".join(sorted(set(found)))


# The compiler's stage folders (and its top-level modules), lowest first: a module of one
# imports only from its own room or from rooms on lower floors (at module level or inside a
# function alike); rooms side by side on one floor never import each other. The pipeline
# runs frontend -> analysis -> specialise -> derive -> optimize -> emit -> backends; the
# imports run down a different order in two places, said here: optimize is a floor of
# tools (the cleanup passes specialise's and derive's rewrites reuse, on analysis's
# lifetimes and shape names), and the AST front end marks an inlined checkpointed call with
# derive's marker (`derive.checkpointing.marked`), so it stands above derive.
COMPILER_FLOORS = [
    # the IR
    {"ir"},
    # its vocabulary: fresh names, the random draws both front ends make, the source text
    # both front ends read, the dependencies both record
    {"names", "random_draws", "source_text", "dependencies"},
    # questions about IR: abstract values, shapes, activity, checks, lifetimes, shape names
    {"analysis"},
    # IR -> IR passes
    {"optimize"},
    # a signature's rewrites, differentiation, printing
    {"specialise", "derive", "emit"},
    # the front ends (producers of IR) and the backends (consumers of printed source)
    {"frontend", "trace", "backends"},
    # what the pipeline and the api ask of IR and of a signature (new gradients, the
    # saved-value manifest, powers that may be complex, the generators drawn from)
    {"facts"},
    # the stages in order
    {"pipeline"},
    # the package's one door
    {""},
]


def _stage(module):
    """The compiler room a module of `sourcegrad.compiler` stands in ('' for the package's
    __init__), or None for a module outside the compiler."""
    parts = module.split(".")
    if parts[:2] != ["sourcegrad", "compiler"]:
        return None
    return parts[2] if len(parts) > 2 else ""


def test_compiler_stages_import_one_way():
    modules = {name for name, _, _ in _modules()}
    stages = {_stage(m) for m in modules} - {None}
    placed = set().union(*COMPILER_FLOORS)
    assert stages <= placed, f"compiler rooms on no floor: {stages - placed}"
    floor = {room: i for i, rooms in enumerate(COMPILER_FLOORS) for room in rooms}
    found = []
    for module, path, is_package in _modules():
        here = _stage(module)
        if here is None:
            continue
        for name, node in _imported_modules(module, path, is_package, module_level_only=False):
            there = _stage(name)
            if name not in modules or there is None or there == here or there == "":
                continue  # (a package's __init__ runs first anyway: `from .. import x` names x)
            if floor[there] >= floor[here]:
                found.append(f"{module} imports {name} (line {node.lineno})")
    assert not found, "\n".join(sorted(set(found)))


def _door_names():
    import sourcegrad.compiler

    return set(sourcegrad.compiler.__all__)


def test_only_the_compiler_package_is_imported_from_outside():
    """No module outside `sourcegrad.compiler` imports a module inside it: each imports the
    package (`from .. import compiler`, or names from it), and each name it takes from it,
    by import or as `compiler.name`, is one the package's door lists (`__all__`), not a
    module of the package."""
    modules = {name for name, _, _ in _modules()}
    door = _door_names()
    found = []
    for module, path, is_package in _modules():
        if module == "sourcegrad.compiler" or module.startswith("sourcegrad.compiler."):
            continue
        tree = ast.parse(path.read_text())
        for target, node in _imports(module, path, is_package, module_level_only=False):
            if target.startswith("sourcegrad.compiler."):
                found.append(f"{module} imports {target} (line {node.lineno})")
            elif target == "sourcegrad.compiler" and isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name not in door or f"{target}.{alias.name}" in modules:
                        found.append(f"{module} imports compiler.{alias.name} (line {node.lineno})")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "compiler"
                and node.attr not in door
            ):
                found.append(f"{module} reads compiler.{node.attr} (line {node.lineno})")
    assert not found, "\n".join(sorted(set(found)))


def test_the_api_reaches_the_compiler_through_its_door():
    """The api's modules and the drawings (`viz`) import the compiler: they do, through the
    package (the test above says they take nothing else)."""
    reaching = set()
    for module, path, is_package in _modules():
        if module.startswith("sourcegrad.api.") or module == "sourcegrad.viz":
            for name, _ in _imported_modules(module, path, is_package, module_level_only=False):
                if name == "sourcegrad.compiler":
                    reaching.add(module)
    assert {"sourcegrad.api.compiling", "sourcegrad.api.gradient", "sourcegrad.viz"} <= reaching


# A function over MAX_FUNCTION_LINES lines (its `def` to its last line, docstring included)
# says why in this list: at most three, each with its reason. One over REASON_LINES says
# why in its own body, a comment line `# (long: why it reads better as one piece)`.
MAX_FUNCTION_LINES = 100
REASON_LINES = 80
LONG_FUNCTIONS: dict = {}  # "path:function": the reason it is one piece
PENDING = sum(reason.startswith("pending") for reason in LONG_FUNCTIONS.values())


def _long_functions(limit):
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    yield f"{path.relative_to(ROOT).as_posix()}:{node.name}", lines


def test_no_function_is_longer_than_a_hundred_lines_without_its_reason():
    long = dict(_long_functions(MAX_FUNCTION_LINES))
    unlisted = {name: lines for name, lines in long.items() if name not in LONG_FUNCTIONS}
    assert not unlisted, (
        f"functions over {MAX_FUNCTION_LINES} lines: {unlisted}; split them into pieces "
        "named for what they do, or list one in LONG_FUNCTIONS with its reason"
    )
    assert len(LONG_FUNCTIONS) - PENDING <= 3, "at most three long functions, each with a reason"
    stale = sorted(set(LONG_FUNCTIONS) - set(long))
    assert not stale, f"no longer over {MAX_FUNCTION_LINES} lines: drop {stale} from the list"


def test_a_function_over_eighty_lines_says_why_it_is_one_piece():
    """The house rule: no function over ~80 lines without a stated reason. The reason is a
    `# (long: ...)` comment inside the function (after its docstring, where a reader of it
    starts); a function that cannot give one is split into pieces named for what they do."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if node.end_lineno - node.lineno + 1 <= REASON_LINES:
                continue
            own = lines[node.lineno - 1 : node.end_lineno]
            if not any(line.strip().startswith("# (long: ") for line in own):
                length = node.end_lineno - node.lineno + 1
                where = f"{path.relative_to(ROOT).as_posix()}:{node.lineno}"
                found.append(f"{where} {node.name} ({length} lines)")
    assert not found, (
        f"functions over {REASON_LINES} lines with no `# (long: ...)` reason: " + "; ".join(found)
    )
