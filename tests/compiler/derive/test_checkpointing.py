"""Checkpointed loops and memory budgets: the same gradients (to rounding), fewer saved values."""

import re

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import numeric_grad
from sourcegrad.compiler.derive.checkpointing import saved_bytes
from tests.compiler.control_cases import CONTROL_CASES

IDS = [f"{c[0].__name__}-{i}" for i, c in enumerate(CONTROL_CASES)]


def _as_tuple(g, wrt):
    return g if isinstance(wrt, tuple) else (g,)


def _tightest(fn, wrt, plan, args):
    """(fn's gradient under `plan`, its value at `args`). A budget below what some loop keeps
    at the least is refused, naming the smallest budget that works: that one is then taken
    (the tightest there is for fn)."""
    g = sourcegrad.grad(fn, wrt=wrt, **plan)
    try:
        return g, g(*args)
    except errors.MemoryBudgetError as exc:
        assert exc.smallest > plan["memory"] and f"memory={exc.smallest}" in str(exc)
        g = sourcegrad.grad(fn, wrt=wrt, memory=exc.smallest)
        return g, g(*args)


# every control-flow case, under the tightest plans: a snapshot every trip or two, and "min";
# revolve with one or two snapshots (each trip made again from the loop's start or nearly)
@pytest.mark.parametrize(
    "plan",
    [
        dict(checkpoint_loops=1),
        dict(memory=64),
        dict(checkpoint_loops=("revolve", 2)),
        pytest.param(dict(checkpoint_loops=2), marks=pytest.mark.fuzz),
        pytest.param(dict(memory="min"), marks=pytest.mark.fuzz),
        pytest.param(dict(checkpoint_loops=("revolve", 1)), marks=pytest.mark.fuzz),
    ],
    ids=["k1", "64B", "revolve2", "k2", "min", "revolve1"],
)
@pytest.mark.parametrize("fn, make_args, wrt", CONTROL_CASES, ids=IDS)
def test_control_flow_gradients_unchanged_under_a_tight_plan(fn, make_args, wrt, plan):
    args = make_args(np.random.default_rng(0))
    expected = _as_tuple(sourcegrad.grad(fn, wrt=wrt)(*args), wrt)
    got = _as_tuple(_tightest(fn, wrt, plan, args)[1], wrt)
    for e, g in zip(expected, got):
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


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


def rnn(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2)


def _rnn_args(steps):
    rng = np.random.default_rng(1)
    return (
        rng.normal(size=(6, 6)) * 0.3,
        rng.normal(size=(6, 4)),
        rng.normal(size=6),
        rng.normal(size=6),
        rng.normal(size=(steps, 4)),
    )


@pytest.mark.parametrize("steps", [0, 1, 4, 5, 6, 23])
@pytest.mark.parametrize("k", [1, 3, 5, "sqrt"])
def test_for_loop_segments_of_every_length(steps, k):
    """Trip counts below, at and past a segment's end, and a last segment cut short."""
    args = _rnn_args(steps)
    expected = sourcegrad.grad(rnn, wrt=(0, 1, 2))(*args)
    got = sourcegrad.grad(rnn, wrt=(0, 1, 2), checkpoint_loops=k)(*args)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
    for pos in (0, 2):
        np.testing.assert_allclose(got[pos], numeric_grad(rnn, args, pos), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("T", [0.0, 0.005, 0.035, 0.045, 0.995])
@pytest.mark.parametrize("k", [1, 4, 7])
def test_while_loop_online_segments(T, k):
    args = (4.0, 0.5, 1.0, 0.0, 0.01, T)
    expected = sourcegrad.grad(spring, wrt=(0, 1))(*args)
    got = sourcegrad.grad(spring, wrt=(0, 1), checkpoint_loops=k)(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def test_the_stack_holds_snapshots_and_one_segment():
    """What the backward keeps: n/k snapshots plus one segment's trips, not n trips."""
    g = sourcegrad.grad(spring, wrt=(0, 1), checkpoint_loops=10)
    longest = []

    class Watched(list):
        def append(self, v):
            super().append(v)
            longest.append(len(self))

    g(4.0, 0.5, 1.0, 0.0, 0.01, 0.995)  # 100 trips
    text = g.source
    joined = re.sub(r"\n +#   ", " ", text)  # (a wrapped line comment read as one line)
    assert (
        "saved.append(x)" in text
        and "recomputed from the snapshot taken every 10 trips, checkpoint_loops=10" in joined
    )
    namespace = {"Watched": Watched}
    module = text.replace("saved = []", "saved = Watched()")
    exec(compile(module, "<spring>", "exec"), namespace)
    fn = next(v for k, v in namespace.items() if k.startswith("dspring"))
    assert fn(4.0, 0.5, 1.0, 0.0, 0.01, 0.995) == g(4.0, 0.5, 1.0, 0.0, 0.01, 0.995)
    # 10 snapshots of (t, v, x) and at most one segment of 10 trips of (x, v)
    assert max(longest) <= 10 * 3 + 10 * 2


def test_no_plan_changes_nothing():
    args = _rnn_args(5)
    plain = sourcegrad.grad(rnn, wrt=0)
    plain(*args)
    assert "segment" not in plain.source


@pytest.mark.parametrize(
    "bad",
    [
        dict(checkpoint_loops=0),
        dict(checkpoint_loops="log"),
        dict(checkpoint_loops=("revolve", 0)),
        dict(checkpoint_loops=("revolve",)),
        dict(checkpoint_loops=("revolve", 2.5)),
        dict(checkpoint_loops=("revolve", True)),
        dict(checkpoint_loops=("sqrt", 2)),
        dict(checkpoint_loops=["revolve", 2]),
        dict(memory=-1),
        dict(memory="max"),
        dict(memory=100, checkpoint_loops=2),
    ],
)
def test_bad_options_are_refused(bad):
    with pytest.raises(errors.SourcegradError):
        sourcegrad.grad(rnn, **bad)


def test_the_manifest_says_what_is_saved_recomputed_and_why():
    g = sourcegrad.grad(spring, wrt=(0, 1), checkpoint_loops=1000 // (2 * 16))
    g(4.0, 0.5, 1.0, 0.0, 0.01, 0.995)
    by_status = {}
    for e in g.saved:
        by_status.setdefault(e["status"], set()).add(e["name"])
        assert e["why"] and e["bytes"] == 8
    assert by_status["snapshot"] == {"t", "v", "x"}
    assert {"x", "v"} <= by_status["recomputed"] and len(by_status["recomputed"]) >= 5
    assert by_status["saved per trip of a segment"] == {"x", "v"}
    k = next(e["every"] for e in g.saved if e["status"] == "snapshot")
    assert k == 1000 // (2 * 16)
    assert saved_bytes(g.saved, 10**6) <= 1000 + 16 + 24 * -(-(10**6) // k)
    assert 16 * 10**6 > saved_bytes(g.saved, 10**6)


def test_a_budget_for_a_while_loop_is_kept_by_revolve():
    """A while loop's length is known only once it has run: under memory=B it takes revolve
    over segments of k trips (a segment's values in half of B, snapshots in the rest), which
    keeps the budget whatever the trip count."""
    g = sourcegrad.grad(spring, wrt=(0, 1), memory=1000)
    for T in (0.0, 0.005, 0.995, 4.995):  # 0, 1, 100 and 500 trips
        args = (4.0, 0.5, 1.0, 0.0, 0.01, T)
        np.testing.assert_allclose(
            g(*args), sourcegrad.grad(spring, wrt=(0, 1))(*args), rtol=1e-12, atol=1e-15
        )
    snapshots = [e for e in g.saved if e["status"] == "snapshot"]
    assert {e["name"] for e in snapshots} == {"t", "v", "x"}
    slots, k = snapshots[0]["slots"], snapshots[0]["every"]
    assert slots >= 10 and k >= 10
    assert all("by revolve over segments of" in e["why"] for e in snapshots)
    per_trip = [e for e in g.saved if e["status"] == "saved per trip of a segment"]
    assert {e["name"] for e in per_trip} == {"x", "v"} and all(e["every"] == k for e in per_trip)
    made_once = saved_bytes([e for e in g.saved if e["status"] == "saved"], 1)
    for trips in (10, 10**6, 10**9):
        assert saved_bytes(g.saved, trips) - made_once <= 1000
    assert saved_bytes(g.saved, 10**6) - made_once == 24 * slots + 16 * k


def test_show_saved_prints_the_status(capsys, tmp_path):
    from sourcegrad import cli

    path = tmp_path / "rnn_file.py"
    path.write_text(
        "import numpy as np\n\n\ndef rnn(W, xs):\n    h = xs[0]\n"
        "    for t in range(xs.shape[0]):\n        h = np.tanh(W @ h + xs[t])\n"
        "    return np.sum(h)\n"
    )
    cli.main(
        [
            "show",
            f"{path}:rnn",
            "--args",
            "W=(3, 3), xs=(16, 3)",
            "--saved",
            "--checkpoint-loops",
            "4",
        ]
    )
    out = capsys.readouterr().out
    out = re.sub(r"\n +#   ", " ", out)  # (a wrapped line comment read as one line)
    assert "for segment in reversed(range(" in out
    assert (
        "# line 6: for t in range(xs.shape[0]):  (snapshot of the loop's state taken every "
        "4 trips, checkpoint_loops=4)" in out
    )
    assert (
        "#   h: shape (3,), float64, 24 bytes, line 6, snapshot: snapshot of the loop's "
        "state taken every 4 trips" in out
    )
    assert "recomputed: recomputed from the snapshot taken every 4 trips" in out


def test_show_saved_under_revolve(capsys, tmp_path):
    from sourcegrad import cli

    path = tmp_path / "rnn_revolve.py"
    path.write_text(
        "import numpy as np\n\n\ndef rnn(W, xs):\n    h = xs[0]\n"
        "    for t in range(xs.shape[0]):\n        h = np.tanh(W @ h + xs[t])\n"
        "    return np.sum(h)\n"
    )
    args = ["show", f"{path}:rnn", "--args", "W=(3, 3), xs=(16, 3)", "--saved"]
    cli.main(args + ["--checkpoint-loops", "revolve:3"])
    out = re.sub(r"\n +#   ", " ", capsys.readouterr().out)
    assert "restart = revolve_restart(schedule, t)" in out
    assert (
        "#   h: shape (3,), float64, 24 bytes, line 6, snapshot: snapshot of the loop's "
        "state taken by revolve, 3 snapshots at most, checkpoint_loops=('revolve', 3)" in out
    )
    assert cli.main(args + ["--checkpoint-loops", "revolve:0"]) != 0
    assert "('revolve', snapshots) with a positive int" in capsys.readouterr().err


# --- sourcegrad.checkpoint(f) in compiled code -----------------------------------------------


def block(x, W):
    h = np.tanh(x @ W)
    return np.exp(h) * h


@sourcegrad.checkpoint
def helper(x, V):
    return np.sin(x @ V) * x.sum()


def with_checkpoints(x, W, V):
    u = x * 2.0
    y = sourcegrad.checkpoint(block)(u, W)
    z = helper(y, V) + y
    return np.sum(z**2)


def without_checkpoints(x, W, V):
    u = x * 2.0
    y = block(u, W)
    z = helper.__wrapped__(y, V) + y
    return np.sum(z**2)


def checkpoint_in_a_loop(x, W):
    for _ in range(3):
        x = helper(x, W)
    return np.sum(x)


def _block_args():
    rng = np.random.default_rng(2)
    return rng.normal(size=(5, 4)), rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(4, 4)) * 0.5


def test_checkpointed_calls_are_recomputed_in_the_backward():
    args = _block_args()
    g = sourcegrad.value_and_grad(with_checkpoints, wrt=(0, 1, 2))
    value, got = g(*args)
    expected_value, expected = sourcegrad.value_and_grad(without_checkpoints, wrt=(0, 1, 2))(*args)
    assert value == expected_value
    for e, r in zip(expected, got):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    for pos in range(3):
        np.testing.assert_allclose(
            got[pos], numeric_grad(with_checkpoints, args, pos), rtol=1e-6, atol=1e-8
        )
    source = g.source
    joined = re.sub(r"\n +#   ", " ", source)  # (a wrapped line comment read as one line)
    # the backward makes the call's values again (its own names, noted), the user's line named
    assert "block_h_1 = np.tanh(u.dot(W))  # checkpoint" in source
    assert (
        f"# backward of line {block.__code__.co_firstlineno + 1}: h = np.tanh(x @ W)  "
        "(checkpoint: recomputed in the backward, not saved)" in joined
    )
    # what the backward keeps from the forward: the calls' inputs (and z, made outside them),
    # not their intermediates
    kept = {e["name"] for e in g.saved if not e["input"]}
    assert kept == {"u", "z"}, kept
    plain = sourcegrad.value_and_grad(without_checkpoints, wrt=(0, 1, 2))
    plain(*args)
    assert {e["name"] for e in plain.saved if not e["input"]} > {"u", "z"}


def test_a_checkpointed_call_in_a_loop_is_inlined_and_correct():
    x, W, _ = _block_args()
    got = sourcegrad.grad(checkpoint_in_a_loop, wrt=(0, 1))(x, W)
    for pos in range(2):
        np.testing.assert_allclose(
            got[pos], numeric_grad(checkpoint_in_a_loop, (x, W), pos), rtol=1e-6, atol=1e-8
        )


def test_checkpoint_outside_compiled_code():
    x, W, V = _block_args()
    np.testing.assert_array_equal(helper(x, V), np.sin(x @ V) * x.sum())
    with pytest.raises(errors.SourcegradError, match="takes a function"):
        sourcegrad.checkpoint(3.0)


def test_checkpoint_on_eager_tensors_is_torchs():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as torch_checkpoint

    x, W, V = _block_args()

    def run(lib, ck):
        xt, vt = lib.tensor(x, requires_grad=True), lib.tensor(V, requires_grad=True)
        y = ck(lambda a, b: lib.sin(a @ b) * a.sum(), xt, vt)
        (y**2).sum().backward()
        return xt.grad.numpy(), vt.grad.numpy()

    expected = run(torch, lambda f, *a: torch_checkpoint.checkpoint(f, *a, use_reentrant=False))
    got = run(sourcegrad, lambda f, *a: sourcegrad.checkpoint(f)(*a))
    for e, r in zip(expected, got):
        np.testing.assert_allclose(r, e, rtol=1e-12)


RNG = np.random.RandomState(0)


def noisy_walk(x, n):
    for _ in range(n):
        x = np.tanh(x + 0.1 * RNG.standard_normal(x.shape))
    return np.sum(x)


def test_a_loop_that_draws_is_not_replayed():
    """Running its trips again would draw other numbers: the loop keeps every trip."""
    x = np.linspace(-1.0, 1.0, 4)
    g = sourcegrad.grad(noisy_walk, checkpoint_loops=2)
    RNG.seed(5)
    got = g(x, 6)
    RNG.seed(5)
    expected = sourcegrad.grad(noisy_walk)(x, 6)
    np.testing.assert_array_equal(got, expected)
    assert "segment" not in g.source


@sourcegrad.checkpoint
def noisy_block(x):
    eps = RNG.standard_normal(x.shape)
    return np.tanh(x + 0.1 * eps) * eps


def noisy_checkpointed(x):
    return np.sum(noisy_block(x) ** 2)


def test_a_checkpointed_call_that_draws_keeps_its_sample():
    x = np.linspace(-1.0, 1.0, 4)
    RNG.seed(3)
    got = sourcegrad.grad(noisy_checkpointed)(x)
    RNG.seed(3)
    eps = RNG.standard_normal(4)
    y = np.tanh(x + 0.1 * eps) * eps
    np.testing.assert_allclose(got, 2.0 * y * eps * (1.0 - np.tanh(x + 0.1 * eps) ** 2), rtol=1e-12)


def rnn_with_aux(W, U, b, h0, xs):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h**2), h


def test_has_aux_keeps_the_plan():
    args = _rnn_args(9)
    g = sourcegrad.grad(rnn_with_aux, wrt=0, has_aux=True, checkpoint_loops=3)
    grad, aux = g(*args)
    expected, expected_aux = sourcegrad.grad(rnn_with_aux, wrt=0, has_aux=True)(*args)
    np.testing.assert_allclose(grad, expected, rtol=1e-12)
    np.testing.assert_allclose(aux, expected_aux, rtol=1e-14)  # (rows, not one product)
    assert "segment" in g.source


# --- straight-line values under a budget: recomputed, the cheapest per byte first ------------


def mlp(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


def _mlp_args(batch=256, n_in=32, n_hidden=512, n_out=4):
    rng = np.random.default_rng(3)
    return (
        rng.normal(size=(n_in, n_hidden)) * n_in**-0.5,
        rng.normal(size=n_hidden) * 0.1,
        rng.normal(size=(n_hidden, n_out)) * n_hidden**-0.5,
        rng.normal(size=(batch, n_in)),
        np.eye(n_out)[rng.integers(0, n_out, size=batch)],
    )


def _kept(g):
    return sum(
        e["bytes"] for e in g.saved if e.get("status", "saved") == "saved" and not e["input"]
    )


def test_a_budget_of_half_the_saved_bytes_recomputes_the_hidden_layer():
    """(With respect to the batch X too: its gradient is row-wise, so the batch does not go
    through in blocks of rows, `test_row_blocks`, and values are recomputed instead.)"""
    args = _mlp_args()
    plain = sourcegrad.grad(mlp, wrt=(0, 1, 2, 3))
    expected = plain(*args)
    half = _kept(plain) // 2
    g = sourcegrad.grad(mlp, wrt=(0, 1, 2, 3), memory=half)
    got = g(*args)
    for e, r in zip(expected, got):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    assert _kept(g) <= half
    h = next(e for e in g.saved if e["name"] == "h")
    assert h["status"] == "recomputed" and h["bytes"] == 256 * 512 * 8
    assert f"keeping it would pass the budget (memory={half})" in h["why"]
    text = re.sub(r"\n +#   ", " ", g.source)  # (a wrapped line comment read as one line)
    assert (
        f"# backward of line {mlp.__code__.co_firstlineno + 1}: h = np.tanh(X @ W1 + b1)  "
        f"(recomputed in the backward, not saved: h; memory={half})" in text
    )
    # the forward's h is deleted once the forward has read it: the backward holds one h
    forward = text[: text.index("(recomputed in the backward")]
    assert re.search(r"\n    del h  # read no more", forward)


def test_no_budget_keeps_the_values_and_a_large_budget_changes_nothing():
    args = _mlp_args()
    plain = sourcegrad.grad(mlp, wrt=0)
    plain(*args)
    roomy = sourcegrad.grad(mlp, wrt=0, memory=_kept(plain))
    roomy(*args)
    assert "recomputed" not in plain.source and "recomputed" not in roomy.source
    assert not any(e["status"] == "recomputed" for e in roomy.saved)


def elementwise_and_product(W, X):
    a = X @ W
    b = np.exp(X)
    return np.sum(np.sin(a) * b)


def test_the_cheapest_value_per_byte_is_recomputed_first():
    """a (a matmul) and b (an elementwise exp) take the same bytes: under a budget for one
    of them, b is made again and a kept."""
    rng = np.random.default_rng(4)
    args = (rng.normal(size=(64, 64)) * 0.1, rng.normal(size=(64, 64)))
    # (with respect to X too: not in blocks of rows, `test_row_blocks`)
    plain = sourcegrad.grad(elementwise_and_product, wrt=(0, 1))
    g = sourcegrad.grad(elementwise_and_product, wrt=(0, 1), memory=64 * 64 * 8 * 3 // 2)
    for e, r in zip(plain(*args), g(*args)):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    status = {e["name"]: e["status"] for e in g.saved}
    assert status["b"] == "recomputed"
    assert status.get("a", status.get("cos_a")) == "saved"


def updated_in_place(x, W):
    y = np.tanh(x @ W)
    y[0] = 0.0
    return np.sum(y * x)


def test_a_function_updating_an_array_in_place_keeps_its_values():
    rng = np.random.default_rng(5)
    args = (rng.normal(size=(8, 8)), rng.normal(size=(8, 8)))
    g = sourcegrad.grad(updated_in_place, wrt=(0, 1), memory=64)
    for e, r in zip(sourcegrad.grad(updated_in_place, wrt=(0, 1))(*args), g(*args)):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    assert not any(e["status"] == "recomputed" for e in g.saved)


def layers(w, X):
    h1 = np.tanh(X * w)
    h2 = np.tanh(h1 * w)
    h3 = np.tanh(h2 * w)
    h4 = np.tanh(h3 * w)
    return np.sum(h4)


def test_recomputing_lowers_the_peak_memory_of_a_deep_chain():
    """The values the backward reads last are made again late, once the kept ones it read
    first are freed (`del`): the peak holds fewer arrays at once."""
    import tracemalloc

    X, w = np.random.default_rng(6).normal(size=(256, 512)), 0.7
    nbytes = X.nbytes

    def peak(g):
        g(w, X)
        tracemalloc.start()
        try:
            g(w, X)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    # (with respect to X too: not in blocks of rows, `test_row_blocks`)
    plain = sourcegrad.grad(layers, wrt=(0, 1))
    g = sourcegrad.grad(layers, wrt=(0, 1), memory=2 * nbytes)
    for e, r in zip(plain(w, X), g(w, X)):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    assert sum(e["status"] == "recomputed" for e in g.saved) == 2
    assert peak(g) <= peak(plain) - nbytes


# --- loops holding loops: the outer loop is checkpointed, its inner loops replayed whole -----


def for_holding_a_while(W, x, T):
    h = x
    for t in range(5):
        u = 0.0
        while u < T:
            h = np.tanh(W @ h)
            u = u + 1.0
    return np.sum(h**2)


def while_holding_a_for(W, x, n):
    h = x
    k = 0
    while k < n:
        for s in range(3):
            h = np.tanh(W @ h)
        k = k + 1
    return np.sum(h**2)


def three_deep(W, x, T):
    h = x
    for a in range(3):
        for b in range(2):
            for c in range(2):
                h = np.sin(W @ h)
    return np.sum(h) * T


@pytest.mark.parametrize("fn", [for_holding_a_while, while_holding_a_for, three_deep])
@pytest.mark.parametrize(
    "plan",
    [
        dict(checkpoint_loops=1),
        dict(checkpoint_loops=2),
        dict(memory=64),
        dict(memory="min"),
        dict(checkpoint_loops=("revolve", 2)),
    ],
    ids=["k1", "k2", "64B", "min", "revolve2"],
)
def test_a_loop_holding_loops_is_checkpointed_with_the_same_gradients(fn, plan):
    """(An inner `while` writes its test's value before reading it: that value was taken for
    the outer loop's state, read before it was made: UnboundLocalError.)"""
    rng = np.random.default_rng(7)
    args = (
        rng.normal(size=(4, 4)) * 0.5,
        rng.normal(size=4),
        2.5 if fn is not while_holding_a_for else 4,
    )
    expected = sourcegrad.grad(fn, wrt=(0, 1))(*args)
    g, got = _tightest(fn, (0, 1), plan, args)
    for e, r in zip(expected, got):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    assert "for segment in reversed(range(" in g.source or "revolve_restart(" in g.source


# --- revolve: Griewank's binomial checkpointing ----------------------------------------------


def _run_schedule(trips, slots, start=0, step=1, known=True):
    """The schedule as generated code follows it (sourcegrad.runtime), on a model of the
    saved-value stack: (forward runs of each trip, most snapshots held, trips reversed)."""
    from sourcegrad import runtime

    loop = range(start, start + trips * step, step)
    runs, stack, most, reversed_trips = {t: 0 for t in loop}, [], 0, []
    if known:
        schedule = runtime.revolve_schedule(loop.start, loop.stop, loop.step, slots)
        upcoming = runtime.revolve_next(schedule)
    for t in loop:
        if known and t == upcoming:
            stack.append(t)
            upcoming = runtime.revolve_taken(schedule, t)
        elif not known and t == loop.start:
            stack.append(t)  # (a while loop keeps the state it began with)
        runs[t] += 1
    if not known:
        schedule = runtime.revolve_schedule(loop.start, loop.stop, loop.step, slots, True)
    most = len(stack)
    for t in reversed(loop):
        restart = runtime.revolve_restart(schedule, t)
        assert stack.pop() == restart  # the latest snapshot is the one restored
        if restart != t:
            stack.append(restart)
        upcoming = runtime.revolve_next(schedule)
        for u in range(restart, t, step):
            if u == upcoming:
                stack.append(u)
                most = max(most, len(stack))
                upcoming = runtime.revolve_taken(schedule, u)
            runs[u] += 1
        reversed_trips.append(t)
    assert not stack
    return runs, most, reversed_trips


@pytest.mark.parametrize("trips", [0, 1, 2, 3, 7, 10, 36, 37, 100, 1000])
@pytest.mark.parametrize("slots", [1, 2, 3, 5, 10])
def test_the_schedule_keeps_the_binomial_bounds(trips, slots):
    """At most `slots` snapshots; each trip run forward at most r + 1 times (r the least
    with C(s + r, s) >= n; the forward sweep's run is the one more), and in all at most one
    forward sweep more than Griewank's least number of runs, r * n - C(s + r, r - 1)."""
    from math import comb

    from sourcegrad.runtime import revolve_repetitions

    r = revolve_repetitions(trips, slots)
    assert comb(slots + r, slots) >= trips and (r == 0 or comb(slots + r - 1, slots) < trips)
    for start, step in [(0, 1), (5, 3), (4, -2)]:
        runs, most, order = _run_schedule(trips, slots, start, step)
        loop = range(start, start + trips * step, step)
        assert order == list(reversed(loop))  # every trip reversed once, the last first
        assert most <= slots
        assert max(runs.values(), default=0) <= r + 1
        least = r * trips - comb(slots + r, r - 1) if r >= 1 else 0
        assert least <= sum(runs.values()) <= least + trips
    # a while loop: its trips counted first, then planned: one forward sweep more
    runs, most, order = _run_schedule(trips, slots, known=False)
    assert most <= slots and max(runs.values(), default=0) <= r + 2
    assert sum(runs.values()) <= (r * trips - comb(slots + r, r - 1) if r else 0) + 2 * trips


def test_the_split_is_one_of_least_cost():
    """revolve_split's m puts both parts in the ranges where the total is the least."""
    from sourcegrad.runtime import revolve_capacity as beta
    from sourcegrad.runtime import revolve_repetitions, revolve_split

    for slots in range(2, 8):
        for trips in range(2, 400):
            r = revolve_repetitions(trips, slots)
            m = revolve_split(trips, slots)
            assert 1 <= m < trips
            assert beta(slots, r - 2) <= m <= beta(slots, r - 1)
            assert beta(slots - 1, r - 1) <= trips - m <= beta(slots - 1, r)


@pytest.mark.parametrize("steps", [0, 1, 2, 5, 11, 23])
@pytest.mark.parametrize("plan", [("revolve", 1), ("revolve", 2), ("revolve", 3), "revolve"])
def test_for_loop_under_revolve(steps, plan):
    """Trip counts 0, 1, 2 and ones between binomial numbers (C(2 + r, 2): 6, 10, 15, 21)."""
    args = _rnn_args(steps)
    expected = sourcegrad.grad(rnn, wrt=(0, 1, 2))(*args)
    g = sourcegrad.grad(rnn, wrt=(0, 1, 2), checkpoint_loops=plan)
    got = g(*args)
    for e, r in zip(expected, got):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    if steps == 11:
        for pos in (0, 2):
            np.testing.assert_allclose(got[pos], numeric_grad(rnn, args, pos), rtol=1e-6, atol=1e-8)
    # (a loop of one trip or none, its length known when compiling, is left as it is)
    assert ("revolve_restart(" in g.source) == (steps >= 2)


def strided(w, x):
    s = x
    for i in range(1, 12, 3):
        s = np.sin(s * w + i)
    for j in range(9, -1, -2):
        s = s * np.cos(w * j) + s**2 * 0.1
    return np.sum(s)


@pytest.mark.parametrize("plan", [("revolve", 1), ("revolve", 2), "revolve"])
def test_for_loops_with_a_step_under_revolve(plan):
    x, w = np.linspace(-1.0, 1.0, 5), 0.7
    expected = sourcegrad.grad(strided, wrt=(0, 1))(w, x)
    got = sourcegrad.grad(strided, wrt=(0, 1), checkpoint_loops=plan)(w, x)
    for e, r in zip(expected, got):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    for pos in (0, 1):
        np.testing.assert_allclose(
            got[pos], numeric_grad(strided, (w, x), pos), rtol=1e-6, atol=1e-8
        )


@pytest.mark.parametrize("T", [0.0, 0.005, 0.035, 0.045, 0.995])
@pytest.mark.parametrize("slots", [1, 2, 4])
def test_while_loop_under_revolve(T, slots):
    args = (4.0, 0.5, 1.0, 0.0, 0.01, T)
    expected = sourcegrad.grad(spring, wrt=(0, 1))(*args)
    got = sourcegrad.grad(spring, wrt=(0, 1), checkpoint_loops=("revolve", slots))(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    if T == 0.045:
        for pos in (0, 1):
            np.testing.assert_allclose(
                got[pos], numeric_grad(spring, args, pos), rtol=1e-6, atol=1e-9
            )


def test_a_trip_recorded_and_reversed_at_once_pushes_nothing_it_pops_straight_back():
    # the spring's recorded trip needs only x and v as they stand: once its statements are
    # dead, `saved.append(x) ... x = saved.pop()` went too (the Cleaner's push/pop pairs)
    g = sourcegrad.grad(spring, wrt=(0, 1), checkpoint_loops=("revolve", 4))
    args = (4.0, 0.5, 1.0, 0.0, 0.01, 0.995)
    np.testing.assert_allclose(
        g(*args), sourcegrad.grad(spring, wrt=(0, 1))(*args), rtol=1e-12, atol=1e-15
    )
    backward = g.source[g.source.index("revolve_schedule(") :]
    lines = [line.strip() for line in backward.splitlines() if not line.strip().startswith("#")]
    for name in ("x", "v", "t"):
        pushes = [i for i, line in enumerate(lines) if line == f"saved.append({name})"]
        pops = [i for i, line in enumerate(lines) if line == f"{name} = saved.pop()"]
        # the snapshot restored, kept, and taken on the way: one pop, two pushes
        assert (len(pops), len(pushes)) == (1, 2), backward


def branchy(W, x, n):
    h = x
    for t in range(n):
        if np.sum(h) > 0:
            h = np.tanh(W @ h)
        else:
            h = np.sin(W.T @ h) + 0.5 * h
    return np.sum(h**2)


def test_a_loop_with_branches_under_revolve():
    rng = np.random.default_rng(8)
    args = (rng.normal(size=(4, 4)), rng.normal(size=4), 9)
    expected = sourcegrad.grad(branchy, wrt=(0, 1))(*args)
    got = sourcegrad.grad(branchy, wrt=(0, 1), checkpoint_loops=("revolve", 2))(*args)
    for e, r in zip(expected, got):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    for pos in (0, 1):
        np.testing.assert_allclose(got[pos], numeric_grad(branchy, args, pos), rtol=1e-6, atol=1e-8)


def test_the_stack_holds_at_most_the_slots_and_one_trip():
    """What the backward keeps under revolve: s snapshots and one trip's values, whatever n."""
    g = sourcegrad.grad(spring, wrt=(0, 1), checkpoint_loops=("revolve", 4))
    longest = []

    class Watched(list):
        def append(self, v):
            super().append(v)
            longest.append(len(self))

    args = (4.0, 0.5, 1.0, 0.0, 0.01, 0.995)  # 100 trips
    g(*args)
    text = g.source
    joined = re.sub(r"\n +#   ", " ", text)  # (a wrapped line comment read as one line)
    assert "recomputed from the snapshot taken by revolve, 4 snapshots at most, " in joined
    assert "checkpoint_loops=('revolve', 4)" in joined
    namespace = {"Watched": Watched}
    exec(compile(text.replace("saved = []", "saved = Watched()"), "<spring>", "exec"), namespace)
    fn = next(v for k, v in namespace.items() if k.startswith("dspring"))
    assert fn(*args) == g(*args)
    assert max(longest) <= 4 * 3 + 2  # 4 snapshots of (t, v, x), one trip's (x, v)


def test_a_budget_chooses_the_scheme():
    """Under memory=B a loop of known length keeps every trip when they fit, takes the sqrt
    scheme when its snapshots and one segment fit, and revolve when they do not."""
    args = _rnn_args(400)  # a trip saves h: 48 bytes; a snapshot is h: 48 bytes

    def scheme(budget):
        g = sourcegrad.grad(rnn, wrt=(0, 1, 2), memory=budget)
        for e, r in zip(sourcegrad.grad(rnn, wrt=(0, 1, 2))(*args), g(*args)):
            np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
        snapshot = [e for e in g.saved if e["status"] == "snapshot"]
        if not snapshot:
            return None
        e = snapshot[0]
        return ("revolve", e["slots"], e["every"]) if e["slots"] else ("segments", e["every"])

    assert scheme(48 * 400) is None
    assert scheme(48 * 40) == ("segments", 20)  # 20 snapshots, 20 trips: 1920 bytes
    # 15 trips' values in half the budget, 15 snapshots in the rest: 27 segments
    assert scheme(48 * 30) == ("revolve", 15, 15)


@pytest.mark.parametrize("steps", [2, 5, 23, 60])
@pytest.mark.parametrize("budget", [48 * 2, 48 * 6, 48 * 9])
def test_revolve_over_segments_under_a_budget(steps, budget):
    """A budget too small for the sqrt scheme: revolve over segments of k trips (k from half
    the budget), the last segment cut short; and loops with a step."""
    args = _rnn_args(steps)
    g = sourcegrad.grad(rnn, wrt=(0, 1, 2), memory=budget)
    for e, r in zip(sourcegrad.grad(rnn, wrt=(0, 1, 2))(*args), g(*args)):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    if steps == 60:
        assert "revolve_restart(schedule, " in g.source
    x, w = np.linspace(-1.0, 1.0, 5), 0.7
    g = sourcegrad.grad(strided, wrt=(0, 1), memory=budget * 5 // 3)  # (a trip: 80 bytes)
    for e, r in zip(sourcegrad.grad(strided, wrt=(0, 1))(w, x), g(w, x)):
        np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)


@pytest.mark.fuzz
def test_revolve_at_random_sizes():
    """Trip counts, snapshots and budgets drawn at random: the same gradients each time, and
    the spring at 2 x 10^4 steps in a 1 kB budget."""
    rng = np.random.default_rng(11)
    for _ in range(25):
        steps, slots = int(rng.integers(0, 80)), int(rng.integers(1, 9))
        args = _rnn_args(steps)
        expected = sourcegrad.grad(rnn, wrt=(0, 1, 2))(*args)
        for plan in (dict(checkpoint_loops=("revolve", slots)), dict(memory=48 * (slots + 1))):
            got = sourcegrad.grad(rnn, wrt=(0, 1, 2), **plan)(*args)
            for e, r in zip(expected, got):
                np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    args = (4.0, 0.5, 1.0, 0.0, 0.01, 199.995)
    g = sourcegrad.grad(spring, wrt=(0, 1), memory=1000)
    np.testing.assert_allclose(
        g(*args), sourcegrad.grad(spring, wrt=(0, 1))(*args), rtol=1e-10, atol=1e-12
    )


def test_row_buffers_under_a_plan_hold_one_segment():
    """Under a plan the rank-one updates of a segment's backward become one product per
    segment (rows of one segment), and a loop reversed trip by trip (revolve) keeps them per
    trip: a buffer with a row for every trip would hold what checkpointing saves."""
    args = _rnn_args(40)
    expected = sourcegrad.grad(rnn, wrt=(0, 1, 2))(*args)
    segments = sourcegrad.grad(rnn, wrt=(0, 1, 2), checkpoint_loops=8)
    trips = sourcegrad.grad(rnn, wrt=(0, 1, 2), checkpoint_loops=("revolve", 4))
    for g in (segments, trips):
        for e, r in zip(expected, g(*args)):
            np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    assert "h_rows = np.empty((segment_length, len(h0)))" in segments.source
    assert "dW += d_W_plus_b_rows.T @ h_rows" in segments.source
    assert "np.outer" not in segments.source
    assert "_rows" not in trips.source and "np.outer" in trips.source


# --- a budget below what a loop keeps at the least; the manifest without a plan -------------


def _rnn_example(hidden, steps):
    """examples/rnn.py's loss and its arguments (`for x_t in xs:` at line 13)."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "rnn.py")
    spec = importlib.util.spec_from_file_location("rnn_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.rnn_loss, module.example_args(hidden=hidden, steps=steps)


def test_a_budget_smaller_than_one_trip_is_refused_with_the_smallest_that_works():
    """memory=10 for an RNN whose trip saves h (hidden floats) and whose snapshot is h: the
    least any scheme keeps is one snapshot and one trip's values, revolve with one snapshot
    (each trip run again from the loop's start: quadratic time). Refused, located at the
    loop, naming that least; it works, and so does the budget it names for running each
    trip at most twice."""
    import time

    hidden, steps = 16, 100
    rnn_loss, args = _rnn_example(hidden, steps)
    smallest = hidden * 8 + hidden * 8
    started = time.perf_counter()
    with pytest.raises(errors.MemoryBudgetError) as caught:
        sourcegrad.grad(rnn_loss, wrt=(0, 1, 2), memory=10)(*args)
    exc = caught.value
    assert exc.smallest == smallest and exc.loc.line == 13 and exc.loc.file.endswith("rnn.py")
    message = str(exc)
    assert "rnn.py:13: memory=10 bytes cannot hold" in message
    assert message.rstrip().endswith("for x_t in xs:")
    assert f"one trip's saved values ({hidden * 8} bytes)" in message
    assert f"The smallest budget that works is memory={smallest};" in message
    assert time.perf_counter() - started < 1.0  # refused when compiling, nothing run
    twice = int(re.search(r"with memory=(\d+) each trip runs at most twice", message).group(1))
    expected = sourcegrad.grad(rnn_loss, wrt=(0, 1, 2))(*args)
    for budget in (smallest, twice):
        g = sourcegrad.grad(rnn_loss, wrt=(0, 1, 2), memory=budget)
        for e, r in zip(expected, g(*args)):
            np.testing.assert_allclose(r, e, rtol=1e-12, atol=1e-14)
    k = next(e["every"] for e in g.saved if e["status"] == "snapshot")
    assert not any(e.get("slots") for e in g.saved) and k == 10  # sqrt scheme: 10 x 10 trips


def _stack_peak(g, args):
    """The most bytes the generated code's saved-value stack holds at once, measured by
    running its source with the stack a list that adds up what it holds."""
    held = [0, 0]  # now, most

    class Watched(list):
        def append(self, v):
            super().append(v)
            held[0] += 0 if v is None else np.asarray(v).nbytes
            held[1] = max(held)

        def pop(self):
            v = super().pop()
            held[0] -= 0 if v is None else np.asarray(v).nbytes
            return v

    text = g.source
    assert text.count("saved = []") == 1
    namespace = {"Watched": Watched}
    exec(compile(text.replace("saved = []", "saved = Watched()"), "<measured>", "exec"), namespace)
    fn = next(v for k, v in namespace.items() if k.startswith("d") and callable(v))
    fn(*args)
    return held[1]


def test_without_a_plan_the_manifest_lists_the_stack_kept_per_trip():
    """The backward of an RNN over T steps keeps h (hidden floats) per trip on its stack: the
    manifest lists it, per trip with its trips and bytes, and `saved_bytes` is that stack,
    measured, plus the values made once that it lists."""
    hidden, steps = 16, 50
    rnn_loss, args = _rnn_example(hidden, steps)
    g = sourcegrad.grad(rnn_loss, wrt=(0, 1, 2))
    g(*args)
    per_trip = [e for e in g.saved if e["status"] == "saved per trip"]
    assert [(e["name"], e["bytes"], e["loops"]) for e in per_trip] == [
        ("h", 8 * hidden, [[13, 50]])
    ]
    assert per_trip[0]["why"].endswith(f"per trip, {steps} trips: {steps * hidden * 8:,} bytes")
    made_once = sum(e["bytes"] for e in g.saved if e["status"] == "saved" and not e["input"])
    assert _stack_peak(g, args) == steps * hidden * 8
    assert g.saved_bytes(*args) == steps * hidden * 8 + made_once
    assert g.saved_bytes(*_rnn_example(hidden, 2 * steps)[1]) == 2 * steps * hidden * 8 + made_once


def test_loops_in_loops_and_while_loops_count_their_trips():
    """Nested loops of known lengths multiply; a while loop's count is known only when it
    runs: `saved_bytes` then needs `trips=`, and says so otherwise."""
    rng = np.random.default_rng(7)
    args = (rng.normal(size=(4, 4)) * 0.5, rng.normal(size=4), 2.5)
    g = sourcegrad.grad(three_deep, wrt=(0, 1))
    g(*args)
    per_trip = [e for e in g.saved if e["status"] == "saved per trip"]
    assert {e["name"] for e in per_trip} == {"h", "W_h"}  # (4 floats each)
    assert all([count for _, count in e["loops"]] == [3, 2, 2] for e in per_trip)
    made_once = sum(e["bytes"] for e in g.saved if e["status"] == "saved" and not e["input"])
    assert g.saved_bytes(*args) == 2 * 12 * 32 + made_once
    # the first W_h pushed is the None it is bound to before the loops: one value less
    assert _stack_peak(g, args) == 2 * 12 * 32 - 32

    spring_args = (4.0, 0.5, 1.0, 0.0, 0.01, 0.995)  # 100 trips
    g = sourcegrad.grad(spring, wrt=(0, 1))
    g(*spring_args)
    with pytest.raises(errors.SourcegradError, match=r"the loop at line \d+ runs a number of"):
        g.saved_bytes(*spring_args)
    made_once = sum(e["bytes"] for e in g.saved if e["status"] == "saved" and not e["input"])
    assert g.saved_bytes(*spring_args, trips=100) == _stack_peak(g, spring_args) + made_once
