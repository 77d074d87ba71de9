"""Generated code's long lines, broken as black breaks them (sourcegrad/compiler/emit/linebreak.py).

The breaks are checked three ways: a few statements against the lines black prints for
them (written out here); many statements built at random against black itself, where
black is installed; and every golden in generated/ and the generated gradient of every
benchmark workload: no code line longer than 88 characters.
"""

import pathlib
import random

import pytest

import sourcegrad
from sourcegrad.bench import workloads
from sourcegrad.compiler.emit import linebreak

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "text, depth, expected",
    [
        ("x = f(a, b)", 1, ["    x = f(a, b)"]),
        (
            "d_x2_part_plus_array_unscaled = np.multiply(d_c_plus_sin_x2, x2_part_plus_array,"
            " out=x2_part_plus_array)",
            1,
            [
                "    d_x2_part_plus_array_unscaled = np.multiply(",
                "        d_c_plus_sin_x2, x2_part_plus_array, out=x2_part_plus_array",
                "    )",
            ],
        ),
        (
            "d_weights = tensordot_grad(d_tensordot_of_the_second_layer, rec2_result_1,"
            " x1_part_3_minus_x2_and_more, 0, 1)",
            3,
            [
                "            d_weights = tensordot_grad(",
                "                d_tensordot_of_the_second_layer,",
                "                rec2_result_1,",
                "                x1_part_3_minus_x2_and_more,",
                "                0,",
                "                1,",
                "            )",
            ],
        ),
        (
            "dx = dx_unscaled_first_contribution * (math.log(2.0) / math.log(10.0))"
            " + dx_second_contribution_long",
            1,
            [
                "    dx = (",
                "        dx_unscaled_first_contribution * (math.log(2.0) / math.log(10.0))",
                "        + dx_second_contribution_long",
                "    )",
            ],
        ),
        (
            "from sourcegrad.runtime import add_adjoints, last_writes, list_append, prod_grad,"
            " setitem",
            0,
            [
                "from sourcegrad.runtime import (",
                "    add_adjoints,",
                "    last_writes,",
                "    list_append,",
                "    prod_grad,",
                "    setitem,",
                ")",
            ],
        ),
        (
            "def dloss_with_a_long_name_dw(weights_of_the_first_layer, biases_of_the_first_layer,"
            " inputs):",
            0,
            [
                "def dloss_with_a_long_name_dw(",
                "    weights_of_the_first_layer, biases_of_the_first_layer, inputs",
                "):",
            ],
        ),
        (
            "return d_weights_of_the_first_layer, d_biases_of_the_first_layer,"
            " d_weights_of_layer_two",
            1,
            [
                "    return (",
                "        d_weights_of_the_first_layer,",
                "        d_biases_of_the_first_layer,",
                "        d_weights_of_layer_two,",
                "    )",
            ],
        ),
    ],
)
def test_statements_break_where_black_breaks_them(text, depth, expected):
    assert linebreak.split(text, depth) == expected


_NAMES = ["a", "d_h", "exp_neg_y_X_w", "one_plus_exp", "W_T", "d_W_plus_b_rows", "sum_exp_z_of"]


def _expression(rng, depth=0):
    r = rng.random()
    if depth > 3 or r < 0.25:
        return rng.choice(_NAMES + ["1.0", "2", "np.pi", "x[i]", "y.T", "z.shape[0]"])
    if r < 0.5:
        op = rng.choice(["+", "-", "*", "/", "@", "<", "and", "%"])
        return f"{_expression(rng, depth + 1)} {op} {_expression(rng, depth + 1)}"
    if r < 0.75:
        function = rng.choice(["np.multiply", "np.sum", "f", "unbroadcast", "x.dot", "a.sum(0).T"])
        args = [_expression(rng, depth + 1) for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.3:
            args.append(f"out={rng.choice(_NAMES)}")
        return f"{function}({', '.join(args)})"
    if r < 0.85:
        return f"({_expression(rng, depth + 1)}, {_expression(rng, depth + 1)})"
    if r < 0.9:
        return f"-{_expression(rng, depth + 1)}"
    return f"[{', '.join(_expression(rng, depth + 1) for _ in range(rng.randint(1, 3)))}]"


def _statement(rng):
    name, value = rng.choice(_NAMES), _expression(rng)
    return rng.choice(
        [
            f"{name} = {value}",
            f"{name} += {value}",
            f"return {value}, {_expression(rng)}",
            value,
            f"{name}[i] = {value}",
            f"while {value}:",
            f"x, y = {value}",
        ]
    )


def _black(text, depth, black):
    """The lines black prints for `text` at indentation level `depth`."""
    mode = black.Mode(
        line_length=88, string_normalization=False, target_versions={black.TargetVersion.PY310}
    )
    body = text + ("\n" + "    " * (depth + 1) + "pass" if text.endswith(":") else "")
    wrapper = ["def f():"] + ["    " * d + "for i in x:" for d in range(1, depth)]
    source = "\n".join(wrapper[:depth] + ["    " * depth + line for line in body.split("\n")])
    lines = black.format_str(source + "\n", mode=mode).rstrip("\n").split("\n")[depth:]
    return lines[:-1] if text.endswith(":") else lines


def test_random_statements_break_as_black_breaks_them():
    black = pytest.importorskip("black")
    rng = random.Random(26)
    checked = 0
    while checked < 150:
        text, depth = _statement(rng), rng.randint(0, 3)
        if len(text) + 4 * depth <= linebreak.MAX_LINE or len(text) > 300:
            continue
        if "**" in text:  # (black also hugs simple powers: spacing, not breaking)
            continue
        assert linebreak.split(text, depth) == _black(text, depth, black), text
        checked += 1


def _long_lines(source):
    """Code lines over 88 characters (a comment naming a long path may be longer)."""
    return [
        line
        for line in source.splitlines()
        if len(line) > linebreak.MAX_LINE and not line.lstrip().startswith("#")
    ]


def test_goldens_have_no_line_over_88_characters():
    goldens = sorted((ROOT / "generated").glob("*.py"))
    assert goldens
    for path in goldens:
        assert not _long_lines(path.read_text()), path


@pytest.mark.parametrize("name", [w.name for w in workloads.WORKLOADS])
def test_workload_gradients_have_no_line_over_88_characters(name):
    w = workloads.BY_NAME[name]
    for size in w.quick:
        grad = sourcegrad.grad(w.function(size), wrt=w.wrt)
        source = grad.compile(workloads.make_args(w, size)).source
        assert not _long_lines(source), source


def test_a_long_call_in_generated_code_is_broken_and_still_runs():
    import numpy as np

    def f(first_input_with_a_long_name, second_input_with_a_long_name, third_one):
        return np.sum(
            np.hypot(first_input_with_a_long_name, second_input_with_a_long_name) * third_one
        )

    args = (np.array([1.0, 2.0]), np.array([3.0, -1.0]), np.array([0.5, 2.0]))
    grad = sourcegrad.grad(f, wrt=(0, 1, 2))
    got = grad(*args)
    source = grad.compile(args).source
    assert not _long_lines(source), source
    assert "def df_dfirst_input_with_a_long_name_dsecond_input_with_a_long_name_dthird_one(\n" in (
        source
    )
    h = np.hypot(*args[:2])
    np.testing.assert_allclose(got[0], args[0] / h * args[2])
    np.testing.assert_allclose(got[1], args[1] / h * args[2])
    np.testing.assert_allclose(got[2], h)
