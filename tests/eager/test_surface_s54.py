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
    _grads(
        lambda x: sg.dist(x, x.detach().clone(), p),
        lambda x: torch.dist(x, x.detach().clone(), p),
        [a],
    )


def test_dist_dtypes_and_errors():
    a32, b64 = _rng(1).standard_normal((3, 4)).astype(np.float32), _rng(2).standard_normal(4)
    _close(
        sg.dist(sg.tensor(a32), sg.tensor(b64)), torch.dist(torch.tensor(a32), torch.tensor(b64))
    )
    _close(
        sg.dist(sg.tensor(a32), sg.tensor(a32)), torch.dist(torch.tensor(a32), torch.tensor(a32))
    )
    _same_error(
        lambda: sg.dist(sg.tensor(a32), sg.tensor(a32[:, :3])),
        lambda: torch.dist(torch.tensor(a32), torch.tensor(a32[:, :3])),
    )
    _same_error(
        lambda: sg.dist(sg.tensor([1, 2]), sg.tensor([1, 3])),
        lambda: torch.dist(torch.tensor([1, 2]), torch.tensor([1, 3])),
    )


# --- renorm --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "dim", "maxnorm"), [(2, 0, 1.0), (1, 1, 0.7), (3, -1, 2.0), (2, 2, 0.5)]
)
def test_renorm_values_and_gradients(p, dim, maxnorm):
    x = _rng(4).standard_normal((3, 4, 2))
    _grads(
        lambda a: sg.renorm(a, p, dim, maxnorm),
        lambda a: torch.renorm(a, p, dim, maxnorm),
        [x],
        second=True,
    )
    _grads(
        lambda a: a.renorm(p, dim, maxnorm),
        lambda a: a.renorm(p, dim, maxnorm),
        [x.astype(np.float32)],
        rtol=1e-5,
        atol=1e-6,
    )


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
    _close(
        sg.linalg.matrix_norm(sg.tensor(x)), torch.linalg.matrix_norm(torch.tensor(x)), rtol=1e-5
    )
    z = x + 1j * x[::-1]
    _close(
        sg.linalg.matrix_norm(sg.tensor(z)), torch.linalg.matrix_norm(torch.tensor(z)), rtol=1e-5
    )
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


# --- alpha dropout -------------------------------------------------------------------------

_ALPHA = 1.7580993408473766


@pytest.mark.parametrize("fn", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_eval_and_p0_are_the_identity(fn):
    x = sg.tensor(_rng(10).standard_normal((4, 3, 5)))
    assert getattr(SF, fn)(x, 0.5, False) is x
    assert getattr(SF, fn)(x, 0.0, True) is x
    assert getattr(SF, fn)(x) is x  # (torch's default: training=False)
    for cls in (snn.AlphaDropout, snn.FeatureAlphaDropout):
        m = cls(0.3).eval()
        assert m(x) is x
        assert repr(m) == repr(getattr(torch.nn, cls.__name__)(0.3))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_alpha_dropout_keeps_mean_and_variance_and_masks_as_torch(p):
    sg.manual_seed(0)
    x_np = _rng(11).standard_normal((200, 500))
    x = sg.tensor(x_np, requires_grad=True)
    y = SF.alpha_dropout(x, p, True)
    yt = F.alpha_dropout(torch.tensor(x_np), p, True)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    dropped_value = -_ALPHA * a + _ALPHA * a * p  # torch's a * 0 + b of a dropped unit
    kept = np.isclose(y.detach().numpy(), a * x_np + _ALPHA * a * p)
    dropped = np.isclose(y.detach().numpy(), dropped_value)
    assert np.all(kept | dropped)
    # torch's output takes the same two forms (its draw differs: compare the structure)
    assert np.all(
        np.isclose(yt.numpy(), a * x_np + _ALPHA * a * p) | np.isclose(yt.numpy(), dropped_value)
    )
    assert abs(dropped.mean() - p) < 0.01
    out = y.detach().numpy()
    assert abs(out.mean()) < 0.02 and abs(out.var() - 1) < 0.03
    assert abs(out.mean() - yt.numpy().mean()) < 0.03 and abs(out.var() - yt.numpy().var()) < 0.04
    # the gradient: a where kept, 0 where dropped (torch's: grad * noise)
    (g,) = sg.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(g.numpy(), np.where(kept, a, 0.0))
    assert y.dtype == sg.float64


def test_feature_alpha_dropout_masks_whole_channels():
    sg.manual_seed(1)
    x_np = _rng(12).standard_normal((64, 32, 3, 4)).astype(np.float32)
    p = 0.4
    y = SF.feature_alpha_dropout(sg.tensor(x_np), p, True).numpy()
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    dropped = np.isclose(y, -_ALPHA * a + _ALPHA * a * p, atol=1e-6)
    per_channel = dropped.reshape(64, 32, -1)
    assert np.all(per_channel.all(-1) | ~per_channel.any(-1))  # a channel is dropped whole
    assert abs(per_channel.all(-1).mean() - p) < 0.05
    assert y.dtype == np.float32
    module = snn.FeatureAlphaDropout(p).train()
    assert tuple(module(sg.tensor(x_np)).shape) == x_np.shape


def test_alpha_dropout_p1_inplace_and_errors():
    x_np = _rng(13).standard_normal((2, 3))
    for fn in ("alpha_dropout", "feature_alpha_dropout"):
        _close(
            getattr(SF, fn)(sg.tensor(x_np), 1.0, True),
            getattr(F, fn)(torch.tensor(x_np), 1.0, True),
        )
        s = sg.tensor(x_np)
        assert getattr(SF, fn)(s, 0.3, True, inplace=True) is s
        for p in (1.5, -0.1):
            _same_error(
                lambda: getattr(SF, fn)(sg.tensor(x_np), p, True),
                lambda: getattr(F, fn)(torch.tensor(x_np), p, True),
            )
    _same_error(
        lambda: SF.feature_alpha_dropout(sg.tensor(x_np[0]), 0.5, True),
        lambda: F.feature_alpha_dropout(torch.tensor(x_np[0]), 0.5, True),
    )
    _same_error(
        lambda: SF.alpha_dropout(sg.tensor([1, 2]), 0.5, True),
        lambda: F.alpha_dropout(torch.tensor([1, 2]), 0.5, True),
    )
    _same_error(lambda: snn.AlphaDropout(1.2), lambda: torch.nn.AlphaDropout(1.2))


# --- max_pool3d / avg_pool3d ---------------------------------------------------------------

_POOLS = [
    ((2, 3, 5, 6, 7), (2,), {}),
    ((2, 3, 5, 6, 7), (3, 2, 1, 1), {"ceil_mode": True}),
    ((3, 5, 6, 7), ((2, 3, 2),), {}),
    ((1, 2, 6, 5, 7), ((3, 2, 2), (2, 1, 2)), {"padding": (1, 0, 1), "dilation": (1, 2, 1)}),
]


@pytest.mark.parametrize(("shape", "args", "kwargs"), _POOLS)
def test_max_pool3d_values_indices_and_gradients(shape, args, kwargs):
    x = _rng(14).standard_normal(shape)
    _grads(
        lambda a: SF.max_pool3d(a, *args, **kwargs),
        lambda a: F.max_pool3d(a, *args, **kwargs),
        [x],
    )
    ys, ids = SF.max_pool3d(sg.tensor(x), *args, **kwargs, return_indices=True)
    yt, idt = F.max_pool3d(torch.tensor(x), *args, **kwargs, return_indices=True)
    _close(ys, yt)
    _close(ids, idt)
    m_s, m_t = snn.MaxPool3d(*args, **kwargs), torch.nn.MaxPool3d(*args, **kwargs)
    assert repr(m_s) == repr(m_t)
    _close(m_s(sg.tensor(x)), m_t(torch.tensor(x)))


def test_max_pool3d_ties_integers_and_second_order():
    x = np.zeros((1, 1, 4, 4, 4))
    x[0, 0, 1:3, 1:3, 1:3] = 1.0  # ties: torch takes the first maximum of each window
    _grads(lambda a: SF.max_pool3d(a, 2, 1), lambda a: F.max_pool3d(a, 2, 1), [x])
    xi = _rng(15).integers(-9, 9, (2, 2, 4, 4, 4))
    _close(SF.max_pool3d(sg.tensor(xi), 2), F.max_pool3d(torch.tensor(xi), 2))
    # a gather: its gradient is linear in g, its second derivative through g exact
    xs = _rng(16).standard_normal((1, 2, 4, 4, 4))
    _grads(lambda a: SF.max_pool3d(a, 2) ** 2, lambda a: F.max_pool3d(a, 2) ** 2, [xs], second=True)


_AVG = [
    ((2, 3, 5, 6, 7), (2,), {}),
    ((2, 3, 5, 6, 7), (3, 2, 1, True, False, None), {}),
    ((2, 3, 5, 6, 7), (3, 2, 1, False, True, 5), {}),
    ((3, 5, 6, 7), ((2, 3, 2), (1, 2, 3)), {"padding": (1, 1, 0), "ceil_mode": True}),
    ((1, 2, 4, 4, 4), (3, 2, 1), {"count_include_pad": True, "ceil_mode": True}),
]


@pytest.mark.parametrize(("shape", "args", "kwargs"), _AVG)
def test_avg_pool3d_values_and_gradients(shape, args, kwargs):
    x = _rng(17).standard_normal(shape)
    _grads(
        lambda a: SF.avg_pool3d(a, *args, **kwargs),
        lambda a: F.avg_pool3d(a, *args, **kwargs),
        [x],
        rtol=1e-6,
        atol=1e-7,
    )
    _grads(
        lambda a: SF.avg_pool3d(a, *args, **kwargs) ** 2,
        lambda a: F.avg_pool3d(a, *args, **kwargs) ** 2,
        [x],
        second=True,
    )
    x32 = x.astype(np.float32)
    _close(
        SF.avg_pool3d(sg.tensor(x32), *args, **kwargs),
        F.avg_pool3d(torch.tensor(x32), *args, **kwargs),
        rtol=1e-5,
        atol=1e-6,
    )
    m_s, m_t = snn.AvgPool3d(*args, **kwargs), torch.nn.AvgPool3d(*args, **kwargs)
    assert repr(m_s) == repr(m_t)
    _close(m_s(sg.tensor(x)), m_t(torch.tensor(x)))


def test_avg_pool3d_integers():
    xi = _rng(18).integers(-50, 50, (2, 2, 5, 4, 6))
    for args in ((2,), (3, 2, 1, False, False, None), (3, 2, 1, True, True, 4)):
        _close(SF.avg_pool3d(sg.tensor(xi), *args), F.avg_pool3d(torch.tensor(xi), *args))


_POOL_ERRORS = [
    ("max_pool3d", (2, 3, 5, 6, 7), (0, 1), {}),
    ("max_pool3d", (2, 3, 5, 6, 7), (0,), {}),
    ("max_pool3d", (2, 3, 5, 6, 7), (2,), {"padding": 2}),
    ("max_pool3d", (2, 3, 5, 6, 7), (2,), {"dilation": 0}),
    ("max_pool3d", (2, 3, 5, 6, 7), ((2, 2),), {}),
    ("max_pool3d", (2, 3, 5, 6, 7), ((2, 2, 2), (1, 1)), {}),
    ("max_pool3d", (2, 3, 5, 6, 7), (2,), {"padding": (1, 1)}),
    ("max_pool3d", (5, 6, 7), (2,), {}),
    ("max_pool3d", (2, 3, 5, 6, 7), (9,), {}),
    ("avg_pool3d", (2, 3, 5, 6, 7), (0, 1), {}),
    ("avg_pool3d", (2, 3, 5, 6, 7), (0,), {}),
    ("avg_pool3d", (2, 3, 5, 6, 7), ((2, 2),), {}),
    ("avg_pool3d", (2, 3, 5, 6, 7), (2, (1, 1)), {}),
    ("avg_pool3d", (2, 3, 5, 6, 7), (2,), {"padding": (1, 1)}),
    ("avg_pool3d", (2, 3, 5, 6, 7), (2,), {"padding": 2}),
    ("avg_pool3d", (2, 3, 5, 6, 7), (9,), {}),
    ("avg_pool3d", (2, 3, 5, 6, 7), (1, 1, 0, False, True, 0), {}),
    ("avg_pool3d", (5, 6, 7), (2,), {}),
]


@pytest.mark.parametrize(("name", "shape", "args", "kwargs"), _POOL_ERRORS)
def test_pool3d_errors(name, shape, args, kwargs):
    x = _rng(19).standard_normal(shape)
    _same_error(
        lambda: getattr(SF, name)(sg.tensor(x), *args, **kwargs),
        lambda: getattr(F, name)(torch.tensor(x), *args, **kwargs),
    )


def test_pool3d_refuse_bool():
    x = np.ones((1, 1, 2, 2, 2), bool)
    for name in ("max_pool3d", "avg_pool3d"):
        _same_error(
            lambda: getattr(SF, name)(sg.tensor(x), 2), lambda: getattr(F, name)(torch.tensor(x), 2)
        )


# --- embedding_bag -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("layout", ["2d", "offsets", "offsets_last", "empty_bag"])
def test_embedding_bag_modes_and_offsets(mode, layout):
    w = _rng(20).standard_normal((10, 3))
    if layout == "2d":
        idx, offsets, last = np.array([[1, 2, 4], [4, 3, 9]]), None, False
    else:
        idx = np.array([1, 2, 4, 5, 4, 3, 2, 9])
        offsets = {"offsets": [0, 2, 5], "offsets_last": [0, 2, 5, 8], "empty_bag": [0, 2, 2, 5]}[
            layout
        ]
        offsets, last = np.array(offsets), layout == "offsets_last"

    def call(lib, functional):
        def fn(weight):
            return functional.embedding_bag(
                lib.tensor(idx),
                weight,
                None if offsets is None else lib.tensor(offsets),
                mode=mode,
                include_last_offset=last,
            )

        return fn

    _grads(call(sg, SF), call(torch, F), [w])


@pytest.mark.parametrize("layout", ["2d", "offsets"])
def test_embedding_bag_per_sample_weights_and_padding(layout):
    w = _rng(21).standard_normal((10, 4))
    if layout == "2d":
        idx, offsets, psw = np.array([[1, 2, 0], [4, 0, 9]]), None, _rng(22).standard_normal((2, 3))
    else:
        idx, offsets = np.array([1, 0, 4, 5, 4, 3]), np.array([0, 3, 4])
        psw = _rng(22).standard_normal(6)

    def call(lib, functional):
        def fn(weight, per_sample):
            return functional.embedding_bag(
                lib.tensor(idx),
                weight,
                None if offsets is None else lib.tensor(offsets),
                mode="sum",
                per_sample_weights=per_sample,
                padding_idx=0,
            )

        return fn

    # (torch has no second derivative of the per-sample weights' gradient)
    _grads(call(sg, SF), call(torch, F), [w, psw])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_module(mode):
    torch.manual_seed(0)
    mt = torch.nn.EmbeddingBag(12, 5, mode=mode).double()
    ms = snn.EmbeddingBag(12, 5, mode=mode)
    ms.weight.data = sg.tensor(mt.weight.detach().numpy().copy())
    ms.double()
    assert repr(ms) == repr(mt)
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 11]), np.array([0, 3, 6])
    ys = ms(sg.tensor(idx), sg.tensor(offsets))
    yt = mt(torch.tensor(idx), torch.tensor(offsets))
    _close(ys, yt)
    w = _rng(23).standard_normal(tuple(yt.shape))
    (ys * sg.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    _close(ms.weight.grad, mt.weight.grad)


# --- pdist / cdist -------------------------------------------------------------------------


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, math.inf, 0])
def test_pdist_values_and_gradients(p):
    x = _rng(24).standard_normal((5, 3))
    x[3] = x[1]  # coincident rows: torch's gradient there is 0
    # (torch has no second derivative of pdist: first order only)
    _grads(lambda a: SF.pdist(a, p), lambda a: F.pdist(a, p), [x])
    _grads(lambda a: sg.pdist(a, p), lambda a: torch.pdist(a, p), [x[[0, 1, 2, 4]]])


def test_pdist_dtypes_and_errors():
    x = _rng(25).standard_normal((4, 3)).astype(np.float32)
    _close(SF.pdist(sg.tensor(x)), F.pdist(torch.tensor(x)), rtol=1e-5)
    _close(SF.pdist(sg.tensor(x[:1])), F.pdist(torch.tensor(x[:1])))
    for a, p in ((x[0], 2), (x[None], 2), (x, -1), (x.astype(np.int64), 2)):
        _same_error(lambda: SF.pdist(sg.tensor(a), p), lambda: F.pdist(torch.tensor(a), p))


@pytest.mark.parametrize("p", [2, 1])
@pytest.mark.parametrize("rows", [8, 30])
def test_cdist_gradient_at_coincident_points(p, rows):
    # (30 rows: torch's euclidean distance takes its matrix-product path, whose gradient at
    # coincident points is 0 as its direct path's)
    a = _rng(26).standard_normal((rows, 3))
    b = _rng(27).standard_normal((rows + 2, 3))
    b[:3] = a[:3]
    b[5] = a[7]
    _grads(
        lambda x, y: sg.cdist(x, y, p),
        lambda x, y: torch.cdist(x, y, p),
        [a, b],
        rtol=1e-5,
        atol=1e-6,
    )
    _grads(lambda x: sg.cdist(x, x, p), lambda x: torch.cdist(x, x, p), [a], rtol=1e-5, atol=1e-6)


# --- second derivatives torch does not have: against finite differences of sourcegrad's -----


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: sg.pdist(a),
        lambda a: sg.pdist(a, 3),
        lambda a: SF.max_pool3d(a.reshape(1, 1, 3, 2, 5), 2, 1) ** 2,
        lambda a: sg.renorm(a, 2, 0, 0.5),
        lambda a: sg.linalg.matrix_norm(a, "nuc"),
    ],
)
def test_second_derivatives_by_finite_differences(fn):
    x = sg.tensor(_rng(30).standard_normal((6, 5)), requires_grad=True)
    assert sg.autograd.gradcheck(fn, (x,))
    assert sg.autograd.gradgradcheck(fn, (x,))


def test_embedding_bag_per_sample_weights_second_derivative_by_finite_differences():
    idx, offsets = sg.tensor([1, 0, 4, 5, 4, 3]), sg.tensor([0, 3, 4])
    w = sg.tensor(_rng(31).standard_normal((7, 3)), requires_grad=True)
    psw = sg.tensor(_rng(32).standard_normal(6), requires_grad=True)

    def fn(weight, per_sample):
        return SF.embedding_bag(idx, weight, offsets, mode="sum", per_sample_weights=per_sample)

    assert sg.autograd.gradcheck(fn, (w, psw))
    assert sg.autograd.gradgradcheck(fn, (w, psw))


def test_matrix_norm_out():
    x = _rng(33).standard_normal((2, 3, 3)).astype(np.float32)
    outs = []
    for lib in (sg, torch):
        out = lib.empty(0)
        assert lib.linalg.matrix_norm(lib.tensor(x), "nuc", out=out) is out
        outs.append(out)
    _close(outs[0], outs[1], rtol=1e-5)
    _same_error(
        lambda: sg.linalg.matrix_norm(sg.tensor(x), out=sg.empty(2, dtype=sg.float64)),
        lambda: torch.linalg.matrix_norm(torch.tensor(x), out=torch.empty(2, dtype=torch.float64)),
    )


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_ties_and_padding_idx(mode):
    w = _rng(34).standard_normal((6, 3))
    w[3] = w[1]  # equal rows in a max bag: the gradient goes where torch sends it
    idx, offsets = np.array([2, 2, 1, 3, 2, 2, 0, 5]), np.array([0, 2, 4, 6])

    def call(lib, functional):
        def fn(weight):
            return functional.embedding_bag(
                lib.tensor(idx), weight, lib.tensor(offsets), mode=mode, padding_idx=2
            )

        return fn

    _grads(call(sg, SF), call(torch, F), [w])
