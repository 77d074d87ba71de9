"""Dead-buffer reuse (optimize.reuse_dead_buffers): an elementwise result computed into
the buffer of an operand that dies there. It applies to large arrays only, so these tests
lower the threshold to zero to exercise it on every case."""

import numpy as np
import pytest

import sourcegrad
from sourcegrad import api
from sourcegrad.api import numeric_grad
from sourcegrad.compiler import optimize
from tests.compiler.cases import CASES
from tests.fuzz.programs import check_program, generate


@pytest.fixture
def reuse_everything(monkeypatch):
    monkeypatch.setattr(optimize.memory, "BUFFER_REUSE_MIN_BYTES", 0)
    # (every dead buffer taken, not only where the update reads as one)
    monkeypatch.setattr(optimize.memory, "READABLE_BUFFER_MAX_BYTES", 0)
    monkeypatch.setattr(api.memory_caches, "COMPILED", {})  # compile afresh under the new threshold


@pytest.mark.parametrize("fn, make_args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_every_case_with_buffers_reused(fn, make_args, wrt, reuse_everything):
    args = make_args(np.random.default_rng(0))
    before = [np.copy(a) for a in args]
    grads = sourcegrad.grad(fn, wrt=wrt)(*args)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)  # the inputs are never written
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    grads = grads if isinstance(wrt, tuple) else (grads,)
    for pos, g in zip(positions, grads):
        np.testing.assert_allclose(g, numeric_grad(fn, args, pos), rtol=1e-6, atol=1e-8)


# campaign programs that went wrong with every buffer reused: a view's read folded past a
# write into its buffer (31-788, 31-1587)
@pytest.mark.parametrize("seed", [f"reuse-{i}" for i in range(20)] + ["31-788", "31-1587"])
def test_fuzz_programs_with_buffers_reused(seed, reuse_everything, tmp_path):
    outcome = check_program(generate(seed), str(tmp_path))
    assert outcome.status in ("matched", "skipped", "rejected"), outcome.report()


def chain(x):
    v = np.sin(x)
    v = np.exp(v)
    v = np.tanh(v * 2.0)
    return np.sum(v * v)


def test_large_chains_reuse_their_buffers_and_small_ones_do_not():
    small, large = np.linspace(0.1, 1.0, 100), np.linspace(0.1, 1.0, 200_000)
    gradient = sourcegrad.grad(chain)
    np.testing.assert_allclose(gradient(small), numeric_grad(chain, (small,), 0), rtol=1e-5)
    assert "out=" not in gradient.source
    g_large = gradient(large)
    assert "out=" in gradient.source
    # elementwise: each element's gradient is the one computed on that element alone
    picks = np.arange(0, 200_000, 2000)
    np.testing.assert_allclose(g_large[picks], sourcegrad.grad(chain)(large[picks]), rtol=1e-14)
    np.testing.assert_allclose(g_large[picks], numeric_grad(chain, (large[picks],), 0), rtol=1e-5)


def test_the_threshold_is_16_kib_on_numpy_and_512_kib_for_cupy():
    below, above = np.linspace(0.1, 1.0, 2000), np.linspace(0.1, 1.0, 2048)  # 16,000 / 16,384 B
    gradient = sourcegrad.grad(chain)
    gradient(below)
    assert "out=" not in gradient.source
    got = gradient(above)
    assert "out=" in gradient.source
    # elementwise: the same numbers as the gradient of a small slice (which allocates)
    np.testing.assert_allclose(got[::64], sourcegrad.grad(chain)(above[::64]), rtol=1e-14)
    pytest.importorskip("cupy")
    cupy_code = sourcegrad.grad(chain, backend="cupy").compile((above,)).source
    assert "out=" not in cupy_code and "@cp.fuse()" in cupy_code  # one kernel, not statements


def scaled(x, A):
    return np.sum(np.tanh(np.exp(A * x) * 2.0) ** 2)


def test_second_order_over_code_that_reuses_buffers(reuse_everything):
    A = np.linspace(0.1, 1.0, 5)
    first = sourcegrad.grad(scaled)
    second = sourcegrad.grad(first)
    value = second(0.3, A)
    assert "out=" in first.source
    assert value == pytest.approx(numeric_grad(first, (0.3, A), 0), rel=1e-7)


def user_out(x):
    y = x * 2.0
    np.exp(y, out=y)
    return np.sum(y * x)


def user_out_with_a_view(x):
    y = x * 2.0
    head = y[:2]
    np.exp(y, out=y)  # numpy changes head too
    return np.sum(head) + np.sum(y)


def test_out_in_user_code_is_an_update_in_place():
    x = np.array([0.3, -0.2, 0.7])
    np.testing.assert_allclose(
        sourcegrad.grad(user_out)(x), numeric_grad(user_out, (x,), 0), rtol=1e-7
    )
    with pytest.raises(sourcegrad.SourcegradError, match="changed in place"):
        sourcegrad.grad(user_out_with_a_view)(x)


def _reference_reuse(body, params, shapes, dtypes, keep_residuals, min_bytes):
    """The buffer choice as first written: every owned buffer scanned at every statement
    (quadratic in a long function's length; reuse_dead_buffers keeps a heap instead)."""
    from sourcegrad.compiler.ir import Assign, Call, Marker, Var

    counts = sourcegrad.compiler.ir.assignment_counts(body, params)
    owned = {
        s.target
        for s in body
        if isinstance(s, Assign)
        and counts.get(s.target) == 1
        and s.target not in params
        and optimize.algebra.fresh_result(s.value)
        and len(shapes.get(s.target) or ()) > 0
        and dtypes.get(s.target) is not None
        and np.prod(shapes[s.target]) * np.dtype(dtypes[s.target]).itemsize >= min_bytes
    }
    last_use = optimize.memory._last_uses(body, shapes)
    made_at = {s.target: i for i, s in enumerate(body) if isinstance(s, Assign)}
    split = (
        next((i for i, s in enumerate(body) if isinstance(s, Marker)), -1) if keep_residuals else -1
    )
    out = list(body)
    for i, stmt in enumerate(body):
        if not (isinstance(stmt, Assign) and stmt.target in owned):
            continue
        ufunc = optimize.algebra.ufunc_rule(stmt.value.op)
        if ufunc is None:
            continue
        fits = [
            n
            for n in owned
            if n != stmt.target
            and made_at[n] < i
            and shapes[n] == shapes[stmt.target]
            and dtypes[n] == dtypes[stmt.target]
            and not (made_at[n] < split < last_use[n])
        ]
        operands = [
            a.name
            for a in stmt.value.args
            if isinstance(a, Var) and a.name in fits and last_use[a.name] == i
        ]
        dead = sorted((n for n in fits if last_use[n] < i), key=lambda n: (-last_use[n], n))
        if operands or dead:
            buffer = (operands or dead)[0]
            out[i] = Assign(
                stmt.target,
                Call(ufunc, stmt.value.args, (("out", Var(buffer)),)),
                stmt.loc,
                stmt.note,
            )
            owned.discard(buffer)
    return out


def test_a_long_function_reuses_the_buffers_the_full_scan_chose(monkeypatch, tmp_path):
    """reuse_dead_buffers takes the buffer that died last from a heap per shape and dtype
    (the scan of every buffer at every statement made long functions quadratic): on a long
    function with two shapes, for plain gradients and pullbacks (residuals kept), every
    choice is the scan's, and the gradient is right."""
    from sourcegrad.bench import scaling

    bodies = []
    real = optimize.reuse_dead_buffers

    def both(
        body,
        params,
        shapes,
        dtypes,
        keep_residuals=False,
        min_bytes=None,
        user_names=frozenset(),
        fused=frozenset(),
    ):
        for kept in (False, True):
            got = real(body, params, shapes, dtypes, kept, 0)
            assert got == _reference_reuse(body, params, shapes, dtypes, kept, 0)
            bodies.append(sum(1 for s, t in zip(got, body) if s is not t))
        return real(body, params, shapes, dtypes, keep_residuals, 0)

    monkeypatch.setattr(optimize, "reuse_dead_buffers", both)
    monkeypatch.setattr(optimize.memory, "READABLE_BUFFER_MAX_BYTES", 0)
    monkeypatch.setattr(api.memory_caches, "COMPILED", {})
    fn = scaling.load_function(scaling.straight_line_source(120), "chain", str(tmp_path))
    args = scaling.straight_line_args()
    got = sourcegrad.grad(fn, wrt=(0, 1))(*args)
    assert bodies and min(bodies) > 50  # (many results computed into dead buffers)
    for pos in (0, 1):
        np.testing.assert_allclose(got[pos], numeric_grad(fn, args, pos), rtol=1e-5, atol=1e-8)


def carried_view(W, X):
    h = X
    s = 0.0
    for t in range(3):
        a = np.tanh(h @ W)
        h = a.T  # the next trip reads a's memory through h
        s = s + np.sum(np.cos(W * t))  # W * t: an array of a's shape, made after a's last read
    return np.sum(h) + s


def test_a_trip_never_computes_into_a_buffer_the_next_trip_reads():
    """A loop's trip reuses dead buffers as straight-line code does (the backward's
    `np.subtract(1.0, a_a, out=a_a)`), never one a value carried to the next trip or read
    after the loop refers to (h, a view of a)."""
    rng = np.random.default_rng(12)
    W, X = rng.normal(size=(200, 200)) * 0.05, rng.normal(size=(200, 200))
    g = sourcegrad.grad(carried_view, wrt=(0, 1))
    dW, dX = g(W, X)
    assert "out=a_a" in g.source  # (a buffer of the trip's reused in it)
    # (central differences along a random direction: the full ones cost 80,000 calls)
    V, U, eps = rng.normal(size=W.shape), rng.normal(size=X.shape), 1e-5
    step = carried_view(W + eps * V, X + eps * U) - carried_view(W - eps * V, X - eps * U)
    assert step / (2 * eps) == pytest.approx(np.sum(dW * V) + np.sum(dX * U), rel=1e-6)


def test_fusible_statements_are_those_a_run_of_parameters_makes():
    from sourcegrad.compiler.ir import Assign, Call, Const, Var
    from sourcegrad.compiler.optimize.memory import fusible_elementwise

    body = [
        Assign("s", Call("sin", (Var("x"),)), None),  # a parameter of the result's shape
        Assign("t", Call("mul_op", (Var("s"), Const(2.0))), None),  # a fused value, a number
        Assign("m", Call("matmul_op", (Var("x"), Var("w"))), None),  # not elementwise
        Assign("u", Call("tanh", (Var("m"),)), None),  # reads a product: its own statement
        Assign("v", Call("add_op", (Var("x"), Var("b"))), None),  # b broadcasts
        Assign("r", Call("add_op", (Var("t"), Var("c"))), None),  # c a number
    ]
    shapes = {"x": (3, 4), "s": (3, 4), "t": (3, 4), "w": (4, 4), "m": (3, 4), "u": (3, 4)}
    shapes.update(v=(3, 4), b=(4,), r=(3, 4), c=())
    dtypes = dict.fromkeys(shapes, np.float64)
    assert fusible_elementwise(body, ("x", "w", "b", "c"), shapes, dtypes) == {"s", "t", "r"}
