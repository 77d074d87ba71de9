"""The distributions added after the first set (Cauchy, StudentT, Chi2, Geometric,
NegativeBinomial, Multinomial, HalfNormal, HalfCauchy, ...) against torch.distributions:
values and parameter gradients in float64 (~1e-10), their KL pairs, samples by statistics
(seeded; sourcegrad's streams are not torch's), shapes and torch's validation errors.
"""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad as sg  # noqa: E402

RNG = np.random.default_rng(2)
POS = RNG.uniform(0.5, 2.0, (3,))
POS2 = RNG.uniform(0.5, 2.0, (3,))
REAL = RNG.normal(size=(3,))
UNIT = RNG.uniform(0.1, 0.9, (3,))
SIMPLEX = RNG.dirichlet(np.ones(4), size=2)
LOGITS = RNG.normal(size=(2, 4))
COUNTS = np.array([[[1.0, 0.0, 3.0, 1.0], [0.0, 0.0, 2.0, 3.0]], [[5.0, 0, 0, 0], [1, 1, 1, 2]]])

D = "log_prob entropy mean variance stddev"
CASES = {
    "Cauchy": (
        lambda d, p: d.Cauchy(p["loc"], p["s"]),
        {"loc": REAL, "s": POS},
        RNG.normal(size=(2, 3)) * 3,
        D + " mode cdf icdf",
    ),
    # df below 1, in (1, 2] and above 2: mean nan / loc, variance nan / inf / finite
    "StudentT": (
        lambda d, p: d.StudentT(p["df"], p["loc"], p["s"]),
        {"df": np.array([0.7, 1.5, 4.0]), "loc": REAL, "s": POS},
        RNG.normal(size=(2, 3)),
        D + " mode",
    ),
    "StudentT-standard": (
        lambda d, p: d.StudentT(p["df"]),
        {"df": POS * 3},
        REAL,
        "log_prob entropy mean variance",
    ),
    "Chi2": (lambda d, p: d.Chi2(p["df"]), {"df": POS * 3}, POS2, D + " mode"),
    "Geometric-probs": (
        lambda d, p: d.Geometric(probs=p["p"]),
        {"p": UNIT},
        np.array([[0.0, 3.0, 1.0], [7.0, 0.0, 2.0]]),
        D + " mode",
    ),
    "Geometric-logits": (
        lambda d, p: d.Geometric(logits=p["l"]),
        {"l": REAL},
        np.array([0.0, 3.0, 1.0]),
        D,
    ),
    "NegativeBinomial-probs": (
        lambda d, p: d.NegativeBinomial(p["n"], probs=p["p"]),
        {"n": POS * 4, "p": UNIT},
        np.array([[0.0, 3.0, 1.0], [7.0, 0.0, 2.0]]),
        "log_prob mean variance stddev mode",
    ),
    "NegativeBinomial-logits": (
        lambda d, p: d.NegativeBinomial(p["n"], logits=p["l"]),
        {"n": POS * 4, "l": REAL},
        np.array([2.0, 0.0, 5.0]),
        "log_prob mean variance mode",
    ),
    "Multinomial-probs": (
        lambda d, p: d.Multinomial(5, probs=p["p"]),
        {"p": SIMPLEX},
        COUNTS,
        "log_prob entropy mean variance",
    ),
    "Multinomial-logits": (
        lambda d, p: d.Multinomial(5, logits=p["l"]),
        {"l": LOGITS},
        COUNTS,
        "log_prob entropy mean variance",
    ),
    "HalfNormal": (
        lambda d, p: d.HalfNormal(p["s"]),
        {"s": POS},
        np.array([[0.3, 1.2, 0.0], [2.0, 0.1, 4.0]]),
        D + " mode cdf icdf",
    ),
    "HalfCauchy": (
        lambda d, p: d.HalfCauchy(p["s"]),
        {"s": POS},
        np.array([[0.3, 1.2, 0.0], [2.0, 0.1, 4.0]]),
        "log_prob entropy mean variance mode cdf icdf",
    ),
    "Weibull": (
        lambda d, p: d.Weibull(p["s"], p["k"]),
        {"s": POS, "k": POS2 + 1},
        np.array([[0.3, 1.2, 0.5], [2.0, 0.1, 4.0]]),
        D + " mode cdf icdf",
    ),
    "Gumbel": (
        lambda d, p: d.Gumbel(p["loc"], p["s"]),
        {"loc": REAL, "s": POS},
        RNG.normal(size=(2, 3)),
        D + " mode cdf icdf",
    ),
    "Pareto": (
        lambda d, p: d.Pareto(p["s"], p["a"]),
        {"s": POS, "a": np.array([0.5, 1.5, 3.0])},
        POS[None] + np.array([[0.0], [1.5]]),
        D + " mode cdf icdf",
    ),
    # the same without the moments, whose infinite entries make torch's gradient nan
    "Pareto-no-moments": (
        lambda d, p: d.Pareto(p["s"], p["a"]),
        {"s": POS, "a": np.array([0.5, 1.5, 3.0])},
        POS[None] + np.array([[0.0], [1.5]]),
        "log_prob entropy mode cdf icdf",
    ),
    "RelaxedBernoulli-probs": (
        lambda d, p: d.RelaxedBernoulli(p["t"], probs=p["p"]),
        {"t": np.array(0.7), "p": UNIT},
        np.array([[0.3, 0.9, 0.5], [0.01, 0.6, 0.99]]),
        "log_prob",
    ),
    "RelaxedBernoulli-logits": (
        lambda d, p: d.RelaxedBernoulli(p["t"], logits=p["l"]),
        {"t": np.array(2.0), "l": REAL},
        np.array([0.3, 0.9, 0.5]),
        "log_prob",
    ),
    "RelaxedOneHotCategorical": (
        lambda d, p: d.RelaxedOneHotCategorical(p["t"], logits=p["l"]),
        {"t": np.array(0.5), "l": LOGITS},
        RNG.dirichlet(np.ones(4), size=(3, 2)),
        "log_prob",
    ),
    "RelaxedOneHotCategorical-probs": (
        lambda d, p: d.RelaxedOneHotCategorical(p["t"], probs=p["p"]),
        {"t": np.array(1.5), "p": SIMPLEX},
        SIMPLEX[::-1].copy(),
        "log_prob",
    ),
    "LowRankMVN": (
        lambda d, p: d.LowRankMultivariateNormal(p["loc"], p["W"], p["D"]),
        {"loc": RNG.normal(size=(2, 3)), "W": RNG.normal(size=(3, 2)), "D": POS},
        RNG.normal(size=(4, 2, 3)),
        "log_prob entropy mean variance stddev mode covariance_matrix precision_matrix scale_tril",
    ),
    "LowRankMVN-batched-factor": (
        lambda d, p: d.LowRankMultivariateNormal(p["loc"], p["W"], p["D"]),
        {"loc": REAL, "W": RNG.normal(size=(2, 3, 1)), "D": RNG.uniform(0.5, 2, (2, 3))},
        RNG.normal(size=(3,)),
        "log_prob entropy variance covariance_matrix precision_matrix",
    ),
    # 0.4995 lies in the taylor region around 1/2 (lims 0.499, 0.501)
    "ContinuousBernoulli-probs": (
        lambda d, p: d.ContinuousBernoulli(probs=p["p"]),
        {"p": np.array([0.2, 0.4995, 0.93])},
        np.array([[0.3, 0.9, 0.5], [0.01, 0.6, 0.99]]),
        D + " cdf icdf",
    ),
    "ContinuousBernoulli-logits": (
        lambda d, p: d.ContinuousBernoulli(logits=p["l"]),
        {"l": REAL * 2},
        np.array([0.3, 0.9, 0.5]),
        D + " cdf icdf",
    ),
}


def _evaluate(lib, make, params, value, quantities):
    """Every named quantity of `make(lib.distributions, leaves)` and the gradient of the
    sum of the differentiable ones with respect to each parameter leaf."""
    leaves = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in params.items()}
    dist = make(lib.distributions, leaves)
    value_t = lib.tensor(value, dtype=lib.float64)
    out = {}
    for name in quantities.split():
        if name in ("log_prob", "cdf"):
            out[name] = getattr(dist, name)(value_t)
        elif name == "icdf":
            out[name] = dist.icdf(lib.tensor(np.full(dist.batch_shape, 0.3), dtype=lib.float64))
        elif name == "entropy":
            out[name] = dist.entropy()
        else:
            out[name] = getattr(dist, name)
    # the finite entries only (a StudentT's mean is nan where df <= 1, its variance inf)
    finite = [
        lib.where(t.isfinite(), t, lib.zeros_like(t)).sum() for t in out.values() if t.requires_grad
    ]
    sum(finite).backward()
    grads = {k: None if leaf.grad is None else leaf.grad.numpy() for k, leaf in leaves.items()}
    values = {k: v.detach().numpy() for k, v in out.items()}
    return values, grads, (tuple(dist.batch_shape), tuple(dist.event_shape))


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name):
    ours, our_grads, our_shapes = _evaluate(sg, *CASES[name])
    theirs, their_grads, their_shapes = _evaluate(torch, *CASES[name])
    assert our_shapes == their_shapes
    assert ours.keys() == theirs.keys()
    if name.startswith("Multinomial"):
        # torch's Multinomial.entropy takes lgamma(n + 1) of an int64 n, in float32; ours
        # is float64: put torch's float32 rounding (5.6e-8 at n = 5) back before comparing
        theirs["entropy"] += torch.lgamma(torch.tensor(5) + 1).item() - math.lgamma(6)
    for key, value in theirs.items():
        np.testing.assert_allclose(ours[key], value, rtol=1e-10, atol=1e-10, err_msg=key)
    for key, grad in their_grads.items():
        assert (our_grads[key] is None) == (grad is None), key
        if grad is not None:
            # torch's Pareto mean and variance (a * scale / (a - 1), a = alpha.clamp(min=1))
            # send 0 * inf = nan back from their infinite entries, though those entries are
            # left out of the sum; ours give the finite entries' gradient there
            assert np.isfinite(our_grads[key]).all(), key
            grad = np.where(np.isnan(grad), our_grads[key], grad) if name == "Pareto" else grad
            # 1e-8: torch's digamma/trigamma are scipy's to ~1e-10
            np.testing.assert_allclose(our_grads[key], grad, rtol=1e-8, atol=1e-9, err_msg=key)


def test_chi2_cdf_matches_torch_and_raises_for_a_df_gradient_as_torch():
    # igamma has no derivative in its shape in torch either: both raise, neither is wrong
    def cdf(lib):
        df = lib.tensor(POS * 3, dtype=lib.float64)
        return lib.distributions.Chi2(df).cdf(lib.tensor(POS2, dtype=lib.float64)).numpy()

    np.testing.assert_allclose(cdf(sg), cdf(torch), rtol=1e-10)
    df = sg.tensor(POS * 3, dtype=sg.float64, requires_grad=True)
    with pytest.raises(sg.SourcegradError, match="no derivative rule"):
        sg.distributions.Chi2(df).cdf(sg.tensor(POS2, dtype=sg.float64)).sum().backward()


def _pos(*shape):
    return RNG.uniform(0.5, 2.0, shape)


KL_PAIRS = {
    "Cauchy": (lambda d, a, b: d.Cauchy(a, b), lambda: (RNG.normal(size=3), _pos(3))),
    "Geometric": (lambda d, a: d.Geometric(probs=a), lambda: (RNG.uniform(0.1, 0.9, 3),)),
    "HalfNormal": (lambda d, a: d.HalfNormal(a), lambda: (_pos(3),)),
    "Chi2": (lambda d, a: d.Chi2(a), lambda: (_pos(3) * 3,)),
    "Gumbel": (lambda d, a, b: d.Gumbel(a, b), lambda: (RNG.normal(size=3), _pos(3))),
    "Pareto": (lambda d, a, b: d.Pareto(a, b), lambda: (_pos(3), _pos(3) + 2)),
    "LowRankMVN": (
        lambda d, a, b, c: d.LowRankMultivariateNormal(a, b, c),
        lambda: (RNG.normal(size=(2, 3)), RNG.normal(size=(3, 2)), _pos(3)),
    ),
}

CROSS = {
    "Normal": (lambda d, a, b: d.Normal(a, b), lambda: (RNG.normal(size=3), _pos(3))),
    "Gumbel": KL_PAIRS["Gumbel"],
    "Pareto": KL_PAIRS["Pareto"],
    "Exponential": (lambda d, a: d.Exponential(a), lambda: (_pos(3),)),
    "Gamma": (lambda d, a, b: d.Gamma(a, b), lambda: (_pos(3), _pos(3))),
    "Uniform": (lambda d, a, b: d.Uniform(a, a + b), lambda: (_pos(3) + 1, _pos(3))),
    "Beta": (lambda d, a, b: d.Beta(a, b), lambda: (_pos(3), _pos(3))),
    "Laplace": (lambda d, a, b: d.Laplace(a, b), lambda: (RNG.normal(size=3), _pos(3))),
    "ContinuousBernoulli": (
        lambda d, a: d.ContinuousBernoulli(logits=a),
        lambda: (RNG.normal(size=3),),
    ),
    # inside (0, 1) and strictly around [0, 1]: finite both ways with a ContinuousBernoulli
    "Uniform-inner": (lambda d, a, b: d.Uniform(a, a + b), lambda: (_pos(3) * 0.2, _pos(3) * 0.2)),
    "Uniform-outer": (lambda d, a, b: d.Uniform(-a, 1 + b), lambda: (_pos(3), _pos(3))),
}
# two TransformedDistributions with different transforms, or a pair torch has no rule for
NO_RULE = {
    ("Pareto", "Gumbel"),
    ("ContinuousBernoulli", "Gamma"),
    ("ContinuousBernoulli", "Beta"),
    ("ContinuousBernoulli", "Gumbel"),
}
CROSS_PAIRS = [
    (p, q)
    for p in CROSS
    for q in CROSS
    if p != q
    and ("Gumbel" in (p, q) or "Pareto" in (p, q))
    and "Laplace" != q
    and (p, q) not in {("Laplace", "Gumbel"), ("Beta", "Gumbel")}
]


def _kl(lib, make, p_params, q_params):
    p_leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in p_params]
    q_leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in q_params]
    d = lib.distributions
    kl = d.kl_divergence(make(d, *p_leaves), make(d, *q_leaves))
    kl.sum().backward()
    return kl.detach().numpy(), [t.grad.numpy() for t in p_leaves + q_leaves]


@pytest.mark.parametrize("name", sorted(KL_PAIRS))
def test_kl_values_and_gradients_match_torch(name):
    make, params = KL_PAIRS[name]
    p_params, q_params = params(), params()
    ours, our_grads = _kl(sg, make, p_params, q_params)
    theirs, their_grads = _kl(torch, make, p_params, q_params)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)
    for mine, reference in zip(our_grads, their_grads):
        np.testing.assert_allclose(mine, reference, rtol=1e-8, atol=1e-9)


def _kl_between(lib, p_name, q_name, p_params, q_params):
    p_make, q_make = CROSS[p_name][0], CROSS[q_name][0]
    p_leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in p_params]
    q_leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in q_params]
    d = lib.distributions
    kl = d.kl_divergence(p_make(d, *p_leaves), q_make(d, *q_leaves))
    grads = []
    if kl.requires_grad:
        kl.sum().backward()
        grads = [t.grad.numpy() for t in p_leaves + q_leaves]
    return kl.detach().numpy(), grads


@pytest.mark.parametrize("p_name, q_name", CROSS_PAIRS, ids=["-".join(c) for c in CROSS_PAIRS])
def test_kl_between_families_matches_torch(p_name, q_name):
    # finite closed forms, and the infinite pairs (p's support reaching outside q's)
    p_params, q_params = CROSS[p_name][1](), CROSS[q_name][1]()
    if (p_name, q_name) in NO_RULE:
        # no rule in torch either (e.g. two TransformedDistributions, different transforms)
        for lib in (sg, torch):
            with pytest.raises(NotImplementedError):
                _kl_between(lib, p_name, q_name, p_params, q_params)
        return
    ours, our_grads = _kl_between(sg, p_name, q_name, p_params, q_params)
    theirs, their_grads = _kl_between(torch, p_name, q_name, p_params, q_params)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)
    assert len(our_grads) == len(their_grads)
    for mine, reference in zip(our_grads, their_grads):
        np.testing.assert_allclose(mine, reference, rtol=1e-8, atol=1e-9)


def _spd(n):
    a = RNG.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


MIXED_MVN = {
    "LowRank-MVN": (
        lambda dd, p: dd.LowRankMultivariateNormal(p[0], p[1], p[2]),
        lambda dd, p: dd.MultivariateNormal(p[0], covariance_matrix=p[1]),
        lambda: (
            [RNG.normal(size=(2, 3)), RNG.normal(size=(3, 2)), _pos(3)],
            [RNG.normal(size=3), _spd(3)],
        ),
    ),
    "MVN-LowRank": (
        lambda dd, p: dd.MultivariateNormal(p[0], scale_tril=p[1]),
        lambda dd, p: dd.LowRankMultivariateNormal(p[0], p[1], p[2]),
        lambda: (
            [RNG.normal(size=3), np.linalg.cholesky(_spd(3))],
            [RNG.normal(size=(2, 3)), RNG.normal(size=(3, 1)), _pos(3)],
        ),
    ),
}


@pytest.mark.parametrize("name", list(MIXED_MVN))
def test_kl_between_low_rank_and_full_normals_matches_torch(name):
    make_p, make_q, params = MIXED_MVN[name]
    p_params, q_params = params()

    def run(lib):
        p_leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in p_params]
        q_leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in q_params]
        dd = lib.distributions
        kl = dd.kl_divergence(make_p(dd, p_leaves), make_q(dd, q_leaves))
        kl.sum().backward()
        return [kl.detach().numpy()] + [t.grad.numpy() for t in p_leaves + q_leaves]

    for mine, reference in zip(run(sg), run(torch)):
        np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-10)


def test_low_rank_normal_samples_have_its_covariance_and_its_errors_are_torchs():
    sg.manual_seed(8)
    w = sg.tensor([[1.0, 0.5], [-0.5, 0.2], [0.3, 1.0]], dtype=sg.float64)
    dist = d.LowRankMultivariateNormal(_t(1.0, -1.0, 0.0), w, _t(0.5, 1.0, 0.2))
    x = dist.sample((N,)).numpy()
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.mean(0), [1.0, -1.0, 0.0], atol=0.05)
    np.testing.assert_allclose(np.cov(x.T), dist.covariance_matrix.numpy(), atol=0.06)
    for lib in (sg, torch):
        lr = lib.distributions.LowRankMultivariateNormal
        with pytest.raises(ValueError, match="cov_factor must be a batch of matrices"):
            lr(lib.zeros(3), lib.zeros(2, 1), lib.ones(3))
        with pytest.raises(ValueError, match="cov_diag must be a batch of vectors"):
            lr(lib.zeros(3), lib.zeros(3, 1), lib.ones(2))
        with pytest.raises(ValueError, match="cov_diag"):
            lr(lib.zeros(3), lib.zeros(3, 1), -lib.ones(3))


N = 20000
d = sg.distributions


def _t(*values):
    return sg.tensor(values, dtype=sg.float64)


MOMENTS = [
    ("StudentT", lambda: d.StudentT(_t(5.0, 9.0), _t(1.0, -2.0), _t(0.5, 2.0))),
    ("Chi2", lambda: d.Chi2(_t(0.5, 6.0))),
    ("Geometric", lambda: d.Geometric(probs=_t(0.3, 0.8))),
    ("NegativeBinomial", lambda: d.NegativeBinomial(_t(2.5, 10.0), probs=_t(0.3, 0.6))),
    (
        "Multinomial",
        lambda: d.Multinomial(7, probs=sg.tensor([[0.2, 0.5, 0.3], [0.9, 0.05, 0.05]])),
    ),
    ("HalfNormal", lambda: d.HalfNormal(_t(0.5, 2.0))),
    ("Weibull", lambda: d.Weibull(_t(1.0, 2.0), _t(0.8, 3.0))),
    ("Gumbel", lambda: d.Gumbel(_t(1.0, -2.0), _t(0.5, 2.0))),
    ("Pareto", lambda: d.Pareto(_t(1.0, 2.0), _t(6.0, 9.0))),
    ("ContinuousBernoulli", lambda: d.ContinuousBernoulli(probs=_t(0.1, 0.5, 0.8))),
]


@pytest.mark.parametrize("name, make", MOMENTS, ids=[m[0] for m in MOMENTS])
def test_sample_moments_match_the_distribution(name, make):
    sg.manual_seed(0)
    dist = make()
    samples = dist.sample((N,))
    assert samples.shape == (N,) + tuple(dist.batch_shape) + tuple(dist.event_shape)
    assert not samples.requires_grad
    x = samples.numpy()
    mean, var = dist.mean.detach().numpy(), dist.variance.detach().numpy()
    # five standard errors of the mean; the variance to 10% (heavy tails: StudentT df >= 5)
    np.testing.assert_array_less(np.abs(x.mean(0) - mean), 5 * np.sqrt(var / N) + 1e-12)
    np.testing.assert_allclose(x.var(0), var, rtol=0.1, atol=1e-3)
    if dist.support.is_discrete:
        assert np.all(x == np.round(x)) and np.all(x >= 0)


@pytest.mark.parametrize("name", ["Cauchy", "HalfCauchy"])
def test_heavy_tailed_samples_follow_the_cdf(name):
    # no moments: compare the empirical cdf at the quartiles with 1/4, 1/2, 3/4
    sg.manual_seed(3)
    dist = d.Cauchy(_t(1.0), _t(2.0)) if name == "Cauchy" else d.HalfCauchy(_t(2.0))
    x = dist.sample((N,)).numpy()[:, 0]
    for level in (0.25, 0.5, 0.75):
        quantile = dist.icdf(_t(level)).item()
        assert abs((x <= quantile).mean() - level) < 0.015


def test_rsample_gradients_flow_to_the_parameters():
    # d/dscale of mean(loc + scale * eps) is mean(eps); StudentT's df gets the implicit
    # gradient through its Chi2 draw: E[d sample / d df] is 0 by symmetry
    sg.manual_seed(4)
    loc, scale = _t(0.5).requires_grad_(), _t(2.0).requires_grad_()
    eps = d.Cauchy(loc, scale).rsample((1000,))
    eps.sum().backward()
    assert loc.grad.item() == 1000
    np.testing.assert_allclose(scale.grad.item(), ((eps.detach() - 0.5) / 2.0).sum().item())
    df = _t(4.0).requires_grad_()
    sample = d.StudentT(df).rsample((N,))
    sample.mean().backward()
    assert abs(df.grad.item()) < 0.02
    assert d.HalfNormal(_t(1.0)).has_rsample and not d.Geometric(_t(0.5)).has_rsample


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda lib: lib.distributions.Cauchy(0.0, -1.0), "scale"),
        (lambda lib: lib.distributions.StudentT(-1.0), "df"),
        (lambda lib: lib.distributions.Chi2(lib.tensor([-1.0])), "df"),
        (lambda lib: lib.distributions.Geometric(lib.tensor([0.0])), "to be positive"),
        (lambda lib: lib.distributions.Geometric(lib.tensor([1.5])), "probs"),
        (lambda lib: lib.distributions.NegativeBinomial(-1.0, lib.tensor(0.5)), "total_count"),
        (lambda lib: lib.distributions.NegativeBinomial(2.0, lib.tensor(1.0)), "probs"),
        (lambda lib: lib.distributions.Multinomial(3, lib.tensor([-0.5, 1.5])), "probs"),
        (lambda lib: lib.distributions.HalfNormal(lib.tensor([0.0])), "scale"),
        (lambda lib: lib.distributions.HalfCauchy(-2.0), "scale"),
        (lambda lib: lib.distributions.Geometric(probs=0.5, logits=0.0), "not both"),
        (lambda lib: lib.distributions.NegativeBinomial(1.0), "not both"),
    ],
)
def test_invalid_parameters_raise_torchs_errors(make, message):
    for lib in (sg, torch):
        with pytest.raises(ValueError, match=message):
            make(lib)


@pytest.mark.parametrize(
    "make, value",
    [
        (lambda lib: lib.distributions.HalfNormal(lib.tensor([1.0])), [-0.5]),
        (lambda lib: lib.distributions.Geometric(lib.tensor([0.5])), [1.5]),
        (lambda lib: lib.distributions.NegativeBinomial(2.0, lib.tensor([0.5])), [-1.0]),
        (lambda lib: lib.distributions.Multinomial(3, lib.tensor([0.5, 0.5])), [3.0, 1.0]),
    ],
)
def test_values_outside_the_support_raise_as_torch(make, value):
    for lib in (sg, torch):
        with pytest.raises(ValueError, match="to be within the support"):
            make(lib).log_prob(lib.tensor(value))


def test_multinomial_log_prob_needs_no_total_count_and_shapes_are_torchs():
    # torch's documented use: Multinomial(probs=...) scores counts of any total (the
    # value in torch's docstring, -4.1338, is stale: this is the multinomial pmf's log)
    expected = (
        math.lgamma(101) - sum(math.lgamma(k + 1) for k in (21, 24, 30, 25)) + 100 * math.log(0.25)
    )
    for lib in (sg, torch):
        probs = lib.tensor([1.0, 1.0, 1.0, 1.0], dtype=lib.float64)
        counts = lib.tensor([21.0, 24.0, 30.0, 25.0], dtype=lib.float64)
        m = lib.distributions.Multinomial(probs=probs, validate_args=False)
        assert m.log_prob(counts).item() == pytest.approx(expected, rel=1e-12)
        big = lib.distributions.Multinomial(10, probs=lib.ones(2, 3) / 3)
        assert (big.batch_shape, big.event_shape) == ((2,), (3,))
        assert big.sample((5,)).shape == (5, 2, 3)
        assert big.expand((4, 2)).sample().shape == (4, 2, 3)
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        d.Multinomial(sg.tensor([2, 3]), probs=sg.ones(2))


def test_expand_keeps_values_and_the_half_distributions_fold_at_zero():
    for lib in (sg, torch):
        dd = lib.distributions
        t = dd.StudentT(lib.tensor([3.0]), 1.0, 2.0).expand((4, 1))
        assert t.batch_shape == (4, 1) and t.sample().shape == (4, 1)
        nb = dd.NegativeBinomial(lib.tensor(3.0), logits=lib.tensor(0.2)).expand((2,))
        assert nb.log_prob(lib.tensor([1.0, 2.0])).shape == (2,)
        h = dd.HalfNormal(lib.tensor([1.0]), validate_args=False)
        assert h.log_prob(lib.tensor([-1.0])).item() == -math.inf
        assert dd.Chi2(lib.tensor(2.0)).expand((3,)).df.shape == (3,)
        assert isinstance(dd.Chi2(2.0), dd.Gamma)


def _transforms(lib):
    """name -> (transform, input x), the same transforms in sourcegrad and torch."""
    t = lib.distributions.transforms
    x = lib.tensor(RNG_T.normal(size=(2, 3)), dtype=lib.float64, requires_grad=True)
    exponent = lib.tensor([0.5, 2.0, 1.5], dtype=lib.float64)
    return {
        "Power": (t.PowerTransform(exponent), x.exp()),
        "Abs": (t.AbsTransform(), x),
        "Softmax": (t.SoftmaxTransform(), x),
        "StickBreaking": (t.StickBreakingTransform(), x),
        "Reshape": (t.ReshapeTransform((3,), (3, 1)), x),
        "Independent": (t.IndependentTransform(t.SigmoidTransform(), 1), x),
        "Independent-Power": (t.IndependentTransform(t.PowerTransform(exponent), 2), x.exp()),
    }


RNG_T = np.random.default_rng(5)
TRANSFORMS = list(_transforms(sg))
# bijective ones have a log |det J|; Softmax and Abs are not bijective, torch has none
WITH_JACOBIAN = {"Power", "StickBreaking", "Reshape", "Independent", "Independent-Power"}


def _apply(lib, name):
    transform, x = _transforms(lib)[name]
    y = transform(x)
    x_back = transform.inv(y)
    out = {"y": y, "x_back": x_back}
    if name in WITH_JACOBIAN:
        out["ladj"] = transform.log_abs_det_jacobian(x, y)
    total = sum(v.sum() for v in out.values())
    (grad,) = lib.autograd.grad(total, x)
    shapes = (tuple(transform.forward_shape(x.shape)), tuple(transform.inverse_shape(y.shape)))
    info = (transform.domain.event_dim, transform.codomain.event_dim, transform.bijective)
    return {k: v.detach().numpy() for k, v in out.items()}, grad.numpy(), shapes, info


@pytest.mark.parametrize("name", TRANSFORMS)
def test_transforms_match_torch(name):
    RNG_T.bit_generator.state = np.random.default_rng(5).bit_generator.state
    ours, our_grad, our_shapes, our_info = _apply(sg, name)
    RNG_T.bit_generator.state = np.random.default_rng(5).bit_generator.state
    theirs, their_grad, their_shapes, their_info = _apply(torch, name)
    assert (our_shapes, our_info) == (their_shapes, their_info)
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():
        np.testing.assert_allclose(ours[key], value, rtol=1e-10, atol=1e-12, err_msg=key)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-9, atol=1e-12)


def test_stick_breaking_log_det_is_the_jacobians_by_finite_differences():
    # the map's first K - 1 outputs as a function of x: their Jacobian's log |det|
    transform = d.transforms.StickBreakingTransform()
    x = np.array([0.3, -1.2, 0.7])

    def head(values):
        return transform(sg.tensor(values, dtype=sg.float64)).numpy()[:-1]

    h = 1e-6
    jac = np.stack([(head(x + h * e) - head(x - h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    x_t = sg.tensor(x, dtype=sg.float64)
    ladj = transform.log_abs_det_jacobian(x_t, transform(x_t)).item()
    assert ladj == pytest.approx(np.linalg.slogdet(jac)[1], abs=1e-8)
    assert transform(x_t).sum().item() == pytest.approx(1.0, abs=1e-15)


def test_reshape_and_independent_transform_errors_are_torchs():
    for lib in (sg, torch):
        t = lib.distributions.transforms
        with pytest.raises(ValueError, match="different numbers of elements"):
            t.ReshapeTransform((2, 3), (5,))
        with pytest.raises(ValueError, match="Shape mismatch"):
            t.ReshapeTransform((2, 3), (6,)).forward_shape((4, 3, 2))
        with pytest.raises(ValueError, match="Too few dimensions on input"):
            t.StickBreakingTransform().forward_shape(())


def _constraints(lib):
    c = lib.distributions.constraints
    return {
        "real": c.real,
        "positive": c.positive,
        "nonnegative": c.nonnegative,
        "greater_than": c.greater_than(-1.5),
        "greater_than_eq": c.greater_than_eq(2.0),
        "less_than": c.less_than(3.0),
        "unit_interval": c.unit_interval,
        "interval": c.interval(-2.0, 5.0),
        "half_open_interval": c.half_open_interval(1.0, 2.0),
        "simplex": c.simplex,
        "real_vector": c.real_vector,
        "independent-positive": c.independent(c.positive, 1),
    }


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", list(_constraints(sg)))
def test_biject_to_and_transform_to_match_torch(registry, name):
    def run(lib):
        constraint = _constraints(lib)[name]
        transform = getattr(lib.distributions, registry)(constraint)
        x = lib.tensor(np.linspace(-2, 2, 12).reshape(4, 3), dtype=lib.float64)
        x.requires_grad_()
        y = transform(x)
        assert bool(constraint.check(y).all())
        total = y.sum()
        if transform.bijective:
            total = total + transform.log_abs_det_jacobian(x, y).sum()
        (grad,) = lib.autograd.grad(total, x)
        return y.detach().numpy(), transform.inv(y).detach().numpy(), grad.numpy()

    for mine, reference in zip(run(sg), run(torch)):
        np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12)


def test_unregistered_constraints_raise_torchs_errors():
    c = d.constraints
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        d.biject_to(c.boolean)
    with pytest.raises(NotImplementedError, match="Cannot transform _Simplex constraints"):
        d.constraint_registry.ConstraintRegistry()(c.simplex)  # a new registry is empty
    with pytest.raises(TypeError, match="Expected constraint to be either"):
        d.biject_to.register(int, lambda constraint: None)


def test_a_dirichlet_like_density_through_stick_breaking_matches_torch():
    def log_prob(lib):
        loc = lib.tensor([0.2, -0.3, 0.5], dtype=lib.float64, requires_grad=True)
        dd = lib.distributions
        dist = dd.TransformedDistribution(
            dd.Independent(dd.Normal(loc, 1.0), 1), dd.transforms.StickBreakingTransform()
        )
        value = lib.tensor([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]], dtype=lib.float64)
        lp = dist.log_prob(value)
        lp.sum().backward()
        return lp.detach().numpy(), loc.grad.numpy(), tuple(dist.event_shape)

    (ours, our_grad, our_shape), (theirs, their_grad, their_shape) = log_prob(sg), log_prob(torch)
    assert our_shape == their_shape == (4,)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-10)


@pytest.mark.parametrize("temperature", [0.05, 1.0])
def test_relaxed_samples_follow_the_concrete_distribution(temperature):
    # P(RelaxedBernoulli > 1/2) = P(logits + logistic noise > 0) = probs at any temperature;
    # the argmax of a RelaxedOneHotCategorical is a Categorical(probs) draw
    sg.manual_seed(6)
    t = sg.tensor(temperature, dtype=sg.float64)
    probs = _t(0.2, 0.7)
    x = d.RelaxedBernoulli(t, probs=probs).sample((N,)).numpy()
    assert x.shape == (N, 2) and np.all((x > 0) & (x < 1))
    np.testing.assert_allclose((x > 0.5).mean(0), [0.2, 0.7], atol=0.015)
    cat = sg.tensor([0.1, 0.6, 0.3], dtype=sg.float64)
    y = d.RelaxedOneHotCategorical(t, probs=cat).sample((N,)).numpy()
    assert y.shape == (N, 3)
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(
        np.bincount(y.argmax(-1), minlength=3) / N, [0.1, 0.6, 0.3], atol=0.015
    )
    if temperature < 0.1:  # nearly one-hot at a low temperature
        assert np.median(y.max(-1)) > 0.99


def test_relaxed_rsample_is_reparameterised_in_the_logits_and_the_temperature():
    # sigmoid((logits + noise) / t): d sample / d logits = s (1 - s) / t, checked per draw
    sg.manual_seed(7)
    logits = _t(0.3, -1.0).requires_grad_()
    t = sg.tensor(0.5, dtype=sg.float64, requires_grad=True)
    dist = d.RelaxedBernoulli(t, logits=logits)
    assert dist.has_rsample and dist.batch_shape == (2,)
    s = dist.rsample((5,))
    s.sum().backward()
    expected = (s * (1 - s) / 0.5).detach().numpy().sum(0)
    np.testing.assert_allclose(logits.grad.numpy(), expected, rtol=1e-6)
    assert t.grad is not None and np.isfinite(t.grad.item())
    logits_c = sg.tensor([[0.1, 0.5, -0.2]], dtype=sg.float64, requires_grad=True)
    y = d.RelaxedOneHotCategorical(t, logits=logits_c).rsample((4,))
    (y[..., 0]).sum().backward()
    assert y.shape == (4, 1, 3) and np.all(np.isfinite(logits_c.grad.numpy()))
    with pytest.raises(ValueError, match="not both"):
        d.RelaxedBernoulli(t, probs=0.5, logits=0.0)


def test_continuous_bernoulli_kl_against_the_unit_uniform_is_finite():
    # torch calls both directions infinite at the shared boundary (low = 0, high = 1);
    # the densities share the support [0, 1], so KL is finite: check it by quadrature
    cb = d.ContinuousBernoulli(logits=_t(0.8, -1.5))
    uniform = d.Uniform(_t(0.0, 0.0), _t(1.0, 1.0))
    x = np.linspace(0.0, 1.0, 200001)
    log_q = cb.log_prob(sg.tensor(x[:, None], dtype=sg.float64)).numpy()
    expected_cb_u = np.trapezoid(np.exp(log_q) * log_q, x, axis=0)
    expected_u_cb = -np.trapezoid(log_q, x, axis=0)
    np.testing.assert_allclose(d.kl_divergence(cb, uniform).numpy(), expected_cb_u, rtol=1e-8)
    np.testing.assert_allclose(d.kl_divergence(uniform, cb).numpy(), expected_u_cb, rtol=1e-8)
    assert np.isinf(d.kl_divergence(cb, d.Uniform(_t(0.1), _t(1.0))).numpy()).all()


def test_von_mises_is_exact_and_torchs_to_its_bessel_approximation():
    from scipy import stats

    loc, kappa = np.array([0.5, -2.0, 3.0]), np.array([0.3, 2.0, 12.0])
    value = np.array([[0.1, -3.0, 2.5], [1.5, -1.0, -3.1]])

    def run(lib):
        loc_t = lib.tensor(loc, dtype=lib.float64, requires_grad=True)
        kappa_t = lib.tensor(kappa, dtype=lib.float64, requires_grad=True)
        dist = lib.distributions.VonMises(loc_t, kappa_t)
        lp = dist.log_prob(lib.tensor(value, dtype=lib.float64))
        (lp.sum() + dist.variance.sum()).backward()
        return lp.detach().numpy(), dist.variance.detach().numpy(), loc_t.grad, kappa_t.grad

    ours, our_var, our_dloc, our_dkappa = run(sg)
    theirs, their_var, their_dloc, their_dkappa = run(torch)
    np.testing.assert_allclose(ours, stats.vonmises.logpdf(value, kappa, loc=loc), rtol=1e-12)
    np.testing.assert_allclose(our_var, 1 - _bessel_ratio(kappa), rtol=1e-12)
    # torch's polynomial log I0 / I1 have relative error ~1e-7
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_allclose(our_var, their_var, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(our_dloc.numpy(), their_dloc.numpy(), rtol=1e-12)
    np.testing.assert_allclose(our_dkappa.numpy(), their_dkappa.numpy(), rtol=1e-5, atol=1e-7)
    # the concentration gradient, exactly: central differences of the float64 objective

    def objective(k):
        dist = d.VonMises(sg.tensor(loc, dtype=sg.float64), sg.tensor(k, dtype=sg.float64))
        lp = dist.log_prob(sg.tensor(value, dtype=sg.float64)).sum(0)
        return (lp + dist.variance).numpy()

    h = 1e-6
    fd = (objective(kappa + h) - objective(kappa - h)) / (2 * h)
    np.testing.assert_allclose(our_dkappa.numpy(), fd, rtol=1e-7)


def _bessel_ratio(kappa):
    from scipy import special

    return special.i1e(kappa) / special.i0e(kappa)


def test_von_mises_samples_have_its_circular_moments():
    sg.manual_seed(9)
    dist = d.VonMises(_t(0.5, -2.5), _t(0.7, 6.0))
    x = dist.sample((N,)).numpy()
    assert x.shape == (N, 2) and np.all(np.abs(x) <= np.pi)
    # E[cos(x - loc)] = I1(k) / I0(k) = 1 - circular variance; E[sin(x - loc)] = 0
    resultant = np.cos(x - [0.5, -2.5]).mean(0)
    np.testing.assert_allclose(resultant, 1 - dist.variance.numpy(), atol=0.015)
    np.testing.assert_allclose(np.sin(x - [0.5, -2.5]).mean(0), 0.0, atol=0.015)
    assert not dist.has_rsample


def test_pareto_infinite_moments_are_torchs_without_a_division_by_zero():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's divide-by-zero warning would raise here
        pareto = d.Pareto(_t(1.0, 1.0, 2.0), _t(0.5, 1.5, 3.0))
        mean, variance = pareto.mean.numpy(), pareto.variance.numpy()
    np.testing.assert_array_equal(mean[:1], [np.inf])
    np.testing.assert_allclose(mean[1:], [3.0, 3.0])
    np.testing.assert_array_equal(variance[:2], [np.inf, np.inf])
    np.testing.assert_allclose(variance[2], 4.0 * 3.0 / (4.0 * 1.0))


@pytest.mark.parametrize("name", ["lower_cholesky", "positive_definite", "positive_semidefinite"])
def test_transform_to_matrix_constraints_matches_torch(name):
    # not bijections (torch's biject_to has none for them): values, round trip, gradients
    square = RNG.normal(size=(2, 3, 3))

    def run(lib):
        constraint = getattr(lib.distributions.constraints, name)
        transform = lib.distributions.transform_to(constraint)
        x = lib.tensor(square, dtype=lib.float64, requires_grad=True)
        y = transform(x)
        assert bool(constraint.check(y).all()) and not transform.bijective
        back = transform.inv(y)
        (grad,) = lib.autograd.grad((y * y).sum() + back.sum(), x)
        return y.detach().numpy(), back.detach().numpy(), grad.numpy()

    for mine, reference in zip(run(sg), run(torch)):
        np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12)
    with pytest.raises(NotImplementedError, match="Cannot transform"):
        d.biject_to(getattr(d.constraints, name))
