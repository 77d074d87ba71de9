"""Every example runs (each in under a minute) and prints what it promises."""
import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name, *args):
    result = subprocess.run([sys.executable, os.path.join("examples", name), *args], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_quickstart_prints_gradients_and_source():
    out = run_example("quickstart.py")
    assert "dw =" in out and "def ddloss_dw_db(w, b, x, y):" in out


def test_logistic_regression_trains():
    out = run_example("logreg.py")
    accuracy = float(out.strip().splitlines()[-1].split("accuracy")[1].strip(" %")) / 100
    assert accuracy > 0.9


def test_mlp_trains():
    out = run_example("mlp.py")
    first = float(out.splitlines()[0].split("loss")[1])
    last = float(out.splitlines()[-1].split("loss")[1])
    assert last < first


def test_rnn_through_a_python_loop():
    out = run_example("rnn.py")
    assert "def drnn_loss_dW_dU_db(W, U, b, xs, h0):" in out
    assert "reversed(range(" in out


def test_spring_fit_recovers_stiffness_and_damping():
    out = run_example("spring.py")
    line = out.strip().splitlines()[-1]
    k = float(line.split("k = ")[1].split(",")[0])
    c = float(line.split("c = ")[1].split(" ")[0])
    assert abs(k - 9.0) < 0.05 and abs(c - 0.8) < 0.05


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                    reason="scikit-learn (the examples extra) is not installed")
def test_digits_mlp_reaches_good_test_accuracy(tmp_path):
    out = run_example("digits_mlp.py", "--out", str(tmp_path / "curve.png"), "--epochs", "20")
    accuracy = float(out.split("test accuracy")[1].split("%")[0]) / 100
    assert accuracy > 0.9
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "curve.png").exists()


def test_compiled_and_eager_training_loops_agree():
    out = run_example("compiled_vs_eager.py")
    assert "0.0e+00" in out or "e-1" in out


def test_seed_walkthrough_prints_what_torch_prints():
    out = run_example("seed_walkthrough.py")
    assert "y value: 11.0" in out and "Gradients: tensor([0., 1., 1.])" in out


@pytest.mark.skipif(importlib.util.find_spec("dask") is None,
                    reason="dask (the dask extra) is not installed")
def test_dask_out_of_core_example_fits(tmp_path):
    out = run_example("dask_out_of_core.py", "--rows", "1e5", "--steps", "3",
                      "--plot", str(tmp_path / "loss.png"))
    losses = [float(line.split("loss")[1]) for line in out.splitlines()
              if line.startswith("step")]
    assert len(losses) == 3 and losses[-1] < losses[0]
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "loss.png").exists()
