"""sourcegrad.distributions against torch.distributions (the oracle): log_prob, entropy,
cdf, icdf, mean, mode, variance and their gradients with respect to the parameters, on the
same float64 inputs, to ~1e-10.

Each case names a distribution, its parameters (numpy arrays, made leaves requiring grad in
both libraries) and the values it is scored at; `_evaluate` builds the distribution in one
library and returns every quantity the distribution has plus the gradient of their sum.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad as sg  # noqa: E402

RNG = np.random.default_rng(0)
POS = RNG.uniform(0.5, 2.0, (3,))
POS2 = RNG.uniform(0.5, 2.0, (3,))
REAL = RNG.normal(size=(3,))
UNIT = RNG.uniform(0.1, 0.9, (3,))
SIMPLEX = RNG.dirichlet(np.ones(4), size=2)
LOGITS = RNG.normal(size=(2, 4))
A = RNG.normal(size=(3, 3))
COV = A @ A.T + 3 * np.eye(3)
TRIL = np.linalg.cholesky(COV)
MVN_LOC = RNG.normal(size=(2, 3))
MVN_VALUE = RNG.normal(size=(4, 2, 3))


def _case(name, make, params, value, quantities):
    return pytest.param(make, params, value, quantities, id=name)


D = "log_prob entropy mean variance stddev"
CASES = [
    _case(
        "Normal",
        lambda d, p: d.Normal(p["loc"], p["scale"]),
        {"loc": REAL, "scale": POS},
        RNG.normal(size=(2, 3)),
        D + " mode cdf icdf",
    ),
    _case(
        "Bernoulli-probs",
        lambda d, p: d.Bernoulli(probs=p["p"]),
        {"p": UNIT},
        np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]),
        D + " mode",
    ),
    _case(
        "Bernoulli-logits",
        lambda d, p: d.Bernoulli(logits=p["l"]),
        {"l": REAL * 3},
        np.array([0.0, 1.0, 1.0]),
        D,
    ),
    _case(
        "Categorical-probs",
        lambda d, p: d.Categorical(probs=p["p"]),
        {"p": SIMPLEX},
        np.array([[0, 3], [2, 1], [1, 1]]),
        "log_prob entropy mode",
    ),
    _case(
        "Categorical-logits",
        lambda d, p: d.Categorical(logits=p["l"]),
        {"l": LOGITS},
        np.array([0, 3]),
        "log_prob entropy mode",
    ),
    _case(
        "OneHotCategorical",
        lambda d, p: d.OneHotCategorical(logits=p["l"]),
        {"l": LOGITS},
        np.eye(4)[[1, 2]],
        "log_prob entropy mean variance mode",
    ),
    _case(
        "Uniform",
        lambda d, p: d.Uniform(p["lo"], p["lo"] + p["w"]),
        {"lo": REAL, "w": POS},
        REAL + 0.3 * POS,
        D + " cdf icdf",
    ),
    _case(
        "Exponential", lambda d, p: d.Exponential(p["r"]), {"r": POS}, POS2, D + " mode cdf icdf"
    ),
    _case(
        "Laplace",
        lambda d, p: d.Laplace(p["loc"], p["s"]),
        {"loc": REAL, "s": POS},
        RNG.normal(size=(3,)),
        D + " mode cdf icdf",
    ),
    _case(
        "Gamma", lambda d, p: d.Gamma(p["c"], p["r"]), {"c": POS + 1, "r": POS2}, POS, D + " mode"
    ),
    _case(
        "Beta",
        lambda d, p: d.Beta(p["a"], p["b"]),
        {"a": POS + 1, "b": POS2 + 1},
        UNIT,
        D + " mode",
    ),
    _case(
        "Dirichlet", lambda d, p: d.Dirichlet(p["c"]), {"c": SIMPLEX * 3 + 1}, SIMPLEX, D + " mode"
    ),
    _case(
        "LogNormal",
        lambda d, p: d.LogNormal(p["loc"], p["s"]),
        {"loc": REAL, "s": POS},
        POS2,
        D + " mode cdf icdf",
    ),
    _case(
        "Poisson",
        lambda d, p: d.Poisson(p["r"]),
        {"r": POS * 3},
        np.array([0.0, 2.0, 5.0]),
        "log_prob mean variance mode",
    ),
    _case(
        "Binomial-probs",
        lambda d, p: d.Binomial(5, probs=p["p"]),
        {"p": UNIT},
        np.array([0.0, 2.0, 5.0]),
        D + " mode",
    ),
    _case(
        "Binomial-logits",
        lambda d, p: d.Binomial(torch_count(d), logits=p["l"]),
        {"l": REAL},
        np.array([1.0, 2.0, 3.0]),
        "log_prob mean variance",
    ),
    _case(
        "MVN-cov",
        lambda d, p: d.MultivariateNormal(p["loc"], covariance_matrix=p["cov"]),
        {"loc": MVN_LOC, "cov": COV},
        MVN_VALUE,
        D + " mode",
    ),
    _case(
        "MVN-tril",
        lambda d, p: d.MultivariateNormal(p["loc"], scale_tril=p["L"]),
        {"loc": MVN_LOC, "L": TRIL},
        MVN_VALUE,
        D,
    ),
    _case(
        "MVN-precision",
        lambda d, p: d.MultivariateNormal(p["loc"], precision_matrix=p["P"]),
        {"loc": MVN_LOC, "P": COV},
        MVN_VALUE,
        D,
    ),
    _case(
        "Independent",
        lambda d, p: d.Independent(d.Normal(p["loc"], p["s"]), 1),
        {"loc": MVN_LOC, "s": np.abs(MVN_LOC) + 0.5},
        MVN_VALUE,
        D + " mode",
    ),
    _case(
        "Tanh-squashed",
        lambda d, p: d.TransformedDistribution(
            d.Normal(p["loc"], p["s"]),
            [d.transforms.TanhTransform(), d.transforms.AffineTransform(1.0, 2.0)],
        ),
        {"loc": REAL, "s": POS},
        np.array([0.5, 1.2, -0.3]),
        "log_prob cdf icdf",
    ),
    _case(
        "Sigmoid-affine",
        lambda d, p: d.TransformedDistribution(
            d.Normal(p["loc"], p["s"]),
            [d.transforms.AffineTransform(p["loc"], -p["s"]), d.transforms.SigmoidTransform()],
        ),
        {"loc": REAL, "s": POS},
        UNIT,
        "log_prob cdf icdf",
    ),
    _case(
        "Mixture",
        lambda d, p: d.MixtureSameFamily(d.Categorical(logits=p["l"]), d.Normal(p["loc"], p["s"])),
        {"l": LOGITS, "loc": RNG.normal(size=(2, 4)), "s": RNG.uniform(0.5, 2, (2, 4))},
        RNG.normal(size=(3, 2)),
        "log_prob mean variance cdf",
    ),
    _case(
        "Mixture-MVN",
        lambda d, p: d.MixtureSameFamily(
            d.Categorical(logits=p["l"]), d.MultivariateNormal(p["loc"], scale_tril=p["L"])
        ),
        {"l": LOGITS[0, :2], "loc": MVN_LOC, "L": TRIL},
        MVN_VALUE[:, 0],
        "log_prob mean variance",
    ),
]


def torch_count(d):
    """Per-entry total counts, a tensor of the library `d` belongs to."""
    lib = sg if d is sg.distributions else torch
    return lib.tensor([3.0, 4.0, 5.0], dtype=lib.float64)


def _evaluate(lib, make, params, value, quantities):
    leaves = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in params.items()}
    dist = make(lib.distributions, leaves)
    is_index = isinstance(dist, lib.distributions.Categorical)
    value_t = lib.tensor(value, dtype=lib.int64 if is_index else lib.float64)
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
    total = sum(t.sum() for t in out.values() if t.dtype == lib.float64 and t.requires_grad)
    grads = {}
    if not isinstance(total, int):
        total.backward()
        grads = {k: leaf.grad for k, leaf in leaves.items()}
    values = {k: v.detach().numpy() for k, v in out.items()}
    shapes = (tuple(dist.batch_shape), tuple(dist.event_shape))
    return values, {k: None if g is None else g.numpy() for k, g in grads.items()}, shapes


@pytest.mark.parametrize("make, params, value, quantities", CASES)
def test_values_and_gradients_match_torch(make, params, value, quantities):
    ours, our_grads, our_shapes = _evaluate(sg, make, params, value, quantities)
    theirs, their_grads, their_shapes = _evaluate(torch, make, params, value, quantities)
    assert our_shapes == their_shapes
    for name in theirs:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-10, atol=1e-10, err_msg=name)
    assert our_grads.keys() == their_grads.keys()
    for name, grad in their_grads.items():
        if grad is None:
            assert our_grads[name] is None, name
        else:
            # 1e-9: torch's trigamma (the digamma terms' derivative) is scipy's to ~1e-10
            np.testing.assert_allclose(our_grads[name], grad, rtol=1e-8, atol=1e-9, err_msg=name)


def test_gamma_cdf_and_its_rate_gradient_match_torch():
    # torch has no derivative in the concentration (igamma's input); sourcegrad raises too
    def cdf(lib):
        rate = lib.tensor([3.0, 0.5], dtype=lib.float64, requires_grad=True)
        concentration = lib.tensor([2.0, 0.7], dtype=lib.float64)
        value = lib.distributions.Gamma(concentration, rate).cdf(lib.tensor([0.5, 2.0]).double())
        value.sum().backward()
        return value.detach().numpy(), rate.grad.numpy()

    (ours, our_grad), (theirs, their_grad) = cdf(sg), cdf(torch)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-9)
    concentration = sg.tensor([2.0], dtype=sg.float64, requires_grad=True)
    with pytest.raises(sg.SourcegradError):
        sg.distributions.Gamma(concentration, 1.0).cdf(sg.tensor([0.5]).double()).backward()
