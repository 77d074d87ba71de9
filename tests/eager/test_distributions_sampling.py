"""Samples (by statistics over many seeded draws: sourcegrad's streams are not torch's),
sample shapes, gradients through rsample, validation errors (torch's messages) and expand."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad as sg  # noqa: E402

d = sg.distributions
N = 20000


def _t(*values):
    return sg.tensor(values, dtype=sg.float64)


MOMENTS = [
    ("Normal", lambda: d.Normal(_t(1.0, -2.0), _t(0.5, 2.0))),
    ("Bernoulli", lambda: d.Bernoulli(probs=_t(0.2, 0.7))),
    ("Categorical", lambda: d.OneHotCategorical(probs=_t(0.2, 0.5, 0.3))),
    ("Uniform", lambda: d.Uniform(_t(0.0, -1.0), _t(1.0, 3.0))),
    ("Exponential", lambda: d.Exponential(_t(0.5, 3.0))),
    ("Laplace", lambda: d.Laplace(_t(1.0, -1.0), _t(0.5, 1.5))),
    ("Gamma", lambda: d.Gamma(_t(0.3, 4.0), _t(1.0, 2.0))),
    ("Beta", lambda: d.Beta(_t(0.5, 3.0), _t(2.0, 1.5))),
    ("Dirichlet", lambda: d.Dirichlet(_t(0.5, 2.0, 3.0))),
    ("LogNormal", lambda: d.LogNormal(_t(0.0, 0.5), _t(0.25, 0.5))),
    ("Poisson", lambda: d.Poisson(_t(0.5, 7.0))),
    ("Binomial", lambda: d.Binomial(10, probs=_t(0.3, 0.9))),
    (
        "MVN",
        lambda: d.MultivariateNormal(
            _t(1.0, -1.0), covariance_matrix=sg.tensor([[2.0, 0.6], [0.6, 1.0]], dtype=sg.float64)
        ),
    ),
    (
        "Mixture",
        lambda: d.MixtureSameFamily(
            d.Categorical(probs=_t(0.3, 0.7)), d.Normal(_t(-2.0, 2.0), _t(0.5, 1.0))
        ),
    ),
]


@pytest.mark.parametrize("name, make", MOMENTS, ids=[m[0] for m in MOMENTS])
def test_sample_moments_match_the_distribution(name, make):
    sg.manual_seed(0)
    dist = make()
    samples = dist.sample((N,))
    assert samples.shape == (N,) + tuple(dist.batch_shape) + tuple(dist.event_shape)
    x = samples.numpy()
    mean, var = dist.mean.detach().numpy(), dist.variance.detach().numpy()
    # five standard errors of the mean, and of the variance (fourth moment bounded loosely)
    np.testing.assert_array_less(np.abs(x.mean(0) - mean), 5 * np.sqrt(var / N) + 1e-12)
    np.testing.assert_allclose(x.var(0), var, rtol=0.1, atol=1e-3)


def test_categorical_sample_frequencies_and_shape():
    sg.manual_seed(1)
    probs = _t(0.1, 0.6, 0.3)
    samples = d.Categorical(probs=probs).sample((N, 2))
    assert samples.shape == (N, 2) and samples.dtype == sg.int64
    counts = np.bincount(samples.numpy().ravel(), minlength=3) / (2 * N)
    np.testing.assert_allclose(counts, [0.1, 0.6, 0.3], atol=0.01)


def test_shapes_follow_sample_batch_and_event_shapes_as_torch():
    for lib in (sg, torch):
        dd = lib.distributions
        normal = dd.Normal(lib.zeros(4, 3), lib.ones(4, 3))
        assert normal.sample((5, 2)).shape == (5, 2, 4, 3)
        assert normal.rsample().shape == (4, 3)
        ind = dd.Independent(normal, 1)
        assert (ind.batch_shape, ind.event_shape) == ((4,), (3,))
        assert ind.log_prob(ind.sample((7,))).shape == (7, 4)
        assert dd.Normal(0.0, 1.0).sample().shape == ()
        assert dd.Normal(0.0, 1.0).expand((2, 3)).sample((4,)).shape == (4, 2, 3)
        cat = dd.Categorical(logits=lib.zeros(2, 5))
        assert cat.sample((3,)).shape == (3, 2)
        assert cat.enumerate_support().shape == (5, 2)
        assert dd.OneHotCategorical(logits=lib.zeros(2, 5)).sample((3,)).shape == (3, 2, 5)
        mvn = dd.MultivariateNormal(lib.zeros(2, 3), lib.eye(3))
        assert (mvn.batch_shape, mvn.event_shape) == ((2,), (3,))
        assert mvn.rsample((6,)).shape == (6, 2, 3)


def test_rsample_gradients_are_the_reparameterisation():
    # d/dloc E[x] = 1 and d/dscale E[x^2] = 2 scale for a Normal: one draw each, exact
    sg.manual_seed(2)
    loc = _t(0.5).requires_grad_()
    scale = _t(2.0).requires_grad_()
    x = d.Normal(loc, scale).rsample((N,))
    (x**2).mean().backward()
    eps = (x.detach() - 0.5) / 2.0
    np.testing.assert_allclose(loc.grad.numpy(), (2 * x.detach()).mean().numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        scale.grad.numpy(), (2 * x.detach() * eps).mean().numpy(), rtol=1e-12
    )


@pytest.mark.parametrize("alpha", [0.4, 1.0, 5.0])
def test_gamma_rsample_gradient_is_unbiased(alpha):
    # E[x] = alpha / rate: the mean of the implicit gradients is d E[x] / d alpha = 1 / rate
    sg.manual_seed(3)
    concentration = _t(alpha).requires_grad_()
    rate = _t(2.0).requires_grad_()
    x = d.Gamma(concentration, rate).rsample((N,))
    x.mean().backward()
    assert concentration.grad.item() == pytest.approx(0.5, rel=0.05)
    assert rate.grad.item() == pytest.approx(-alpha / 4.0, rel=0.05)


def test_gamma_implicit_gradient_matches_finite_differences_of_the_quantile():
    scipy_special = pytest.importorskip("scipy.special")
    from sourcegrad.distributions.gamma import implicit_gamma_grad

    alpha, u = np.array([0.3, 2.0, 9.0]), np.array([0.2, 0.5, 0.9])
    x = scipy_special.gammaincinv(alpha, u)
    h = 1e-6
    numeric = (
        scipy_special.gammaincinv(alpha + h, u) - scipy_special.gammaincinv(alpha - h, u)
    ) / (2 * h)
    np.testing.assert_allclose(implicit_gamma_grad(alpha, x), numeric, rtol=1e-6)


def test_beta_rsample_gradient_is_unbiased():
    sg.manual_seed(4)
    a = _t(2.0).requires_grad_()
    b = _t(3.0).requires_grad_()
    d.Beta(a, b).rsample((N,)).mean().backward()
    # mean a / (a + b): d/da = b / (a+b)^2 = 0.12, d/db = -a / (a+b)^2 = -0.08
    assert a.grad.item() == pytest.approx(0.12, rel=0.05)
    assert b.grad.item() == pytest.approx(-0.08, rel=0.05)


def test_sample_has_no_gradient_and_has_rsample_flags_are_torchs():
    loc = _t(0.0).requires_grad_()
    assert not d.Normal(loc, 1.0).sample().requires_grad
    assert d.Normal(loc, 1.0).rsample().requires_grad
    for name in [
        "Normal",
        "Bernoulli",
        "Categorical",
        "Uniform",
        "Gamma",
        "Beta",
        "Poisson",
        "Exponential",
        "Laplace",
        "Dirichlet",
        "Binomial",
    ]:
        assert getattr(d, name).has_rsample == getattr(torch.distributions, name).has_rsample, name


def _message(lib, fn):
    with pytest.raises(ValueError) as info:
        fn(lib)
    return str(info.value)


VALIDATION = [
    lambda lib: lib.distributions.Normal(lib.tensor([0.0, 1.0]), lib.tensor([1.0, -1.0])),
    lambda lib: lib.distributions.Normal(0.0, 1.0).log_prob(lib.tensor([[1.0, float("nan")]])),
    lambda lib: lib.distributions.Bernoulli(probs=lib.tensor([0.5, 1.5])),
    lambda lib: lib.distributions.Bernoulli(probs=lib.tensor(0.5)).log_prob(lib.tensor(0.5)),
    lambda lib: lib.distributions.Bernoulli(probs=0.5, logits=0.0),
    lambda lib: lib.distributions.Categorical(probs=lib.tensor([0.5, -0.5])),
    lambda lib: lib.distributions.Categorical(logits=lib.zeros(3)).log_prob(lib.tensor(3)),
    lambda lib: lib.distributions.Categorical(logits=lib.tensor(1.0)),
    lambda lib: lib.distributions.Uniform(1.0, 0.0),
    lambda lib: lib.distributions.Gamma(lib.tensor([1.0]), lib.tensor([0.0])),
    lambda lib: lib.distributions.Exponential(lib.tensor([2.0])).log_prob(lib.tensor([-1.0])),
    lambda lib: lib.distributions.Poisson(lib.tensor([2.0])).log_prob(lib.tensor([1.5])),
    lambda lib: lib.distributions.Normal(lib.zeros(3), 1.0).log_prob(lib.zeros(2)),
    lambda lib: lib.distributions.Independent(
        lib.distributions.Normal(lib.zeros(3), 1.0), 1
    ).log_prob(lib.zeros(2)),
    lambda lib: lib.distributions.MultivariateNormal(
        lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]])
    ),
    lambda lib: lib.distributions.MultivariateNormal(
        lib.zeros(2), scale_tril=lib.tensor([[1.0, 1.0], [0.0, 1.0]])
    ),
    lambda lib: lib.distributions.MultivariateNormal(lib.zeros(2)),
    lambda lib: lib.distributions.Independent(lib.distributions.Normal(0.0, 1.0), 1),
]


@pytest.mark.parametrize("fn", VALIDATION)
def test_validation_raises_torchs_value_error(fn):
    assert _message(sg, fn) == _message(torch, fn)


def test_validation_can_be_turned_off_per_instance_and_by_default():
    assert d.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    d.Distribution.set_default_validate_args(False)
    try:
        assert d.Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        d.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        d.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        d.Distribution.set_default_validate_args("yes")


def test_constraints_reprs_and_checks_are_torchs():
    tc = torch.distributions.constraints
    sc = d.constraints
    for name in [
        "real",
        "positive",
        "nonnegative",
        "unit_interval",
        "simplex",
        "boolean",
        "nonnegative_integer",
        "lower_cholesky",
        "positive_definite",
        "real_vector",
    ]:
        assert repr(getattr(sc, name)) == repr(getattr(tc, name)), name
        assert getattr(sc, name).event_dim == getattr(tc, name).event_dim, name
    assert repr(sc.integer_interval(0, 3)) == repr(tc.integer_interval(0, 3))
    assert repr(sc.independent(sc.positive, 2)) == repr(tc.independent(tc.positive, 2))
    x = [[0.2, 0.8], [0.5, 0.6]]
    assert sc.simplex.check(sg.tensor(x)).tolist() == tc.simplex.check(torch.tensor(x)).tolist()
    m = [[[2.0, 0.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]
    for name in ["lower_cholesky", "positive_definite"]:
        ours = getattr(sc, name).check(sg.tensor(m)).tolist()
        assert ours == getattr(tc, name).check(torch.tensor(m)).tolist(), name
    assert d.Categorical(logits=sg.zeros(4)).support.upper_bound == 3
    assert d.constraints.is_dependent(d.Uniform.support)


def test_expand_keeps_values_and_gradients():
    loc = _t(0.5, 1.0).requires_grad_()
    dist = d.Normal(loc, 2.0).expand((3, 2))
    assert dist.batch_shape == (3, 2)
    dist.log_prob(sg.zeros(3, 2, dtype=sg.float64)).sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), 3 * -np.array([0.5, 1.0]) / 4)
    mvn = d.MultivariateNormal(sg.zeros(2, dtype=sg.float64), sg.eye(2, dtype=sg.float64))
    assert mvn.expand((4,)).log_prob(sg.zeros(4, 2, dtype=sg.float64)).shape == (4,)
    lp = d.LogNormal(0.0, 1.0).expand((2,)).log_prob(sg.ones(2))
    np.testing.assert_allclose(lp.numpy(), -0.5 * math.log(2 * math.pi), rtol=1e-6)


def test_module_paths_are_torchs():
    from sourcegrad.distributions import constraints, transforms
    from sourcegrad.distributions.categorical import Categorical
    from sourcegrad.distributions.kl import kl_divergence, register_kl
    from sourcegrad.distributions.normal import Normal

    assert Normal is d.Normal and Categorical is d.Categorical
    assert kl_divergence is d.kl_divergence and register_kl is d.register_kl
    assert constraints.positive is d.constraints.positive
    assert transforms.ExpTransform is d.ExpTransform


def test_categorical_never_draws_a_zero_weight_category():
    sg.manual_seed(5)
    probs = sg.tensor([[0.0, 0.5, 0.0, 0.5], [1.0, 0.0, 0.0, 0.0]], dtype=sg.float64)
    samples = d.Categorical(probs=probs).sample((N,)).numpy()
    assert set(np.unique(samples[:, 0])) == {1, 3}
    assert set(np.unique(samples[:, 1])) == {0}
