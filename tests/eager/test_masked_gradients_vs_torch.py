"""Gradients that torch masks rather than multiplies, against torch.

torch's backward of relu (threshold_backward) and of maximum / minimum selects the incoming
gradient where the input won and writes 0 elsewhere, so an inf or nan gradient arriving at
an element that lost gives 0 there: sqrt(relu(x)) has gradient 0 at x <= 0, not nan (a
multiplication by the mask, inf * 0, gave nan there and a nan parameter after the step).
relu passes the gradient on at a nan input, as torch's. fmax / fmin send the gradient to the argument they returned, so with a nan on one side the
other one gets it (it went to neither). Ties of fmax / fmin are left out: torch gives the
whole gradient to the first argument, sourcegrad (numpy's rule) half to each.
"""

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

X = [-2.0, 0.0, 3.0, -0.5, 1.5, float("nan")]
OTHER = [0.0, 1.0, 1.0, -1.0, 2.0, 0.0]
UPSTREAM = [float("inf"), float("nan"), 1.0, float("-inf"), 2.0, 3.0]


def grads(lib, case):
    x = lib.tensor(X, requires_grad=True)
    other = lib.tensor(OTHER, requires_grad=True)
    F = lib.nn.functional
    if case == "sqrt_relu":
        lib.relu(x).sqrt().sum().backward()
    elif case == "relu_inplace":
        F.relu(x * 1, inplace=True).backward(lib.tensor(UPSTREAM))
    elif case == "log_relu_masked":
        y = F.relu(x)
        (y.log() * (y > 0)).nan_to_num().sum().backward()
    elif case in ("relu", "maximum", "minimum"):
        y = lib.relu(x) if case == "relu" else getattr(lib, case)(x, other)
        y.backward(lib.tensor(UPSTREAM))
    else:  # fmax / fmin with nan on either side
        x = lib.tensor([float("nan"), 1.0, 4.0, -1.0, 2.0], requires_grad=True)
        other = lib.tensor([1.0, float("nan"), 3.0, 0.0, 5.0], requires_grad=True)
        (getattr(lib, case)(x, other) * lib.tensor([1.0, 2, 3, 4, 5])).sum().backward()
    return x.grad.numpy(), None if other.grad is None else other.grad.numpy()


@pytest.mark.parametrize(
    "case",
    ["relu", "relu_inplace", "sqrt_relu", "log_relu_masked", "maximum", "minimum", "fmax", "fmin"],
)
def test_masked_gradients_match_torch(case):
    with np.errstate(all="ignore"):
        expected = grads(torch, case)
        got = grads(sg, case)
    for a, b in zip(expected, got):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(b, a)
