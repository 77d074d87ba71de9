"""Pictures: DOT text for compiled gradients and eager graphs; real rendering when dot exists."""
import os
import shutil
import sys

import pytest

import sourcegrad
from sourcegrad import viz

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples"))
import rnn  # noqa: E402


def compiled_rnn_gradient():
    g = sourcegrad.grad(rnn.rnn_loss, wrt=("W",))
    g(*rnn.example_args(hidden=4, inputs=3, steps=5))
    return g


def test_compiled_dot_marks_forward_backward_and_saved_values():
    dot = viz.compiled_dot(compiled_rnn_gradient())
    assert dot.startswith('digraph "drnn_loss_dW"')
    assert "cluster_forward" in dot and "cluster_backward" in dot
    assert '"h" [shape=box, label="h", style=filled' in dot  # saved across iterations
    assert "saved (stack)" in dot
    assert '"dW"' in dot and "result" in dot


def test_compiled_dot_needs_a_call_first():
    with pytest.raises(sourcegrad.SourcegradError, match="call the gradient once"):
        viz.compiled_dot(sourcegrad.grad(rnn.rnn_loss))


def test_render_writes_dot_text_without_graphviz(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    out = viz.render("digraph { a -> b }", str(tmp_path / "g.png"))
    assert out.endswith(".dot") and open(out).read().startswith("digraph")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_render_png_with_graphviz(tmp_path):
    out = viz.render(viz.compiled_dot(compiled_rnn_gradient()), str(tmp_path / "g.png"))
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_eager_graph_dot():
    if not hasattr(sourcegrad, "tensor"):
        pytest.skip("the eager Tensor is not part of this build")
    w = sourcegrad.tensor([2.0], requires_grad=True)
    b = sourcegrad.tensor([3.0], requires_grad=True)
    y = w * sourcegrad.tensor([4.0]) + b
    dot = viz.eager_dot(y)
    assert "AddBackward0" in dot and "MulBackward0" in dot
    assert dot.count("AccumulateGrad") == 2 and "leaf (1,)" in dot
