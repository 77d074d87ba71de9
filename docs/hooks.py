"""MkDocs hook: fill the API reference's generated tables from the package as it is.

Takes a page's markdown and returns it with each placeholder comment replaced:

* `<!-- api: eager -->`: the eager `import sourcegrad as torch` surface (every name of
  `sourcegrad.eager.__all__` and `save`/`load`), grouped as PyTorch's reference groups the
  `torch` namespace; a name no group claims lands in "Other", so nothing is left out;
* `<!-- api: tensor-methods -->`: the methods and properties of `sourcegrad.Tensor`;
* `<!-- api: module sourcegrad.nn -->`: a table of that module's public names;
* `<!-- api: cli -->`: the `--help` text of `sourcegrad` and each subcommand.

A table row is a name, its signature where Python can give one, and the first line of its
docstring (most eager functions have none: they do what the torch function of the same
name does, which the table says). Read at build time, so the tables cannot fall behind.
"""

from __future__ import annotations

import html
import inspect
import os
import re
import sys
import types

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ANNOTATION_QUOTES = re.compile(r"(: |-> )'([^']*)'")
PLACEHOLDER = re.compile(r"<!--\s*api:\s*(?P<what>[\w-]+)(?:\s+(?P<arg>[\w.]+))?\s*-->")

# PyTorch's grouping of the torch namespace (pytorch.org/docs/stable/torch.html), by name.
EAGER_GROUPS = [
    (
        "Tensors",
        "is_tensor is_floating_point is_complex is_nonzero numel set_default_dtype "
        "get_default_dtype set_printoptions promote_types can_cast result_type finfo "
        "iinfo",
    ),
    (
        "Creation ops",
        "tensor as_tensor asarray from_numpy zeros zeros_like ones ones_like "
        "arange linspace logspace eye empty empty_like full full_like",
    ),
    (
        "Indexing, slicing, joining, mutating ops",
        "cat concat concatenate chunk tensor_split dstack hstack vstack row_stack column_stack "
        "gather index_select masked_select masked_fill movedim moveaxis narrow nonzero argwhere "
        "permute reshape select split squeeze stack swapaxes swapdims t take take_along_dim "
        "transpose unbind unsqueeze where",
    ),
    (
        "Random sampling",
        "Generator default_generator seed manual_seed initial_seed "
        "get_rng_state set_rng_state bernoulli multinomial normal rand rand_like "
        "randint randint_like randn randn_like randperm",
    ),
    ("Serialization", "save load"),
    (
        "Locally disabling gradient computation",
        "no_grad enable_grad set_grad_enabled "
        "is_grad_enabled inference_mode "
        "is_inference_mode_enabled",
    ),
    ("Math operations: pointwise", None),  # the rest of eager.tensor_math, filled below
    (
        "Math operations: reduction",
        "argmax argmin amax amin max min logsumexp mean nansum "
        "norm prod std sum var all any count_nonzero unique",
    ),
    (
        "Math operations: comparison",
        "allclose argsort eq equal ge greater_equal gt greater "
        "isclose isfinite isinf isnan le less_equal lt less "
        "maximum minimum fmax fmin ne not_equal sort topk",
    ),
    (
        "Math operations: other",
        "atleast_1d atleast_2d atleast_3d broadcast_tensors "
        "broadcast_to clone cumprod cumsum diag diagonal flatten "
        "unflatten flip fliplr flipud ravel repeat_interleave roll tile "
        "trace tril triu softmax log_softmax",
    ),
    ("Math operations: BLAS and LAPACK", "addmm bmm dot ger inner matmul mm mv outer vdot"),
    (
        "Data types, devices, sizes",
        "dtype float16 float32 float64 half float double bfloat16 "
        "int8 int16 int32 int64 uint8 short int long bool complex64 "
        "complex128 cfloat cdouble device Size Tensor",
    ),
    ("Constants", "e pi inf nan newaxis"),
]


def on_config(config):
    # the checkout these docs belong to, ahead of any installed sourcegrad, as mkdocstrings'
    # `paths: ["."]` reads it (mkdocs restores sys.path after importing this file, so here)
    if CHECKOUT not in sys.path:
        sys.path.insert(0, CHECKOUT)
    return config


def on_page_markdown(markdown, page, config, files):
    return PLACEHOLDER.sub(lambda m: _expand(m.group("what"), m.group("arg")), markdown)


def _expand(what, arg):
    if what == "eager":
        return _eager()
    if what == "tensor-methods":
        return _tensor_methods()
    if what == "module":
        return _module_table(arg)
    if what == "cli":
        return _cli_help()
    raise ValueError(f"unknown api placeholder {what!r}")


def _summary(obj):
    doc = inspect.getdoc(obj) if not isinstance(obj, (int, float, str, type(None))) else None
    if not doc or (isinstance(obj, type) and obj.__doc__ is None):
        return ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ")
    return first if len(first) <= 160 else first[:157].rsplit(" ", 1)[0] + " ..."


def _signature(obj):
    if (
        not callable(obj)
        or isinstance(obj, type)
        and (not _is_public_class(obj) or issubclass(obj, BaseException))
    ):
        return ""
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    return ANNOTATION_QUOTES.sub(r"\1\2", text)  # postponed annotations print as strings


def _is_public_class(cls):
    return cls.__module__.startswith("sourcegrad")


def _cell(text):
    return html.escape(text).replace("|", "\\|")


def _table(rows, torch_prefix=None):
    head = "| name | signature | what it is |\n|---|---|---|\n"
    lines = []
    for name, obj in rows:
        summary = _summary(obj)
        if not summary and torch_prefix:
            summary = f"as `{torch_prefix}{name}`"
        if isinstance(obj, (int, float)):
            summary = summary or repr(obj)
        sig = _signature(obj)
        sig_cell = f"<code>{_cell(sig)}</code>" if sig else ""
        lines.append(f"| `{name}` | {sig_cell} | {_cell(summary)} |")
    return head + "\n".join(lines) + "\n"


def _eager():
    import sourcegrad
    from sourcegrad import eager

    names = list(eager.__all__) + ["save", "load"]
    claimed = {}
    for title, members in EAGER_GROUPS:
        for name in (members or "").split():
            if name in names:
                claimed.setdefault(name, title)
    pointwise = [
        n
        for n in names
        if n not in claimed
        and getattr(getattr(sourcegrad, n), "__module__", "") == "sourcegrad.eager.tensor_math"
    ]
    for name in pointwise:
        claimed[name] = "Math operations: pointwise"
    out = []
    for title, _ in EAGER_GROUPS + [("Other", None)]:
        rows = [(n, getattr(sourcegrad, n)) for n in names if claimed.get(n, "Other") == title]
        if rows:
            out.append(
                f"### {title}\n\n"
                + _table(sorted(rows, key=lambda r: r[0].lower()), torch_prefix="torch.")
            )
    return "\n".join(out)


def _tensor_methods():
    from sourcegrad import Tensor

    rows = []
    for name in sorted(dir(Tensor), key=str.lower):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(Tensor, name)
        obj = attr.fget if isinstance(attr, property) else getattr(Tensor, name)
        rows.append((name, obj))
    return _table(rows, torch_prefix="torch.Tensor.")


def _module_table(path):
    import importlib

    module = importlib.import_module(path)
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    rows = []
    for name in names:
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType):
            continue
        if getattr(obj, "__module__", path).split(".")[0] not in ("sourcegrad", "builtins"):
            continue  # re-exported from numpy, typing, ...
        rows.append((name, obj))
    torch_path = path.replace("sourcegrad", "torch", 1) + "."
    return _table(sorted(rows, key=lambda r: r[0].lower()), torch_prefix=torch_path)


def _cli_help():
    import argparse
    import contextlib
    import io

    from sourcegrad import cli
    from sourcegrad.bench.runner import parse_args as bench_parse_args

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "88"  # argparse wraps to the terminal's width: fix it
    try:
        parser = cli.build_parser()
        texts = [("sourcegrad --help", parser.format_help())]
        for action in parser._actions:  # argparse keeps subparsers here, no public getter
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    if name != "bench":
                        texts.append((f"sourcegrad {name} --help", sub.format_help()))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.suppress(SystemExit):
            bench_parse_args(["--help"])  # bench's own parser prints its help and exits
        texts.append(("sourcegrad bench --help", printed.getvalue()))
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(f"```text\n$ {cmd}\n{text.rstrip()}\n```\n" for cmd, text in texts)
