"""The compiled API: wrt forms, decorators, value_and_grad, types, caching, show, check_grad."""

import __future__

import gc
import importlib.util
import inspect
import io
import os
import time
import traceback
import tracemalloc
import types
import weakref

import numpy as np
import pytest

import sourcegrad
from sourcegrad import api, errors
from sourcegrad.api import numeric_grad
from sourcegrad.compiler import pipeline
from sourcegrad.compiler.frontend import source_check
from sourcegrad.compiler.frontend.source_check import StaleSourceError
from tests.compiler.cases import f_logreg, f_mlp


def quad(x, y):
    return np.sum(x**2 * y)


def test_wrt_index_name_and_tuple():
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_allclose(sourcegrad.grad(quad)(x, y), 2 * x * y)
    np.testing.assert_allclose(sourcegrad.grad(quad, wrt="y")(x, y), x**2)
    dx, dy = sourcegrad.grad(quad, wrt=(0, "y"))(x, y)
    np.testing.assert_allclose(dx, 2 * x * y)
    np.testing.assert_allclose(dy, x**2)


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
    assert type(zero_d) is np.float64  # (as numpy's ufuncs give for a 0-d array)
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
        return np.sum(x**2 * y)

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
        sourcegrad.api.check_grad(
            quad, np.array([1.0, 2.0]), np.array([3.0, 4.0]), rtol=0, atol=0, eps=1e-1
        )


def test_mlp_gradient_matches_a_hand_written_one():
    rng = np.random.default_rng(1)
    W1, b1, W2, b2 = (
        rng.normal(size=(4, 5)),
        rng.normal(size=5),
        rng.normal(size=(5, 3)),
        rng.normal(size=3),
    )
    X, Y = rng.normal(size=(6, 4)), np.eye(3)[[0, 1, 2, 1, 0, 2]]
    dW1, db1, dW2, db2 = sourcegrad.grad(f_mlp, wrt=(0, 1, 2, 3))(W1, b1, W2, b2, X, Y)
    # hand-written backward of softmax cross-entropy through a tanh layer
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    d_logits = (p - Y) / len(X)
    d_pre = (d_logits @ W2.T) * (1 - h**2)
    np.testing.assert_allclose(dW2, h.T @ d_logits, atol=1e-12)
    np.testing.assert_allclose(db2, d_logits.sum(0), atol=1e-12)
    np.testing.assert_allclose(dW1, X.T @ d_pre, atol=1e-12)
    np.testing.assert_allclose(db1, d_pre.sum(0), atol=1e-12)


def test_python_float_and_zero_d_scalars_agree_with_numeric():
    def f(x, y):
        return np.sin(x) * y + np.exp(x * y) / (1.0 + x**2)

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


# --- compiled code is keyed on the code object; the source must be the code run -------------


def before_swap(x):
    return np.sum(np.sin(x))


def after_swap(x):
    return np.sum(x**3)


def test_a_swapped_code_object_is_compiled_again():
    """As IPython's autoreload does: the function object stays, its __code__ is replaced."""
    target = types.FunctionType(before_swap.__code__, before_swap.__globals__, "target")
    x = np.array([0.5, -1.0, 2.0])
    g = sourcegrad.grad(target)
    both = sourcegrad.value_and_grad(target)
    np.testing.assert_allclose(g(x), np.cos(x))
    np.testing.assert_allclose(g(x), np.cos(x))  # (the fast entry is installed)
    target.__code__ = after_swap.__code__
    np.testing.assert_allclose(g(x), 3 * x**2)  # the entry's guard sees the new code
    value, dx = both(x)
    assert value == pytest.approx(np.sum(x**3)) and np.allclose(dx, 3 * x**2)
    np.testing.assert_allclose(sourcegrad.grad(target)(x), 3 * x**2)
    target.__code__ = before_swap.__code__
    np.testing.assert_allclose(g(x), np.cos(x))


MODULE_TEXT = """import numpy as np


def helper(x):
    return np.sin(x)


def edited(x):
    return np.sum(helper(x) * {factor})
"""


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rewrite(path, text):
    with open(path, "w") as out:
        out.write(text)
    stamp = os.stat(path).st_mtime + 2  # (linecache sees the change whatever the clock)
    os.utime(path, (stamp, stamp))


def test_a_source_edited_after_import_is_refused_where_it_stands(tmp_path):
    path = tmp_path / "edited_module.py"
    rewrite(path, MODULE_TEXT.format(factor="2.0"))
    module = load_module(path, "edited_module")
    x = np.array([0.3, 0.9])
    rewrite(path, MODULE_TEXT.format(factor="30.0"))  # the running code still says 2.0
    with pytest.raises(StaleSourceError) as caught:
        sourcegrad.grad(module.edited)(x)
    assert isinstance(caught.value, errors.SourcegradError)
    assert caught.value.loc.file == str(path) and caught.value.loc.line == 8
    assert "def edited(x):" in str(caught.value) and "reload" in str(caught.value)
    # an inlined helper edited after import is refused as well
    rewrite(path, MODULE_TEXT.format(factor="2.0").replace("np.sin(x)", "np.cos(x)"))
    with pytest.raises(StaleSourceError) as caught:
        sourcegrad.grad(module.edited)(x)
    assert caught.value.loc.line == 4
    # as autoreload does: the new code swapped in, the gradient follows the new source
    rewrite(path, MODULE_TEXT.format(factor="30.0"))
    fresh = load_module(path, "edited_module_again")
    module.edited.__code__ = fresh.edited.__code__
    np.testing.assert_allclose(sourcegrad.grad(module.edited)(x), 30.0 * np.cos(x))


LOADER_TEXT = """from __future__ import annotations


def load(path):
    namespace = {}
    with open(path) as source:
        # compile() inherits this module's future flags: the loaded code has the annotations one
        exec(compile(source.read(), path, "exec"), namespace)
    return namespace
"""

LOADED_TEXT = """import numpy as np


def loaded(x):
    def scaled(v: np.ndarray, k: float) -> np.ndarray:  # annotations: strings under the flag
        return v * k

    return np.sum(np.tanh(scaled(x, {factor})) ** 2)
"""


def test_code_compiled_with_inherited_future_flags_is_its_source(tmp_path):
    loader_path, path = tmp_path / "future_loader.py", tmp_path / "loaded_by_exec.py"
    rewrite(loader_path, LOADER_TEXT)
    rewrite(path, LOADED_TEXT.format(factor="3.0"))
    fn = load_module(loader_path, "future_loader").load(str(path))["loaded"]
    assert fn.__code__.co_flags & __future__.annotations.compiler_flag
    x = np.array([0.3, -0.7, 1.1])
    steps = np.eye(3) * 1e-6
    expected = [(fn(x + h) - fn(x - h)) / 2e-6 for h in steps]  # central differences
    np.testing.assert_allclose(sourcegrad.grad(fn)(x), expected, rtol=1e-6, atol=1e-9)
    # the flags are not compared, the code still is: an edit after the exec is refused
    stale = load_module(loader_path, "future_loader").load(str(path))["loaded"]
    rewrite(path, LOADED_TEXT.format(factor="4.0"))
    with pytest.raises(StaleSourceError) as caught:
        sourcegrad.grad(stale)(x)
    assert caught.value.loc.file == str(path) and caught.value.loc.line == 4


def test_the_check_compares_behaviour_not_compiler_flags():
    code = quad.__code__
    annotations = __future__.annotations.compiler_flag
    assert source_check.same_behaviour(code, code.replace(co_flags=code.co_flags | annotations))
    assert not source_check.same_behaviour(
        code, code.replace(co_flags=code.co_flags | inspect.CO_GENERATOR)
    )
    assert not source_check.same_behaviour(code, code.replace(co_consts=(None, 3.0)))


def test_where_the_check_cannot_compile_the_text_it_does_not_refuse(tmp_path, monkeypatch):
    path = tmp_path / "undecided_module.py"
    rewrite(path, MODULE_TEXT.format(factor="2.0"))
    module = load_module(path, "undecided_module")

    def exhausted(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded during compilation")

    monkeypatch.setattr(source_check, "compile", exhausted, raising=False)
    x = np.array([0.3, 0.9])
    np.testing.assert_allclose(sourcegrad.grad(module.edited)(x), 2.0 * np.cos(x))


# --- closures: a new one per step compiles once, keeps nothing, reads its own values ------------


def batch_loss(w, X):
    return np.sum(np.tanh(X @ w) ** 2)


def batch_gradient(w, X):
    t = np.tanh(X @ w)
    return X.T @ (2 * t * (1 - t**2))


@pytest.mark.long
def test_a_new_closure_per_step_compiles_once_and_keeps_nothing(monkeypatch):
    monkeypatch.setattr(api.memory_caches, "COMPILED", weakref.WeakKeyDictionary())
    made = []
    generate = pipeline.generate_module  # (stage 9, printing)
    monkeypatch.setattr(
        pipeline, "generate_module", lambda *a, **k: made.append(1) or generate(*a, **k)
    )
    rng = np.random.default_rng(0)
    w = rng.standard_normal(32) * 0.1

    def step():
        X = rng.standard_normal((256, 32))

        def loss(w):  # (a lambda is not differentiable yet: the same as a def)
            return batch_loss(w, X)

        np.testing.assert_allclose(sourcegrad.grad(loss)(w), batch_gradient(w, X), rtol=1e-10)

    tracemalloc.start()
    try:
        sizes = []
        for i in range(200):
            step()
            if i in (19, 199):
                gc.collect()
                gc.collect()  # (a Gradient is a cycle; what it held goes in the second pass)
                sizes.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert len(made) == 1
    # each step's batch is 64 KB: keeping them, or their compiled code, would grow by >12 MB
    assert sizes[1] - sizes[0] < 400_000, sizes


def test_closures_over_different_numbers_get_their_own_code():
    def scaled(c):
        def f(x):
            return np.sum(x * c)

        return f

    x = np.ones(3)
    np.testing.assert_allclose(sourcegrad.grad(scaled(2.0))(x), 2.0)
    np.testing.assert_allclose(sourcegrad.grad(scaled(3.0))(x), 3.0)
    np.testing.assert_allclose(sourcegrad.grad(scaled(2.0))(x), 2.0)


def test_a_closure_cell_rebound_between_calls_is_read_anew():
    X = np.ones((2, 3))

    def loss(w):
        return batch_loss(w, X)

    g = sourcegrad.grad(loss)
    w = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(g(w), batch_gradient(w, X))
    X = np.arange(6.0).reshape(2, 3) / 10
    np.testing.assert_allclose(g(w), batch_gradient(w, X))


def pair_loss(w, data):
    X, y = data
    return np.sum((X @ w - y) ** 2)


def test_a_tuple_of_arrays_argument_is_a_parameter_tree():
    """(It was refused; tuples are parameter trees now: tests/compiler/api/test_trees.py.)"""
    w = np.array([0.5, -1.0])
    data = (np.arange(6.0).reshape(3, 2), np.array([1.0, 2.0, 0.5]))
    X, y = data
    np.testing.assert_allclose(sourcegrad.grad(pair_loss)(w, data), 2 * X.T @ (X @ w - y))
    dX, dy = sourcegrad.grad(pair_loss, wrt=1)(w, data)
    np.testing.assert_allclose(dX, 2 * np.outer(X @ w - y, w))
    np.testing.assert_allclose(dy, -2 * (X @ w - y))


def test_closures_over_lists_of_different_lengths_get_their_own_code():
    """A list is keyed by identity (its length may shape the code), never by its type."""

    def summed_over(ws):
        def f(x):
            total = 0.0
            for w in ws:
                total = total + np.sum(w * x)
            return total

        return f

    x = np.ones(2)
    for n in (2, 3, 2, 5):
        ws = [np.full(2, float(k + 1)) for k in range(n)]
        np.testing.assert_allclose(sourcegrad.grad(summed_over(ws))(x), sum(ws))
