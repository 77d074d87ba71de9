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
    finite = [t.sum() for t in out.values() if t.requires_grad and bool(t.isfinite().all())]
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
