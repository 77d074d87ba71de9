"""An RNN unrolled by a Python `for` loop: h = tanh(W @ h + U @ x_t + b), loss sum(h ** 2).

Run: python examples/rnn.py
"""

import numpy as np

import sourcegrad


def rnn_loss(W, U, b, xs, h0):
    h = h0
    for x_t in xs:
        h = np.tanh(W @ h + U @ x_t + b)
    return np.sum(h**2)


def example_args(hidden=16, inputs=8, steps=50, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.normal(scale=0.5 / np.sqrt(hidden), size=(hidden, hidden))
    U = rng.normal(scale=1 / np.sqrt(inputs), size=(hidden, inputs))
    b = np.zeros(hidden)
    xs = rng.normal(size=(steps, inputs))
    h0 = np.zeros(hidden)
    return W, U, b, xs, h0


EXAMPLES = {"rnn_loss": example_args}
GOLDEN = [("rnn_loss", ("W", "U", "b"))]


if __name__ == "__main__":
    args = example_args()
    dW, dU, db = sourcegrad.grad(rnn_loss, wrt=("W", "U", "b"))(*args)
    print("loss", rnn_loss(*args), "|dW|", np.linalg.norm(dW), "|dU|", np.linalg.norm(dU))
    sourcegrad.show(rnn_loss, *args, wrt=("W", "U", "b"))
