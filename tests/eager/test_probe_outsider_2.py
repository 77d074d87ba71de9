"""Eager programs written as outsiders write them (the second outsider probes), each of which
gave a result other than torch's: checked against torch (CPU) as the oracle."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import sourcegrad as sg  # noqa: E402

WEIGHTS = [1.0, 2.0, 3.0, 4.0, 5.0]


def _t(lib, values):
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


def _same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert (a is None) == (b is None), (got, want)
        if a is not None:
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)


# -- clamp_min / clamp_max with a Tensor bound: the bound carries a gradient -----------------
# (the node had an edge to the input only: the bound's .grad stayed None, where torch's
# ClampMinBackward1 / ClampMaxBackward1 give it the gradient where it is the result)


def _clamp_bounds(lib):
    x = _t(lib, [1.0, 0.5, 0.7, 2.0, -1.0])
    bound = _t(lib, [1.0, 0.2, 0.9, 0.0, 3.0])
    w = lib.tensor(WEIGHTS, dtype=lib.float64)
    y = x.clamp_min(bound) + lib.clamp_max(x, bound) * 2
    (y * w).sum().backward()
    return [y, x.grad, bound.grad], type(y.grad_fn.next_functions[0][0]).__name__


def _clamp_bounds_in_place(lib):
    x = _t(lib, [1.0, 0.5, 0.7, 2.0, -1.0])
    bound = _t(lib, [1.0, 0.2, 0.9, 0.0, 3.0])
    y, z = x * 1, x * 1
    y.clamp_min_(bound)
    z.clamp_max_(bound)
    ((y + 2 * z) * lib.tensor(WEIGHTS, dtype=lib.float64)).sum().backward()
    return [y, z, x.grad, bound.grad], type(z.grad_fn).__name__


def _clamp_broadcast_bounds(lib):
    x = _t(lib, [[1.0, 0.5], [0.7, 2.0]])
    lo, hi = _t(lib, [0.8]), _t(lib, [[1.5], [0.1]])
    y = x.clamp_min(lo) + x.clamp_max(hi) * 3
    (y * lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64)).sum().backward()
    return [x.grad, lo.grad, hi.grad], None


def _clamp_bound_only(lib):
    x = lib.tensor([1.0, 0.5], dtype=lib.float64)
    hi = _t(lib, [0.7, 0.7])
    y = x.clamp_max(hi)
    (y * lib.tensor([1.0, 2.0], dtype=lib.float64)).sum().backward()
    return [hi.grad], type(y.grad_fn).__name__


def _clamp_bound_second_order(lib):
    x, lo = _t(lib, [1.0, 0.5, 0.7]), _t(lib, [0.8, 0.8, 0.8])
    first = lib.autograd.grad((x.clamp_min(lo) ** 3).sum(), [x, lo], create_graph=True)
    second = lib.autograd.grad((first[0] ** 2 + first[1] ** 2).sum(), [x, lo])
    return [*first, *second], None


@pytest.mark.parametrize(
    "program",
    [
        _clamp_bounds,
        _clamp_bounds_in_place,
        _clamp_broadcast_bounds,
        _clamp_bound_only,
        _clamp_bound_second_order,
    ],
)
def test_clamp_tensor_bound_gets_its_gradient(program):
    got, got_node = program(sg)
    want, want_node = program(torch)
    _same(got, want)
    assert got_node == want_node


# -- fmax / fmin at a tie: torch gives the input all of the gradient --------------------------
# (they used numpy's rule, which splits a tie in halves: x.grad 0.5 where torch's is 1, and the
# second derivative 9 where torch's is 36)

NAN = float("nan")


def _fmax_fmin(lib):
    x = _t(lib, [1.0, 2.0, NAN, NAN, 3.0])
    y = _t(lib, [1.0, 1.0, 1.0, NAN, 5.0])
    w = lib.tensor(WEIGHTS, dtype=lib.float64)
    ((lib.fmax(x, y) + 10 * lib.fmin(x, y)) * w).nansum().backward()
    return [x.grad, y.grad], None


def _fmax_broadcast(lib):
    x, y = _t(lib, [[1.0, 2.0], [3.0, 1.0]]), _t(lib, [1.0, 2.0])
    (x.fmax(y) + x.fmin(y) * 10).sum().backward()
    return [x.grad, y.grad], None


def _fmax_second_order(lib):
    x, y = _t(lib, [1.0, 2.0, 0.5]), _t(lib, [1.0, 1.0, 0.7])
    first = lib.autograd.grad((lib.fmax(x, y) ** 3).sum(), [x, y], create_graph=True)
    second = lib.autograd.grad((first[0] ** 2 + first[1] ** 2).sum(), [x, y])
    return [*first, *second], None


# -- xlogy / xlog1py where x is 0 and the log is not finite: torch's gradient in x is 0 --------
# (it was log(0) = -inf; at x = 0 with y > 0 it stays log y, as torch's)


def _xlogy_at_zero(lib):
    x = _t(lib, [0.0, 0.0, 0.0, 1.0, 2.0])
    y = _t(lib, [0.0, 3.0, -1.0, 0.0, 3.0])
    (lib.xlogy(x, y) * lib.tensor(WEIGHTS, dtype=lib.float64)).sum().backward()
    return [x.grad, y.grad], None


def _xlog1py_at_zero(lib):
    x = _t(lib, [0.0, 0.0, 0.0, 1.0, 2.0])
    y = _t(lib, [-1.0, 3.0, -2.0, -1.0, 3.0])
    lib.special.xlog1py(x, y).sum().backward()
    return [x.grad, y.grad], None


def _xlogy_second_order(lib):
    x, y = _t(lib, [0.0, 0.5, 2.0]), _t(lib, [0.0, 3.0, 1.5])
    (gx,) = lib.autograd.grad(lib.special.xlogy(x, y).sum(), [x], create_graph=True)
    return [gx, *lib.autograd.grad((gx * y).sum(), [y])], None


@pytest.mark.parametrize(
    "program",
    [
        _fmax_fmin,
        _fmax_broadcast,
        _fmax_second_order,
        _xlogy_at_zero,
        _xlog1py_at_zero,
        _xlogy_second_order,
    ],
)
def test_ties_and_zeros_as_torch_has_them(program):
    (got, _), (want, _) = program(sg), program(torch)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)


# -- vector norms over several dims: the norm of their elements, not a matrix norm ------------
# (np.linalg.norm reads two axes as a matrix: `linalg.vector_norm(x, dim=(0, 1))` and
# `linalg.norm(x, dim=(0, 1))` gave the spectral norm, 5.386 where torch's is 5.5 for
# [[1, -2], [0.5, 5]]; ord 3 over two dims and any ord over three raised numpy's ValueError)

_CUBE = (np.arange(24.0).reshape(2, 3, 4) - 10.0).tolist()
_OVER_DIMS = [
    lambda lib, x: lib.linalg.vector_norm(x, dim=(0, 1)),
    lambda lib, x: lib.linalg.vector_norm(x, 2, dim=(-1, 0), keepdim=True),
    lambda lib, x: lib.linalg.vector_norm(x, 1, dim=[2, 0]),
    lambda lib, x: lib.linalg.vector_norm(x, float("inf"), dim=(2, 0)),
    lambda lib, x: lib.linalg.vector_norm(x, 3, dim=(1, 2)),
    lambda lib, x: lib.linalg.vector_norm(x, 0.5, dim=(0, 1, 2)),
    lambda lib, x: lib.linalg.norm(x, dim=(0, 1)),
    lambda lib, x: lib.linalg.norm(x, "fro", dim=(0, 2), keepdim=True),
    lambda lib, x: lib.linalg.norm(x[0], dim=(0, 1)),
]


@pytest.mark.parametrize("index", range(len(_OVER_DIMS)))
def test_vector_norm_over_several_dims(index):
    def program(lib):
        x = _t(lib, _CUBE)
        y = _OVER_DIMS[index](lib, x)
        (y * lib.arange(1.0, y.numel() + 1, dtype=lib.float64).reshape(y.shape)).sum().backward()
        return [y, x.grad]

    got, want = program(sg), program(torch)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)


def test_vector_norm_over_repeated_dims_raises_as_torch():
    for lib in (torch, sg):
        with pytest.raises(RuntimeError, match="appears multiple times"):
            lib.linalg.vector_norm(lib.ones(2, 3, dtype=lib.float64), dim=(0, 0))
