"""The trace front end (`sourcegrad.compiler.trace`): what the source front end does not read,
run by Python on traced values into the same IR.

The forms are those that stopped published code (the trace front end issue): objects and
their attributes, callables of every kind, Python's own constructs, numpy odds. Each is
checked as a user would check it: the gradient against central finite differences in float64
(on fresh copies of the arguments), and where it matters the generated code, the guards Python's
decisions become, the dependencies that make a changed value trace again, and the located
refusals of values that leave for plain Python.
"""

import copy
import functools
import math

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.compiler.trace import MAX_STATEMENTS

RNG = np.random.default_rng(0)
X = RNG.normal(size=3)
W = RNG.normal(size=(3, 3))


def numeric(fn, args, pos=0, eps=1e-6):
    x = np.asarray(args[pos], dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        values = []
        for sign in (1.0, -1.0):
            moved = [copy.deepcopy(a) for a in args]
            moved[pos] = x.copy()
            moved[pos][i] += sign * eps
            values.append(fn(*moved))
        out[i] = (values[0] - values[1]) / (2 * eps)
    return out


def assert_traced_like_python(fn, *args, wrt=0):
    """fn's value and gradient are Python's and the finite differences', from a trace."""
    g = sourcegrad.value_and_grad(fn, wrt=wrt)
    value, got = g(*copy.deepcopy(args))
    np.testing.assert_allclose(value, fn(*copy.deepcopy(args)), rtol=1e-12)
    np.testing.assert_allclose(got, numeric(fn, args, wrt), rtol=1e-6, atol=1e-8)
    return g


# -- objects ----------------------------------------------------------------------------------


class Box:
    pass


def stores_on_an_object(x):
    o = Box()
    o.W = W
    return np.sum(np.tanh(o.W @ x))


class Layer:
    """A layer in the style of published numpy libraries: it keeps what it saw."""

    def __init__(self):
        self.inputs = []

    def forward(self, x):
        self.inputs.append(x)
        return np.sin(x)


LAYER = Layer()


def keeps_its_inputs(x):
    return np.sum(LAYER.forward(x) ** 2)


def counts_in_a_dict(x):
    state = {"t": 0}
    for _ in range(3):
        state["t"] += 1
        x = x * 1.1
    return np.sum(x**2) * state["t"]


class BatchNorm:
    def __init__(self):
        self._epsilon = 1e-5

    @property
    def hyperparameters(self):  # a new dict on every read
        return {"epsilon": self._epsilon}

    def forward(self, x):
        mean, var = x.mean(), x.var()
        return (x - mean) / np.sqrt(var + self.hyperparameters["epsilon"])


NORM = BatchNorm()


def normalised(x):
    return np.sum(NORM.forward(x) * W[0])


@pytest.mark.parametrize("fn", [stores_on_an_object, counts_in_a_dict, normalised])
def test_objects(fn):
    assert_traced_like_python(fn, X)


@pytest.mark.usefixtures("trace_front_end_only")
def test_a_value_read_from_an_object_is_guarded_and_an_unchanged_one_is_not_traced_again():
    g = sourcegrad.grad(normalised)
    g(X)
    first = g._last
    g(X)
    assert g._last is first  # the property's new dict with the same value: no new trace
    NORM._epsilon = 0.5
    try:
        np.testing.assert_allclose(g(X), numeric(normalised, (X,)), rtol=1e-6, atol=1e-8)
        assert g._last is not first  # a changed value: traced again
    finally:
        NORM._epsilon = 1e-5


# -- callables --------------------------------------------------------------------------------


class Tanh:
    def __call__(self, z):
        return np.tanh(z)


ACT = Tanh()


class Net:
    def __init__(self):
        self.act_fn = self.softplus

    def softplus(self, z):
        return np.log1p(np.exp(z))

    def loss(self, x):
        return np.sum(self.act_fn(W @ x))


NET = Net()


class Quadratic:
    @staticmethod
    def fn(a, y):
        return 0.5 * np.sum((a - y) ** 2)


class Network:
    cost = Quadratic


def scaled(k):
    def deco(f):
        def wrapper(*args, **kwargs):  # (no functools.wraps: the wrapper is all there is)
            return k * f(*args, **kwargs)

        return wrapper

    return deco


@scaled(3.0)
def decorated(x):
    return np.sum(x**2)


CALLABLES = {
    "an object with __call__": lambda x: np.sum(ACT(x) ** 2),
    "a bound method kept in an attribute": lambda x: NET.loss(x),
    "a staticmethod through a class in an attribute": lambda x: Network.cost.fn(np.tanh(x), W[0]),
    "functools.partial": lambda x: np.sum(functools.partial(np.multiply, 3.0)(x) ** 2),
    "functools.reduce": lambda x: functools.reduce(lambda a, b: a * b, [x[0], x[1], x[2]]),
}


@pytest.mark.parametrize("fn", CALLABLES.values(), ids=CALLABLES.keys())
def test_callables(fn):
    assert_traced_like_python(fn, X)


def test_callables_differentiated_directly():
    assert_traced_like_python(NET.loss, X)
    assert_traced_like_python(ACT, X[0])
    assert sourcegrad.grad(functools.lru_cache(lambda x: x * x * 2.0))(1.5) == 6.0
    # a wrapper without functools.wraps has no parameter names to be called with
    with pytest.raises(errors.UnsupportedSyntaxError, match="give it named parameters"):
        sourcegrad.grad(decorated)(X)


# -- Python's own constructs --------------------------------------------------------------------


def flatten(*arrays, **unused):
    return np.concatenate([np.ravel(a) for a in arrays])


def squares(x):
    for i in range(3):
        yield x[i] ** 2


def with_python(x, y=None, padding="same", seed_box={"seed": 1}):
    a = b = 2.0
    if y is None:
        y = x
    if isinstance(padding, int):
        padding = (padding, padding)
    total = np.sum(flatten(x, W) ** 2) * a * b + sum(squares(x))
    if padding in ["same", "causal"] and "seed" in seed_box:
        total = total + np.sum(x * y)
    try:
        total = total + np.sum(np.sin(x))
    except ValueError:
        total = total * 0.0
    return total


def test_python_constructs_run_as_python_runs_them():
    assert_traced_like_python(with_python, X)


def doubled_until(x):
    return x if np.sum(x) > 10.0 else doubled_until(x * 2.0)


def recursion_on_data(x):
    return np.sum(doubled_until(x))


def test_decisions_become_guards_and_another_path_is_traced_for_its_call():
    g = sourcegrad.grad(recursion_on_data)
    x = np.ones(3)
    np.testing.assert_allclose(g(x), numeric(recursion_on_data, (x,)), rtol=1e-6)  # 3 doublings
    assert "trace_guard" in g.source
    np.testing.assert_allclose(g(x * 4.0), numeric(recursion_on_data, (x * 4.0,)), rtol=1e-6)
    np.testing.assert_allclose(g(x), numeric(recursion_on_data, (x,)), rtol=1e-6)  # the first
    assert len(g._paths[next(iter(g._paths))]) == 2  # two paths, each traced once


def test_numpy_odds():
    assert_traced_like_python(lambda x: np.sum(x * x.dtype.type(2.0)) + np.finfo(float).eps, X)
    assert_traced_like_python(lambda x: np.sum(np.prod(np.atleast_2d(x, x * 2), axis=0)), X)

    def stacked(x):
        rows = []
        for i in range(3):
            rows.append(x * i)
        return np.sum(np.vstack(rows) ** 2) + np.sum(np.array([x[0], 2.0 * x[1]]))

    assert_traced_like_python(stacked, X)


def test_a_function_made_by_exec_is_traced():
    namespace = {"np": np}
    exec("def made(x):\n    return np.sum(np.sin(x) * 2.0)\n", namespace)
    assert_traced_like_python(namespace["made"], X)


# -- the generated code --------------------------------------------------------------------------


class Dense:
    def __init__(self, W, b):
        self.W, self.b = W, b

    def __call__(self, x):
        z = x @ self.W + self.b
        return np.tanh(z)


DENSE = Dense(W, X)


def dense_loss(x, y):
    h = DENSE(x)
    out = h.sum(axis=1)
    return np.mean((out - y) ** 2)


@pytest.mark.usefixtures("trace_front_end_only")
def test_traced_code_keeps_the_users_lines_and_names():
    g = sourcegrad.grad(dense_loss)
    x, y = RNG.normal(size=(2, 3)), RNG.normal(size=2)
    np.testing.assert_allclose(g(x, y), numeric(dense_loss, (x, y)), rtol=1e-6, atol=1e-8)
    source = g.source
    assert "# Traced (run on traced values)" in source and g.traced
    assert "# line" in source and "z = x @ self.W + self.b" in source
    for name in ("z", "h", "out"):  # the user's variables name the values they held
        assert f"    {name} = " in source, source
    assert "# W, b:" in source  # the object's arrays, by the attributes that hold them


# -- what may not leave a trace --------------------------------------------------------------------


def to_a_python_float(x):
    s = float(np.sum(x**2))
    return np.sum(x) * s


def through_math(x):
    return math.exp(np.sum(x))


OUT = np.zeros(3)  # a plain array made before the trace (a buffer made inside is traced)


def into_a_plain_array(x):
    for i in range(3):
        OUT[i] = np.sum(x[i] * W[i])
    return np.sum(OUT)


def via_item(x):
    return np.sum(x) * np.max(x).item()


@pytest.mark.usefixtures("trace_front_end_only")
@pytest.mark.parametrize("fn", [to_a_python_float, into_a_plain_array, via_item])
def test_a_value_carrying_a_gradient_that_leaves_for_plain_python_is_refused(fn):
    with pytest.raises(errors.TraceEscapeError) as caught:
        sourcegrad.grad(fn)(X)
    assert caught.value.loc is not None and caught.value.loc.file == __file__


@pytest.mark.usefixtures("trace_front_end_only")
def test_the_math_module_on_traced_values_is_recorded():
    assert_traced_like_python(through_math, X)


def data_read_as_numbers(x, y):
    n = int(np.sum(y > 0))  # no gradient flows through y: guarded
    buffer = np.zeros(2)
    buffer[0] = y[0]  # nor through this write
    return np.sum(x**2) * n + np.sum(buffer)


@pytest.mark.usefixtures("trace_front_end_only")
def test_values_no_gradient_flows_through_may_leave_and_are_guarded():
    g = sourcegrad.grad(data_read_as_numbers)
    y = np.array([1.0, -1.0, 2.0])
    np.testing.assert_allclose(g(X, y), 2 * X * 2)
    np.testing.assert_allclose(g(X, -y), 2 * X * 1)  # another count: traced again


@pytest.mark.usefixtures("trace_front_end_only")
def test_a_long_python_loop_stops_with_a_located_error():
    def long_loop(x):
        s = 0.0
        for i in range(MAX_STATEMENTS):
            s = s + x[0] * x[1]
        return s

    with pytest.raises(errors.UnsupportedSyntaxError, match="keep that loop") as caught:
        sourcegrad.grad(long_loop)(X)
    assert caught.value.loc.file == __file__


def test_random_draws_are_drawn_by_the_code_on_each_call():
    rs = np.random.RandomState(0)

    class Noisy:
        def __init__(self):
            self.rng = np.random.default_rng(1)

        def __call__(self, mu):
            return np.sum((mu + self.rng.standard_normal(3)) ** 2 + rs.randn(3) * mu)

    noisy = Noisy()
    g = sourcegrad.grad(noisy)
    first, second = g(X), g(X)
    assert not np.allclose(first, second)  # each call draws, as the function does
    noisy.rng, rs = np.random.default_rng(1), np.random.RandomState(0)
    expected = 2 * (X + noisy.rng.standard_normal(3)) + rs.randn(3)
    noisy.rng = np.random.default_rng(1)
    rs.seed(0)
    np.testing.assert_allclose(sourcegrad.grad(noisy)(X), expected)


def test_a_draw_from_parameters_carrying_a_gradient_is_refused():
    def drawn(mu):
        rng = np.random.default_rng(0)
        try:  # (a construct the source front end does not read: traced)
            sample = rng.normal(mu, 1.0)
        finally:
            pass
        return np.sum(sample)

    with pytest.raises(errors.NoRuleError, match="reparameterisation") as caught:
        sourcegrad.grad(drawn)(X)
    assert "rng.normal(mu, 1.0)" in str(caught.value)


# -- objects as arguments: register_tree --------------------------------------------------------


class KernelFunction:
    """A function in a reproducing-kernel Hilbert space, differentiated as an argument."""

    def __init__(self, centres, alphas, width):
        self.centres, self.alphas, self.width = centres, alphas, width

    def __call__(self, x):
        k = np.exp(-((x[:, None] - self.centres[None, :]) ** 2) / self.width)
        return k @ self.alphas


sourcegrad.register_tree(
    KernelFunction,
    lambda f: ((f.centres, f.alphas), f.width),
    lambda width, children: KernelFunction(*children, width),
)


def kernel_loss(f, x, y):
    return np.sum((f(x) - y) ** 2)


def test_a_registered_class_is_differentiated_like_a_tree():
    f = KernelFunction(np.linspace(-1, 1, 4), np.ones(4), 0.5)
    x = np.linspace(-1, 1, 6)
    y = np.sin(x)
    df = sourcegrad.grad(kernel_loss)(f, x, y)
    assert type(df) is KernelFunction and df.width == 0.5  # (aux data kept as it is)
    np.testing.assert_allclose(
        df.alphas,
        numeric(lambda a: kernel_loss(KernelFunction(f.centres, a, 0.5), x, y), (f.alphas,)),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        df.centres,
        numeric(lambda c: kernel_loss(KernelFunction(c, f.alphas, 0.5), x, y), (f.centres,)),
        rtol=1e-6,
    )


# -- the hybrid: a call the source front end does not read, inside code it reads -----------------


class Cell:
    def __call__(self, h, x):
        return np.tanh(W @ h + x)


CELL = Cell()


def recurrent_loss(h, xs):
    for x in xs:
        h = CELL(h, x)
    return np.sum(h**2)


def test_a_call_the_source_front_end_does_not_read_is_traced_and_the_loop_stays_a_loop():
    xs = RNG.normal(size=(40, 3))
    h = np.full(3, 0.1)
    g = sourcegrad.grad(recurrent_loss)
    np.testing.assert_allclose(g(h, xs), numeric(recurrent_loss, (h, xs)), rtol=1e-6, atol=1e-9)
    source = g.source
    assert "for i in range(len_xs):" in source  # (not 40 unrolled trips)
    assert "traced_call" in source and "CELL, a Cell object" in source


SCALE = 1.3


def scaled_helper(a):
    return SCALE * a


def reads_a_global_through_a_helper(x):
    try:  # (traced)
        y = scaled_helper(np.sum(x**2))
    finally:
        pass
    return y


def test_a_global_a_helper_reads_is_a_dependency_of_the_trace():
    global SCALE
    g = sourcegrad.grad(reads_a_global_through_a_helper)
    np.testing.assert_allclose(g(X), 2 * 1.3 * X)
    SCALE = -0.4
    try:
        np.testing.assert_allclose(g(X), 2 * -0.4 * X)  # traced again for the new value
    finally:
        SCALE = 1.3


class Remembers:
    def __init__(self):
        self.inputs, self.cache = [], {}

    def __call__(self, x):
        self.inputs.append(x)
        self.cache["z"] = x * 2.0
        self.last = x
        return np.sum(np.sin(x))


REMEMBERS = Remembers()
SEEN = []


def remembering_loss(x):
    SEEN.append(x)
    return REMEMBERS(x)


def test_values_left_in_objects_are_refused_and_put_back():
    # (they were kept as the trace's plain arrays: later calls left the first call's there)
    with pytest.raises(errors.UnsupportedSyntaxError, match="changes the list SEEN") as raised:
        sourcegrad.grad(remembering_loss)(X)
    assert raised.value.loc.text.strip() == "SEEN.append(x)"
    assert SEEN == [] and REMEMBERS.inputs == [] and REMEMBERS.cache == {}
    assert not hasattr(REMEMBERS, "last")


def test_a_layer_keeping_its_inputs_is_refused_at_the_helper_line():
    with pytest.raises(errors.UnsupportedSyntaxError, match="LAYER.inputs") as raised:
        sourcegrad.grad(keeps_its_inputs)(X)
    assert raised.value.loc.text.strip() == "self.inputs.append(x)"
    assert LAYER.inputs == []


class Counts:
    def __init__(self):
        self.calls = 0

    def loss(self, x):
        self.calls = self.calls + 1  # the compiled code would not count: refused
        return np.sum(x**2) * self.calls


STEP = 0
STATE = {"t": 0}


def counts_in_a_global(x):
    global STEP
    STEP += 1
    return np.sum(x**2) * STEP


def counts_in_a_dict(x):
    STATE["t"] += 1
    return np.sum(x**2)


def counts_in_a_closure():
    n = 0

    def loss(x):
        nonlocal n
        n += 1
        return np.sum(x) * n

    return loss


@pytest.mark.parametrize(
    "make, line",
    [
        (lambda: Counts().loss, "self.calls = self.calls + 1"),
        (lambda: counts_in_a_global, "STEP += 1"),
        (lambda: counts_in_a_dict, 'STATE["t"] += 1'),
        (counts_in_a_closure, "n += 1"),
    ],
)
def test_python_data_the_traced_function_changes_is_refused_at_its_line_and_put_back(make, line):
    # (found from outside: a counter read by the loss gave the first call's gradient for ever)
    fn = make()
    with pytest.raises(errors.UnsupportedSyntaxError, match="changes") as raised:
        sourcegrad.grad(fn)(X)
    assert raised.value.loc.text.strip().startswith(line)
    assert STEP == 0 and STATE == {"t": 0}
    if hasattr(fn, "__self__"):
        assert fn.__self__.calls == 0


# -- what the fuzzer found: values decided in Python are guarded, plain arrays stay true -----


def branches_on_a_float(x, scale):
    if scale < 0.0:  # a Python float argument: the branch is guarded, not fixed
        return np.sum(x * -scale)
    return np.sum(x**2 * scale)


@pytest.mark.usefixtures("trace_front_end_only")
def test_a_comparison_of_python_floats_is_a_guard():
    g = sourcegrad.grad(branches_on_a_float)
    np.testing.assert_allclose(g(X, 2.0), 2 * X * 2.0)
    np.testing.assert_allclose(g(X, -3.0), np.full(3, 3.0))  # the other branch, traced again


def writes_a_mask_into_a_buffer(x, y):
    buffer = np.zeros(3)
    np.putmask(buffer, y > 0, 0.5)  # a plain array filled from y's values: guarded
    return np.sum(x**2 * buffer)


@pytest.mark.usefixtures("trace_front_end_only")
def test_an_effect_call_into_a_plain_array_guards_its_operands():
    g = sourcegrad.grad(writes_a_mask_into_a_buffer)
    y = np.array([1.0, -1.0, 2.0])
    np.testing.assert_allclose(g(X, y), 2 * X * np.where(y > 0, 0.5, 0.0))
    np.testing.assert_allclose(g(X, -y), 2 * X * np.where(-y > 0, 0.5, 0.0))


def changes_a_fresh_array_after_reading_it(x):
    c = np.cos(np.linspace(0.0, 1.0, 3))  # numpy code the trace does not record: a constant
    y = np.sum(x * c)
    c += 1.0  # changed after the read: the code keeps the values read
    return y + np.sum(x * c)


@pytest.mark.usefixtures("trace_front_end_only")
def test_a_plain_array_changed_after_it_is_read_keeps_the_values_read():
    c = np.cos(np.linspace(0.0, 1.0, 3))
    g = sourcegrad.grad(changes_a_fresh_array_after_reading_it)
    np.testing.assert_allclose(g(X), 2 * c + 1.0)
    np.testing.assert_allclose(g(X), 2 * c + 1.0)  # the second call, from the cache


class Scaled:
    def __init__(self):
        self.w = np.ones(3)

    def __call__(self, x):
        y = np.sum(x * self.w)
        self.w *= 2.0  # the user's own array changed while the function runs
        return y


@pytest.mark.usefixtures("trace_front_end_only")
def test_a_users_array_changed_while_the_function_runs_is_refused():
    scaled = Scaled()
    with pytest.raises(errors.UnsupportedSyntaxError, match="changed in place"):
        sourcegrad.grad(lambda x: scaled(x))(X)


class Convolution:
    """A layer that sums each output column into a buffer it made with np.zeros (published
    layer libraries write convolutions this way)."""

    def forward(self, x, w):
        n, h = x.shape
        k = w.shape[0]
        out = np.zeros((n, h - k + 1))
        for i in range(h - k + 1):
            out[:, i] = np.sum(x[:, i : i + k] * w, axis=1)
        return out


CONVOLUTION = Convolution()


def convolved_into_a_buffer(w, x):
    try:  # (the source front end stops here: the trace reads the rest)
        y = CONVOLUTION.forward(x, w)
    finally:
        pass
    return np.sum(np.tanh(y) ** 2)


def test_a_buffer_the_users_code_makes_and_fills_is_traced():
    x = RNG.normal(size=(3, 6))
    g = assert_traced_like_python(convolved_into_a_buffer, X, x)
    assert g.traced and "np.zeros((3, 4))" in g.source


def test_a_buffer_a_library_makes_stays_a_plain_array():
    # np.pad's own Python code calls np.zeros: it gets an array, and the pad is recorded as
    # the op it is
    def padded(x):
        try:
            pass
        finally:
            pass
        return np.sum(np.pad(x, 1) ** 2 * np.arange(5.0))

    g = assert_traced_like_python(padded, X)
    assert g.traced
