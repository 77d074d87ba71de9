"""The generated gradients of the benchmark workloads against gradients written by hand.

For each workload of sourcegrad/bench/workloads.py (its small size) the hand-written
gradient kept in generated/hand/ must give the compiled gradient's numbers, and the
compiled gradient's backward pass must take at most 1.3 times as many statements as the
hand-written one's: generated code that reads like what a person writes. The ratios are
printed (`pytest -s`) and quoted in docs/guide/reading-generated-code.md. Statements are counted as Python
parses them (a loop or a branch and each statement inside it), from the first
`# backward` comment on.
"""

import ast
import importlib.util
import pathlib

import numpy as np
import pytest

import sourcegrad
from sourcegrad.bench import workloads

HAND = pathlib.Path(__file__).resolve().parents[3] / "generated" / "hand"
WORKLOADS = ("logreg", "mlp", "rnn", "chain", "spring")
MAX_RATIO = 1.3


def backward_statements(source: str) -> int:
    """How many statements come after the first line that is a `# backward` comment."""
    lines = source.splitlines()
    start = next(i + 1 for i, line in enumerate(lines) if line.strip().startswith("# backward"))
    tree = ast.parse(source)
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt)
        and not isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom))
        and node.lineno > start
    )


def _hand(name):
    path = HAND / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"hand_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = next(v for k, v in vars(module).items() if k.startswith("d") and callable(v))
    return fn, path.read_text()


@pytest.mark.parametrize("name", WORKLOADS)
def test_backward_is_as_short_as_the_hand_written_one(name):
    w = workloads.BY_NAME[name]
    size = w.sizes[0]
    args = workloads.make_args(w, size)
    grad = sourcegrad.grad(w.function(size), wrt=w.wrt)
    got = grad(*args)
    hand, hand_source = _hand(name)
    expected = hand(*args)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
    generated, written = backward_statements(grad.source), backward_statements(hand_source)
    ratio = generated / written
    print(
        f"{name}: generated backward {generated} statements, hand-written {written}: {ratio:.2f}x"
    )
    assert ratio <= MAX_RATIO, grad.source


def test_statements_are_counted_from_the_backward_comment():
    source = (
        "def f(x):\n    y = x\n    # backward\n    for i in range(2):\n"
        "        y = y + 1\n    return y\n"
    )
    assert backward_statements(source) == 3
