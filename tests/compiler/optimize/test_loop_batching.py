"""Loop optimizations of generated gradients: `x_t = xs[t]` re-read in the backward trip
(reverse.Reverser.recomputable), the rows of xs used as the stored rows of a rank-one
update and one sum after the loop for a bias (optimize.rank_one.batch_rank_one_updates), W.T taken
once before a loop (optimize.hoisting.hoist_transposes), and dead buffers taking elementwise
results (optimize.reuse_dead_buffers, _last_uses).

Every test checks the numbers against central finite differences and, where an
optimization should fire (or must not), the generated source."""

import ast
import re

import numpy as np
import pytest

import sourcegrad
from sourcegrad import api
from sourcegrad.api import numeric_grad
from sourcegrad.bench import workloads
from sourcegrad.compiler import optimize

ALL = (0, 1, 2, 3, 4)  # W, U, b, h0, xs


@pytest.fixture
def rnn_args():
    rng = np.random.default_rng(0)
    hidden, n_in, steps = 4, 3, 5
    return (
        rng.normal(scale=0.5, size=(hidden, hidden)),
        rng.normal(size=(hidden, n_in)),
        rng.normal(size=hidden),
        rng.normal(size=hidden),
        rng.normal(size=(steps, n_in)),
    )


def check_numbers(fn, args, wrt, rtol=1e-6, atol=1e-8):
    """The compiled gradients (wrt a tuple) against finite differences; returns the Gradient."""
    before = [np.copy(a) for a in args]
    g = sourcegrad.grad(fn, wrt=wrt)
    grads = g(*args)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)  # inputs are never written
    for pos, got in zip(wrt, grads):
        np.testing.assert_allclose(
            got,
            numeric_grad(fn, args, pos),
            rtol=rtol,
            atol=atol,
            err_msg=f"{fn.__name__}: gradient wrt argument {pos}",
        )
    return g


def line_of(source, target):
    """The generated statement assigning `target` at the top level of the function."""
    found = [ln for ln in source.splitlines() if re.match(rf"    {target} = ", ln)]
    assert len(found) == 1, f"no single top-level line assigning {target}:\n{source}"
    return found[0].split("#")[0].strip()


def dU_lines(source):
    """The code of the generated lines that assign or accumulate dU."""
    return [
        ln.split("#")[0].strip() for ln in source.splitlines() if re.match(r"\s*dU (\+)?= ", ln)
    ]


XS = r"\bxs(_T\w*)?\b"  # xs itself, or its transpose taken once


def rows_of_xs_used(source):
    """Whether dU is one product with xs itself (`rows.T @ xs`, or `d.T @ xs` where the
    products U @ xs[t] were made as one before the loop), with no copy of xs's rows stored
    trip by trip and no outer product per trip."""
    lines = dU_lines(source)
    assert lines, f"no dU in\n{source}"
    with_xs = any(re.search(XS, ln) and ("@" in ln or ".dot(" in ln) for ln in lines)
    copied = re.search(r"\b(xs_part\w*|x_t\w*)_rows\b", source) is not None
    return with_xs and not copied and not any("np.outer" in ln for ln in lines)


def backward_loop_at(lines):
    starts = [
        i
        for i, ln in enumerate(lines)
        if re.match(r"\s*for \w+ in reversed\(range\(", ln)
        or re.match(r"\s*for _\w* in range\(trips", ln)
    ]
    assert starts, "no backward loop"
    return starts[0]


# --- the RNN, in both spellings ---------------------------------------------------------------


def rnn(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def rnn_for_in(W, U, b, h0, xs):
    h = h0
    for x_t in xs:
        h = np.tanh(W @ h + U @ x_t + b)
    return np.sum(h**2)


def rnn_len(W, U, b, h0, xs):
    h = h0
    for t in range(len(xs)):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def rnn_constant_trips(W, U, b, h0, xs):  # 5: as many as xs has rows
    h = h0
    for t in range(5):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def rnn_nested(W, U, b, h0, xs):
    h = h0
    for _ in range(2):
        for t in range(xs.shape[0]):
            h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def assert_batched(source, item_name=None):
    """Every optimization fired: rows of xs used directly, one sum for db, W.T taken once
    before the backward loop, no outer product or push of the item left."""
    assert rows_of_xs_used(source), dU_lines(source)
    assert re.fullmatch(r"db = \w+_rows\.sum\(axis=0\)", line_of(source, "db"))
    assert re.fullmatch(
        r"dW = \w+_rows(\.T|_T)(\.dot\(\w+_rows\)| @ \w+_rows)", line_of(source, "dW")
    )
    assert "np.outer" not in source
    assert "saved.append(xs" not in source
    if item_name is not None:
        assert f"saved.append({item_name})" not in source
    lines = source.splitlines()
    hoisted = [i for i, ln in enumerate(lines) if re.match(r"    W_T\w* = W\.T\b", ln)]
    assert len(hoisted) == 1, source
    assert hoisted[0] < backward_loop_at(lines)
    assert "W.T @" not in source and "W.T.dot(" not in source  # not taken again in the loop
    assert "xs_rows" not in source and "x_t_rows" not in source  # xs is not copied row by row


@pytest.mark.parametrize("fn", [rnn, rnn_for_in, rnn_len, rnn_constant_trips])
def test_rnn_weights_use_the_rows_of_xs(fn, rnn_args):
    g = check_numbers(fn, rnn_args, (0, 1, 2, 3))
    assert_batched(g.source, "x_t" if fn is rnn_for_in else None)
    if fn is rnn_for_in:
        # x_t is not needed in the backward at all once dU is one product with xs
        assert g.source.count("x_t = xs[") <= 1


def test_nested_loops_batch_the_inner_one(rnn_args):
    g = check_numbers(rnn_nested, rnn_args, ALL)
    source = g.source
    # the product with the rows of xs is invariant in the outer loop: made once before it,
    # and its adjoint's rows summed over the outer trips give db and dU once after it
    assert rows_of_xs_used(source), dU_lines(source)
    outer = source.index("    for _ in range(2):")
    made_once = r"^    U_xs\w* = xs(\.dot\(U(\.T|_T)\)| @ U(\.T|_T)) \+ b$"
    assert re.search(made_once, source[:outer], re.MULTILINE), source
    assert re.search(r"^    db = \w+\.sum\(axis=0\)", source, re.MULTILINE), source
    assert re.search(r"^    dU = \w+\.T(\.dot\(| @ )xs", source, re.MULTILINE), source
    assert "np.outer" not in source and "saved.append(xs" not in source
    # the rows' adjoints go into a row buffer, not a full-size zeros + unindex per trip
    assert "unindex" not in source, source
    # the batched product is read as rows only: not saved per outer trip for the backward
    assert "saved.append(U_xs" not in source and "U_xs_plus_b = saved.pop()" not in source
    lines = source.splitlines()
    inner = next(i for i, ln in enumerate(lines) if ln.startswith("        for t in reversed("))
    hoisted = [i for i, ln in enumerate(lines) if re.match(r"\s+W_T\w* = W\.T\b", ln)]
    assert hoisted and hoisted[0] < inner  # out of the inner loop at least
    assert "W.T @" not in source and "W.T.dot(" not in source


@pytest.mark.parametrize("fn", [rnn, rnn_for_in])
def test_rnn_with_respect_to_the_sequence_too(fn, rnn_args):
    g = check_numbers(fn, rnn_args, ALL)
    assert_batched(g.source, "x_t" if fn is rnn_for_in else None)
    # dxs is one product after the loop: assigned, not zeros plus an update
    assert "dxs = np.zeros_like(xs)" not in g.source and "dxs += " not in g.source, g.source
    assert ".T.T" not in g.source and "U_T.T" not in g.source  # U itself, not U.T transposed
    dxs = sourcegrad.grad(fn, wrt=4)(*rnn_args)
    assert dxs.shape == rnn_args[4].shape
    np.testing.assert_allclose(dxs, numeric_grad(fn, rnn_args, 4), rtol=1e-6, atol=1e-9)


def test_rnn_in_float32(rnn_args):
    args = tuple(a.astype(np.float32) for a in rnn_args)
    grads = sourcegrad.grad(rnn, wrt=ALL)(*args)
    for pos, got in zip(ALL, grads):
        assert got.dtype == np.float32 and got.shape == args[pos].shape
        np.testing.assert_allclose(got, numeric_grad(rnn, args, pos), rtol=2e-3, atol=2e-4)
    source = sourcegrad.grad(rnn, wrt=ALL).compile(args).source
    assert rows_of_xs_used(source)
    assert "dtype='float32'" in source  # the stored rows keep the dtype


def items_scaled(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        x_t = xs[t]
        h = np.tanh(W @ h + U @ x_t + b * x_t[0])
    return np.sum(h**2)


def test_an_item_read_twice_in_the_trip(rnn_args):
    g = check_numbers(items_scaled, rnn_args, ALL)
    assert rows_of_xs_used(g.source)
    assert "saved.append(x_t)" not in g.source


def elementwise_weights(c, xs):
    h = np.zeros(3)
    for x_t in xs:
        h = np.tanh(h * 0.5 + x_t * c)
    return np.sum(h**2)


def test_the_item_is_read_again_instead_of_saved():
    rng = np.random.default_rng(4)
    c, xs = rng.normal(size=3), rng.normal(size=(6, 3))
    g = check_numbers(elementwise_weights, (c, xs), (0, 1))
    assert "saved.append(x_t)" not in g.source
    # once in the forward trip, once (recomputed) in the backward trip
    assert g.source.count("x_t = xs[i]") == 2, g.source


# --- where the rows of xs must not be used ---------------------------------------------------


def xs_rebound_in_the_loop(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
        xs = xs * 0.9
    return np.sum(h**2)


def xs_updated_in_place(W, U, b, h0, xs):
    h = h0
    xs = xs * 1.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
        xs *= 0.9
    return np.sum(h**2)


def xs_rebound_in_for_in(W, U, b, h0, xs):
    h = h0
    ys = xs
    for x_t in xs:
        h = np.tanh(W @ h + U @ x_t + b)
        ys = ys * 0.5
    return np.sum(h**2) + np.sum(ys)


def from_two(W, U, b, h0, xs):
    h = h0
    for t in range(2, xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def every_other(W, U, b, h0, xs):
    h = h0
    for t in range(0, xs.shape[0], 2):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def fewer_trips(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0] - 1):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def fewer_constant_trips(W, U, b, h0, xs):  # xs has 5 rows
    h = h0
    for t in range(4):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def trips_of_another_array(W, U, b, h0, xs):
    ys = xs[1:]
    h = h0
    for t in range(ys.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def item_carried(W, U, b, h0, xs):
    h = h0
    x_t = xs[0]
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ x_t + b)
        x_t = xs[t]
    return np.sum(h**2)


def reversed_index(W, U, b, h0, xs):
    h = h0
    n = xs.shape[0]
    for t in range(n):
        h = np.tanh(W @ h + U @ xs[n - 1 - t] + b)
    return np.sum(h**2)


def while_loop(W, U, b, h0, xs):
    h = h0
    t = 0
    while t < xs.shape[0]:
        h = np.tanh(W @ h + U @ xs[t] + b)
        t = t + 1
    return np.sum(h**2)


def with_break(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
        if t == 2:
            break
    return np.sum(h**2)


def with_data_break(W, U, b, h0, xs):
    h = h0
    for x_t in xs:
        h = np.tanh(W @ h + U @ x_t + b)
        if np.sum(x_t) > 1.0:
            break
    return np.sum(h**2)


def with_continue(W, U, b, h0, xs):
    h = h0
    for x_t in xs:
        if np.sum(x_t) > 0.5:
            continue
        h = np.tanh(W @ h + U @ x_t + b)
    return np.sum(h**2)


def last_item_after_the_loop(W, U, b, h0, xs):
    h = h0
    for x_t in xs:
        h = np.tanh(W @ h + U @ x_t + b)
    return np.sum(h**2) + np.sum(x_t * x_t)


NOT_ROWS_OF_XS = [
    xs_rebound_in_the_loop,
    xs_updated_in_place,
    from_two,
    every_other,
    fewer_trips,
    fewer_constant_trips,
    trips_of_another_array,
    item_carried,
    reversed_index,
    while_loop,
    with_break,
    with_data_break,
    with_continue,
]


@pytest.mark.parametrize("fn", NOT_ROWS_OF_XS, ids=[f.__name__ for f in NOT_ROWS_OF_XS])
def test_rows_of_xs_are_not_used_where_they_are_not_the_items(fn, rnn_args):
    g = check_numbers(fn, rnn_args, ALL)
    source = g.source
    assert not any(re.search(XS, ln) for ln in dU_lines(source)), dU_lines(source)
    if fn in (from_two, every_other):  # not a loop over range(0, n): no batching at all
        assert "np.outer(" in source
    if fn is item_carried:  # the item is read before it is assigned: it is saved
        assert "saved.append(x_t)" in source
    if fn in (xs_rebound_in_the_loop, xs_updated_in_place):
        # each trip's item xs[t] is saved; xs as a trip left it is read by no backward line
        assert "saved.append(xs_part)" in source and "saved.append(xs)" not in source


def test_the_data_dependent_break_does_break(rnn_args):
    xs = rnn_args[4]
    trips = next(i for i, row in enumerate(xs) if np.sum(row) > 1.0) + 1
    assert 1 < trips < len(xs)  # so the test above covers a loop cut short


def test_other_loops_that_still_batch(rnn_args):
    g = check_numbers(xs_rebound_in_for_in, rnn_args, ALL)
    # ys is rebound, not xs: the items of `for x_t in xs` are xs's own rows
    assert rows_of_xs_used(g.source), dU_lines(g.source)
    # the last item is read after the loop, by the forward's last line and its adjoint: the
    # backward reads no earlier item, so none is saved (nor is x_t started as None for it)
    g = check_numbers(last_item_after_the_loop, rnn_args, ALL)
    assert "saved.append(x_t)" not in g.source and "x_t = None" not in g.source


def index_reassigned(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0] - 1):
        t = t + 1
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def test_loop_index_reassigned_in_the_body(rnn_args):
    check_numbers(index_reassigned, rnn_args, ALL)


# --- W.T hoisting -----------------------------------------------------------------------------


def decaying_weights(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
        W = W * 0.9
    return np.sum(h**2)


def test_a_transpose_of_a_matrix_the_loop_changes_stays_in_the_loop(rnn_args):
    g = check_numbers(decaying_weights, rnn_args, ALL)
    lines = g.source.splitlines()
    loop = backward_loop_at(lines)
    assert not any(re.match(r"    W_T\w* = W\.T\b", ln) for ln in lines)
    assert any("W.T.dot(" in ln or "W.T @" in ln for ln in lines[loop:])
    assert rows_of_xs_used(g.source)  # xs itself is unchanged: its rows still serve


def two_layers(W, V, h0, xs):
    h = h0
    g = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        g = np.tanh(V @ g + W.T @ h)
    return np.sum(g**2)


def test_transposes_in_the_forward_loop_are_hoisted_too():
    rng = np.random.default_rng(2)
    args = (
        rng.normal(scale=0.5, size=(3, 3)),
        rng.normal(scale=0.5, size=(3, 3)),
        rng.normal(size=3),
        rng.normal(size=(4, 3)),
    )
    g = check_numbers(two_layers, args, (0, 1, 2, 3))
    lines = g.source.splitlines()
    first_loop = next(i for i, ln in enumerate(lines) if ln.startswith("    for "))
    hoisted = [i for i, ln in enumerate(lines) if re.match(r"    \w+ = W\.T\b", ln)]
    assert hoisted and hoisted[0] < first_loop, g.source


# --- higher order through the RNN ------------------------------------------------------------


def _gradient_difference(g, args, pos, v, eps=1e-5):
    plus, minus = list(args), list(args)
    plus[pos], minus[pos] = args[pos] + eps * v, args[pos] - eps * v
    return (g(*plus) - g(*minus)) / (2 * eps)


@pytest.mark.parametrize("fn", [rnn, rnn_for_in])
def test_hessian_vector_products_through_the_rnn(fn, rnn_args):
    rng = np.random.default_rng(5)
    for wrt in (0, 1, 2, 4):
        v = rng.normal(size=rnn_args[wrt].shape)
        product = sourcegrad.hvp(fn, wrt=wrt)(*rnn_args, v)
        expected = _gradient_difference(sourcegrad.grad(fn, wrt=wrt), rnn_args, wrt, v)
        np.testing.assert_allclose(
            product, expected, rtol=1e-6, atol=1e-7, err_msg=f"hvp wrt {wrt}"
        )
    # the gradient differentiated above is the batched one
    assert rows_of_xs_used(sourcegrad.grad(fn, wrt=1).compile(rnn_args).source)
    # mixed second derivatives: d(dL/dU) along a change of xs, and along a change of W
    dU = sourcegrad.grad(fn, wrt=1)
    for pos in (4, 0):
        v = rng.normal(size=rnn_args[pos].shape)
        tangents = [None] * 5
        tangents[pos] = v
        value, tangent = sourcegrad.jvp(dU, rnn_args, tangents)
        np.testing.assert_allclose(value, dU(*rnn_args), rtol=1e-12)
        np.testing.assert_allclose(
            tangent, _gradient_difference(dU, rnn_args, pos, v), rtol=1e-6, atol=1e-7
        )


def test_hessian_of_the_bias_is_symmetric_and_matches_differences(rnn_args):
    H = sourcegrad.hessian(rnn, wrt=2)(*rnn_args)
    assert H.shape == (4, 4)
    np.testing.assert_allclose(H, H.T, atol=1e-10)
    db = sourcegrad.grad(rnn, wrt=2)
    for i in range(4):
        e = np.zeros(4)
        e[i] = 1.0
        np.testing.assert_allclose(
            H[i], _gradient_difference(db, rnn_args, 2, e), rtol=1e-6, atol=1e-7
        )


# --- dead-buffer reuse --------------------------------------------------------------------------


@pytest.fixture
def reuse_everything(monkeypatch):
    monkeypatch.setattr(optimize.memory, "BUFFER_REUSE_MIN_BYTES", 0)
    # (every dead buffer taken, not only where the update reads as one)
    monkeypatch.setattr(optimize.memory, "READABLE_BUFFER_MAX_BYTES", 0)
    monkeypatch.setattr(api.memory_caches, "COMPILED", {})  # compile afresh under the new threshold


def backward_statements(source):
    """The statements of the generated function after its first '# backward' comment."""
    lines = source.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("# backward")) + 1
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef))
    return [s for s in fn.body if s.lineno > start and not isinstance(s, ast.Return)]


def allocations(stmt, numbers=()):
    """What in a statement makes a new array: operators, and numpy calls on arrays (a name
    among the arguments) written without out=. Arithmetic on `numbers` (names of Python
    floats, such as the constant factors math.log(2.0)) makes none."""
    found = []
    for node in ast.walk(stmt):
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if not names <= set(numbers):
                found.append(ast.unparse(node))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "np"
        ):
            on_arrays = any(isinstance(a, ast.Name) for a in node.args)
            if on_arrays and not any(k.arg == "out" for k in node.keywords):
                found.append(ast.unparse(node))
    return found


def chain_derivative(x):
    """d/dx sum(chain(x)) by the chain rule, step by step (the workload's 20 ufuncs)."""
    steps = [
        (np.sin, np.cos),
        (np.cos, lambda v: -np.sin(v)),
        (np.exp, np.exp),
        (np.log1p, lambda v: 1 / (1 + v)),
        (np.sqrt, lambda v: 0.5 / np.sqrt(v)),
        (np.tanh, lambda v: 1 - np.tanh(v) ** 2),
        (np.arctan, lambda v: 1 / (1 + v * v)),
        (np.sinh, np.cosh),
        (np.cosh, np.sinh),
        (np.log, lambda v: 1 / v),
        (np.square, lambda v: 2 * v),
        (np.expm1, np.exp),
        (np.arcsinh, lambda v: 1 / np.sqrt(v * v + 1)),
        (np.reciprocal, lambda v: -1 / v**2),
        (np.arccosh, lambda v: 1 / np.sqrt(v * v - 1)),
        (np.log10, lambda v: 1 / (v * np.log(10))),
        (np.exp2, lambda v: np.exp2(v) * np.log(2)),
        (np.sin, np.cos),
        (np.arctan, lambda v: 1 / (1 + v * v)),
        (np.tanh, lambda v: 1 - np.tanh(v) ** 2),
    ]
    d, v = np.ones_like(x), x
    for f, df in steps:
        d, v = d * df(v), f(v)
    return d


def test_chain_backward_allocates_nothing(reuse_everything):
    x = np.random.default_rng(0).uniform(-1.0, 1.0, size=64)
    kept = x.copy()
    g = sourcegrad.grad(workloads.chain)
    got = g(x)
    np.testing.assert_array_equal(x, kept)
    np.testing.assert_allclose(got, chain_derivative(x), rtol=1e-10)
    np.testing.assert_allclose(got, workloads.chain_hand(x)[0], rtol=1e-10)
    np.testing.assert_allclose(got, numeric_grad(workloads.chain, (x,), 0), rtol=1e-4, atol=1e-7)
    statements = backward_statements(g.source)
    assert len(statements) >= 20
    # the rules' constant factors (ln 2, 1/ln 10, 2, -1, ...) are one product of numbers,
    # in the statement that applies it: `* (math.log(2.0) / math.log(10.0))`
    with_numbers = [s for s in statements if "math.log(" in ast.unparse(s)]
    assert len(with_numbers) == 1 and "math.log(2.0) / math.log(10.0)" in ast.unparse(
        with_numbers[0]
    )
    for stmt in statements:
        assert allocations(stmt, {"math"}) == [], ast.unparse(stmt)
    assert sum("constant factors" in line for line in g.source.splitlines()) == 1
    forward = g.source.split("# backward")[0]
    assert forward.count("out=") >= 5  # values the backward does not read are overwritten
    assert type(got) is np.ndarray and got.shape == x.shape and got.base is None
    again = g(x)
    assert again is not got
    np.testing.assert_array_equal(again, got)


def test_chain_at_the_default_threshold(monkeypatch):
    monkeypatch.setattr(api.memory_caches, "COMPILED", {})
    x = np.linspace(-0.9, 0.9, 70_000)  # 560 kB: over BUFFER_REUSE_MIN_BYTES
    kept = x.copy()
    g = sourcegrad.grad(workloads.chain)
    got = g(x)
    np.testing.assert_array_equal(x, kept)
    assert "out=" in g.source
    np.testing.assert_allclose(got, chain_derivative(x), rtol=1e-10)
    small = np.linspace(-0.9, 0.9, 7)
    assert "out=" not in sourcegrad.grad(workloads.chain).compile((small,)).source


def mlp(X, W1, b1, W2):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2
    return np.sum(out**2)


def test_a_transposed_view_is_read_before_its_buffer_is_reused(reuse_everything):
    rng = np.random.default_rng(1)
    args = (
        rng.normal(size=(6, 4)),
        rng.normal(size=(4, 5)),
        rng.normal(size=5),
        rng.normal(size=(5, 3)),
    )
    g = check_numbers(mlp, args, (0, 1, 2, 3))
    source = g.source
    # (the last `out=h)`: the first is the forward's `np.tanh(h, out=h)`)
    view, reuse = max(source.find("h.T.dot("), source.find("h.T @")), source.rfind("out=h)")
    assert view != -1 and reuse != -1, source
    assert view < reuse  # h's memory is taken only after the product through h.T is made
    # h is written into, but only after every reader: the forward value is right
    X, W1, b1, W2 = args
    h = np.tanh(X @ W1 + b1)
    d_out = 2 * (h @ W2)
    np.testing.assert_allclose(g(*args)[3], h.T @ d_out, rtol=1e-12)


def exp_and_trig(x, y):
    e = np.exp(x)
    s = np.sin(y)
    c = np.cos(y)
    return np.sum(e) + np.sum(s * c)


def test_a_returned_value_is_never_overwritten(reuse_everything):
    x, y = np.linspace(0.1, 1.0, 6), np.linspace(-0.5, 0.7, 6)
    vg = sourcegrad.value_and_grad(exp_and_trig, wrt=(0, 1))
    for _ in range(2):
        value, (dx, dy) = vg(x, y)
        assert value == pytest.approx(exp_and_trig(x, y), rel=1e-14)
        np.testing.assert_allclose(dx, np.exp(x), rtol=1e-15)  # e itself is returned
        np.testing.assert_allclose(dy, np.cos(2 * y), rtol=1e-12, atol=1e-15)
        assert dx is not dy
    assert "out=" in vg.source  # buffers are reused around the returned one
    assert "out=e)" not in vg.source and "out=e," not in vg.source


def appended(x):
    parts = []
    a = np.sin(x)
    parts.append(a)
    b = np.cos(x)
    parts.append(b * 2.0)
    c = np.exp(x)
    return np.sum(parts[0] * c) + np.sum(parts[1])


def test_a_value_appended_to_a_list_is_not_overwritten(reuse_everything):
    x = np.linspace(0.1, 1.0, 5)
    vg = sourcegrad.value_and_grad(appended)
    value, dx = vg(x)
    assert value == pytest.approx(appended(x), rel=1e-14)
    np.testing.assert_allclose(dx, numeric_grad(appended, (x,), 0), rtol=1e-6)
    np.testing.assert_allclose(dx, (np.cos(x) + np.sin(x)) * np.exp(x) - 2 * np.sin(x), rtol=1e-12)
    assert "out=a" not in vg.source.split("# backward")[0]


def appended_one_read(x):
    parts = []
    a = np.sin(x)
    parts.append(a)
    b = np.cos(x)
    parts.append(b)
    c = np.exp(x)
    return np.sum(parts[0] * c)


def test_an_adjoint_held_by_a_list_is_not_overwritten(reuse_everything):
    x = np.linspace(0.1, 1.0, 5)
    got = sourcegrad.grad(appended_one_read)(x)
    np.testing.assert_allclose(got, (np.cos(x) + np.sin(x)) * np.exp(x), rtol=1e-12)


def tuple_joined(x, y):
    a = np.sin(y)
    b = np.cos(y)
    ys = (a,) + (b,)
    c = np.exp(x)
    return np.sum(ys[0] * c)


def test_a_value_held_by_a_joined_tuple_is_not_overwritten(reuse_everything):
    x, y = np.linspace(0.1, 1.0, 5), np.linspace(-1.0, 0.5, 5)
    value, dx = sourcegrad.value_and_grad(tuple_joined)(x, y)
    assert value == pytest.approx(tuple_joined(x, y), rel=1e-14)
    np.testing.assert_allclose(dx, np.sin(y) * np.exp(x), rtol=1e-14)


def transposed_by_einsum(x):
    a = np.exp(x)
    v = np.einsum("ij->ji", a)
    t = np.sin(x)
    return np.sum(v * t)


def test_an_einsum_view_is_not_taken_for_a_fresh_array(reuse_everything):
    x = np.arange(9.0).reshape(3, 3) / 9.0
    got = sourcegrad.grad(transposed_by_einsum)(x)
    a = np.exp(x)
    np.testing.assert_allclose(got, a.T * np.cos(x) + np.sin(x).T * a, rtol=1e-12)


def elementwise_chain(x):
    a = np.sin(x)
    b = np.exp(a)
    c = np.tanh(b)
    return c * 2.0


def test_a_pullback_called_twice_gives_the_same_gradient(reuse_everything):
    x = np.linspace(0.1, 1.0, 4)
    value, pullback = sourcegrad.vjp(elementwise_chain)(x)
    kept = value.copy()
    expected = 2.0 * (1 - np.tanh(np.exp(np.sin(x))) ** 2) * np.exp(np.sin(x)) * np.cos(x)
    first = pullback(np.ones(4))
    second = pullback(np.ones(4))
    np.testing.assert_array_equal(value, kept)
    np.testing.assert_allclose(first, expected, rtol=1e-12)
    np.testing.assert_allclose(second, expected, rtol=1e-12)


# --- a bias added to every row once (optimize.row_products._add_invariants_to_rows) -------------------------


def bias_first(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(b + (W @ h + U @ xs[t]))
    return np.sum(h**2)


def bias_on_the_row(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(U @ xs[t] + b + W @ h)
    return np.sum(h**2)


def constant_shift(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + 0.5) * b
    return np.sum(h**2)


def decaying_bias(W, U, b, h0, xs):
    h = h0
    c = b
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + c)
        c = c * 0.5  # written in the loop: added per trip
    return np.sum(h**2)


def column_bias(W, U, b, h0, xs):
    h = h0
    B = b[:, None]  # (4, 1): row + B is a matrix, not a row
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + np.sum(U @ xs[t] + B, axis=1))
    return np.sum(h**2)


def row_read_twice(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        u = U @ xs[t]
        h = np.tanh(W @ h + u + b) + 0.1 * u
    return np.sum(h**2)


@pytest.mark.parametrize("fn", [rnn, bias_first, bias_on_the_row, constant_shift])
def test_a_bias_is_added_to_all_rows_before_the_loop(fn, rnn_args):
    g = check_numbers(fn, rnn_args, ALL)
    loop = re.search(r"^ +for t in range\(", g.source, re.MULTILINE).start()
    assert re.search(r"xs(\.dot\(U(\.T|_T)\)| @ U(\.T|_T)) \+ (b|0\.5)\b", g.source[:loop]), (
        g.source
    )
    forward = "\n".join(
        ln.split("#")[0] for ln in g.source[loop : g.source.index("# backward")].splitlines()
    )
    assert "+ b" not in forward and "b +" not in forward and "0.5" not in forward, forward
    value_and_grads = sourcegrad.value_and_grad(fn, wrt=ALL)(*rnn_args)
    assert value_and_grads[0] == pytest.approx(fn(*rnn_args), rel=1e-12)


@pytest.mark.parametrize("fn", [decaying_bias, column_bias, row_read_twice])
def test_a_bias_that_is_not_one_for_all_rows_stays_in_the_loop(fn, rnn_args):
    g = check_numbers(fn, rnn_args, ALL)
    loop = re.search(r"^ +for t in range\(", g.source, re.MULTILINE).start()
    assert not re.search(r"xs(\.dot\(| @ )U(\.T|_T)\)? \+", g.source[:loop]), g.source


def test_the_hoisted_bias_in_forward_over_reverse(rnn_args):
    # the tangent of `xs @ U.T + b` wrt b reaches every row (forward mode broadcasts it)
    v = np.random.default_rng(5).normal(size=4)
    hvp = sourcegrad.hvp(rnn, wrt=2)(*rnn_args, v)
    eps = 1e-6
    plus = list(rnn_args)
    minus = list(rnn_args)
    plus[2], minus[2] = rnn_args[2] + eps * v, rnn_args[2] - eps * v
    db = sourcegrad.grad(rnn, wrt=2)
    np.testing.assert_allclose(hvp, (db(*plus) - db(*minus)) / (2 * eps), rtol=1e-5, atol=1e-8)
