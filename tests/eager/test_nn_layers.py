"""Layers and activation modules of `sourcegrad.nn` against torch.nn (values, gradients, reprs)."""

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.nn.functional as F
from sourcegrad import nn


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def copy_weights(src, dst):
    dst.load_state_dict(
        {k: sg.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    )


def compare(torch, make, inputs, rtol=1e-5, atol=1e-6, check_repr=True, grad_scale=None):
    """Build make(lib) in both, copy weights, compare repr, outputs and all gradients."""
    t_mod, s_mod = make(torch), make(sg)
    if check_repr:
        assert repr(s_mod) == repr(t_mod)
    copy_weights(t_mod, s_mod)
    t_in = [torch.tensor(x, requires_grad=x.dtype.kind == "f") for x in inputs]
    s_in = [sg.tensor(x, requires_grad=x.dtype.kind == "f") for x in inputs]
    yt, ys = t_mod(*t_in), s_mod(*s_in)
    np.testing.assert_allclose(_np(ys), _np(yt), rtol=rtol, atol=atol)
    w = np.random.default_rng(7).standard_normal(tuple(yt.shape)).astype(np.float32)
    (yt * torch.tensor(w)).sum().backward()
    (ys * sg.tensor(w)).sum().backward()
    for a, b in zip(t_in, s_in):
        if a.requires_grad:
            np.testing.assert_allclose(_np(b.grad), _np(a.grad), rtol=rtol, atol=atol)
    for (name, a), b in zip(t_mod.named_parameters(), s_mod.parameters()):
        np.testing.assert_allclose(_np(b.grad), _np(a.grad), rtol=rtol, atol=atol, err_msg=name)
    return ys, yt


# inputs that cross every kink and both saturated ends (large magnitudes included: they used
# to give nan gradients in softplus and elu)
X = np.concatenate(
    [
        np.linspace(-6, 6, 25),
        [-100.0, -30.0, 30.0, 100.0, -1.0, 1.0, 0.0, 6.0, -3.0, 3.0, 0.5, -0.5],
    ]
).astype(np.float32)
X = np.stack([X, X[::-1] * 0.7])

ACTIVATIONS = [
    ("ReLU", ()),
    ("ReLU", {"inplace": True}),
    ("ReLU6", ()),
    ("Sigmoid", ()),
    ("Tanh", ()),
    ("SiLU", ()),
    ("Mish", ()),
    ("GELU", ()),
    ("GELU", {"approximate": "tanh"}),
    ("ELU", ()),
    ("ELU", {"alpha": 0.5}),
    ("CELU", {"alpha": 2.0}),
    ("SELU", ()),
    ("LeakyReLU", ()),
    ("LeakyReLU", {"negative_slope": 0.2}),
    ("Softplus", ()),
    ("Softplus", {"beta": 2.0, "threshold": 5.0}),
    ("Hardtanh", ()),
    ("Hardtanh", {"min_val": -2.0, "max_val": 3.0}),
    ("Softsign", ()),
    ("Tanhshrink", ()),
    ("Threshold", (0.5, -2.0)),
    ("Hardshrink", ()),
    ("Softshrink", {"lambd": 0.3}),
    ("LogSigmoid", ()),
    ("Hardsigmoid", ()),
    ("Hardswish", ()),
    ("Softmax", {"dim": 1}),
    ("LogSoftmax", {"dim": 1}),
    ("Softmin", {"dim": 0}),
    ("GLU", {"dim": 0}),
    ("PReLU", ()),
    ("RReLU", ()),
]


def _make(name, args):
    def make(lib):
        cls = getattr(lib.nn, name)
        mod = cls(**args) if isinstance(args, dict) else cls(*args)
        if name == "RReLU":
            mod.eval()  # training draws random slopes
        return mod

    return make


@pytest.mark.parametrize("name,args", ACTIVATIONS, ids=lambda v: str(v))
def test_activation_modules_match_torch(torch, name, args):
    if name == "ReLU" and args:  # in place on a leaf is an error: feed a non-leaf
        t_mod, s_mod = _make(name, args)(torch), _make(name, args)(sg)
        assert repr(s_mod) == repr(t_mod) == "ReLU(inplace=True)"
        xt = torch.tensor(X, requires_grad=True)
        xs = sg.tensor(X, requires_grad=True)
        yt, ys = t_mod(xt * 1), s_mod(xs * 1)
        np.testing.assert_array_equal(_np(ys), _np(yt))
        yt.sum().backward()
        ys.sum().backward()
        np.testing.assert_array_equal(_np(xs.grad), _np(xt.grad))
        return
    ys, yt = compare(torch, _make(name, args), [X], rtol=2e-5, atol=1e-6)
    assert np.isfinite(_np(ys)).all()


@pytest.mark.parametrize(
    "name",
    [
        "ReLU",
        "Sigmoid",
        "Tanh",
        "LeakyReLU",
        "Softmax",
        "LogSoftmax",
        "ELU",
        "GELU",
        "Softplus",
        "SiLU",
        "Hardtanh",
        "Mish",
    ],
)
def test_activation_grad_fn_names_where_torch_has_our_node(torch, name):
    """The activations the rule table has a node for record torch's node name."""
    mk = _make(name, {"dim": 1} if "Softmax" in name else ())
    yt = mk(torch)(torch.tensor(X, requires_grad=True))
    ys = mk(sg)(sg.tensor(X, requires_grad=True))
    if name in ("ReLU", "Sigmoid", "Tanh", "LeakyReLU", "Softmax", "LogSoftmax"):
        assert ys.grad_fn.name() == yt.grad_fn.name()
    else:  # written with tensor ops: a different (but working) last node
        assert ys.grad_fn is not None


def test_large_inputs_give_finite_gradients_regression():
    """softplus and elu used to give nan gradients once exp(x) overflowed."""
    for fn, expected in (
        (F.softplus, [1.0, 0.0]),
        (F.elu, [1.0, 0.0]),
        (F.celu, [1.0, 0.0]),
        (F.mish, [1.0, 0.0]),
    ):
        x = sg.tensor([100.0, -100.0], requires_grad=True)
        fn(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), expected, atol=1e-30)


def test_hardtanh_gradient_is_zero_at_the_bounds(torch):
    vals = np.array([-1.0, 1.0, 0.0, 6.0], np.float32)
    for mk in (lambda lib: lib.nn.Hardtanh(), lambda lib: lib.nn.ReLU6()):
        compare(torch, mk, [vals])


def test_linear_bilinear_identity_flatten(torch):
    rng = np.random.default_rng(0)
    x3 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    compare(torch, lambda lib: lib.nn.Linear(4, 5), [x3[0]])
    compare(torch, lambda lib: lib.nn.Linear(4, 5), [x3])  # batched (matmul path)
    compare(torch, lambda lib: lib.nn.Linear(4, 5, bias=False), [x3[0]])
    compare(torch, lambda lib: lib.nn.Linear(4, 5), [x3[0, 0]])  # a single vector
    compare(torch, lambda lib: lib.nn.Bilinear(4, 3, 2), [x3[0], x3[1, :, :3]], rtol=1e-4)
    compare(torch, lambda lib: lib.nn.Bilinear(4, 4, 2, bias=False), [x3, x3 * 2], rtol=1e-4)
    compare(torch, lambda lib: lib.nn.Identity(3, foo=1), [x3])
    compare(torch, lambda lib: lib.nn.Flatten(), [x3])
    compare(torch, lambda lib: lib.nn.Flatten(0, 1), [x3])
    compare(torch, lambda lib: lib.nn.Unflatten(2, (2, 2)), [x3])
    s = nn.Linear(4, 5)(sg.tensor(x3[0]))
    t = torch.nn.Linear(4, 5)(torch.tensor(x3[0]))
    assert s.grad_fn.name() == t.grad_fn.name() == "AddmmBackward0"


def test_embedding(torch):
    idx = np.array([[1, 0, 3], [3, 3, 4]])
    compare(torch, lambda lib: lib.nn.Embedding(5, 3), [idx])
    compare(torch, lambda lib: lib.nn.Embedding(5, 3, padding_idx=3), [idx])
    compare(torch, lambda lib: lib.nn.Embedding(5, 3, padding_idx=-1), [idx])
    for kw in (
        {"max_norm": 1.0},
        {"norm_type": 1.0},
        {"scale_grad_by_freq": True},
        {"sparse": True},
    ):
        assert repr(nn.Embedding(5, 3, **kw)) == repr(torch.nn.Embedding(5, 3, **kw))
    e = nn.Embedding(5, 3, padding_idx=1)
    assert not e.weight[1].detach().numpy().any()
    # max_norm renormalises the rows looked up, in place (as torch)
    t_e, s_e = torch.nn.Embedding(5, 3, max_norm=1.0), nn.Embedding(5, 3, max_norm=1.0)
    with torch.no_grad():
        t_e.weight.mul_(3)
    copy_weights(t_e, s_e)
    yt, ys = t_e(torch.tensor(idx)), s_e(sg.tensor(idx))
    np.testing.assert_allclose(_np(ys), _np(yt), rtol=1e-5)
    np.testing.assert_allclose(_np(s_e.weight), _np(t_e.weight), rtol=1e-5)
    pre = nn.Embedding.from_pretrained(sg.ones(4, 2))
    assert not pre.weight.requires_grad and pre.weight.shape == (4, 2)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)
    with pytest.raises(RuntimeError, match="indices"):
        nn.Embedding(3, 2)(sg.ones(2))
    with pytest.raises(F.UnsupportedOptionError):
        nn.Embedding(3, 2, sparse=True)(sg.tensor([0]))


def test_normalization_layers(torch):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 6, 4)).astype(np.float32) * 3 + 1
    compare(torch, lambda lib: lib.nn.LayerNorm(4), [x], rtol=1e-4, atol=1e-5)
    compare(torch, lambda lib: lib.nn.LayerNorm([6, 4], eps=1e-3), [x], rtol=1e-4, atol=1e-5)
    compare(
        torch, lambda lib: lib.nn.LayerNorm(4, elementwise_affine=False), [x], rtol=1e-4, atol=1e-5
    )
    compare(torch, lambda lib: lib.nn.LayerNorm(4, bias=False), [x], rtol=1e-4, atol=1e-5)
    compare(torch, lambda lib: lib.nn.RMSNorm(4), [x], rtol=1e-4, atol=1e-5)
    compare(torch, lambda lib: lib.nn.RMSNorm([6, 4], eps=1e-6), [x], rtol=1e-4, atol=1e-5)
    compare(torch, lambda lib: lib.nn.GroupNorm(3, 6), [x], rtol=1e-4, atol=1e-5)
    compare(torch, lambda lib: lib.nn.GroupNorm(2, 6, affine=False), [x], rtol=1e-4, atol=1e-5)
    # non-trivial affine parameters
    t_ln, s_ln = torch.nn.LayerNorm(4), nn.LayerNorm(4)
    with torch.no_grad():
        t_ln.weight.uniform_(0.5, 2)
        t_ln.bias.uniform_(-1, 1)
    copy_weights(t_ln, s_ln)
    np.testing.assert_allclose(
        _np(s_ln(sg.tensor(x))), _np(t_ln(torch.tensor(x))), rtol=1e-4, atol=1e-5
    )
    with pytest.raises(RuntimeError) as s_err:
        nn.LayerNorm(5)(sg.tensor(x))
    with pytest.raises(RuntimeError) as t_err:
        torch.nn.LayerNorm(5)(torch.tensor(x))
    assert str(s_err.value) == str(t_err.value)


def test_channel_dropout_and_functional_dropout():
    sg.manual_seed(1)
    x = sg.ones(8, 16, 5, 5)
    y = nn.Dropout2d(0.5)(x).numpy()
    per_channel = y.reshape(8, 16, 25)
    # each (sample, channel) is kept or dropped whole
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert 0.3 < (per_channel[..., 0] == 0).mean() < 0.7
    assert np.array_equal(nn.Dropout2d(0.5).eval()(x).numpy(), x.numpy())
    assert not F.dropout(sg.ones(3), p=1.0).numpy().any()
    with pytest.raises(ValueError, match="dropout probability"):
        F.dropout(sg.ones(3), p=-0.1)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D input"):
        nn.Dropout2d()(sg.ones(2))


def test_functional_forms_match_torch(torch):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    for name, args in [("normalize", {}), ("cosine_similarity", None), ("pairwise_distance", None)]:
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        sa, sb = sg.tensor(a, requires_grad=True), sg.tensor(b, requires_grad=True)
        if args is None:
            yt, ys = getattr(torch.nn.functional, name)(ta, tb), getattr(F, name)(sa, sb)
        else:
            yt, ys = getattr(torch.nn.functional, name)(ta), getattr(F, name)(sa)
        np.testing.assert_allclose(_np(ys), _np(yt), rtol=1e-5, atol=1e-6)
        yt.sum().backward()
        ys.sum().backward()
        np.testing.assert_allclose(_np(sa.grad), _np(ta.grad), rtol=1e-4, atol=1e-6)
        if args is None:
            np.testing.assert_allclose(_np(sb.grad), _np(tb.grad), rtol=1e-4, atol=1e-6)


def test_implicit_softmax_dim_warns_and_picks_torchs_dim(torch):
    x = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    for name in ("Softmax", "LogSoftmax", "Softmin"):
        for data in (x, x[0], x[0, 0]):
            with pytest.warns(UserWarning) as s_rec:
                ys = getattr(nn, name)()(sg.tensor(data))
            with pytest.warns(UserWarning) as t_rec:
                yt = getattr(torch.nn, name)()(torch.tensor(data))
            assert str(s_rec[0].message) == str(t_rec[0].message)
            np.testing.assert_allclose(_np(ys), _np(yt), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "name,args",
    [
        ("SiLU", {}),
        ("Mish", {}),
        ("ELU", {"alpha": 0.5}),
        ("CELU", {"alpha": 2.0}),
        ("SELU", {}),
        ("Hardtanh", {}),
        ("ReLU6", {}),
        ("Threshold", {"threshold": 0.1, "value": 2.0}),
        ("Hardswish", {}),
        ("Hardsigmoid", {}),
        ("LeakyReLU", {"negative_slope": 0.2}),
        ("ReLU", {}),
    ],
)
def test_inplace_activations_backpropagate_as_torch(torch, name, args):
    """inplace=True writes into its input; the graph must not need the overwritten values."""
    outs = []
    for lib in (torch, sg):
        x = lib.tensor(X, requires_grad=True)
        h = x * 1
        y = getattr(lib.nn, name)(inplace=True, **args)(h)
        assert y is h
        (y * lib.tensor(X[::-1].copy())).sum().backward()
        outs.append((_np(y), _np(x.grad)))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=2e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        getattr(nn, name)(inplace=True, **args)(sg.tensor(X, requires_grad=True))


def test_distance_modules(torch):
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((2, 4, 3)).astype(np.float32)
    compare(torch, lambda lib: lib.nn.CosineSimilarity(dim=1), [a, b])
    compare(torch, lambda lib: lib.nn.CosineSimilarity(dim=0, eps=1e-6), [a, b])
    compare(torch, lambda lib: lib.nn.PairwiseDistance(), [a, b])
    compare(torch, lambda lib: lib.nn.PairwiseDistance(p=1.0, keepdim=True), [a, b])


@pytest.mark.parametrize("padding_idx", [None, 0])
def test_embedding_scale_grad_by_freq_is_torchs(torch, padding_idx):
    """Each row's gradient divided by how often the batch used it (was UnsupportedOptionError)
    as torch's, in float64. Its second derivative (create_graph) is checked by central
    finite differences: torch's double backward of embedding ignores scale_grad_by_freq
    (0.134 where the derivative is 0.0446 for a row used three times)."""
    idx = np.array([[1, 2, 1], [4, 1, 0]])
    weight = np.sin(np.arange(10.0)).reshape(5, 2)
    g0 = np.cos(np.arange(12.0)).reshape(2, 3, 2)

    def weight_grad(lib, g, create_graph=False):
        w = lib.tensor(weight, requires_grad=True)
        y = lib.nn.functional.embedding(
            lib.tensor(idx), w, padding_idx=padding_idx, scale_grad_by_freq=True
        )
        return lib.autograd.grad(y, w, g, create_graph=create_graph)[0]

    theirs = weight_grad(torch, torch.tensor(g0)).numpy()
    g = sg.tensor(g0, requires_grad=True)
    ours = weight_grad(sg, g, create_graph=True)
    np.testing.assert_allclose(ours.detach().numpy(), theirs, rtol=1e-12, atol=1e-15)
    ours.pow(2).sum().backward()

    def f(values):
        return float(weight_grad(sg, sg.tensor(values)).pow(2).sum())

    eps, numeric = 1e-6, np.zeros_like(g0)
    for i in np.ndindex(g0.shape):
        step = np.zeros_like(g0)
        step[i] = eps
        numeric[i] = (f(g0 + step) - f(g0 - step)) / (2 * eps)
    np.testing.assert_allclose(g.grad.numpy(), numeric, rtol=1e-6, atol=1e-9)
