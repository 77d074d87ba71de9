"""Quickstart: decorate a numpy loss with @sourcegrad.grad, call it, read the generated code.

Run: python examples/quickstart.py
"""

import numpy as np

import sourcegrad


@sourcegrad.grad(wrt=("w", "b"))
def dloss(w, b, x, y):
    prediction = np.tanh(x @ w + b)
    return np.mean((prediction - y) ** 2)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=3), 0.1
    x, y = rng.normal(size=(8, 3)), rng.normal(size=8)
    dw, db = dloss(w, b, x, y)
    print("dw =", dw)
    print("db =", db)
    print()
    print(dloss.source)
