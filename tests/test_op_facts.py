"""The facts of an operation live on its registry entry (issue 36), and they are true.

* `math`, `libm`, `inline`, `product`: each entry that has one is what the field says (a numpy
  ufunc, a function of Python's math module of that name, an entry `math_<name>` spelled
  `math.<name>`, ...);
* the passes ask the entries: no module of the compiler (nor the eager mode's elementwise
  ops) keeps a module-level collection of op names, but those listed in `NOT_YET_FIELDS`
  with what they mean; the eager mode names an entry's torch node once (`OpSpec.of`);
* the issue's metric: `tanh` is named in the code of at most two modules outside ops/, nn/
  and bench/.
"""

from __future__ import annotations

import ast
import math
import pathlib
import re

import numpy as np
import pytest

from sourcegrad.compiler.backends import numba_vector_math
from sourcegrad.ops import RULES, spelled

ROOT = pathlib.Path(__file__).resolve().parent.parent / "sourcegrad"


def _entries(field):
    return [op for op in RULES.values() if getattr(op, field)]


def test_math_entries_are_numpy_ufuncs_with_a_math_function_and_its_entry():
    assert {op.name for op in _entries("math")} >= {"exp", "tanh", "arcsin", "arctan2", "absolute"}
    for op in _entries("math"):
        assert op.spelling.kind == "func" and isinstance(op.fn, np.ufunc), op.name
        assert op.fn is getattr(np, op.spelling.text), op.name
        assert callable(getattr(math, op.math)), op.name
        twin = RULES[f"math_{op.math}"]  # the entry of `math.<name>(x)` of Python floats
        assert twin.spelling.kind == "module" and twin.spelling.text == f"math.{op.math}"
        assert twin.fn is getattr(math, op.math) and twin.family == op.family, op.name
        assert (twin.libm, twin.inline) == (op.libm, op.inline), op.name
        assert spelled("module", f"math.{op.math}") is twin
        x = 0.5 if op.math not in ("acosh",) else 1.5
        args = (x,) * op.fn.nin
        assert getattr(math, op.math)(*args) == pytest.approx(float(op.fn(*args)), rel=1e-14)


def test_libm_entries_are_float_ufuncs_and_their_math_function_is_the_same_call():
    assert {op.libm for op in _entries("libm")} >= {"sin", "tanh", "asin", "exp2", "cbrt"}
    for op in _entries("libm"):
        if op.spelling.kind == "module":  # (a `math_<name>` twin: checked above)
            continue
        assert isinstance(op.fn, np.ufunc) and "d" * op.fn.nin + "->d" in op.fn.types, op.name
        assert op.math is None or op.math == op.libm, op.name  # (math's is libm's function)
    # numba_vector_math's candidates are the entries' libm functions of one argument
    one = {op.libm for op in _entries("libm") if len(op.params) == 1}
    assert set(numba_vector_math.names()) == one
    assert set(numba_vector_math.ufuncs().values()) <= one


def test_inline_entries_are_elementwise_and_products_are_binary():
    for op in _entries("inline"):
        assert op.kind == "elementwise", op.name
    assert {op.name for op in _entries("product")} == {"matmul", "matmul_op", "dot"}
    for op in _entries("product"):
        assert len(op.params) == 2 and op.linear == "multi", op.name


def test_spelled_finds_the_entry_of_generated_codes_calls():
    assert spelled("func", "tanh") is RULES["tanh"]
    assert spelled("module", "math.asin") is RULES["math_asin"]
    assert spelled("func", "no_such_function") is None


# Module-level collections of op names still kept by a pass, each what it means: a fact not yet
# a field of the entries (issue 36 follow-ups), or one about something else than an op.
NOT_YET_FIELDS = {
    "compiler/analysis/calls.py": {
        "_SHAPED_LIKE": "ops whose result is shaped like an operand",
        "_SHAPE_FUNCTIONS": "the shape functions by name (Rule.shape's values)",
    },
    "compiler/analysis/checks.py": {"_COPY_KEYWORD": "ops taking numpy's copy= keyword"},
    "compiler/backends/numba_backend.py": {"_REDUCTIONS": "reductions numba compiles"},
    "compiler/analysis/value_shapes.py": {
        "_AFFINE": "negation, addition, subtraction and multiplication: the arithmetic an "
        "unknown number's known offset and scale follow (`x[i:i + 3]` moves as i)"
    },
    "compiler/backends/numba_masks.py": {
        "_RUNTIME_ARITY": "runtime helpers' names in generated text, by their arity",
        "_RUNTIME_MASK_AT": "the position of those helpers' mask argument",
    },
    "compiler/derive/row_blocks.py": {
        "_SUMS": "reductions over the rows whose blocks add up",
        "_TRANSPOSES": "transposes of a row block",
    },
    "compiler/derive/template_replay.py": {"_LOOKED_THROUGH": "ops a replay looks through"},
    "compiler/derive/templates.py": {
        "_COMPARES": "gast comparison nodes -> their ops (as registry.COMPARISONS)",
        "_MASK_OPS": "gast `&`/`|` nodes -> their ops",
    },
    "compiler/emit/codegen.py": {"_ALLOCATIONS": "numpy's allocating functions"},
    "compiler/facts.py": {"POWER_KINDS": "Python's `**` and math.pow, for their error"},
    "compiler/frontend/statements.py": {"_LISTS": "the list-building ops"},
    "compiler/frontend/values.py": {
        "VARARG_METHODS": "array methods taking *args",
        "ATTRS": "array attributes -> their ops",
        "PY_OPS": "Python's operators -> their ops (as registry.OPERATORS)",
        "BUILTIN_REDUCTIONS": "min/max builtins -> their ops",
    },
    "compiler/optimize/algebra.py": {"_SUM_OPERATORS": "addition and subtraction"},
    "compiler/optimize/cleanup.py": {"_NOT_MERGED": "ops common-subexpression elimination keeps"},
    "compiler/optimize/updates.py": {"_FRESH": "ops making a new array an update may write into"},
    "compiler/optimize/indices.py": {"_COMPARE": "comparisons and their negations"},
    "compiler/specialise/list_operands.py": {"ARRAY_FAMILIES": "ops taking a list as an array"},
    "compiler/trace/recorder.py": {
        "_SIGNATURE_FACTS": "attributes a trace records as facts of its signature",
        "_SHAPE_FACTS": "those of them the data decide for a selection by a mask (guarded)",
        "_IN_PLACE": "Python's augmented operators -> their ops",
    },
    "eager/elementwise.py": {"_REFUSED": "torch kernels' refused dtypes (torch's, not an op's)"},
}


def _strings(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    if isinstance(node, ast.Dict):
        return [s for k in node.keys if k is not None for s in _strings(k)] + [
            s for v in node.values for s in _strings(v)
        ]
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("frozenset", "set"):
        return [s for a in node.args for s in _strings(a)]
    return []


def _op_name_collections(path):
    """{name: the op names} of the module-level assignments of two op names or more."""
    found = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            names = [s for s in _strings(node.value) if s in RULES]
            if len(names) >= 2 and isinstance(target, ast.Name):
                found[target.id] = names
    return found


def test_passes_keep_no_lists_of_op_names_but_those_listed():
    paths = sorted((ROOT / "compiler").rglob("*.py")) + [ROOT / "eager" / "elementwise.py"]
    found = {}
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        for name in _op_name_collections(path):
            found.setdefault(rel, set()).add(name)
    listed = {rel: set(names) for rel, names in NOT_YET_FIELDS.items()}
    assert found == listed, "a new list of op names: make it a field of the entries (issue 36)"


def test_backends_name_no_libm_function():
    """numba's fusion and vector math ask the entries (`libm`, `math`, `inline`)."""
    names = {n for op in RULES.values() for n in (op.math, op.libm) if n}
    for path in sorted((ROOT / "compiler" / "backends").glob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and id(node) not in docstrings:
                assert node.value not in names, f"{path.name}:{node.lineno}: {node.value!r}"


def test_the_eager_mode_names_an_entrys_own_torch_node_once():
    # (an OpSpec may name an entry of an optional library, registered once it is imported:
    # matrix_exp's scipy_expm)
    import scipy.linalg  # noqa: F401

    from sourcegrad.ops.registry import load_optional

    load_optional()
    for path in sorted((ROOT / "eager").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "OpSpec"
                and len(node.args) >= 2
                and all(isinstance(a, ast.Constant) for a in node.args[:2])
            ):
                torch = RULES[node.args[1].value].torch
                assert torch is None or torch.node != node.args[0].value, (
                    f"{path.name}:{node.lineno}: OpSpec.of({node.args[1].value!r}) names it"
                )


def _names_in_code(path, word):
    """Does `word` occur in the module's code: a name, an attribute, a string that is not a
    docstring or a bare string statement (comments are not in the tree)?"""
    tree = ast.parse(path.read_text())
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    pattern = re.compile(rf"\b{word}\b")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings and pattern.search(node.value):
                return True
        elif isinstance(node, ast.Name) and node.id == word:
            return True
        elif isinstance(node, ast.Attribute) and node.attr == word:
            return True
        elif isinstance(node, (ast.FunctionDef, ast.arg)):
            if getattr(node, "name", None) == word or getattr(node, "arg", None) == word:
                return True
    return False


def test_tanh_is_named_in_at_most_two_modules_outside_the_registry():
    """The issue's metric. The two left, compiled/layers.py (nn.Tanh and GELU's approximate=
    "tanh") and compiled/lowering.py (the lowering of torch.tanh), are torch's names for
    layers and functions, which `sourcegrad.compile` maps to the registry's entries. Like
    nn/ (nn.Tanh), distributions/ is a user of the op (TanhTransform calls x.tanh()), not a
    second definition of it."""
    outside = [
        path.relative_to(ROOT).as_posix()
        for path in sorted(ROOT.rglob("*.py"))
        if path.relative_to(ROOT).parts[0] not in ("ops", "nn", "bench", "distributions")
        and _names_in_code(path, "tanh")
    ]
    assert len(outside) <= 2, outside


def test_complex_is_said_on_the_entry():
    """`complex=True` where an entry is defined gives it the property "complex" (the passes
    and the eager mode refuse a complex value through any other op)."""
    from sourcegrad.ops import has

    assert has("tanh", "complex") and has("matmul_op", "complex") and has("np_real", "complex")
    assert not has("arcsin", "complex") and not has("maximum", "complex")
    assert not has("math_tanh", "complex")  # (an alias says its own properties)
