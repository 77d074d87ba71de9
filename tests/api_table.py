"""The table of the torch API sourcegrad covers (docs/guide/eager.md, "What is there"), made from what the package exports.

`table(torch)` takes the torch module (or None) and returns the markdown of the table: per
area (tensor functions, Tensor methods, autograd, nn layers, losses, nn.functional, optim,
schedulers, data, save/load, forward_ad, func, linalg, fft, special, testing, jit,
profiler, nn.utils.parametrize/parametrizations/prune, optim.swa_utils), how many of torch's
names sourcegrad has and which it lacks (the list, where it is short). Each area compares
like with like: sourcegrad's public names of that kind against torch's.

`python -m tests.api_table` rewrites the table in docs/guide/eager.md (between its markers);
`tests/test_api_table.py` fails when that table is not the one the package gives,
so the table cannot go stale.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import re
import sys

import sourcegrad

PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "guide" / "eager.md"
START, END = "<!-- api-table: start -->", "<!-- api-table: end -->"
SHORT = 30  # lists longer than this are given as a count

# what is not API in torch's namespaces: typing names, dispatch helpers, submodules
_NOT_API = re.compile(
    r"^(_.*|[A-Z][a-z]+Type|Callable|Optional|Any|Sequence|Mapping|DType|"
    r"Union|List|Tuple|Dict|has_torch_function.*|handle_torch_function|"
    r"boolean_dispatch|assert_int_or_pair|common_notes|cast|overload|"
    r"warnings|torch|math|ref|SupportsFloat|TypeVar|NamedTuple|namedtuple|"
    r"contextmanager|deepcopy|override|Literal|Iterator|TypeVarTuple|Unpack|ABC|Iterable|abstractmethod)$"
)


def _public(module, keep=lambda name, obj: True):
    names = set()
    if module is None:
        return names
    for name in dir(module):
        if _NOT_API.match(name):
            continue
        obj = getattr(module, name, None)
        if inspect.ismodule(obj):
            continue
        if keep(name, obj):
            names.add(name)
    return names


def _is_function(name, obj):
    return callable(obj) and not inspect.isclass(obj)


def _classes(name, obj):
    return inspect.isclass(obj)


def _get(root, path):
    for part in path.split(".")[1:]:
        root = getattr(root, part, None)
        if root is None:
            return None
    return root


def areas(torch):
    """[(area, torch's module path, sourcegrad's names, torch's names or None)]."""
    sg = sourcegrad
    made = []

    def add(area, path, keep, ours_module=None):
        ours = _public(ours_module if ours_module is not None else _get(sg, path), keep)
        theirs = _public(_get(torch, path), keep) if torch is not None else None
        if theirs is not None:
            ours = ours & theirs  # sourcegrad's own extras are not torch's API
        made.append((area, path, ours, theirs))

    add("tensor functions", "torch", _is_function)
    add(
        "Tensor methods",
        "torch.Tensor",
        lambda n, o: callable(o) or isinstance(o, property),
        sg.Tensor,
    )
    add("autograd", "torch.autograd", lambda n, o: True)
    for area, loss in (("nn layers", False), ("losses", True)):

        def modules(nn, loss=loss):
            return _public(
                nn,
                lambda n, o: (
                    inspect.isclass(o) and issubclass(o, nn.Module) and ("Loss" in n) == loss
                ),
            )

        theirs = modules(torch.nn) if torch is not None else None
        ours = modules(sg.nn)
        made.append((area, "torch.nn", ours & theirs if theirs is not None else ours, theirs))
    add("nn.functional", "torch.nn.functional", _is_function)
    add("optim", "torch.optim", _classes)
    add("lr schedulers", "torch.optim.lr_scheduler", _classes)
    add("data", "torch.utils.data", lambda n, o: "DataPipe" not in n)
    made.append(("save / load", "torch", {"save", "load"}, {"save", "load"}))
    add("forward_ad", "torch.autograd.forward_ad", lambda n, o: True)
    add("func", "torch.func", _is_function)
    add("linalg", "torch.linalg", _is_function)
    add("fft", "torch.fft", _is_function)
    add("special", "torch.special", _is_function)
    add("testing", "torch.testing", _is_function)
    add("jit", "torch.jit", lambda n, o: callable(o))
    add("profiler", "torch.profiler", lambda n, o: callable(o))
    add("nn.utils.parametrize", "torch.nn.utils.parametrize", _is_function)
    add("nn.utils.parametrizations", "torch.nn.utils.parametrizations", _is_function)
    if torch is not None:
        importlib.import_module("torch.nn.utils.prune")  # torch imports it on request only
    add("nn.utils.prune", "torch.nn.utils.prune", lambda n, o: callable(o))
    add("optim.swa_utils", "torch.optim.swa_utils", lambda n, o: callable(o))
    return made


def _names(names):
    return ", ".join(f"`{n}`" for n in sorted(names))


def table(torch) -> str:
    """The markdown table (with torch: what is missing too; without: what is there)."""
    version = torch.__version__.split("+")[0] if torch is not None else None
    rows = [
        "| area | torch | sourcegrad has | not covered"
        + (f" (of torch {version}'s names)" if version else "")
        + " |",
        "|---|---|---|---|",
    ]
    for area, path, ours, theirs in areas(torch):
        if theirs is None:
            rows.append(f"| {area} | `{path}` | {len(ours)} | (needs torch to list) |")
            continue
        missing = theirs - ours
        has = f"{len(ours)} of {len(theirs)}"
        if not ours:
            lacks = "all (not implemented)"
        elif not missing:
            lacks = "none"
        elif len(missing) <= SHORT:
            lacks = _names(missing)
        else:
            lacks = f"{len(missing)} names (`python -m tests.api_table --missing '{area}'`)"
        rows.append(f"| {area} | `{path}` | {has} | {lacks} |")
    return "\n".join(rows)


def readme_table() -> str:
    text = PAGE.read_text()
    return text[text.index(START) + len(START) : text.index(END)].strip()


def write(torch) -> None:
    text = PAGE.read_text()
    head, rest = text.split(START)
    _, tail = rest.split(END)
    PAGE.write_text(f"{head}{START}\n{table(torch)}\n{END}{tail}")


def main(argv):
    import torch

    if argv[:1] == ["--missing"]:
        for area, _, ours, theirs in areas(torch):
            if area == argv[1]:
                print("\n".join(sorted(theirs - ours)))
        return
    write(torch)


if __name__ == "__main__":
    main(sys.argv[1:])
