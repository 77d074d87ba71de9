"""Bad input raises a SourcegradError subclass that says what was expected, and where."""

import traceback

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors

# (the source front end's own refusals and messages: not traced instead)
pytestmark = pytest.mark.usefixtures("source_front_end_only")


def returns_vector(x):
    return x * 2.0


def uses_try(x):
    try:
        y = x * 2.0
    except ValueError:
        y = x
    return np.sum(y)


def calls_unknown_numpy(x):
    return np.sum(np.unwrap(x))


def unknown_method(x):
    return x.cumsum().sum()


def undefined_name(x):
    return x * not_defined_anywhere  # noqa: F821


def uses_comprehension(x):
    return sum({v for v in x})


def test_non_scalar_output():
    with pytest.raises(errors.NonScalarOutputError, match=r"scalar output.*shape \(3,\)"):
        sourcegrad.grad(returns_vector)(np.ones(3))


def test_integer_input():
    with pytest.raises(errors.NonDifferentiableInputError, match="integer"):
        sourcegrad.grad(returns_vector)(3)
    with pytest.raises(errors.NonDifferentiableInputError, match="dtype int64"):
        sourcegrad.grad(returns_vector)(np.arange(3))


def test_wrt_out_of_range_or_unknown():
    with pytest.raises(errors.WrtError, match="out of range"):
        sourcegrad.grad(returns_vector, wrt=2)
    with pytest.raises(errors.WrtError, match="names no argument"):
        sourcegrad.grad(returns_vector, wrt="z")
    with pytest.raises(errors.WrtError, match="index or name"):
        sourcegrad.grad(returns_vector, wrt=1.5)


def test_unsupported_syntax_names_construct_file_line_and_text():
    with pytest.raises(errors.UnsupportedSyntaxError) as info:
        sourcegrad.grad(uses_try)(np.ones(2))
    message = str(info.value)
    assert "a try statement" in message
    assert "test_errors.py:" in message
    assert "try:" in message
    with pytest.raises(errors.UnsupportedSyntaxError, match="set comprehension"):
        sourcegrad.grad(uses_comprehension)(np.ones(2))


def test_numpy_function_without_rule_says_how_to_register():
    with pytest.raises(errors.NoRuleError, match=r"np.unwrap.*defvjp") as info:
        sourcegrad.grad(calls_unknown_numpy)(np.ones(3))
    assert info.value.loc.line > 0


def test_method_without_rule():
    with pytest.raises(errors.NoRuleError, match=r"\.cumsum\(\) has no derivative rule"):
        sourcegrad.grad(unknown_method)(np.ones(3))


def test_undefined_name():
    with pytest.raises(errors.NameResolutionError, match="not_defined_anywhere"):
        sourcegrad.grad(undefined_name)(np.ones(3))


def test_function_without_source():
    namespace = {"np": np}
    exec("def made_by_exec(x):\n    return np.sum(x)\n", namespace)
    with pytest.raises(errors.SourceNotFoundError, match="exec") as info:
        sourcegrad.grad(namespace["made_by_exec"])(np.ones(2))
    assert (info.value.loc.file, info.value.loc.line) == ("<string>", 1)
    with pytest.raises(errors.SourceNotFoundError, match="not a Python function"):
        sourcegrad.grad(np.sum)(np.ones(2))
    # (a numpy ufunc with a rule is differentiated, as autograd's grad(np.sin): its output
    # here is not a scalar)
    with pytest.raises(errors.NonScalarOutputError):
        sourcegrad.grad(np.sin)(np.ones(2))
    with pytest.raises(errors.SourceNotFoundError, match="not callable"):
        sourcegrad.grad(3.0)


def test_a_function_typed_at_the_prompt_is_refused_in_one_line(monkeypatch):
    namespace = {"np": np}
    # as the interactive prompt compiles what is typed at it
    exec(compile("def typed(x):\n    return np.sum(x ** 2)\n", "<stdin>", "single"), namespace)
    gradient = sourcegrad.grad(namespace["typed"])  # (made: traced where tracing is on)
    with pytest.raises(errors.SourceNotFoundError) as info:
        gradient(np.ones(2))
    message = str(info.value)
    assert message.startswith("<stdin>:1: typed was typed at the interactive prompt")
    assert "define it in a file or a notebook cell" in message and "\n" not in message
    # no chained exception from inspect shown
    assert info.value.__cause__ is None and info.value.__suppress_context__
    # with the trace front end (the default), it simply works
    monkeypatch.undo()
    np.testing.assert_allclose(sourcegrad.grad(namespace["typed"])(np.ones(2)), [2.0, 2.0])


def test_a_lambda_made_by_eval_is_refused_located():
    fn = eval("lambda x: x * 2.0")  # noqa: S307
    with pytest.raises(errors.SourceNotFoundError, match="exec\\(\\), eval\\(\\)") as info:
        sourcegrad.grad(fn)(1.0)
    assert info.value.loc.file == "<string>" and "a lambda" in str(info.value)


class Counter:
    def __init__(self):
        self.n = 0

    def counted(self, x):
        self.n += 1
        return np.sum(x**2)


COUNTER = Counter()


def counts_a_global_object(x):
    COUNTER.n += 1
    return np.sum(x**2)


@pytest.mark.parametrize(
    "fn, text",
    [(Counter().counted, "self.n += 1"), (counts_a_global_object, "COUNTER.n += 1")],
)
def test_augmented_assignment_to_an_attribute_is_located(fn, text):
    with pytest.raises(errors.UnsupportedSyntaxError, match="augmented assignment to") as info:
        sourcegrad.grad(fn)(np.ones(2))
    assert info.value.loc.file == __file__
    assert open(__file__).read().splitlines()[info.value.loc.line - 1].strip() == text
    assert str(info.value).endswith("\n    " + text)
    assert "keep the value in a local variable" in str(info.value)


def test_all_errors_derive_from_sourcegrad_error():
    for cls in (
        errors.UnsupportedSyntaxError,
        errors.NoRuleError,
        errors.NonScalarOutputError,
        errors.NonDifferentiableInputError,
        errors.WrtError,
        errors.SourceNotFoundError,
        errors.NameResolutionError,
    ):
        assert issubclass(cls, sourcegrad.SourcegradError)


# -- updates in place that numpy would see through another name --------------------------


def iterate_a_view_while_updating(x):
    s = 0.0
    for e in x[:2]:
        x *= 0.9  # numpy changes the view the loop reads too
        s = s + e
    return s + np.sum(x)


def view_read_after_update(x):
    y = x[1:]
    x[0] = 5.0 * x[1]
    return np.sum(y * y) + np.sum(x)


def alias_read_after_update(x):
    y = x.T
    x += 1.0
    return np.sum(y * x)


def list_holds_the_array(x):
    xs = [x, 2.0 * x]
    x *= 3.0
    return np.sum(xs[0] * xs[1])


@pytest.mark.parametrize(
    "fn",
    [
        iterate_a_view_while_updating,
        view_read_after_update,
        alias_read_after_update,
        list_holds_the_array,
    ],
)
def test_in_place_update_seen_through_a_view_is_an_error(fn):
    x = np.array([0.3, -0.2, 0.7])
    with pytest.raises(errors.UnsupportedSyntaxError, match="changed in place") as info:
        sourcegrad.grad(fn)(x)
    assert info.value.loc.file.endswith("test_errors.py") and info.value.loc.text


def update_a_fresh_array(x):
    y = x * 2.0
    y *= 3.0  # nobody else refers to y's array
    z = y[1:]
    z2 = np.sum(z)  # the view is read before the update below
    y += 1.0
    return np.sum(y) + z2


def update_a_float(x):
    y = float(np.sum(x))
    z = y
    y *= 3.0  # floats are values: z keeps its own
    return y + z + np.sum(x**2)


@pytest.mark.parametrize("fn", [update_a_fresh_array, update_a_float])
def test_in_place_updates_nobody_else_sees_are_fine(fn):
    from sourcegrad.api import numeric_grad

    x = np.array([0.3, -0.2, 0.7])
    np.testing.assert_allclose(sourcegrad.grad(fn)(x), numeric_grad(fn, (x,), 0), rtol=1e-6)


def tuple_concatenated(x):
    ys = (np.sin(x),) + (np.cos(x),)
    return np.sum(ys[0] * ys[1])


def list_concatenated(x):
    ys = [np.sin(x)] + [np.cos(x)]
    return np.sum(ys[0] * ys[1])


def list_repeated(x):
    ys = [np.sin(x)] * 2
    return np.sum(ys[0] * ys[1])


def test_tuple_concatenation_is_made_while_compiling():
    """`(a,) + (b,)` of tuples known while compiling is a tuple of both: each item keeps its
    adjoint (it used to be refused)."""
    x = np.array([0.3, -0.2, 0.7])
    np.testing.assert_allclose(sourcegrad.grad(tuple_concatenated)(x), np.cos(2 * x), rtol=1e-12)


@pytest.mark.parametrize("fn", [list_concatenated, list_repeated])
def test_sequence_concatenation_through_which_a_gradient_flows_is_an_error(fn):
    """`+` and `*` of lists and tuples are not arithmetic: their gradient used to be a wrong
    number (the tuple's path dropped) or a crash; it is an error naming the line."""
    with pytest.raises(errors.UnsupportedSyntaxError, match="lists or tuples") as info:
        sourcegrad.grad(fn)(np.array([0.3, -0.2, 0.7]))
    assert info.value.loc.file.endswith("test_errors.py") and "ys = " in info.value.loc.text


# -- a module-level value changed in place inside differentiated code ---------------------

LOG: list = []
TABLE = np.zeros(3)


def logs_to_a_global_list(t):
    s = np.sum(t**2)
    LOG.append(s)
    return s


def writes_a_global_array(x):
    TABLE[0] = np.sum(x)
    return np.sum(x * TABLE)


def adds_at_a_global_array(x):
    np.add.at(TABLE, 0, np.sum(x))
    return np.sum(x * TABLE)


def calls_a_helper_that_logs(t):
    return logs_to_a_global_list(t) * 2.0


def local_read_before_it_is_assigned(x):
    s = s + 1.0  # noqa: F821
    return np.sum(x) * s


@pytest.mark.parametrize(
    "fn, line, what",
    [
        (logs_to_a_global_list, "LOG.append(s)", "'LOG' is a module-level list"),
        (calls_a_helper_that_logs, "LOG.append(s)", "'LOG' is a module-level list"),
        (writes_a_global_array, "TABLE[0] = np.sum(x)", "'TABLE' is a module-level ndarray"),
        (
            adds_at_a_global_array,
            "np.add.at(TABLE, 0, np.sum(x))",
            "'TABLE' is a module-level ndarray",
        ),
    ],
)
def test_changing_a_module_level_value_says_so_located(fn, line, what):
    """`LOG.append(t)` on a global list used to say that a local was read before it was
    assigned: it names the global, what is wrong, and what to write instead, at the line."""
    with pytest.raises(errors.UnsupportedSyntaxError) as info:
        sourcegrad.grad(fn)(np.array([0.3, -0.7, 1.1]))
    exc = info.value
    assert exc.loc.file.endswith("test_errors.py") and exc.loc.text.strip() == line
    message = str(exc)
    assert f"test_errors.py:{exc.loc.line}: {what}: differentiated code cannot change it" in message
    assert "has_aux=True" in message and "read before" not in message
    assert message.endswith(line)
    assert LOG == [] and not TABLE.any()


def test_a_local_read_before_its_assignment_still_says_so():
    with pytest.raises(errors.NameResolutionError, match="'s' is read before it is assigned"):
        sourcegrad.grad(local_read_before_it_is_assigned)(np.ones(2))
