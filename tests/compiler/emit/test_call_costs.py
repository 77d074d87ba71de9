"""What a small gradient costs per call: the entry is the generated function itself (one
frame), `a @ b` of one- and two-dimensional arrays is written `a.dot(b)`, a Python float
squares by multiplication, and 0-d array inputs are read as the numpy scalars they hold.
Each must give the numbers and the types the plain spelling gives."""

import copy
import inspect
import pickle
import sys
import traceback

import numpy as np
import pytest

import sourcegrad
from sourcegrad import api
from sourcegrad.api import numeric_grad


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.setattr(api.memory_caches, "COMPILED", {})


# --- the entry is the generated function, with the guard first --------------------------------


def log_weighted(x, y):
    return np.sum(np.log(x) * y)


def test_the_entry_runs_the_generated_lines_in_one_frame():
    g = sourcegrad.grad(log_weighted)
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_allclose(g(x, y), y / x)
    entry = g._call
    assert entry is not g._general_call
    generated = g._last.fn.__code__
    assert entry.__code__.co_filename == generated.co_filename  # the generated module's file
    assert entry.__name__ == generated.co_name == "dlog_weighted_dx"
    # an error in the body is reported at the generated line, from the entry's own frame
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError) as caught:
        g(np.array([0.0, 1.0]), y)
    frames = traceback.extract_tb(caught.value.__traceback__)
    last = frames[-1]
    assert last.filename == generated.co_filename and last.name == "dlog_weighted_dx"
    assert "y / x" in g.source.splitlines()[last.lineno - 1]
    # the caller's frame is next: no dispatch frame in between
    assert frames[-2].filename == __file__


def weighted_log(x, y=2.0):
    """Docstring of weighted_log."""
    return np.sum(np.log(x) * y)


def test_a_gradient_is_named_and_bound_as_its_function_whatever_it_calls():
    """A Gradient is a staticmethod for its C call (see Gradient): none of staticmethod's
    own behaviour shows, and the entries it calls never lend it their names."""
    g = sourcegrad.grad(weighted_log)
    x = np.array([1.0, 2.0])
    for args in ((x,), (0.5,), (x, 3.0), (np.array(0.5),), (x,), (x,)):
        g(*args)
        assert (g.__name__, g.__qualname__, g.__module__, g.__doc__) == (
            "weighted_log",
            "weighted_log",
            __name__,
            "Docstring of weighted_log.",
        )
        assert str(inspect.signature(g)) == "(x, y=2.0)"
        assert inspect.unwrap(g) is weighted_log and g.__wrapped__ is weighted_log

    class Model:
        gradient = g

    assert Model.gradient is g and Model().gradient is g  # not bound, not unwrapped
    assert copy.copy(g) is g and copy.deepcopy([g])[0] is g
    again = pickle.loads(pickle.dumps(g))
    assert type(again) is type(g) and again.fn is weighted_log
    np.testing.assert_allclose(again(x, 3.0), 3.0 / x)
    both = pickle.loads(pickle.dumps(sourcegrad.value_and_grad(weighted_log, wrt=("x", "y"))))
    value, (dx, dy) = both(x)
    assert value == weighted_log(x) and dy == pytest.approx(np.sum(np.log(x)))
    np.testing.assert_allclose(dx, 2.0 / x)


_guard_shape_x = 3.0  # a user global spelled like the guard's constants


def reads_a_guard_like_global(x):
    return np.sum(_guard_shape_x * x**2)


def test_the_guard_constants_never_shadow_the_users_names():
    g = sourcegrad.grad(reads_a_guard_like_global)
    x = np.array([0.5, 1.5])
    for _ in range(3):
        np.testing.assert_allclose(g(x), 6.0 * x)
    assert g._call is not g._general_call


def scaled_by(x, type, float):  # noqa: A002 (parameters named like the guard's builtins)
    return np.sum(x * x) * type * float


def test_parameters_named_like_builtins_do_not_break_the_guard():
    g = sourcegrad.grad(scaled_by)
    x = np.array([0.5, 1.5])
    for _ in range(3):
        np.testing.assert_allclose(g(x, 2.0, 3.0), 12.0 * x)
    assert g._call is not g._general_call


def offset_scale(x, scale=2.0, offset=0.5):
    return np.sum(scale * (x + offset) ** 2)


def test_the_entry_binds_keywords_and_defaults_as_the_function_does():
    g = sourcegrad.grad(offset_scale)
    x = np.array([0.5, 1.5])
    expected = 4.0 * (x + 0.5)
    np.testing.assert_allclose(g(x), expected)
    entry = g._call
    np.testing.assert_allclose(g(x, offset=0.5), expected)
    np.testing.assert_allclose(g(x=x, scale=2.0), expected)
    np.testing.assert_allclose(g(x, 2.0, 0.5), expected)
    assert g._call is entry  # all the same signature
    np.testing.assert_allclose(g(x, offset=1.0), 4.0 * (x + 1.0))  # another: recompiled
    with pytest.raises(TypeError):
        g(x, 2.0, 0.5, 1.0)
    with pytest.raises(TypeError):
        g(x, bias=1.0)


def halve_while_large(x):
    while np.sum(x * x) > 1.0:
        x = x * 0.5
    return np.sum(np.sin(x))


def test_a_general_finish_gets_the_arguments_as_given():
    # a loop: the result's form is not known from the first call, so every result goes
    # through the general conversion, which reads the arguments the call was given
    g = sourcegrad.grad(halve_while_large)
    for x in (np.array([3.0, 4.0]), np.array([0.1, 0.2]), np.array([30.0, 40.0])):
        for _ in range(2):
            r = g(x)
            assert type(r) is np.ndarray and r.shape == (2,) and r.base is None
            np.testing.assert_allclose(r, numeric_grad(halve_while_large, (x,), 0), rtol=1e-6)


# --- a @ b as a.dot(b) -------------------------------------------------------------------------


def chain_of_products(A, B, v):
    return np.sum(np.tanh(A @ B) @ v) + v @ v


def batched(A, B):
    return np.sum(A @ B)


def test_products_of_matrices_and_vectors_are_dots_with_the_same_numbers():
    rng = np.random.default_rng(0)
    A, B, v = rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=5)
    g = sourcegrad.grad(chain_of_products, wrt=(0, 1, 2))
    dA, dB, dv = g(A, B, v)
    source = g.source
    assert ".dot(" in source
    body = [line.split("#")[0] for line in source.splitlines() if not line.startswith("#")]
    assert not any("@" in line for line in body), source
    # the same products as @ gives: the gradient written with @ by hand
    d_t = np.ones((4, 5)) * v
    d_AB = d_t * (1.0 - np.tanh(A @ B) ** 2)
    np.testing.assert_allclose(dA, d_AB @ B.T, rtol=1e-14)
    np.testing.assert_allclose(dB, A.T @ d_AB, rtol=1e-14)
    np.testing.assert_allclose(dv, np.tanh(A @ B).sum(axis=0) + 2 * v, rtol=1e-14)


def test_stacked_products_keep_matmul():
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 3, 5))
    g = sourcegrad.grad(batched, wrt=(0, 1))
    dA, dB = g(A, B)
    assert ".dot(" not in g.source  # dot of stacks is not matmul of stacks
    np.testing.assert_allclose(dA, np.ones((2, 4, 5)) @ np.swapaxes(B, -1, -2), rtol=1e-14)
    np.testing.assert_allclose(dB, np.swapaxes(A, -1, -2) @ np.ones((2, 4, 5)), rtol=1e-14)


def test_cupy_code_keeps_matmul():
    pytest.importorskip("cupy")
    rng = np.random.default_rng(2)
    A, B, v = rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=5)
    g = sourcegrad.grad(chain_of_products, wrt=(0, 1, 2), backend="cupy")
    source = g.compile((A, B, v)).source
    assert ".dot(" not in source and "@" in source


# --- squares -----------------------------------------------------------------------------------


def squares(x, y):
    return x**2 + (x + y) ** 2 * y


def test_a_name_squared_is_a_product_and_an_expression_squared_stays_a_power():
    g = sourcegrad.value_and_grad(squares, wrt=(0, 1))
    value, (dx, dy) = g(0.7, -1.3)
    assert "x * x" in g.source and "** 2" in g.source  # (x + y) is not written twice
    assert value == pytest.approx(squares(0.7, -1.3), rel=1e-15)
    assert dx == pytest.approx(2 * 0.7 + 2 * (0.7 - 1.3) * -1.3, rel=1e-14)
    assert dy == pytest.approx((0.7 - 1.3) ** 2 + 2 * (0.7 - 1.3) * -1.3, rel=1e-14)


# --- 0-d arrays read as numpy scalars ----------------------------------------------------------


def scalar_mix(x, y):
    return np.sin(x) * y + np.exp(x * y) / (1.0 + x**2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_zero_d_arrays_are_read_as_scalars_and_returned_as_numpy_scalars(dtype):
    g = sourcegrad.grad(scalar_mix, wrt=(0, 1))
    x, y = np.array(0.4, dtype=dtype), np.array(0.7, dtype=dtype)
    for _ in range(3):
        dx, dy = g(x, y)
        for d, given in ((dx, x), (dy, y)):
            assert type(d) is dtype  # (as numpy's ufuncs give for a 0-d array)
    assert "x, y = x[()], y[()]" in g.source
    # the numbers of the same gradient on numpy scalars (the code it was generated as)
    on_scalars = sourcegrad.grad(scalar_mix, wrt=(0, 1))(x[()], y[()])
    assert float(dx) == float(on_scalars[0]) and float(dy) == float(on_scalars[1])
    rtol = 1e-7 if dtype == np.float64 else 1e-3
    args = (float(x), float(y))
    assert float(dx) == pytest.approx(numeric_grad(scalar_mix, args, 0), rel=rtol)
    assert float(dy) == pytest.approx(numeric_grad(scalar_mix, args, 1), rel=rtol)


def product(x, y):
    return x * y


def test_an_input_returned_as_a_gradient_is_a_numpy_scalar_not_the_input():
    g = sourcegrad.grad(product, wrt=(0, 1))
    x, y = np.array(2.0), np.array(3.0)
    for _ in range(3):
        dx, dy = g(x, y)
        assert type(dx) is np.float64 and dx == 3.0 and type(dy) is np.float64 and dy == 2.0
        y[()] = 4.0  # (the gradient is a value of its own: changing the input leaves it)
        assert dx == 3.0
        y[()] = 3.0


def stores_into_a_copy(x, y):
    z = np.zeros(2)
    z[0] = x
    z[1] = x * y
    return np.sum(z * z)


def indexes_the_input(x, y):
    return x[()] * y + x[...] * y


@pytest.mark.parametrize("fn", [stores_into_a_copy, indexes_the_input])
def test_zero_d_arrays_that_are_indexed_or_stored_stay_arrays_in_the_code(fn):
    g = sourcegrad.grad(fn, wrt=(0, 1))
    x, y = np.array(0.4), np.array(0.7)
    dx, dy = g(x, y)
    assert "[()]  #" not in g.source
    assert type(dx) is np.float64 and type(dy) is np.float64
    assert float(dx) == pytest.approx(numeric_grad(fn, (x, y), 0), rel=1e-7)
    assert float(dy) == pytest.approx(numeric_grad(fn, (x, y), 1), rel=1e-7)


def test_higher_order_through_a_zero_d_input():
    d2 = sourcegrad.grad(sourcegrad.grad(scalar_mix))
    x, y = np.array(0.4), np.array(0.7)
    inner = sourcegrad.grad(scalar_mix)
    h = 1e-5
    expected = (float(inner(np.array(0.4 + h), y)) - float(inner(np.array(0.4 - h), y))) / (2 * h)
    assert float(d2(x, y)) == pytest.approx(expected, rel=1e-6)
    # the code differentiated again is generated without the scalar reads (an index)
    assert "[()]" not in d2.inner.compile((x, y), to_transform=True).source
    assert "[()]" in d2.inner.compile((x, y)).source and "getitem" not in d2.source


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
