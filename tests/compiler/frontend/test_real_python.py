"""Python as real numerical code is written: function values, comprehensions, builtins
decided while compiling (slice, isinstance, callable, in, assert) and random draws.

Every gradient is checked against central finite differences of the user's own function;
for random draws, the generators are put back before each call, so the differences are
taken on the same sample the compiled gradient differentiates."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors


def fd(fn, x, *rest, reset=lambda: None, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        reset()
        hi = fn(x + step, *rest)
        reset()
        lo = fn(x - step, *rest)
        out.flat[i] = (hi - lo) / (2 * eps)
    return out


def check(fn, x, *rest, reset=lambda: None):
    reset()
    got = sourcegrad.grad(fn)(x, *rest)
    np.testing.assert_allclose(got, fd(fn, x, *rest, reset=reset), rtol=1e-6, atol=1e-8)
    return got


X = np.array([0.3, -1.2, 2.0])


# --- functions as values ----------------------------------------------------------------------


def rk4_step(f, y, t, dt):
    k1 = f(y, t)
    k2 = f(y + dt / 2 * k1, t + dt / 2)
    k3 = f(y + dt / 2 * k2, t + dt / 2)
    k4 = f(y + dt * k3, t + dt)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def odeint(f, y0, ts):
    y = y0
    for i in range(len(ts) - 1):
        y = rk4_step(f, y, ts[i], ts[i + 1] - ts[i])
    return y


def damped(y, t):
    return -0.5 * y + np.sin(t) * y * y


def ode_loss(y0):
    return np.sum(odeint(damped, y0, np.linspace(0.0, 1.0, 6)) ** 2)


def layer(x, W, nonlinearity=np.tanh):
    return nonlinearity(x @ W)


def two_layers(W):
    h = layer(np.ones(3), W)
    return np.sum(h) + np.sum(layer(np.ones(3), W, nonlinearity=np.sin))


def make_scaled_sin(a):
    def f(x):
        return np.sin(a * x)

    return f


def uses_closure(x):
    g = make_scaled_sin(2.0)
    return np.sum(g(x))


def apply_twice(fn, v):
    return fn(v) + fn(2 * v)


def uses_lambda(x):
    square = lambda v: v * v  # noqa: E731 - the style under test
    return np.sum(apply_twice(square, x))


def with_dynamics(y0, dynamics=damped):
    return np.sum(odeint(dynamics, y0, np.linspace(0.0, 1.0, 4)) ** 2)


def cosine_dynamics(y, t):
    return np.cos(y) * t


def stores_functions(x):
    fs = [np.sin, np.cos]
    return np.sum(fs[0](x))


def computes_with_function(x):
    return np.sum(np.exp)


def test_function_passed_to_user_function():
    check(ode_loss, X * 0.3)


def test_function_default_and_override():
    check(two_layers, np.full((3, 2), 0.3))


def test_closure_returning_function():
    check(uses_closure, X)


def test_lambda_in_variable_passed_as_value():
    got = check(uses_lambda, X)
    np.testing.assert_allclose(got, 10 * X)


def test_function_argument_is_part_of_the_signature():
    g = sourcegrad.grad(with_dynamics)
    default = g(X * 0.3)
    other = g(X * 0.3, cosine_dynamics)
    np.testing.assert_allclose(default, fd(with_dynamics, X * 0.3), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        other, fd(with_dynamics, X * 0.3, cosine_dynamics), rtol=1e-6, atol=1e-8
    )
    assert not np.allclose(default, other)
    np.testing.assert_allclose(g(X * 0.3, damped), default)


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
@pytest.mark.parametrize(
    "fn, words",
    [
        (stores_functions, "'sin' is used as a value"),
        (computes_with_function, "'exp' is used as a value"),
    ],
)
def test_function_values_stored_or_computed_with_are_refused(fn, words):
    with pytest.raises(errors.UnsupportedSyntaxError, match=words) as info:
        sourcegrad.grad(fn)(X)
    assert "test_real_python.py" in str(info.value)


# --- comprehensions ---------------------------------------------------------------------------


def stacked_rows(x, W):
    rows = [np.tanh(x * w) for w in W]
    return np.sum(np.stack(rows) ** 2)


def generator_in_sum(x):
    return sum(np.sum(np.sin(x * k)) for k in range(1, 4))


def nested_with_condition(x):
    i = 10.0  # the comprehension's i is its own
    ys = [np.sin(x[i]) * x[j] for i in range(3) for j in range(i + 1) if (i + j) % 2 == 0]
    return np.sum(np.array(ys)) * i


def prefix_sums(x):
    return np.sum(np.array([np.sum(x[:k]) for k in range(1, 4)]) ** 2)


def comprehension_in_loop(x):
    total = 0.0
    for t in range(2):
        total = total + sum(np.sum(np.tanh(x * t * k)) for k in range(2))
    return total


def over_list_argument(xs):
    return sum([np.sum(v**3) for v in xs])


def test_list_comprehension_over_an_array():
    W = np.array([0.5, -1.0, 2.0, 0.1])
    check(stacked_rows, X, W)


@pytest.mark.parametrize(
    "fn",
    [
        generator_in_sum,
        nested_with_condition,
        prefix_sums,
        comprehension_in_loop,
        over_list_argument,
    ],
)
def test_comprehensions(fn):
    check(fn, X)


def test_comprehension_names_do_not_leak():
    assert nested_with_condition(X) == pytest.approx(
        sourcegrad.value_and_grad(nested_with_condition)(X)[0]
    )


def test_generated_comprehension_reads_as_a_loop():
    g = sourcegrad.grad(stacked_rows)
    g(X, np.ones(2))
    source = g.source
    assert "for i in range(len_W):" in source and "w = W[i]" in source
    assert "# line" in source and "rows = [np.tanh(x * w) for w in W]" in source


# --- builtins decided while compiling ---------------------------------------------------------


def with_slice(x, n):
    part = slice(1, n)
    return np.sum(x[part] ** 2) + np.sum(x[slice(2)])


def with_assert(x):
    assert x.shape[0] == 3, "three values"
    return np.sum(x**2)


def assert_fails(x):
    assert x.shape[0] == 4, "four values"
    return np.sum(x)


def always_fails(x):
    assert False, "never"
    return np.sum(x)


def by_type(x):
    if isinstance(x, float):
        return x * 2.0
    return np.sum(x**2)


def checks_callable(x, f=np.sin):
    if callable(f):
        return np.sum(f(x))
    return np.sum(x)


def over_names(x):
    total = 0.0
    for name in ("a", "b", "c"):
        if name in ("a", "c"):
            total = total + np.sum(x * x)
    return total + (1.0 if name == "c" else 0.0)


def run_time_membership(x):
    return np.sum(x) if 1.0 in x else 0.0


def test_slice_builtin():
    check(with_slice, X, 3)


def test_assert_runs_in_the_forward_pass():
    check(with_assert, X)
    with pytest.raises(AssertionError, match="four values"):
        sourcegrad.grad(assert_fails)(X)
    with pytest.raises(errors.UnsupportedSyntaxError, match="fails for every call"):
        sourcegrad.grad(always_fails)(X)


def test_isinstance_and_callable():
    check(by_type, X)
    assert sourcegrad.grad(by_type)(1.5) == 2.0
    check(checks_callable, X)


def test_membership_of_constants_and_unrolled_loop():
    check(over_names, X)
    np.testing.assert_allclose(sourcegrad.grad(over_names)(X), 4 * X)


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_run_time_membership_is_refused():
    with pytest.raises(errors.UnsupportedSyntaxError, match="membership") as info:
        sourcegrad.grad(run_time_membership)(X)
    assert "1.0 in x" in str(info.value)


# --- random draws -----------------------------------------------------------------------------

RS = np.random.RandomState(0)
RNG = np.random.default_rng(1)


def reparameterised(params):
    mu, log_sigma = params[0], params[1]
    eps = RS.randn(5, 2)
    z = mu + np.exp(log_sigma) * eps
    return np.sum(z**2)


def generator_draw(mu):
    z = mu + RNG.standard_normal(mu.shape)
    return np.sum(np.sin(z))


def global_draw(mu):
    z = mu + np.random.normal(0.0, 1.0, size=mu.shape)
    return np.sum(np.sin(z))


def seeded_inside(mu):
    rng = np.random.default_rng(3)
    return np.sum(np.sin(mu + rng.normal(size=3)))


def draws_in_loop(mu):
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.cos(mu * RS.randn(3)))
    return s


def reset_rs():
    RS.seed(7)


def reset_rng():
    RNG.bit_generator.state = np.random.default_rng(1).bit_generator.state


def reset_global():
    np.random.seed(5)


@pytest.mark.parametrize(
    "fn, x, reset",
    [
        (reparameterised, np.array([[0.1, 0.2], [0.3, -0.4]]), reset_rs),
        (generator_draw, X, reset_rng),
        (global_draw, X, reset_global),
        (seeded_inside, X, lambda: None),
        (draws_in_loop, X, reset_rs),
    ],
)
def test_random_draws_are_constants_of_the_gradient(fn, x, reset):
    check(fn, x, reset=reset)


def test_backward_never_draws_again():
    reset_rs()
    sourcegrad.grad(draws_in_loop)(X)
    after_gradient = RS.randn()
    reset_rs()
    draws_in_loop(X)
    assert after_gradient == RS.randn()


def test_generated_code_draws_from_the_users_generator():
    g = sourcegrad.grad(draws_in_loop)
    g(X)
    code = [line for line in g.source.splitlines() if not line.strip().startswith("#")]
    assert sum("RS.randn(3)" in line for line in code) == 1  # drawn once, in the forward


def test_hessian_differentiates_one_sample():
    g = sourcegrad.grad(draws_in_loop)

    def column(i):
        step = np.zeros(3)
        step[i] = 1e-6
        reset_rs()
        hi = g(X + step)
        reset_rs()
        return (hi - g(X - step)) / 2e-6

    reset_rs()
    H = sourcegrad.hessian(draws_in_loop)(X)
    expected = np.stack([column(i) for i in range(3)], axis=1)
    np.testing.assert_allclose(H, expected, rtol=1e-5, atol=1e-6)


def test_check_grad_uses_one_sample():
    assert sourcegrad.check_grad(draws_in_loop, X) < 1.0


# --- objects known when compiling -------------------------------------------------------------


class Config:
    def __init__(self):
        self.lr = 0.5
        self.scale = np.array([1.0, 2.0, 3.0])


CFG = Config()


class Model:
    def __init__(self, W):
        self.W = W
        self.cfg = CFG

    def predict(self, x):
        return np.tanh(x @ self.W) * self.cfg.lr

    def loss(self, x):
        return np.sum(self.predict(x) ** 2)


MODEL = Model(np.full((3, 2), 0.2))


def reads_config(x):
    return np.sum(x * CFG.scale) * CFG.lr


def calls_method(x):
    return MODEL.loss(x)


def passes_bound_method(x):
    return np.sum(apply_twice(MODEL.predict, x))


def missing_attribute(x):
    return np.sum(x) * CFG.momentum


@pytest.mark.parametrize("fn", [reads_config, calls_method, passes_bound_method])
def test_attributes_and_methods_of_objects(fn):
    check(fn, X)


def test_rebinding_an_attribute_rebuilds_the_gradient():
    g = sourcegrad.grad(reads_config)
    np.testing.assert_allclose(g(X), CFG.scale * 0.5)
    try:
        CFG.lr = 2.0
        np.testing.assert_allclose(g(X), CFG.scale * 2.0)
    finally:
        CFG.lr = 0.5
    np.testing.assert_allclose(g(X), CFG.scale * 0.5)


def test_a_bound_method_is_differentiated_with_self_bound():
    # grad(model.loss): loss's def, `self` the object (its attributes read when compiling)
    check(MODEL.loss, X)
    check(Model(np.linspace(-1.0, 1.0, 6).reshape(3, 2)).loss, X)  # another object, its own W
    g = sourcegrad.grad(MODEL.loss)
    first = g(X)
    saved = MODEL.W
    try:
        MODEL.W = saved * 3.0  # a rebound attribute compiles again
        np.testing.assert_allclose(g(X), fd(MODEL.loss, X), rtol=1e-6, atol=1e-8)
    finally:
        MODEL.W = saved
    np.testing.assert_allclose(g(X), first)
    value, dx = sourcegrad.value_and_grad(MODEL.loss)(X)
    assert value == pytest.approx(MODEL.loss(X)) and np.allclose(dx, first)


class Scaled:
    factor = 2.0

    @classmethod
    def of_class(cls, x):
        return np.sum(x**2) * cls.factor


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_a_classmethod_is_refused_located():
    with pytest.raises(errors.UnsupportedSyntaxError, match="classmethod of Scaled") as info:
        sourcegrad.grad(Scaled.of_class)(X)
    assert "def of_class(cls, x):" in str(info.value) and info.value.loc.file == __file__


def test_missing_attribute_is_located():
    with pytest.raises(errors.NameResolutionError, match="no attribute 'momentum'") as info:
        sourcegrad.grad(missing_attribute)(X)
    assert "CFG.momentum" in str(info.value)


# --- copies -----------------------------------------------------------------------------------


def method_copy_then_store(x):
    y = x.copy()
    y[0] = 5.0
    return np.sum(x * y)


def function_copy_then_store(x):
    y = np.copy(x)
    y[1] *= 3.0
    return np.sum(x * y)


def through_float32(x):
    y = x.astype(np.float32)
    return np.sum(y * y).astype(np.float64)


def alias_then_store(x):
    y = x
    y[0] = 5.0
    return np.sum(x * y)


@pytest.mark.parametrize("fn", [method_copy_then_store, function_copy_then_store])
def test_a_copy_is_a_new_array(fn):
    check(fn, X)


def test_astype_gradient_comes_back_in_the_input_dtype():
    got = sourcegrad.grad(through_float32)(X)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, 2 * X, rtol=1e-6)


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_an_alias_changed_in_place_is_refused():
    with pytest.raises(errors.UnsupportedSyntaxError, match="refers to the same array"):
        sourcegrad.grad(alias_then_store)(X.copy())


# --- branches the signature decides -----------------------------------------------------------


def by_rank(x):
    if x.ndim == 2:
        return np.sum(np.tanh(x @ x.T))
    return np.sum(x**3)


def by_value(x):
    if x > 0.5:
        return x * 3.0
    return x * x


def test_a_branch_the_signature_decides_is_not_compiled():
    g = sourcegrad.grad(by_rank)
    check(by_rank, X)
    check(by_rank, np.arange(6.0).reshape(2, 3) * 0.1)
    g(X)
    assert "tanh" not in g.source and "returned" not in g.source and "if " not in g.source
    g = sourcegrad.grad(by_type)
    g(X)
    assert "isinstance" not in g.source and "float" not in g.source.split("\n", 1)[1]


def test_a_branch_on_a_value_stays():
    g = sourcegrad.grad(by_value)
    assert g(0.7) == 3.0 and g(0.2) == pytest.approx(0.4)


# --- complex values ---------------------------------------------------------------------------


def complex_intermediate(x):
    return np.sum(np.abs(x * (1 + 2j)))


def complex_off_the_path(x):
    phase = np.exp(1j * np.arange(3.0))
    return np.sum(x**2) + float(np.abs(np.sum(phase)))


def complex_arcsinh(x):  # (np.var of complex values has its rule now: issue 40)
    return np.sum(np.abs(np.arcsinh(x * (1 + 2j))))


def test_a_complex_value_on_the_gradients_path_is_differentiated():
    # (it was refused; a wrong gradient with a ComplexWarning before that: issue 19)
    check(complex_intermediate, X)


def test_a_complex_value_through_an_op_without_a_complex_rule_is_refused():
    with pytest.raises(errors.ComplexValueError, match="complex") as info:
        sourcegrad.grad(complex_arcsinh)(X)
    assert "np.arcsinh(x * (1 + 2j))" in str(info.value)


def test_a_complex_value_off_the_path_is_fine():
    check(complex_off_the_path, X)


# --- a gradient inside differentiated code ----------------------------------------------------


def wavy(x):
    return np.sum(np.sin(x) * x**2)


def squared_gradient_norm(x):
    g = sourcegrad.grad(wavy)(x)
    return np.sum(g**2)


GRAD_WAVY = sourcegrad.grad(wavy)


def through_a_global_gradient(x):
    return np.sum(np.tanh(GRAD_WAVY(x)))


def one_inner_step(w, x):
    inner = sourcegrad.grad(wavy)
    adapted = w - 0.1 * inner(w * x)
    return np.sum(adapted**2)


def gradient_of_a_local_function(x):
    def local(v):
        return np.sum(v**3)

    return np.sum(sourcegrad.grad(local)(x))


@pytest.mark.parametrize(
    "fn, rest",
    [(squared_gradient_norm, ()), (through_a_global_gradient, ()), (one_inner_step, (X * 0.5,))],
)
def test_a_gradient_called_inside_differentiated_code(fn, rest):
    check(fn, X, *rest)


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_a_gradient_inside_is_differentiated_once():
    with pytest.raises(errors.SourcegradError):
        sourcegrad.hessian(squared_gradient_norm)(X)
    with pytest.raises(errors.UnsupportedSyntaxError, match="module level"):
        sourcegrad.grad(gradient_of_a_local_function)(X)


# --- containers that are not differentiated: keyed by their items -----------------------------


def sum_over_rows(w, xs):
    s = 0.0
    for x in xs:
        s = s + np.sum(w * x)
    return s


@pytest.mark.parametrize("container", [list, tuple])
def test_code_for_one_items_shape_is_not_reused_for_another(container):
    w = np.ones(3)
    pull = sourcegrad.vjp(sum_over_rows)
    for rows in (container([np.ones(3)]), container([np.full((2, 3), 2.0)])):
        _, pullback = pull(w, rows)
        np.testing.assert_allclose(pullback(1.0), fd(sum_over_rows, w, rows))


# --- calls as autograd's examples write them ---------------------------------------------------


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def uses_star_args(x):
    W = np.full((5, 2), 0.3)
    return np.sum(np.tanh(concat_and_multiply(W, x, x * 2.0)))


def scaled(x, *, scale=2.0, shift):
    return np.sum((x * scale + shift) ** 2)


def uses_keyword_only(x):
    return scaled(x, shift=0.5) + scaled(x, scale=3.0, shift=-1.0)


def babylonian(a):
    return lambda x: 0.5 * (x + a / x)


def uses_returned_lambda(a):
    f = babylonian(a)
    x = 1.0
    for _ in range(5):
        x = f(x)
    return x


def unpack_pairs(params):
    return params[0], params[1]


def uses_starred_zip(x):
    total = 0.0
    for w, b in zip(*unpack_pairs(((x, 2.0 * x), (x * x, 1.0)))):
        total = total + np.sum(w * b)
    return total


def uses_vdot(x):
    return np.vdot(np.sin(x), x**2)


def layers_generator(x):
    for k in range(2):
        yield x * k


def uses_a_generator(x):
    return sum(np.sum(h) for h in layers_generator(x))


def test_star_args_and_tuple_concatenation():
    check(uses_star_args, X[:2].reshape(1, 2).repeat(3, 0))


def test_keyword_only_parameters():
    check(uses_keyword_only, X)


def test_a_returned_lambda():
    assert sourcegrad.grad(uses_returned_lambda)(2.0) == pytest.approx(
        (uses_returned_lambda(2.0 + 1e-6) - uses_returned_lambda(2.0 - 1e-6)) / 2e-6, rel=1e-6
    )


@pytest.mark.parametrize("fn", [uses_starred_zip, uses_vdot])
def test_starred_zip_and_vdot(fn):
    check(fn, X)


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_a_generator_is_refused_by_name():
    with pytest.raises(errors.UnsupportedSyntaxError, match="layers_generator is a generator"):
        sourcegrad.grad(uses_a_generator)(X)


# --- dict comprehensions ----------------------------------------------------------------------


def scaled_params(params):
    k = 3.0  # the comprehension's k is its own
    doubled = {name: value * 2.0 for name, value in params.items() if name != "unused"}
    squares = {key: np.sum(doubled[key] ** 2) for key in ("W", "b")}
    return squares["W"] + squares["b"] * k


def run_time_keys(x):
    return {float(v): v for v in x}


def test_dict_comprehension_over_a_dicts_items():
    params = {
        "W": np.array([[0.5, -1.0], [2.0, 0.1]]),
        "b": np.array([0.3, -0.7]),
        "unused": np.ones(2),
    }
    got = sourcegrad.grad(scaled_params)(params)
    assert set(got) == {"W", "b", "unused"}
    np.testing.assert_allclose(got["W"], 8.0 * params["W"])
    np.testing.assert_allclose(got["b"], 24.0 * params["b"])
    np.testing.assert_allclose(got["unused"], 0.0)


@pytest.mark.usefixtures("source_front_end_only")  # (the source front end's refusal)
def test_dict_comprehension_over_values_known_only_at_run_time_is_refused():
    with pytest.raises(errors.UnsupportedSyntaxError) as info:
        sourcegrad.grad(lambda x: np.sum(x) + len(run_time_keys(x)))(X)
    assert "run_time_keys" in str(info.value) or "float(v): v" in str(info.value)


def draws_shaped_like(mu):
    return np.sum((mu + RS.randn(*mu.shape)) ** 2) + np.sum(np.random.rand(*mu.shape) * mu)


def test_randn_of_a_shape_known_at_run_time_draws_the_same_numbers():
    mu = np.ones((2, 3))

    def reset():
        RS.seed(3)
        np.random.seed(4)

    reset()
    got = sourcegrad.grad(draws_shaped_like)(mu)
    reset()
    noise, uniform = RS.randn(2, 3), np.random.rand(2, 3)
    np.testing.assert_allclose(got, 2 * (mu + noise) + uniform)
    check(draws_shaped_like, mu, reset=reset)
