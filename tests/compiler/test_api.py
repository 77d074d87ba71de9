"""The compiled API: wrt forms, decorators, value_and_grad, types, caching, show, check_grad."""
import inspect
import io
import traceback

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad

from .cases import f_logreg, f_mlp


def quad(x, y):
    return np.sum(x ** 2 * y)


def test_wrt_index_name_and_tuple():
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_allclose(sourcegrad.grad(quad)(x, y), 2 * x * y)
    np.testing.assert_allclose(sourcegrad.grad(quad, wrt="y")(x, y), x ** 2)
    dx, dy = sourcegrad.grad(quad, wrt=(0, "y"))(x, y)
    np.testing.assert_allclose(dx, 2 * x * y)
    np.testing.assert_allclose(dy, x ** 2)


def test_decorator_forms():
    @sourcegrad.grad
    def f(x):
        return np.sum(np.sin(x))

    @sourcegrad.grad(wrt=("a",))
    def h(a, b):
        return np.sum(a * b)

    x = np.array([0.1, 0.2])
    np.testing.assert_allclose(f(x), np.cos(x))
    (da,) = h(x, x + 1.0)
    np.testing.assert_allclose(da, x + 1.0)
    assert f.__wrapped__.__name__ == "f"
    assert "def df_dx(x):" in f.source


def test_value_and_grad():
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    value, dx = sourcegrad.value_and_grad(quad)(x, y)
    assert value == pytest.approx(quad(x, y))
    np.testing.assert_allclose(dx, 2 * x * y)


def test_gradients_keep_the_input_type_shape_and_dtype():
    x32 = np.array([[0.5, 1.5]], dtype=np.float32)
    g = sourcegrad.grad(lambda_free_tanh)(x32)
    assert g.dtype == np.float32 and g.shape == (1, 2)
    assert isinstance(sourcegrad.grad(scalar_fn)(0.5), float)
    zero_d = sourcegrad.grad(scalar_fn)(np.array(0.5))
    assert isinstance(zero_d, np.ndarray) and zero_d.shape == ()
    assert isinstance(sourcegrad.grad(scalar_fn)(np.float64(0.5)), np.float64)


def lambda_free_tanh(x):
    return np.sum(np.tanh(x))


def scalar_fn(x):
    return np.sin(x) * x


def test_gradient_is_a_fresh_writable_array():
    def total(x):
        return np.sum(x)
    x = np.ones(3)
    g = sourcegrad.grad(total)(x)
    assert g.flags.writeable and g is not x
    g[0] = 5.0  # must not fail (not a read-only broadcast view)


def test_compiled_code_is_cached_per_signature():
    def weighted(x, y):
        return np.sum(x ** 2 * y)
    g = sourcegrad.grad(weighted)
    x = np.ones(3)
    g(x, x)
    first = g._last
    g(x + 1.0, x)
    assert g._last is first
    g(np.ones(4), np.ones(4))
    assert g._last is not first
    assert len(g._cache) == 2


def test_source_is_a_real_module_for_inspect_and_tracebacks():
    g = sourcegrad.grad(f_logreg)
    w, X, y = np.zeros(3), np.ones((4, 3)), np.ones(4)
    g(w, X, y)
    fn = g._last.fn
    assert inspect.getsource(fn).startswith("def df_logreg_dw(w, X, y):")
    try:
        g(w, np.ones((4, 2)), y)  # wrong shapes: the error is raised inside generated lines
    except ValueError:
        text = traceback.format_exc()
    assert "<sourcegrad:df_logreg_dw" in text or "matmul" in text


def test_show_prints_the_source():
    out = io.StringIO()
    source = sourcegrad.show(quad, np.ones(2), np.ones(2), file=out)
    assert out.getvalue() == source
    assert "def dquad_dx(x, y):" in source


def test_check_grad_passes_and_fails():
    assert sourcegrad.check_grad(quad, np.array([1.0, 2.0]), np.array([3.0, 4.0])) < 1.0
    with pytest.raises(sourcegrad.SourcegradError):
        sourcegrad.api.check_grad(quad, np.array([1.0, 2.0]), np.array([3.0, 4.0]), rtol=0,
                                  atol=0, eps=1e-1)


def test_mlp_gradient_matches_a_hand_written_one():
    rng = np.random.default_rng(1)
    W1, b1, W2, b2 = rng.normal(size=(4, 5)), rng.normal(size=5), rng.normal(size=(5, 3)), \
        rng.normal(size=3)
    X, Y = rng.normal(size=(6, 4)), np.eye(3)[[0, 1, 2, 1, 0, 2]]
    dW1, db1, dW2, db2 = sourcegrad.grad(f_mlp, wrt=(0, 1, 2, 3))(W1, b1, W2, b2, X, Y)
    # hand-written backward of softmax cross-entropy through a tanh layer
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    d_logits = (p - Y) / len(X)
    d_pre = (d_logits @ W2.T) * (1 - h ** 2)
    np.testing.assert_allclose(dW2, h.T @ d_logits, atol=1e-12)
    np.testing.assert_allclose(db2, d_logits.sum(0), atol=1e-12)
    np.testing.assert_allclose(dW1, X.T @ d_pre, atol=1e-12)
    np.testing.assert_allclose(db1, d_pre.sum(0), atol=1e-12)


def test_python_float_and_zero_d_scalars_agree_with_numeric():
    def f(x, y):
        return np.sin(x) * y + np.exp(x * y) / (1.0 + x ** 2)
    for args in ((0.3, 0.7), (np.array(0.3), np.array(0.7))):
        dx, dy = sourcegrad.grad(f, wrt=(0, 1))(*args)
        assert dx == pytest.approx(numeric_grad(f, args, 0), rel=1e-7)
        assert dy == pytest.approx(numeric_grad(f, args, 1), rel=1e-7)


def test_compiled_code_is_shared_per_function_and_wrt():
    x = np.ones(3)
    a, b = sourcegrad.grad(quad), sourcegrad.grad(quad)
    a(x, x)
    b(x, x)
    assert a._last is b._last
    c = sourcegrad.grad(quad, wrt=1)
    c(x, x)
    assert c._last is not a._last


def test_nested_function_with_closure_and_decorated_function():
    scale = 3.0
    offsets = np.array([1.0, 2.0])

    def inner(x):
        return np.sum((x * scale + offsets) ** 2)

    x = np.array([0.5, -0.5])
    np.testing.assert_allclose(sourcegrad.grad(inner)(x), 2 * (x * scale + offsets) * scale)

    import functools

    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return fn(*args)
        return wrapper

    @logged
    def decorated(x):
        return np.sum(np.exp(x))

    np.testing.assert_allclose(sourcegrad.grad(decorated)(x), np.exp(x))


def test_threads_compile_once():
    import threading

    def f(x):
        return np.sum(np.cos(x) * x)

    g = sourcegrad.grad(f)
    results = []
    threads = [threading.Thread(target=lambda: results.append(g(np.ones(5)))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(g._cache) == 1 and len(results) == 8


def test_saved_manifest_names_line_and_reading_rules():
    g = sourcegrad.grad(f_logreg)
    g(np.zeros(3), np.ones((4, 3)), np.ones(4))
    saved = {item["name"]: item for item in g.saved}
    assert saved["exp_neg_y_X_w"]["shape"] == (4,)
    assert saved["exp_neg_y_X_w"]["bytes"] == 32
    assert saved["exp_neg_y_X_w"]["line"] is not None and not saved["exp_neg_y_X_w"]["input"]
    assert "exp" in saved["exp_neg_y_X_w"]["read_by"]
    assert saved["X"]["input"]


SCALE_FOR_TEST = 2.0


def scaled_by_global(x):
    return np.sum(x * SCALE_FOR_TEST)


def test_rebinding_a_global_regenerates_the_gradient():
    global SCALE_FOR_TEST
    g = sourcegrad.grad(scaled_by_global)
    x = np.ones(2)
    np.testing.assert_allclose(g(x), [2.0, 2.0])
    SCALE_FOR_TEST = 5.0
    try:
        np.testing.assert_allclose(g(x), [5.0, 5.0])
    finally:
        SCALE_FOR_TEST = 2.0
