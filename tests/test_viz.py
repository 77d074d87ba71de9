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
    with pytest.warns(viz.GraphvizMissingWarning, match="dot program is not installed"):
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


def test_eager_dot_lists_the_saved_tensors_with_shapes():
    if not hasattr(sourcegrad, "tensor"):
        pytest.skip("the eager Tensor is not part of this build")
    w = sourcegrad.tensor([2.0, 1.0], requires_grad=True)
    x = sourcegrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = (w * x).exp().sum()
    mul = y.grad_fn.next_functions[0][0].next_functions[0][0]
    assert type(mul).__name__ == "MulBackward0"
    # what torch itself exposes for w * x: _saved_self and _saved_other
    assert viz.saved_tensors(mul) == [("self", (2,)), ("other", (2, 2))]
    dot = viz.eager_dot(y)
    assert '"MulBackward0\\nsaved self (2,)\\nsaved other (2, 2)"' in dot
    assert '"ExpBackward0\\nsaved result (2, 2)"' in dot  # exp's derivative reads its result
    assert '"SumBackward0"' in dot  # a sum keeps only a shape: no saved tensor
    y.backward()  # frees what was saved: the picture no longer lists it
    assert "saved" not in viz.eager_dot(y)


def test_compiled_dot_draws_each_loop_body_as_one_cluster_and_a_legend():
    dot = viz.compiled_dot(compiled_rnn_gradient())
    forward = dot[dot.index("subgraph cluster_forward") : dot.index("subgraph cluster_backward")]
    loop_line = 1 + next(i for i, line in enumerate(open(rnn.__file__)) if "for x_t in" in line)
    assert forward.count("subgraph cluster_loop") == 1
    assert f'label="loop, line {loop_line}"' in forward
    loop = forward[forward.index("cluster_loop") :]
    assert '"i" [shape=ellipse' in loop and '"W_h" [shape=box' in loop  # the body's values
    backward = dot[dot.index("subgraph cluster_backward") : dot.index("subgraph cluster_legend")]
    assert f'label="reversed loop, line {loop_line}"' in backward
    legend = dot[dot.index("subgraph cluster_legend") :]
    for text in (
        "input",
        "read by the backward pass",
        "stack: values a loop overwrites",
        "the gradient returned",
        "one cluster per loop",
    ):
        assert text in legend
    assert 'fillcolor="#f5d99a"' in legend  # the colour of the saved values, explained


def test_compiled_dot_legend_names_only_what_was_drawn():
    import numpy as np

    def straight(x):
        return np.sum(np.tanh(x) ** 2)

    g = sourcegrad.grad(straight)
    g(np.ones(3))
    dot = viz.compiled_dot(g)
    assert "cluster_loop" not in dot and "legend_stack" not in dot and "legend_loop" not in dot
    assert "legend_saved" in dot and "legend_result" in dot
