# The logistic regression's gradient (sourcegrad/bench/workloads.py:logreg) as a person
# writes it: tests/compiler/emit/test_hand_written.py checks it against the compiled gradient
# and prints the ratio of backward statements (those after `# backward`).
import numpy as np


def dlogreg_dw(w, X, y):
    e = np.exp(-y * (X @ w))
    # backward
    dw = X.T @ (-y * e / (1.0 + e) / y.size)
    return (dw,)
