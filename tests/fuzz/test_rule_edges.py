"""Derivative rules at their edges, with exact expected values (torch's conventions), and
every unary function at random points against finite differences.

Ties split the gradient evenly (np.maximum/np.minimum: 0.5 each; a full np.max/np.min:
evenly among the tied elements), np.clip passes the gradient at a bound, abs has gradient 0
at 0, prod with one zero gives the product of the others there, sqrt has gradient inf at 0.
"""

import math

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad

from .programs import Program, load, unload


def d_maximum(x, y):
    return np.sum(np.maximum(x, y))


def d_minimum(x, y):
    return np.sum(np.minimum(x, y))


def d_max(x):
    return np.max(x)


def d_min(x):
    return np.min(x)


def d_amax_method(x):
    return x.max()


def d_max_axis(x):
    return np.sum(np.max(x, axis=1))


def d_clip(x):
    return np.sum(np.clip(x, 0.0, 1.0))


def d_clip_method(x):
    return np.sum(x.clip(0.0, 1.0))


def d_abs(x):
    return np.sum(np.abs(x))


def d_builtin_abs(x):
    return abs(x)


def d_prod(x):
    return np.prod(x)


def d_sqrt(x):
    return np.sum(np.sqrt(x))


def d_var(x):
    return np.var(x)


def d_var_ddof(x):
    return np.var(x, ddof=1)


def d_std(x):
    return np.std(x)


def d_std_axis(x):
    return np.sum(np.std(x, axis=0))


def d_builtin_max(x, y):
    return max(x, y)


def _g(fn, *args, wrt=0):
    return sourcegrad.grad(fn, wrt=wrt)(*args)


def test_maximum_minimum_ties_split_evenly():
    x = np.array([1.0, 2.0, 3.0])
    gx, gy = _g(d_maximum, x, x.copy(), wrt=(0, 1))
    np.testing.assert_array_equal(gx, [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(gy, [0.5, 0.5, 0.5])
    gx, gy = _g(d_minimum, x, np.array([1.0, 0.0, 5.0]), wrt=(0, 1))
    np.testing.assert_array_equal(gx, [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(gy, [0.5, 1.0, 0.0])


def test_full_max_ties_split_evenly():
    np.testing.assert_array_equal(_g(d_max, np.array([1.0, 3.0, 3.0])), [0.0, 0.5, 0.5])
    np.testing.assert_array_equal(
        _g(d_amax_method, np.array([3.0, 3.0, 3.0, 1.0])), [1 / 3, 1 / 3, 1 / 3, 0.0]
    )
    np.testing.assert_array_equal(_g(d_min, np.array([1.0, 1.0, 3.0])), [0.5, 0.5, 0.0])


def test_max_with_axis_ties_get_weights_summing_to_one():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    g = _g(d_max_axis, x)
    tied = np.array([[False, True, True], [True, True, False]])
    assert np.all(g[~tied] == 0.0) and np.all(g >= 0.0)
    np.testing.assert_allclose(g.sum(axis=1), [1.0, 1.0])


def test_clip_passes_the_gradient_at_a_bound():
    x = np.array([0.0, 0.5, 1.0, -0.5, 1.5])
    np.testing.assert_array_equal(_g(d_clip, x), [1.0, 1.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(_g(d_clip_method, x), [1.0, 1.0, 1.0, 0.0, 0.0])


def test_abs_at_zero_is_zero():
    np.testing.assert_array_equal(_g(d_abs, np.array([0.0, -2.0, 3.0])), [0.0, -1.0, 1.0])
    assert _g(d_builtin_abs, 0.0) == 0.0


def test_prod_with_zeros():
    np.testing.assert_array_equal(_g(d_prod, np.array([0.0, 2.0, 3.0])), [6.0, 0.0, 0.0])
    np.testing.assert_array_equal(_g(d_prod, np.array([0.0, 0.0, 3.0])), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(_g(d_prod, np.array([4.0, 2.0, 3.0])), [6.0, 12.0, 8.0])


def test_sqrt_at_zero_is_inf():
    with np.errstate(divide="ignore"):
        g = _g(d_sqrt, np.array([0.0, 4.0]))
    assert g[0] == np.inf and g[1] == 0.25


def test_builtin_max_of_two_floats():
    assert _g(d_builtin_max, 1.0, 2.0, wrt=(0, 1)) == (0.0, 1.0)
    assert _g(d_builtin_max, 2.0, 1.0, wrt=(0, 1)) == (1.0, 0.0)


def test_var_std_exact():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    c = x - x.mean()
    np.testing.assert_allclose(_g(d_var, x), 2 * c / 4, rtol=1e-14)
    np.testing.assert_allclose(_g(d_var_ddof, x), 2 * c / 3, rtol=1e-14)
    np.testing.assert_allclose(_g(d_std, x), c / (4 * np.std(x)), rtol=1e-14)
    m = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 0.25]])
    cm = m - m.mean(axis=0)
    np.testing.assert_allclose(_g(d_std_axis, m), cm / (2 * np.std(m, axis=0)), rtol=1e-14)


def test_the_conventions_are_torchs():
    torch = pytest.importorskip("torch")
    cases = [
        (d_max, torch.amax, [1.0, 3.0, 3.0]),
        (d_clip, lambda t: torch.clamp(t, 0, 1).sum(), [0.0, 0.5, 1.0, -0.5, 1.5]),
        (d_abs, lambda t: t.abs().sum(), [0.0, -2.0, 3.0]),
        (d_prod, torch.prod, [0.0, 2.0, 3.0]),
        (d_prod, torch.prod, [0.0, 0.0, 3.0]),
    ]
    for fn, tfn, values in cases:
        t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
        tfn(t).backward()
        np.testing.assert_array_equal(_g(fn, np.array(values)), t.grad.numpy(), err_msg=fn.__name__)


# --- every unary function at random points -----------------------------------------------

UNARY_DOMAINS = {
    "exp": (-2, 2),
    "exp2": (-2, 2),
    "expm1": (-2, 2),
    "log": (0.2, 3),
    "log1p": (-0.5, 3),
    "log2": (0.2, 3),
    "log10": (0.2, 3),
    "sqrt": (0.2, 3),
    "cbrt": (0.2, 3),
    "square": (-2, 2),
    "reciprocal": (0.3, 3),
    "sin": (-3, 3),
    "cos": (-3, 3),
    "tan": (-1.2, 1.2),
    "arcsin": (-0.9, 0.9),
    "arccos": (-0.9, 0.9),
    "arctan": (-3, 3),
    "sinh": (-2, 2),
    "cosh": (-2, 2),
    "tanh": (-2, 2),
    "arcsinh": (-3, 3),
    "arccosh": (1.2, 3),
    "arctanh": (-0.9, 0.9),
    "abs": (0.1, 2),
    "absolute": (-2, -0.1),
    "fabs": (0.1, 2),
    "negative": (-2, 2),
}
MATH_DOMAINS = {
    "exp": (-2, 2),
    "log": (0.2, 3),
    "sqrt": (0.2, 3),
    "sin": (-3, 3),
    "cos": (-3, 3),
    "tan": (-1.2, 1.2),
    "tanh": (-2, 2),
    "atan": (-3, 3),
}


@pytest.fixture(scope="module")
def unary_module(tmp_path_factory):
    lines = ["import math", "", "import numpy as np", ""]
    for name in UNARY_DOMAINS:
        lines += [
            "",
            f"def np_{name}(x):",
            f"    return np.sum(np.{name}(x) * np.{name}(x + 0.05))",
        ]
    for name in MATH_DOMAINS:
        lines += ["", f"def math_{name}(x):", f"    return math.{name}(x) * 1.5"]
    module, path = load(
        Program("rule_edges_unary", "\n".join(lines) + "\n", []),
        str(tmp_path_factory.mktemp("unary")),
    )
    yield module
    unload(module, path)


@pytest.mark.parametrize("name", sorted(UNARY_DOMAINS))
def test_unary_numpy_function_at_random_points(name, unary_module):
    fn = getattr(unary_module, f"np_{name}")
    lo, hi = UNARY_DOMAINS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    x = rng.uniform(lo, hi - 0.05 if hi > lo + 0.1 else hi, size=7)
    np.testing.assert_allclose(
        sourcegrad.grad(fn)(x), numeric_grad(fn, (x,), 0), rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize("name", sorted(MATH_DOMAINS))
def test_unary_math_function_at_random_points(name, unary_module):
    fn = getattr(unary_module, f"math_{name}")
    lo, hi = MATH_DOMAINS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    for x in rng.uniform(lo, hi, size=3):
        g = sourcegrad.grad(fn)(float(x))
        assert type(g) is float
        assert math.isclose(g, numeric_grad(fn, (float(x),), 0), rel_tol=1e-6, abs_tol=1e-8)
