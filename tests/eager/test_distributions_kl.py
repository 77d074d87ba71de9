"""kl_divergence against torch's, values and gradients for both distributions' parameters
(float64), plus register_kl's dispatch and errors."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad as sg  # noqa: E402

RNG = np.random.default_rng(1)


def _pos(*shape):
    return RNG.uniform(0.5, 2.0, shape)


def _spd(n):
    a = RNG.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _tril(n):
    return np.linalg.cholesky(_spd(n))


PAIRS = {
    "Normal": (lambda d, a, b: d.Normal(a, b), lambda: (RNG.normal(size=3), _pos(3))),
    "Bernoulli": (lambda d, a: d.Bernoulli(logits=a), lambda: (RNG.normal(size=3),)),
    "Categorical": (lambda d, a: d.Categorical(logits=a), lambda: (RNG.normal(size=(2, 4)),)),
    "OneHotCategorical": (
        lambda d, a: d.OneHotCategorical(probs=a),
        lambda: (RNG.dirichlet(np.ones(4), 2),),
    ),
    "Uniform": (
        lambda d, a, b: d.Uniform(a - b, a + b),
        lambda: (RNG.normal(size=3) * 0.01, _pos(3)),
    ),
    "Beta": (lambda d, a, b: d.Beta(a, b), lambda: (_pos(3), _pos(3))),
    "Gamma": (lambda d, a, b: d.Gamma(a, b), lambda: (_pos(3), _pos(3))),
    "Exponential": (lambda d, a: d.Exponential(a), lambda: (_pos(3),)),
    "Laplace": (lambda d, a, b: d.Laplace(a, b), lambda: (RNG.normal(size=3), _pos(3))),
    "Dirichlet": (lambda d, a: d.Dirichlet(a), lambda: (_pos(2, 3),)),
    "Poisson": (lambda d, a: d.Poisson(a), lambda: (_pos(3),)),
    "LogNormal": (lambda d, a, b: d.LogNormal(a, b), lambda: (RNG.normal(size=3), _pos(3))),
    "MVN-tril": (
        lambda d, a, b: d.MultivariateNormal(a, scale_tril=b),
        lambda: (RNG.normal(size=(2, 3)), _tril(3)),
    ),
    "MVN-cov": (
        lambda d, a, b: d.MultivariateNormal(a, covariance_matrix=b),
        lambda: (RNG.normal(size=(3,)), _spd(3)),
    ),
    "Independent": (
        lambda d, a, b: d.Independent(d.Normal(a, b), 1),
        lambda: (RNG.normal(size=(2, 3)), _pos(2, 3)),
    ),
}


def _kl(lib, make, p_params, q_params):
    p_leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in p_params]
    q_leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in q_params]
    d = lib.distributions
    kl = d.kl_divergence(make(d, *p_leaves), make(d, *q_leaves))
    kl.sum().backward()
    return kl.detach().numpy(), [t.grad.numpy() for t in p_leaves + q_leaves]


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_kl_values_and_gradients_match_torch(name):
    make, params = PAIRS[name]
    p_params, q_params = params(), params()
    ours, our_grads = _kl(sg, make, p_params, q_params)
    theirs, their_grads = _kl(torch, make, p_params, q_params)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)
    for mine, reference in zip(our_grads, their_grads):
        np.testing.assert_allclose(mine, reference, rtol=1e-8, atol=1e-9)


def test_kl_is_infinite_where_q_gives_no_mass_as_torch():
    for lib in (sg, torch):
        d = lib.distributions
        p = d.Categorical(probs=lib.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]], dtype=lib.float64))
        q = d.Categorical(probs=lib.tensor([[0.5, 0.0, 0.5], [0.2, 0.3, 0.5]], dtype=lib.float64))
        kl = d.kl_divergence(p, q)
        assert np.isinf(kl[0].item()) and kl[1].item() == pytest.approx(0.0, abs=1e-15)
        u = d.kl_divergence(d.Uniform(0.0, 2.0), d.Uniform(0.5, 3.0))
        assert np.isinf(u.item())


def test_no_rule_raises_not_implemented_like_torch():
    d = sg.distributions
    with pytest.raises(
        NotImplementedError,
        match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q type Laplace",
    ):
        d.kl_divergence(d.Normal(0.0, 1.0), d.Laplace(0.0, 1.0))


def test_register_kl_for_a_new_pair_and_a_subclass_override():
    d = sg.distributions

    class MyNormal(d.Normal):
        pass

    assert d.kl_divergence(MyNormal(0.0, 1.0), d.Normal(1.0, 1.0)).item() == pytest.approx(0.5)

    @d.register_kl(MyNormal, d.Normal)
    def _always_seven(p, q):
        return sg.tensor(7.0)

    assert d.kl_divergence(MyNormal(0.0, 1.0), d.Normal(1.0, 1.0)).item() == 7.0
    assert d.kl_divergence(d.Normal(0.0, 1.0), d.Normal(1.0, 1.0)).item() == pytest.approx(0.5)
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        d.register_kl(int, d.Normal)
