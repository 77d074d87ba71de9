"""An MLP classifier trained on real data (scikit-learn's bundled 8x8 digits) with a compiled
gradient. Reports test accuracy; with --out PATH saves the loss curve there (matplotlib).

Needs the `examples` extra: pip install -e ".[examples]"
Run: python examples/digits_mlp.py [--out digits_loss.png] [--epochs 30]
"""

import argparse
import sys

import numpy as np

import sourcegrad


def loss(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


def predict(W1, b1, W2, b2, X):
    return np.argmax(np.tanh(X @ W1 + b1) @ W2 + b2, axis=1)


def load_digits(seed=0):
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError:
        sys.exit(
            "this example needs scikit-learn, which is not installed: "
            'pip install -e ".[examples]" (or pip install "sourcegrad[examples]")'
        )

    digits = sklearn_digits()
    X = digits.data / 16.0
    y = digits.target
    order = np.random.default_rng(seed).permutation(len(X))
    X, y = X[order], y[order]
    split = int(0.8 * len(X))
    return X[:split], y[:split], X[split:], y[split:]


def train(epochs=30, batch=64, lr=0.5, hidden=64, seed=0):
    X_train, y_train, X_test, y_test = load_digits(seed)
    rng = np.random.default_rng(seed)
    W1 = rng.normal(scale=X_train.shape[1] ** -0.5, size=(X_train.shape[1], hidden))
    b1 = np.zeros(hidden)
    W2 = rng.normal(scale=hidden**-0.5, size=(hidden, 10))
    b2 = np.zeros(10)
    step = sourcegrad.value_and_grad(loss, wrt=("W1", "b1", "W2", "b2"))
    losses = []
    for epoch in range(epochs):
        order = rng.permutation(len(X_train))
        for start in range(0, len(order) - batch + 1, batch):
            idx = order[start : start + batch]
            value, (dW1, db1, dW2, db2) = step(
                W1, b1, W2, b2, X_train[idx], np.eye(10)[y_train[idx]]
            )
            W1 -= lr * dW1
            b1 -= lr * db1
            W2 -= lr * dW2
            b2 -= lr * db2
            losses.append(value)
        if epoch % 10 == 0 or epoch == epochs - 1:
            print(f"epoch {epoch:3d}  loss {np.mean(losses[-10:]):.4f}")
    accuracy = np.mean(predict(W1, b1, W2, b2, X_test) == y_test)
    print(f"test accuracy {accuracy:.2%} on {len(X_test)} held-out digits")
    return losses, accuracy


def save_curve(losses, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print('matplotlib is not installed: no loss curve (pip install -e ".[examples]")')
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(losses, lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy")
    ax.set_title("digits MLP, compiled gradient")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"loss curve saved to {path}")
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", default=None, metavar="PATH", help="save the loss curve there (default: none)"
    )
    parser.add_argument("--epochs", type=int, default=30)
    options = parser.parse_args()
    losses, _ = train(epochs=options.epochs)
    if options.out:
        save_curve(losses, options.out)
