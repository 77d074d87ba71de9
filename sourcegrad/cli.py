"""The `sourcegrad` command (also `python -m sourcegrad`).

    sourcegrad demo                         a guided run: compile, read, verify
    sourcegrad show FILE.py:FUNC [--args "w=(10,), X=(64, 10)"] [--wrt a,b] [--saved]
                                 [--forward] [--backend numpy|cupy|dask|numba]
    sourcegrad gen [--check] [--examples DIR] [--out DIR]
    sourcegrad bench [--quick] [--only NAME]   the benchmark suite
    sourcegrad --version

`show` and `gen` need example inputs, since a gradient is generated for the
shapes of its inputs: `show --args` gives their shapes on the command line, or a
file lists them as `EXAMPLES = {"func": make_args}`,
and `GOLDEN = [("func", wrt), ...]` names the gradients `gen` writes to
`generated/` (`("func", wrt, "dask")`: that backend's code, in NAME_dask.py). `gen`
reads `examples/` of the current directory, or, where there is none, the `examples/`
beside the installed package (a source checkout), so it works from any directory. Errors print one line and exit 1; `--debug` shows the traceback.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.util
import inspect
import os
import sys
from types import ModuleType
from typing import Any, Callable, Optional, Union

import numpy as np

from . import api, errors
from ._version import __version__
from .compiler import comment_lines, describe_total, memory_plan
from .notebook import tokens

Wrt = Union[int, str, tuple[Union[int, str], ...]]

GOLDEN_NOTE = "# Regenerate with `python -m sourcegrad gen` from the repository root; CI checks it."


class CLIError(Exception):
    pass


def _load_module(path: str) -> ModuleType:
    """`path` imported as a module of its own name (`sourcegrad_user_NAME`): its top-level
    code runs, as `import` runs it, but not a block under `if __name__ == "__main__":`. An
    exception that code raises is one line (`--debug` shows its traceback)."""
    if not os.path.exists(path):
        raise CLIError(f"file not found: {path}")
    name = "sourcegrad_user_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except errors.SourcegradError:
        raise
    except (Exception, SystemExit) as exc:
        del sys.modules[name]
        raise CLIError(
            f"importing {path} raised {type(exc).__name__}: {exc} (sourcegrad imports the "
            "file to find the function, so its top-level code runs; --debug shows where)"
        ) from exc
    return module


def _example_args(module: ModuleType, func_name: str, path: str) -> Any:
    examples = getattr(module, "EXAMPLES", {})
    if func_name not in examples:
        raise CLIError(
            f"{path} gives no example inputs for {func_name}: a gradient is generated "
            "for the shapes of its inputs, so give them on the command line "
            '(--args "w=(10,), X=(64, 10), lr=float") or add EXAMPLES = '
            f"{{{func_name!r}: make_args}} where make_args() returns the arguments"
        )
    return examples[func_name]()


def parse_args_spec(text: str, fn: Callable[..., Any]) -> tuple[Any, ...]:
    """The arguments `--args` describes, in fn's parameter order.

    `name=(3, 4)` is a float64 array of that shape, `name=float32(3, 4)` one of that dtype,
    `name=float` a Python float, `name=3` / `name=0.5` / `name="mean"` that value. Values are
    drawn from a fixed seed (a gradient is generated for shapes, not values); parameters
    with defaults may be left out."""
    try:
        call = ast.parse(f"f({text})", mode="eval").body
    except SyntaxError as exc:
        raise CLIError(f"--args: {exc.msg} in {text!r}") from None
    if not isinstance(call, ast.Call):
        raise CLIError(f"--args: cannot read {text!r}")
    if call.args:
        raise CLIError("--args: give each argument as name=value")
    rng = np.random.default_rng(0)
    given: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise CLIError("--args: give each argument as name=value")
        given[keyword.arg] = _argument(keyword.value, rng, keyword.arg)
    signature = inspect.signature(fn)
    unknown = sorted(set(given) - set(signature.parameters))
    if unknown:
        raise CLIError(
            f"--args: {fn.__name__} has no parameter {unknown[0]!r} (its parameters: "
            f"{', '.join(signature.parameters)})"
        )
    try:
        bound = signature.bind(**given)
    except TypeError as exc:
        raise CLIError(f"--args: {exc}") from None
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def _argument(node: ast.expr, rng: np.random.Generator, name: str) -> Any:
    def shape_of(items: list[ast.expr]) -> tuple[int, ...]:
        if not all(isinstance(i, ast.Constant) and type(i.value) is int for i in items):
            raise CLIError(f"--args: the shape of {name} must be integers")
        return tuple(i.value for i in items)  # type: ignore[attr-defined]

    if isinstance(node, ast.Tuple):
        return rng.standard_normal(shape_of(node.elts))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        dtype = getattr(np, node.func.id, None)
        if not (isinstance(dtype, type) and issubclass(dtype, np.number)):
            raise CLIError(f"--args: {node.func.id} is not a numpy dtype (for {name})")
        return rng.standard_normal(shape_of(node.args)).astype(dtype)
    if isinstance(node, ast.Name) and node.id in ("float", "int", "bool"):
        return {"float": 0.5, "int": 1, "bool": True}[node.id]
    if isinstance(node, (ast.Constant, ast.UnaryOp)):
        try:
            return ast.literal_eval(node)
        except ValueError:
            pass
    raise CLIError(
        f"--args: cannot read the value of {name}: give a shape like (3, 4), "
        "float32(3, 4), float, or a number"
    )


def _parse_wrt(text: str | None) -> Wrt:
    if text is None:
        return 0
    items: list[int | str] = [
        int(t) if t.strip().lstrip("-").isdigit() else t.strip() for t in text.split(",")
    ]
    return items[0] if len(items) == 1 else tuple(items)


_COLORS = {
    "keyword": "\033[35m",
    "comment": "\033[2;32m",
    "string": "\033[33m",
    "number": "\033[36m",
    "def": "\033[1;34m",
}
_RESET = "\033[0m"


def _highlight(source: str) -> str:
    """ANSI colours for a terminal (keywords, names defined, comments, strings, numbers);
    the text unchanged when stdout is not a terminal."""
    if not sys.stdout.isatty():
        return source
    return highlight(source)


def highlight(source: str) -> str:
    """`source` with ANSI colours around keywords, names defined, comments, strings, numbers
    (the kinds `sourcegrad.notebook.tokens` finds; a notebook shows the same in HTML)."""
    return "".join(
        f"{_COLORS[kind]}{text}{_RESET}" if kind else text for text, kind in tokens(source)
    )


def cmd_show(args: argparse.Namespace) -> int:
    path, _, func_name = args.target.rpartition(":")
    if not path:
        raise CLIError("give the function as FILE.py:FUNC")
    module = _load_module(path)
    fn = getattr(module, func_name, None)
    if fn is None:
        raise CLIError(f"{path} has no function {func_name!r}")
    fn = getattr(fn, "__wrapped__", fn)
    if _is_module_class(fn):
        return _show_module(fn, args)
    inputs = (
        parse_args_spec(args.args, fn)
        if args.args is not None
        else _example_args(module, func_name, path)
    )
    wrt = _parse_wrt(args.wrt)
    kind: Callable[..., Any] = api.JVP if args.forward else api.Gradient
    plan = _memory_plan(args)
    g = kind(
        fn,
        wrt if not args.forward or isinstance(wrt, tuple) else (wrt,),
        backend=args.backend,
        **({"memory_plan": plan} if plan is not None else {}),
    )
    compiled = g.compile(tuple(inputs))
    print(_highlight(compiled.source), end="")
    if args.saved:
        print("\n# saved for the backward pass:")
        for item in compiled.saved:
            origin = "input" if item["input"] else f"line {item['line']}"
            why = (
                f"read by {', '.join(item['read_by'])}"
                if item.get("status", "saved") == "saved" and item["read_by"]
                else f"{item['status']}: {item['why']}"
            )
            print(
                f"#   {item['name']}: shape {item['shape']}, {item['dtype']}, "
                f"{item['bytes']} bytes, {origin}, {why}"
            )
        print(f"# in all, not counting the inputs: {describe_total(compiled.saved)}")
    return 0


def _is_module_class(obj: Any) -> bool:
    from .nn import Module

    return isinstance(obj, type) and issubclass(obj, Module)


def _show_module(cls: Any, args: argparse.Namespace) -> int:
    """`show FILE.py:Net --args "x=float32(8, 1, 8, 8)"`: the generated forward and backward
    of `sourcegrad.compile(Net())` for inputs of those shapes (Net made without arguments)."""
    from .compiled import module as compiled_module
    from .eager.factories import from_numpy

    if args.args is None:
        raise CLIError(f"give the shapes of {cls.__name__}.forward's inputs with --args")
    try:
        model = cls()
    except TypeError as exc:
        raise CLIError(
            f"{cls.__name__}() needs arguments ({exc}): show makes it with none"
        ) from exc
    forward = getattr(cls.forward, "__func__", cls.forward)
    inputs = parse_args_spec(args.args, functools.partial(forward, None))
    compiled = compiled_module.compile_module(model)
    compiled(
        *[from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v for v in inputs]
    )
    print(_highlight(compiled.source), end="")
    return 0


def _memory_plan(args: argparse.Namespace) -> Any:
    """show's --memory and --checkpoint-loops as grad's memory plan (None for neither)."""

    def number(text: Optional[str]) -> Any:
        if text is not None and text.startswith("revolve:"):  # ("revolve", snapshots)
            return ("revolve", number(text.partition(":")[2]))
        return None if text is None else text if not text.isdigit() else int(text)

    try:
        return memory_plan(number(args.checkpoint_loops), number(args.memory))
    except errors.SourcegradError as exc:
        raise CLIError(str(exc)) from None


def golden_files(examples_dir: str) -> list[tuple[str, str]]:
    """(path, text) of every golden gradient the example files ask for, in a fixed order."""
    out = []
    for filename in sorted(os.listdir(examples_dir)):
        if not filename.endswith(".py"):
            continue
        path = os.path.join(examples_dir, filename)
        with open(path) as f:
            if "GOLDEN" not in f.read():
                continue
        module = _load_module(path)
        for func_name, wrt, *backend in getattr(module, "GOLDEN", []):
            fn = getattr(module, func_name)
            fn = getattr(fn, "__wrapped__", fn)
            inputs = tuple(_example_args(module, func_name, path))
            g = api.Gradient(fn, wrt, backend=backend[0] if backend else "auto")
            source = g.compile(inputs).source
            signature = ", ".join(
                _describe_input(name, value) for name, value in zip(g._params, inputs)
            )
            lines = source.split("\n")
            first = 1 + next(
                i for i, line in enumerate(lines[1:]) if not line.startswith("#   ")
            )  # (the header's lines)
            text = "\n".join(
                lines[:first]
                + [comment_lines(f"Inputs: {signature}."), GOLDEN_NOTE]
                + lines[first:]
            )
            wrt_part = "_".join(g._params[i] for i in g.wrt)
            stem = os.path.splitext(filename)[0]
            suffix = f"_{backend[0]}" if backend else ""
            out.append((f"{stem}_{func_name}_d{wrt_part}{suffix}.py", text))
    return out


def _describe_input(name: str, value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"{name} {value.dtype} {value.shape}"
    return f"{name} {type(value).__name__}"


def _default_examples() -> str:
    """examples/ of the current directory, else the one beside the package (a checkout)."""
    if os.path.isdir("examples"):
        return "examples"
    beside = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
    if os.path.isdir(beside):
        return beside
    raise CLIError(
        "no examples/ directory here or beside the sourcegrad package "
        f"({os.path.dirname(beside)}): give one with --examples DIR"
    )


def cmd_gen(args: argparse.Namespace) -> int:
    examples = os.path.abspath(args.examples if args.examples else _default_examples())
    root = os.path.dirname(examples)  # the goldens name their sources relative to it
    out = os.path.abspath(args.out) if args.out else os.path.join(root, "generated")
    here = os.getcwd()
    os.chdir(root)
    try:
        return _gen(os.path.relpath(examples), os.path.relpath(out), args.check)
    finally:
        os.chdir(here)


def _gen(examples: str, out: str, check: bool) -> int:
    """Write (or with `check`, compare) the goldens; paths are relative to the checkout."""
    files = golden_files(examples)
    if not files:  # not sourcegrad's examples: never clear someone else's out directory
        raise CLIError(
            f"no file in {os.path.abspath(examples)} lists GOLDEN = [(func, wrt)]: "
            "nothing to generate (give sourcegrad's examples with --examples DIR)"
        )
    os.makedirs(out, exist_ok=True)
    stale = []
    for name, text in files:
        path = os.path.join(out, name)
        current = open(path).read() if os.path.exists(path) else None
        if current != text:
            stale.append(path)
            if not check:
                with open(path, "w") as f:
                    f.write(text)
    expected = {name for name, _ in files}
    extra = sorted(f for f in os.listdir(out) if f.endswith(".py") and f not in expected)
    if check:
        for path in stale:
            print(f"stale or missing: {path}")
        for name in extra:
            print(f"not generated by any example: {os.path.join(out, name)}")
        if stale or extra:
            print("run `python -m sourcegrad gen` and commit the result")
            return 1
        print(f"{len(files)} generated files are up to date")
        return 0
    for name in extra:
        os.remove(os.path.join(out, name))
    print(
        f"wrote {len(stale)} of {len(files)} files in {out}"
        + (f", removed {len(extra)}" if extra else "")
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from . import demo

    return demo.run()


def main(argv: list[str] | None = None) -> int:
    """Run the command; return its exit status. Errors print one line (`sourcegrad: error:
    ...`) and return 1; `--debug` (before or after the command's name) shows the traceback
    instead. Output piped into a program that stops reading (`| head`) ends the command
    quietly, with status 141 (a program stopped by SIGPIPE)."""
    try:
        return _main(sys.argv[1:] if argv is None else list(argv))
    except BrokenPipeError:
        _stdout_to_devnull()
        return 141


def _main(argv: list[str]) -> int:
    if argv[:1] == ["bench"]:  # everything after `bench` belongs to the benchmark's parser
        from .bench.runner import main as bench_main

        return int(bench_main(argv[1:]) or 0)
    args = build_parser().parse_args(argv)
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "demo": cmd_demo,
        "show": cmd_show,
        "gen": cmd_gen,
    }
    try:
        return handlers[args.command](args)
    except BrokenPipeError:
        raise
    except (CLIError, errors.SourcegradError, OSError) as exc:
        if args.debug:
            raise
        print(f"sourcegrad: error: {exc}", file=sys.stderr)
        return 1


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so that flushing what is left of it at exit does not fail
    a second time ("Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass


def build_parser() -> argparse.ArgumentParser:
    """The `sourcegrad` command's parser (`bench` has its own: `sourcegrad bench --help`)."""
    parser = argparse.ArgumentParser(prog="sourcegrad", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"sourcegrad {__version__}")
    # `--debug` is also taken after the command's name (`sourcegrad show F.py:f --debug`)
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="a guided run through sourcegrad", parents=[debug])
    show = sub.add_parser(
        "show",
        help="print a function's generated gradient",
        description="Print the generated gradient of FUNC in FILE.py. FILE.py is imported "
        "to find FUNC: its top-level code runs, as `import` runs it; a block under "
        '`if __name__ == "__main__":` does not.',
        parents=[debug],
    )
    show.add_argument("target", help="FILE.py:FUNC (FILE.py is imported: its top-level code runs)")
    show.add_argument("--wrt", help="argument names or indices, comma separated")
    show.add_argument(
        "--args",
        help='the inputs\' shapes, as "w=(10,), X=(64, 10), lr=float" '
        "(in place of the file's EXAMPLES)",
    )
    show.add_argument("--saved", action="store_true", help="list what the backward keeps")
    show.add_argument(
        "--forward",
        action="store_true",
        help="print the forward-mode (JVP) code instead of the gradient",
    )
    show.add_argument(
        "--backend",
        default="numpy",
        choices=("numpy", "cupy", "dask", "numba"),
        help="the array library the generated code calls (numba: the numpy "
        "code as numba compiles it, or, where numba cannot, the numpy "
        "code that runs instead)",
    )
    show.add_argument(
        "--memory",
        default=None,
        metavar="BYTES|min",
        help="a saved-value budget (grad's memory=): loops are checkpointed, a row-wise "
        "batch goes in blocks of rows, values are recomputed",
    )
    show.add_argument(
        "--checkpoint-loops",
        default=None,
        metavar="K|sqrt|revolve|revolve:S",
        help="a snapshot every K trips of each loop, or Griewank's revolve with S snapshots "
        "(grad's checkpoint_loops=)",
    )
    gen = sub.add_parser("gen", help="regenerate generated/ from the examples", parents=[debug])
    gen.add_argument("--check", action="store_true", help="fail when a file is stale")
    gen.add_argument(
        "--examples",
        default=None,
        metavar="DIR",
        help="the example files (default: ./examples, else the checkout's)",
    )
    gen.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="where the goldens go (default: generated/ beside the examples)",
    )
    sub.add_parser("bench", help="the benchmark suite: sourcegrad bench --help")
    return parser
