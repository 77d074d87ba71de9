# The RNN's gradient (sourcegrad/bench/workloads.py:rnn) as a person writes it, through
# time: tests/compiler/emit/test_hand_written.py checks it against the compiled gradient and
# prints the ratio of backward statements (those after `# backward`).
import numpy as np


def drnn_dW_dU_db(W, U, b, h0, xs):
    hs = [h0]
    for t in range(len(xs)):
        hs.append(np.tanh(W @ hs[-1] + U @ xs[t] + b))
    # backward
    d_h = 2.0 * hs[-1]
    d_a = np.empty((len(xs), len(h0)))
    for t in reversed(range(len(xs))):
        d_a[t] = d_h * (1.0 - hs[t + 1] ** 2)
        d_h = W.T @ d_a[t]
    H = np.array(hs[:-1])
    dW = d_a.T @ H
    dU = d_a.T @ xs
    db = d_a.sum(axis=0)
    return dW, dU, db
