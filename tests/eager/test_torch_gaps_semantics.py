"""Eager semantics against torch's where a probe found them apart: nanmean's gradient on a slice
of NaNs, var/std's gradient with correction >= n, the dtypes torch's kernels refuse (softmax of
integers, round(decimals=) of integers, floor/ceil/trunc/round of bools, -bool), max/min/argmax
over an empty dim, all/any of uint8, cumsum(dtype=int8)."""

import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")


def _both(fn, value, dtype="float64", requires_grad=False):
    """fn applied to the same value as a sourcegrad and as a torch tensor."""
    ours = sg.tensor(value, dtype=getattr(sg, dtype), requires_grad=requires_grad)
    theirs = torch.tensor(value, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    return (ours, fn(sg, ours)), (theirs, fn(torch, theirs))


def _same(ours, theirs):
    theirs = theirs.detach().numpy()
    np.testing.assert_array_equal(np.asarray(ours.detach()), theirs)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).replace("bool", "bool")


def _grads(fn, value, weight=1.0):
    """The gradients of sum(fn(x) * weight) at x = value, ours and torch's."""
    (x, y), (tx, ty) = _both(fn, value, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (y * weight).sum().backward()
        (ty * weight).sum().backward()
    return np.asarray(x.grad), tx.grad.numpy()


def test_nanmean_gradient_of_a_slice_of_nans_is_nan_as_torch():
    value = [[np.nan, np.nan], [1.0, np.nan], [1.0, 2.0]]
    ours, theirs = _grads(lambda m, x: m.nanmean(x, 1), value)
    np.testing.assert_array_equal(ours, theirs)
    assert np.isnan(ours[0]).all() and ours[1].tolist() == [1.0, 0.0]


@pytest.mark.parametrize("excess", [0, 1])
@pytest.mark.parametrize("weight", [1.0, -1.0])
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_gradient_with_correction_at_least_n_is_torchs(name, excess, weight):
    # over every element torch gives g * inf (nan where x is the mean): never a finite number
    for value in ([1.0, 2.0], [1.0, 2.0, 4.0], [3.0, 3.0]):
        correction = len(value) + excess
        ours, theirs = _grads(
            lambda m, x: getattr(m, name)(x, correction=correction), value, weight
        )
        np.testing.assert_array_equal(ours, theirs)
        assert not np.isfinite(ours).any()


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_over_a_dim_with_correction_at_least_n_is_torchs(name):
    value = [[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]]
    for correction in (3, 4):
        ours, theirs = _grads(lambda m, x: getattr(m, name)(x, 1, correction=correction), value)
        np.testing.assert_allclose(ours, theirs, equal_nan=True)


def _raises_as_torch(fn, value, dtype):
    with pytest.raises(Exception) as theirs:
        fn(torch, torch.tensor(value, dtype=getattr(torch, dtype)))
    with pytest.raises(type(theirs.value)) as ours:
        fn(sg, sg.tensor(value, dtype=getattr(sg, dtype)))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("dtype", ["int64", "bool", "uint8"])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_of_integers_raises_as_torch(name, dim, dtype):
    _raises_as_torch(lambda m, x: getattr(m, name)(x, dim), [[1, 2], [3, 4]], dtype)
    # dtype= casts first: then it computes, as torch's
    (_, y), (_, ty) = _both(lambda m, x: getattr(m, name)(x, dim, dtype=m.float64), [[1, 2]], dtype)
    np.testing.assert_allclose(np.asarray(y), ty.numpy())


@pytest.mark.parametrize("decimals", [0, 1, -1])
def test_round_with_decimals_of_integers_raises_as_torch(decimals):
    _raises_as_torch(lambda m, x: m.round(x, decimals=decimals), [1, 2, 3], "int64")
    _raises_as_torch(lambda m, x: m.round(x, decimals=decimals), [True], "bool")
    (_, y), (_, ty) = _both(lambda m, x: m.round(x), [15, 25], "int64")
    _same(y, ty)


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round"])
def test_rounding_of_bools_raises_as_torch(name):
    _raises_as_torch(lambda m, x: getattr(m, name)(x), [True, False], "bool")
    _raises_as_torch(lambda m, x: getattr(x, name + "_")(), [True, False], "bool")


def test_negation_of_bools_raises_torchs_runtime_error():
    for fn in (lambda m, x: -x, lambda m, x: m.neg(x), lambda m, x: x.neg_()):
        _raises_as_torch(fn, [True, False], "bool")


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin", "amax", "amin"])
def test_reductions_over_an_empty_dim_raise_as_torch(name):
    _raises_as_torch(lambda m, x: getattr(m, name)(x, 1), np.zeros((2, 0)), "float32")
    # over the other dim there are no slices at all: an empty result, as torch's
    (_, y), (_, ty) = _both(lambda m, x: getattr(m, name)(x, 0), np.zeros((2, 0)), "float32")
    y = y[0] if isinstance(y, tuple) else y
    ty = ty[0] if isinstance(ty, tuple) else ty
    assert tuple(y.shape) == tuple(ty.shape) == (0,)


def test_argmax_of_an_empty_tensor_raises_as_torch():
    _raises_as_torch(lambda m, x: m.argmax(x), np.zeros((2, 0)), "float32")


@pytest.mark.parametrize("name", ["all", "any"])
def test_all_any_keep_uint8_as_torch(name):
    for dtype in ("uint8", "int8", "bool", "float32"):
        for fn in (lambda m, x: getattr(m, name)(x), lambda m, x: getattr(m, name)(x, 0)):
            (_, y), (_, ty) = _both(fn, [0, 2], dtype)
            _same(y, ty)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scan_with_a_small_dtype_wraps_in_it_as_torch(name):
    (_, y), (_, ty) = _both(lambda m, x: getattr(m, name)(x, 0, dtype=m.int8), [100] * 3, "int64")
    _same(y, ty)
    assert np.asarray(y).tolist() == ty.tolist() != [100, 200, 300]


def test_the_compiler_shares_the_fixed_rules():
    """nanmean's and var's rules are the registry's: compiled gradients give torch's too."""
    x = np.array([[np.nan, np.nan], [1.0, np.nan], [1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = sg.grad(lambda a: np.sum(np.nanmean(a, axis=1)))(x)
        _, theirs = _grads(lambda m, t: m.nanmean(t, 1), x)
        np.testing.assert_array_equal(compiled, theirs)
        value = np.array([1.0, 2.0, 4.0])
        compiled = sg.grad(lambda a: np.var(a, ddof=4))(value)
        _, theirs = _grads(lambda m, t: m.var(t, correction=4), value)
        np.testing.assert_array_equal(compiled, theirs)
