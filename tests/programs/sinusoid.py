"""The Taylor series of sine summed until a term is small: a loop with a data-dependent
break (autograd's examples/sinusoid.py)."""

import numpy as np

NEEDS = "basic"


def fun(x):
    currterm = x
    ans = currterm
    for i in range(1000):
        currterm = -currterm * x**2 / ((2 * i + 2) * (2 * i + 3))
        ans = ans + currterm
        if np.abs(currterm) < 0.2:
            break
    return ans


objective = fun


def make_args():
    return (np.pi / 3 + 0.1,)
