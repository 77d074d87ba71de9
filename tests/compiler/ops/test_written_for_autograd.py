"""Forms that numerical code written for HIPS autograd uses (issue 40), in the compiler: each
against central finite differences (gradient, JVP, Hessian-vector product: `check_all`), and
where torch has the operation, its gradient against torch's.

Complex values follow torch's convention (ops/complex_values.py): the gradient of a real loss
L of a complex z is dL/dRe(z) + 1j dL/dIm(z); the functions below reach complex values from
real inputs, so finite differences check them.
"""

import functools

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import numeric_grad
from tests.compiler.fd_check import check_all

try:
    import scipy.integrate
    import scipy.linalg
    import scipy.special as special
    import scipy.stats as scipy_stats
except ImportError:  # (scipy is optional: its cases skip)
    special = scipy_stats = None

R = np.random.default_rng(40)
M34 = R.normal(size=(3, 4))
M43 = R.normal(size=(4, 3))
T234 = R.normal(size=(2, 3, 4))
V5 = R.normal(size=5)
W43 = R.normal(size=(4, 3))


def _complex(a):
    return a + 1j * np.cos(a)


# --- matrix norms (every ord numpy has), and complex norms ----------------------------------------

MATRIX_ORDS = ["nuc", 2, -2, 1, -1, np.inf, -np.inf]


@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
def test_matrix_norms(ord):
    def norm(a):
        return np.linalg.norm(a, ord)

    def over_axes(a):  # the matrices along axes (2, 0), kept dimensions
        return np.sum(
            np.linalg.norm(a, ord, axis=(2, 0), keepdims=True) * np.arange(1.0, 4.0)[:, None]
        )

    check_all(norm, M34)
    check_all(over_axes, T234)


@pytest.mark.parametrize("ord", [None, "fro", *MATRIX_ORDS], ids=str)
def test_norms_of_complex_matrices(ord):
    def norm(a):
        return np.linalg.norm(_complex(a), ord) ** 2

    check_all(norm, M34)


@pytest.mark.parametrize("ord", [None, 1, np.inf, 3, 0.5], ids=str)
def test_norms_of_complex_vectors(ord):
    def norm(a):
        return np.sum(np.linalg.norm(_complex(a), ord, axis=-1) * np.arange(1.0, 4.0))

    check_all(norm, M34)


@pytest.mark.parametrize("ord", [None, "nuc", 2, 1, np.inf], ids=str)
def test_complex_norms_have_torchs_gradient(ord):
    torch = pytest.importorskip("torch")
    z = M34 + 1j * R.normal(size=(3, 4))

    def norm(re, im):
        return np.linalg.norm(re + 1j * im, ord)

    d_re, d_im = sourcegrad.grad(norm, wrt=(0, 1))(z.real.copy(), z.imag.copy())
    expected = torch.tensor(z, requires_grad=True)
    torch.linalg.norm(expected, ord).backward()
    np.testing.assert_allclose(d_re + 1j * d_im, expected.grad.numpy(), rtol=1e-10, atol=1e-12)


# --- np.linalg.svd of complex matrices -----------------------------------------------------------


def svd_values(a):
    return np.sum(np.linalg.svd(_complex(a), compute_uv=False) ** 3)


def svd_phase_invariant(a):
    u, s, vh = np.linalg.svd(_complex(a), full_matrices=False)
    return np.sum(np.abs(u) ** 2 * W43) + np.sum(np.abs(vh) ** 2) * 0.5 + np.sum(s**2)


def svd_reconstruction(a):
    u, s, vh = np.linalg.svd(_complex(a), full_matrices=False)
    return np.sum(np.real((u * s) @ vh) * W43)


@pytest.mark.parametrize("f", [svd_values, svd_phase_invariant, svd_reconstruction])
def test_svd_of_complex_matrices(f):
    check_all(f, M43)


def test_complex_svd_has_torchs_gradient():
    torch = pytest.importorskip("torch")
    z = M43 + 1j * R.normal(size=(4, 3))

    def loss(re, im):
        u, s, vh = np.linalg.svd(re + 1j * im, full_matrices=False)
        return np.sum(np.abs(u) ** 2 * W43) + np.sum(np.abs(vh) ** 2) + np.sum(s**3)

    d_re, d_im = sourcegrad.grad(loss, wrt=(0, 1))(z.real.copy(), z.imag.copy())
    expected = torch.tensor(z, requires_grad=True)
    u, s, vh = torch.linalg.svd(expected, full_matrices=False)
    w = torch.tensor(W43)
    ((u.abs() ** 2 * w).sum() + (vh.abs() ** 2).sum() + (s**3).sum()).backward()
    np.testing.assert_allclose(d_re + 1j * d_im, expected.grad.numpy(), rtol=1e-10, atol=1e-12)


def svd_phase_dependent(a):
    u, s, vh = np.linalg.svd(_complex(a), full_matrices=False)
    return np.sum(np.real(u) * W43)


def test_a_loss_depending_on_singular_vector_phases_is_refused():
    with pytest.raises(errors.NoRuleError, match="e\\^\\{i phi\\}"):
        sourcegrad.grad(svd_phase_dependent)(M43)


# --- var, std, min, max and scipy.special.erf / erfc of complex values ------------------------


def var_of_complex(a):
    return np.var(_complex(a)) + np.sum(np.var(_complex(a) * 1j, axis=0, ddof=1))


def std_of_complex(a):
    return np.sum(np.std(_complex(a), axis=1, keepdims=True) * np.arange(1.0, 4.0)[:, None])


def min_max_of_complex(a):  # numpy orders complex numbers by real, then imaginary part
    z = _complex(a)
    return np.abs(np.min(z)) + np.sum(np.abs(np.max(z, axis=0)) ** 2)


def erf_of_complex(a):
    return np.sum(np.abs(special.erf(0.5 * _complex(a))) ** 2)


def erfc_of_complex(a):
    return np.sum(np.real(special.erfc(0.5 * _complex(a)) * (1 + 2j)))


@pytest.mark.parametrize(
    "f", [var_of_complex, std_of_complex, min_max_of_complex, erf_of_complex, erfc_of_complex]
)
def test_reductions_and_special_functions_of_complex_values(f):
    if special is None and "erf" in f.__name__:
        pytest.skip("scipy is not installed")
    check_all(f, M34)


@pytest.mark.parametrize("name", ["var", "std"])
def test_complex_var_and_std_have_torchs_gradient(name):
    torch = pytest.importorskip("torch")
    z = M34 + 1j * R.normal(size=(3, 4))
    reduce = getattr(np, name)

    def loss(re, im):
        return np.sum(reduce(re + 1j * im, axis=1, ddof=1) * np.arange(1.0, 4.0))

    d_re, d_im = sourcegrad.grad(loss, wrt=(0, 1))(z.real.copy(), z.imag.copy())
    expected = torch.tensor(z, requires_grad=True)
    weights = torch.arange(1.0, 4.0, dtype=torch.float64)
    (getattr(torch, name)(expected, dim=1, correction=1) * weights).sum().backward()
    np.testing.assert_allclose(d_re + 1j * d_im, expected.grad.numpy(), rtol=1e-10, atol=1e-12)


# --- np.kron of any rank, np.cross along any axes, np.append, stacking lists built at run time --

KRON = R.normal(size=(2, 3, 2))
B22 = R.normal(size=(2, 2))


def kron_3d_2d(a):
    return np.sum(np.kron(a, B22 * a[0, 0, 0]) ** 2)


def kron_of_ranks_0_and_3(a):
    return np.sum(np.kron(a[0, 0, 0], a) * np.arange(12.0).reshape(2, 3, 2))


def cross_along_first_axes(c):
    return np.sum(np.cross(c, c**2 + 1.0, axisa=0, axisb=0, axisc=0) ** 2)


def cross_along_mixed_axes(c):
    return np.sum(
        np.cross(c.T, c**2 + 1.0, axisa=1, axisb=0, axisc=0) * np.arange(12.0).reshape(3, 4)
    )


def append_flattened(c):
    return np.sum(np.append(c, c[0] * 2) ** 2 * np.arange(16.0))


def append_along_an_axis(c):
    return np.sum(np.append(c, c[:1] * 2, axis=0) ** 3)


def vstack_of_appended_rows(c):
    rows = []
    for i in range(3):
        rows.append(c[i] * (i + 1.0))
    return np.sum(np.vstack(rows) ** 2 * np.arange(12.0).reshape(3, 4))


def hstack_of_a_list(c):
    parts = [c * 2.0]
    parts.append(c**2)
    return np.sum(np.hstack(parts) * np.arange(24.0).reshape(3, 8))


def column_stack_of_a_list(c):
    columns = [c[0] * 1.0, c[1] * c[2]]
    return np.sum(np.column_stack(columns) ** 2 * np.arange(8.0).reshape(4, 2))


def dstack_of_a_list(c):
    layers = [c * 1.0, np.sin(c)]
    return np.sum(np.dstack(layers) ** 2 * np.arange(24.0).reshape(3, 4, 2))


def int64_casts(c):  # the casts carry no gradient (piecewise constant), as int(x) does
    n = np.int64(c.shape[0])
    k = np.int64(np.abs(c[0, 0]) * 0.0 + 1.0)
    return np.sum(c) * n + np.sum(c[k])


@pytest.mark.parametrize(
    "f, x",
    [
        (kron_3d_2d, KRON),
        (kron_of_ranks_0_and_3, KRON),
        (cross_along_first_axes, M34),
        (cross_along_mixed_axes, M34),
        (append_flattened, M34),
        (append_along_an_axis, M34),
        (vstack_of_appended_rows, M34),
        (hstack_of_a_list, M34),
        (column_stack_of_a_list, M34),
        (dstack_of_a_list, M34),
        (int64_casts, M34),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_numpy_functions(f, x):
    check_all(f, x)


@pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated")
def test_row_stack_of_a_list():
    def row_stack_of_a_list(c):
        rows = [c[0] * 1.0, c[1] * c[2]]
        return np.sum(np.row_stack(rows) ** 2 * np.arange(8.0).reshape(2, 4))

    if not hasattr(np, "row_stack"):
        pytest.skip("numpy has no row_stack")
    check_all(row_stack_of_a_list, M34)


def test_kron_matches_torch():
    torch = pytest.importorskip("torch")
    b = R.normal(size=(3, 1, 2))
    d_a, d_b = sourcegrad.grad(lambda a, b: np.sum(np.kron(a, b) ** 2), wrt=(0, 1))(KRON, b)
    ta, tb = torch.tensor(KRON, requires_grad=True), torch.tensor(b, requires_grad=True)
    (torch.kron(ta, tb) ** 2).sum().backward()
    np.testing.assert_allclose(d_a, ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(d_b, tb.grad.numpy(), rtol=1e-12)


# --- the modified Bessel functions where they grow fast: relative error per element ----------

BESSEL_X = np.array([1e-8, 0.2, 2.0, 20.0, 100.0, 300.0, 700.0, -3.0, -60.0, -650.0])


def _bessel_derivatives():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40

    def scaled(order):
        return lambda x: mpmath.diff(lambda t: mpmath.besseli(order, t) * mpmath.exp(-abs(t)), x)

    return {
        "i0": lambda x: mpmath.besseli(1, x),
        "i1": lambda x: mpmath.diff(lambda t: mpmath.besseli(1, t), x),
        "i0e": scaled(0),
        "i1e": scaled(1),
    }, mpmath


@pytest.mark.parametrize("name", ["i0", "i1", "i0e", "i1e"])
def test_bessel_rules_are_accurate_element_by_element(name):
    if special is None:
        pytest.skip("scipy is not installed")
    reference, mpmath = _bessel_derivatives()
    fn = getattr(special, name)

    def f(x):
        return np.sum(fn(x))

    ours = sourcegrad.grad(f)(BESSEL_X)
    for x, value in zip(BESSEL_X, ours):
        exact = reference[name](mpmath.mpf(float(x)))
        assert abs(float((value - exact) / exact)) < 1e-13, (name, x, value, exact)


def test_i1_gradient_is_inf_not_nan_where_i0_and_i1_overflow():
    if special is None:
        pytest.skip("scipy is not installed")

    def f(x):
        return np.sum(special.i1(x))

    with np.errstate(over="ignore"):
        g = sourcegrad.grad(f)(np.array([710.0, -712.0, 5.0]))
    assert np.isposinf(g[:2]).all() and np.isfinite(g[2])


# --- scipy.linalg.solve_banded ---------------------------------------------------------------

AB = R.uniform(-0.5, 0.5, size=(4, 6))
AB[1] += 3.0  # (l, u) = (2, 1): the diagonal is row u = 1


def solve_banded_in_both(ab, b):
    return np.sum(scipy.linalg.solve_banded((2, 1), ab, b) ** 2 * np.arange(1.0, 7.0)[:, None])


def test_solve_banded():
    if special is None:
        pytest.skip("scipy is not installed")
    b = R.normal(size=(6, 2))
    check_all(solve_banded_in_both, AB, b)
    check_all(lambda b, ab: solve_banded_in_both(ab, b), b, AB)


# --- tuple(...) and list(...) of differentiated sequences ------------------------------------

M33 = R.normal(size=(3, 3))


def tuple_of_svd_unpacked(a):
    u, s, vh = tuple(np.linalg.svd(a))
    return np.sum(s) + np.sum(u**2 * a)


def tuple_of_svd_indexed(a):
    parts = tuple(np.linalg.svd(a))
    return np.sum(parts[1] ** 2)


def tuple_of_rows(a):
    rows = tuple(a)
    return np.sum(rows[0] * rows[2])


def list_of_a_list_built_at_run_time(a):
    xs = []
    for i in range(3):
        xs.append(a[i] * i)
    ys = list(xs)
    ys.append(a[0])
    return np.sum(np.stack(ys) ** 2)


def tuple_of_a_list_display(a):
    pair = tuple([a, a * 2])
    return np.sum(pair[1] ** 2)


@pytest.mark.parametrize(
    "f",
    [
        tuple_of_svd_unpacked,
        tuple_of_svd_indexed,
        tuple_of_rows,
        list_of_a_list_built_at_run_time,
        tuple_of_a_list_display,
    ],
)
def test_tuple_and_list_of_differentiated_sequences(f):
    check_all(f, M33)


# --- np.r_ and np.c_ -----------------------------------------------------------------------------

C32 = R.normal(size=(3, 2))


def r_of_two(a):
    return np.sum(np.r_[a, a * 2] ** 2 * np.arange(6.0)[:, None])


def r_of_one(a):
    return np.sum(np.r_[a] * C32)


def r_with_a_constant(a):
    return np.sum(np.r_[a, C32, a] ** 3)


def r_with_ranges(v):
    return np.sum(np.r_[v, 1:4, 0.5, 0:1:3j] ** 2 * np.arange(12.0))


def c_of_matrices_and_a_vector(a):
    return np.sum(np.c_[a, C32, a[:, 0]] ** 2 * np.arange(5.0))


def c_of_vectors(v):
    return np.sum(np.c_[v, v**2] ** 2 * np.arange(2.0))


@pytest.mark.parametrize(
    "f, x",
    [
        (r_of_two, C32),
        (r_of_one, C32),
        (r_with_a_constant, C32),
        (r_with_ranges, R.normal(size=5)),
        (c_of_matrices_and_a_vector, C32),
        (c_of_vectors, R.normal(size=4)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_index_tricks(f, x):
    check_all(f, x)


def r_with_a_directive(a):
    return np.sum(np.r_["0,2", a, a])


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_a_string_directive_is_refused_where_it_is_written():
    with pytest.raises(errors.UnsupportedSyntaxError, match="string directive") as info:
        sourcegrad.grad(r_with_a_directive)(C32)
    assert info.value.loc is not None and "np.r_" in str(info.value)


def test_a_string_directive_traced_is_refused_where_numpy_reads_the_values():
    with pytest.raises(errors.TraceEscapeError) as info:
        sourcegrad.grad(r_with_a_directive)(C32)
    assert "np.r_" in str(info.value)


# --- functools.partial and a distribution's method as values -------------------------------


def _scaled(x, y, z=1.0):
    return x * y + z


GLOBAL_PARTIAL = functools.partial(_scaled, y=2.0)


def partial_made_here(a):
    f = functools.partial(_scaled, y=3.0, z=0.5)
    return np.sum(f(a) ** 2)


def partial_from_a_global(a):
    return np.sum(GLOBAL_PARTIAL(a, z=a) ** 2)


def partial_of_a_numpy_function(a):
    column_sums = functools.partial(np.sum, axis=0)
    return np.sum(column_sums(a**2) * np.arange(3.0))


def partial_of_a_lambda(a):
    cube = functools.partial(lambda x, k: x**k, k=3)
    return np.sum(cube(a))


def _apply(fn, x):
    return fn(x)


def partial_passed_on(a):
    return np.sum(_apply(functools.partial(_scaled, y=a), a))


def distribution_method_as_a_value(a):
    pdf = scipy_stats.norm.pdf
    return np.sum(pdf(a, 0.5, 2.0))


def distribution_method_passed_on(a):
    return np.sum(_apply(scipy_stats.norm.logpdf, a))


@pytest.mark.parametrize(
    "f",
    [
        partial_made_here,
        partial_from_a_global,
        partial_of_a_numpy_function,
        partial_of_a_lambda,
        partial_passed_on,
        distribution_method_as_a_value,
        distribution_method_passed_on,
    ],
)
def test_function_values(f):
    if scipy_stats is None and "distribution" in f.__name__:
        pytest.skip("scipy is not installed")
    check_all(f, M33)


# --- an output of one element, and a Python complex argument ---------------------------------


def one_element(w):
    return np.sum(w**2, keepdims=True).reshape(1)


def one_element_matrix(w):
    return np.tanh(np.outer(w[:1], w[1:2]))


def test_an_output_of_one_element_is_differentiated_as_its_element():
    w = R.normal(size=3)
    check_all(one_element, w)
    value, grad = sourcegrad.value_and_grad(one_element_matrix)(w)
    assert value.shape == (1, 1)  # (the value as the function returns it)
    np.testing.assert_allclose(grad[:2], [w[1], w[0]] / np.cosh(w[0] * w[1]) ** 2)
    assert grad[2] == 0.0


def abs_of_scaled(a, c):
    return np.sum(np.abs(a * c) ** 2)


def test_a_python_complex_argument_gets_torchs_gradient():
    c = 1.0 + 2.0j
    grad = sourcegrad.grad(abs_of_scaled, wrt=1)(M33, c)
    assert isinstance(grad, complex)
    assert abs(grad - 2 * c * np.sum(M33**2)) < 1e-12


# --- scipy.integrate.odeint: the adjoint ODE, with the compiled VJP of the user's dynamics ------


def dynamics(y, t, arg1, arg2):  # (autograd's test of odeint)
    return -np.sqrt(t) - y + arg1 - np.mean((y + arg2) ** 2)


def dynamics_time_first(t, y, rate):
    return -rate * y * np.cos(t)


ODE_T = np.linspace(0.1, 0.2, 4)
ODE_W = R.normal(size=(4, 3))


def odeint_loss(y0, t, arg1, arg2):  # (finite differences of a solve need tight tolerances)
    ys = scipy.integrate.odeint(dynamics, y0, t, args=(arg1, arg2), rtol=1e-11, atol=1e-11)
    return np.sum(ys * ODE_W)


def odeint_positional_args(y0, t, arg1, arg2):
    ys = scipy.integrate.odeint(dynamics, y0, t, (arg1, arg2), rtol=1e-11, atol=1e-11)
    return np.sum(ys**2 * ODE_W)


def odeint_time_first(y0, rate):
    ys = scipy.integrate.odeint(
        dynamics_time_first, y0, ODE_T, args=(rate,), tfirst=True, rtol=1e-11, atol=1e-11
    )
    return np.sum(ys * ODE_W)


def _ode_arguments():
    if special is None:
        pytest.skip("scipy is not installed")
    r = np.random.default_rng(7)
    return (r.normal(size=3), ODE_T, r.normal(size=3), r.normal(size=3))


@pytest.mark.parametrize("f", [odeint_loss, odeint_positional_args])
@pytest.mark.parametrize("wrt", [0, 1, 2, 3], ids=["y0", "t", "arg1", "arg2"])
def test_odeint_in_both_modes(f, wrt):
    args = _ode_arguments()
    gradient = sourcegrad.grad(f, wrt=wrt)(*args)
    # (the differences of a solve to 1e-11 are good to about 1e-5)
    np.testing.assert_allclose(gradient, numeric_grad(f, args, wrt), rtol=1e-4, atol=1e-6)
    tangents = [None] * 4
    tangents[wrt] = np.random.default_rng(wrt).normal(size=np.shape(args[wrt]))
    _, tangent = sourcegrad.jvp(f, args, tangents)
    np.testing.assert_allclose(tangent, np.sum(gradient * tangents[wrt]), rtol=1e-6)


def test_odeint_with_time_first_and_a_python_float_argument():
    if special is None:
        pytest.skip("scipy is not installed")
    args = (np.random.default_rng(8).normal(size=3), 0.7)
    for wrt in (0, 1):
        gradient = sourcegrad.grad(odeint_time_first, wrt=wrt)(*args)
        np.testing.assert_allclose(
            gradient, numeric_grad(odeint_time_first, args, wrt), rtol=1e-4, atol=1e-6
        )
    assert isinstance(sourcegrad.grad(odeint_time_first, wrt=1)(*args), float)


def odeint_of_a_lambda(y0):
    return np.sum(scipy.integrate.odeint(lambda y, t: -y, y0, ODE_T))


def test_odeint_of_a_lambda_is_refused_where_it_is_called():
    if special is None:
        pytest.skip("scipy is not installed")
    with pytest.raises(errors.UnsupportedSyntaxError, match="module level") as info:
        sourcegrad.grad(odeint_of_a_lambda)(np.ones(3))
    assert "odeint_of_a_lambda" in str(info.value) or "lambda y, t" in str(info.value)


def test_a_second_derivative_through_odeint_is_refused():
    args = _ode_arguments()
    with pytest.raises(errors.NoRuleError, match="second derivative through scipy_odeint"):
        sourcegrad.hvp(odeint_loss)(*args, np.ones(3))


# --- np.select with a float default (choices and conditions as lists built at run time too) ----


def select_with_a_float_default(x):
    return np.sum(np.select([x < 0, x > 0.5], [x**2, np.sin(x)], default=0.5) ** 2)


def select_of_lists_built_at_run_time(x):
    conditions, choices = [], []
    for k in range(2):
        conditions.append(x > 0.3 * k)
        choices.append(x * (k + 1.0))
    return np.sum(np.select(conditions, choices, 1.5) * np.arange(1.0, 5.0))


@pytest.mark.parametrize("f", [select_with_a_float_default, select_of_lists_built_at_run_time])
def test_select(f):
    check_all(f, M34)
