"""A 2-layer tanh MLP with a max-shifted softmax cross-entropy loss.

Run: python examples/mlp.py
"""

import numpy as np

import sourcegrad


def mlp_loss(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - np.max(logits, axis=1, keepdims=True)
    log_p = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_p, axis=1))


def example_args(batch=32, n_in=64, n_hidden=128, n_out=10, seed=0):
    rng = np.random.default_rng(seed)
    W1 = rng.normal(scale=n_in**-0.5, size=(n_in, n_hidden))
    b1 = np.zeros(n_hidden)
    W2 = rng.normal(scale=n_hidden**-0.5, size=(n_hidden, n_out))
    b2 = np.zeros(n_out)
    X = rng.normal(size=(batch, n_in))
    Y = np.eye(n_out)[rng.integers(0, n_out, size=batch)]
    return W1, b1, W2, b2, X, Y


EXAMPLES = {"mlp_loss": example_args}
GOLDEN = [("mlp_loss", ("W1", "b1", "W2", "b2"))]


def train(steps=100, lr=0.5):
    W1, b1, W2, b2, X, Y = example_args()
    step_fn = sourcegrad.value_and_grad(mlp_loss, wrt=("W1", "b1", "W2", "b2"))
    for step in range(steps):
        value, (dW1, db1, dW2, db2) = step_fn(W1, b1, W2, b2, X, Y)
        W1 -= lr * dW1
        b1 -= lr * db1
        W2 -= lr * dW2
        b2 -= lr * db2
        if step % 25 == 0:
            print(f"step {step:4d}  loss {value:.4f}")
    print(f"final loss {mlp_loss(W1, b1, W2, b2, X, Y):.4f}")


if __name__ == "__main__":
    train()
