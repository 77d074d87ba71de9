"""The call fast path (sourcegrad.api.dispatch.fast_entry, Gradient._call, _settle,
_fitted_conversions): after a signature's first call, calls with that signature go through
one generated guard, and the per-call conversion of results is left out where the first
result shows it is not needed. These tests check that the guard accepts exactly that
signature, that results are the numbers and the types the general path gives, and that
nothing the caller owns is ever handed back or shared."""

import sys
import threading

import numpy as np
import pytest

import sourcegrad
from sourcegrad import api
from sourcegrad.api import numeric_grad
from sourcegrad.api.dispatch import MISS, fast_entry
from sourcegrad.compiler.analysis import signature_key

# (they count how often the function runs and compiles: the cross-check adds to both)
pytestmark = pytest.mark.no_cross_check


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    """Every test compiles afresh (compiled code is otherwise shared across Gradients)."""
    monkeypatch.setattr(api.memory_caches, "COMPILED", {})


@pytest.fixture
def key_calls(monkeypatch):
    """How many times the general path built a signature key (the fast path builds none)."""
    calls = []
    original = api.gradient.signature_key

    def counting(args):
        calls.append(args)
        return original(args)

    monkeypatch.setattr(api.gradient, "signature_key", counting)
    return calls


def fast_path(g):
    """The entry g's calls go through now, or None when they take the general path."""
    return None if g._call == g._general_call else g._call


def misses(entry, key_calls, *args):
    """Whether the entry hands `args` to the general path (which builds a signature key, or
    rejects the call: the entry's own path never raises for these)."""
    del key_calls[:]
    try:
        entry(*args)
    except (TypeError, sourcegrad.SourcegradError):
        return True
    return bool(key_calls)


# --- functions, one per argument kind ---------------------------------------------------------


def scalar_mix(x, y):
    return np.sin(x) * y + np.exp(x * y) / (1.0 + x**2)


def vector_mix(x, y):
    return np.sum(np.sin(x) * y + np.exp(x * y) / (1.0 + x**2))


def power_of_sin(x, n):
    return np.sum(np.sin(x) ** n)


def flagged(x, flag):
    y = np.sin(x)
    if flag:
        y = y * y
    return np.sum(y * x)


def by_mode(x, mode):
    if mode == "exp":
        y = np.exp(x)
    else:
        y = np.cos(x)
    return np.sum(y * x)


def along(x, axis):
    return np.sum(np.sum(np.sin(x) * x, axis=axis) ** 2)


def first_row_cubed(x, shape):
    return np.sum(np.reshape(x, shape)[0] ** 3)


def _vec(rng, shape, dtype=np.float64):
    return rng.uniform(0.2, 0.9, size=shape).astype(dtype)


# kind -> (function, make the arguments from a seed, the expected gradient type, tolerance)
KINDS = {
    "python float": (scalar_mix, lambda r: (float(r.uniform(0.2, 0.9)), 0.7), float, 1e-7),
    "0-d ndarray": (
        scalar_mix,
        lambda r: (np.array(r.uniform(0.2, 0.9)), np.array(0.7)),
        np.float64,
        1e-7,
    ),
    "n-d float64": (vector_mix, lambda r: (_vec(r, (3, 4)), _vec(r, (3, 4))), np.ndarray, 1e-7),
    "float32": (
        vector_mix,
        lambda r: (_vec(r, (5,), np.float32), _vec(r, (5,), np.float32)),
        np.ndarray,
        2e-4,
    ),
    "np.float64 scalar": (
        scalar_mix,
        lambda r: (np.float64(r.uniform(0.2, 0.9)), np.float64(0.7)),
        np.float64,
        1e-7,
    ),
    "static int": (power_of_sin, lambda r: (_vec(r, (4,)), 3), np.ndarray, 1e-7),
    "static bool": (flagged, lambda r: (_vec(r, (4,)), True), np.ndarray, 1e-7),
    "static str": (by_mode, lambda r: (_vec(r, (4,)), "exp"), np.ndarray, 1e-7),
    "None": (along, lambda r: (_vec(r, (2, 3)), None), np.ndarray, 1e-7),
    "tuple of ints": (first_row_cubed, lambda r: (_vec(r, (6,)), (2, 3)), np.ndarray, 1e-7),
}


def _like(g, x):
    """Assert g has the type, shape and dtype the gradient of an input x must have."""
    if type(x) is float:
        assert type(g) is float
    elif isinstance(x, np.generic):
        assert type(g) is type(x)
    elif x.ndim == 0:  # a 0-d array's: a numpy scalar, as numpy's ufuncs give for one
        assert type(g) is x.dtype.type
    else:
        assert type(g) is np.ndarray
        assert g.shape == x.shape and g.dtype == x.dtype


@pytest.mark.parametrize("kind", list(KINDS))
def test_second_call_takes_the_entry_and_is_right(kind, key_calls):
    fn, make, expected_type, rtol = KINDS[kind]
    rng = np.random.default_rng(0)
    args = make(rng)
    g = sourcegrad.grad(fn)
    first = g(*args)
    assert g._last is not None and g._last.settled
    assert fast_path(g) is not None, f"{kind}: no fast path built"
    np.testing.assert_allclose(first, numeric_grad(fn, args, 0), rtol=rtol, atol=1e-9)

    other = make(rng)  # the same signature, other values
    assert signature_key(other) == signature_key(args)
    del key_calls[:]
    second = g(*other)
    assert key_calls == [], f"{kind}: the second call took the general path"
    assert type(second) is expected_type
    _like(second, other[0])
    np.testing.assert_allclose(second, numeric_grad(fn, other, 0), rtol=rtol, atol=1e-9)
    # the general path of a new Gradient (same compiled code) gives the same numbers
    general = sourcegrad.grad(fn)(*other)
    assert type(general) is type(second)
    np.testing.assert_array_equal(np.asarray(second), np.asarray(general))
    # the entry itself, called directly, computes the same
    direct = fast_path(g)(*other)
    np.testing.assert_array_equal(np.asarray(direct), np.asarray(second))
    if isinstance(second, np.ndarray):
        assert direct is not second  # each call gets an array of its own


def test_static_values_reach_the_generated_code(key_calls):
    x = np.array([0.3, 0.6, 0.9])
    for fn, statics in (
        (flagged, (True, False)),
        (by_mode, ("exp", "cos")),
        (along, (None, 0, 1)),
        (power_of_sin, (1, 2, 3)),
    ):
        g = sourcegrad.grad(fn)
        arg = x if fn is not along else np.outer(x, x)
        for repeat in range(2):  # the second round goes through each signature's entry again
            for s in statics:
                got = g(arg, s)
                np.testing.assert_allclose(
                    got,
                    numeric_grad(fn, (arg, s), 0),
                    rtol=1e-7,
                    err_msg=f"{fn.__name__}({s!r}), round {repeat}",
                )
    # each static value is a signature of its own
    assert len(sourcegrad.grad(along)._cache) == 3


def square_power(x, n):
    return np.sum(x**n)


def test_switching_signatures_never_uses_a_stale_entry():
    g = sourcegrad.grad(square_power)
    x3, x4 = np.array([0.5, 1.5, 2.0]), np.array([0.1, 0.2, 0.3, 0.4])
    x32 = x3.astype(np.float32)
    calls = [
        (x3, 2),
        (x4, 2),
        (x3, 2),
        (x32, 2),
        (x3, 3),
        (x3, 2),
        (x32, 3),
        (x4, 3),
        (x3 + 1.0, 3),
    ]
    for x, n in calls:
        for _ in range(2):  # once after a switch (general path), once on the entry
            got = g(x, n)
            assert type(got) is np.ndarray and got.shape == x.shape and got.dtype == x.dtype
            np.testing.assert_allclose(
                got,
                n * x.astype(np.float64) ** (n - 1),
                rtol=1e-6 if x.dtype == np.float32 else 1e-14,
            )
    assert len(g._cache) == 6  # (3,) f8 x {2, 3}, (4,) f8 x {2, 3}, (3,) f4 x {2, 3}


def test_entry_misses_every_other_signature(key_calls):
    g = sourcegrad.grad(square_power)
    x = np.array([0.5, 1.5, 2.0])
    np.testing.assert_allclose(g(x, 2), 2 * x)
    entry = fast_path(g)
    assert entry is not None
    del key_calls[:]
    hit = entry(x, 2)
    assert key_calls == []
    np.testing.assert_allclose(hit, 2 * x)
    others = {
        "other shape": (np.ones(4), 2),
        "other ndim": (np.ones((3, 1)), 2),
        "other dtype": (x.astype(np.float32), 2),
        "byte-swapped dtype": (x.astype(">f8"), 2),
        "python float for an array": (0.5, 2),
        "numpy scalar for an array": (np.float64(0.5), 2),
        "0-d array for an array": (np.array(0.5), 2),
        "list for an array": ([0.5, 1.5, 2.0], 2),
        "other static value": (x, 3),
        "float for a static int": (x, 2.0),
        "bool for a static int": (x, True),
        "numpy int for a static int": (x, np.int64(2)),
    }
    for why, args in others.items():
        assert misses(entry, key_calls, *args), why
    assert misses(entry, key_calls, x), "too few arguments"
    assert misses(entry, key_calls), "no arguments"
    assert misses(entry, key_calls, x, 2, 3), "too many arguments"
    assert not misses(entry, key_calls, x, 2)
    # the bare entry (no general path to hand misses to) says MISS; it takes the generated
    # function's parameters, so a keyword binds as Python binds it
    bare = fast_entry((x, 2), g._last.fn)
    assert bare(x, 3) is MISS and bare(x, n=3) is MISS
    np.testing.assert_allclose(bare(x, 2), 2 * x)
    np.testing.assert_allclose(bare(n=2, x=x), 2 * x)
    # the Gradient itself handles the missed signatures correctly on the general path
    np.testing.assert_allclose(g(np.full(4, 0.5), 2), np.ones(4))
    np.testing.assert_allclose(g(x, 3), 3 * x**2)
    swapped = g(x.astype(">f8"), 2)
    np.testing.assert_allclose(swapped, 2 * x)
    assert swapped.shape == (3,)
    with pytest.raises(TypeError):
        g(x, 2, 3)


def test_entry_for_a_static_bool_and_none_compares_identity(key_calls):
    g = sourcegrad.grad(flagged)
    x = np.array([0.3, 0.6])
    g(x, True)
    entry = fast_path(g)
    assert misses(entry, key_calls, x, 1)  # 1 == True, but another signature key
    assert not misses(entry, key_calls, x, True)
    h = sourcegrad.grad(along)
    h(np.ones((2, 2)), None)
    entry = fast_path(h)
    assert misses(entry, key_calls, np.ones((2, 2)), 0)
    assert not misses(entry, key_calls, np.ones((2, 2)), None)


def test_keyword_arguments_bind_in_the_entry_and_are_right(key_calls):
    g = sourcegrad.grad(square_power)
    x = np.array([0.5, 1.5, 2.0])
    g(x, 3)
    del key_calls[:]
    np.testing.assert_allclose(g(x, n=3), 3 * x**2)
    np.testing.assert_allclose(g(n=3, x=x + 1.0), 3 * (x + 1.0) ** 2)
    assert key_calls == []  # the entry takes the function's parameters, keywords too
    np.testing.assert_allclose(g(x=x, n=2), 2 * x)  # another signature: the general path
    assert len(key_calls) == 1
    with pytest.raises(TypeError, match="unexpected keyword argument 'm'"):
        g(x, m=2)
    del key_calls[:]
    np.testing.assert_allclose(g(x, 3), 3 * x**2)  # positional again: the n=3 entry
    np.testing.assert_allclose(g(x, 3), 3 * x**2)
    assert key_calls == []  # (one call with n=2 did not replace the n=3 entry: Gradient._install)


def test_an_entry_is_replaced_when_another_signature_comes_twice(key_calls):
    g = sourcegrad.grad(square_power)
    x = np.array([0.5, 1.5, 2.0])
    g(x, 3)
    n3 = fast_path(g)
    assert n3 is not None  # the first signature's entry is installed at once
    g(x, 2)
    assert fast_path(g) is n3  # one call of another signature leaves it
    g(x, 3)
    g(x, 2)
    n2 = fast_path(g)
    assert n2 is not n3 and not misses(n2, key_calls, x, 2)  # the second call installs its own
    # two signatures alternating: the general path for two calls in three, not every call
    del key_calls[:]
    for _ in range(6):
        np.testing.assert_allclose(g(x, 3), 3 * x**2)
        np.testing.assert_allclose(g(x, 2), 2 * x)
    assert len(key_calls) == 8
    # a run of one signature goes through its entry from its second call on
    for _ in range(4):
        np.testing.assert_allclose(g(x + 1.0, 3), 3 * (x + 1.0) ** 2)
    assert not misses(fast_path(g), key_calls, x, 3)


def scaled(x, scale=2.0):
    return np.sum(scale * x**2)


def test_default_arguments_are_filled_in(key_calls):
    g = sourcegrad.grad(scaled)
    x = np.array([0.5, 1.5])
    for _ in range(2):
        np.testing.assert_allclose(g(x), 4.0 * x)
        np.testing.assert_allclose(g(x, 3.0), 6.0 * x)
        np.testing.assert_allclose(g(x, scale=1.0), 2.0 * x)
    value, pullback = sourcegrad.vjp(scaled)(x)
    assert value == scaled(x)
    np.testing.assert_allclose(pullback(1.0), 4.0 * x)
    with pytest.raises(TypeError, match="missing .*argument: 'x'"):
        g()
    with pytest.raises(TypeError, match="positional arguments but 3 were given"):
        g(x, 1.0, 2.0)  # on the entry: Python's own message
    assert fast_path(g)(x) is not None  # the entry has the function's default


def test_lists_have_no_entry_and_still_work():
    def total(xs, y):
        return np.sum(xs[0] * y) + np.sum(xs[1] * y * y)

    g = sourcegrad.grad(total, wrt=1)
    xs, y = [np.array([1.0, 2.0]), np.array([3.0, 4.0])], np.array([0.5, 0.25])
    for _ in range(3):
        np.testing.assert_allclose(g(xs, y), xs[0] + 2 * xs[1] * y)
    assert fast_path(g) is None  # a list's signature is not checked by the entry
    assert fast_entry(([1.0],), lambda a: a) is None


# --- globals and closures -----------------------------------------------------------------------

SCALE = 2.0
OFFSETS = np.array([1.0, 2.0, 3.0])


def scaled_by_global(x):
    return np.sum(SCALE * x**2 + OFFSETS * x)


def test_rebinding_a_global_is_seen_by_the_next_call(monkeypatch, key_calls):
    g = sourcegrad.grad(scaled_by_global)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(g(x), 2 * 2.0 * x + OFFSETS)
    np.testing.assert_allclose(g(x), 2 * 2.0 * x + OFFSETS)
    assert g._last.dependencies
    entry = fast_path(g)
    assert entry is not None and not misses(entry, key_calls, x)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 5.0)
    assert misses(entry, key_calls, x)  # the entry checks that the globals are still bound
    np.testing.assert_allclose(g(x), 2 * 5.0 * x + OFFSETS)
    np.testing.assert_allclose(g(x), 2 * 5.0 * x + OFFSETS)  # the new entry
    monkeypatch.setattr(sys.modules[__name__], "OFFSETS", np.array([-1.0, 0.0, 1.0]))
    np.testing.assert_allclose(g(x), 2 * 5.0 * x + np.array([-1.0, 0.0, 1.0]))
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 2.0)
    np.testing.assert_allclose(g(x), 2 * 2.0 * x + np.array([-1.0, 0.0, 1.0]))
    # a global array changed in place is read when called, as Python reads it
    OFFSETS[0] = 10.0
    np.testing.assert_allclose(g(x), 2 * 2.0 * x + np.array([10.0, 0.0, 1.0]))


def _closure():
    c = 2.0

    def inner(x):
        return np.sum(c * np.sin(x))

    def set_c(value):
        nonlocal c
        c = value

    return inner, set_c


def test_rebinding_a_closure_value_is_seen_by_the_next_call():
    inner, set_c = _closure()
    g = sourcegrad.grad(inner)
    for x in (np.array([0.1, 0.2, 0.3]), 0.4):
        set_c(2.0)
        assert g(x) == pytest.approx(2.0 * np.cos(x), rel=1e-14)
        assert g(x) == pytest.approx(2.0 * np.cos(x), rel=1e-14)
        set_c(-3.0)
        assert g(x) == pytest.approx(-3.0 * np.cos(x), rel=1e-14)
        assert g(x) == pytest.approx(-3.0 * np.cos(x), rel=1e-14)
        assert type(g(x)) is type(x)


def scale_products(x, y):
    return np.sum(SCALE * x * y)


def test_each_gradient_of_a_function_sees_a_rebinding(monkeypatch):
    """Two gradients of one function, both called, then a global rebound: the first one
    called rebuilds the function's IR; the other's code is still the old one and must not
    pass for new (it was: the entry checked the values of the newest IR, not its own)."""
    by_x, by_y = sourcegrad.grad(scale_products, wrt=0), sourcegrad.grad(scale_products, wrt=1)
    by_both = sourcegrad.grad(scale_products, wrt=(0, 1))
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    for scale in (2.0, 5.0, -1.0, 2.0):
        monkeypatch.setattr(sys.modules[__name__], "SCALE", scale)
        for _ in range(2):  # the general path, then the entry
            np.testing.assert_allclose(by_x(x, y), scale * y)
            np.testing.assert_allclose(by_y(x, y), scale * x)
            dx, dy = by_both(x, y)
            np.testing.assert_allclose(dx, scale * y)
            np.testing.assert_allclose(dy, scale * x)
            value, pullback = sourcegrad.vjp(scale_products, wrt=(0, 1))(x, y)
            assert value == pytest.approx(scale * np.sum(x * y))
            np.testing.assert_allclose(pullback(1.0)[1], scale * x)


def test_each_gradient_of_a_closure_sees_a_rebinding():
    inner, set_c = _closure()
    by_x, with_value = sourcegrad.grad(inner), sourcegrad.value_and_grad(inner)
    x = np.array([0.1, 0.2, 0.3])
    for c in (2.0, -3.0, 0.5):
        set_c(c)
        for _ in range(2):
            np.testing.assert_allclose(by_x(x), c * np.cos(x), rtol=1e-14)
            value, dx = with_value(x)
            np.testing.assert_allclose(dx, c * np.cos(x), rtol=1e-14)
            assert value == pytest.approx(c * np.sum(np.sin(x)), rel=1e-14)


# --- who owns the results -------------------------------------------------------------------


def dot_sum(a, b):
    return np.sum(a * b)


def sum_of_sin(x):
    return np.sum(np.sin(x))


def plain_sum(x):
    return np.sum(x)


def test_an_input_returned_by_the_generated_code_is_copied():
    g = sourcegrad.grad(dot_sum)
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    kept = b.copy()
    results = [g(a, b) for _ in range(3)]  # the first on the general path, then the entry
    assert "return b" in g.source  # what makes the copy necessary
    for r in results:
        assert r is not b and r is not a
        np.testing.assert_array_equal(r, kept)
        assert r.flags.writeable and r.base is None
        r[:] = -1.0
        np.testing.assert_array_equal(b, kept)
    assert len({id(r) for r in results}) == 3


def test_two_wrt_arguments_that_are_one_array_get_two_gradients():
    g = sourcegrad.grad(dot_sum, wrt=(0, 1))
    a = np.array([1.0, 2.0, 3.0])
    kept = a.copy()
    for _ in range(3):
        da, db = g(a, a)
        assert da is not db and da is not a and db is not a
        np.testing.assert_array_equal(da, kept)
        np.testing.assert_array_equal(db, kept)
        da[:] = 0.0
        np.testing.assert_array_equal(db, kept)
        np.testing.assert_array_equal(a, kept)


def sin_of_sum(a, b):
    return np.sum(np.sin(a + b))


def test_one_array_computed_for_two_gradients_is_returned_twice():
    g = sourcegrad.grad(sin_of_sum, wrt=(0, 1))
    a, b = np.array([0.1, 0.2]), np.array([0.3, 0.4])
    da, db = g(a, b)
    np.testing.assert_allclose(da, np.cos(a + b))
    np.testing.assert_allclose(db, np.cos(a + b))
    da[:] = 0.0
    assert da is not db
    np.testing.assert_allclose(db, np.cos(a + b))


def test_fresh_gradients_are_returned_without_a_conversion_and_never_reused():
    g = sourcegrad.grad(sum_of_sin)
    x = np.array([0.1, 0.2, 0.3])
    first = g(x)
    assert g._last.fresh == (True,)
    assert g._last.finish is None  # the first result showed no conversion is needed
    first_copy = first.copy()
    second = g(x + 1.0)
    assert second is not first and second is not x
    np.testing.assert_array_equal(first, first_copy)  # not overwritten by the next call
    np.testing.assert_allclose(second, np.cos(x + 1.0), rtol=1e-15)
    for r in (first, second):
        assert type(r) is np.ndarray and r.shape == x.shape and r.dtype == x.dtype
        assert r.flags.writeable and r.base is None


def test_broadcast_gradients_are_made_into_arrays_of_their_own():
    g = sourcegrad.grad(plain_sum)
    x = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    for _ in range(3):
        r = g(x)
        assert type(r) is np.ndarray and r.shape == (2, 2) and r.dtype == np.float32
        assert r.flags.writeable and r.base is None
        np.testing.assert_array_equal(r, np.ones((2, 2)))
        r[0, 0] = 5.0  # must not fail, and must not change the next result
    assert g._last.finish is not None  # a broadcast view needs the general conversion


@pytest.mark.parametrize(
    "x, kind",
    [
        (0.4, float),
        (np.float64(0.4), np.float64),
        (np.float32(0.4), np.float32),
        (np.array(0.4), np.float64),
        (np.array(0.4, dtype=np.float32), np.float32),
    ],
)
def test_scalar_gradients_keep_the_input_type(x, kind):
    g = sourcegrad.grad(sum_of_sin)
    results = [g(x) for _ in range(3)]
    for r in results:
        assert type(r) is kind
        if kind is np.ndarray:
            assert r.shape == () and r.dtype == x.dtype and r.flags.writeable
        np.testing.assert_allclose(
            float(r), np.cos(0.4), rtol=1e-6 if np.asarray(x).dtype == np.float32 else 1e-15
        )
    if kind is np.ndarray:
        assert results[1] is not results[2]
    two = sourcegrad.grad(scalar_mix, wrt=(0, 1))
    y = type(x)(0.7) if not isinstance(x, np.ndarray) else np.array(0.7, dtype=x.dtype)
    for _ in range(3):
        dx, dy = two(x, y)
        assert type(dx) is kind and type(dy) is kind
        args = (float(x), float(y))
        rtol = 1e-4 if np.asarray(x).dtype == np.float32 else 1e-7
        assert float(dx) == pytest.approx(numeric_grad(scalar_mix, args, 0), rel=rtol)
        assert float(dy) == pytest.approx(numeric_grad(scalar_mix, args, 1), rel=rtol)


# --- value_and_grad, loops ----------------------------------------------------------------


def test_value_and_grad_goes_through_the_entry(key_calls):
    vg = sourcegrad.value_and_grad(vector_mix, wrt=(0, 1))
    rng = np.random.default_rng(3)
    for i in range(4):
        x, y = _vec(rng, (3,)), _vec(rng, (3,))
        del key_calls[:]
        value, (dx, dy) = vg(x, y)
        assert len(key_calls) == (1 if i == 0 else 0)
        assert value == pytest.approx(vector_mix(x, y), rel=1e-14)
        np.testing.assert_allclose(dx, numeric_grad(vector_mix, (x, y), 0), rtol=1e-7)
        np.testing.assert_allclose(dy, numeric_grad(vector_mix, (x, y), 1), rtol=1e-7)
        assert dx is not dy and dx.shape == (3,) and dx.base is None
    single = sourcegrad.value_and_grad(dot_sum)
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    for _ in range(3):
        value, da = single(a, b)
        assert value == pytest.approx(1.0)
        assert da is not b
        np.testing.assert_array_equal(da, b)
    for _ in range(3):
        value, d = sourcegrad.value_and_grad(scalar_mix)(0.3, 0.7)
        assert value == pytest.approx(scalar_mix(0.3, 0.7), rel=1e-15)
        assert type(d) is float and d == pytest.approx(numeric_grad(scalar_mix, (0.3, 0.7), 0))


def looped(x):
    y = x
    for _ in range(3):
        y = np.sin(y) * x
    return np.sum(y)


@pytest.mark.parametrize(
    "x",
    [
        0.6,
        np.float64(0.6),
        np.array(0.6),
        np.array([0.6, 0.2]),
        np.array([0.6, 0.2], dtype=np.float32),
    ],
    ids=["float", "np.float64", "0-d", "1-d", "float32"],
)
def test_a_loop_keeps_types_on_repeated_calls(x, key_calls):
    g = sourcegrad.grad(looped)
    for i in range(3):
        del key_calls[:]
        r = g(x)
        if i:
            assert key_calls == []
        _like(r, x)
        if isinstance(r, np.ndarray):
            assert r.flags.writeable and r.base is None
        tolerance = 1e-4 if np.asarray(x).dtype == np.float32 else 1e-7
        np.testing.assert_allclose(r, numeric_grad(looped, (x,), 0), rtol=tolerance)
    assert g._last.fresh == ()  # a loop: nothing is assumed from the first result


# --- threads ------------------------------------------------------------------------------


def test_threads_calling_two_signatures_all_get_their_own_results():
    g = sourcegrad.grad(vector_mix, wrt=(0, 1))
    rng = np.random.default_rng(7)
    cases = [
        (_vec(rng, (3,)), _vec(rng, (3,))),
        (_vec(rng, (2, 2), np.float32), _vec(rng, (2, 2), np.float32)),
    ]
    expected = []
    for x, y in cases:
        ex = (
            np.cos(x) * y
            + (y * np.exp(x * y) * (1 + x**2) - 2 * x * np.exp(x * y)) / (1 + x**2) ** 2
        )
        ey = np.sin(x) + x * np.exp(x * y) / (1 + x**2)
        expected.append((ex, ey))
    errors, barrier = [], threading.Barrier(8)

    def work(k):
        barrier.wait()
        for i in range(200):
            which = (i + k) % 2
            x, y = cases[which]
            try:
                dx, dy = g(x, y)
                assert dx.shape == x.shape and dx.dtype == x.dtype and dy.dtype == y.dtype
                rtol = 1e-5 if x.dtype == np.float32 else 1e-12
                np.testing.assert_allclose(dx, expected[which][0], rtol=rtol)
                np.testing.assert_allclose(dy, expected[which][1], rtol=rtol)
            except Exception as e:  # noqa: BLE001 (collected, asserted below)
                errors.append((k, i, repr(e)))
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(g._cache) == 2
