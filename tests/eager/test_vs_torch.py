"""The same scenarios on torch and on sourcegrad, compared by what they print.

Each scenario is a script written for torch. It runs twice in this process:
once with the real torch, once with `sourcegrad` installed as `torch` in
`sys.modules` (so `import torch`, `from torch.autograd import Function` and
`import torch.nn.functional as F` all resolve to sourcegrad). Memory addresses
are masked; everything else must be identical. Skipped when torch is absent.
"""
import contextlib
import io
import re
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

import sourcegrad  # noqa: E402
import sourcegrad.autograd.function  # noqa: E402,F401
import sourcegrad.autograd.functional  # noqa: E402,F401
import sourcegrad.autograd.graph  # noqa: E402,F401
import sourcegrad.nn.functional  # noqa: E402,F401

from .op_scenarios import EXPRESSIONS, PRELUDE, SEMANTICS  # noqa: E402
from .reference_scenarios import REFERENCE  # noqa: E402

_SUBMODULES = ["autograd", "autograd.function", "autograd.functional", "autograd.graph", "nn",
               "nn.functional", "optim"]
_ADDRESS = re.compile(r"0x[0-9a-f]+")


@contextlib.contextmanager
def _as_torch():
    """Make `import torch` give sourcegrad while the block runs."""
    names = ["torch"] + ["torch." + s for s in _SUBMODULES]
    saved = {n: sys.modules.get(n) for n in names}
    sys.modules["torch"] = sourcegrad
    for sub in _SUBMODULES:
        sys.modules["torch." + sub] = sys.modules["sourcegrad." + sub]
    try:
        yield
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def run(code, with_sourcegrad):
    out = io.StringIO()
    context = _as_torch() if with_sourcegrad else contextlib.nullcontext()
    with context, contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(code, "<scenario>", "exec"), {"__name__": "__main__"})
        except Exception as e:  # noqa: BLE001 - the error itself is part of what is compared
            print(f"raised {type(e).__name__}: {e}")
    return _ADDRESS.sub("0x...", out.getvalue())


def compare(code):
    expected = run(code, False)
    got = run(code, True)
    assert got == expected


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_reference_scenario(name):
    compare(REFERENCE[name])


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_op(expr):
    compare(PRELUDE + f"show({expr!r})\n")


@pytest.mark.parametrize("name", sorted(SEMANTICS))
def test_semantics(name):
    compare(SEMANTICS[name])
