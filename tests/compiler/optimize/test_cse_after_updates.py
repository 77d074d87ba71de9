"""Common-subexpression elimination after updates in place (fuzz r9-8247).

`updates_in_place` turns `t1_1 = setitem(t1, -1, v)` (t1 dead after) into the statement
`t1[-1] = v` and reads t1_1 as t1: one name, two values, the write in between. A computation
of t1 before the write and the same one after (`np.sum(t1)` twice) are two values; the CSE,
which takes a name assigned once to hold one value, merged them, and the gradient of the
second read the first (dx1 3.71 where it is 4.14)."""

import numpy as np

import sourcegrad
from sourcegrad.api import numeric_grad


def summed_before_and_after_a_write(x0, x1):
    t1 = np.round(x1 * 1.5) * 0.5 + np.max(x0, axis=0)
    if x1 * x1 + np.sum(t1) <= 0.3:  # (a sum of t1 before the write, for the branch)
        q = 1.0
    else:
        t1[-1] = x1 + 0.25
    gen = (t1[i] for i in range(3))  # (kept to be consumed later: the trace reads this)
    c = x1 * np.sum(t1)  # the sum after the write
    q = sum(gen)
    return np.sum(t1) + q + c


def test_a_computation_before_a_write_in_place_is_not_reused_after_it():
    x0 = np.array([[-0.61, -1.83, -1.11], [0.88, -0.04, 0.99]])
    x1 = 0.31
    d0, d1 = sourcegrad.grad(summed_before_and_after_a_write, wrt=(0, 1))(x0, x1)
    fn = summed_before_and_after_a_write
    np.testing.assert_allclose(d0, numeric_grad(fn, (x0, x1), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(d1, numeric_grad(fn, (x0, x1), 1), rtol=1e-6)
