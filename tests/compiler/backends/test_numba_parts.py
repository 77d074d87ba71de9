"""The numba backend's helpers that write and add at a basic index (`numba_loop_writes.PARTS`:
`setitem_basic`, `unindex_at`, `unindex_one`, `add_part`), against numpy's own indexing.
They write an array through the part's view (numba's `x[i] = v` compiles its error
message's string formatting for seconds), checking the shapes numba's ufunc out= does not:
compiled, so `slow` as the other helper tests."""

import numpy as np
import pytest

from sourcegrad import runtime
from sourcegrad.compiler.backends import numba_backend

S = slice(None, None)
# (x's shape, a basic index, the shape of the value written: () a number)
CASES = [
    ((4, 6), (S, slice(2, 4)), (4, 2)),
    ((4, 6), (S, slice(2, 4)), (2,)),  # (broadcast along the rows)
    ((4, 6), (S, slice(2, 4)), (1, 2)),
    ((4, 6), (S, slice(2, 4)), ()),
    ((4, 6), (S, 3), (4,)),
    ((4, 6), (1,), (6,)),
    ((4, 6), (1, 5), ()),
    ((7,), (2,), ()),
    ((3, 5, 4), (S, 2, S), (3, 4)),
    ((3, 5, 4), (S, 2, slice(1, 4, 2)), (3, 2)),
]


@pytest.fixture(scope="module")
def helpers():
    numba = pytest.importorskip("numba")
    namespace = {"np": np, "numba": numba}
    callers = (
        "\n\n@numba.njit\ndef added(x, i, v):\n    out = x.copy()\n    add_part(out, i, v)\n"
        "    return out\n\n\n@numba.njit\ndef one(g, x, i):\n    return unindex_one(g, x, i)\n"
    )
    exec(numba_backend._HELPERS["write_part"] + callers, namespace)
    return namespace


def _value(rng, shape):
    v = rng.normal(size=shape)
    if shape:
        v.flat[0] = -0.0  # (a zero's sign kept: written, not added to zeros)
    return v if shape else float(v)


def _same(got, want):
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.slow
@pytest.mark.parametrize("shape, index, value", CASES)
def test_the_helpers_write_and_add_as_numpy_does(helpers, shape, index, value):
    rng = np.random.default_rng(len(shape) + len(value))
    x, v = rng.normal(size=shape), _value(rng, value)
    _same(helpers["setitem_basic"](x, index, v), runtime.setitem(x, index, v))
    want = x.copy()
    want[index] += v
    _same(helpers["added"](x, index, v), want)
    if np.shape(v) == np.shape(x[index]):  # (unindex: g is the part's adjoint, its shape)
        _same(helpers["unindex_at"](v, x, index), runtime.unindex(v, x, index))


@pytest.mark.slow
def test_unindex_one_at_an_int(helpers):
    x, g = np.zeros((3, 4)), np.arange(4.0)
    _same(helpers["one"](g, x, 2), runtime.unindex(g, x, 2))


@pytest.mark.slow
@pytest.mark.parametrize("value", [(4, 3), (3, 2), (5,)])
def test_a_value_of_another_shape_is_numpys_error(helpers, value):
    x, index = np.zeros((4, 6)), (S, slice(2, 4))
    with pytest.raises(ValueError):
        x.copy()[index] = np.ones(value)  # (numpy refuses it too)
    for helper in ("setitem_basic", "added"):
        with pytest.raises(ValueError):
            helpers[helper](x, index, np.ones(value))


@pytest.mark.slow
def test_a_value_of_more_dimensions_than_the_part_is_refused(helpers):
    numba = pytest.importorskip("numba")
    # (numpy writes (1, 4, 2) into a (4, 2) part; numba is not asked to: the numpy code runs)
    with pytest.raises(numba.core.errors.TypingError):
        helpers["setitem_basic"](np.zeros((4, 6)), (S, slice(2, 4)), np.ones((1, 4, 2)))
