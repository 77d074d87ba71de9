"""Eager torch surface added in s54, against torch (CPU) as the oracle: torch.sgn, dist,
renorm(_), linalg.matrix_norm, diagonal/select/slice_scatter, F.alpha_dropout,
F.feature_alpha_dropout, nn.AlphaDropout, max_pool3d / avg_pool3d (and their modules),
F.embedding_bag / nn.EmbeddingBag, F.pdist and torch.cdist: values, dtypes, first (and, where
the ops under them are exposed to it, second) derivatives, and torch's error types/messages."""

import math

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.nn as snn
import sourcegrad.nn.functional as SF

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _pair(array, requires_grad=True):
    """The same values as a torch tensor and a sourcegrad tensor."""
    t = torch.tensor(array, requires_grad=requires_grad)
    s = sg.tensor(array, requires_grad=requires_grad)
    return t, s


def _close(s, t, rtol=1e-6, atol=1e-8):
    assert str(s.dtype) == str(t.dtype), (s.dtype, t.dtype)
    assert tuple(s.shape) == tuple(t.shape)
    # (torch's zero gradients are ZeroTensors, which refuse .numpy(): read them as lists)
    t = torch.zeros_like(t) if t._is_zerotensor() else t.detach()
    want = t.numpy()
    np.testing.assert_allclose(np.asarray(s.detach().numpy()), want, rtol=rtol, atol=atol)


def _grads(fn_s, fn_t, arrays, weight_seed=0, second=False, rtol=1e-6, atol=1e-8):
    """fn(*tensors) weighted into a scalar: values and gradients (and, with `second`, the
    gradient of the gradient's weighted sum) of sourcegrad against torch."""
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ss = [sg.tensor(a, requires_grad=True) for a in arrays]
    out_t, out_s = fn_t(*ts), fn_s(*ss)
    _close(out_s, out_t, rtol, atol)
    w = np.random.default_rng(weight_seed).standard_normal(tuple(out_t.shape))
    if out_t.is_complex():
        w = w + 1j * np.random.default_rng(weight_seed + 1).standard_normal(w.shape)
    wt, ws = torch.tensor(w, dtype=out_t.dtype), sg.tensor(w, dtype=out_s.dtype)
    loss_t = (out_t * wt).real.sum() if out_t.is_complex() else (out_t * wt).sum()
    loss_s = (out_s * ws).real.sum() if out_s.is_complex() else (out_s * ws).sum()
    gt = torch.autograd.grad(loss_t, ts, create_graph=second, allow_unused=True)
    gs = sg.autograd.grad(loss_s, ss, create_graph=second, allow_unused=True)
    for a, b in zip(gs, gt):
        if b is None:
            assert a is None or not np.any(a.detach().numpy())
        else:
            _close(a, b, rtol, atol)
    if second:
        pt = [(g * g).real.sum() if g.is_complex() else (g * g).sum() for g in gt if g is not None]
        ps = [(g * g).real.sum() if g.is_complex() else (g * g).sum() for g in gs if g is not None]
        ht = torch.autograd.grad(sum(pt), ts, allow_unused=True)
        hs = sg.autograd.grad(sum(ps), ss, allow_unused=True)
        for a, b in zip(hs, ht):
            if b is None:
                assert a is None or not np.any(a.detach().numpy())
            else:
                _close(a, b, rtol, atol)


def _same_error(fn_s, fn_t):
    with pytest.raises(Exception) as want:
        fn_t()
    with pytest.raises(type(want.value)) as got:
        fn_s()
    assert str(got.value) == str(want.value)


def _rng(seed=0):
    return np.random.default_rng(seed)


# --- sgn -----------------------------------------------------------------------------------


def test_sgn_real_values_dtypes_and_zero_gradient():
    x = np.array([[-2.0, 0.0, 3.5], [1e-30, -0.0, 7.0]])
    _grads(sg.sgn, torch.sgn, [x])
    _grads(lambda a: a.sgn(), lambda a: a.sgn(), [x.astype(np.float32)])
    for values in ([1, -2, 0], [True, False]):
        s, t = sg.sgn(sg.tensor(values)), torch.sgn(torch.tensor(values))
        _close(s, t)


def test_sgn_complex_values_and_gradients_zero_at_zero():
    z = np.array([1 + 2j, 0j, -3j, 0.5 - 0.25j, -4 + 0j])
    _grads(sg.sgn, torch.sgn, [z])
    # (torch's second derivative at 0 is NaN, sourcegrad's 0: compared away from 0)
    _grads(sg.sgn, torch.sgn, [z[z != 0]], second=True)
    _grads(sg.sgn, torch.sgn, [z.astype(np.complex64)], rtol=1e-5, atol=1e-6)


def test_sgn_in_place_and_leaf_refusal():
    z = np.array([1 + 2j, 0j, -3j])
    t, s = torch.tensor(z), sg.tensor(z)
    t.sgn_(), s.sgn_()
    _close(s, t)
    _, sl = _pair(z)
    tl = torch.tensor(z, requires_grad=True)
    _same_error(lambda: sl.sgn_(), lambda: tl.sgn_())


# --- dist ----------------------------------------------------------------------------------


def test_dist_zero_norm_counts_and_has_zero_gradient():
    # (torch's own backward of dist(p=0) with both operands requiring grad raises: a value
    # against torch, the gradient against its definition, the derivative of a count)
    a, b = _rng(1).standard_normal((3, 4)), _rng(2).standard_normal(4)
    a[0, 0] = b[0]
    x, y = sg.tensor(a, requires_grad=True), sg.tensor(b, requires_grad=True)
    out = sg.dist(x, y, 0)
    _close(out, torch.dist(torch.tensor(a), torch.tensor(b), 0))
    gx, gy = sg.autograd.grad(out, (x, y), allow_unused=True)
    for g in (gx, gy):
        assert g is None or not np.any(g.numpy())


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, math.inf, -math.inf])
def test_dist_values_and_gradients(p):
    a, b = _rng(1).standard_normal((3, 4)), _rng(2).standard_normal(4)
    second = p in (2, 3, 0.5)
    _grads(lambda x, y: sg.dist(x, y, p), lambda x, y: torch.dist(x, y, p), [a, b], second=second)
    _grads(lambda x, y: x.dist(y, p), lambda x, y: x.dist(y, p), [a, b])


@pytest.mark.parametrize("p", [2, 1, 3, math.inf])
def test_dist_gradient_is_zero_at_equal_points(p):
    a = _rng(3).standard_normal((2, 3))
    _grads(lambda x: sg.dist(x, x.detach().clone(), p), lambda x: torch.dist(x, x.detach().clone(), p), [a])


def test_dist_dtypes_and_errors():
    a32, b64 = _rng(1).standard_normal((3, 4)).astype(np.float32), _rng(2).standard_normal(4)
    _close(sg.dist(sg.tensor(a32), sg.tensor(b64)), torch.dist(torch.tensor(a32), torch.tensor(b64)))
    _close(sg.dist(sg.tensor(a32), sg.tensor(a32)), torch.dist(torch.tensor(a32), torch.tensor(a32)))
    _same_error(
        lambda: sg.dist(sg.tensor(a32), sg.tensor(a32[:, :3])),
        lambda: torch.dist(torch.tensor(a32), torch.tensor(a32[:, :3])),
    )
    _same_error(
        lambda: sg.dist(sg.tensor([1, 2]), sg.tensor([1, 3])),
        lambda: torch.dist(torch.tensor([1, 2]), torch.tensor([1, 3])),
    )


# --- renorm --------------------------------------------------------------------------------


@pytest.mark.parametrize(("p", "dim", "maxnorm"), [(2, 0, 1.0), (1, 1, 0.7), (3, -1, 2.0), (2, 2, 0.5)])
def test_renorm_values_and_gradients(p, dim, maxnorm):
    x = _rng(4).standard_normal((3, 4, 2))
    _grads(
        lambda a: sg.renorm(a, p, dim, maxnorm),
        lambda a: torch.renorm(a, p, dim, maxnorm),
        [x],
        second=True,
    )
    _grads(lambda a: a.renorm(p, dim, maxnorm), lambda a: a.renorm(p, dim, maxnorm), [x.astype(np.float32)], rtol=1e-5, atol=1e-6)


def test_renorm_in_place_and_errors():
    x = _rng(5).standard_normal((3, 4)).astype(np.float32)
    t, s = torch.tensor(x), sg.tensor(x)
    assert s.renorm_(2, 0, 0.5) is s
    t.renorm_(2, 0, 0.5)
    _close(s, t, rtol=1e-6)
    cases = [
        (x, 0, 0, 1.0),
        (x, -1, 0, 1.0),
        (x, 2, 2, 1.0),
        (x, 2, 0, -1.0),
        (np.array([[1, 2]]), 2, 0, 1.0),
        (np.array(1.0), 2, 0, 1.0),
        (np.ones(3), 2, 0, 1.0),
    ]
    for a, p, dim, maxnorm in cases:
        _same_error(
            lambda: sg.renorm(sg.tensor(a), p, dim, maxnorm),
            lambda: torch.renorm(torch.tensor(a), p, dim, maxnorm),
        )


# --- linalg.matrix_norm --------------------------------------------------------------------

_ORDS = ["fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2]


@pytest.mark.parametrize("ord", _ORDS)
def test_matrix_norm_values_and_gradients(ord):
    x = _rng(6).standard_normal((2, 3, 4))
    # (the piecewise-linear norms' gradients are constants: torch's have no graph)
    second = ord in ("fro", "nuc", 2, -2)
    _grads(
        lambda a: sg.linalg.matrix_norm(a, ord),
        lambda a: torch.linalg.matrix_norm(a, ord),
        [x],
        second=second,
    )
    _grads(
        lambda a: sg.linalg.matrix_norm(a, ord, dim=(2, 0), keepdim=True),
        lambda a: torch.linalg.matrix_norm(a, ord, dim=(2, 0), keepdim=True),
        [x],
    )


def test_matrix_norm_dtypes_and_errors():
    x = _rng(7).standard_normal((3, 4, 5)).astype(np.float32)
    _close(
        sg.linalg.matrix_norm(sg.tensor(x), dtype=sg.float64),
        torch.linalg.matrix_norm(torch.tensor(x), dtype=torch.float64),
    )
    _close(sg.linalg.matrix_norm(sg.tensor(x)), torch.linalg.matrix_norm(torch.tensor(x)), rtol=1e-5)
    z = x + 1j * x[::-1]
    _close(sg.linalg.matrix_norm(sg.tensor(z)), torch.linalg.matrix_norm(torch.tensor(z)), rtol=1e-5)
    cases = [
        (x[0, 0], {}),
        (x, {"ord": 3}),
        (x, {"ord": "abc"}),
        (x, {"dim": (0,)}),
        (x, {"dim": (1, 1)}),
        (x, {"dim": (0, 5)}),
        (x.astype(np.int64), {}),
    ]
    for a, kwargs in cases:
        _same_error(
            lambda: sg.linalg.matrix_norm(sg.tensor(a), **kwargs),
            lambda: torch.linalg.matrix_norm(torch.tensor(a), **kwargs),
        )


# --- diagonal_scatter / select_scatter / slice_scatter --------------------------------------

_SCATTERS = [
    ("diagonal_scatter", (3, 3), (3,), ()),
    ("diagonal_scatter", (3, 4), (3,), (1,)),
    ("diagonal_scatter", (2, 3, 4), (2, 2), (-1, 1, 2)),
    ("select_scatter", (3, 4), (4,), (0, 1)),
    ("select_scatter", (3, 4, 2), (3, 2), (1, -1)),
    ("slice_scatter", (8, 4), (2, 4), (0, 6)),
    ("slice_scatter", (8, 4), (2, 4), (0, 0, 8, 4)),
    ("slice_scatter", (8, 4), (8, 2), (1, None, None, 2)),
    ("slice_scatter", (8, 4), (2, 4), (0, -2)),
]


@pytest.mark.parametrize(("name", "shape", "src_shape", "args"), _SCATTERS)
def test_scatters_values_and_gradients(name, shape, src_shape, args):
    x, src = _rng(8).standard_normal(shape), _rng(9).standard_normal(src_shape)
    _grads(
        lambda a, b: getattr(sg, name)(a, b, *args),
        lambda a, b: getattr(torch, name)(a, b, *args),
        [x, src],
    )
    _grads(
        lambda a, b: getattr(a, name)(b, *args),
        lambda a, b: getattr(a, name)(b, *args),
        [x, src],
    )


def test_scatters_dtypes_and_errors():
    z, one3, one4 = np.zeros((3, 3), np.float32), np.ones(3), np.ones(4)
    _close(
        sg.diagonal_scatter(sg.tensor(z), sg.tensor(one3)),
        torch.diagonal_scatter(torch.tensor(z), torch.tensor(one3)),
    )
    _close(
        sg.select_scatter(sg.tensor(z), sg.tensor(one3.astype(np.int64)), 1, 2),
        torch.select_scatter(torch.tensor(z), torch.tensor(one3.astype(np.int64)), 1, 2),
    )
    z84 = np.zeros((8, 4))
    cases = [
        ("diagonal_scatter", z, np.ones(2), ()),
        ("select_scatter", np.zeros((3, 4)), one3, (0, 1)),
        ("select_scatter", np.zeros((3, 4)), one4, (0, 5)),
        ("select_scatter", np.zeros((3, 4)), one4, (2, 0)),
        ("slice_scatter", z84, np.ones((3, 4)), (0, 0, 8, 4)),
        ("slice_scatter", z84, np.ones((2, 4)), (0, 0, 8, 0)),
    ]
    for name, a, b, args in cases:
        _same_error(
            lambda: getattr(sg, name)(sg.tensor(a), sg.tensor(b), *args),
            lambda: getattr(torch, name)(torch.tensor(a), torch.tensor(b), *args),
        )
