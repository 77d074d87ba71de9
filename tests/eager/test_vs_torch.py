"""The same scenarios on torch and on sourcegrad, compared by what they print.

Each scenario is a script written for torch. It runs twice in this process:
once with the real torch, once with `sourcegrad` installed as `torch` in
`sys.modules` (so `import torch`, `from torch.autograd import Function` and
`import torch.nn.functional as F` all resolve to sourcegrad). Memory addresses
are masked; everything else must be identical, except the last printed digit of a
float, which depends on the CPU (see `same_output`). Skipped when torch is absent.
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

_SUBMODULES = [
    "autograd",
    "autograd.function",
    "autograd.functional",
    "autograd.graph",
    "nn",
    "nn.functional",
    "optim",
]
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


# a number printed on its own (not part of a name such as AddBackward0 or float32)
_NUMBER = re.compile(r"(?<![\w.])(-?(?:\d+\.\d*|\.\d+|\d+)(?:e[+-]?\d+)?)(?![\w.])")


def _last_digit(token):
    """The value of one unit in the last printed digit of a float token ("53.5982" -> 1e-4)."""
    mantissa, _, exponent = token.partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _same_number(a, b):
    if a == b:
        return True
    if not any(c in a + b for c in ".e"):
        return False  # integers (shapes, versions, counts) match exactly
    x, y = float(a), float(b)
    # float32 results and libm calls differ between CPUs in their last bits, which can flip
    # the last printed digit (53.5982 vs 53.5981): allow that digit, and no more
    tolerance = 1.01 * max(_last_digit(a), _last_digit(b)) + 1e-6 * max(abs(x), abs(y))
    return abs(x - y) <= tolerance


def same_output(expected, got):
    """Whether two printouts agree: text exactly, floats up to their last printed digit.

    Where a float differs, the column alignment of a tensor's repr may differ with it,
    so the text between numbers is then compared with runs of spaces collapsed.
    """
    if expected == got:
        return True
    want, have = _NUMBER.split(expected), _NUMBER.split(got)
    if len(want) != len(have):
        return False
    for i, (w, h) in enumerate(zip(want, have)):
        if i % 2:  # a number
            if not _same_number(w, h):
                return False
        elif w.split() != h.split() or w.count("\n") != h.count("\n"):
            return False
    return True


def compare(code):
    expected = run(code, False)
    got = run(code, True)
    if not same_output(expected, got):
        assert got == expected


def test_same_output_allows_only_the_last_printed_digit():
    assert same_output("tensor([53.5981,  1.0000])", "tensor([53.5982,  1.0000])")
    assert same_output("x 0.30000000000000004", "x 0.3000000000000001")
    assert not same_output("tensor([53.5981])", "tensor([53.5983])")
    assert not same_output("tensor([53.5981])", "tensor([53.5981], grad_fn=<AddBackward0>)")
    assert not same_output("shape (2, 3)", "shape (2, 4)")  # integers match exactly
    assert not same_output("AddBackward0", "AddBackward1")
    assert not same_output("1.0000e+05", "1.0002e+05")
    assert same_output("1.0000e+05", "1.0001e+05")


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_reference_scenario(name):
    compare(REFERENCE[name])


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_op(expr):
    compare(PRELUDE + f"show({expr!r})\n")


@pytest.mark.parametrize("name", sorted(SEMANTICS))
def test_semantics(name):
    compare(SEMANTICS[name])
