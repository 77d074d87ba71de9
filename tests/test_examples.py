"""Every example runs (each in under a minute) and prints what it promises."""

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name, *args):
    result = subprocess.run(
        [sys.executable, os.path.join("examples", name), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_quickstart_prints_gradients_and_source():
    out = run_example("quickstart.py")
    assert "dw =" in out and "def ddloss_dw_db(w, b, x, y):" in out


@pytest.mark.long
def test_logistic_regression_trains():
    out = run_example("logreg.py")
    accuracy = float(out.strip().splitlines()[-1].split("accuracy")[1].strip(" %")) / 100
    assert accuracy > 0.9


@pytest.mark.long
def test_mlp_trains():
    out = run_example("mlp.py")
    first = float(out.splitlines()[0].split("loss")[1])
    last = float(out.splitlines()[-1].split("loss")[1])
    assert last < first


@pytest.mark.long
def test_rnn_through_a_python_loop():
    out = run_example("rnn.py")
    assert "def drnn_loss_dW_dU_db(W, U, b, xs, h0):" in out
    assert "reversed(range(" in out


@pytest.mark.long
def test_spring_fit_recovers_stiffness_and_damping():
    out = run_example("spring.py")
    line = out.strip().splitlines()[-1]
    k = float(line.split("k = ")[1].split(",")[0])
    c = float(line.split("c = ")[1].split(" ")[0])
    assert abs(k - 9.0) < 0.05 and abs(c - 0.8) < 0.05


@pytest.mark.long
@pytest.mark.skipif(
    importlib.util.find_spec("sklearn") is None,
    reason="scikit-learn (the examples extra) is not installed",
)
def test_digits_mlp_reaches_good_test_accuracy(tmp_path):
    out = run_example("digits_mlp.py", "--out", str(tmp_path / "curve.png"), "--epochs", "20")
    accuracy = float(out.split("test accuracy")[1].split("%")[0]) / 100
    assert accuracy > 0.9
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "curve.png").exists()


@pytest.mark.long
def test_compiled_and_eager_training_loops_agree():
    out = run_example("compiled_vs_eager.py")
    assert "0.0e+00" in out or "e-1" in out


def test_seed_walkthrough_prints_what_torch_prints():
    out = run_example("seed_walkthrough.py")
    assert "y value: 11.0" in out and "Gradients: tensor([0., 1., 1.])" in out


@pytest.mark.long
@pytest.mark.skipif(
    importlib.util.find_spec("dask") is None, reason="dask (the dask extra) is not installed"
)
def test_dask_out_of_core_example_fits(tmp_path):
    out = run_example(
        "dask_out_of_core.py", "--rows", "1e5", "--steps", "3", "--plot", str(tmp_path / "loss.png")
    )
    losses = [float(line.split("loss")[1]) for line in out.splitlines() if line.startswith("step")]
    assert len(losses) == 3 and losses[-1] < losses[0]
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "loss.png").exists()


def load_example(name, *argv):
    """An example file as a module, imported in this process as `python name *argv` would
    import it (`--torch` makes the PyTorch-style examples import real torch)."""
    spec = importlib.util.spec_from_file_location(
        f"example_{name[:-3]}_{len(argv)}", os.path.join(ROOT, "examples", name)
    )
    module = importlib.util.module_from_spec(spec)
    saved = sys.argv
    sys.argv = [name, *argv]
    try:
        spec.loader.exec_module(module)
    finally:
        sys.argv = saved
    return module


PYTORCH_STYLE = [
    pytest.param(
        "digits_convnet.py",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("sklearn") is None, reason="needs scikit-learn"
        ),
    ),
    "char_lstm.py",
]


@pytest.mark.parametrize("name", PYTORCH_STYLE)
def test_pytorch_style_examples_train_eager_and_compiled_alike(name, tmp_path):
    example = load_example(name)
    short = ["--epochs", "1", "--max-batches", "3"]
    with one_blas_thread():  # (many threads on tiny matrices crawl on a shared machine)
        eager_losses, eager_times = example.main(short)
        compiled_losses, _ = example.main(short + ["--compile", "--json", str(tmp_path / "c.json")])
    assert len(eager_losses) == 3 and len(eager_times) == 1
    assert eager_losses[-1] < eager_losses[0] or name == "digits_convnet.py"  # (3 steps)
    # one generated node instead of the layers' nodes, the same numbers (dropout included)
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-5)


@pytest.mark.parametrize("name", PYTORCH_STYLE)
def test_pytorch_style_examples_run_unchanged_with_torch(name, capsys):
    pytest.importorskip("torch")
    example = load_example(name, "--torch")
    assert example.torch.__name__ == "torch"
    with one_blas_thread():
        losses, times = example.main(["--torch", "--epochs", "1", "--max-batches", "3"])
    assert len(losses) == 3 and len(times) == 1
    assert "saved" in capsys.readouterr().out


def one_blas_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(1)


@pytest.mark.long
@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib")
def test_compare_training_draws_the_curves(tmp_path):
    compare = load_example("compare_training.py")
    results = {
        (example, variant): {"losses": [2.3, 2.1, 1.9], "epoch_times": [1.5, 1.0]}
        for example in compare.EXAMPLES
        for variant in compare.VARIANTS
    }
    compare.draw(results, str(tmp_path / "curves.png"))
    assert (tmp_path / "curves.png").stat().st_size > 10_000
