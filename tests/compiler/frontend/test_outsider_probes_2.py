"""Programs written as outsiders write them (the second outsider probes), each of which gave
a silently wrong result: checked through both front ends (the source front end and the
trace) against Python's own value and central finite differences in float64, or against a
located refusal.
"""

import copy

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import memory_caches

X = np.array([0.35, 1.7, -2.2, 0.9])
FRONT_ENDS = ["source", "trace"]


def numeric(fn, x, eps=1e-6):
    """Central differences of the scalar fn at x, each call on a fresh copy."""
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        out[i] = (fn(x.copy() + step) - fn(x.copy() - step)) / (2 * eps)
    return out


def gradient(fn, front_end, **kwargs):
    """value_and_grad(fn) from its source or from a trace: the code compiled for fn before is
    dropped first (a Gradient of fn reuses the code another one compiled, whichever front end
    made it, so the second front end asked would not run)."""
    memory_caches.forget(fn)
    g = sourcegrad.value_and_grad(fn, **kwargs)
    g.reads_source = front_end == "source"
    return g


# -- a default value changed in place ---------------------------------------------------------
# (a default is made once, when the def runs, and Python keeps a change made in place for
# every later call; the gradient's code took it as an argument of its own and never changed
# it: the second call's value and gradient were the first call's, 8.66 and 2x where Python's
# second call gives 17.3 and x + 2x)


def accumulates_in_default(x, buf=np.zeros(4)):  # noqa: B008 (the mutable default is the point)
    buf += x
    return np.sum(buf * x)


def item_of_default(x, buf=np.zeros(4)):  # noqa: B008
    buf[0] = buf[0] + x[0]
    return np.sum(buf * x)


def view_of_default(x, buf=np.ones(4)):  # noqa: B008
    head = buf[:2]
    head *= 2.0
    return np.sum(buf * x)


def out_into_default(x, buf=np.zeros(4)):  # noqa: B008
    np.add(buf, x, out=buf)
    return np.sum(buf * x)


def keyword_only_default(x, *, buf=np.zeros(4)):  # noqa: B008
    buf *= 2.0
    return np.sum((buf + x) * x)


def list_default_item(x, acc=[np.zeros(4)]):  # noqa: B006
    acc[0] = acc[0] + x
    return np.sum(acc[0] * x)


def list_default_in_place(x, acc=[np.zeros(4)]):  # noqa: B006
    acc[0] += x
    return np.sum(acc[0] * x)


def list_default_appended(x, seen=[]):  # noqa: B006
    seen.append(1)
    return len(seen) * np.sum(x**2)


CHANGES_ITS_DEFAULT = [
    accumulates_in_default,
    item_of_default,
    view_of_default,
    out_into_default,
    keyword_only_default,
    list_default_item,
    list_default_in_place,
    list_default_appended,
]


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize("fn", CHANGES_ITS_DEFAULT)
def test_a_default_changed_in_place_is_refused(fn, front_end):
    before = copy.deepcopy(fn.__defaults__ or fn.__kwdefaults__)
    with pytest.raises(sourcegrad.errors.OutsideChangeError) as caught:
        gradient(fn, front_end)(X.copy())
    message = str(caught.value)
    assert caught.value.loc is not None, message
    assert "test_outsider_probes_2.py" in message, message
    assert caught.value.loc.line >= fn.__code__.co_firstlineno, message
    assert "default value of its parameter" in message or "changes the list" in message, message
    # (left as it was)
    after = fn.__defaults__ or fn.__kwdefaults__
    assert repr(after) == repr(before)


def copies_its_default(x, buf=np.zeros(4)):  # noqa: B008
    buf = buf.copy()
    buf += x
    return np.sum(buf * x)


def reads_its_default(x, w=np.array([1.0, 2.0, 3.0, 4.0]), seen=[]):  # noqa: B006, B008
    total = w * x
    total += len(seen)
    return np.sum(total * x)


def rebinds_its_list_default(x, acc=[]):  # noqa: B006
    acc = list(acc)
    acc.append(x)
    acc.append(x**2)
    return np.sum(acc[0] * acc[1])


def number_default(x, s=1.0):
    s += 1.0
    return np.sum(s * x)


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize(
    "fn", [copies_its_default, reads_its_default, rebinds_its_list_default, number_default]
)
def test_a_default_only_read_is_differentiated(fn, front_end):
    g = gradient(fn, front_end)
    for _ in range(2):  # (the same each call, as Python's)
        value, got = g(X.copy())
        assert value == pytest.approx(fn(X.copy()), rel=1e-12)
        np.testing.assert_allclose(got, numeric(fn, X), rtol=1e-6, atol=1e-8)


# -- keyword-only parameters through the trace ------------------------------------------------
# (the trace called the function with every argument by position: Python's TypeError, "f()
# takes 1 positional argument but 2 were given", and a function the source front end hands to
# the trace could not be differentiated)


def keyword_only(x, *, k=2.0, scale=np.array([1.0, 2.0, 3.0, 4.0])):  # noqa: B008
    return np.sum(scale * x**k)


@pytest.mark.parametrize("kwargs", [{}, {"k": 3.0}, {"scale": X[::-1].copy(), "k": 2.0}])
def test_keyword_only_parameters_are_traced(kwargs):
    g = gradient(keyword_only, "trace")
    value, got = g(X.copy(), **kwargs)
    assert value == pytest.approx(keyword_only(X.copy(), **kwargs), rel=1e-12)
    want = numeric(lambda x: keyword_only(x, **kwargs), X)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


# -- `~` in a rule's template -----------------------------------------------------------------
# (a rule template's `~m` was read as m: the gradient of a user's rule `g * ~(x > 0)` was
# `g * (x > 0)`, the other elements'; found writing torch's fmax rule, whose y-gradient
# `g * ~(x >= y | isnan(y))` was the x-gradient summed)


def soft_clip_above(x):
    """x where x <= 1, 1 + log(x) elsewhere (differentiable, a user's own function)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(x > 1.0, 1.0 + np.log(np.abs(x)), x)


@pytest.fixture
def soft_clip_rule():
    from sourcegrad import ops
    from sourcegrad.ops import registry

    op = ops.defvjp(
        "test_outsider_probes_2_soft_clip",
        soft_clip_above,
        ops.Spelling("module", f"{__name__}.soft_clip_above"),
        lambda g, ans, x: g * ~(x > 1.0) + g * (x > 1.0) / x,
        kind="elementwise",
    )
    yield
    registry.RULES.pop(op.name, None)
    registry._BY_FUNCTION.pop(registry._function_key(soft_clip_above), None)


def uses_soft_clip(x):
    return np.sum(soft_clip_above(x * 2.0) * np.array([1.0, 2.0, 3.0, 4.0]))


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_invert_in_a_rule_template(soft_clip_rule, front_end):
    value, got = gradient(uses_soft_clip, front_end)(X.copy())
    assert value == pytest.approx(uses_soft_clip(X.copy()), rel=1e-12)
    np.testing.assert_allclose(got, numeric(uses_soft_clip, X), rtol=1e-6, atol=1e-8)


# -- np.interp with the sample points written as a list ---------------------------------------
# (the gradient in fp indexed the list with an array: Python's TypeError "only integer scalar
# arrays can be converted to a scalar index" from inside sourcegrad, where numpy takes a list)


def interp_samples_listed(x):
    return np.sum(np.interp(np.array([0.5, 1.2, 2.9, 3.5]), [0.0, 1.0, 2.0, 3.0], x) * X)


def interp_samples_in_a_tuple(x):
    grid = np.array([[0.5, 1.5], [2.5, -1.0]])
    return np.sum(np.interp(grid, (0.0, 1.0, 2.0, 3.0), x**2))


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize("fn", [interp_samples_listed, interp_samples_in_a_tuple])
def test_interp_with_listed_samples(fn, front_end):
    value, got = gradient(fn, front_end)(X.copy())
    assert value == pytest.approx(fn(X.copy()), rel=1e-12)
    np.testing.assert_allclose(got, numeric(fn, X), rtol=1e-6, atol=1e-8)


# -- enumerate's start ------------------------------------------------------------------------
# (the source front end counted from 0 whatever the start: the gradient of
# `sum(i * v for i, v in enumerate(x, start=2))` was [0, 1, 2, 3] where it is [2, 3, 4, 5])


def enumerate_from_two(x):
    return sum(i * v for i, v in enumerate(x, start=2))


def enumerate_from_one_with_break(x):
    s = 0.0
    for i, v in enumerate(x, 1):
        if i > 3:
            break
        s = s + i * v**2
    return s


def enumerate_from_an_argument(x, k=3):
    s = 0.0
    for i, v in enumerate(x[1:], k):
        s = s + x[i % 4] * v
    return s


def enumerate_nested(x):
    s = 0.0
    for j, row in enumerate(np.outer(x, x), start=1):
        for i, v in enumerate(row, j):
            s = s + v * i
    return s


def enumerate_in_a_list(x):
    return sum([i * v for i, v in enumerate([x[0], x[1] ** 2], start=-3)])


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize(
    "fn",
    [
        enumerate_from_two,
        enumerate_from_one_with_break,
        enumerate_from_an_argument,
        enumerate_nested,
        enumerate_in_a_list,
    ],
)
def test_enumerate_start(fn, front_end):
    value, got = gradient(fn, front_end)(X.copy())
    assert value == pytest.approx(fn(X.copy()), rel=1e-12)
    np.testing.assert_allclose(got, numeric(fn, X), rtol=1e-6, atol=1e-8)


# -- isinstance of a traced value -------------------------------------------------------------
# (the trace runs the function on stand-ins: `isinstance(x, np.ndarray)` was False on them, so
# a function the source front end hands to the trace took the other branch, silently: the
# gradient of `np.sum(scale(x) ** 2)` below was 2x where it is 8x)


def _doubled_if_array(v):
    if isinstance(v, np.ndarray):
        return v * 2.0
    return v


def isinstance_in_a_helper(x):
    held = {}
    held[len(str(type(x)))] = x  # (a key made when it runs: the source front end stops here)
    return np.sum(_doubled_if_array(next(iter(held.values()))) ** 2)


def isinstance_of_numbers(x):
    total = 0.0
    for v in [x[0], x[1] * 2.0, 3.0]:
        total = total + (v**2 if isinstance(v, (float, np.floating)) else -v)
    return total + (np.sum(x) if isinstance(x, (list, tuple)) else np.sum(x**3))


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize("fn", [isinstance_in_a_helper, isinstance_of_numbers])
def test_isinstance_of_a_traced_value(fn, front_end):
    value, got = gradient(fn, front_end)(X.copy())
    assert value == pytest.approx(fn(X.copy()), rel=1e-12)
    np.testing.assert_allclose(got, numeric(fn, X), rtol=1e-6, atol=1e-8)
