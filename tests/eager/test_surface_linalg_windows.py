"""torch's surface gaps filled in eager mode, each checked against torch (CPU) for values,
gradients, dtypes and errors: the Cholesky family (linalg.cholesky(upper=True),
linalg.cholesky_ex, torch.cholesky, cholesky_solve, cholesky_inverse), the window functions
(torch.*_window, torch.signal.windows), view_as_real / view_as_complex, and the top-level
spellings of nn.functional (torch.conv2d, torch.batch_norm, ...: sourcegrad/nn/top_level.py).
Second derivatives of the differentiable ones: tests/eager/test_second_order.py."""

import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(7)


def _spd(*batch, n=3):
    x = R.normal(size=batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _run(T, fn, inputs):
    """fn's output and the gradients of <w, output> for fixed weights w, as numpy arrays."""
    xs = [T.tensor(v, requires_grad=True) for v in inputs]
    out = fn(T, *xs)
    w = T.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)), dtype=out.dtype)
    (out * w).sum().backward()
    grads = [None if x.grad is None else x.grad.numpy() for x in xs]
    return out.detach().numpy(), grads, str(out.dtype), out.grad_fn


def _agree(fn, inputs, rtol=1e-9, atol=1e-10, node=True):
    out, grads, dtype, fn_ours = _run(sg, fn, inputs)
    t_out, t_grads, t_dtype, fn_torch = _run(torch, fn, inputs)
    assert dtype == t_dtype
    np.testing.assert_allclose(out, t_out, rtol=rtol, atol=atol)
    for g, tg in zip(grads, t_grads):
        assert (g is None) == (tg is None)
        if g is not None:
            np.testing.assert_allclose(g, tg, rtol=rtol, atol=atol)
    if node:
        assert fn_ours.name() == fn_torch.name()


def _same_error(fn):
    """fn(T) raises the same type (torch's RuntimeError / LinAlgError / ValueError) with the
    same message in both."""
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(Exception) as ours:
        fn(sg)
    assert isinstance(ours.value, RuntimeError) == isinstance(theirs.value, RuntimeError)
    # (sourcegrad's LinAlgError is numpy's too, a ValueError: code catching either works)
    assert isinstance(ours.value, ValueError) == isinstance(theirs.value, ValueError) or (
        isinstance(ours.value, sg.linalg.LinAlgError)
    )
    assert str(ours.value) == str(theirs.value)


# ---- Cholesky ------------------------------------------------------------------------------


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_linalg_cholesky_both_factors(upper, batch):
    # upper=True was refused (NoRuleError) on backward: now the registry's rule for U = L^T
    _agree(lambda T, a: T.linalg.cholesky(a, upper=upper), [_spd(*batch)])


def test_cholesky_upper_gradient_matches_finite_differences():
    a = _spd()
    w = R.normal(size=(3, 3))

    def loss(x):
        s = (x + x.T) / 2  # (the gradient is the symmetric one, as torch's)
        return float((sg.linalg.cholesky(sg.tensor(s), upper=True) * sg.tensor(w)).sum())

    x = sg.tensor(a, requires_grad=True)
    (sg.linalg.cholesky(x, upper=True) * sg.tensor(w)).sum().backward()
    fd = np.zeros_like(a)
    for i in range(3):
        for j in range(3):
            e = np.zeros_like(a)
            e[i, j] = 1e-6
            fd[i, j] = (loss(a + e) - loss(a - e)) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("upper", [False, True])
def test_legacy_cholesky_function_and_method(upper):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (torch's deprecation warning)
        _agree(lambda T, a: T.cholesky(a, upper), [_spd(2)])
        _agree(lambda T, a: a.cholesky(upper=upper), [_spd()])


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_ex_gives_the_factor_and_info(upper):
    _agree(lambda T, a: T.linalg.cholesky_ex(a, upper=upper)[0], [_spd(2)])
    not_pd = np.array([[4.0, 2, 1], [2, 1, 0], [1, 0, 3]])
    indefinite = np.array([[4.0, 2, 1], [2, 5, 0], [1, 0, -3]])
    stack = np.stack([not_pd, indefinite, np.eye(3), _spd()])
    L, info = sg.linalg.cholesky_ex(sg.tensor(stack), upper=upper)
    tL, tinfo = torch.linalg.cholesky_ex(torch.tensor(stack), upper=upper)
    assert info.dtype == sg.int32 and info.tolist() == tinfo.tolist() == [2, 3, 0, 0]
    np.testing.assert_allclose(L.numpy(), tL.numpy(), rtol=1e-12)  # (LAPACK's partial factor)
    assert sg.linalg.cholesky_ex(sg.tensor(_spd())).info.item() == 0


def test_cholesky_errors_are_torchs():
    indefinite = np.array([[4.0, 2, 1], [2, 5, 0], [1, 0, -3]])
    _same_error(lambda T: T.linalg.cholesky(T.tensor(np.stack([np.eye(3), indefinite]))))
    _same_error(lambda T: T.linalg.cholesky_ex(T.tensor(indefinite), check_errors=True))
    _same_error(lambda T: T.linalg.cholesky(T.ones(3)))
    _same_error(lambda T: T.linalg.cholesky(T.ones(2, 3)))
    _same_error(lambda T: T.cholesky_solve(T.ones(3), T.eye(3)))
    _same_error(lambda T: T.cholesky_solve(T.ones(3, 1, dtype=T.float64), T.eye(3)))
    _same_error(lambda T: T.cholesky_solve(T.ones(2, 1), T.eye(3)))
    _same_error(lambda T: T.cholesky_inverse(T.ones(2, 3)))
    with pytest.raises(sg.linalg.LinAlgError):  # (numpy's LinAlgError too)
        sg.linalg.cholesky(-sg.eye(2))
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(-sg.eye(2))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(upper):
    def factor(s):
        return np.linalg.cholesky(s, upper=upper)

    _agree(
        lambda T, b, c: T.cholesky_solve(b, c, upper),
        [R.normal(size=(2, 3, 2)), factor(_spd(2))],
        node=False,  # (composed: matmul and solve, torch has one node)
    )
    _agree(  # batch dimensions broadcast
        lambda T, b, c: T.cholesky_solve(b, c, upper=upper),
        [R.normal(size=(3, 4)), factor(_spd(2))],
        node=False,
    )
    _agree(
        lambda T, b, c: b.cholesky_solve(c, upper),
        [R.normal(size=(3, 2)), factor(_spd())],
        node=False,
    )
    _agree(lambda T, c: T.cholesky_inverse(c, upper), [factor(_spd(2))], node=False)
    _agree(lambda T, c: c.cholesky_inverse(upper=upper), [factor(_spd())], node=False)


def test_cholesky_solve_float32():
    b, c = R.normal(size=(3, 2)), np.linalg.cholesky(_spd())
    ours = sg.cholesky_solve(sg.tensor(b, dtype=sg.float32), sg.tensor(c, dtype=sg.float32))
    theirs = torch.cholesky_solve(torch.tensor(b).float(), torch.tensor(c).float())
    assert ours.dtype == sg.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


# ---- windows -------------------------------------------------------------------------------

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
TOLERANCES = [("float32", 1e-6), ("float64", 1e-12)]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("length", [0, 1, 2, 3, 10, 33])
def test_window_functions(name, periodic, length):
    for dtype, tol in TOLERANCES:
        ours = getattr(sg, name)(length, periodic, dtype=getattr(sg, dtype))
        theirs = getattr(torch, name)(length, periodic, dtype=getattr(torch, dtype))
        assert ours.dtype == getattr(sg, dtype) and tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=0, atol=tol)
    default = getattr(sg, name)(length)  # periodic=True, the default dtype
    expected = getattr(torch, name)(length)
    assert default.dtype == sg.float32
    np.testing.assert_allclose(default.numpy(), expected.numpy(), rtol=0, atol=1e-6)


def test_window_parameters_and_flags():
    for ours, theirs in [
        (sg.hamming_window(7, False, 0.5, 0.4), torch.hamming_window(7, False, 0.5, 0.4)),
        (sg.kaiser_window(8, True, 3.0), torch.kaiser_window(8, True, 3.0)),
        (
            sg.kaiser_window(9, False, 5.0, dtype=sg.float64),
            torch.kaiser_window(9, False, 5.0, dtype=torch.float64),
        ),
    ]:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=0, atol=1e-6)
    w = sg.hann_window(4, requires_grad=True)
    assert w.requires_grad and w.is_leaf and w.grad_fn is None
    (w * 2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2.0)


@pytest.mark.parametrize("name", WINDOWS)
def test_window_errors_are_torchs(name):
    _same_error(lambda T: getattr(T, name)(-1))
    _same_error(lambda T: getattr(T, name)(4, dtype=T.int64))
    with pytest.raises(TypeError, match="must be int, not float"):
        getattr(sg, name)(2.5)


SIGNAL = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]


@pytest.mark.parametrize("name", SIGNAL)
@pytest.mark.parametrize("sym", [True, False])
def test_signal_windows(name, sym):
    for length in (0, 1, 2, 5, 12):
        for dtype, tol in TOLERANCES:
            ours = getattr(sg.signal.windows, name)(length, sym=sym, dtype=getattr(sg, dtype))
            theirs = getattr(torch.signal.windows, name)(
                length, sym=sym, dtype=getattr(torch, dtype)
            )
            assert ours.dtype == getattr(sg, dtype) and tuple(ours.shape) == tuple(theirs.shape)
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=0, atol=tol)


def test_signal_windows_parameters_and_errors():
    w, tw = sg.signal.windows, torch.signal.windows
    pairs = [
        (w.gaussian(7, std=2.5), tw.gaussian(7, std=2.5)),
        (w.exponential(6, tau=2.0), tw.exponential(6, tau=2.0)),
        (w.exponential(6, center=1.0, sym=False), tw.exponential(6, center=1.0, sym=False)),
        (w.kaiser(6, beta=4.0), tw.kaiser(6, beta=4.0)),
        (w.general_cosine(6, a=[0.5, 0.3, 0.2]), tw.general_cosine(6, a=[0.5, 0.3, 0.2])),
        (w.general_hamming(6, alpha=0.6, sym=False), tw.general_hamming(6, alpha=0.6, sym=False)),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=0, atol=1e-6)
    for fn in [
        lambda T: T.signal.windows.hann(-1),
        lambda T: T.signal.windows.bartlett(3, dtype=T.int32),
        lambda T: T.signal.windows.exponential(5, center=1.0),
        lambda T: T.signal.windows.gaussian(4, std=0.0),
        lambda T: T.signal.windows.kaiser(3, beta=-1.0),
        lambda T: T.signal.windows.exponential(4, tau=0.0),
    ]:
        _same_error(fn)


# ---- view_as_real / view_as_complex ---------------------------------------------------------


def test_view_as_real_values_gradients_and_storage():
    z = R.normal(size=(3, 2)) + 1j * R.normal(size=(3, 2))
    for T in (sg, torch):
        a = T.tensor(z, requires_grad=True)
        v = T.view_as_real(a)
        assert tuple(v.shape) == (3, 2, 2) and v.dtype == T.float64
        assert v.grad_fn.name() == "ViewAsRealBackward0"
    w = R.normal(size=(3, 2, 2))
    grads = []
    for T in (sg, torch):
        a = T.tensor(z, requires_grad=True)
        (T.view_as_real(a) ** 3 * T.tensor(w)).sum().backward()
        grads.append(a.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    a = sg.tensor(z)
    v = sg.view_as_real(a)
    a.mul_(2)  # a view: it sees the change, and writing through it changes a
    np.testing.assert_allclose(v.numpy(), np.stack([2 * z.real, 2 * z.imag], -1))
    v[0, 0, 1] = 7.0
    assert a[0, 0].item().imag == 7.0
    assert sg.view_as_real(sg.tensor(1 + 2j)).tolist() == [1.0, 2.0]


def test_view_as_complex_values_gradients_and_storage():
    x = R.normal(size=(3, 4, 2))
    _agree(lambda T, b: T.view_as_real(T.view_as_complex(b) ** 2), [x])
    outs = []
    for T in (sg, torch):
        b = T.tensor(x, requires_grad=True)
        c = T.view_as_complex(b)
        assert c.grad_fn.name() == "ViewAsComplexBackward0" and c.dtype == T.complex128
        (c * c).abs().sum().backward()
        outs.append((c.detach().numpy(), b.grad.numpy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0])
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-12)
    assert sg.view_as_complex(sg.ones(2, 3, 2, dtype=sg.float32)).dtype == sg.complex64
    b = sg.tensor(x)
    c = sg.view_as_complex(b)
    b[0, 0, 1] = 5.0
    assert c[0, 0].item() == complex(x[0, 0, 0], 5.0)


def test_view_as_errors_are_torchs():
    _same_error(lambda T: T.view_as_real(T.ones(3)))
    _same_error(lambda T: T.view_as_complex(T.ones(3, 3)))
    _same_error(lambda T: T.view_as_complex(T.ones(4, 3)[:, :2]))
    _same_error(lambda T: T.view_as_complex(T.ones(3, 2).T.contiguous().T))
    _same_error(lambda T: T.view_as_complex(T.ones(3, 2, dtype=T.int64)))
    _same_error(lambda T: T.view_as_complex(T.ones(10)[1:9].view(4, 2)))


def test_view_as_real_changed_in_place_while_recording_is_refused():
    # torch changes the complex tensor through the view; sourcegrad does not differentiate
    # that, so it refuses (never a gradient that misses the change)
    a = sg.tensor([1 + 2j, 3 - 1j], requires_grad=True) * 1
    with pytest.raises(sg.SourcegradError, match="view_as_real"):
        sg.view_as_real(a).mul_(2)
    b = sg.tensor([1 + 2j, 3 - 1j], requires_grad=True) * 1
    v = sg.view_as_real(b)
    b.mul_(2)
    with pytest.raises(sg.SourcegradError):
        v.sum().backward()


# ---- torch's top-level spellings of nn.functional --------------------------------------------


def a(*shape):
    return R.normal(size=shape)


X4, X3 = a(2, 4, 6, 6), a(2, 4, 9)


def _stats(T, mean, var):
    return T.full((4,), mean, dtype=T.float64), T.full((4,), var, dtype=T.float64)


TOP_LEVEL = {
    "conv1d": (lambda T, x, w: T.conv1d(x, w, None, 2, 1), [X3, a(6, 4, 3)]),
    "conv2d": (lambda T, x, w, b: T.conv2d(x, w, b, 1, 1, 1, 2), [X4, a(6, 2, 3, 3), a(6)]),
    "conv3d": (lambda T, x, w: T.conv3d(x, w, None, 1, 1), [a(1, 2, 4, 4, 4), a(3, 2, 2, 2, 2)]),
    "conv_transpose1d": (lambda T, x, w: T.conv_transpose1d(x, w, None, 2), [X3, a(4, 3, 3)]),
    "conv_transpose2d": (
        lambda T, x, w: T.conv_transpose2d(x, w, None, 2, 1, 1),
        [X4, a(4, 3, 3, 3)],
    ),
    "max_pool1d": (lambda T, x: T.max_pool1d(x, 3), [X3]),
    "max_pool2d": (lambda T, x: T.max_pool2d(x, 2), [X4]),
    "max_pool2d_args": (lambda T, x: T.max_pool2d(x, 3, 2, 1, 1, True), [X4]),
    "avg_pool1d": (lambda T, x: T.avg_pool1d(x, 3, 2, 1), [X3]),
    "adaptive_avg_pool1d": (lambda T, x: T.adaptive_avg_pool1d(x, 4), [X3]),
    "adaptive_max_pool1d": (
        lambda T, x: T.adaptive_max_pool1d(x, 4)[0] * (T.adaptive_max_pool1d(x, 4)[1] + 1),
        [X3],
    ),
    "layer_norm": (
        lambda T, x, w, b: T.layer_norm(x, [6, 6], w, b, 1e-5, True),
        [X4, a(6, 6), a(6, 6)],
    ),
    "group_norm": (lambda T, x, w, b: T.group_norm(x, 2, w, b, 1e-5, True), [X4, a(4), a(4)]),
    "batch_norm": (
        lambda T, x, w, b: T.batch_norm(x, w, b, *_stats(T, 0.0, 1.0), True, 0.1, 1e-5, True),
        [X4, a(4), a(4)],
    ),
    "batch_norm_eval": (
        lambda T, x, w, b: T.batch_norm(x, w, b, *_stats(T, 0.3, 2.0), False, 0.1, 1e-5, True),
        [X4, a(4), a(4)],
    ),
    "instance_norm": (
        lambda T, x, w, b: T.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, True),
        [X4, a(4), a(4)],
    ),
    "rms_norm": (lambda T, x, w: T.rms_norm(x, [6], w, 1e-6), [X4, a(6)]),
    "embedding": (lambda T, w: T.embedding(w, T.tensor([[0, 2, 1], [2, 2, 0]]), 2), [a(4, 3)]),
    "embedding_no_padding": (lambda T, w: T.embedding(w, T.tensor([0, 2, 3, 0])), [a(4, 3)]),
    "pixel_shuffle": (lambda T, x: T.pixel_shuffle(x, 2), [X4]),
    "pixel_unshuffle": (lambda T, x: T.pixel_unshuffle(x, 2), [X4]),
    "channel_shuffle": (lambda T, x: T.channel_shuffle(x, 2), [X4]),
    "selu": (lambda T, x: T.selu(x), [X3]),
    "selu_": (lambda T, x: T.selu_(x * 1), [X3]),
    "celu": (lambda T, x: T.celu(x, 0.7), [X3]),
    "celu_": (lambda T, x: T.celu_(x * 1, 0.7), [X3]),
    "rrelu": (lambda T, x: T.rrelu(x, 0.1, 0.3), [X3]),
    "rrelu_": (lambda T, x: T.rrelu_(x * 1), [X3]),
    "prelu": (lambda T, x, w: T.prelu(x, w), [X4, a(4)]),
    "hardshrink": (lambda T, x: T.hardshrink(x, 0.3), [X3]),
    "threshold": (lambda T, x: T.threshold(x, 0.1, -2.0), [X3]),
    "threshold_": (lambda T, x: T.threshold_(x * 1, 0.1, -2.0), [X3]),
    "bilinear": (
        lambda T, x, y, w, b: T.bilinear(x, y, w, b),
        [a(3, 4), a(3, 5), a(2, 4, 5), a(2)],
    ),
    "dropout_eval": (lambda T, x: T.dropout(x, 0.3, False), [X3]),
    "binary_cross_entropy_with_logits": (
        lambda T, x, y: T.binary_cross_entropy_with_logits(
            x, y, None, T.tensor([1.5, 0.5, 2.0], dtype=T.float64), 2
        ),
        [a(4, 3), R.uniform(size=(4, 3))],
    ),
    "kl_div": (lambda T, x, y: T.kl_div(x, y, 1, log_target=True), [a(4, 3), a(4, 3)]),
    "kl_div_none": (lambda T, x, y: T.kl_div(x, y.abs(), 0), [a(4, 3), a(4, 3)]),
    "cosine_embedding_loss": (
        lambda T, x, y: T.cosine_embedding_loss(x, y, T.tensor([1, -1, 1, -1]), 0.1, 2),
        [a(4, 3), a(4, 3)],
    ),
    "hinge_embedding_loss": (
        lambda T, x: T.hinge_embedding_loss(x, T.tensor([[1, -1, 1]] * 4), 0.5, 0),
        [a(4, 3)],
    ),
    "margin_ranking_loss": (
        lambda T, x, y: T.margin_ranking_loss(x, y, T.tensor([1.0, -1, 1, -1]).double(), 0.2),
        [a(4), a(4)],
    ),
    "poisson_nll_loss": (
        lambda T, x, y: T.poisson_nll_loss(x, y.abs(), True, True, 1e-8, 1),
        [a(4, 3), a(4, 3)],
    ),
    "triplet_margin_loss": (
        lambda T, x, y, z: T.triplet_margin_loss(x, y, z, 1.0, 2.0, 1e-6, True, 1),
        [a(4, 3), a(4, 3), a(4, 3)],
    ),
    "ctc_loss": (
        lambda T, x: T.ctc_loss(
            x.log_softmax(2), T.tensor([[1, 2, 2], [1, 3, 0]]), [6, 5], [3, 2], 0, 1, False
        ),
        [a(6, 2, 4)],
    ),
}


@pytest.mark.parametrize("name", sorted(TOP_LEVEL))
def test_top_level_functional_spelling(name):
    fn, inputs = TOP_LEVEL[name]
    # (celu: torch's backward computes exp(x / alpha) to about 1e-8 only, F.celu's too)
    _agree(fn, inputs, rtol=1e-7 if name.startswith("celu") else 1e-9, node=False)


def test_top_level_spellings_are_nn_functionals():
    # one implementation: where the signatures agree, the very function
    import sourcegrad.nn.functional as F

    for name in ("conv2d", "conv_transpose2d", "pixel_shuffle", "prelu", "avg_pool1d", "bilinear"):
        assert getattr(sg, name) is getattr(F, name)


def test_top_level_dropout_in_training():
    sg.manual_seed(0)
    x = sg.ones(2000, dtype=sg.float64, requires_grad=True)
    y = sg.dropout(x, 0.25, True)
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.75)
    assert 0.65 < kept.mean() < 0.85
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.75)
    z = sg.ones(100, dtype=sg.float64)
    assert sg.dropout_(z, 0.5, True) is z and set(np.unique(z.numpy())) <= {0.0, 2.0}


def test_top_level_loss_reduction_is_torchs_enum():
    # torch's Python bindings of the top-level losses give the unreduced loss by default
    x, t = [0.5, -0.2, 0.9], [1.0, -1.0, 1.0]
    for T in (sg, torch):
        losses = [
            T.margin_ranking_loss(T.tensor(x), T.tensor(x[::-1]), T.tensor(t)),
            T.hinge_embedding_loss(T.tensor(x), T.tensor(t)),
            T.kl_div(T.tensor(x), T.tensor(x).abs()),
            T.binary_cross_entropy_with_logits(T.tensor(x), T.tensor(x).abs()),
        ]
        assert [tuple(loss.shape) for loss in losses] == [(3,)] * 4
    x = sg.tensor([0.5, -0.2])
    with pytest.raises(TypeError, match="must be an int"):
        sg.kl_div(x, x, "mean")
    with pytest.raises(ValueError):
        sg.hinge_embedding_loss(x, sg.tensor([1, -1]), 1.0, 3)


# ---- stft / istft --------------------------------------------------------------------------

STFT_CASES = [
    dict(n_fft=16, window="hann"),
    dict(n_fft=16, hop_length=3, win_length=12, window="hann12"),
    dict(n_fft=16, center=False, normalized=True, window="hann"),
    dict(n_fft=15, hop_length=5, onesided=False),
    dict(n_fft=16, pad_mode="constant", window="hann"),
]


def _window_of(T, kwargs):
    kwargs = dict(kwargs)
    name = kwargs.pop("window", None)
    if name is not None:
        kwargs["window"] = T.hann_window(12 if name == "hann12" else 16, dtype=T.float64)
    return kwargs


@pytest.mark.parametrize("kwargs", STFT_CASES, ids=range(len(STFT_CASES)))
@pytest.mark.parametrize("batch", [(), (2,)])
def test_stft_values_and_gradients(kwargs, batch):
    x = R.normal(size=batch + (40,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (no window: torch's warning)
        _agree(
            lambda T, s: T.view_as_real(T.stft(s, return_complex=True, **_window_of(T, kwargs))),
            [x],
            node=False,
        )


ISTFT_CASES = [
    dict(n_fft=16, window="hann"),
    dict(n_fft=16, hop_length=4, win_length=12, window="hann12"),
    dict(n_fft=16, window="hann", length=37),
    dict(n_fft=16, window="hann", length=45),
    dict(n_fft=16, center=False),
    dict(n_fft=16, window="hann", normalized=True),
    dict(n_fft=16, window="hann", onesided=False),
    dict(n_fft=16, window="hann", onesided=False, return_complex=True),
]


@pytest.mark.parametrize("kwargs", ISTFT_CASES, ids=range(len(ISTFT_CASES)))
def test_istft_values_and_gradients(kwargs):
    x = R.normal(size=(2, 40))
    onesided = kwargs.get("onesided")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        k = _window_of(torch, kwargs)
        spectrum = torch.stft(
            torch.tensor(x),
            16,
            k.get("hop_length"),
            k.get("win_length"),
            k.get("window"),
            k.get("center", True),
            normalized=k.get("normalized", False),
            onesided=onesided,
            return_complex=True,
        )
        pairs = torch.view_as_real(spectrum).numpy()

        def fn(T, s):
            y = T.istft(T.view_as_complex(s), **_window_of(T, kwargs))
            return T.view_as_real(y) if y.is_complex() else y

        _agree(fn, [pairs], node=False)


def test_stft_istft_round_trip_in_float32_and_second_order():
    x = R.normal(size=64)
    for T in (sg, torch):
        w = T.hann_window(16)
        s = T.tensor(x, dtype=T.float32)
        y = T.istft(T.stft(s, 16, window=w, return_complex=True), 16, window=w, length=64)
        assert y.dtype == T.float32
        np.testing.assert_allclose(y.numpy(), x, rtol=1e-5, atol=1e-5)
    grads = []
    for T in (sg, torch):
        s = T.tensor(x, requires_grad=True)
        spec = T.stft(s, 16, window=T.hann_window(16, dtype=T.float64), return_complex=True)
        (g,) = T.autograd.grad((spec.abs() ** 2).sum(), s, create_graph=True)
        (h,) = T.autograd.grad((g * g).sum(), s)
        grads.append((g.detach().numpy(), h.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-9, atol=1e-9)


def test_stft_argument_errors():
    for fn, match in [
        (lambda T: T.stft(T.ones(40), 16), "return_complex parameter be given"),
        (lambda T: T.stft(T.ones(40), 16, window=T.ones(5), return_complex=True), "window"),
        (lambda T: T.stft(T.ones(40), 16, hop_length=0, return_complex=True), "hop_length"),
        (lambda T: T.istft(T.ones(9, 5), 16), "complex-valued input"),
        (lambda T: T.istft(T.ones(8, 5, dtype=T.complex64), 16), r"n_fft / 2 \+ 1"),
    ]:
        for T in (sg, torch):
            with pytest.raises(RuntimeError, match=match):
                fn(T)


def test_forward_mode_of_the_upper_factor_and_the_complex_views():
    x, t = np.arange(6.0).reshape(3, 2), np.full((3, 2), 0.5)
    a, ta = _spd(), R.normal(size=(3, 3))
    ta = ta + ta.T
    tangents = []
    for T in (sg, torch):
        fwAD = T.autograd.forward_ad
        with fwAD.dual_level():
            dual = fwAD.make_dual(T.tensor(x), T.tensor(t))
            r = T.view_as_real(T.view_as_complex(dual) ** 2)
            u = T.linalg.cholesky(fwAD.make_dual(T.tensor(a), T.tensor(ta)), upper=True)
            tangents.append(
                [fwAD.unpack_dual(r).tangent.numpy(), fwAD.unpack_dual(u).tangent.numpy()]
            )
    for ours, theirs in zip(*tangents):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_stft_and_istft_methods():
    x = R.normal(size=(2, 30))
    outs = []
    for T in (sg, torch):
        w = T.hann_window(8, dtype=T.float64)
        s = T.tensor(x).stft(8, 2, window=w, return_complex=True)
        outs.append((T.view_as_real(s).numpy(), s.istft(8, 2, window=w, length=30).numpy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(outs[0][1], x, rtol=1e-10, atol=1e-12)
