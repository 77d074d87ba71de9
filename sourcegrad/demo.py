"""`sourcegrad demo`: the main job of the quickstart.

A guided run through the three ways in: a logistic-regression loss is compiled
(`sourcegrad.grad`), its generated source is printed and read, its gradient is
verified against central finite differences, and the same loss is run in the
eager library mode (Tensors with PyTorch's semantics), whose gradient must agree.
"""

import numpy as np

from . import api


def logistic_loss(w, X, y):
    return np.mean(np.log(1.0 + np.exp(-y * (X @ w))))


def run() -> int:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 10))
    y = np.sign(X @ rng.normal(size=10))
    w = 0.1 * rng.normal(size=10)

    print("1. Compile: sourcegrad.grad(logistic_loss) turns this numpy function into source:\n")
    print("    def logistic_loss(w, X, y):")
    print("        return np.mean(np.log(1.0 + np.exp(-y * (X @ w))))\n")
    dloss = api.grad(logistic_loss)
    dw = dloss(w, X, y)

    print("2. Read: the generated gradient (dloss.source), for X of shape (64, 10):\n")
    print(dloss.source)
    print("   It saves:", ", ".join(f"{s['name']} {s['shape']}" for s in dloss.saved))

    print("\n3. Run and verify: the gradient at a random w, against finite differences:\n")
    print("   dw =", np.array2string(dw, precision=5, max_line_width=100))
    numeric = api.numeric_grad(logistic_loss, (w, X, y), 0)
    error = float(np.max(np.abs(dw - numeric) / (np.abs(numeric) + 1e-12)))
    ok = np.allclose(dw, numeric, rtol=1e-6, atol=1e-9)
    print(
        f"   max relative difference from central differences: {error:.2e} ->",
        "OK" if ok else "MISMATCH",
    )

    print("\n4. Eager: the same function on Tensors (import sourcegrad as torch):\n")
    import sourcegrad as torch

    w_t = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    value = logistic_loss(w_t, torch.from_numpy(X), torch.from_numpy(y))
    print(f"   loss = {value}")
    value.backward()
    same = np.allclose(w_t.grad.numpy(), dw, rtol=1e-12, atol=1e-15)
    print("   w.grad agrees with the compiled gradient ->", "OK" if same else "MISMATCH")
    return 0 if ok and same else 1
