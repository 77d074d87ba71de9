"""`sourcegrad.nn.init`: gains and fans exactly as torch's, distributions checked statistically.

The generators differ from torch's, so values are compared through their
distributions (bounds, mean, standard deviation) rather than bit for bit.
"""

import math
import warnings

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad import nn
from sourcegrad.nn import init


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


SHAPES = [(3, 5), (64, 32), (8, 4, 3), (16, 3, 5, 5), (2, 6, 2, 3, 4)]


def test_calculate_gain_is_torchs(torch):
    for nl in [
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
        "tanh",
        "relu",
        "leaky_relu",
        "selu",
    ]:
        assert init.calculate_gain(nl) == torch.nn.init.calculate_gain(nl)
    for param in (0.2, 1, math.sqrt(5), 0):
        assert init.calculate_gain("leaky_relu", param) == torch.nn.init.calculate_gain(
            "leaky_relu", param
        )
    for bad in (("leaky_relu", True), ("leaky_relu", "x"), ("softmax", None)):
        with pytest.raises(ValueError) as s_err:
            init.calculate_gain(*bad)
        with pytest.raises(ValueError) as t_err:
            torch.nn.init.calculate_gain(*bad)
        assert str(s_err.value) == str(t_err.value)


def test_fans_are_torchs(torch):
    for shape in SHAPES:
        assert init._calculate_fan_in_and_fan_out(
            sg.empty(shape)
        ) == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
        for mode in ("fan_in", "fan_out", "FAN_IN"):
            assert init._calculate_correct_fan(
                sg.empty(shape), mode
            ) == torch.nn.init._calculate_correct_fan(torch.empty(shape), mode)
    for fn, args in (
        (init._calculate_fan_in_and_fan_out, ()),
        (init._calculate_correct_fan, ("fan_avg",)),
    ):
        tfn = getattr(torch.nn.init, fn.__name__)
        shape = (5,) if not args else (3, 4)
        with pytest.raises(ValueError) as s_err:
            fn(sg.empty(shape), *args)
        with pytest.raises(ValueError) as t_err:
            tfn(torch.empty(shape), *args)
        assert str(s_err.value) == str(t_err.value)


def _uniform_ok(values, bound):
    v = values.ravel().astype(np.float64)
    n = v.size
    assert np.abs(v).max() <= bound * (1 + 1e-6)
    # U(-b, b): mean 0, std b / sqrt(3); 5 standard errors
    assert abs(v.mean()) < 5 * bound / math.sqrt(3 * n)
    assert abs(v.std() - bound / math.sqrt(3)) < 5 * bound * 0.3 / math.sqrt(n) + 1e-7
    assert np.abs(v).max() > bound * 0.9


def _normal_ok(values, mean, std):
    v = values.ravel().astype(np.float64)
    n = v.size
    assert abs(v.mean() - mean) < 5 * std / math.sqrt(n)
    assert abs(v.std() - std) < 5 * std / math.sqrt(2 * n)


def test_uniform_inits_have_torchs_bounds(torch):
    sg.manual_seed(0)
    big = (256, 128, 3)
    fan_in, fan_out = 128 * 3, 256 * 3
    w = sg.empty(big)
    assert init.xavier_uniform_(w, gain=2.0) is w
    _uniform_ok(w.numpy(), 2.0 * math.sqrt(6.0 / (fan_in + fan_out)))
    init.kaiming_uniform_(w, a=math.sqrt(5))
    _uniform_ok(
        w.numpy(),
        math.sqrt(3.0) * init.calculate_gain("leaky_relu", math.sqrt(5)) / math.sqrt(fan_in),
    )
    init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")
    _uniform_ok(w.numpy(), math.sqrt(6.0 / fan_out))
    init.uniform_(w, -0.3, 0.7)
    v = w.numpy()
    assert v.min() >= -0.3 and v.max() <= 0.7 and abs(v.mean() - 0.2) < 0.005


def test_normal_inits_have_torchs_std():
    sg.manual_seed(1)
    w = sg.empty(200, 150, 2)
    fan_in, fan_out = 300, 400
    init.xavier_normal_(w, gain=0.5)
    _normal_ok(w.numpy(), 0.0, 0.5 * math.sqrt(2.0 / (fan_in + fan_out)))
    init.kaiming_normal_(w)  # leaky_relu with a=0: gain sqrt(2)
    _normal_ok(w.numpy(), 0.0, math.sqrt(2.0 / fan_in))
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="tanh")
    _normal_ok(w.numpy(), 0.0, 5.0 / 3 / math.sqrt(fan_out))
    init.normal_(w, 3.0, 0.25)
    _normal_ok(w.numpy(), 3.0, 0.25)


def test_trunc_normal_stays_in_bounds_with_the_truncated_moments():
    sg.manual_seed(2)
    w = sg.empty(100000)
    init.trunc_normal_(w, mean=0.0, std=1.0, a=-1.0, b=2.0)
    v = w.numpy().astype(np.float64)
    assert v.min() >= -1.0 and v.max() <= 2.0
    # moments of N(0, 1) truncated to [-1, 2]
    from math import erf, exp, pi, sqrt

    phi = lambda x: exp(-x * x / 2) / sqrt(2 * pi)  # noqa: E731
    cdf = lambda x: (1 + erf(x / sqrt(2))) / 2  # noqa: E731
    z = cdf(2.0) - cdf(-1.0)
    mean = (phi(-1.0) - phi(2.0)) / z
    var = 1 + (-1.0 * phi(-1.0) - 2.0 * phi(2.0)) / z - mean**2
    assert abs(v.mean() - mean) < 0.01 and abs(v.std() - sqrt(var)) < 0.01
    # a narrow window far from the mean takes the other sampler, still in bounds
    w2 = sg.empty(20000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        init.trunc_normal_(w2, mean=0.0, std=0.1, a=0.3, b=0.4)
    v2 = w2.numpy()
    assert v2.min() >= 0.3 and v2.max() <= 0.4
    assert (v2 < 0.35).mean() > 0.6  # the density falls across the window
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        init.trunc_normal_(sg.empty(10), mean=5.0, std=1.0, a=-1.0, b=1.0)


def test_constant_eye_dirac_orthogonal_sparse(torch):
    w = sg.empty(3, 4)
    assert init.constant_(w, 0.5) is w and (w.numpy() == 0.5).all()
    assert (init.ones_(w).numpy() == 1).all() and not init.zeros_(w).numpy().any()
    np.testing.assert_array_equal(
        init.eye_(sg.empty(3, 5)).numpy(), torch.nn.init.eye_(torch.empty(3, 5)).numpy()
    )
    for shape, groups in (((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((2, 2, 3, 3, 3), 1)):
        np.testing.assert_array_equal(
            init.dirac_(sg.empty(shape), groups).numpy(),
            torch.nn.init.dirac_(torch.empty(shape), groups).numpy(),
        )
    sg.manual_seed(3)
    for shape in ((5, 3), (3, 5), (4, 2, 3)):
        q = init.orthogonal_(sg.empty(shape), gain=2.0).numpy().reshape(shape[0], -1)
        rows, cols = q.shape
        gram = q @ q.T if rows <= cols else q.T @ q
        np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-5)
    s = init.sparse_(sg.empty(10, 6), sparsity=0.3).numpy()
    assert ((s == 0).sum(0) >= 3).all()
    for fn, arg in (
        (init.eye_, (3,)),
        (init.orthogonal_, (3,)),
        (init.dirac_, (3, 3)),
        (init.sparse_, (3,)),
    ):
        extra = (0.1,) if fn is init.sparse_ else ()
        with pytest.raises(ValueError) as s_err:
            fn(sg.empty(arg), *extra)
        with pytest.raises(ValueError) as t_err:
            getattr(torch.nn.init, fn.__name__)(torch.empty(arg), *extra)
        assert str(s_err.value) == str(t_err.value)


def test_inits_work_on_parameters_in_place_without_grad():
    lin = nn.Linear(4, 3)
    w = lin.weight
    version = w._version
    out = init.xavier_uniform_(lin.weight)
    assert out is w and w.requires_grad and w.is_leaf and w.grad_fn is None
    assert w._version > version
    init.zeros_(lin.bias)
    assert lin.bias.is_leaf and not lin.bias.detach().numpy().any()
    with pytest.warns(FutureWarning, match="nn.init.normal` is now deprecated"):
        init.normal(sg.empty(2))
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(sg.empty(0, 3))


def test_default_layer_inits_follow_torchs_bounds():
    sg.manual_seed(4)
    lin = nn.Linear(400, 300)
    # kaiming_uniform_(a=sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias the same
    _uniform_ok(lin.weight.detach().numpy(), 1 / math.sqrt(400))
    _uniform_ok(lin.bias.detach().numpy(), 1 / math.sqrt(400))
    bil = nn.Bilinear(50, 20, 30)
    _uniform_ok(bil.weight.detach().numpy(), 1 / math.sqrt(50))
    emb = nn.Embedding(300, 200)
    _normal_ok(emb.weight.detach().numpy(), 0.0, 1.0)
    ln = nn.LayerNorm(5)
    assert (ln.weight.detach().numpy() == 1).all() and not ln.bias.detach().numpy().any()
    assert (nn.PReLU(3).weight.detach().numpy() == 0.25).all()
