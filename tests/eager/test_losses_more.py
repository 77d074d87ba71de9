"""multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss and
triplet_margin_with_distance_loss (functions and modules) against torch: values and
input gradients in float64 for every reduction and option, and torch's errors."""

import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
X = RNG.normal(size=(5, 4))
CLASSES = np.array([0, 3, 1, 1, 2])
LABELS = np.array([[0, 2, -1, 1], [3, -1, 0, 0], [1, 2, 3, 0], [0, 0, -1, 3], [-1, 1, 2, 3]])
MULTI_HOT = (RNG.random(size=(5, 4)) > 0.5).astype(np.float64)
WEIGHT = RNG.random(size=4) + 0.5
REDUCTIONS = ["none", "mean", "sum"]


def _value_and_grad(lib, fn, inputs, **kwargs):
    """fn's value and the gradient of sum(value * a fixed cotangent) w.r.t. the float inputs."""
    leaves = [lib.tensor(x, requires_grad=True) for x in inputs]
    out = fn(lib)(*leaves, **kwargs)
    cotangent = lib.tensor(np.linspace(0.5, 1.5, max(out.numel(), 1)).reshape(tuple(out.shape)))
    (out * cotangent).sum().backward()
    return out.detach().numpy(), [leaf.grad.numpy() for leaf in leaves]


def _assert_like_torch(fn, inputs, **kwargs):
    ours, ours_grads = _value_and_grad(sg, fn, inputs, **kwargs)
    theirs, their_grads = _value_and_grad(torch, fn, inputs, **kwargs)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)
    for a, b in zip(ours_grads, their_grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def _with(target, weight=None, **options):
    """A loss of the float inputs, with a fixed target (and weight) made in each library."""

    def fn(lib):
        def loss(*inputs, **kwargs):
            extra = {} if weight is None else {"weight": lib.tensor(weight)}
            return options["f"](lib)(*inputs, lib.tensor(target), **extra, **kwargs)

        return loss

    return fn


def _functional(name):
    return lambda lib: getattr(lib.nn.functional, name)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "options", [{}, dict(p=2), dict(margin=0.3), dict(p=2, margin=2.0)], ids=str
)
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss_matches_torch(reduction, options, weighted):
    fn = _with(CLASSES, WEIGHT if weighted else None, f=_functional("multi_margin_loss"))
    _assert_like_torch(fn, [X], reduction=reduction, **options)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("target", [np.array(2), np.array([2])], ids=["0-d", "1-d"])
def test_multi_margin_loss_of_one_sample_matches_torch(reduction, target):
    fn = _with(target, f=_functional("multi_margin_loss"))
    _assert_like_torch(fn, [X[0]], reduction=reduction, p=2)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_matches_torch(reduction):
    """Rows end at their first -1; duplicated labels count twice, as in torch."""
    fn = _with(LABELS, f=_functional("multilabel_margin_loss"))
    _assert_like_torch(fn, [X], reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_of_one_sample_matches_torch(reduction):
    fn = _with(LABELS[2], f=_functional("multilabel_margin_loss"))
    _assert_like_torch(fn, [X[2]], reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin_loss_matches_torch(reduction, weighted):
    fn = _with(
        MULTI_HOT, WEIGHT if weighted else None, f=_functional("multilabel_soft_margin_loss")
    )
    _assert_like_torch(fn, [X], reduction=reduction)
    _assert_like_torch(
        _with(MULTI_HOT[1], f=_functional("multilabel_soft_margin_loss")),
        [X[1]],
        reduction=reduction,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("distance", ["default", "cosine", "l1"])
def test_triplet_margin_with_distance_loss_matches_torch(reduction, swap, distance):
    anchor, positive, negative = (RNG.normal(size=(6, 3)) for _ in range(3))

    def fn(lib):
        chosen = {
            "default": None,
            "cosine": lambda a, b: 1.0 - lib.nn.functional.cosine_similarity(a, b),
            "l1": lambda a, b: (a - b).abs().sum(-1),
        }[distance]

        def loss(a, p, n, **kwargs):
            return lib.nn.functional.triplet_margin_with_distance_loss(
                a, p, n, distance_function=chosen, margin=1.5, swap=swap, **kwargs
            )

        return loss

    _assert_like_torch(fn, [anchor, positive, negative], reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_loss_modules_match_torch(reduction):
    def module(name, **kwargs):
        return lambda lib, **extra: getattr(lib.nn, name)(reduction=reduction, **kwargs, **extra)

    cases = [
        (module("MultiMarginLoss", p=2, margin=0.5), [X], CLASSES, WEIGHT),
        (module("MultiLabelMarginLoss"), [X], LABELS, None),
        (module("MultiLabelSoftMarginLoss"), [X], MULTI_HOT, WEIGHT),
    ]
    for make, inputs, target, weight in cases:

        def fn(lib, make=make, target=target, weight=weight):
            extra = {} if weight is None else {"weight": lib.tensor(weight)}
            return lambda x: make(lib, **extra)(x, lib.tensor(target))

        _assert_like_torch(fn, inputs)
    triplet = [RNG.normal(size=(4, 3)) for _ in range(3)]
    _assert_like_torch(
        lambda lib: lib.nn.TripletMarginWithDistanceLoss(
            margin=0.7, swap=True, reduction=reduction
        ),
        triplet,
    )


def test_weighted_modules_keep_the_weight_as_a_buffer():
    weight = sg.tensor(WEIGHT)
    for cls in (sg.nn.MultiMarginLoss, sg.nn.MultiLabelSoftMarginLoss):
        module = cls(weight=weight)
        assert list(module.state_dict()) == ["weight"]
        assert list(module.state_dict()) == list(
            getattr(torch.nn, cls.__name__)(weight=torch.tensor(WEIGHT)).state_dict()
        )


def test_legacy_size_average_and_reduce_fold_into_the_reduction_as_torch():
    for kwargs in (dict(size_average=False), dict(reduce=False)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = sg.nn.functional.multi_margin_loss(sg.tensor(X), sg.tensor(CLASSES), **kwargs)
            theirs = torch.nn.functional.multi_margin_loss(
                torch.tensor(X), torch.tensor(CLASSES), **kwargs
            )
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
            ours = sg.nn.functional.multilabel_soft_margin_loss(
                sg.tensor(X), sg.tensor(MULTI_HOT), **kwargs
            )
            theirs = torch.nn.functional.multilabel_soft_margin_loss(
                torch.tensor(X), torch.tensor(MULTI_HOT), **kwargs
            )
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_multi_margin_gradient_is_a_central_difference():
    """The composed gradient, checked against central differences in float64."""
    x = X.copy()
    target = sg.tensor(CLASSES)
    weight = sg.tensor(WEIGHT)

    def value(array):
        return sg.nn.functional.multi_margin_loss(
            sg.tensor(array), target, p=2, margin=0.8, weight=weight
        ).item()

    leaf = sg.tensor(x, requires_grad=True)
    sg.nn.functional.multi_margin_loss(leaf, target, p=2, margin=0.8, weight=weight).backward()
    numeric = np.zeros_like(x)
    h = 1e-6
    for index in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[index] += h
        down[index] -= h
        numeric[index] = (value(up) - value(down)) / (2 * h)
    np.testing.assert_allclose(leaf.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def _error(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - comparing the exception itself
            return type(e), str(e)
    return None


def _t(lib, value, **kwargs):
    return lib.tensor(np.asarray(value), **kwargs)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, F: F.multi_margin_loss(_t(lib, X), _t(lib, [0, 4, 1, 1, 2])),
        lambda lib, F: F.multi_margin_loss(_t(lib, X), _t(lib, [0, -1, 1, 1, 2])),
        lambda lib, F: F.multi_margin_loss(_t(lib, X), _t(lib, [0, 1])),
        lambda lib, F: F.multi_margin_loss(_t(lib, X), _t(lib, CLASSES.reshape(5, 1))),
        lambda lib, F: F.multi_margin_loss(_t(lib, X), _t(lib, CLASSES * 1.0)),
        lambda lib, F: F.multi_margin_loss(_t(lib, X), _t(lib, CLASSES), p=3),
        lambda lib, F: F.multi_margin_loss(_t(lib, X), _t(lib, CLASSES), weight=lib.ones(2, 2)),
        lambda lib, F: F.multi_margin_loss(_t(lib, X), _t(lib, CLASSES), weight=lib.ones(3)),
        lambda lib, F: F.multi_margin_loss(_t(lib, X), _t(lib, CLASSES), reduction="bad"),
        lambda lib, F: F.multi_margin_loss(lib.ones(2, 3, 4), _t(lib, [0, 1])),
        lambda lib, F: F.multilabel_margin_loss(_t(lib, X), _t(lib, LABELS[:, :3])),
        lambda lib, F: F.multilabel_margin_loss(_t(lib, X), _t(lib, LABELS * 1.0)),
        lambda lib, F: F.multilabel_margin_loss(_t(lib, X), _t(lib, LABELS + 4)),
        lambda lib, F: F.multilabel_margin_loss(_t(lib, X), _t(lib, LABELS - 1)),
        lambda lib, F: F.multilabel_margin_loss(_t(lib, X), _t(lib, LABELS), reduction="x"),
        lambda lib, F: F.multilabel_margin_loss(lib.ones(2, 3, 4), lib.ones(2, 3, 4).long()),
        lambda lib, F: F.multilabel_soft_margin_loss(
            _t(lib, X), _t(lib, MULTI_HOT), reduction="bad"
        ),
        lambda lib, F: F.triplet_margin_with_distance_loss(
            _t(lib, X), _t(lib, X), _t(lib, X), margin=0
        ),
        lambda lib, F: F.triplet_margin_with_distance_loss(_t(lib, X), _t(lib, X), _t(lib, X[0])),
        lambda lib, F: F.triplet_margin_with_distance_loss(
            _t(lib, X), _t(lib, X), _t(lib, X), reduction="x"
        ),
        lambda lib, F: lib.nn.MultiMarginLoss(p=0),
        lambda lib, F: lib.nn.MultiMarginLoss(weight=lib.ones(2, 2)),
        lambda lib, F: lib.nn.TripletMarginWithDistanceLoss(margin=-1.0),
    ],
)
def test_errors_match_torch(call):
    theirs = _error(lambda: call(torch, torch.nn.functional))
    assert theirs is not None
    assert _error(lambda: call(sg, sg.nn.functional)) == theirs


def test_multilabel_soft_margin_loss_at_zero_and_large_inputs_matches_torch():
    """log sigmoid in its stable form: exact at |x| = 30 (where softplus's threshold would
    round it) and with the gradient 1/2 of sigmoid(0) at x = 0."""
    x = np.array([[0.0, -30.0, 30.0, 2.0], [-45.0, 0.0, 1e-3, 60.0]])
    target = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 1.0]])
    fn = _with(target, f=_functional("multilabel_soft_margin_loss"))
    _assert_like_torch(fn, [x], reduction="none")


def test_nll_loss_2d_is_torch_s_deprecated_alias():
    logp = RNG.normal(size=(2, 3, 4, 5))
    target = RNG.integers(0, 3, size=(2, 4, 5))
    results = []
    for lib in (sg, torch):
        with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
            module = lib.nn.NLLLoss2d(ignore_index=1, reduction="sum")
        assert isinstance(module, lib.nn.NLLLoss)
        results.append(module(lib.tensor(logp), lib.tensor(target)).item())
    assert results[0] == pytest.approx(results[1], rel=1e-12)
