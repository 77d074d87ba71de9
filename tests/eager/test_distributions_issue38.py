"""Kumaraswamy, FisherSnedecor, Wishart and LKJCholesky (issue 38) against torch 2.13's
distributions in float64: log_prob, moments and entropy with their parameter gradients,
samples by seeded statistics (sourcegrad's streams are not torch's), torch's errors."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad as sg  # noqa: E402

RNG = np.random.default_rng(38)
N = 40_000  # samples for the statistics


def _evaluate(lib, make, params, value, quantities):
    """The named quantities of make(lib.distributions, leaves) and the gradient of the sum of
    their finite entries with respect to each parameter."""
    leaves = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in params.items()}
    dist = make(lib.distributions, leaves)
    out = {}
    for name in quantities.split():
        if name == "log_prob":
            out[name] = dist.log_prob(lib.tensor(value, dtype=lib.float64))
        elif name == "entropy":
            out[name] = dist.entropy()
        else:
            out[name] = getattr(dist, name)
    finite = [lib.where(t.isfinite(), t, lib.zeros_like(t)).sum() for t in out.values()]
    sum(finite).backward()
    grads = {k: None if leaf.grad is None else leaf.grad.numpy() for k, leaf in leaves.items()}
    values = {k: v.detach().numpy() for k, v in out.items()}
    return values, grads, (tuple(dist.batch_shape), tuple(dist.event_shape))


def _spd(*batch, n=3):
    a = RNG.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _corr_cholesky(*batch, n=3):
    matrix = _spd(*batch, n=n)
    scale = np.sqrt(np.diagonal(matrix, axis1=-2, axis2=-1))
    return np.linalg.cholesky(matrix / scale[..., None] / scale[..., None, :])


CASES = {
    # concentrations below and above 1
    "Kumaraswamy": (
        lambda d, p: d.Kumaraswamy(p["a"], p["b"]),
        {"a": np.array([0.7, 1.5, 3.0]), "b": np.array([2.0, 0.6, 4.0])},
        np.array([[0.2, 0.5, 0.9], [0.01, 0.7, 0.4]]),
        "log_prob mean variance stddev entropy",
    ),
    # df2 below 2, in (2, 4] and above 4: mean and variance nan where they do not exist
    "FisherSnedecor": (
        lambda d, p: d.FisherSnedecor(p["df1"], p["df2"]),
        {"df1": np.array([1.5, 4.0, 7.0]), "df2": np.array([1.5, 3.0, 9.0])},
        np.array([[0.3, 1.5, 4.0], [2.0, 0.1, 0.9]]),
        "log_prob mean variance mode",
    ),
    # df above p + 1 (a mode) and in (p - 1, p + 1] (mode nan); a batch of two scales
    "Wishart-covariance": (
        lambda d, p: d.Wishart(p["df"], covariance_matrix=p["S"]),
        {"df": np.array([4.5, 6.5]), "S": _spd(2)},
        _spd(2),
        "log_prob entropy mean variance mode covariance_matrix precision_matrix scale_tril",
    ),
    "Wishart-scale_tril": (
        lambda d, p: d.Wishart(p["df"], scale_tril=p["L"]),
        {"df": np.array([5.0]), "L": np.linalg.cholesky(_spd(2))},
        _spd(3, 2),
        "log_prob entropy mean variance precision_matrix",
    ),
    "Wishart-precision": (
        lambda d, p: d.Wishart(p["df"], precision_matrix=p["P"]),
        {"df": np.array(7.0), "P": _spd(n=4)},
        _spd(n=4),
        "log_prob entropy mean variance mode covariance_matrix scale_tril",
    ),
    "LKJCholesky": (
        lambda d, p: d.LKJCholesky(4, p["c"]),
        {"c": np.array([0.5, 1.0, 2.5])},
        _corr_cholesky(3, n=4),
        "log_prob",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name):
    ours, our_grads, our_shapes = _evaluate(sg, *CASES[name])
    theirs, their_grads, their_shapes = _evaluate(torch, *CASES[name])
    assert our_shapes == their_shapes
    for key, value in theirs.items():
        np.testing.assert_allclose(ours[key], value, rtol=1e-10, atol=1e-10, err_msg=key)
    for key, grad in their_grads.items():
        # 1e-8: torch's digamma/trigamma are scipy's to ~1e-10
        np.testing.assert_allclose(our_grads[key], grad, rtol=1e-8, atol=1e-9, err_msg=key)


def test_kumaraswamy_mode_is_the_density_argmax():
    # torch 2.13's mode is nan for every concentration0 > 1 (log1p(-b)); ours is the argmax
    a, b = sg.tensor([2.0, 3.0, 0.5]), sg.tensor([5.0, 1.5, 2.0])
    dist = sg.distributions.Kumaraswamy(a, b)
    mode = dist.mode.numpy()
    grid = np.linspace(1e-4, 1 - 1e-4, 20001)
    density = dist.log_prob(sg.tensor(np.repeat(grid[:, None], 3, 1))).numpy()
    np.testing.assert_allclose(mode[:2], grid[density[:, :2].argmax(0)], atol=1e-4)
    assert np.isnan(mode[2])


MOMENTS = [
    ("Kumaraswamy", lambda d: d.Kumaraswamy(sg.tensor([0.7, 3.0]), sg.tensor([2.0, 4.0]))),
    ("FisherSnedecor", lambda d: d.FisherSnedecor(sg.tensor([4.0, 7.0]), sg.tensor([9.0, 12.0]))),
]


@pytest.mark.parametrize("name, make", MOMENTS, ids=[m[0] for m in MOMENTS])
def test_sample_moments_match_the_distribution(name, make):
    sg.manual_seed(0)
    dist = make(sg.distributions)
    x = dist.sample((N,)).numpy()
    mean, var = dist.mean.numpy(), dist.variance.numpy()
    np.testing.assert_array_less(np.abs(x.mean(0) - mean), 5 * np.sqrt(var / N))
    np.testing.assert_allclose(x.var(0), var, rtol=0.1)
    assert dist.support.check(sg.tensor(x)).all()


def test_rsample_gradients_flow_like_torchs_reparameterisation():
    # d E[X] / d parameter by the pathwise estimator against the closed form's gradient
    sg.manual_seed(1)
    a = sg.tensor([1.5, 3.0], requires_grad=True)
    b = sg.tensor([2.0, 4.0], requires_grad=True)
    sg.distributions.Kumaraswamy(a, b).rsample((N,)).mean(0).sum().backward()
    closed_a, closed_b = sg.tensor([1.5, 3.0], requires_grad=True), sg.tensor([2.0, 4.0])
    closed_b.requires_grad_()
    sg.distributions.Kumaraswamy(closed_a, closed_b).mean.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), closed_a.grad.numpy(), rtol=0.05)
    np.testing.assert_allclose(b.grad.numpy(), closed_b.grad.numpy(), rtol=0.05)
    df = sg.tensor([5.0], requires_grad=True)
    sg.distributions.FisherSnedecor(df, sg.tensor([20.0])).rsample((N,)).mean().backward()
    assert df.grad is not None and abs(float(df.grad)) < 0.05  # (the mean does not move)


@pytest.mark.parametrize(
    "make",
    [
        lambda d, t: d.Kumaraswamy(t([-1.0]), t([1.0]), validate_args=True),
        lambda d, t: d.FisherSnedecor(t([1.0]), t([0.0]), validate_args=True),
    ],
)
def test_invalid_parameters_raise_torchs_errors(make):
    with pytest.raises(ValueError) as theirs:
        make(torch.distributions, lambda v: torch.tensor(v, dtype=torch.float64))
    with pytest.raises(ValueError) as ours:
        make(sg.distributions, lambda v: sg.tensor(v, dtype=sg.float64))
    assert (
        str(ours.value).split(" found invalid")[0] == str(theirs.value).split(" found invalid")[0]
    )


def test_wishart_samples_have_its_mean_and_variance():
    sg.manual_seed(0)
    scale = sg.tensor(_spd(n=3))
    dist = sg.distributions.Wishart(sg.tensor([4.0, 9.0]), covariance_matrix=scale)
    x = dist.sample((N,))
    assert tuple(x.shape) == (N, 2, 3, 3) and not x.requires_grad
    assert dist.support.check(x).all()
    mean, var = dist.mean.numpy(), dist.variance.numpy()
    np.testing.assert_array_less(np.abs(x.numpy().mean(0) - mean), 5 * np.sqrt(var / N))
    np.testing.assert_allclose(x.numpy().var(0), var, rtol=0.1)


def test_wishart_rsample_is_reparameterised():
    # d E[tr X] / d S_ii = df, by the pathwise estimator
    sg.manual_seed(1)
    scale = sg.tensor(np.eye(2) * 1.5, requires_grad=True)
    dist = sg.distributions.Wishart(sg.tensor(5.0), covariance_matrix=scale)
    dist.rsample((N,)).diagonal(dim1=-2, dim2=-1).sum(-1).mean().backward()
    np.testing.assert_allclose(np.diagonal(scale.grad.numpy()), 5.0, rtol=0.05)


def test_lkj_samples_have_torchs_statistics():
    # the onion method's draws: the entries' means and variances, against torch's own draws
    sg.manual_seed(0)
    torch.manual_seed(0)
    concentration = np.array([0.5, 4.0])
    ours = sg.distributions.LKJCholesky(3, sg.tensor(concentration)).sample((N,))
    theirs = torch.distributions.LKJCholesky(3, torch.tensor(concentration)).sample((N,))
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert sg.distributions.constraints.corr_cholesky.check(ours).all()
    corr, their_corr = (ours @ ours.mT).numpy(), (theirs @ theirs.mT).numpy()
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(corr.mean(0), their_corr.mean(0), atol=0.02)
    np.testing.assert_allclose(corr.var(0), their_corr.var(0), rtol=0.06, atol=1e-12)
    # the first pair's marginal is the LKJ one: (r + 1) / 2 ~ Beta(a, a), a = eta - 1 + d / 2
    np.testing.assert_allclose(corr[:, :, 0, 1].var(0), 1 / (2 * concentration + 2), rtol=0.05)


@pytest.mark.parametrize(
    "make",
    [
        lambda d, t: d.Wishart(t(1.5), covariance_matrix=t(np.eye(3))),
        lambda d, t: d.Wishart(t(4.0), covariance_matrix=t(np.ones(3))),
        lambda d, t: d.Wishart(t(4.0)),
        lambda d, t: d.LKJCholesky(1, t(1.0)),
        lambda d, t: d.LKJCholesky(3, t(-1.0), validate_args=True),
    ],
)
def test_matrix_distribution_errors_are_torchs(make):
    with pytest.raises(Exception) as theirs:
        make(torch.distributions, lambda v: torch.tensor(v, dtype=torch.float64))
    with pytest.raises(theirs.type) as ours:
        make(sg.distributions, lambda v: sg.tensor(v, dtype=sg.float64))
    assert (
        str(ours.value).split(" found invalid")[0] == str(theirs.value).split(" found invalid")[0]
    )


def test_values_outside_the_support_raise_as_torch():
    for make, value in [
        (lambda d, t: d.LKJCholesky(3, t(1.0), validate_args=True), np.eye(3) * 2),
        (
            lambda d, t: d.Wishart(t(4.0), covariance_matrix=t(np.eye(2)), validate_args=True),
            -np.eye(2),
        ),
    ]:
        with pytest.raises(ValueError) as theirs:
            make(torch.distributions, torch.tensor).log_prob(torch.tensor(value))
        with pytest.raises(ValueError) as ours:
            make(sg.distributions, sg.tensor).log_prob(sg.tensor(value))
        assert str(ours.value).split("\n")[0][:60] == str(theirs.value).split("\n")[0][:60]
