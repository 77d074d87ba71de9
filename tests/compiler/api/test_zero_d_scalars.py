"""Float64 scalars computed as Python floats (sourcegrad.api.as_floats, dispatch.float_entry):
a gradient called with 0-d float64 arrays or np.float64 runs the code generated for Python
floats, and the code computing on numpy scalars (the exact path) wherever the float code
raises or returns a gradient that is not finite. These tests check the numbers against that
exact path and against central finite differences, the types returned, the edge cases where
Python floats and numpy differ (division by zero, log(0), overflow, a fractional power of a
negative number, np.errstate), and what is left on the exact path (float32, integer
arrays, value_and_grad, code that asks a value its type)."""

import math
import sys
import warnings

import numpy as np
import pytest

import sourcegrad
from sourcegrad import api
from sourcegrad.api import as_floats, numeric_grad


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    """Every test compiles afresh (compiled code is otherwise shared across Gradients)."""
    monkeypatch.setattr(api.memory_caches, "COMPILED", {})


def exact(fn, wrt, args, monkeypatch):
    """The gradient as the exact path computes it (no float twin), with its warnings."""
    with monkeypatch.context() as patched:
        patched.setattr(as_floats, "twin", lambda *a: None)
        g = sourcegrad.grad(fn, wrt=wrt)
        return _called(g, args)


def _called(g, args):
    """(the result or the exception's type and text, the warnings' texts) of two calls (the
    second through the installed entry)."""
    outcomes = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = g(*args)
            except Exception as exc:  # (compared with the exact path's)
                result = (type(exc), str(exc))
        outcomes.append((result, sorted(str(w.message) for w in caught)))
    assert _same(outcomes[0][0], outcomes[1][0]) and outcomes[0][1] == outcomes[1][1]
    return outcomes[1]


def _same(a, b, rtol=0.0):
    """The same gradients: types, dtypes, shapes, and values (nan as nan, inf's sign)."""
    if isinstance(a, tuple) and isinstance(b, tuple) and a and isinstance(a[0], type):
        return a == b  # an exception: its type and text
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            type(a) is type(b) and len(a) == len(b) and all(_same(x, y, rtol) for x, y in zip(a, b))
        )
    if type(a) is not type(b) or np.shape(a) != np.shape(b):
        return False
    if getattr(a, "dtype", None) != getattr(b, "dtype", None):
        return False
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y or abs(x - y) <= rtol * max(abs(x), abs(y))


def uses_twin(g) -> bool:
    """Whether g's installed entry is a float64-scalar entry (it holds the exact path)."""
    return "_guard_exact" in g._call.__code__.co_freevars


# --- the numbers and the types -------------------------------------------------------------


def scalar_mix(x, y):
    return np.sin(x) * y + np.exp(x * y) / (1.0 + x**2)


def looped(x, y):
    z = x
    for _ in range(3):
        z = np.sin(z) * y + x
    return z * z


def branched(x, y):
    if x > y:
        return np.tanh(x) * y
    return np.log1p(x * x) + y


ZERO_D = (np.array(0.7), np.array(-1.3))


def _type_of_gradient(given):
    """A gradient's type: its input's, a numpy scalar of its dtype for a 0-d array (as
    numpy's ufuncs and reductions give for one)."""
    return given.dtype.type if type(given) is np.ndarray and given.ndim == 0 else type(given)


FLOAT64 = (np.float64(0.7), np.float64(-1.3))
MIXED = (np.array(0.7), -1.3)


@pytest.mark.parametrize("fn", [scalar_mix, looped, branched])
@pytest.mark.parametrize("args", [ZERO_D, FLOAT64, MIXED], ids=["0-d", "np.float64", "mixed"])
def test_gradients_are_the_exact_paths_and_the_finite_differences(fn, args, monkeypatch):
    g = sourcegrad.grad(fn, wrt=(0, 1))
    result, caught = _called(g, args)
    assert uses_twin(g)
    assert caught == []
    expected, _ = exact(fn, (0, 1), args, monkeypatch)
    # (the math module and numpy may round a sine or an exponential differently in the last bits)
    assert _same(result, expected, rtol=1e-12)
    for k, (d, given) in enumerate(zip(result, args)):
        assert type(d) is _type_of_gradient(given)
        assert float(d) == pytest.approx(numeric_grad(fn, args, k), rel=1e-7)


def test_results_are_values_of_their_own_on_every_call():
    g = sourcegrad.grad(lambda_free_product, wrt=(0, 1))
    x, y = np.array(2.0), np.array(3.0)
    first = g(x, y)
    assert uses_twin(g)
    assert type(first[0]) is np.float64 and type(first[1]) is np.float64
    y[()] = 5.0  # (an input changed after the call leaves the gradients given)
    second = g(x, y)
    assert first == (3.0, 2.0) and second == (5.0, 2.0)


def lambda_free_product(x, y):
    return x * y


def test_single_and_one_tuple_wrt():
    x = np.array(0.3)
    single = sourcegrad.grad(scalar_mix)(x, np.array(0.5))
    assert type(single) is np.float64
    g = sourcegrad.grad(scalar_mix, wrt=(0,))
    for _ in range(2):
        one = g(x, np.array(0.5))
        assert type(one) is tuple and len(one) == 1 and float(one[0]) == float(single)
    assert uses_twin(g)


# --- where Python floats and numpy differ: the exact path's numbers, warnings and errors ----


def quotient(x, y):
    return x / y


def logarithm(x, y):
    return np.log(x) * y


def overflowing(x, y):
    return np.exp(x) * y


def squared_product(x, y):
    return (x * y) ** 2


def root(x, y):
    return x**1.5 * y


@pytest.mark.parametrize(
    "fn, args",
    [
        (quotient, (np.array(1.0), np.array(0.0))),  # inf and -inf, a RuntimeWarning
        (quotient, (np.array(0.0), np.array(0.0))),  # nan
        (quotient, (np.float64(1.0), np.float64(0.0))),
        (quotient, (np.array(1.0), 0.0)),  # mixed with a Python float
        (logarithm, (np.array(0.0), np.array(2.0))),  # log(0)
        (logarithm, (np.array(-1.0), np.array(2.0))),  # a math domain error in floats
        (overflowing, (np.array(1000.0), np.array(2.0))),  # exp overflows
        (squared_product, (np.array(1e200), np.array(1e200))),  # a product overflows to inf
        (squared_product, (np.array(np.inf), np.array(1.0))),
        (squared_product, (np.array(np.nan), np.array(1.0))),
        (root, (np.array(-2.0), np.array(1.0))),  # a negative number's fractional power
    ],
)
def test_edge_cases_give_what_the_exact_path_gives(fn, args, monkeypatch):
    g = sourcegrad.grad(fn, wrt=(0, 1))
    result, caught = _called(g, args)
    expected, expected_warnings = exact(fn, (0, 1), args, monkeypatch)
    assert _same(result, expected), (result, expected)
    assert caught == expected_warnings


def test_division_by_zero_gives_inf_with_numpys_warning():
    g = sourcegrad.grad(quotient, wrt=(0, 1))
    for _ in range(2):
        with pytest.warns(RuntimeWarning, match="divide by zero"):
            dx, dy = g(np.array(1.0), np.array(0.0))
        assert type(dx) is np.float64
        assert float(dx) == np.inf and float(dy) == -np.inf
    assert uses_twin(g)


@pytest.mark.parametrize("kind", [np.array, np.float64], ids=["0-d", "np.float64"])
def test_numpys_functions_overflow_and_leave_their_domain_as_numpy_does(kind):
    """Where math's exp or log raises (OverflowError, a domain ValueError), the exact path
    computes numpy's functions of the numpy scalars: inf and nan with numpy's warnings."""
    for fn, args, want, message in [
        (overflowing, (1000.0, 2.0), (np.inf, np.inf), "overflow encountered in exp"),
        (logarithm, (-1.0, 2.0), (-2.0, np.nan), "invalid value encountered in log"),
    ]:
        g = sourcegrad.grad(fn, wrt=(0, 1))
        for _ in range(2):
            with pytest.warns(RuntimeWarning, match=message):
                got = g(*map(kind, args))
            assert all(type(d) is np.float64 for d in got)
            np.testing.assert_array_equal([float(d) for d in got], want)


def test_errstate_raise_raises_numpys_error():
    g = sourcegrad.grad(squared_product, wrt=(0, 1))
    g(np.array(1.0), np.array(2.0))
    assert uses_twin(g)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        g(np.array(1e200), np.array(1e200))
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        sourcegrad.grad(quotient, wrt=(0, 1))(np.array(1.0), np.array(0.0))


def test_a_fractional_power_is_not_computed_on_floats():
    g = sourcegrad.grad(root, wrt=(0, 1))
    g(np.array(2.0), np.array(1.0))
    assert not uses_twin(g)  # (a negative float to the power 0.5 is a complex number)
    with pytest.warns(RuntimeWarning):
        dx, dy = g(np.array(-2.0), np.array(1.0))
    assert math.isnan(float(dx)) and math.isnan(float(dy))


# --- what stays on the exact path ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        (np.array(0.7, dtype=np.float32), np.array(-1.3, dtype=np.float32)),
        (np.float32(0.7), np.float32(-1.3)),
        (np.array(0.7), np.array(-1.3, dtype=np.float32)),
    ],
    ids=["0-d float32", "np.float32", "float64 and float32"],
)
def test_other_dtypes_and_shapes_keep_the_exact_path(args, monkeypatch):
    g = sourcegrad.grad(scalar_mix, wrt=(0, 1))
    result, _ = _called(g, args)
    assert not uses_twin(g)
    expected, _ = exact(scalar_mix, (0, 1), args, monkeypatch)
    assert all(type(r) is _type_of_gradient(a) for r, a in zip(result, args))
    assert all(np.asarray(r).dtype == np.asarray(e).dtype for r, e in zip(result, expected))
    for r, e in zip(result, expected):
        np.testing.assert_array_equal(r, e)


def scaled_by(x, n):
    return np.sin(x) * n


def test_zero_d_int_arrays():
    g = sourcegrad.grad(scaled_by)
    with pytest.raises(sourcegrad.errors.NonDifferentiableInputError):
        g(np.array(1), 2.0)
    n = np.array(3)  # an integer 0-d array beside a float64 one: the exact path
    for _ in range(2):
        d = g(np.array(0.5), n)
        assert type(d) is np.float64
        assert float(d) == pytest.approx(3 * math.cos(0.5), rel=1e-15)
    assert not uses_twin(g)
    ints = sourcegrad.grad(scaled_by)  # a Python int is a static value: the float code
    for _ in range(2):
        d = ints(np.array(0.5), 3)
        assert type(d) is np.float64 and float(d) == pytest.approx(3 * math.cos(0.5), rel=1e-15)
    assert uses_twin(ints)


def doubled_exponential(x, y):
    return np.exp(x * y) * 2.0  # (the exact code's value: a Python float, from math.exp)


@pytest.mark.parametrize("fn", [scalar_mix, doubled_exponential, looped])
@pytest.mark.parametrize("args", [ZERO_D, FLOAT64, MIXED], ids=["0-d", "np.float64", "mixed"])
def test_value_and_grad_returns_the_exact_paths_types(fn, args, monkeypatch):
    vg = sourcegrad.value_and_grad(fn, wrt=(0, 1))
    result, caught = _called(vg, args)
    assert caught == []
    assert uses_twin(vg) == (fn is not looped)  # (a loop's value type may change per call)
    with monkeypatch.context() as patched:
        patched.setattr(as_floats, "twin", lambda *a: None)
        expected, _ = _called(sourcegrad.value_and_grad(fn, wrt=(0, 1)), args)
    assert _same(result, expected, rtol=1e-12)
    assert float(result[0]) == pytest.approx(fn(*map(float, args)), rel=1e-12)
    overflowed, caught = _called(vg, (np.array(800.0), np.array(1.0)) if fn is not looped else args)
    with monkeypatch.context() as patched:
        patched.setattr(as_floats, "twin", lambda *a: None)
        expected = _called(
            sourcegrad.value_and_grad(fn, wrt=(0, 1)),
            (np.array(800.0), np.array(1.0)) if fn is not looped else args,
        )
    assert _same(overflowed, expected[0]) and caught == expected[1]


WEIGHTS32 = np.array([1.5, 0.1], dtype=np.float32)


def reads_a_float32_global(x):
    return np.sum(x * WEIGHTS32)


def calls_numpy_on_floats(x):
    return np.where(x > 0.0, x, 0.0) + np.maximum(x, 0.5)


def test_code_computing_with_numpy_values_keeps_the_exact_path(monkeypatch):
    for fn in (reads_a_float32_global, calls_numpy_on_floats):
        g = sourcegrad.grad(fn)
        result, _ = _called(g, (np.array(0.7),))
        assert not uses_twin(g), fn.__name__
        expected, _ = exact(fn, 0, (np.array(0.7),), monkeypatch)
        assert _same(result, expected)


def asks_its_type(x):
    if isinstance(x, float):
        return x * 3.0
    return x * 2.0


def test_isinstance_of_a_zero_d_array_is_the_arrays():
    """Regression: a 0-d array read as a numpy scalar was a float to isinstance (3.0, where
    the function on a 0-d array has the derivative 2.0)."""
    g = sourcegrad.grad(asks_its_type)
    for _ in range(2):
        assert float(g(np.array(1.0))) == 2.0
        assert g(1.0) == 3.0
        assert float(g(np.float64(1.0))) == 3.0  # (np.float64 is a float)


SCALE = 2.0


def scaled(x):
    return np.sin(x) * SCALE


def test_a_rebound_global_recompiles():
    global SCALE
    g = sourcegrad.grad(scaled)
    x = np.array(0.5)
    assert float(g(x)) == pytest.approx(2.0 * math.cos(0.5), rel=1e-15)
    assert float(g(x)) == pytest.approx(2.0 * math.cos(0.5), rel=1e-15)
    assert uses_twin(g)
    SCALE = 3.0
    try:
        assert float(g(x)) == pytest.approx(3.0 * math.cos(0.5), rel=1e-15)
        assert float(g(x)) == pytest.approx(3.0 * math.cos(0.5), rel=1e-15)
    finally:
        SCALE = 2.0


def test_source_is_the_signatures_code():
    g = sourcegrad.grad(scalar_mix, wrt=(0, 1))
    g(*ZERO_D)
    g(*ZERO_D)
    # (the exact path's code: numpy's functions of numpy scalars, inf or nan where they give it)
    assert "x[()]" in g.source and "np.sin(x)" in g.source and "math." not in g.source


def test_computes_on_floats_refuses_what_floats_may_compute_otherwise():
    def check(body):
        source = "import math\n\n\ndef f(x, y):\n" + body
        namespace: dict = {}
        exec(compile(source, "<test>", "exec"), namespace)
        return as_floats.computes_on_floats(source, namespace["f"])

    assert check("    a = math.sin(x) * y ** 2 / (1.0 + x)\n    return a, -a\n")
    assert check("    s = []\n    for _ in range(3):\n        s.append(x)\n    return s.pop()\n")
    assert not check("    return x ** 0.5\n")  # complex for a negative x
    assert not check("    return x ** y\n")
    assert not check("    return np.sin(x)\n")  # a numpy value
    assert not check("    return W * x\n")  # a global: it could be a float32
    assert not check("    return x % y\n")
    assert not check("    return abs(x)\n")
    assert not check("    return x.real\n")
    assert not check("    return math.fsum([x, y])\n")


# --- numba -------------------------------------------------------------------------------------


def test_numba_backend(monkeypatch):
    pytest.importorskip("numba")
    g = sourcegrad.grad(scalar_mix, wrt=(0, 1), backend="numba")
    result, caught = _called(g, ZERO_D)
    assert uses_twin(g) and caught == []
    expected, _ = exact(scalar_mix, (0, 1), ZERO_D, monkeypatch)
    assert _same(result, expected, rtol=1e-12)
    for k in range(2):
        assert float(result[k]) == pytest.approx(numeric_grad(scalar_mix, ZERO_D, k), rel=1e-7)
    inf, _ = _called(
        sourcegrad.grad(quotient, wrt=(0, 1), backend="numba"), (ZERO_D[0], np.array(0.0))
    )
    assert float(inf[0]) == np.inf and type(inf[0]) is np.float64


def test_numba_backend_with_a_loop(monkeypatch):
    """A loop's float code runs compiled by numba (loop-free code runs as Python floats)."""
    pytest.importorskip("numba")
    g = sourcegrad.grad(looped, wrt=(0, 1), backend="numba")
    result, caught = _called(g, ZERO_D)
    assert uses_twin(g) and caught == []
    assert any("numba" in type(c.cell_contents).__module__ for c in g._call.__closure__)
    expected, _ = exact(looped, (0, 1), ZERO_D, monkeypatch)
    assert _same(result, expected, rtol=1e-12)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
