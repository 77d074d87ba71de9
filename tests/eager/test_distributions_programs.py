"""Published-program shapes on sourcegrad.distributions, against torch with identical
weights: a VAE training step (Normal rsample, Bernoulli likelihood from logits, KL to the
prior via Independent) and a REINFORCE step (Categorical log_prob times advantage, plus an
entropy bonus). Same loss, same gradients, same parameters after an optimiser step."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sourcegrad as sg  # noqa: E402

RNG = np.random.default_rng(7)


def _linear(lib, weight, bias):
    layer = lib.nn.Linear(weight.shape[1], weight.shape[0]).double()
    with lib.no_grad():
        layer.weight.copy_(lib.tensor(weight))
        layer.bias.copy_(lib.tensor(bias))
    return layer


def _vae_step(lib, weights, x, eps):
    d = lib.distributions
    enc = _linear(lib, *weights["enc"])
    mu_head = _linear(lib, *weights["mu"])
    logvar_head = _linear(lib, *weights["logvar"])
    dec = _linear(lib, *weights["dec"])
    layers = [enc, mu_head, logvar_head, dec]
    params = [p for layer in layers for p in layer.parameters()]
    opt = lib.optim.Adam(params, lr=1e-2)
    x = lib.tensor(x)
    h = lib.tanh(enc(x))
    mu, logvar = mu_head(h), logvar_head(h)
    q = d.Independent(d.Normal(mu, lib.exp(0.5 * logvar)), 1)
    # the draw itself is fixed (the streams differ): rsample's path is loc + eps * scale
    z = q.mean + lib.tensor(eps) * q.stddev
    assert q.rsample().shape == z.shape
    logits = dec(z)
    log_likelihood = d.Bernoulli(logits=logits).log_prob(x).sum(-1)
    prior = d.Independent(d.Normal(lib.zeros_like(mu), lib.ones_like(mu)), 1)
    kl = d.kl_divergence(q, prior)
    loss = (kl - log_likelihood).mean()
    opt.zero_grad()
    loss.backward()
    grads = [p.grad.numpy().copy() for p in params]
    opt.step()
    return loss.item(), grads, [p.detach().numpy().copy() for p in params]


def test_vae_step_matches_torch():
    def w(o, i):
        return RNG.normal(size=(o, i)) * 0.3, RNG.normal(size=o) * 0.1

    weights = {"enc": w(16, 8), "mu": w(4, 16), "logvar": w(4, 16), "dec": w(8, 4)}
    x = (RNG.uniform(size=(5, 8)) > 0.5).astype(np.float64)
    eps = RNG.normal(size=(5, 4))
    ours = _vae_step(sg, weights, x, eps)
    theirs = _vae_step(torch, weights, x, eps)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)
    for mine, reference in zip(ours[1] + ours[2], theirs[1] + theirs[2]):
        np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-12)


def _reinforce_step(lib, weights, states, actions, advantages):
    d = lib.distributions
    policy = _linear(lib, *weights)
    opt = lib.optim.SGD(policy.parameters(), lr=0.1)
    logits = policy(lib.tensor(states))
    dist = d.Categorical(logits=logits)
    assert dist.sample().shape == (len(actions),)
    log_prob = dist.log_prob(lib.tensor(actions))
    loss = -(log_prob * lib.tensor(advantages)).mean() - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    grads = [p.grad.numpy().copy() for p in policy.parameters()]
    opt.step()
    return loss.item(), grads, [p.detach().numpy().copy() for p in policy.parameters()]


def test_reinforce_step_matches_torch():
    weights = RNG.normal(size=(3, 6)), RNG.normal(size=3)
    states = RNG.normal(size=(10, 6))
    actions = RNG.integers(0, 3, size=10)  # fixed actions: the sampling streams differ
    advantages = RNG.normal(size=10)
    ours = _reinforce_step(sg, weights, states, actions, advantages)
    theirs = _reinforce_step(torch, weights, states, actions, advantages)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)
    for mine, reference in zip(ours[1] + ours[2], theirs[1] + theirs[2]):
        np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-12)


def _squashed_gaussian_policy(lib, mu, log_std, pre_tanh):
    # SAC's tanh-squashed Gaussian: log_prob of an action through TanhTransform
    d = lib.distributions
    mu = lib.tensor(mu, requires_grad=True)
    log_std = lib.tensor(log_std, requires_grad=True)
    dist = d.TransformedDistribution(d.Normal(mu, log_std.exp()), [d.transforms.TanhTransform()])
    action = lib.tanh(lib.tensor(pre_tanh))
    log_prob = dist.log_prob(action).sum()
    log_prob.backward()
    return log_prob.item(), mu.grad.numpy(), log_std.grad.numpy()


def test_tanh_squashed_policy_log_prob_matches_torch():
    args = RNG.normal(size=4), RNG.normal(size=4) * 0.3, RNG.normal(size=4)
    ours = _squashed_gaussian_policy(sg, *args)
    theirs = _squashed_gaussian_policy(torch, *args)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-10)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-8)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-8)
