"""What a rule template's names stand for, and a family's rule written once (`ops.expand`).

A template reads a name as its lambda does when it runs (`registry.template_name`: closure,
module globals, builtins); the compiler inlines it so. `expand` writes a template out per
member of a family: a lambda whose source reads as if written by hand, the same syntax tree
as that hand-written rule (so the same generated code), and the same values when called.
"""

import inspect

import gast
import numpy as np
import pytest

import sourcegrad
from sourcegrad import ops
from sourcegrad.ops import registry
from sourcegrad.ops.expand import expand
from sourcegrad.runtime import unbroadcast

_SCALE = 3.0  # (a global a template reads as the constant it holds)


def _times(k):  # a factory of closures: one rule per k
    return lambda g, ans, x: g * k * _SCALE * x


def test_a_template_name_is_found_where_its_lambda_finds_it():
    rule = _times(2.0)
    assert registry.template_name(rule, "k") == 2.0  # its closure
    assert registry.template_name(rule, "_SCALE") == 3.0  # its module's globals
    assert registry.template_name(rule, "np") is np
    assert registry.template_name(rule, "sum") is sum  # a builtin
    with pytest.raises(NameError):
        registry.template_name(rule, "no_such_name")


def cube(x):
    return x**3


@pytest.fixture
def cube_rule():
    """cube registered with the rule `_times(k)` (3 k x: a deliberate stand-in), unregistered
    at the end."""
    made = []

    def register(k):
        made.append(
            ops.defvjp(
                f"test_rule_templates_cube_{len(made)}",
                cube,
                ops.Spelling("module", f"{__name__}.cube"),
                _times(k),
                kind="elementwise",
            )
        )

    yield register
    for op in made:
        registry.RULES.pop(op.name, None)
    registry._BY_FUNCTION.pop(registry._function_key(cube), None)


def test_the_compiler_reads_a_rules_closure_and_module(cube_rule):
    cube_rule(2.0)

    def f(x):
        return np.sum(cube(x))

    g = sourcegrad.grad(f)
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(g(x), 6.0 * x)
    assert "dx = x * (2.0 * 3.0)" in g.source  # k and _SCALE read as the constants they hold


# A family's rule written once: `score` and `w` stand for a member's parts.
_DENSITY_X = (lambda g, ans, x, loc, scale, score, w: unbroadcast(g * w * score / scale, x),)


def _logistic_score(z):
    return -np.tanh(0.5 * z)


def test_expand_writes_the_rule_out_as_written_by_hand():
    written = expand(
        _DENSITY_X[0],
        "g, ans, x, loc=0.0, scale=1.0",
        "logistic logpdf in x",
        score=lambda z: -np.tanh(0.5 * z),
        z="(x - loc) / scale",
        w=1,  # (a factor 1 drops out of its product)
    )
    by_hand = (
        lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(
            g * -np.tanh(0.5 * ((x - loc) / scale)) / scale, x
        ),
    )[0]
    assert gast.dump(ops.vjp_template(written)) == gast.dump(ops.vjp_template(by_hand))
    source = inspect.getsource(written)
    assert source.startswith("lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * -np.tanh(")
    assert source.rstrip().endswith("# logistic logpdf in x")
    assert "(written out)" in written.__code__.co_filename
    x, g = np.linspace(-1.0, 1.0, 5), np.ones(5)
    np.testing.assert_array_equal(written(g, None, x, 0.5, 2.0), by_hand(g, None, x, 0.5, 2.0))
    np.testing.assert_array_equal(
        written(g, None, x, 0.5, 2.0), g * _logistic_score((x - 0.5) / 2.0) / 2.0
    )


def test_expand_with_w_ans_is_the_pdfs_rule():
    written = expand(
        _DENSITY_X[0], "g, ans, x, loc=0.0, scale=1.0", score="-((x - loc) / scale)", w="ans"
    )
    text = inspect.getsource(written)
    assert "g * ans * -((x - loc) / scale) / scale" in text


def test_expand_refuses_what_it_cannot_write_out():
    with pytest.raises(TypeError, match="no binding"):
        expand(_DENSITY_X[0], "g, ans, x, loc=0.0, scale=1.0", score="x")  # w unbound
    with pytest.raises(NameError, match="unknown names"):
        expand(_DENSITY_X[0], "g, ans, x, loc=0.0, scale=1.0", score="y", w=1)
    with pytest.raises(ValueError, match="reads itself"):
        expand(_DENSITY_X[0], "g, ans, x, loc=0.0, scale=1.0", score="score + 1.0", w=1)
    with pytest.raises(ValueError, match="not a factor"):
        expand(_DENSITY_X[0], "g, ans, x, loc=0.0, scale=1.0", score="w + 1.0", w=1)
