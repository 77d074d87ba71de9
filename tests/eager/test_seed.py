"""The seed walkthrough (examples/seed_walkthrough.py) prints what torch prints.

The expected text is what torch 2.13 prints for the same four sections (memory
addresses masked); when torch is installed the test also runs the script with
torch itself and compares live.
"""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "seed_walkthrough.py")

EXPECTED = """\
y value: 11.0
Grad fn of y: <AddBackward0 object at 0x...>
Next functions: ((<MulBackward0 object at 0x...>, 0), (<AccumulateGrad object at 0x...>, 0))
dy/dw (equals x = 4.0): 4.0
dy/db (equals 1.0):     1.0
Epoch 1 Grad (Expected 6.0): 6.0
Epoch 2 Grad (Expected 6.0): 12.0
Epoch 3 Grad (Expected 6.0): 18.0
Input: tensor([-2.,  3.,  5.], requires_grad=True)
Gradients: tensor([0., 1., 1.])
"""


def _run(backend):
    env = dict(os.environ, SEED_BACKEND=backend, PYTHONPATH=ROOT)
    out = subprocess.run(
        [sys.executable, SCRIPT], capture_output=True, text=True, env=env, check=True, timeout=120
    )
    return re.sub(r"0x[0-9a-f]+", "0x...", out.stdout)


def test_seed_walkthrough_prints_what_torch_prints():
    assert _run("sourcegrad") == EXPECTED


def test_seed_walkthrough_against_live_torch():
    pytest.importorskip("torch")
    assert _run("sourcegrad") == _run("torch")


def test_seed_sections_run_unchanged_with_import_sourcegrad_as_torch():
    """The four sections, as the seed text writes them, with only the import swapped."""
    import sourcegrad as torch

    w = torch.tensor([2.0], requires_grad=True)
    b = torch.tensor([3.0], requires_grad=True)
    x = torch.tensor([4.0])
    y = w * x + b
    assert y.item() == 11.0
    y.backward()
    assert (w.grad.item(), b.grad.item()) == (4.0, 1.0)
    raw_prediction = y.detach().cpu().numpy()
    assert raw_prediction.tolist() == [11.0]
    with torch.inference_mode():
        features = torch.randn(64, 512)
        predictions = features @ torch.randn(512, 10)
    assert predictions.shape == (64, 10) and predictions.is_inference()
    assert not predictions.requires_grad and predictions.grad_fn is None
