# The gradient of the chain of 20 ufuncs (sourcegrad/bench/workloads.py:chain) as a
# person writes it, one factor a step: tests/compiler/emit/test_hand_written.py checks it
# against the compiled gradient and prints the ratio of backward statements (those after
# `# backward`).
import numpy as np


def dchain_dx(x):
    v1 = np.sin(x)
    v2 = np.cos(v1)
    v3 = np.exp(v2)
    v4 = np.log1p(v3)
    v5 = np.sqrt(v4)
    v6 = np.tanh(v5)
    v7 = np.arctan(v6)
    v8 = np.sinh(v7)
    v9 = np.cosh(v8)
    v10 = np.log(v9)
    v11 = np.square(v10)
    v12 = np.expm1(v11)
    v13 = np.arcsinh(v12)
    v14 = np.reciprocal(v13)
    v15 = np.arccosh(v14)
    v16 = np.log10(v15)
    v17 = np.exp2(v16)
    v18 = np.sin(v17)
    v20 = np.tanh(np.arctan(v18))
    # backward: g is d sum / d v_k, k going down from 19
    g = 1.0 - v20 ** 2
    g /= 1.0 + v18 ** 2
    g *= np.cos(v17)
    g *= np.log(2.0) * v17
    g /= v15 * np.log(10.0)
    g /= np.sqrt(v14 ** 2 - 1.0)
    g *= -(v14 ** 2)
    g /= np.sqrt(v12 ** 2 + 1.0)
    g *= v12 + 1.0
    g *= 2.0 * v10
    g /= v9
    g *= np.sinh(v8)
    g *= np.cosh(v7)
    g /= 1.0 + v6 ** 2
    g *= 1.0 - v6 ** 2
    g *= 0.5 / v5
    g /= 1.0 + v3
    g *= v3
    g *= -np.sin(v1)
    g *= np.cos(x)
    return (g,)
