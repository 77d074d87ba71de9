"""The fence: every construct the compiler does not differentiate is rejected before anything
runs, with a SourcegradError naming it and showing file:line and the line's text."""

import importlib.util
import textwrap

import numpy as np
import pytest

import sourcegrad

# (the source front end's own refusals and messages: not traced instead)
pytestmark = pytest.mark.usefixtures("source_front_end_only")

UNSUPPORTED = [
    (
        "try",
        "try:\n    y = x * 2.0\nexcept ValueError:\n    y = x\nreturn y",
        "a try statement",
        "try:",
    ),
    ("with", "with open('f') as f:\n    y = x\nreturn y", "a with statement", "with open"),
    ("raise", "if x > 0:\n    raise ValueError('no')\nreturn x", "a raise statement", "raise"),
    ("del", "y = x * 2.0\ndel y\nreturn x", "a del statement", "del y"),
    ("global", "global G\nG = x\nreturn x", "a global declaration", "global G"),
    (
        "nonlocal",
        "def inner():\n    nonlocal x\n    x = 1.0\n    return x\nreturn inner()",
        "a nonlocal declaration",
        "nonlocal x",
    ),
    ("class", "class A:\n    pass\nreturn x", "a class definition", "class A"),
    ("import", "import math\nreturn x", "an import statement", "import math"),
    ("yield", "yield x\nreturn x", "yield", "yield x"),
    ("attribute assignment", "x.y = 1.0\nreturn x", "assignment to x.y", "x.y = 1.0"),
    ("set comprehension", "return sum({v for v in x})", "a set comprehension", "for v in x"),
    ("dict", "d = {x: 1.0}\nreturn x", "a dict display's keys must be", "{x: 1.0}"),
    ("set", "s = {x}\nreturn x", "a set display", "{x}"),
    ("f-string", "s = f'{x}'\nreturn x", "an f-string", "f'{x}'"),
    ("walrus", "return (y := x * 2.0)", "an assignment expression", ":="),
    (
        "lambda stored in a list",
        "fs = [lambda v: v]\nreturn x",
        "is used as a value",
        "fs = [lambda v: v]",
    ),
    ("membership", "if 1.0 in [x]:\n    return x\nreturn x", "membership", "in [x]"),
    (
        "async for",
        "async def g():\n    pass\nreturn x",
        "an async function definition",
        "async def g",
    ),
    (
        "for else",
        "for i in range(2):\n    x = x * 2.0\nelse:\n    x = x\nreturn x",
        "for ... else",
        "for i in range(2):",
    ),
    (
        "while else",
        "while x < 1.0:\n    x = x * 2.0\nelse:\n    x = x\nreturn x",
        "while ... else",
        "while x < 1.0",
    ),
    ("chained assignment", "a = b = x\nreturn a", "chained assignment", "a = b = x"),
    (
        "a **kwargs parameter in a called function",
        "def inner(**kw):\n    return x\nreturn inner()",
        "**kwargs",
        "return inner()",
    ),
    ("no rule", "return np.sum(np.unwrap(x))", "has no derivative rule", "np.unwrap"),
    ("unknown method", "return x.cumsum().sum()", "has no derivative rule", "x.cumsum"),
    ("data-dependent recursion", "return deep(x)", "recursion", "return deep"),
    ("no return", "y = x * 2.0", "no return statement", "def f(x)"),
    (
        "in-place update a view sees",
        "y = x[1:]\nx *= 2.0\nreturn np.sum(y) + np.sum(x)",
        "changed in place",
        "x *= 2.0",
    ),
]


def load(tmp_path, name, body):
    source = (
        "import numpy as np\n\n\ndef deep(v):\n    return deep(v * 0.5)\n\n\n"
        f"def f(x):\n{textwrap.indent(body, '    ')}\n"
    )
    path = tmp_path / f"{name.replace(' ', '_').replace('-', '_')}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f, str(path)


@pytest.mark.parametrize(
    "construct, body, message, text", UNSUPPORTED, ids=[u[0] for u in UNSUPPORTED]
)
def test_rejected_with_file_line_and_text(tmp_path, construct, body, message, text):
    fn, path = load(tmp_path, construct, body)
    with pytest.raises(sourcegrad.SourcegradError) as info:
        sourcegrad.grad(fn)(np.ones(3))
    rendered = str(info.value)
    assert message in rendered
    assert path in rendered and ":" in rendered.split(path)[1][:2]
    assert text in rendered


def test_rejected_before_anything_runs(tmp_path):
    fn, _ = load(
        tmp_path,
        "side_effect",
        "print('ran')\ntry:\n    y = x\nexcept Exception:\n    y = x\nreturn y",
    )
    calls = []
    import builtins

    original = builtins.print
    builtins.print = calls.append  # (a builtin: a Python spy would be inlined, and refused)
    try:
        with pytest.raises(sourcegrad.UnsupportedSyntaxError):
            sourcegrad.grad(fn)(np.ones(2))
    finally:
        builtins.print = original
    assert calls == []
