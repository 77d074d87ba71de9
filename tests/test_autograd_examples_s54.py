"""autograd's `extend` (primitive, defvjp, defjvp), `test_util.check_grads` and
`misc.fixed_points.fixed_point` as sourcegrad spells them, each checked against autograd
itself on the same inputs (where it is installed) and against central finite differences.
Also: `grad(np.sqrt)` (a numpy ufunc given to grad), a gradient called inside a
differentiated function, and the located refusal of a third derivative through nested
elementwise gradients (autograd's examples/tanh.py)."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.extend import defjvp, defvjp, primitive
from sourcegrad.misc.fixed_points import fixed_point
from sourcegrad.test_util import check_grads

RS = np.random.RandomState(54)
Y = RS.randn(6)


@primitive
def logsumexp(x):
    """In place on a copy: nothing a front end reads."""
    shifted = np.array(x, dtype=float)
    top = np.max(shifted)
    shifted -= top
    return top + np.log(np.sum(np.exp(shifted)))


def logsumexp_vjp(ans, x):
    x_shape = x.shape
    return lambda g: np.full(x_shape, g) * np.exp(x - np.full(x_shape, ans))


defvjp(logsumexp, logsumexp_vjp)
defjvp(logsumexp, lambda t, ans, x: np.sum(t * np.exp(x - ans)))


def example_func(y):
    z = y**2
    return np.sum(logsumexp(z)) + np.sum(np.sin(y))


def _fd_grad(f, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    out = np.zeros_like(x)
    for k in range(x.size):
        step = np.zeros_like(x)
        step.flat[k] = eps
        out.flat[k] = (f(x + step) - f(x - step)) / (2 * eps)
    return out


def _by_hand(y):
    soft = np.exp(y**2 - np.log(np.sum(np.exp(y**2))))
    return 2 * y * soft + np.cos(y)


@pytest.mark.parametrize("front_end", ["source", "trace"])
def test_primitive_with_its_vjp_in_both_front_ends(front_end):
    g = sourcegrad.grad(example_func)
    g.reads_source = front_end == "source"  # False: the trace front end
    got = g(Y)
    np.testing.assert_allclose(got, _by_hand(Y), rtol=1e-12)
    np.testing.assert_allclose(got, _fd_grad(example_func, Y), rtol=1e-6, atol=1e-8)


def test_primitive_gradient_equals_autograds():
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    from autograd.extend import defvjp as a_defvjp
    from autograd.extend import primitive as a_primitive

    @a_primitive
    def a_logsumexp(x):
        top = np.max(x)
        return top + np.log(np.sum(np.exp(x - top)))

    a_defvjp(
        a_logsumexp,
        lambda ans, x: lambda g: anp.full(x.shape, g) * anp.exp(x - anp.full(x.shape, ans)),
    )
    want = autograd.grad(lambda y: anp.sum(a_logsumexp(y**2)) + anp.sum(anp.sin(y)))(Y)
    np.testing.assert_allclose(sourcegrad.grad(example_func)(Y), want, rtol=1e-13)


def test_primitive_jvp_is_the_users():
    v = RS.randn(6)
    value, tangent = sourcegrad.jvp(example_func, (Y,), (v,))
    assert value == pytest.approx(example_func(Y), rel=1e-14)
    assert tangent == pytest.approx(np.dot(_by_hand(Y), v), rel=1e-10)


@primitive
def cube(x):
    return x**3


defvjp(cube, lambda ans, x: lambda g: g * 3 * x**2)


def cubic(x):
    return cube(x) + np.sin(x)


def test_second_derivative_through_a_primitive_differentiates_its_vjp():
    # (the VJP's own code, traced when the backward runs: autograd's "the VJP must itself
    # be differentiable")
    x = 1.3
    got = sourcegrad.grad(sourcegrad.grad(cubic))(x)
    assert got == pytest.approx(6 * x - np.sin(x), rel=1e-12)
    first = sourcegrad.grad(cubic)
    assert got == pytest.approx((first(x + 1e-6) - first(x - 1e-6)) / 2e-6, rel=1e-7)


def test_primitive_refusals_name_the_primitive():
    @primitive
    def no_rule(x):
        return np.sum(x**2)

    with pytest.raises(errors.NoRuleError, match="no_rule: no VJP for its argument 0"):
        sourcegrad.grad(lambda x: no_rule(x) * 2.0)(Y)

    @primitive
    def wrong_shape(x):
        return np.sum(x**2)

    defvjp(wrong_shape, lambda ans, x: lambda g: g * 2 * np.sum(x))
    with pytest.raises(errors.ShapeError, match=r"wrong_shape: its VJP .* shape \(\)"):
        sourcegrad.grad(lambda x: wrong_shape(x) * 2.0)(Y)
    with pytest.raises(errors.UnsupportedSyntaxError, match="sourcegrad.extend.primitive"):
        defvjp(np.sum, lambda ans, x: lambda g: g)


@primitive
def weighted_sum(x, axis=None, scale=1.0):
    return scale * np.sum(x, axis=axis)


defvjp(
    weighted_sum,
    lambda ans, x, axis=None, scale=1.0: (
        lambda g: (
            scale * np.broadcast_to(np.expand_dims(g, axis) if axis is not None else g, x.shape)
        )
    ),
)


def keyword_loss(x):
    return np.sum(np.tanh(weighted_sum(x, axis=0, scale=3.0)))


@pytest.mark.parametrize("front_end", ["source", "trace"])
def test_constant_keywords_are_passed_and_not_differentiated(front_end):
    x = RS.randn(3, 4)
    g = sourcegrad.grad(keyword_loss)
    g.reads_source = front_end == "source"
    np.testing.assert_allclose(g(x), _fd_grad(keyword_loss, x), rtol=1e-6, atol=1e-8)


def test_check_grads_passes_for_right_rules_and_catches_a_wrong_one():
    check_grads(example_func, modes=["rev"])(Y)  # order 2 (autograd's default)
    check_grads(example_func, modes=["fwd"], order=1)(Y)  # the user's JVP
    check_grads(lambda x: np.sin(x) * x**2)(RS.randn(4))  # fwd and rev, order 2

    @primitive
    def off(x):
        return np.sum(x**3)

    defvjp(off, lambda ans, x: lambda g: g * 2 * x**2)  # should be 3 x**2
    with pytest.raises(sourcegrad.api.GradientCheckError, match="differs from central finite"):
        check_grads(off, modes=["rev"], order=1)(RS.randn(3))
    with pytest.raises(TypeError, match="float or a float array"):
        check_grads(lambda x: x, modes=["rev"])(np.arange(3))


def test_autograds_check_grads_agrees_on_the_same_function():
    autograd_check = pytest.importorskip("autograd.test_util").check_grads
    anp = pytest.importorskip("autograd.numpy")
    x = RS.randn(4)
    autograd_check(lambda x: anp.sin(x) * x**2, modes=["rev"])(x)
    check_grads(lambda x: np.sin(x) * x**2, modes=["rev"])(x)


def grad_descent_sqrt_iter(a):
    return lambda x: x - 0.05 * (x**2 - a)


def distance(x, y):
    return np.abs(x - y)


def fp_sqrt(a):
    return fixed_point(grad_descent_sqrt_iter, a, 10.0, distance, 1e-4)


def test_fixed_point_value_and_gradient_equal_autograds():
    fixed_points = pytest.importorskip("autograd.misc.fixed_points")
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")

    def a_sqrt(a):
        return fixed_points.fixed_point(
            grad_descent_sqrt_iter, a, 10.0, lambda x, y: anp.abs(x - y), 1e-4
        )

    assert fp_sqrt(2.0) == a_sqrt(2.0)
    assert sourcegrad.grad(fp_sqrt)(2.0) == pytest.approx(autograd.grad(a_sqrt)(2.0), rel=1e-12)


def test_fixed_point_gradient_is_the_implicit_functions():
    # at x* = x* - 0.05 (x*^2 - a): dx*/da = 1 / (2 x*), and finite differences of the
    # iteration agree to its tolerance
    got = sourcegrad.grad(fp_sqrt)(2.0)
    assert got == pytest.approx(1 / (2 * fp_sqrt(2.0)), rel=1e-3)
    assert got == pytest.approx((fp_sqrt(2.0 + 1e-3) - fp_sqrt(2.0 - 1e-3)) / 2e-3, rel=1e-2)


def test_fixed_point_second_derivative_is_the_implicit_functions():
    # (its VJP, a Python function calling sourcegrad.vjp, traced: the generated code of that
    # vjp runs on traced values). Like autograd's, an implicit-function derivative to the
    # iteration's tolerance, not the derivative of the iterations
    got = sourcegrad.grad(sourcegrad.grad(fp_sqrt))(2.0)
    assert got == pytest.approx(-1 / (4 * 2.0**1.5), rel=5e-3)
    autograd = pytest.importorskip("autograd")
    fixed_points = pytest.importorskip("autograd.misc.fixed_points")
    anp = pytest.importorskip("autograd.numpy")

    def a_sqrt(a):
        return fixed_points.fixed_point(
            grad_descent_sqrt_iter, a, 10.0, lambda x, y: anp.abs(x - y), 1e-4
        )

    assert got == pytest.approx(autograd.grad(autograd.grad(a_sqrt))(2.0), rel=5e-3)


def test_grad_of_a_numpy_ufunc():
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    assert sourcegrad.grad(np.sqrt)(2.0) == pytest.approx(1 / (2 * np.sqrt(2.0)), rel=1e-15)
    assert sourcegrad.grad(sourcegrad.grad(np.sqrt))(2.0) == pytest.approx(
        autograd.grad(autograd.grad(anp.sqrt))(2.0), rel=1e-14
    )
    x = np.linspace(-2, 2, 5)
    np.testing.assert_allclose(
        sourcegrad.elementwise_grad(np.tanh)(x), 1 - np.tanh(x) ** 2, rtol=1e-14
    )


def sin_squared(x):
    return np.sum(np.sin(x) ** 2)


def test_grad_called_inside_a_differentiated_function():
    v = RS.randn(3)

    def directional(x):
        return np.dot(sourcegrad.grad(sin_squared)(x), v)

    x = RS.randn(3)
    got = sourcegrad.grad(directional)(x)
    np.testing.assert_allclose(got, 2 * np.cos(2 * x) * v, rtol=1e-12)
    np.testing.assert_allclose(got, _fd_grad(directional, x), rtol=1e-6, atol=1e-8)


def tanh_by_exp(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def test_third_and_fourth_elementwise_derivatives_equal_autograds():
    # (the second gradient's code holds the first's pullback, run when the backward runs:
    # differentiated again, it is a traced call of the pullback's generated code)
    x = np.linspace(-1, 1, 5)
    egrad = sourcegrad.elementwise_grad
    t = np.tanh(x)
    np.testing.assert_allclose(egrad(egrad(tanh_by_exp))(x), -2 * t * (1 - t**2), atol=1e-12)
    third = egrad(egrad(egrad(tanh_by_exp)))(x)
    np.testing.assert_allclose(third, -2 * (1 - t**2) * (1 - 3 * t**2), rtol=1e-10, atol=1e-12)
    second = egrad(egrad(tanh_by_exp))
    np.testing.assert_allclose(
        third, (second(x + 1e-6) - second(x - 1e-6)) / 2e-6, rtol=1e-6, atol=1e-8
    )
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")

    def a_tanh(x):
        y = anp.exp(-2.0 * x)
        return (1.0 - y) / (1.0 + y)

    a_egrad = autograd.elementwise_grad
    np.testing.assert_allclose(third, a_egrad(a_egrad(a_egrad(a_tanh)))(x), rtol=1e-12)
    # a fourth: the traced pullback's own VJP runs its generated code on traced values
    fourth = egrad(egrad(egrad(egrad(tanh_by_exp))))(x)
    np.testing.assert_allclose(
        fourth, a_egrad(a_egrad(a_egrad(a_egrad(a_tanh))))(x), rtol=1e-10, atol=1e-12
    )
    np.testing.assert_allclose(fourth, 8 * t * (1 - t**2) * (2 - 3 * t**2), rtol=1e-10, atol=1e-12)


def test_a_gradient_inside_differentiated_twice():
    # autograd's negative_binomial_maxlike: Newton's method on r -> grad(loglike)(r, p(r)),
    # with fprime2 = grad(grad(that)): a third derivative through a gradient called inside
    x = np.array([3.0, 7.0, 1.0, 4.0, 9.0])

    def loglike(r, p):
        return np.sum(r * np.log(1 - p) + x * np.log(p) + np.log(r + x))

    def rprime(r):
        return sourcegrad.grad(loglike)(r, np.sum(x) / np.sum(r + x))

    second = sourcegrad.grad(sourcegrad.grad(rprime))
    first = sourcegrad.grad(rprime)
    r = 2.5
    assert second(r) == pytest.approx((first(r + 1e-5) - first(r - 1e-5)) / 2e-5, rel=1e-6)
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")

    def a_loglike(r, p):
        return anp.sum(r * anp.log(1 - p) + x * anp.log(p) + anp.log(r + x))

    def a_rprime(r):
        return autograd.grad(a_loglike)(r, anp.sum(x) / anp.sum(r + x))

    assert second(r) == pytest.approx(autograd.grad(autograd.grad(a_rprime))(r), rel=1e-12)


def sin_times(x):
    return np.sin(x) * x


def through_a_vjp(x):
    value, pullback = sourcegrad.vjp(sin_times)(x)
    return np.sum(pullback(np.cos(x)) ** 2) + np.sum(value)


def test_a_vjp_called_inside_a_differentiated_function_is_traced():
    # (the VJP's generated forward and backward run on the trace's values)
    x = np.array([0.3, -1.1, 0.7])
    got = sourcegrad.grad(through_a_vjp)(x)
    np.testing.assert_allclose(got, _fd_grad(through_a_vjp, x), rtol=1e-6, atol=1e-8)
    p = (np.cos(x) * x + np.sin(x)) * np.cos(x)  # the pullback of cos(x): f'(x) cos(x)
    dp = (2 * np.cos(x) - x * np.sin(x)) * np.cos(x) - (np.cos(x) * x + np.sin(x)) * np.sin(x)
    np.testing.assert_allclose(got, 2 * p * dp + (np.cos(x) * x + np.sin(x)), rtol=1e-12)
