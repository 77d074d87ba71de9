"""The numba backend (sourcegrad.compiler.backends.numba_backend): the same gradients as the numpy backend and as
central finite differences, one warning and the numpy code where numba cannot type the code,
numba's disk cache through the sourcegrad cache directory.

numba compiles slowly (a second or more a function on a busy machine): the default run
compiles three small gradients; the benchmark workloads and the loop and branch programs
of control_cases are `slow` (`pytest -m slow`)."""

import math
import os
import re
import stat
import warnings

import numpy as np
import pytest

import sourcegrad
from sourcegrad import api, cache
from sourcegrad.api import numeric_grad
from sourcegrad.compiler.backends import numba_backend, numba_fusion, numba_stacks
from sourcegrad.errors import JitFallbackWarning, SourcegradWarning
from tests.compiler.control_cases import CONTROL_CASES


def spring(k, c, x0, v0, dt, T):
    x = x0
    v = v0
    t = 0.0
    while t < T:
        a = -k * x - c * v
        x = x + dt * v
        v = v + dt * a
        t = t + dt
    return x * x + v * v


def rnn(W, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t] + b)
    return np.sum(h**2)


def softmax_rows(x):
    z = x - np.max(x, axis=1, keepdims=True)  # numba has no max(axis=, keepdims=)
    return np.sum(np.exp(z) * x)


def extremes_and_means(x):
    return np.sum(np.min(x, axis=0) ** 2) + np.sum(np.mean(x, axis=-1, keepdims=True) * x)


def running_sums(x):
    return np.sum(np.cumsum(x, axis=1) * x)  # numba has no np.flip(x, axis)


def _same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert type(a) is type(b) and np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def _against_differences(f, args, wrt, got):
    got = got if isinstance(got, tuple) else (got,)
    for g, i in zip(got, wrt):
        numeric = numeric_grad(f, args, i)
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


# -- without compiling anything ------------------------------------------------------------------


def test_reversed_ranges_count_down_through_the_same_numbers():
    for args in [(5,), (0,), (2, 7), (7, 2), (1, 8, 3), (1, 7, 3), (4, 4, 2), (0, 10, 4)]:
        call = f"reversed(range({', '.join(map(str, args))}))"
        source = f"def f():\n    return [i for i in {call}]\n"
        text = numba_backend.numba_source(source)
        assert "reversed" not in text
        namespace = {}
        exec("\n".join(line for line in text.splitlines() if "numba" not in line), namespace)
        assert namespace["f"]() == list(reversed(range(*args))), text


def test_ufunc_out_keywords_become_positional_nested_ones_too():
    source = (
        "import numpy as np\n\n\ndef f(a, b):\n"
        "    c = np.multiply(a, np.subtract(1.0, b, out=b), out=a)  # tanh\n"
        "    d = np.sum(a, out=None)\n"
        "    return c, d\n"
    )
    text = numba_backend.numba_source(source)
    assert "c = np.multiply(a, np.subtract(1.0, b, b), a)  # tanh" in text
    assert "np.sum(a, out=None)" in text  # not a ufunc: left as it is
    assert text.startswith("import numba\nimport numpy as np\n")
    assert '@numba.njit(error_model="numpy")\ndef f(a, b):' in text


def test_reductions_over_an_axis_become_what_numba_compiles():
    source = (
        "import numpy as np\nfrom sourcegrad.runtime import max_grad, reduced_count\n\n\n"
        "def f(x, g):\n"
        "    a = x.max(axis=1, keepdims=True)\n"
        "    b = np.sum(x, axis=-1, keepdims=True) / reduced_count(x, -1)\n"
        "    c = np.amin(x, axis=0) + x.mean(axis=1) + x.sum(axis=0)\n"
        "    d = max_grad(g, a, x, 1, True)\n"
        "    e = x.max(axis=(0, 1)) + np.max(x, axis=1, out=None)\n"
        "    return a, b, c, d, e\n"
    )
    text = numba_backend.numba_source(source)
    assert "a = np.expand_dims(max_along_axis(x, 1), 1)" in text
    assert "b = np.expand_dims(sum_along_axis(x, -1), -1) / x.shape[-1]" in text
    assert (
        "c = min_along_axis(x, 0) + (sum_along_axis(x, 1) / x.shape[1]) + sum_along_axis(x, 0)"
        in text
    )
    assert "d = max_grad_along_axis(g, a, x, 1)" in text
    assert "e = x.max(axis=(0, 1)) + np.max(x, axis=1, out=None)" in text  # left: refused
    # each helper once, compiled as the function is, before it
    for helper in ("max_along_axis", "min_along_axis", "sum_along_axis", "max_grad_along_axis"):
        assert text.count(f"def {helper}(") == 1
        assert text.index(f"def {helper}(") < text.index("def f(")
    assert text.count('@numba.njit(error_model="numpy")') == 5
    namespace: dict = {}  # the helpers as Python: numpy's numbers
    python = [ln for ln in text.splitlines() if not ln.startswith(("@numba", "import numba"))]
    exec("\n".join(python), namespace)
    x = np.array([[1.0, 3.0, 3.0], [2.0, -1.0, 0.5]])  # a tie in the first row
    g = np.array([[0.5], [2.0]])
    for axis in (0, 1, -1, -2):
        np.testing.assert_array_equal(namespace["max_along_axis"](x, axis), x.max(axis=axis))
        np.testing.assert_array_equal(namespace["min_along_axis"](x, axis), x.min(axis=axis))
        for y in (x, x > 1.0, (x * 3).astype(np.int32), x.astype(np.float32), x[:, :0]):
            got = namespace["sum_along_axis"](y, axis)  # numpy's dtype: int64 for bools
            assert got.dtype == y.sum(axis=axis).dtype
            np.testing.assert_allclose(got, y.sum(axis=axis), rtol=1e-6)
    nan = np.array([[1.0, np.nan, 0.5], [2.0, -1.0, np.nan]])  # a NaN wins, as in numpy
    for axis, r in [(a, r) for a in (0, 1) for r in ("max", "min")]:
        got = namespace[f"{r}_along_axis"](nan, axis)
        np.testing.assert_array_equal(got, getattr(nan, r)(axis=axis))
        for empty in (np.zeros((0, 3)), np.zeros((3, 0)), np.zeros((0, 0))):
            try:
                want = getattr(empty, r)(axis=axis)
            except ValueError:
                with pytest.raises(ValueError, match="zero-size"):
                    namespace[f"{r}_along_axis"](empty, axis)
            else:
                _same(namespace[f"{r}_along_axis"](empty, axis), want)
    cube = np.arange(24.0).reshape(2, 3, 4)  # another ndim: the sum numba has
    np.testing.assert_array_equal(namespace["sum_along_axis"](cube, 1), cube.sum(axis=1))
    from sourcegrad.runtime import max_grad

    np.testing.assert_array_equal(
        namespace["max_grad_along_axis"](g, x.max(axis=1, keepdims=True), x, 1),
        max_grad(g, x.max(axis=1, keepdims=True), x, 1, True),
    )
    h = np.array([0.5, 2.0, -1.0])
    np.testing.assert_array_equal(
        namespace["max_grad_along_axis"](h, x.min(axis=0), x, 0),
        max_grad(h, x.min(axis=0), x, 0, False),
    )
    # a name of the code's own that a helper would take: reductions left as they are
    clash = source.replace("return a,", "max_along_axis = 1\n    return a,")
    assert "x.max(axis=1, keepdims=True)" in numba_backend.numba_source(clash)


def test_unindex_at_a_range_counter_becomes_a_helper_and_no_other():
    """`unindex(g, x, j)` (the adjoint of x[j]) at an int j, a `range` loop's counter or a
    literal, as the helper `unindex_at`; at another name (an argument, which may be an
    array of indices that repeat) as `unindex_one`, which numba compiles for an int only."""
    source = (
        "import numpy as np\nfrom sourcegrad.runtime import unindex\n\n\n"
        "def f(x, g, k):\n"
        "    d = np.zeros_like(x)\n"
        "    for j in reversed(range(3)):\n"
        "        d = d + unindex(g, x, j)\n"
        "    return d + unindex(g, x, 1) + unindex(g, x, k)\n"
    )
    text = numba_backend.numba_source(source)
    assert "d = d + unindex_at(g, x, j)" in text
    assert "return d + unindex_at(g, x, 1) + unindex_one(g, x, k)" in text
    namespace: dict = {}
    python = [ln for ln in text.splitlines() if not ln.startswith(("@numba", "import numba"))]
    exec("\n".join(python), namespace)
    from sourcegrad.runtime import unindex

    x = np.arange(6.0).reshape(3, 2)
    for i in (0, 2, -1):
        _same(
            namespace["unindex_at"](np.array([1.5, -2.0]), x, i),
            unindex(np.array([1.5, -2.0]), x, i),
        )
    renamed = source.replace("for j in", "j = k\n    for j in")  # j is not only a counter
    assert "unindex_at(g, x, j)" not in numba_backend.numba_source(renamed)


def test_unindex_through_slices_becomes_the_helper_with_a_tuple_of_slices():
    """`unindex(g, x, np.s_[:, 1:3])` (the adjoint of a basic slice) as `unindex_at` given
    the index as numba writes it; a slice with a bound numba cannot know is an int is left."""
    source = (
        "import numpy as np\nfrom sourcegrad.runtime import unindex\n\n\n"
        "def f(x, g, k):\n"
        "    a = unindex(g, x, np.s_[:, 1:3])\n"
        "    for j in range(2):\n"
        "        a = a + unindex(g, x, np.s_[j, ::2]) + unindex(g, x, np.s_[1:k])\n"
        "    return a\n"
    )
    text = numba_backend.numba_source(source)
    assert "a = unindex_at(g, x, (slice(None, None), slice(1, 3)))" in text
    assert "unindex_at(g, x, (j, slice(None, None, 2)))" in text
    assert "unindex(g, x, np.s_[1:k])" in text
    pytest.importorskip("numba")
    from sourcegrad.runtime import unindex

    compiled = (
        "import numpy as np\nfrom sourcegrad.runtime import unindex\n\n\n"
        "def f(x, g):\n"
        "    return unindex(g, x, np.s_[:, 1:3])\n"
    )
    namespace: dict = {}
    exec(numba_backend.numba_source(compiled), namespace)
    x, g = np.arange(12.0).reshape(3, 4), np.ones((3, 2))
    _same(namespace["f"](x, g), unindex(g, x, np.s_[:, 1:3]))


def test_the_adjoint_of_a_max_over_every_element_is_a_helper():
    """`max_grad(g, ans, x, None, False)` (the adjoint of `np.max(x)`) as `max_grad_all`,
    which shares g among the tied maxima as runtime.max_grad does."""
    source = (
        "import numpy as np\nfrom sourcegrad.runtime import max_grad\n\n\n"
        "def f(x, g):\n"
        "    return max_grad(g, np.max(x), x, None, False)\n"
    )
    text = numba_backend.numba_source(source)
    assert "return max_grad_all(g, np.max(x), x)" in text
    pytest.importorskip("numba")
    from sourcegrad.runtime import max_grad

    namespace: dict = {}
    exec(text, namespace)
    for x in (np.array([[1.0, 3.0], [3.0, -2.0]]), np.arange(6.0).reshape(2, 3)):
        _same(namespace["f"](x, 0.6), max_grad(0.6, np.max(x), x, None, False))


def picked(x, y):
    return np.sum(np.sin(x[y[1]]) * x[y])  # an int of an int array; the array itself


def test_an_index_only_numbas_types_tell_is_compiled_at_an_int_and_refused_otherwise():
    pytest.importorskip("numba")
    x = np.array([0.3, -1.2, 2.0, 0.7])
    for y in (np.array([2, 2, 0]), np.array([1, 3, 3])):  # (repeats: they add up)
        expected = sourcegrad.grad(picked)(x, y)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            got = sourcegrad.grad(picked, backend="numba")(x, y)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    g = sourcegrad.grad(picked)
    g(x, y)
    assert "unindex_one(" in numba_backend.numba_source(g.source)
    one = sourcegrad.grad(picked_once, backend="numba")  # at an int: compiled, no fallback
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        got = one(x, np.array([2, 3, 0]))
    np.testing.assert_allclose(got, sourcegrad.grad(picked_once)(x, np.array([2, 3, 0])))


def picked_once(x, y):
    k = y[1]
    return np.sin(x[k]) * 2.0 + np.sum(x**2)


def chain3(x, y):
    v = np.sin(x)
    w = np.tanh(v * y)
    return np.sum(w * v)


def _numpy_source(f, *args):
    g = sourcegrad.grad(f)
    g(*args)
    return g.source


def test_fusion_makes_one_pass_in_blocks_writing_only_what_is_read_after_it():
    x = np.linspace(0.1, 1.0, 5)
    source = _numpy_source(chain3, x, 0.5)
    kinds = {"x": numba_fusion.kind_of(x), "y": numba_fusion.kind_of(0.5)}
    fused = numba_fusion.fuse(source, "dchain3_dx", kinds)
    block = numba_fusion.BLOCK
    assert fused.count(f"for block in range(0, x.size, {block}):") == 1  # one pass
    assert fused.count("for i in range(size):") == 3  # a loop per libm call, in the block
    assert fused.count("np.empty(x.shape)") == 1  # dx only: the rest are a block's values
    assert fused.count(f"np.empty({block})") == 2  # v and w, read by a later loop
    assert "math.sin(x[block + i])" in fused and "dx[block + i] = " in fused
    assert fused.startswith("# Generated by sourcegrad")
    plain = numba_backend.numba_source(source)  # after the whole header comment
    assert "#   gradient with respect to x.\nimport numba\n" in plain
    namespace: dict = {}
    exec(fused, namespace)  # plain Python runs it too: the same numbers
    np.testing.assert_allclose(
        namespace["dchain3_dx"](x, 0.5), sourcegrad.grad(chain3)(x, 0.5), rtol=1e-13
    )
    # arrays of two shapes (broadcasting), or arrays numba_fusion cannot see: left as they are
    two = {"x": numba_fusion.kind_of(x), "y": numba_fusion.kind_of(np.ones((2, 5)))}
    assert (
        numba_fusion.fuse(_numpy_source(chain3, x, np.ones((2, 5))), "dchain3_dx", two).count(
            "for "
        )
        == 0
    )
    assert numba_fusion.fuse(source, "dchain3_dx", {"x": None, "y": "scalar"}) == source


def test_fusion_computes_a_vector_librarys_functions_four_elements_a_call():
    x = np.linspace(0.1, 1.0, 5)
    source = _numpy_source(chain3, x, 0.5)
    kinds = {"x": numba_fusion.kind_of(x), "y": numba_fusion.kind_of(0.5)}
    fused = numba_fusion.fuse(source, "dchain3_dx", kinds, frozenset({"sin", "cos", "tanh"}))
    assert "from sourcegrad.compiler.backends import numba_vector_math as vector_math\n" in fused
    # a statement that is one call of an array: the block's values four at a time
    assert "vector_math.apply(vector_math.SIN, x[block:block + size], v[:size])" in fused
    # a call inside a longer expression: made a statement of its own, into a block buffer
    assert (
        "vector_math.apply(vector_math.COS, x[block:block + size], cos_x[:size])" in fused
        and "cos_x[i]" in fused
    )
    assert "cos_x = np.empty(512)" in fused
    # a call of an expression: the expression first, into a block buffer named after it
    assert (
        "v_y[i] = v[i] * y" in fused
        and "vector_math.apply(vector_math.TANH, v_y[:size], w[:size])" in fused
    )
    # functions not in the library: per element, as without it
    assert numba_fusion.fuse(source, "dchain3_dx", kinds, frozenset({"exp"})) == (
        numba_fusion.fuse(source, "dchain3_dx", kinds)
    )
    assert "math.tanh(v[i] * y)" in numba_fusion.fuse(source, "dchain3_dx", kinds, {"sin"})
    assert "vector_math" not in numba_fusion.fuse(source, "dchain3_dx", kinds)


def test_jit_true_asks_for_numba_except_of_cupy():
    def f(x):
        return x * x

    assert sourcegrad.grad(f, jit=True).backend == "numba"
    assert sourcegrad.value_and_grad(f, jit=True, backend="numpy").backend == "numba"
    assert sourcegrad.grad(f, jit=True, backend="cupy").backend == "cupy"
    assert sourcegrad.grad(f).backend == "auto"
    assert issubclass(JitFallbackWarning, SourcegradWarning)


def test_without_numba_the_numpy_code_runs_after_one_warning(monkeypatch):
    monkeypatch.setattr(numba_backend, "available", lambda: False)
    monkeypatch.setattr(numba_backend, "_warned", set())

    def f(x):
        return np.sum(np.sin(x) * x)

    x = np.linspace(0.1, 1.0, 4)
    with pytest.warns(JitFallbackWarning, match="numba is not installed"):
        got = sourcegrad.grad(f, backend="numba")(x)
    _same(got, sourcegrad.grad(f)(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per process, not one per gradient
        sourcegrad.grad(f, jit=True)(x + 1.0)


def _with_split_stacks(compiled):
    """The functions of a compiled gradient's module in the numba variant's text (one list
    per saved variable, `split_stack`), run as plain Python without numba's decorators."""
    text = numba_backend.numba_source(compiled.source)
    python = "\n".join(
        line.replace("numba.typed.List()", "[]")
        for line in text.splitlines()
        if not line.startswith(("@numba", "import numba"))
    )
    # a VJP's forward returns a variable never assigned (a branch not taken) as numba's zero
    # value (0.0, an empty array) that the backward never reads; in Python it must exist
    starts = "".join(f"\n    {n} = None" for n in re.findall(r"(\w+) = previous_value\(", text))
    line = "# values the backward pass needs that the forward overwrites, a list each"
    python = python.replace(line, line + starts, 1)
    namespace = dict(compiled.module.__dict__)
    exec(compile(python, "<split stacks>", "exec"), namespace)
    functions = compiled.fn if isinstance(compiled.fn, tuple) else (compiled.fn,)
    return text, tuple(namespace[f.__name__] for f in functions)


@pytest.mark.parametrize("case", CONTROL_CASES, ids=lambda c: c[0].__name__)
def test_one_stack_per_saved_variable_gives_the_same_numbers(case):
    """Each saved variable's own stack (`split_stack`, the numba variant's) pops the values
    the shared stack of the numpy code did: the same gradients and VJPs, as Python."""
    f, make_args, wrt = case
    args = make_args(np.random.default_rng(0))
    g = sourcegrad.grad(f, wrt=wrt)
    want = g(*args)
    text, (split,) = _with_split_stacks(g._last)
    if "saved = []" in g.source:
        assert "saved = []" not in text and "saved.append(" not in text
        assert "numba.typed.List()" not in text  # (one function: numba's reflected list)
    _same(g._last.finish(split(*args), args) if g._last.finish else split(*args), want)
    wrt = wrt if isinstance(wrt, tuple) else (wrt,)
    if not all(isinstance(args[i], (float, np.ndarray)) for i in wrt):
        return
    pull = sourcegrad.vjp(f, wrt=wrt)
    value, pullback = pull(*args)
    text, (forward, backward) = _with_split_stacks(pull._last)
    if "saved = []" in pull.source:  # (a forward hands its stacks to its backward)
        assert "saved.append(" not in text and "numba.typed.List()" in text
    split_value, residuals = forward(*args)
    _same(split_value, value)
    for _ in range(2):  # (a pullback called twice: the stacks are copied)
        got = backward(*[list(r) if type(r) is list else r for r in residuals], 1.0)
        _same(pull._last.finish(got, args + (1.0,)), pullback(1.0))


def branchy_loop(x, n):
    s = 0.5
    for i in range(n):
        if s > 1.0:  # the two sides save different values: a float, and another float
            s = s + np.sin(x[i])
        else:
            s = s * x[i] + 1.0
    return s


def test_split_stack_pushes_a_variable_first_assigned_in_the_loop_after_its_assignments():
    g = sourcegrad.grad(branchy_loop)
    g(np.linspace(0.5, 2.0, 4), 4)
    text = numba_stacks.split_stack(g.source)
    assert "= None" not in text and "saved.append" not in text
    assert "saved_s_mask = []" in text and "saved_s = []" in text
    # pushed after the assignment, restored as the value before it
    assert "s_mask = s > 1.0\n        saved_s_mask.append(s_mask)\n" in text
    assert "s_mask = previous_value(saved_s_mask)" in text
    assert "saved_s.append(s)\n            s = s + np.sin(x_part)" in text  # s starts as 0.5
    assert "s = saved_s.pop()" in text
    assert "# line 2: def branchy_loop" not in text  # (its only statements were the Nones)
    pair = sourcegrad.vjp(branchy_loop)
    pair(np.linspace(0.5, 2.0, 4), 4)
    text = numba_stacks.split_stack(pair.source, typed=True)
    stacks = "saved_s_mask, saved_x_part, saved_s, saved_x_part_1"
    assert f"{stacks})\n" in text and f"{stacks}, g):" in text  # forward to backward
    assert "saved_s = numba.typed.List()" in text
    # used otherwise than codegen writes it: left as it is
    odd = g.source.replace("return dx", "return dx, len(saved)")
    assert numba_stacks.split_stack(odd) == odd


# -- compiled by numba -----------------------------------------------------------------------------

numba = pytest.importorskip("numba")


def test_fused_elementwise_run_matches_numpy_and_differences():
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)  # two dimensions: flat views
    g = sourcegrad.grad(chain3, backend="numba")
    got = g(x, 0.7)
    assert "x_flat = x.ravel()" in g.source and "dx_flat = dx.reshape(dx.size)" in g.source
    from sourcegrad.compiler.backends import numba_vector_math

    if "sin" in numba_vector_math.functions():  # (glibc's libmvec: four sines a call)
        assert (
            "vector_math.apply(vector_math.SIN, x_flat[block:block + size], v[:size])" in g.source
        )
    _same(got, sourcegrad.grad(chain3)(x, 0.7))
    _against_differences(chain3, (x, 0.7), (0,), got)
    # more than a block, a transposed (Fortran-ordered) array, an empty one: numpy's numbers
    for y in (np.linspace(-1.0, 1.0, 1500).reshape(50, 30), x.T, x[:0]):
        _same(sourcegrad.grad(chain3, backend="numba")(y, 0.7), sourcegrad.grad(chain3)(y, 0.7))


def bias_tanh(x, b):
    h = np.tanh(x + b)
    return np.sum(np.sin(x) * np.cos(x)) + np.sum(h * h)


def test_large_results_outside_a_fused_run_are_computed_into_dead_buffers(monkeypatch):
    """Under numba a result of the size where allocating costs page faults is computed into a
    dead buffer as the numpy code does (`np.tanh(h, h)`: h = x + b is a broadcast, no fused
    run reads it), and a run the fusion makes one pass stays whole (sin and cos of x)."""
    from sourcegrad.compiler import optimize

    monkeypatch.setitem(optimize._BUFFER_REUSE_MIN_BYTES, "numba", 0)  # (small arrays: quick)
    monkeypatch.setattr(api.memory_caches, "COMPILED", {})
    x, b = np.linspace(-1.0, 1.0, 12).reshape(3, 4), np.linspace(0.1, 0.4, 4)
    g = sourcegrad.grad(bias_tanh, wrt=(0, 1), backend="numba")
    got = g(x, b)
    from sourcegrad.compiler.backends import numba_vector_math

    vector = "tanh" in numba_vector_math.functions()  # (glibc's libmvec: numba_vector_calls)
    assert ("vector_math.tanh(h, h)" if vector else "np.tanh(h, h)") in g.source
    assert "for block in range(0, x_flat.size, 512):" in g.source  # (sin_x, cos_x: one pass)
    assert "sin_x = np.empty(x.shape)" in g.source and "np.sin(x, " not in g.source
    _same(got, sourcegrad.grad(bias_tanh, wrt=(0, 1))(x, b))
    _against_differences(bias_tanh, (x, b), (0, 1), got)


def test_vector_math_functions_match_numpy_to_rounding():
    from sourcegrad.compiler.backends import numba_vector_math

    names = numba_vector_math.functions()
    if not names:
        pytest.skip("no libmvec here (glibc 2.35 or later, AVX2 and FMA)")
    as_numpy = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh"}
    as_numpy.update(acosh="arccosh", atanh="arctanh")
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, -2.0, 1e300]
    for name in sorted(names):
        ufunc = getattr(np, as_numpy.get(name, name), None)
        if ufunc is None:  # erf, erfc: math's on each element
            ufunc = np.vectorize(getattr(math, name), otypes=[float])
        x = np.concatenate([np.linspace(-0.95, 0.95, 9) + (2.0 if name == "acosh" else 0.0)])
        x = np.concatenate([x, special])
        dst = np.full(len(x) + 3, -7.0)
        with np.errstate(all="ignore"):
            # 16 elements: four fours
            numba_vector_math.apply(getattr(numba_vector_math, name.upper()), x, dst[2:-1])
            want = ufunc(x)
        np.testing.assert_allclose(dst[2:-1], want, rtol=4e-16 * 4, atol=0, err_msg=name)
        assert dst[0] == dst[1] == dst[-1] == -7.0  # nothing written outside
    # a tail of fewer than four, a strided source and destination: the same numbers
    x = np.linspace(0.1, 2.0, 22)
    dst = np.zeros(22)
    numba_vector_math.apply(numba_vector_math.SIN, x[2:16:2], dst[:14:2])
    np.testing.assert_allclose(dst[:14:2], np.sin(x[2:16:2]), rtol=1.6e-15)
    assert not dst[1::2].any() and not dst[14:].any()
    numba_vector_math.apply(numba_vector_math.COS, x[:3], dst)  # (the shorter's elements)
    np.testing.assert_allclose(dst[:3], np.cos(x[:3]), rtol=1.6e-15)
    np.testing.assert_allclose(dst[4:14:2], np.sin(x[6:16:2]), rtol=1.6e-15)


def test_vector_calls_rewrites_numpys_calls_of_the_ufuncs_libmvec_computes():
    from sourcegrad.compiler.backends.numba_vector_calls import vector_calls

    text = (
        "# header\n"
        "import numba\n"
        "import numpy as np\n"
        "\n\n"
        "@numba.njit\n"
        "def f(x, vector_math):\n"
        "    y = np.tanh(x)  # tanh\n"
        "    np.exp(y, y)\n"
        "    z = np.sqrt(np.arcsin(y)) + np.tanh(x, out=y) + np.sin(*x)\n"
        "    return z + math.tanh(1.0)\n"
    )
    ufuncs = {"tanh": "tanh", "exp": "exp", "arcsin": "asin"}
    got = vector_calls(text, ufuncs)
    assert (
        got.splitlines()[1:4]
        == [
            "import numba",
            "import numpy as np",
            "from sourcegrad.compiler.backends import numba_vector_math as vector_math_1",  # (a free name)
        ]
    )
    assert "    y = vector_math_1.tanh(x)  # tanh\n    vector_math_1.exp(y, y)\n" in got
    # (a keyword, a starred argument, sqrt (not libmvec's), math's: left as they are)
    assert "np.sqrt(vector_math_1.arcsin(y)) + np.tanh(x, out=y) + np.sin(*x)" in got
    assert "math.tanh(1.0)" in got
    assert vector_calls(text, {}) == text
    # the import fusion wrote is the one used
    fused = text.replace("import numpy as np\n", "import numpy as np\n" + _VECTOR_IMPORT)
    assert vector_calls(fused, ufuncs).count("import numba_vector_math") == 1
    assert "vector_math.exp(y, y)" in vector_calls(fused, ufuncs)


_VECTOR_IMPORT = "from sourcegrad.compiler.backends import numba_vector_math as vector_math\n"


def test_vector_math_ufuncs_are_numpys_ufuncs_in_numba_code():
    """`vector_math.tanh(x[, out])` compiled by numba: libmvec's for a C-ordered float64
    array, numpy's ufunc as numba compiles it for anything else, numpy's numbers either way."""
    import numba

    from sourcegrad.compiler.backends import numba_vector_math

    if "tanh" not in numba_vector_math.functions():
        pytest.skip("no libmvec here (glibc 2.35 or later, AVX2 and FMA)")
    numba_vector_math.define_ufuncs()
    tanh, arcsin = numba_vector_math.tanh, numba_vector_math.arcsin

    @numba.njit
    def new(x):
        return tanh(x)

    @numba.njit
    def into(x, out):
        return tanh(x, out)

    @numba.njit
    def asin(x):
        return arcsin(x)

    @numba.njit
    def numbas(x):
        return np.tanh(x)

    x = np.linspace(-3.0, 3.0, 35).reshape(5, 7)
    for value in (x, x.T, x[:, 1:], x[:0], x.ravel()[::2], 0.5, x.astype(np.float32), np.arange(6)):
        got, want = new(value), numbas(value)  # (numba returns a float for a number)
        assert type(got) is type(want) and np.shape(got) == np.shape(value)
        assert np.asarray(got).dtype == np.asarray(want).dtype == np.tanh(value).dtype
        eps = np.finfo(np.asarray(got).dtype).eps  # (float32's: numba's own loop, 1 ulp off)
        np.testing.assert_allclose(got, np.tanh(value), rtol=4 * eps, atol=0)
    np.testing.assert_allclose(asin(x / 3.0), np.arcsin(x / 3.0), rtol=4 * 2.3e-16)
    out = np.full((5, 7), -1.0)
    assert into(x, out) is out
    np.testing.assert_allclose(out, np.tanh(x), rtol=4 * 2.3e-16)
    y = x.copy()
    into(y, y)  # (in place)
    np.testing.assert_allclose(y, np.tanh(x), rtol=4 * 2.3e-16)
    out = np.full((7, 5), -1.0, order="F")  # (a Fortran-ordered output: numba's ufunc)
    into(x.T, out)
    np.testing.assert_allclose(out, np.tanh(x.T), rtol=4 * 2.3e-16)


def test_large_numba_gradients_are_returned_without_a_copy():
    """numba hands its arrays over with its allocation record as `base`: a gradient numba
    allocated is the caller's as it is (no pass copying it), a view of an argument or one of
    two results sharing memory is copied (`results.owns_memory`)."""
    from sourcegrad.api import results

    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    g = sourcegrad.grad(bias_tanh, wrt=(0, 1), backend="numba")
    got = g(x, np.linspace(0.1, 0.4, 4))
    assert all(type(a.base).__name__ == "_MemInfo" for a in got)  # (as numba returned them)
    assert all(results.owns_memory(a) for a in got)
    import numba

    @numba.njit
    def views(a):
        b = np.sin(a)
        return b, b.T, a[1:], a * 2.0

    both, transposed, argument_view, alone = views(x)
    assert not results.owns_memory(both) and not results.owns_memory(transposed)
    assert not results.owns_memory(argument_view) and results.owns_memory(alone)
    assert results.owns_memory(np.ones(3)) and not results.owns_memory(np.ones(3)[1:])


def logistic_loss(w, X):
    return np.mean(np.log(1.0 + np.exp(-(X @ w))))


def test_straight_line_code_on_large_arrays_runs_as_the_numpy_code_and_says_why():
    """No loop and no fused run, and an array of 2**16 elements or more: numpy's own loops and
    BLAS run each statement faster than numba's (numba_fusion.numpy_code_reason); the same
    code on small arrays, where numba wins numpy's per-operation cost, is compiled."""
    from sourcegrad.compiler.backends import numba_fusion

    rng = np.random.default_rng(0)
    w, X = rng.normal(size=8), rng.normal(size=(numba_fusion.LARGE_ARRAY // 8, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a choice, not a fallback: no warning
        g = sourcegrad.grad(logistic_loss, backend="numba")
        got = g(w, X)
    assert "# numba: the numpy code runs: straight-line code on large arrays" in g.source
    assert "@numba.njit" not in g.source
    _same(got, sourcegrad.grad(logistic_loss)(w, X))
    small = sourcegrad.grad(logistic_loss, backend="numba")
    _same(small(w, X[:64]), sourcegrad.grad(logistic_loss)(w, X[:64]))
    assert "@numba.njit" in small.source


def test_straight_line_code_on_numbers_runs_as_the_numpy_code_and_says_why():
    def f(x, y):
        return math.sin(x) * y + math.exp(x * y) / (1.0 + x**2)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a choice, not a fallback: no warning
        g = sourcegrad.grad(f, backend="numba")
        got = g(0.7, -1.3)
    assert "# numba: the numpy code runs: straight-line code on Python numbers" in g.source
    assert "@numba.njit" not in g.source and "import numba" not in g.source
    _same(got, sourcegrad.grad(f)(0.7, -1.3))
    _against_differences(f, (0.7, -1.3), (0, 1), got)
    # (a loop over numbers is compiled: the spring, below; arrays: the fused chain, above)


def test_unsupported_construct_falls_back_with_one_warning_naming_it():
    x = np.random.default_rng(0).normal(size=(2, 3))
    g = sourcegrad.grad(running_sums, backend="numba")
    with pytest.warns(JitFallbackWarning) as record:
        got = g(x)
    (warning,) = [w for w in record if issubclass(w.category, JitFallbackWarning)]
    text = str(warning.message)
    assert "running_sums" in text and "flip" in text
    assert "line " in text  # the user's line it computes or differentiates
    assert "@numba" not in g.source  # the source shown is the code that runs
    _same(got, sourcegrad.grad(running_sums)(x))
    _against_differences(running_sums, (x,), (0,), got)
    api.clear()  # compiled again: numba's refusal is remembered, and not said twice
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        _same(sourcegrad.grad(running_sums, jit=True)(x), got)


def test_scalar_loop_matches_numpy_and_differences_and_is_cached_on_disk(tmp_path, monkeypatch):
    """One compilation (numba's are slow): the gradient, then numba's disk cache."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(cache, "_warned", set())
    path = str(tmp_path / "cache")
    assert cache.enable(path) == path
    try:
        args = (4.0, 0.5, 1.0, 0.0, 0.01, 0.995)
        api.clear()
        g = sourcegrad.grad(spring, wrt=(0, 1), jit=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", JitFallbackWarning)
            got = g(*args)
        assert '@numba.njit(cache=True, error_model="numpy")' in g.source
        _same(got, sourcegrad.grad(spring, wrt=(0, 1))(*args))
        _against_differences(spring, args, (0, 1), got)
        _same(g(*args), got)  # the fast path calls the compiled function too
        assert stat.S_IMODE(os.stat(os.path.join(path, "numba")).st_mode) == 0o700
        api.clear()  # as a new process: loaded from both disk caches
        again = sourcegrad.grad(spring, wrt=(0, 1), jit=True)
        _same(again(*args), got)
        stats = again._last.fn.stats
        assert sum(stats.cache_hits.values()) == 1 and not any(stats.cache_misses.values())
    finally:
        cache.disable()
        api.clear()


def _jitted(*functions):
    return all(isinstance(f, numba.core.registry.CPUDispatcher) for f in functions)


def test_vjp_compiles_forward_and_backward():
    """Both functions of the pair compiled, the backward for the forward's residuals and a
    cotangent of the value's type; a cotangent numba refuses (float16) runs the numpy code
    after one warning."""

    def outer(x):
        return np.sin(x) * np.sum(x)

    x = np.array([0.5, 1.2, -0.4, 0.9])
    pull = sourcegrad.vjp(outer, backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        value, pullback = pull(x)
        got = pullback(np.ones(4))
    assert _jitted(*pull._last.fn)
    want_value, want_pullback = sourcegrad.vjp(outer)(x)
    _same(value, want_value)
    _same(got, want_pullback(np.ones(4)))
    _against_differences(lambda x: np.sum(outer(x)), (x,), (0,), got)
    half = np.array([1.0, 0.0, 2.0, 0.5], np.float16)
    with pytest.warns(JitFallbackWarning, match="outer"):
        got = pullback(half)
    _same(got, want_pullback(half))


@pytest.mark.slow
def test_vjp_of_a_branchy_loop_compiles_forward_and_backward():
    """A pair with stacks: numba's typed lists cross from the forward to the backward; the
    pullback called twice (each call pops copies of the stacks)."""
    x = np.array([0.5, 1.2, -0.4, 0.9])
    pull = sourcegrad.vjp(branchy_loop, jit=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        value, pullback = pull(x, 4)
        got = pullback(1.0)
        _same(pullback(1.0), got)
        _same(pullback(2), 2.0 * got)  # (an int: numba compiles it too)
    assert _jitted(*pull._last.fn)
    assert "saved_s_mask = numba.typed.List()" in pull.source
    want_value, want_pullback = sourcegrad.vjp(branchy_loop)(x, 4)
    assert value == want_value
    _same(got, want_pullback(1.0))
    _against_differences(branchy_loop, (x, 4), (0,), got)


def test_jvp_compiles_for_tangents_typed_as_their_primals():
    """The JVP function takes the primals, then a tangent per differentiated primal: compiled
    for tangents of their primals' types; another tangent (float16, which numba refuses) runs
    the numpy code after one warning."""

    def f(x, y):
        return np.tanh(x * y) + x

    x, v = np.linspace(-1.0, 1.0, 3), np.array([0.3, -0.2, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        value, tangent = sourcegrad.jvp(f, (x, 0.7), (v, None), jit=True)
    compiled = api.gradient._JVPS[(f, (0,), "numba")]._last
    assert _jitted(compiled.fn) and "@numba.njit" in compiled.source
    want = sourcegrad.jvp(f, (x, 0.7), (v, None))
    _same(value, want[0])
    _same(tangent, want[1])
    eps = 1e-6  # the directional derivative, by central differences
    np.testing.assert_allclose(tangent, (f(x + eps * v, 0.7) - f(x - eps * v, 0.7)) / (2 * eps))
    half = v.astype(np.float16)
    with pytest.warns(JitFallbackWarning, match="f"):
        _, got = sourcegrad.jvp(f, (x, 0.7), (half, None), backend="numba")
    _same(got, sourcegrad.jvp(f, (x, 0.7), (half, None))[1])


# -- slow: the benchmark workloads, the loop and branch programs -------------------------------


def _compare(f, args, wrt):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = sourcegrad.grad(f, wrt=wrt, backend="numba")(*args)
    fell_back = [w for w in record if issubclass(w.category, JitFallbackWarning)]
    _same(got, sourcegrad.grad(f, wrt=wrt)(*args))
    return got, fell_back


@pytest.mark.slow
@pytest.mark.parametrize("name", ["scalar", "logreg", "mlp", "rnn", "chain", "spring"])
def test_benchmark_workloads(name):
    from sourcegrad.bench import workloads as W

    workload = W.BY_NAME[name]
    for size in workload.quick:
        f, args = workload.function(size), W.make_args(workload, size)
        got, fell_back = _compare(f, args, tuple(workload.wrt))
        assert not fell_back, fell_back[0].message
        want = workload.reference(size)(*args)
        for a, b in zip(got if isinstance(got, tuple) else (got,), want):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("case", CONTROL_CASES, ids=lambda c: c[0].__name__)
def test_loop_and_branch_programs(case):
    f, make_args, wrt = case
    args = make_args(np.random.default_rng(0))
    wrt = wrt if isinstance(wrt, tuple) else (wrt,)
    got, _ = _compare(f, args, wrt)
    if all(isinstance(args[i], (float, np.ndarray)) for i in wrt):
        _against_differences(f, args, wrt, got)


@pytest.mark.slow
@pytest.mark.parametrize("f", [softmax_rows, extremes_and_means])
def test_reductions_over_an_axis_are_compiled_and_match(f):
    x = np.random.default_rng(0).normal(size=(3, 4))
    x[1, 2] = x[1, 0] = x[1].max() + 1.0  # a tie for the max of a row
    x[0, 3] = x[2, 3] = x[:, 3].min() - 1.0  # and for the min of a column
    got, fell_back = _compare(f, (x,), (0,))
    assert not fell_back, fell_back[0].message
    assert "_along_axis(" in sourcegrad.grad(f, backend="numba").compile((x,)).source
    x[1, 2] += 1e-3  # (differences across a tie are one-sided: checked off it)
    x[0, 3] -= 1e-3
    got, _ = _compare(f, (x,), (0,))
    _against_differences(f, (x,), (0,), got)


@pytest.mark.slow
def test_rnn_with_array_stack_matches_differences():
    rng = np.random.default_rng(1)
    args = (
        0.4 * rng.normal(size=(3, 3)),
        rng.normal(size=3),
        rng.normal(size=3),
        rng.normal(size=(5, 3)),
    )
    got, fell_back = _compare(rnn, args, (0, 1, 2))
    assert not fell_back
    _against_differences(rnn, args, (0, 1, 2), got)
    assert math.isfinite(float(np.sum(got[0])))


def test_the_numba_variant_leaves_out_del_lines():
    """numba has no `del` (it frees an array once its variable is dead): the lines the numpy
    code frees large arrays with early are left out, the note above a long one too."""
    note = "# read no more: the memory goes back now"
    text = (
        "import numpy as np\n\n\ndef f(x):\n    y = x * 2.0\n    z = y.sum()\n"
        f"    del y  {note}\n    w = z * x\n    {note}\n    del w\n    return z\n"
    )
    out = numba_backend.numba_source(text)
    assert "del " not in out and note not in out
    assert "    z = y.sum()\n    w = z * x\n    return z\n" in out
    compile(out, "<numba variant>", "exec")


def while_with_branch(x):
    s = 0.0
    v = x
    k = 0
    while k < 4:
        if s < 1.0:  # one side saves an array and a float, the other nothing
            v = np.tanh(v) * 1.5
            s = s + np.sum(v)
        else:
            s = s * 0.5 + np.sum(v * v)
        k = k + 1
    return s


def mixed_types(x, y):
    h = x
    c = y
    for t in range(3):  # saves arrays, floats and masks
        m = np.sum(h) > 0.0
        a = c * np.sum(h)
        h = np.sin(h * c) + a * m
        c = c * 0.9 + np.cos(c)
    return np.sum(h * h) + c


def nested_loops(A):
    s = 0.0
    for i in range(A.shape[0]):
        r = A[i]
        for j in range(A.shape[1]):
            s = s * 0.5 + np.sin(r[j] * s + 1.0)
        r = r * s
        s = s + np.sum(r)
    return s


@pytest.mark.slow
@pytest.mark.parametrize(
    "f, args, wrt",
    [
        (branchy_loop, (np.array([0.5, 1.2, -0.4, 0.9]), 4), (0,)),
        (while_with_branch, (np.linspace(-0.5, 0.7, 3),), (0,)),
        (mixed_types, (np.linspace(-0.5, 0.7, 3), 0.3), (0, 1)),
        (nested_loops, (np.linspace(-0.5, 0.7, 6).reshape(2, 3),), (0,)),
    ],
    ids=lambda a: getattr(a, "__name__", ""),
)
def test_loops_saving_values_of_several_types_are_compiled(f, args, wrt):
    """One stack per saved variable, each of one type: loops with branches saving different
    values, values of several types, nested loops compile (no fallback) and match."""
    got, fell_back = _compare(f, args, wrt)
    assert not fell_back, fell_back[0].message
    g = sourcegrad.grad(f, wrt=wrt, backend="numba")
    g(*args)
    assert _jitted(g._last.fn) and "saved = []" not in g.source
    _against_differences(f, args, wrt, got)
