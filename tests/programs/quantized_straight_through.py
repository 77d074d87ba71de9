"""A layer whose weights are rounded to a grid the way published quantisation code writes it,
with integer codes from a cast (`(w / step).astype(int)`, truncating) and a bias filled from a
parameter: the cast carries no gradient (the loss is piecewise constant in w through the
codes), the scale does. Found by the outsider probes, where the cast handed the gradient
back as if it were the identity."""

import numpy as np

NEEDS = "basic"

STEP = 0.25


def quantised_loss(scale, w, x, y):
    codes = (w / STEP).astype(int)  # integer codes: no gradient through them
    weights = scale * codes * STEP
    hidden = np.tanh(x @ weights)
    return np.mean((hidden - y) ** 2) + 0.1 * np.sum(codes.astype(float) * w**2)


objective = quantised_loss
WRT = (0, 1)


def make_args():
    rng = np.random.default_rng(7)
    w = rng.normal(size=(3, 2))
    w = np.trunc(w / STEP) * STEP + np.sign(w) * 0.1  # away from the truncation edges
    return (1.3, w, rng.normal(size=(5, 3)), rng.normal(size=(5, 2)))
