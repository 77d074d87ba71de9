"""Regression tests of issue 35's numerical items: a real input whose Python computation turns
complex, std/var where the std is 0, np.real's view of a complex array, and the crashes
(np.prod of a Python float, an item of a list argument changed in place, operator.iadd, a
nested list as data, a tensor-Jacobian product of a (5, 4) -> (5, 4, 3) function, the line
breaker fed a line it does not model, hvp with extra arguments). Each is written as users
write it; gradients are checked against central finite differences in float64 (numpy runs
the function itself, so its semantics decide)."""

import math
import operator
import warnings

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import numeric_grad
from sourcegrad.compiler.emit import linebreak

X = np.array([0.3, -0.7, 1.1])


def close_to_differences(fn, args, wrt=0):
    got = sourcegrad.grad(fn, wrt=wrt)(*args)
    np.testing.assert_allclose(got, numeric_grad(fn, args, wrt), rtol=1e-6, atol=1e-8)
    return got


def complex_differences(fn, z, eps=1e-6):
    """torch's convention, the one sourcegrad follows: dL/dRe z + 1j * dL/dIm z."""
    return (fn(z + eps) - fn(z - eps)) / (2 * eps) + 1j * (fn(z + 1j * eps) - fn(z - 1j * eps)) / (
        2 * eps
    )


# -- 1. a real input with a complex result ------------------------------------------------------


def power(x):
    return x**1.5


def power_of_difference(x):
    y = x - 3.0
    return y**0.5 * 2.0


def power_in_a_branch(x):
    if x > 0:
        y = x**1.5
    else:
        y = -((-x) ** 1.5)
    return y


def power_in_a_loop(x):
    s = 0.0
    for i in range(3):
        s = s + (x - i) ** 1.5
    return s


def power_by_argument(x, p):
    return x**p


def numpy_power(x):
    return np.power(x, 1.5)


def math_power(x):
    return math.pow(x, 1.5)


def scaled_by_data_power(x, d):
    return x * d**0.5


def test_a_negative_python_float_to_a_fractional_power_is_refused_at_its_line():
    with pytest.raises(errors.ComplexValueError) as caught:
        sourcegrad.grad(lambda x: x**1.5)(-2.0)
    assert caught.value.loc.text.strip().startswith("sourcegrad.grad(lambda x: x**1.5)")
    with pytest.raises(errors.ComplexValueError) as caught:
        sourcegrad.grad(power)(-2.0)
    assert caught.value.loc.line == power.__code__.co_firstlineno + 1
    assert "x**1.5" in caught.value.loc.text
    # the same code still serves positive numbers, before and after a refusal, and its fast
    # path (installed by the calls before) checks as the first call does
    gradient = sourcegrad.grad(power)
    for _ in range(3):
        assert gradient(2.0) == pytest.approx(1.5 * 2.0**0.5)
    with pytest.raises(errors.ComplexValueError):
        gradient(-2.0)
    assert gradient(2.0) == pytest.approx(1.5 * 2.0**0.5)
    with pytest.raises(errors.ComplexValueError):
        sourcegrad.value_and_grad(power)(-2.0)
    with pytest.raises(errors.ComplexValueError):
        sourcegrad.jvp(power, (-2.0,), (1.0,))
    with pytest.raises(errors.ComplexValueError):
        sourcegrad.vjp(power)(-2.0)
    with pytest.raises(errors.ComplexValueError):
        sourcegrad.grad(sourcegrad.grad(power))(-2.0)
    assert sourcegrad.grad(sourcegrad.grad(power))(2.0) == pytest.approx(0.75 / 2.0**0.5)


@pytest.mark.parametrize("wrt", [0, 1])
def test_a_variable_exponent_and_a_data_base_are_refused_too(wrt):
    with pytest.raises(errors.ComplexValueError):
        sourcegrad.grad(power_by_argument, wrt=wrt)(-2.0, 1.5)
    close_to_differences(power_by_argument, (2.0, 1.5), wrt)
    with pytest.raises(errors.ComplexValueError):
        sourcegrad.grad(scaled_by_data_power)(1.0, -4.0)
    assert sourcegrad.grad(scaled_by_data_power)(1.0, 4.0) == 2.0


def test_a_base_computed_in_the_function_is_typed_by_its_run_not_by_a_sample():
    # (the sample 1.0 made `x - 3.0` negative, and the function was refused for every input)
    close_to_differences(power_of_difference, (4.0,))
    with pytest.raises(errors.ComplexValueError):
        sourcegrad.grad(power_of_difference)(1.0)
    with pytest.raises(errors.ComplexValueError):
        sourcegrad.grad(power_in_a_loop)(1.0)
    close_to_differences(power_in_a_loop, (5.0,))


def test_a_power_on_a_branch_not_taken_does_not_refuse():
    close_to_differences(power_in_a_branch, (-2.0,))
    close_to_differences(power_in_a_branch, (2.0,))


def test_numpy_values_and_np_power_give_numpys_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(sourcegrad.grad(power)(np.float64(-2.0)))
        assert np.isnan(sourcegrad.grad(power)(np.array(-2.0)))
        assert np.isnan(sourcegrad.grad(lambda x: np.sum(x**1.5))(np.array([-2.0]))[0])
        value_and_gradient = sourcegrad.value_and_grad(numpy_power)
        for x in (4.0, 4.0, 4.0, -2.0):  # (the last through the fast path)
            value, gradient = value_and_gradient(x)
        assert np.isnan(value) and np.isnan(gradient)
        assert not isinstance(gradient, complex)
        assert np.isnan(sourcegrad.vjp(numpy_power)(-2.0)[1](1.0))
        assert np.isnan(sourcegrad.jvp(numpy_power, (-2.0,), (1.0,))[1])
    assert sourcegrad.grad(numpy_power)(4.0) == pytest.approx(3.0)


def test_math_pow_raises_its_value_error_located():
    with pytest.raises(errors.NumpyValueError, match="math domain error") as caught:
        sourcegrad.grad(math_power)(-2.0)
    assert isinstance(caught.value, ValueError)
    assert "math.pow" in caught.value.loc.text
    assert sourcegrad.grad(math_power)(4.0) == pytest.approx(3.0)


def real_of_square(z):
    return np.real(z * z)


def squared_modulus_and_imaginary(z):
    return np.abs(z) ** 2 + np.imag(z) * 3.0


def real_part_scaled(x, c):
    return np.real(c * x) ** 2


def test_a_python_complex_argument_is_differentiated_as_a_complex_array_is():
    z = 0.3 + 0.5j
    for fn in (real_of_square, squared_modulus_and_imaginary):
        got = sourcegrad.grad(fn)(z)
        assert type(got) is complex
        np.testing.assert_allclose(got, complex_differences(fn, z), rtol=1e-6)
        np.testing.assert_allclose(got, sourcegrad.grad(fn)(np.array(z)), rtol=1e-12)
    # as data (not differentiated)
    assert sourcegrad.grad(real_part_scaled)(2.0, 1 + 2j) == pytest.approx(4.0)
    # forward mode with respect to a complex input says so
    with pytest.raises(errors.NonDifferentiableInputError, match="forward mode"):
        sourcegrad.jvp(real_of_square, (z,), (1.0,))


# -- 2. std and var where the std is 0 ------------------------------------------------------------


def std_of(x):
    return np.std(x)


def var_of(x):
    return np.var(x)


def row_stds(x):
    return np.sum(np.std(x, axis=1) * np.array([1.0, 2.0]))


def row_stds_kept(x):
    return np.sum(np.std(x, axis=1, keepdims=True) * np.array([[1.0], [2.0]]))


@pytest.mark.parametrize("values", [[2.0], [2.0, 2.0, 2.0]])
def test_the_std_of_one_value_or_of_equal_values_has_gradient_zero(values):
    x = np.array(values)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no 0 / 0 computed on the way)
        for fn in (std_of, var_of):
            np.testing.assert_array_equal(sourcegrad.grad(fn)(x), np.zeros_like(x))
            np.testing.assert_allclose(numeric_grad(fn, (x,), 0), np.zeros_like(x), atol=1e-9)
            t = np.arange(len(values)) + 1.0
            assert sourcegrad.jvp(fn, (x,), (t,))[1] == 0.0
        # (std's second derivative there is 0 too, as torch's double backward gives it; var's
        # is its constant Hessian)
        np.testing.assert_array_equal(sourcegrad.hvp(std_of)(x, t), np.zeros_like(x))
        gradient, eps = sourcegrad.grad(var_of), 1e-6
        np.testing.assert_allclose(
            sourcegrad.hvp(var_of)(x, t),
            (gradient(x + eps * t) - gradient(x - eps * t)) / (2 * eps),
            atol=1e-8,
        )
        assert sourcegrad.grad(lambda x: x.std())(x)[0] == 0.0


def test_std_by_rows_with_a_constant_row():
    x = np.array([[2.0, 2.0, 2.0], [1.0, 3.0, 4.0]])
    got = close_to_differences(row_stds, (x,))
    np.testing.assert_array_equal(got[0], 0.0)
    close_to_differences(row_stds_kept, (x,))
    # elsewhere the rule is the one it was, to second order
    y = np.array([[0.3, -0.7, 1.1], [1.0, 3.0, 4.0]])
    close_to_differences(row_stds, (y,))
    t = np.ones_like(y) * np.array([[0.2, -0.5, 1.0]])
    eps = 1e-6
    gradient = sourcegrad.grad(row_stds)
    np.testing.assert_allclose(
        sourcegrad.hvp(row_stds)(y, t),
        (gradient(y + eps * t) - gradient(y - eps * t)) / (2 * eps),
        rtol=1e-5,
        atol=1e-7,
    )


def test_a_nan_std_keeps_a_nan_gradient():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(sourcegrad.grad(lambda x: np.std(x, ddof=1))(np.array([2.0]))[0])


# -- 3. np.real of a complex array is a view of it ------------------------------------------------


def real_part_doubled_in_place(z):
    r = np.real(z)
    r *= 2.0
    return np.sum(np.abs(z) ** 2)


def real_attribute_doubled_in_place(z):
    r = z.real
    r *= 2.0
    return np.sum(np.abs(z) ** 2)


def real_part_doubled(z):
    r = np.real(z) * 2.0
    return np.sum(np.abs(z) ** 2 + r * np.imag(z))


@pytest.mark.parametrize("fn", [real_part_doubled_in_place, real_attribute_doubled_in_place])
def test_changing_the_real_part_in_place_is_refused_at_the_update(fn):
    # numpy changes z through the view: the gradient read z's old values ([0.6+1j, ...], not
    # [2.4+1j, ...])
    z = np.array([0.3 + 0.5j, -0.7 + 0.2j, 1.1 - 0.4j])
    with pytest.raises(errors.UnsupportedSyntaxError, match="shares its memory") as caught:
        sourcegrad.grad(fn)(z)
    assert "r *= 2.0" in caught.value.loc.text


def test_the_real_part_as_a_new_value_is_differentiated():
    z = np.array([0.3 + 0.5j, -0.7 + 0.2j, 1.1 - 0.4j])
    got = sourcegrad.grad(real_part_doubled)(z)
    numeric = [
        complex_differences(
            lambda v, i=i: real_part_doubled(np.where(np.arange(3) == i, v, z)), z[i]
        )
        for i in range(3)
    ]
    np.testing.assert_allclose(got, numeric, rtol=1e-6)


# -- 4. crashes -----------------------------------------------------------------------------------


def prod_of_number(s):
    return np.prod(s) * 2.0


def test_np_prod_of_a_python_float():
    assert sourcegrad.grad(prod_of_number)(1.5) == 2.0
    assert sourcegrad.jvp(prod_of_number, (1.5,), (1.0,))[1] == 2.0
    assert sourcegrad.grad(sourcegrad.grad(prod_of_number))(1.5) == 0.0


def double_first_item(p):
    p[0] *= 2.0
    return p[0] * p[1]


def set_first_item(x, p):
    p[0] = 5.0
    return np.sum(x * p[0] * p[1])


def test_an_item_of_a_list_argument_changed_in_place_works_as_in_python():
    assert sourcegrad.grad(double_first_item)([1.5, 2.0]) == [4.0, 3.0]
    p = [np.array([1.5]), np.array([2.0])]
    dp = sourcegrad.grad(lambda p: np.sum(double_first_item(p)))(p)
    np.testing.assert_array_equal(dp, [[4.0], [3.0]])
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(sourcegrad.grad(set_first_item)(x, [1.0, 2.0]), [10.0, 10.0])
    assert sourcegrad.grad(set_first_item, wrt=1)(x, [1.0, 2.0]) == [0.0, 15.0]


def test_an_item_of_a_tuple_argument_assigned_raises_pythons_type_error_located():
    x = np.array([1.0, 2.0])
    with pytest.raises(errors.NumpyTypeError, match="does not support item assignment") as caught:
        sourcegrad.grad(set_first_item, wrt=1)(x, (1.0, 2.0))
    assert isinstance(caught.value, TypeError)
    assert "p[0] = 5.0" in caught.value.loc.text


def in_place_add_assigned(a, x):
    a = operator.iadd(a, x)
    return np.sum(a**2)


def in_place_ops_assigned(x):
    a = np.ones(3)
    a = operator.iadd(a, x * 2.0)
    a = operator.imul(a, x)
    return np.sum(a)


def in_place_add_statement(x):
    a = np.ones(3)
    operator.iadd(a, x)
    return np.sum(a**2)


def test_operator_iadd_assigned_back_is_the_augmented_assignment():
    np.testing.assert_allclose(sourcegrad.grad(in_place_add_assigned, wrt=1)(np.zeros(3), X), 2 * X)
    close_to_differences(in_place_ops_assigned, (X,))


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_operator_iadd_as_a_statement_is_refused_at_its_line():
    with pytest.raises(errors.UnsupportedSyntaxError, match="a \\+= x") as caught:
        sourcegrad.grad(in_place_add_statement)(X)
    assert "operator.iadd(a, x)" in caught.value.loc.text


DATA = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
ROW = [1.0, 2.0, 3.0]


def sum_of_data_times(x, data):
    return np.sum(data @ x)


def row_times(x, row):
    return np.sum(row * x**2) + np.sum(x**2 * row) + np.sum((row + x) ** 2) + np.sum(x**row)


def transposed_data(x, data):
    return np.sum((data.T @ np.ones(2)) * x)


def test_a_nested_list_as_data_is_what_numpy_makes_of_it():
    close_to_differences(sum_of_data_times, (X, DATA))
    close_to_differences(row_times, (np.abs(X) + 0.5, ROW))


def test_an_array_attribute_of_a_list_is_pythons_attribute_error_located():
    with pytest.raises(errors.NumpyAttributeError, match="no attribute 'T'") as caught:
        sourcegrad.grad(transposed_data)(X, DATA)
    assert "data.T" in caught.value.loc.text


def scaled_by_pair(x, p):
    return np.sum(x * p[0] * p[1])


def test_a_tuple_of_floats_is_keyed_by_its_values():
    # (code made for (1.0, 2.0) folded p[0] == 1.0 away, and served (3.0, 4.0) with it)
    x = np.array([1.0, 2.0])
    gradient = sourcegrad.grad(scaled_by_pair)
    np.testing.assert_array_equal(gradient(x, (1.0, 2.0)), [2.0, 2.0])
    np.testing.assert_array_equal(gradient(x, (3.0, 4.0)), [12.0, 12.0])
    np.testing.assert_array_equal(gradient(x, (3.0, 4.0)), [12.0, 12.0])
    _, pullback = sourcegrad.vjp(lambda x, p: x * p[0] * p[1])(x, [1.0, 2.0])
    np.testing.assert_array_equal(pullback(np.ones(2)), [2.0, 2.0])
    _, pullback = sourcegrad.vjp(lambda x, p: x * p[0] * p[1])(x, [3.0, 4.0])
    np.testing.assert_array_equal(pullback(np.ones(2)), [12.0, 12.0])
    assert sourcegrad.jvp(scaled_by_pair, (x, (3.0, 4.0)), (np.ones(2), None))[1] == 24.0


W3 = np.array([1.0, -2.0, 0.5])


def to_three(x):
    return np.stack([x, x**2, np.sin(x)], axis=-1) + x[..., None] * W3


def test_a_tensor_jacobian_product_of_a_5_4_to_5_4_3_function():
    rng = np.random.default_rng(0)
    x, v = rng.normal(size=(5, 4)), rng.normal(size=(5, 4, 3))
    value, pullback = sourcegrad.vjp(to_three)(x)
    assert value.shape == (5, 4, 3)
    np.testing.assert_allclose(
        pullback(v), numeric_grad(lambda x: np.sum(to_three(x) * v), (x,), 0), rtol=1e-6
    )
    np.testing.assert_allclose(
        np.tensordot(v, sourcegrad.jacobian(to_three)(x), axes=3), pullback(v), rtol=1e-10
    )
    # a cotangent shaped like the input (not the output) is refused, saying which is which
    with pytest.raises(errors.ShapeError, match=r"\(5, 4\).*\(5, 4, 3\)"):
        pullback(np.ones((5, 4)))
    with pytest.raises(errors.ShapeError, match="tangent"):
        sourcegrad.jvp(to_three, (x,), (np.ones(4),))


def test_the_line_breaker_returns_a_line_it_cannot_read_unbroken():
    # generated code named a gradient of a lambda `grad_<lambda>`: the breaker met a `lambda`
    # with no `:` and a `)` with no `(` at its depth (KeyError: (2, ')'))
    text = (
        "dx = sourcegrad.ops.vjp_at_run_time('call_gradient', 1, t, grad__lambda_, "
        "grad_<lambda>, x)"
    )
    assert linebreak.split(text, 1) == ["    " + text]
    assert linebreak.split("y = f(" + "a, " * 40 + "b)", 1)[0] == "    y = f("


CUBE_WEIGHTS = np.array([0.2, 0.5, -1.0])
cube = lambda x: np.sum(x**3)  # noqa: E731


def loglike(r, p):
    return -0.5 * r**2 * p + np.log(p)


loglike_lambda = lambda r, q: -0.5 * r**2 * q + np.log(q)  # noqa: E731


def prior_scale(r):
    return 1.0 + r**2


def score_at_scale(r):
    return sourcegrad.grad(loglike_lambda)(r, prior_scale(r))


def test_a_gradient_of_a_lambda_called_inside_differentiated_code():
    weighted = sourcegrad.grad(lambda x: np.sum(sourcegrad.grad(cube)(x) * CUBE_WEIGHTS))
    np.testing.assert_allclose(weighted(X), 6 * X * CUBE_WEIGHTS)
    close_to_differences(score_at_scale, (0.7,))
    # a second derivative through it (a third of loglike_lambda): the pullback differentiated
    # as a traced call of its generated code, against differences of the first
    first = sourcegrad.grad(score_at_scale)
    second = sourcegrad.grad(first)(0.7)
    assert second == pytest.approx((first(0.7 + 1e-5) - first(0.7 - 1e-5)) / 2e-5, rel=1e-6)


def weighted_cube(x, a):
    return np.sum(a * x**3)


def cube_with_default(x, a=3.0):
    return np.sum(a * x**3)


def test_hvp_takes_every_argument_then_the_vector():
    v = np.array([1.0, 0.5, -2.0])
    np.testing.assert_allclose(sourcegrad.hvp(weighted_cube)(X, 2.0, v), 12.0 * X * v)
    np.testing.assert_allclose(sourcegrad.hvp(weighted_cube)(X, v, a=2.0), 12.0 * X * v)
    np.testing.assert_allclose(sourcegrad.hvp(cube_with_default)(X, v), 18.0 * X * v)
    np.testing.assert_allclose(
        sourcegrad.hvp(lambda a, x: weighted_cube(x, a), wrt=1)(2.0, X, v), 12.0 * X * v
    )
    np.testing.assert_allclose(sourcegrad.hessian(weighted_cube)(X, 2.0) @ v, 12.0 * X * v)
    with pytest.raises(errors.CallArgumentsError, match=r"hvp\(weighted_cube\)\(x, a, v\)") as e:
        sourcegrad.hvp(weighted_cube)(X, v)
    assert isinstance(e.value, TypeError)
