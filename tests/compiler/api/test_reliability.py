"""Regression tests of the reliability issue: indexed updates with repeated indices, returned
gradients that alias the user's arrays, programs numpy rejects, crashes that must be located
errors, and recursion bounded by an int argument. Gradients are checked against central
finite differences in float64 (numpy runs the function itself, so its semantics decide)."""

import io
import os
import types
import warnings
from contextlib import redirect_stdout

import numpy as np
import pytest

import sourcegrad
from sourcegrad import cli, errors
from sourcegrad.api import numeric_grad

HERE = os.path.dirname(os.path.abspath(__file__))
W = np.array([1.0, 2.0, 3.0, 4.0])


def assert_gradients(fn, args, wrt):
    got = sourcegrad.grad(fn, wrt=wrt)(*args)
    got = got if isinstance(wrt, tuple) else (got,)
    for pos, g in zip(wrt if isinstance(wrt, tuple) else (wrt,), got):
        np.testing.assert_allclose(g, numeric_grad(fn, args, pos), rtol=1e-6, atol=1e-8)


# -- 1. repeated indices: numpy keeps the last write, and `+=` adds once ----------------------


def add_at_repeated(x):
    a = x * 1.0
    a[[0, 0]] += x[1]
    return np.sum(a * W[:3])


def set_repeated(x, v):
    a = x * 1.0
    a[[0, 0]] = v
    return np.sum(a * 10.0)


def set_repeated_fancy(x, y):
    y = y * 1.0
    y[[0, 0, 1]] = x
    return np.sum(np.sin(y) * W[:3])


def test_add_to_a_repeated_index_adds_once():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(sourcegrad.grad(add_at_repeated)(x), [1.0, 3.0, 3.0])
    assert_gradients(add_at_repeated, (x,), 0)


def test_the_last_write_of_a_repeated_index_gets_the_gradient():
    x, v = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])
    dx, dv = sourcegrad.grad(set_repeated, wrt=(0, 1))(x, v)
    np.testing.assert_allclose(dv, [0.0, 10.0])
    np.testing.assert_allclose(dx, [0.0, 10.0, 10.0])


def test_fancy_assignment_with_repeats_gives_overwritten_values_no_gradient():
    x, y = np.array([0.3, -0.7, 1.1]), np.array([0.5, 0.2, -0.4])
    dx, dy = sourcegrad.grad(set_repeated_fancy, wrt=(0, 1))(x, y)
    assert dx[0] == 0.0
    assert_gradients(set_repeated_fancy, (x, y), (0, 1))


def update_set(x, v, idx):
    a = np.sin(x)
    a[idx] = v * 1.5
    return np.sum(a * a * x)


def update_add(x, v, idx):
    a = np.sin(x)
    a[idx] += v * 1.5
    return np.sum(a * a * x)


def update_sub(x, v, idx):
    a = np.sin(x)
    a[idx] -= v * 1.5
    return np.sum(a * a * x)


def update_mul(x, v, idx):
    a = np.sin(x)
    a[idx] *= v * 1.5
    return np.sum(a * a * x)


def update_div(x, v, idx):
    a = np.sin(x) + 3.0
    a[idx] /= v * 1.5
    return np.sum(a * a * x)


UPDATES = [update_set, update_add, update_sub, update_mul, update_div]


@pytest.mark.parametrize("fn", UPDATES, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "index",
    [
        [2, 0, 2, 2],  # an int list with repeats
        np.array([1, 1, 3]),  # an int array with repeats
        np.array([True, False, True, False, True]),  # a mask: no repeats
    ],
    ids=["list", "array", "mask"],
)
def test_indexed_updates_match_numpy(fn, index):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, 5)
    n = len(x[index])
    v = rng.uniform(0.5, 1.5, n)
    assert_gradients(fn, (x, v, index), (0, 1))
    assert_gradients(fn, (x, 1.25, index), (0, 1))  # a number broadcast to every write


def update_rows(x, v, rows, cols):
    a = x * x
    a[rows, cols] += v
    a[rows] *= 2.0
    return np.sum(np.tanh(a) * x)


def test_multidimensional_fancy_indices_with_repeats():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1.0, 1.0, (3, 4))
    rows, cols = np.array([0, 2, 0, 0]), np.array([1, 3, 1, 2])
    assert_gradients(update_rows, (x, rng.uniform(-1.0, 1.0, 4), rows, cols), (0, 1))


def test_forward_mode_and_second_order_through_a_repeated_write():
    x, v = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])
    _, tangent = sourcegrad.jvp(set_repeated, (x, v), (None, np.array([1.0, 1.0])))
    assert tangent == pytest.approx(10.0)  # only the last write reaches the output
    # the Hessian along v: forward mode over the generated gradient, and column by column
    g = sourcegrad.grad(update_set, wrt=1)
    eps = 1e-5
    numeric = np.stack(
        [(g(x, v + eps * e, [0, 0]) - g(x, v - eps * e, [0, 0])) / (2 * eps) for e in np.eye(2)]
    )
    np.testing.assert_allclose(
        sourcegrad.hvp(update_set, wrt=1)(x, v, [0, 0], np.ones(2)),
        numeric.sum(axis=0),
        rtol=1e-5,
        atol=1e-7,
    )
    np.testing.assert_allclose(
        sourcegrad.hessian(update_set, wrt=1)(x, v, [0, 0]), numeric, rtol=1e-5, atol=1e-7
    )


# -- 6. a small randomized differential test of repeated-index updates ------------------------


def test_random_repeated_index_updates_match_finite_differences():
    rng = np.random.default_rng(2024)
    for trial in range(24):
        fn = UPDATES[rng.integers(0, 3)] if trial % 2 else UPDATES[trial % len(UPDATES)]
        size = int(rng.integers(2, 6))
        count = int(rng.integers(1, 6))
        index = rng.integers(0, size, count)
        if rng.random() < 0.5:
            index = [int(i) for i in index]
        x = rng.uniform(0.5, 1.5, size)
        v = rng.uniform(0.5, 1.5, count) if rng.random() < 0.7 else float(rng.uniform(0.5, 1.5))
        assert_gradients(fn, (x, v, index), (0, 1))


# -- 2. a returned gradient is never the user's own array --------------------------------------

TABLE = np.arange(3.0)
TABLES = [np.arange(3.0) + 1.0]


def times_table(x):
    return np.sum(x * TABLE)


def times_listed_table(x):
    return np.sum(x * TABLES[0])


def identity(x):
    return x


def scaled(x):
    return x * TABLE


@pytest.mark.parametrize(
    "fn, table",
    [(times_table, TABLE), (times_listed_table, TABLES[0])],
    ids=["global", "item of a global list"],
)
def test_gradient_that_equals_a_global_is_a_copy(fn, table):
    before = table.copy()
    for g in (sourcegrad.grad(fn)(np.ones(3)), sourcegrad.value_and_grad(fn)(np.ones(3))[1]):
        np.testing.assert_array_equal(g, before)
        assert not np.shares_memory(g, table)
        g *= 0.0
        np.testing.assert_array_equal(table, before)


def test_vjp_and_jvp_results_are_not_the_callers_arrays():
    x, cotangent, tangent = np.ones(3), np.full(3, 2.0), np.full(3, 3.0)
    _, pullback = sourcegrad.vjp(identity)(x)
    g = pullback(cotangent)
    np.testing.assert_array_equal(g, cotangent)
    assert not np.shares_memory(g, cotangent)
    _, t = sourcegrad.jvp(identity, (x,), (tangent,))
    np.testing.assert_array_equal(t, tangent)
    assert not np.shares_memory(t, tangent)
    _, pullback = sourcegrad.vjp(scaled)(x)
    assert not np.shares_memory(pullback(np.ones(3)), TABLE)


# -- 3, 4. what numpy rejects raises numpy's error, located ------------------------------------


def matmul_mismatch(x, y):
    return np.sum(x @ y)


def dot_mismatch(x, y):
    return np.dot(x, y)


def broadcast_mismatch(x):
    return np.sum(x + np.ones(4))


def reshape_mismatch(x):
    return np.sum(x.reshape(4))


def index_out_of_bounds(x):
    return x[5]


def axis_out_of_bounds(x):
    return np.sum(np.sum(x, axis=3))


def einsum_mismatch(x, y):
    return np.einsum("i,i->", x, y)


def concatenate_mismatch(x, y):
    return np.sum(np.concatenate([x, y], axis=1))


def rank_of_a_float(x):
    return x.ndim * x


def length_of_a_float(x):
    return len(x) * x


@pytest.mark.parametrize(
    "fn, args, kind",
    [
        (matmul_mismatch, (np.ones(4), np.ones(1)), ValueError),
        (dot_mismatch, (np.ones(3), np.ones(2)), ValueError),
        (broadcast_mismatch, (np.ones(3),), ValueError),
        (reshape_mismatch, (np.ones(3),), ValueError),
        (index_out_of_bounds, (np.ones(3),), IndexError),
        (axis_out_of_bounds, (np.ones(3),), np.exceptions.AxisError),
        (einsum_mismatch, (np.ones(3), np.ones(2)), ValueError),
        (concatenate_mismatch, (np.ones((2, 3)), np.ones((3, 3))), ValueError),
        (rank_of_a_float, (2.0,), AttributeError),  # (Python's, for the argument's type)
        (length_of_a_float, (2.0,), TypeError),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_what_numpy_rejects_raises_numpys_error_located(fn, args, kind):
    with pytest.raises(kind) as numpy_says:
        fn(*args)
    with pytest.raises(errors.NumpyError) as info:
        sourcegrad.grad(fn)(*args)
    assert isinstance(info.value, kind)
    message = str(info.value)
    assert f"test_reliability.py:{fn.__code__.co_firstlineno + 1}" in message
    assert "return" in message.splitlines()[-1]  # the line's text
    assert str(numpy_says.value) in message


def by_rank(x, y):
    if x.ndim == 1:
        z = x @ y
    else:
        z = x @ y.T
    if x.shape[0] > 3:
        z = z + x[5]
    return np.sum(z * z)


def by_type(x):
    if isinstance(x, np.ndarray):
        return np.sum(x * x)
    return 3.0 * x


def test_isinstance_of_a_numpy_class_is_the_arguments():
    # (a class among the function's globals: np.ndarray has `shape` and `dtype` descriptors)
    assert_gradients(by_type, (np.linspace(0.1, 0.3, 3),), (0,))
    assert sourcegrad.grad(by_type)(2.0) == 3.0


def test_a_branch_this_signature_never_takes_may_hold_what_numpy_rejects():
    for x, y in (
        (np.linspace(0.1, 0.3, 3), np.linspace(-1.0, 1.0, 3)),
        (np.linspace(0.1, 0.6, 6).reshape(2, 3), np.linspace(-1.0, 1.0, 12).reshape(4, 3)),
    ):
        assert_gradients(by_rank, (x, y), (0, 1))


def mean_of(x):
    return np.mean(x)


def mean_of_rows(x):
    return np.sum(np.mean(x, axis=0))


@pytest.mark.parametrize("fn, x", [(mean_of, np.ones(0)), (mean_of_rows, np.ones((0, 2)))])
def test_mean_of_an_empty_array_is_nan_as_numpy_gives_it(fn, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = fn(x)
        value, g = sourcegrad.value_and_grad(fn)(x)
        assert sourcegrad.grad(fn)(x).shape == x.shape
    assert np.isnan(expected) and np.isnan(value)
    assert g.shape == x.shape


def raises_instead(x):
    raise ValueError("no value")


def test_a_function_that_raises_is_reported_as_raising():
    with pytest.raises(errors.UnsupportedSyntaxError, match="raise statement") as info:
        sourcegrad.grad(raises_instead)(np.ones(3))
    assert "no return statement" not in str(info.value)
    assert 'raise ValueError("no value")' in str(info.value)


def test_show_cupy_source_without_cupy():
    out = io.StringIO()
    path = os.path.join(HERE, "..", "..", "..", "examples", "logreg.py")
    with redirect_stdout(out):
        assert cli.main(["show", f"{path}:loss", "--backend", "cupy"]) == 0
    assert "import cupy as cp" in out.getvalue() and "def dloss_dw" in out.getvalue()


def test_running_cupy_code_without_cupy_is_a_sourcegrad_error():
    try:
        import cupy  # noqa: F401

        pytest.skip("cupy is installed")
    except ImportError:
        pass
    with pytest.raises(errors.SourcegradError, match="CuPy is not installed"):
        sourcegrad.grad(mean_of, backend="cupy")(np.ones(3))


# -- 5. recursion bounded by an int argument unrolls; on data it is refused -------------------


def doubled(x, n):
    return x if n == 0 else doubled(x * 2.0, n - 1)


def doubled_loss(x, n):
    return np.sum(np.sin(doubled(x, n)))


def doubled_until(x):
    return x if np.sum(x) > 100.0 else doubled_until(x * 2.0)


def doubled_until_loss(x):
    return np.sum(doubled_until(x))


def test_recursion_on_an_int_argument_unrolls():
    x = np.array([0.001, -0.002, 0.0005])
    g = sourcegrad.grad(doubled_loss)
    for n in (10, 3):
        np.testing.assert_allclose(
            g(x, n), numeric_grad(doubled_loss, (x, n), 0), rtol=1e-6, atol=1e-8
        )


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_recursion_on_data_is_refused_located():
    with pytest.raises(errors.RecursionDepthError) as info:
        sourcegrad.grad(doubled_until_loss)(np.ones(3))
    assert "test_reliability.py" in str(info.value) and "doubled_until(x * 2.0)" in str(info.value)


def _take_of_transpose(x):
    return np.sum(np.take(x.T, np.array([0, 1, 4])) * np.array([1.0, 2.0, 3.0]))


def test_take_of_a_transposed_array_keeps_its_gradient():
    # untake wrote into reshape(-1) of a Fortran-ordered zeros_like(x.T): a copy, so the
    # gradient came back as zeros (a silently wrong gradient)
    x = np.arange(6.0).reshape(2, 3)
    g = sourcegrad.grad(_take_of_transpose)(x)
    np.testing.assert_allclose(g, [[1.0, 0.0, 3.0], [2.0, 0.0, 0.0]])
    sourcegrad.check_grad(_take_of_transpose, x)


def _clip_times_weights(x, w):
    return np.sum(np.clip(x, -1.0, 1.0) * w)


def test_clip_gives_zero_gradient_where_it_clipped_whatever_arrives():
    # torch's clamp: where(mask, g, 0); g * mask turned a NaN arriving at a clipped element
    # into a NaN gradient there
    x = np.array([-2.0, 0.5, 3.0])
    with np.errstate(invalid="ignore"):
        g = sourcegrad.grad(_clip_times_weights)(x, np.array([np.nan, 2.0, np.inf]))
    np.testing.assert_array_equal(g, [0.0, 2.0, 0.0])


def _row_sum(W, idx):
    return np.sum(W[idx])  # (the gather's value is dead in the gradient: only its adjoint runs)


@pytest.mark.parametrize("idx", [[0, 5, 1], [0, -5, 1]])
def test_a_row_index_out_of_range_raises_numpys_index_error(idx):
    # found in this session's review: the adjoint's one-bincount path wrapped row 5 of 4 into
    # row 1 (a gradient where numpy raises)
    W = np.ones((4, 3))
    with pytest.raises(IndexError):
        _row_sum(W, np.array(idx))
    with pytest.raises(IndexError):
        sourcegrad.grad(_row_sum)(W, np.array(idx))


# keywords numpy takes that a derivative rule does not (np.sum's where=, reshape's order=):
# refused at the user's line by whichever front end read the call (the source front end
# itself; the trace, which takes over where the source front end stops, by stage 6's
# check_keywords), never differentiated as if the keyword were not there
class _Reshaper:
    def __init__(self, order):
        self.order = order

    def __call__(self, x):
        return x.reshape(2, 3, order=self.order)


def _reshaped_f_order(x):
    return np.sum(_Reshaper("F")(x)[0] * np.arange(3.0))


def _mean_with_dtype(x):
    return np.mean(x**2, dtype=np.float64)


def _max_with_initial(x):
    return np.max(np.sin(x), initial=0.0)


@pytest.mark.parametrize(
    "fn, keyword",
    [(_reshaped_f_order, "order"), (_mean_with_dtype, "dtype"), (_max_with_initial, "initial")],
)
def test_a_keyword_the_rule_does_not_take_is_refused_at_the_users_line(fn, keyword):
    with pytest.raises(errors.SourcegradError) as caught:
        sourcegrad.grad(fn)(np.linspace(0.1, 0.6, 6))
    assert caught.value.loc is not None and caught.value.loc.file == __file__
    assert repr(keyword) in str(caught.value)


def test_a_keyword_off_the_gradients_path_runs_as_numpy_does():
    def f(x, data):
        scale = np.mean(data, dtype=np.float64)  # data carries no gradient
        return np.sum(x**2) * scale

    x, data = np.array([1.0, 2.0]), np.array([1.0, 3.0])
    np.testing.assert_allclose(sourcegrad.grad(f)(x, data), 2 * x * 2.0)


# A dict or list of numbers read from a global, a closure or an object's attribute: its items
# are inlined as constants, so the code depends on its values. Changed in place between calls
# (`CFG["lam"] = 0.5`), the gradient must be rebuilt; it was not (identity was all that was
# checked, and the template cache keyed the dict by identity too): the old constant was used.
# Nor was a user module's attribute (`config.LAM`) recorded at all.
RIDGE = {"lam": 0.1, "inner": {"k": 1.0}}
SCALES = [0.1, 2.0]


def _ridge_from_a_global_dict(w):
    return RIDGE["lam"] * RIDGE["inner"]["k"] * np.sum(w**2)


def _scaled_by_a_global_list(w):
    return SCALES[0] * np.sum(w**2) + SCALES[1] * np.sum(w)


CONFIG = types.ModuleType("reliability_config")  # a user's config module: `import config`
CONFIG.LAM = 0.1
CONFIG.HP = {"lam": 0.1}


def _scaled_by_a_module_number(w):
    return CONFIG.LAM * np.sum(w**2)


class _Squares:  # a callable object without a rule: the function holding it is traced
    def __call__(self, w):
        return np.sum(w**2)


def _traced_ridge(w):
    return RIDGE["lam"] * _Squares()(w) + SCALES[0] * np.sum(w)


def _traced_config(w):
    return CONFIG.LAM * _Squares()(w) + CONFIG.HP["lam"] * np.sum(w)


class _Regularised:
    def __init__(self):
        self.hyper = {"lam": 0.1}

    def loss(self, w):
        return self.hyper["lam"] * np.sum(w**2)


def _closure_over_a_dict():
    config = {"lam": 0.1}

    def loss(w):
        return config["lam"] * np.sum(w**2)

    return loss, config


def test_a_dict_or_list_of_numbers_changed_in_place_rebuilds_the_gradient(monkeypatch):
    monkeypatch.setitem(RIDGE, "lam", 0.1)
    monkeypatch.setitem(RIDGE["inner"], "k", 1.0)
    closure, config = _closure_over_a_dict()
    model = _Regularised()
    cases = [
        (_ridge_from_a_global_dict, lambda: RIDGE.__setitem__("lam", 0.5)),
        (_ridge_from_a_global_dict, lambda: RIDGE["inner"].__setitem__("k", 3.0)),
        (_scaled_by_a_global_list, lambda: SCALES.__setitem__(1, -1.5)),
        (closure, lambda: config.__setitem__("lam", 0.7)),
        (_traced_ridge, lambda: RIDGE.__setitem__("lam", 0.9)),
        (_traced_ridge, lambda: SCALES.__setitem__(0, 4.0)),
        (_scaled_by_a_module_number, lambda: setattr(CONFIG, "LAM", 0.6)),
        (_traced_config, lambda: setattr(CONFIG, "LAM", 0.2)),
        (_traced_config, lambda: CONFIG.HP.__setitem__("lam", 0.8)),
        (model.loss, lambda: model.hyper.__setitem__("lam", 0.3)),
    ]
    w = np.array([1.0, -2.0, 0.5])
    try:
        for fn, change in cases:
            gradient = sourcegrad.grad(fn)
            for _ in range(2):  # (the second call runs the fast entry)
                np.testing.assert_allclose(
                    gradient(w), numeric_grad(fn, (w,), 0), rtol=1e-6, atol=1e-8
                )
            change()
            np.testing.assert_allclose(gradient(w), numeric_grad(fn, (w,), 0), rtol=1e-6, atol=1e-8)
    finally:
        SCALES[:] = [0.1, 2.0]
        CONFIG.LAM, CONFIG.HP = 0.1, {"lam": 0.1}


def test_an_unchanged_dict_of_numbers_does_not_rebuild(monkeypatch):
    from sourcegrad.compiler import pipeline

    made = []
    generate = pipeline.generate_module
    monkeypatch.setattr(
        pipeline, "generate_module", lambda *a, **k: made.append(1) or generate(*a, **k)
    )
    closure, config = _closure_over_a_dict()
    gradient = sourcegrad.grad(closure)
    w = np.array([1.0, 2.0])
    for _ in range(5):
        gradient(w)
    config["lam"] = 0.1  # the same value written again: nothing to rebuild
    gradient(w)
    assert len(made) == 1


# ndarray subclasses whose operators mean something else: np.matrix (`*` a matrix product)
# and masked arrays (reductions skip masked entries) were differentiated as ndarrays -- the
# elementwise function's gradient (np.sum(A * A) gave 2A for a matrix A)
with warnings.catch_warnings():  # (numpy says np.matrix may go: users still pass it)
    warnings.simplefilter("ignore", PendingDeprecationWarning)
    _MATRIX = np.asmatrix(np.array([[1.0, 2.0], [3.0, 4.0]]))


def _sum_of_products(A):
    return np.sum(A * A)


def _times_a_global_matrix(x):
    return np.sum(np.asarray(x * _MATRIX))


@pytest.mark.parametrize(
    "value",
    [_MATRIX, np.ma.array([[1.0, 2.0], [3.0, 4.0]], mask=[[0, 1], [0, 0]])],
    ids=["matrix", "masked"],
)
def test_an_array_whose_operators_are_not_ndarrays_is_refused(value):
    with pytest.raises(errors.CallArgumentsError, match="argument 'A'"):
        sourcegrad.grad(_sum_of_products)(value)
    with pytest.raises(errors.CallArgumentsError, match="matrix"):
        sourcegrad.grad(_times_a_global_matrix)(np.ones((2, 2)))


def test_an_ndarray_subclass_with_ndarrays_operators_is_differentiated(tmp_path):
    stored = np.memmap(tmp_path / "a.dat", dtype=np.float64, mode="w+", shape=(2, 2))
    stored[:] = [[1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_allclose(sourcegrad.grad(_sum_of_products)(stored), 2 * np.asarray(stored))


# `out=` of a numpy function that is not a ufunc (np.clip, np.concatenate) and of a method
# (`y.clip(lo, hi, out=y)`): the result written into the buffer. The trace kept the keyword
# as a plain one (the buffer kept its old value in the IR: the clip's derivative was lost), and
# the source front end's np.concatenate did too (a zero gradient).
def _clipped_in_place(x):
    y = x.copy()
    np.clip(y, -0.5, 0.5, out=y)
    return np.sum(y**2)


def _clipped_by_the_method(x):
    y = x * 3.0
    y.clip(-1.0, 1.0, out=y)
    return np.sum(y**2)


def _concatenated_into(x):
    out = np.empty(2 * len(x))
    np.concatenate([x, x**2], out=out)
    return np.sum(out**2)


def _clipped_into_another(x):
    z = np.empty_like(x)
    np.clip(np.sin(x), -0.5, 0.5, out=z)
    return np.sum(z**3)


@pytest.mark.parametrize(
    "fn", [_clipped_in_place, _clipped_by_the_method, _concatenated_into, _clipped_into_another]
)
def test_out_of_a_function_that_is_not_a_ufunc_is_written_into(fn):
    x = np.array([0.1, 0.7, -0.9, 0.2])
    expected = numeric_grad(fn, (x,), 0)
    np.testing.assert_allclose(sourcegrad.grad(fn)(x), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sourcegrad.grad(fn)(x), expected, rtol=1e-6, atol=1e-8)


# `np.exp(v, out=o)` where o is not the call's first argument: the update is of o. The source
# front end took the first argument for the array changed, so a view of o read afterwards kept
# o's old values (a silently wrong gradient: `view = o[:3]; np.exp(v, out=o); sum(view)` gave
# the gradient of the old o), and a view of v was refused for nothing.
def _exp_into_a_buffer_with_a_view(v):
    out = v * 1.0
    view = out[:3]
    np.exp(v, out=out)
    return np.sum(view)


def _added_into_the_second_operand(v):
    u = v**2
    head = u[:2]
    np.add(v, u, out=u)
    return np.sum(head * v[:2])


def _into_a_fresh_buffer_then_again(v):
    out = np.empty(len(v))
    np.multiply(v, 2.0, out=out)
    np.add(out, v, out=out)
    return np.sum(out * v)


def _into_a_buffer_another_name_holds(v):
    buf = np.ones(len(v))
    alias = buf
    np.add(v, 1.0, out=buf)
    return np.sum(alias * v)


@pytest.mark.parametrize(
    "fn",
    [
        _exp_into_a_buffer_with_a_view,
        _added_into_the_second_operand,
        _into_a_fresh_buffer_then_again,
        _into_a_buffer_another_name_holds,
    ],
)
def test_out_of_a_ufunc_changes_the_buffer_not_its_first_operand(fn):
    v = np.array([0.3, -0.8, 1.1, 0.4])
    expected = numeric_grad(fn, (v,), 0)
    try:
        got = sourcegrad.grad(fn)(v)
    except sourcegrad.SourcegradError as exc:  # refused: only for a view of the buffer
        assert "view" in str(exc) or "head" in str(exc), exc
        return
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def _sum_into_a_0d_buffer(x):
    out = np.empty(())
    np.sum(x**2, out=out)
    return out * 1.0


def _mean_into_a_0d_buffer_returned(x):
    out = np.zeros(())
    np.mean(np.sin(x), out=out)
    return out


def _product_into_a_0d_buffer_read_whole(x):
    out = np.empty(())
    np.prod(x, out=out)
    return out[()] * 2.0


@pytest.mark.parametrize(
    "fn",
    [_sum_into_a_0d_buffer, _mean_into_a_0d_buffer_returned, _product_into_a_0d_buffer_read_whole],
)
def test_a_reduction_into_a_0d_out_buffer(fn):
    # The write's adjoint reads `g[...]` of the seed, the Python number 1.0: the compiler
    # folded it as numpy would index a float (TypeError inside the compiler).
    v = np.array([0.3, -0.8, 1.1, 0.4])
    got = sourcegrad.grad(fn)(v)
    np.testing.assert_allclose(got, numeric_grad(fn, (v,), 0), rtol=1e-6, atol=1e-8)


# An object with a `__getitem__` of its own, subscripted with differentiated values (np.r_
# under another name, a user's table): its "index" is its arguments. The source front end
# lowered it as numpy indexing, whose index carries no gradient: zeros. np.r_ under a global
# name is read as np.r_; any other such object is refused there and traced.
ROWS = np.r_


class _Table:
    def __getitem__(self, key):
        return key[0] * 2.0 + key[1]


LOOKUP = _Table()


def _rows_by_an_alias(x):
    return np.sum(ROWS[x, 2 * x] ** 2)


def _an_objects_getitem(x):
    return np.sum(LOOKUP[x, x**2] ** 2)


@pytest.mark.parametrize("fn", [_rows_by_an_alias, _an_objects_getitem])
def test_an_objects_own_getitem_is_differentiated_through_its_arguments(fn):
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(sourcegrad.grad(fn)(x), numeric_grad(fn, (x,), 0), rtol=1e-6)
