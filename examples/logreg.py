"""Logistic regression trained by gradient descent with a compiled gradient.

Run: python examples/logreg.py
"""

import numpy as np

import sourcegrad


def loss(w, X, y):
    return np.mean(np.log(1.0 + np.exp(-y * (X @ w))))


def make_data(n=64, d=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    true_w = rng.normal(size=d)
    y = np.sign(X @ true_w + 0.1 * rng.normal(size=n))
    return X, y


def example_args():
    X, y = make_data()
    return np.zeros(X.shape[1]), X, y


# what `sourcegrad gen` writes to generated/ and `sourcegrad show` uses for inputs
EXAMPLES = {"loss": example_args}
GOLDEN = [("loss", "w"), ("loss", "w", "dask")]


def train(steps=200, lr=0.5):
    w, X, y = example_args()
    dloss = sourcegrad.value_and_grad(loss)
    for step in range(steps):
        value, dw = dloss(w, X, y)
        w -= lr * dw
        if step % 50 == 0:
            print(f"step {step:4d}  loss {value:.4f}")
    accuracy = np.mean(np.sign(X @ w) == y)
    print(f"final loss {loss(w, X, y):.4f}, training accuracy {accuracy:.2%}")
    return w


if __name__ == "__main__":
    train()
