"""The same training loop twice: compiled (`sourcegrad.grad`) and eager (`import sourcegrad as
torch`, the loss run on Tensors). One rule table serves both, so the gradients are identical.

Run: python examples/compiled_vs_eager.py
"""

import numpy as np

import sourcegrad
import sourcegrad as torch


def loss(w, X, y):
    return np.mean(np.log(1.0 + np.exp(-y * (X @ w))))


def main(steps=50, lr=0.5):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(128, 8))
    y = np.sign(X @ rng.normal(size=8))
    dloss = sourcegrad.grad(loss)

    w_compiled = np.zeros(8)
    w_eager = torch.zeros(8, dtype=torch.float64, requires_grad=True)
    X_t, y_t = torch.from_numpy(X), torch.from_numpy(y)
    worst = 0.0
    for step in range(steps):
        g_compiled = dloss(w_compiled, X, y)
        value = loss(w_eager, X_t, y_t)  # numpy's functions dispatch to Tensor ops
        value.backward()
        g_eager = w_eager.grad.numpy()
        worst = max(worst, float(np.max(np.abs(g_compiled - g_eager))))
        w_compiled -= lr * g_compiled
        with torch.no_grad():
            w_eager -= lr * w_eager.grad
        w_eager.grad = None
    eager_loss = loss(w_eager.detach().numpy(), X, y)
    print(f"compiled loss {loss(w_compiled, X, y):.6f}, eager loss {eager_loss:.6f}")
    print(f"largest difference between the two gradients over {steps} steps: {worst:.1e}")
    return worst


if __name__ == "__main__":
    assert main() < 1e-12
