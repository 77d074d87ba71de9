"""Where Python's meaning and the compiler's model of it could part (the reliability issue,
round 3): decorators, rule-less calls that may write into a differentiated array, views the
alias analysis must know, containers holding aliases, one array passed twice, generator
expressions that bind late. Each program is checked as a user would check it: its value
against Python's own run, its gradient against central finite differences in float64 (on
fresh copies, since the programs change arrays in place), or a located refusal.
"""

import copy
import functools
import logging

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors

# (the registry grid's examples include np.row_stack, deprecated)
pytestmark = pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated")

X = np.array([0.3, -0.7, 1.1])
W = np.array([1.0, 2.0, 3.0])


def numeric(fn, args, pos, eps=1e-6):
    """Central differences of fn in argument `pos`, every call on fresh copies of `args`."""
    x = np.asarray(args[pos], dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        shifted = []
        for sign in (1.0, -1.0):
            moved = [copy.deepcopy(a) for a in args]
            moved[pos] = x.copy()
            moved[pos][i] += sign * eps
            shifted.append(fn(*moved))
        out[i] = (shifted[0] - shifted[1]) / (2 * eps)
    return out


def assert_like_python(fn, *args, wrt=0):
    """sourcegrad's value and gradient are Python's value and the finite differences."""
    expected = fn(*copy.deepcopy(args))
    value, got = sourcegrad.value_and_grad(fn, wrt=wrt)(*copy.deepcopy(args))
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    np.testing.assert_allclose(got, numeric(fn, args, wrt), rtol=1e-6, atol=1e-8)


def refused(fn, *args, error=errors.SourcegradError, text=None):
    """A located refusal: the error names a file and line, and (if given) says `text`."""
    with pytest.raises(error) as caught:
        sourcegrad.grad(fn)(*copy.deepcopy(args))
    message = str(caught.value)
    assert caught.value.loc is not None and ".py:" in message, message
    if text is not None:
        assert text in message, message
    return message


# -- 1. decorators: the function called is the wrapper, not the function it wraps --------------


def scaled(k):
    def deco(f):
        @functools.wraps(f)
        def w(x):
            return k * f(x)

        return w

    return deco


@scaled(10.0)
def scaled_square(x):
    return np.sum(x**2)


def test_a_wraps_decorator_that_scales_is_differentiated_as_called():
    np.testing.assert_allclose(sourcegrad.grad(scaled_square)(np.array([1.0, 2.0])), [20, 40])
    assert_like_python(scaled_square, X)


def logged(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        print("calling", func.__name__)
        return func(*args, **kwargs)

    return wrapper


def shifted(func):
    @functools.wraps(func)
    def wrapper(x, *rest, **kwargs):
        return func(x + 1.0, *rest, **kwargs)

    return wrapper


@logged
def logged_loss(x, scale=2.0):
    return np.sum(scale * np.sin(x))


@shifted
def shifted_loss(x, w, *, power=2):
    return np.sum(w * x**power)


def test_wrappers_with_args_and_kwargs_take_the_wrapped_signature(capsys):
    assert_like_python(logged_loss, X)
    assert_like_python(lambda x: logged_loss(x, scale=3.0), X)
    assert "calling logged_loss" in capsys.readouterr().out  # the wrapper ran, as in Python
    assert_like_python(shifted_loss, X, W)
    assert_like_python(shifted_loss, X, W, wrt=1)
    np.testing.assert_allclose(
        sourcegrad.grad(shifted_loss)(X, W, power=3), 3 * W * (X + 1.0) ** 2, rtol=1e-12
    )


@scaled(3.0)
def decorated_helper(v):
    return np.sum(np.tanh(v))


def test_a_decorated_helper_called_inside_is_the_wrapper():
    assert_like_python(lambda x: decorated_helper(x) ** 2, X)


def test_elementwise_grad_of_elementwise_grad_is_the_second_derivative():
    def sine(x):
        return np.sin(x)

    d2 = sourcegrad.elementwise_grad(sourcegrad.elementwise_grad(sine))
    np.testing.assert_allclose(d2(X), -np.sin(X), rtol=1e-12)

    def cube(x):
        return x**3

    d2 = sourcegrad.elementwise_grad(sourcegrad.elementwise_grad(cube))
    np.testing.assert_allclose(d2(X), 6 * X, rtol=1e-12)


def keyword_only(x, *, k=3.0):
    return np.sum(k * x**2)


def positional_only(x, /, k=3.0):
    return np.sum(k * x**2)


def test_keyword_only_and_positional_only_parameters():
    np.testing.assert_allclose(sourcegrad.grad(keyword_only)(X), 6 * X)
    np.testing.assert_allclose(sourcegrad.grad(keyword_only)(X, k=1.0), 2 * X)
    np.testing.assert_allclose(sourcegrad.grad(positional_only)(X), 6 * X)


def star_args(*xs):
    return np.sum(xs[0] ** 2)


@pytest.mark.usefixtures("source_front_end_only")
def test_a_function_of_star_args_is_refused_located_by_the_source_front_end():
    refused(star_args, X, text="named parameters")


def test_a_function_of_star_args_and_a_callable_without_source_are_traced():
    assert_like_python(star_args, X)
    assert sourcegrad.grad(functools.lru_cache(lambda x: x * 2.0))(1.0) == 2.0


# -- 2. the fence: a call with no rule never runs as if it were constant -----------------------


def copyto(x):
    a = np.zeros(3)
    np.copyto(a, x)
    return np.sum(a**2)


def put(x):
    a = np.zeros(3)
    np.put(a, [0, 1, 2], x)
    return np.sum(a**2)


def putmask(x):
    a = x * 1.0
    np.putmask(a, a > 0, 0.0)
    return np.sum(a**2)


def place(x):
    a = x * 1.0
    np.place(a, a > 0, [0.0])
    return np.sum(a**2)


def fill_diagonal(x):
    a = np.outer(x, x)
    np.fill_diagonal(a, 0.0)
    return np.sum(a**2)


def put_along_axis(x):
    a = np.zeros(3)
    np.put_along_axis(a, np.array([2, 0, 1]), x, axis=0)
    return np.sum(a * W)


def global_shuffle(x):
    a = x * W
    np.random.shuffle(a)
    return np.sum(a * W)


def generator_shuffle(x):
    rng = np.random.default_rng(0)
    a = x * W
    rng.shuffle(a)
    return np.sum(a * W)


RULELESS_WRITES = [put_along_axis, global_shuffle]


@pytest.mark.parametrize(
    "fn", [copyto, put, putmask, place, fill_diagonal], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_numpys_writing_calls_given_a_differentiated_array_are_traced_as_stores(fn, backend):
    # refused by the source front end (no rule), each is a store in the trace
    # (tests/compiler/trace/test_writing_calls.py has the forms and numpy's errors)
    got = sourcegrad.grad(fn, backend=backend)(X.copy())
    np.testing.assert_allclose(got, numeric(fn, (X.copy(),), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", RULELESS_WRITES + [generator_shuffle], ids=lambda f: f.__name__)
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_ruleless_call_given_a_differentiated_array_is_refused(fn, backend):
    with pytest.raises(errors.NoRuleError) as caught:
        sourcegrad.grad(fn, backend=backend)(X.copy())
    assert caught.value.loc is not None and caught.value.loc.line is not None
    assert "carries a gradient" in str(caught.value)


def normal_of_mu(mu):
    rng = np.random.default_rng(0)
    return np.sum(rng.normal(mu, 1.0) * W)


def global_normal_of_mu(mu):
    return np.sum(np.random.normal(mu, 1.0) * W)


def permutation_of_x(x):
    rng = np.random.default_rng(0)
    return np.sum(rng.permutation(x) * W)


def choice_of_x(x):
    rng = np.random.default_rng(0)
    return np.sum(rng.choice(x, 2) * W[:2])


@pytest.mark.parametrize(
    "fn",
    [normal_of_mu, global_normal_of_mu, permutation_of_x, choice_of_x],
    ids=lambda f: f.__name__,
)
def test_a_draw_from_differentiated_parameters_is_refused(fn):
    # a sample is a constant of the gradient: these gave zeros
    refused(fn, X, error=errors.NoRuleError, text="reparameterisation")


def shuffled_indices(x):
    idx = np.arange(3)
    np.random.shuffle(idx)  # no gradient passes through: run as written
    return np.sum(x[idx] ** 2 * W[idx])


def reparameterised(mu):
    rng = np.random.default_rng(3)
    return np.sum((mu + 0.5 * rng.standard_normal(3)) ** 2)


def filled_buffer(x):
    buf = np.empty(3)
    np.copyto(buf, W)  # data only
    print("x is", x)  # a call that only reads may see differentiated values
    return np.sum(buf * x**2)


def test_calls_no_gradient_passes_through_still_run():
    np.random.seed(1)
    got = sourcegrad.grad(shuffled_indices)(X)
    np.testing.assert_allclose(got, 2 * X * W)  # (whatever the permutation)
    expected = 2 * (X + 0.5 * np.random.default_rng(3).standard_normal(3))
    np.testing.assert_allclose(sourcegrad.grad(reparameterised)(X), expected)
    assert_like_python(filled_buffer, X)


LOG = logging.getLogger("sourcegrad.test")


def logged_with_logging(x):
    y = x**2
    logging.debug("y = %s", y)
    LOG.info("y = %s", y)
    return np.sum(y)


def test_logging_calls_see_differentiated_values():
    assert_like_python(logged_with_logging, X)


# -- 3. views: every function that may return its argument or a view says so ------------------


def through(view):
    """A function making `view` of x, changing it in place, then reading x."""

    def fn(x):
        a = view(x)
        a *= 3.0
        return np.sum(x**2)

    return fn


VIEWS = {
    "atleast_1d": np.atleast_1d,
    "atleast_2d": np.atleast_2d,
    "real": np.real,
    "real attribute": lambda x: x.real,
    "conj method": lambda x: x.conj(),
    "flip": np.flip,
    "ravel": np.ravel,
    "transpose of a matrix": lambda x: np.reshape(x, (1, 3)).T,
    "einsum transpose": lambda x: np.einsum("i->i", x),
    "astype without a copy": lambda x: x.astype(np.float64, copy=False),
}


@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
def test_an_update_through_a_view_is_refused(view):
    fn = through(view)
    # (the lambdas are in one file: the made functions' source is `fn` above)
    with pytest.raises(errors.UnsupportedSyntaxError, match="shares its memory"):
        sourcegrad.value_and_grad(fn)(X.copy())


def diagonal_decremented(x):
    d = np.diagonal(np.outer(x, x))
    d -= 1.0  # numpy: "output array is read-only"
    return np.sum(d**2)


def broadcast_written(x):
    b = np.broadcast_to(x, (2, 3))
    b[0] = 1.0
    return np.sum(b)


@pytest.mark.parametrize("fn", [diagonal_decremented, broadcast_written], ids=lambda f: f.__name__)
def test_a_write_into_a_read_only_view_raises_numpys_error(fn):
    with pytest.raises(ValueError, match="read-only"):
        fn(X.copy())
    with pytest.raises(errors.NumpyValueError, match="read-only"):
        sourcegrad.grad(fn)(X.copy())


def flattened_then_doubled(x):
    b = x.flatten()
    b *= 2.0
    return np.sum(b * x)


def test_flatten_copies_so_its_update_is_no_alias():
    assert_like_python(flattened_then_doubled, X)


def test_every_registry_entry_that_shares_memory_says_view():
    """Run every entry's grid examples: a result sharing memory with an argument must have
    the "view" property (the alias analysis reads it), or an update through the result
    would silently leave the argument's other names stale."""
    import builtins

    from sourcegrad import ops
    from tests import test_registry_grid as grid

    def leaves(v):
        if isinstance(v, np.ndarray):
            yield v
        elif isinstance(v, (list, tuple)):
            for item in v:
                yield from leaves(item)

    missing = set()
    real_eval = builtins.eval
    for name, variants in grid.EXAMPLES.items():
        for i, example in enumerate(variants):
            made = []

            def spy(code, *scopes):
                result = real_eval(code, *scopes)
                if getattr(code, "co_filename", "") == "<example>":
                    made.append(result)
                return result

            grid.eval = spy
            try:
                case = grid.Case(name, i, example)
            finally:
                del grid.eval
            arrays = [a for a in case.args if isinstance(a, np.ndarray)]
            if made and any(np.shares_memory(out, a) for out in leaves(made[0]) for a in arrays):
                if not ops.has(name, "view"):
                    missing.add(name)
    assert not missing, f"entries whose result shares memory but lack 'view': {sorted(missing)}"


# -- 4. containers holding aliases ---------------------------------------------------------------


def dict_item_update(x):
    d = {"k": x}
    d["k"] += 1
    return np.sum(x**2)


def list_item_update(x):
    lst = [x, x]
    lst[0] *= 2
    return np.sum(lst[1] ** 2)


@pytest.mark.parametrize("fn", [dict_item_update, list_item_update], ids=lambda f: f.__name__)
def test_an_update_of_a_held_array_is_an_update_of_every_name_for_it(fn):
    # (Python changes x through the container: the value 16.11 / 7.16, not 1.79)
    refused(fn, X, error=errors.UnsupportedSyntaxError, text="shares its memory")


def dict_of_counts(x):
    d = {"t": 1.0, "w": x * 1.0}
    d["t"] += 1.0  # a number: rebound
    d["w"] *= 2.0  # a new array of this function's: no other name sees it
    return d["t"] * np.sum(d["w"] ** 2)


def two_empty_dicts(x):
    a, b = {}, {}  # two dicts, though equal
    b[0] = x
    a[0] = 2.0 * x
    return np.sum(a[0] * b[0])


def test_container_updates_python_allows():
    assert_like_python(dict_of_counts, X)
    assert_like_python(two_empty_dicts, X)


# -- 5. one array passed twice -------------------------------------------------------------------


def doubled_then_multiplied(a, b):
    a *= 2
    return np.sum(a * b)


def test_an_array_changed_in_place_passed_twice_is_refused_at_the_call():
    g = sourcegrad.grad(doubled_then_multiplied)
    np.testing.assert_allclose(g(W.copy(), W + 1.0), 2 * (W + 1.0))  # distinct: fine
    for b in (W, W[:3], W[::-1]):  # the same array, or views of it
        with pytest.raises(errors.AliasedArgumentsError) as caught:
            g(W, b)
        assert caught.value.loc is not None and "a *= 2" in str(caught.value)
    np.testing.assert_allclose(g(W.copy(), W + 1.0), 2 * (W + 1.0))  # and again after
    with pytest.raises(errors.AliasedArgumentsError):
        sourcegrad.grad(doubled_then_multiplied)({"a": W, "b": W}["a"], W)
    with pytest.raises(errors.AliasedArgumentsError):
        sourcegrad.vjp(doubled_then_multiplied)(W, W)


def tree_doubled(p):
    a = p["a"]
    a *= 2
    return np.sum(a * p["b"])


def test_tree_leaves_passed_twice_are_refused_and_a_pure_function_is_not():
    with pytest.raises(errors.AliasedArgumentsError, match=r'p\["a"\]'):
        sourcegrad.grad(tree_doubled)({"a": W, "b": W})

    def pure(a, b):
        return np.sum(a * b)

    np.testing.assert_allclose(sourcegrad.grad(pure)(W, W), W)


# -- 6. generator expressions run when consumed --------------------------------------------------


def late_generator(x):
    c = 2
    gen = (x[i] * c for i in range(3))
    c = 5
    return sum(gen)


def generator_from_a_helper(x):
    def scaled_items(v, c):
        return (v[i] * c for i in range(3))

    return sum(scaled_items(x, 2.0))


@pytest.mark.usefixtures("source_front_end_only")
def test_the_source_front_end_refuses_a_kept_generator():
    refused(late_generator, X, error=errors.UnsupportedSyntaxError, text="list comprehension")


def test_a_kept_generator_runs_as_python_runs_it():
    # (traced: Python consumes it after c is rebound, value 1.4 and gradient 5 each)
    assert_like_python(late_generator, X)
    np.testing.assert_allclose(sourcegrad.grad(late_generator)(X), [5.0, 5.0, 5.0])
    assert_like_python(generator_from_a_helper, X)
    assert_like_python(lambda x: sum(x[i] * 3.0 for i in range(3)), X)
