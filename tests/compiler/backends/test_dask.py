"""The Dask backend: gradients of Dask arrays agree with numpy's (and with finite
differences), are computed with one dask.compute, keep in-memory parameters' gradients numpy,
run on a dask.distributed cluster, and refuse what dask.array cannot do at the user's line."""

import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import sourcegrad
from sourcegrad import errors
from sourcegrad.api import numeric_grad
from sourcegrad.bench import workloads

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
from dask.callbacks import Callback  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class Computes(Callback):
    """Counts the graphs dask computes (one per dask.compute or bool of a Dask value)."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def _start(self, dsk):
        self.count += 1


def by_rows(a, parts=3):
    """A numpy array as a Dask array chunked by rows (an uneven last chunk on purpose)."""
    rows = max(1, -(-a.shape[0] // parts))
    return da.from_array(a, chunks=(rows,) + a.shape[1:])


def workload_case(name):
    wl = workloads.BY_NAME[name]
    size = wl.size("small")
    f = wl.function(size)
    args = workloads.make_args(wl, size)
    params = list(inspect.signature(f).parameters)
    wrt = tuple(params.index(n) for n in wl.wrt)
    return f, args, wrt if len(wrt) > 1 else wrt[0]


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("name", ["logreg", "mlp"])
def test_workloads_with_data_as_dask_agree_with_numpy(name):
    # the normal case: parameters in memory (numpy), data chunked by rows (Dask)
    f, args, wrt = workload_case(name)
    positions = as_tuple(wrt)
    mixed = tuple(a if i in positions else by_rows(a) for i, a in enumerate(args))
    assert any(isinstance(a, da.Array) for a in mixed)
    value, grads = sourcegrad.value_and_grad(f, wrt)(*mixed)
    expected_value, expected = sourcegrad.value_and_grad(f, wrt)(*args)
    assert np.isclose(value, expected_value, rtol=1e-12)
    for g, e, i in zip(as_tuple(grads), as_tuple(expected), positions):
        assert type(g) is np.ndarray and g.shape == args[i].shape and g.dtype == args[i].dtype
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-13)


def test_chain_of_a_dask_array_agrees_and_its_gradient_is_dask():
    f, (x,), _ = workload_case("chain")
    chunked = da.from_array(x, chunks=37)
    g = sourcegrad.grad(f)(chunked)
    assert isinstance(g, da.Array) and g.chunks == chunked.chunks and g.dtype == x.dtype
    np.testing.assert_allclose(g.compute(), sourcegrad.grad(f)(x), rtol=1e-10)


def test_broadcast_parameters_and_numbers_reduce_over_the_chunks():
    # b (1, 3) and a Python float scale broadcast over every row of the Dask X: their
    # gradients are sums over all chunks (unbroadcast's keepdims sum, a full sum)
    def f(b, s, X):
        return np.sum(np.tanh(s * X + b) ** 2)

    rng = np.random.default_rng(6)
    b, s, X = rng.normal(size=(1, 3)), 0.7, rng.normal(size=(20, 3))
    db, ds = sourcegrad.grad(f, (0, 1))(b, s, by_rows(X, 4))
    assert type(db) is np.ndarray and db.shape == (1, 3) and type(ds) is float
    np.testing.assert_allclose(db, numeric_grad(f, (b, s, X), 0), rtol=1e-6)
    assert np.isclose(ds, numeric_grad(f, (b, s, X), 1), rtol=1e-6)


def test_logreg_gradient_against_finite_differences():
    f, (w, X, y), _ = workload_case("logreg")
    g = sourcegrad.grad(f)(w, by_rows(X), by_rows(y))
    np.testing.assert_allclose(g, numeric_grad(f, (w, X, y), 0), rtol=1e-6, atol=1e-9)


def test_value_and_gradient_are_one_compute_and_the_code_is_lazy():
    f, (w, X, y), _ = workload_case("logreg")
    vg = sourcegrad.value_and_grad(f)
    with Computes() as computes:
        vg(w, by_rows(X), by_rows(y))
    assert computes.count == 1
    source = vg.source
    assert "import dask.array as da" in source and "da.exp(" in source and "X.T @ " in source
    # the generated function itself returns task graphs: only the wrapper computes
    generated = vg._last.fn.__wrapped__
    with Computes() as computes:
        value, dw = generated(w, by_rows(X), by_rows(y))
    assert computes.count == 0 and isinstance(value, da.Array) and isinstance(dw, da.Array)


def test_auto_picks_dask_only_for_dask_inputs_and_dask_runs_numpy_inputs():
    f, (w, X, y), _ = workload_case("logreg")
    g = sourcegrad.grad(f)
    g(w, X, y)
    assert "import numpy as np" in g.source
    g(w, by_rows(X), y)
    assert "import dask.array as da" in g.source
    forced = sourcegrad.grad(f, backend="dask")
    out = forced(w, X, y)  # numpy inputs through Dask code: computed, numpy out
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, g(w, X, y), rtol=1e-12)


def test_a_few_descent_steps_in_a_python_loop():
    def fit_then_loss(w, X, y):
        for _ in range(3):
            residual = X @ w - y
            w = w - 0.1 * (X.T @ residual) / y.size
        return np.mean((X @ w - y) ** 2)

    rng = np.random.default_rng(1)
    X, y, w = rng.normal(size=(40, 3)), rng.normal(size=40), rng.normal(size=3)
    with Computes() as computes:
        g = sourcegrad.grad(fit_then_loss)(w, by_rows(X), by_rows(y))
    assert computes.count == 1
    np.testing.assert_allclose(g, sourcegrad.grad(fit_then_loss)(w, X, y), rtol=1e-10)
    np.testing.assert_allclose(g, numeric_grad(fit_then_loss, (w, X, y), 0), rtol=1e-6)


def test_a_data_dependent_while_computes_its_condition_once_per_trip():
    def halve(w, X):
        loss = np.mean((X @ w) ** 2)
        while loss > 0.1:
            loss = loss * 0.5
        return loss

    rng = np.random.default_rng(2)
    X, w = rng.normal(size=(30, 2)), np.array([1.0, -2.0])
    loss, trips = np.mean((X @ w) ** 2), 0
    while loss > 0.1:
        loss, trips = loss * 0.5, trips + 1
    assert trips >= 2
    with Computes() as computes:
        g = sourcegrad.grad(halve)(w, by_rows(X))
    assert computes.count == trips + 1 + 1  # each test (the failing one too), then the result
    np.testing.assert_allclose(g, sourcegrad.grad(halve)(w, X), rtol=1e-12)


def test_a_variable_named_like_the_module_alias_does_not_shadow_it():
    # regression: a user's `da` was printed as is, and `da.exp(...)` called the array's method
    def f(w, X):
        da = X @ w
        return np.sum(np.exp(da) * da)

    w, X = np.array([0.1, -0.2, 0.3]), np.random.default_rng(5).normal(size=(8, 3))
    g = sourcegrad.grad(f)
    np.testing.assert_allclose(g(w, by_rows(X)), sourcegrad.grad(f)(w, X), rtol=1e-12)
    assert "import dask.array as da_\n" in g.source and "da_.exp(da)" in g.source


def test_an_operation_dask_array_lacks_is_refused_at_the_users_line():
    def sorted_energy(w, X):
        z = X @ w
        s = np.sort(z)
        return np.sum(s * s)

    w, X = np.ones(3), by_rows(np.random.default_rng(3).normal(size=(12, 3)))
    with pytest.raises(sourcegrad.SourcegradError, match="dask.array has no 'sort'") as caught:
        sourcegrad.grad(sorted_energy)(w, X)
    loc = caught.value.loc
    assert loc.file == __file__ and loc.text.strip() == "s = np.sort(z)"
    assert loc.line == inspect.getsourcelines(sorted_energy)[1] + 2


def test_a_helper_dask_cannot_run_is_refused_at_the_users_line():
    # the adjoint of w[idx] with a repeated index is np.add.at, which a Dask array refuses
    def picked(w, X, idx):
        return np.sum(w[idx] * X)

    w, idx = np.ones(3), np.array([0, 1, 1, 2])
    X = by_rows(np.random.default_rng(4).normal(size=(6, 4)))
    with pytest.raises(sourcegrad.SourcegradError, match="dask.array cannot compute") as caught:
        sourcegrad.grad(picked)(w, X, idx)
    assert caught.value.loc.text.strip() == "return np.sum(w[idx] * X)"
    assert caught.value.loc.line == inspect.getsourcelines(picked)[1] + 1


def test_unknown_shapes_and_other_transformations_are_refused():
    f, (w, X, y), _ = workload_case("logreg")
    unknown = by_rows(X)[by_rows(y) > 0]  # a boolean mask: chunks of unknown length
    with pytest.raises(errors.ShapeError, match="compute_chunk_sizes"):
        sourcegrad.grad(f)(w, unknown, y[y > 0])
    with pytest.raises(sourcegrad.SourcegradError, match="vjp is not supported on Dask"):
        sourcegrad.vjp(f)(w, by_rows(X), by_rows(y))


def test_gradients_on_a_local_distributed_cluster():
    distributed = pytest.importorskip("distributed")
    f, (w, X, y), _ = workload_case("logreg")
    psutil = pytest.importorskip("psutil")  # (a dependency of distributed)
    # in process (no sockets: inproc:// transport), one worker with a small memory budget.
    # An in-process worker's limit counts the whole process, which holds what the earlier
    # tests left (a full run: ~400 MB; a fixed 256 MiB paused the worker there, and the
    # test waited forever): the limit is 256 MiB above what the process holds now
    limit = psutil.Process().memory_info().rss + (256 << 20)
    with (
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            memory_limit=limit,
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        with distributed.get_task_stream(client) as tasks:
            value, g = sourcegrad.value_and_grad(f)(w, by_rows(X), by_rows(y))
        assert len(tasks.data) > 0  # the cluster's worker computed it
    expected_value, expected = sourcegrad.value_and_grad(f)(w, X, y)
    assert np.isclose(value, expected_value, rtol=1e-12)
    np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-13)


def test_show_prints_the_dask_source(capsys):
    from sourcegrad import cli

    assert (
        cli.main(
            ["show", os.path.join(ROOT, "examples", "logreg.py") + ":loss", "--backend", "dask"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "import dask.array as da" in out and "def dloss_dw(w, X, y):" in out


def test_the_dask_golden_computes_the_gradient():
    import runpy

    logreg = runpy.run_path(os.path.join(ROOT, "examples", "logreg.py"))
    golden = runpy.run_path(os.path.join(ROOT, "generated", "logreg_loss_dw_dask.py"))
    w, X, y = logreg["example_args"]()
    lazy = golden["dloss_dw"](w, by_rows(X), by_rows(y))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), sourcegrad.grad(logreg["loss"])(w, X, y), rtol=1e-12)


@pytest.mark.long
def test_sourcegrad_imports_and_shows_dask_code_without_dask():
    # Dask is optional: importing sourcegrad never imports it, and Dask code can be printed
    # (not run) where it is not installed
    code = (
        "import sys\n"
        "import sourcegrad\n"
        "assert 'dask' not in sys.modules, 'importing sourcegrad imported dask'\n"
        "sys.modules['dask'] = sys.modules['dask.array'] = None  # import dask fails\n"
        "from sourcegrad import cli\n"
        "assert cli.main(['show', 'examples/logreg.py:loss', '--backend', 'dask']) == 0\n"
        "sys.path.insert(0, 'examples')\n"
        "import logreg\n"
        "try:\n"
        "    sourcegrad.grad(logreg.loss, backend='dask')(*logreg.example_args())\n"
        "except sourcegrad.SourcegradError as e:\n"
        "    print('refused:', e)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "import dask.array as da" in result.stdout
    assert "refused:" in result.stdout and "Dask is not installed" in result.stdout
    assert "sourcegrad[dask]" in result.stdout
