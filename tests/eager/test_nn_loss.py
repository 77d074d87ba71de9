"""Loss functions and modules, torch.cross/linalg.cross/cdist against torch (float64).

Values, gradients wrt every input that requires grad, the output's grad_fn name,
module reprs and state_dict keys, and torch's errors.
"""

import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

R = np.random.default_rng(5)
X = R.standard_normal((5, 4))
Y = R.standard_normal((5, 4))
P = R.uniform(0.01, 0.99, (5, 4))
P[0, 0], P[1, 1] = 0.0, 1.0  # exact 0 and 1 targets (the clamped logs' edge)
T = np.array([0, 3, 1, -100, 2])  # one ignored target
PROBS = R.dirichlet(np.ones(4), 5)
W = R.uniform(0.5, 2.0, 4)
SIGNS = np.array([1, -1, 1, -1, -1])


def run(fn, arrays, grads):
    """fn(lib, tensors) in both libraries: the outputs, input gradients and grad_fn names."""
    results = []
    for lib in (torch, sg):
        ts = [lib.tensor(a, requires_grad=bool(g)) for a, g in zip(arrays, grads)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = fn(lib, ts)
        weight = lib.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)))
        (y * weight).sum().backward()
        results.append(
            (y.detach().numpy(), [t.grad.numpy() for t in ts if t.requires_grad], y.grad_fn.name())
        )
    return results


def check(fn, arrays, grads, same_name=True):
    (yt, gt, nt), (ys, gs, ns) = run(fn, arrays, grads)
    np.testing.assert_allclose(ys, yt, rtol=1e-10, atol=1e-12)
    for a, b in zip(gs, gt):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    if same_name:
        assert ns == nt


def f(lib):
    return lib.nn.functional


REDUCTIONS = ["none", "mean", "sum"]
CASES = {
    "mse": (lambda L, a, r: f(L).mse_loss(a[0], a[1], reduction=r), [X, Y], [1, 1]),
    "l1": (lambda L, a, r: f(L).l1_loss(a[0], a[1], reduction=r), [X, Y], [1, 1]),
    "smooth_l1": (
        lambda L, a, r: f(L).smooth_l1_loss(a[0], a[1], reduction=r, beta=0.7),
        [X, Y],
        [1, 1],
    ),
    "smooth_l1 beta=0": (
        lambda L, a, r: f(L).smooth_l1_loss(a[0], a[1], reduction=r, beta=0.0),
        [X, Y],
        [1, 0],
    ),
    "huber": (lambda L, a, r: f(L).huber_loss(a[0], a[1], reduction=r, delta=0.6), [X, Y], [1, 1]),
    "bce weight": (
        lambda L, a, r: f(L).binary_cross_entropy(
            a[0].sigmoid(), a[1], weight=L.tensor(W), reduction=r
        ),
        [X, P],
        [1, 1],
    ),
    "bce at 0 and 1": (
        lambda L, a, r: f(L).binary_cross_entropy(a[1], a[0], reduction=r),
        [P, P.copy()],
        [0, 1],
    ),
    "bce logits": (
        lambda L, a, r: f(L).binary_cross_entropy_with_logits(a[0] * 30, a[1], reduction=r),
        [X, P],
        [1, 1],
    ),
    "bce logits weights": (
        lambda L, a, r: f(L).binary_cross_entropy_with_logits(
            a[0], a[1], weight=L.tensor(W), pos_weight=L.tensor(W[::-1].copy()), reduction=r
        ),
        [X, P],
        [1, 1],
    ),
    "nll weight": (
        lambda L, a, r: f(L).nll_loss(a[0], L.tensor(T), weight=L.tensor(W), reduction=r),
        [X],
        [1],
    ),
    "cross_entropy": (lambda L, a, r: f(L).cross_entropy(a[0], L.tensor(T), reduction=r), [X], [1]),
    "cross_entropy smoothing weight": (
        lambda L, a, r: f(L).cross_entropy(
            a[0], L.tensor(T), weight=L.tensor(W), label_smoothing=0.2, reduction=r
        ),
        [X],
        [1],
    ),
    "cross_entropy ignore_index": (
        lambda L, a, r: f(L).cross_entropy(
            a[0], L.tensor(np.where(T < 0, 3, T)), ignore_index=3, label_smoothing=0.1, reduction=r
        ),
        [X],
        [1],
    ),
    "kl_div": (lambda L, a, r: f(L).kl_div(a[0], a[1], reduction=r), [X, PROBS], [1, 1]),
    "kl_div log_target": (
        lambda L, a, r: f(L).kl_div(a[0], a[1], reduction=r, log_target=True),
        [X, Y],
        [1, 1],
    ),
    "cosine_embedding": (
        lambda L, a, r: f(L).cosine_embedding_loss(
            a[0], a[1], L.tensor(SIGNS), margin=0.1, reduction=r
        ),
        [X, Y],
        [1, 1],
    ),
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", list(CASES))
def test_loss_matches_torch(name, reduction):
    fn, arrays, grads = CASES[name]
    check(lambda L, a: fn(L, a, reduction), arrays, grads)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probability_targets(reduction):
    # torch divides a mean by numel / C with a Scalar (DivBackward1); ours is DivBackward0
    check(
        lambda L, a: f(L).cross_entropy(
            a[0], a[1], weight=L.tensor(W), label_smoothing=0.1, reduction=reduction
        ),
        [X, PROBS],
        [1, 1],
        same_name=reduction != "mean",
    )


@pytest.mark.parametrize(
    "shape", [(2, 4, 3), (2, 4, 3, 2), (2, 4, 3, 1, 2)], ids=["3d", "4d", "5d"]
)
def test_spatial_class_targets(shape):
    """(N, C, d1, ...) inputs: viewed as (N, C, H, W) for NllLoss2DBackward0, as torch."""
    x = R.standard_normal(shape)
    t = R.integers(0, 4, (shape[0],) + shape[2:])
    t.reshape(-1)[0] = -100
    for r in REDUCTIONS:
        check(
            lambda L, a, r=r: f(L).cross_entropy(
                a[0], L.tensor(t), weight=L.tensor(W), label_smoothing=0.3, reduction=r
            ),
            [x],
            [1],
        )
        check(lambda L, a, r=r: f(L).nll_loss(a[0], L.tensor(t), reduction=r), [x], [1])
    check(
        lambda L, a: f(L).cross_entropy(a[0], a[0].detach().flip(0).softmax(1)),
        [x],
        [1],
        same_name=False,
    )  # torch's mean divides by a Scalar: DivBackward1


def test_unbatched_class_target():
    check(lambda L, a: f(L).cross_entropy(a[0][0], L.tensor(2), label_smoothing=0.3), [X], [1])
    check(lambda L, a: f(L).nll_loss(a[0][1], L.tensor(1)), [X], [1])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_weighted_regression_losses(name, reduction):
    # torch divides a weighted mse/l1 mean by the weights' sum, a weighted huber mean by numel
    weight = R.uniform(0.1, 2.0, X.shape)
    check(
        lambda L, a: getattr(f(L), name)(a[0], a[1], reduction=reduction, weight=L.tensor(weight)),
        [X, Y],
        [1, 1],
    )
    for lib in (torch, sg):
        with pytest.raises(ValueError, match="Weights and input must have the same size"):
            getattr(f(lib), name)(lib.tensor(X), lib.tensor(Y), weight=lib.ones(4))


def test_kl_div_batchmean_and_legacy_flags():
    check(lambda L, a: f(L).kl_div(a[0], a[1], reduction="batchmean"), [X, PROBS], [1, 0])
    check(lambda L, a: f(L).mse_loss(a[0], a[1], size_average=False), [X, Y], [1, 1])
    check(lambda L, a: f(L).l1_loss(a[0], a[1], reduce=False), [X, Y], [1, 1])


def test_broadcast_target_warns_as_torch():
    for lib in (torch, sg):
        with pytest.warns(UserWarning, match="different to the input size"):
            f(lib).mse_loss(lib.tensor(X), lib.tensor(Y[0]))
    check(lambda L, a: f(L).huber_loss(a[0], a[1]), [X, Y[:1]], [1, 1])


def test_second_derivatives_match_torch():
    for fn in (
        lambda L, a: f(L).binary_cross_entropy_with_logits(a[0], a[1], pos_weight=L.tensor(W)),
        lambda L, a: f(L).binary_cross_entropy(a[0].sigmoid(), a[1]),
        lambda L, a: f(L).smooth_l1_loss(a[0] * 2, a[1], beta=0.5),
        lambda L, a: f(L).huber_loss(a[0], a[1], delta=0.3),
    ):
        outs = []
        for lib in (torch, sg):
            x, y = lib.tensor(X, requires_grad=True), lib.tensor(P, requires_grad=True)
            gx, gy = lib.autograd.grad(fn(lib, [x, y]), (x, y), create_graph=True)
            ((gx * gx).sum() + (gy * gx).sum()).backward()
            outs.append((x.grad.numpy(), y.grad.numpy()))
        for a, b in zip(*outs):
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


ERRORS = [
    (
        lambda L: f(L).mse_loss(L.zeros(3), L.zeros(3), reduction="avg"),
        ValueError,
        "avg is not a valid value for reduction",
    ),
    (
        lambda L: f(L).nll_loss(L.zeros(3, 4), L.tensor([0, 1])),
        ValueError,
        r"Expected input batch_size \(3\) to match target batch_size \(2\)",
    ),
    (
        lambda L: f(L).nll_loss(L.zeros(3, 4), L.tensor([0, 1, 2]), weight=L.ones(3)),
        RuntimeError,
        "weight tensor should be defined either for all 4 classes",
    ),
    (
        lambda L: f(L).cross_entropy(L.zeros(3, 4), L.tensor([0, -1, 2])),
        IndexError,
        "Target -1 is out of bounds.",
    ),
    (
        lambda L: f(L).cross_entropy(L.zeros(3, 4), L.tensor([0, 4, 2])),
        IndexError,
        "Target 4 is out of bounds.",
    ),
    (lambda L: f(L).nll_loss(L.zeros(3, 4), L.tensor([0.0, 1, 2])), RuntimeError, "Long"),
    (
        lambda L: f(L).nll_loss(L.zeros(2, 3, 4), L.zeros(2, 5, dtype=L.int64)),
        RuntimeError,
        r"Expected target size \[2, 4\], got \[2, 5\]",
    ),
    (
        lambda L: f(L).nll_loss(L.zeros(2, 3, 4), L.zeros(3, 4, dtype=L.int64)),
        ValueError,
        r"Expected input batch_size \(2\) to match target batch_size \(3\)",
    ),
    (
        lambda L: f(L).nll_loss(L.zeros(2, 3, 4, 5), L.full((2, 4, 5), 7)),
        IndexError,
        "Target 7 is out of bounds.",
    ),
    (
        lambda L: f(L).binary_cross_entropy(L.tensor([0.5, 1.5]), L.zeros(2)),
        RuntimeError,
        "all elements of input should be between 0 and 1",
    ),
    # (these gave a number: a target outside [0, 1] or nan, one of another dtype, an
    # integer target with logits)
    (
        lambda L: f(L).binary_cross_entropy(L.tensor([0.2, 0.7]), L.tensor([0.0, 1.5])),
        RuntimeError,
        "all elements of target should be between 0 and 1",
    ),
    (
        lambda L: f(L).binary_cross_entropy(L.tensor([0.2]), L.tensor([float("nan")])),
        RuntimeError,
        "all elements of target should be between 0 and 1",
    ),
    (
        lambda L: f(L).binary_cross_entropy(L.tensor([float("nan")]), L.tensor([0.5])),
        RuntimeError,
        "all elements of input should be between 0 and 1",
    ),
    (
        lambda L: f(L).binary_cross_entropy(L.tensor([1.2]), L.tensor([0.5], dtype=L.float64)),
        RuntimeError,
        "Found dtype Double but expected Float",
    ),
    (
        lambda L: f(L).binary_cross_entropy(L.tensor([0.2, 0.7]), L.tensor([0, 1])),
        RuntimeError,
        "Found dtype Long but expected Float",
    ),
    (
        lambda L: f(L).binary_cross_entropy_with_logits(L.tensor([0.2, 0.7]), L.tensor([0, 1])),
        RuntimeError,
        "result type Float can't be cast to the desired output type Long",
    ),
    (
        lambda L: f(L).binary_cross_entropy_with_logits(L.tensor([0.2]), L.tensor([True])),
        RuntimeError,
        "Subtraction, the `-` operator, with two bool tensors is not supported",
    ),
    (
        lambda L: f(L).binary_cross_entropy(L.tensor([0.5, 0.5]), L.zeros(1, 2)),
        ValueError,
        "is deprecated. Please ensure they have the same size",
    ),
    (
        lambda L: f(L).binary_cross_entropy_with_logits(L.zeros(3, 4), L.zeros(4)),
        ValueError,
        "must be the same as input size",
    ),
    (
        lambda L: f(L).binary_cross_entropy_with_logits(
            L.zeros(2), L.zeros(2), pos_weight=L.ones(2, requires_grad=True)
        ),
        RuntimeError,
        "not differentiable with respect to argument 'pos_weight'",
    ),
    (
        lambda L: f(L).binary_cross_entropy(
            L.full((2,), 0.5), L.zeros(2), weight=L.ones(2, requires_grad=True)
        ),
        RuntimeError,
        "not differentiable with respect to argument 'weight'",
    ),
    (
        lambda L: f(L).smooth_l1_loss(L.zeros(2), L.zeros(2), beta=-1.0),
        RuntimeError,
        "does not support negative values for beta",
    ),
    (
        lambda L: f(L).huber_loss(L.zeros(2), L.zeros(2), delta=0.0),
        RuntimeError,
        "does not support non-positive values for delta",
    ),
    (lambda L: L.linalg.cross(L.zeros(2, 4), L.zeros(2, 4)), RuntimeError, "must have length 3"),
    (
        lambda L: L.cdist(L.zeros(3), L.zeros(2, 3)),
        RuntimeError,
        "cdist only supports at least 2D tensors, X1 got: 1D",
    ),
    (
        lambda L: L.cdist(L.ones(2, 3, dtype=L.int64), L.ones(2, 3)),
        RuntimeError,
        "cdist only supports floating-point dtypes, X1 got: Long",
    ),
    (
        lambda L: L.cdist(L.ones(2, 3), L.ones(2, 3), p=-1.0),
        RuntimeError,
        "cdist only supports non-negative p values",
    ),
    (
        lambda L: L.cdist(L.zeros(2, 3), L.zeros(2, 4)),
        RuntimeError,
        "X1 and X2 must have the same number of columns",
    ),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    fn, kind, message = ERRORS[i]
    for lib in (torch, sg):
        with pytest.raises(kind, match=message):
            fn(lib)


MODULES = [
    ("L1Loss", {}, 2),
    ("MSELoss", {"reduction": "sum"}, 2),
    ("SmoothL1Loss", {"beta": 0.5}, 2),
    ("HuberLoss", {"delta": 0.5}, 2),
    ("NLLLoss", {"weight": W}, 1),
    ("CrossEntropyLoss", {"weight": W, "label_smoothing": 0.1}, 1),
    ("BCELoss", {"weight": W}, 2),
    ("BCEWithLogitsLoss", {"pos_weight": W}, 2),
    ("KLDivLoss", {"reduction": "batchmean"}, 2),
    ("CosineEmbeddingLoss", {"margin": 0.2}, 3),
]


@pytest.mark.parametrize("name,kwargs,n_in", MODULES, ids=[m[0] for m in MODULES])
def test_loss_modules_match_torch(name, kwargs, n_in):
    def make(lib):
        return getattr(lib.nn, name)(
            **{k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        )

    mt, ms = make(torch), make(sg)
    assert repr(ms) == repr(mt)
    assert list(ms.state_dict()) == list(mt.state_dict())
    assert ms.reduction == mt.reduction
    inputs = {
        1: ([X], lambda L: [L.tensor(T)]),
        2: ([X, P], lambda L: []),
        3: ([X, Y], lambda L: [L.tensor(SIGNS)]),
    }[n_in]
    arrays, extra = inputs
    squash = name == "BCELoss"
    check(
        lambda L, a: (mt if L is torch else ms)(
            *([a[0].sigmoid()] + a[1:] if squash else a), *extra(L)
        ),
        arrays,
        [1] * len(arrays),
    )


def test_legacy_module_flags_warn_and_fold():
    for lib in (torch, sg):
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            m = lib.nn.MSELoss(size_average=False)
        assert m.reduction == "sum"


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, float("inf"), 0.0])
def test_cdist_matches_torch(p):
    x1, x2 = R.standard_normal((2, 5, 3)), R.standard_normal((1, 4, 3))
    x2[0, 0] = x1[0, 0]  # a zero distance
    check(lambda L, a: L.cdist(a[0], a[1], p=p), [x1, x2], [1, 1])


def test_cross_matches_torch():
    a, b = R.standard_normal((4, 3)), R.standard_normal((1, 3))
    check(lambda L, t: L.linalg.cross(t[0], t[1]), [a, b], [1, 1])
    check(lambda L, t: L.cross(t[0].t(), t[1].t().expand(3, 4), dim=0), [a, b], [1, 1])
    check(lambda L, t: t[0].cross(t[1].expand(4, 3), dim=1), [a, b], [1, 1])
    for lib in (torch, sg):
        with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
            out = lib.cross(lib.tensor(a.T), lib.tensor(b.T).expand(3, 4))
        assert out.shape == (3, 4)


def test_cosine_similarity_and_normalize_match_torch():
    # a row whose norm is below eps: torch clamps the norm without grad (the gradient is
    # the unclamped norm's), which a differentiable clamp_min would zero
    a = np.array([[1e-9, 2e-9, 0.0], [1.0, 2.0, 3.0]])
    b = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    check(lambda L, t: f(L).cosine_similarity(t[0], t[1], dim=1), [a, b], [1, 1])
    check(lambda L, t: f(L).cosine_similarity(t[0][1], t[1][:1], dim=-1), [a, b], [1, 1])
    check(lambda L, t: f(L).normalize(t[0], dim=1), [a, X[:2, :3]], [1, 0])
    check(lambda L, t: f(L).normalize(t[0], p=1.0, dim=0), [X], [1])


# --- ranking, margin and likelihood losses: values, gradients and second derivatives ---------

_R = np.random.default_rng(11)


def _normal(*shape):
    return _R.normal(size=shape)


def _signs(*shape):
    return _R.choice([-1.0, 1.0], size=shape)


_MORE_LOSSES = [
    (
        "margin_ranking_loss",
        lambda T, a, b, y: T.nn.functional.margin_ranking_loss(a, b, y, margin=0.3),
        [_normal(6), _normal(6), _signs(6)],
        (2,),
    ),
    (
        "MarginRankingLoss",
        lambda T, a, b, y: T.nn.MarginRankingLoss(0.1, reduction="none")(a, b, y),
        [_normal(6), _normal(6), _signs(6)],
        (2,),
    ),
    (
        "hinge_embedding_loss",
        lambda T, a, y: T.nn.functional.hinge_embedding_loss(a, y, margin=0.5),
        [_normal(3, 4), _signs(3, 4)],
        (1,),
    ),
    (
        "HingeEmbeddingLoss",
        lambda T, a, y: T.nn.HingeEmbeddingLoss(reduction="sum")(a, y),
        [_normal(3, 4), _signs(3, 4)],
        (1,),
    ),
    (
        "soft_margin_loss",
        lambda T, a, y: T.nn.functional.soft_margin_loss(a, y),
        [_normal(3, 4), _signs(3, 4)],
        (1,),
    ),
    ("SoftMarginLoss", lambda T, a, y: T.nn.SoftMarginLoss()(a, y), [_normal(5), _signs(5)], (1,)),
    (
        "poisson_nll_loss",
        lambda T, a, y: T.nn.functional.poisson_nll_loss(a, y),
        [_normal(3, 4), np.abs(_normal(3, 4)) * 3],
        (1,),
    ),
    (
        "PoissonNLLLoss, full, not log_input",
        lambda T, a, y: T.nn.PoissonNLLLoss(log_input=False, full=True)(a, y),
        [np.abs(_normal(3, 4)) + 0.5, np.abs(_normal(3, 4)) * 3],
        (1,),
    ),
    (
        "gaussian_nll_loss",
        lambda T, a, y, v: T.nn.functional.gaussian_nll_loss(a, y, v),
        [_normal(3, 4), _normal(3, 4), np.abs(_normal(3, 4)) + 0.1],
        (),
    ),
    (
        "GaussianNLLLoss, a variance per row, full",
        lambda T, a, y, v: T.nn.GaussianNLLLoss(full=True)(a, y, v),
        [_normal(3, 4), _normal(3, 4), np.abs(_normal(3)) + 0.1],
        (),
    ),
    (
        "gaussian_nll_loss, variances under eps",
        lambda T, a, y, v: T.nn.functional.gaussian_nll_loss(a, y, v, reduction="none"),
        [_normal(3, 4), _normal(3, 4), np.abs(_normal(3, 1)) * 1e-8],
        (),
    ),
    (
        "triplet_margin_loss",
        lambda T, a, p, n: T.nn.functional.triplet_margin_loss(a, p, n),
        [_normal(4, 3), _normal(4, 3), _normal(4, 3)],
        (),
    ),
    (
        "TripletMarginLoss, p=1, swap",
        lambda T, a, p, n: T.nn.TripletMarginLoss(margin=2.0, p=1, swap=True)(a, p, n),
        [_normal(4, 3), _normal(4, 3), _normal(4, 3)],
        (),
    ),
]


def _loss_numbers(lib, make, arrays, constant):
    tensors = [lib.tensor(a, requires_grad=k not in constant) for k, a in enumerate(arrays)]
    out = make(lib, *tensors)
    leaves = [t for k, t in enumerate(tensors) if k not in constant]
    grads = lib.autograd.grad(out.sum(), leaves, create_graph=True)
    second = sum((g**2).sum() for g in grads)
    seconds = (
        lib.autograd.grad(second, leaves, allow_unused=True)
        if second.requires_grad
        else [None] * len(leaves)
    )
    numbers = [out.detach().numpy()] + [g.detach().numpy() for g in grads]
    return numbers + [
        np.zeros(tuple(t.shape)) if h is None or _is_zero_tensor(h) else h.numpy()
        for h, t in zip(seconds, leaves)
    ]


def _is_zero_tensor(t):
    """torch's ZeroTensor (the second derivative of a piecewise-linear op), not convertible."""
    return getattr(t, "_is_zerotensor", lambda: False)()


@pytest.mark.parametrize(
    "make, arrays, constant", [c[1:] for c in _MORE_LOSSES], ids=[c[0] for c in _MORE_LOSSES]
)
def test_ranking_margin_and_likelihood_losses_match_torch(make, arrays, constant):
    # (torch's second derivative of a piecewise-linear loss is a ZeroTensor: zeros here)
    theirs = _loss_numbers(torch, make, arrays, constant)
    ours = _loss_numbers(sg, make, arrays, constant)
    for a, b in zip(theirs, ours):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


def test_gaussian_nll_loss_refuses_what_torch_refuses():
    for lib in (torch, sg):
        x = lib.tensor(_normal(3, 4))
        with pytest.raises(ValueError, match="var is of incorrect size"):
            lib.nn.functional.gaussian_nll_loss(x, x, lib.ones(2))
        with pytest.raises(ValueError, match="var has negative entry"):
            lib.nn.functional.gaussian_nll_loss(x, x, -lib.ones(3, 4))


@pytest.mark.parametrize(
    "dtype, logits",
    [
        ("float32", [-110.0, -100.0, -90.0, -88.73, -88.72, -87.0, -20.0, 0.0, 16.0, 90.0]),
        ("float64", [-800.0, -746.0, -709.8, -709.7, -700.0, -40.0, 0.0, 36.0, 800.0]),
    ],
)
def test_bce_of_a_saturated_sigmoid_is_torchs(dtype, logits):
    """torch's sigmoid is 1 / (1 + exp(-x)): 0 where exp(-x) overflows (below -88.72 in
    float32), where ours gave the subnormal e / (1 + e); a BCE against target 1 then took
    log(8.2e-40) = -90 at -90 where torch clamps log(0) to -100 (a loss of 310.69 where
    torch gives 320.69 in the case that found it)."""
    target = np.resize([1.0, 0.0, 1.0], len(logits))
    out = {}
    for lib in (torch, sg):
        z = lib.tensor(np.array(logits, dtype=dtype), requires_grad=True)
        s = lib.sigmoid(z)
        loss = lib.nn.functional.binary_cross_entropy(
            s, lib.tensor(target.astype(dtype)), reduction="sum"
        )
        loss.backward()
        out[lib.__name__] = [t.detach().numpy() for t in (s, loss, z.grad)]
    for ours, theirs in zip(out["sourcegrad"], out["torch"]):
        np.testing.assert_array_equal(ours == 0, theirs == 0)
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=0)
