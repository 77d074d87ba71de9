# The MLP's gradient (sourcegrad/bench/workloads.py:mlp) as a person writes it:
# tests/compiler/emit/test_hand_written.py checks it against the compiled gradient and prints
# the ratio of backward statements (those after `# backward`).
import numpy as np


def dmlp_dW1_db1_dW2_db2(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - logits.max(axis=1, keepdims=True)
    exp_z = np.exp(z)
    sum_exp_z = exp_z.sum(axis=1, keepdims=True)
    # backward
    d_log_p = -Y / len(X)
    d_z = d_log_p - d_log_p.sum(axis=1, keepdims=True) * exp_z / sum_exp_z
    dW2 = h.T @ d_z
    db2 = d_z.sum(axis=0)
    d_h = d_z @ W2.T
    d_h *= 1.0 - h * h
    dW1 = X.T @ d_h
    db1 = d_h.sum(axis=0)
    return dW1, db1, dW2, db2
