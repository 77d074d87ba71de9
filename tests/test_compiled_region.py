"""sourcegrad.compile: a compiled region adds ONE node to the eager graph, whose backward runs
the generated backward; it composes with leaves, accumulation, hooks and no_grad."""

import numpy as np
import pytest

import sourcegrad

if not hasattr(sourcegrad, "tensor"):
    pytest.skip("the eager Tensor is not part of this build", allow_module_level=True)
torch = sourcegrad


def mlp_loss(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


compiled_loss = sourcegrad.compile(mlp_loss)


def params():
    rng = np.random.default_rng(0)
    W1 = torch.tensor(rng.normal(size=(4, 5)), dtype=torch.float64, requires_grad=True)
    b1 = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    W2 = torch.tensor(rng.normal(size=(5, 3)), dtype=torch.float64, requires_grad=True)
    X = torch.tensor(rng.normal(size=(6, 4)), dtype=torch.float64)
    Y = torch.tensor(np.eye(3)[[0, 1, 2, 0, 1, 2]], dtype=torch.float64)
    return W1, b1, W2, X, Y


def test_one_node_with_the_generated_backward_and_the_same_gradients():
    W1, b1, W2, X, Y = params()
    loss = compiled_loss(W1, b1, W2, X, Y) * 2.0
    node = loss.grad_fn.next_functions[0][0]
    assert type(node).__name__ == "CompiledMlpLossBackward"
    assert [type(n).__name__ for n, _ in node.next_functions][:3] == ["AccumulateGrad"] * 3
    loss.backward()
    compiled = [p.grad.numpy().copy() for p in (W1, b1, W2)]
    for p in (W1, b1, W2):
        p.grad = None
    (mlp_loss(W1, b1, W2, X, Y) * 2.0).backward()  # op by op, through numpy dispatch
    for c, p in zip(compiled, (W1, b1, W2)):
        np.testing.assert_allclose(c, p.grad.numpy(), rtol=1e-12)


def test_accumulates_into_leaves_and_runs_hooks():
    W1, b1, W2, X, Y = params()
    seen = []
    W1.register_hook(lambda g: seen.append(g.shape))
    compiled_loss(W1, b1, W2, X, Y).backward()
    first = W1.grad.numpy().copy()
    compiled_loss(W1, b1, W2, X, Y).backward()
    np.testing.assert_allclose(W1.grad.numpy(), 2 * first)
    assert len(seen) == 2


def test_no_grad_makes_no_node():
    W1, b1, W2, X, Y = params()
    with torch.no_grad():
        out = compiled_loss(W1, b1, W2, X, Y)
    assert out.grad_fn is None and not out.requires_grad
    assert out.item() == pytest.approx(mlp_loss(*[p.detach().numpy() for p in params()]))
