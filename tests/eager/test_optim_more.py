"""Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop and Adafactor against torch.optim.

The same two-layer model (identical float64 initial weights) is trained on the same data
for 25 steps under torch and under sourcegrad, each library computing its own loss and
gradients; the parameters must agree to 1e-10 after every option combination, and the
state dicts must have torch's structure (keys, dtypes, values).
"""

import copy
import pickle
import warnings

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import NoRuleError

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
X = RNG.normal(size=(16, 4))
Y = RNG.normal(size=(16, 2))
W1, B1 = RNG.normal(size=(5, 4)) * 0.5, RNG.normal(size=(5,)) * 0.1
W2, B2 = RNG.normal(size=(2, 5)) * 0.5, RNG.normal(size=(2,)) * 0.1
STEPS = 25


def _model(lib):
    model = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2)).double()
    with lib.no_grad():
        for p, value in zip(model.parameters(), (W1, B1, W2, B2)):
            p.copy_(lib.tensor(value))
    return model


def _step(lib, model, opt):
    opt.zero_grad()
    loss = lib.nn.functional.mse_loss(model(lib.tensor(X)), lib.tensor(Y))
    loss.backward()
    opt.step()
    return loss.item()


def _train(lib, name, kwargs, groups=None, steps=STEPS):
    model = _model(lib)
    params = list(model.parameters())
    spec = (
        params
        if groups is None
        else [
            {"params": params[:2], **groups[0]},
            {"params": params[2:], **groups[1]},
        ]
    )
    opt = getattr(lib.optim, name)(spec, **kwargs)
    losses = [_step(lib, model, opt) for _ in range(steps)]
    return model, opt, losses


def _weights(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def _assert_same_state(sd, tsd):
    assert sd["param_groups"] == tsd["param_groups"]
    assert sd["state"].keys() == tsd["state"].keys()
    for i, tstate in tsd["state"].items():
        assert list(sd["state"][i]) == list(tstate)  # torch's keys, in torch's order
        for key, value in tstate.items():
            ours = sd["state"][i][key]
            assert ours.dtype == getattr(sg, str(value.dtype)[6:]), key
            assert tuple(ours.shape) == tuple(value.shape), key
            np.testing.assert_allclose(ours.numpy(), value.numpy(), rtol=1e-9, atol=1e-12)


CASES = [
    ("Adadelta", {}),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, maximize=True)),
    ("Adamax", {}),
    ("Adamax", dict(lr=0.01, betas=(0.5, 0.9), eps=1e-3, weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, maximize=True)),
    ("NAdam", {}),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.95), momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.01, maximize=True, eps=1e-4)),
    ("RAdam", {}),
    ("RAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, maximize=True, eps=1e-4)),
    ("ASGD", {}),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=10, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=3, maximize=True)),
    ("Rprop", {}),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.05, maximize=True)),
    ("Rprop", dict(lr=0.05, foreach=False, differentiable=False, capturable=False)),
    ("NAdam", dict(foreach=False, differentiable=False, capturable=False)),
    ("Adafactor", {}),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1, beta2_decay=-0.5)),
    ("Adafactor", dict(maximize=True, eps=(1e-5, 1e-2), d=1.5, foreach=False)),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=lambda c: str(c))
def test_training_matches_torch(name, kwargs):
    model, opt, losses = _train(sg, name, kwargs)
    tmodel, topt, tlosses = _train(torch, name, kwargs)
    np.testing.assert_allclose(losses, tlosses, rtol=1e-10, atol=1e-12)
    for ours, theirs in zip(_weights(model), _weights(tmodel)):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)
    assert not np.allclose(_weights(model)[0], W1)  # the weights did move
    _assert_same_state(opt.state_dict(), topt.state_dict())


@pytest.mark.parametrize(
    "name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "Adafactor"]
)
def test_param_groups_with_their_own_options_match_torch(name):
    groups = [dict(lr=0.02), dict(maximize=False, lr=0.005)]
    model, opt, _ = _train(sg, name, dict(lr=0.01), groups=groups)
    tmodel, topt, _ = _train(torch, name, dict(lr=0.01), groups=groups)
    for ours, theirs in zip(_weights(model), _weights(tmodel)):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)
    assert [g["lr"] for g in opt.param_groups] == [0.02, 0.005]
    _assert_same_state(opt.state_dict(), topt.state_dict())


@pytest.mark.parametrize(
    "name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "Adafactor"]
)
def test_defaults_are_torch_s(name):
    p = sg.zeros(1, requires_grad=True)
    tp = torch.zeros(1, requires_grad=True)
    assert getattr(sg.optim, name)([p]).defaults == getattr(torch.optim, name)([tp]).defaults


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("Adadelta", dict(lr=0.5)),
        ("NAdam", dict(lr=0.01, weight_decay=0.1)),
        ("RAdam", dict(lr=0.01)),
        ("ASGD", dict(lr=0.05, t0=3)),
        ("Rprop", dict(lr=0.05)),
        ("Adamax", dict(lr=0.01)),
        ("Adafactor", dict(lr=0.01)),
    ],
)
def test_torch_state_dict_loads_and_continues_as_torch(name, kwargs):
    """A state dict saved by torch after 10 steps, loaded into sourcegrad's optimizer for
    the same weights: the next 10 steps match torch's own continuation."""
    tmodel, topt, _ = _train(torch, name, kwargs, steps=10)
    model = _model(sg)
    with sg.no_grad():
        for p, value in zip(model.parameters(), _weights(tmodel)):
            p.copy_(sg.tensor(value))
    opt = getattr(sg.optim, name)(model.parameters(), lr=123.0)
    tsd = topt.state_dict()
    opt.load_state_dict(
        {
            "state": {
                i: {k: sg.tensor(v.numpy()) for k, v in s.items()} for i, s in tsd["state"].items()
            },
            "param_groups": copy.deepcopy(tsd["param_groups"]),
        }
    )
    assert opt.param_groups[0]["lr"] == kwargs["lr"]
    # torch's own load casts the float state (NAdam's mu_product, ASGD's eta and mu) to
    # the parameters' float64: continue torch from a load of its own state dict too
    topt.load_state_dict(topt.state_dict())
    for _ in range(10):
        _step(sg, model, opt)
        _step(torch, tmodel, topt)
    for ours, theirs in zip(_weights(model), _weights(tmodel)):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)
    _assert_same_state(opt.state_dict(), topt.state_dict())


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_own_state_dict_round_trip_continues_identically(name):
    model, opt, _ = _train(sg, name, dict(lr=0.01), steps=8)
    clone = _model(sg)
    with sg.no_grad():
        for p, value in zip(clone.parameters(), _weights(model)):
            p.copy_(sg.tensor(value))
    opt2 = getattr(sg.optim, name)(clone.parameters(), lr=1.0)
    opt2.load_state_dict(pickle.loads(pickle.dumps(opt.state_dict())))
    for _ in range(5):
        _step(sg, model, opt)
        _step(sg, clone, opt2)
    # exact, but for NAdam's mu_product and ASGD's eta and mu: a load casts them to the
    # parameters' float64 (as torch's does), so they no longer round to float32
    for ours, theirs in zip(_weights(model), _weights(clone)):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_complex_parameters_are_updated_as_real_pairs_as_torch(name):
    value = RNG.normal(size=(3,)) + 1j * RNG.normal(size=(3,))
    grads = [RNG.normal(size=(3,)) + 1j * RNG.normal(size=(3,)) for _ in range(6)]
    results = []
    for lib in (sg, torch):
        p = lib.nn.Parameter(lib.tensor(value.copy()))
        opt = getattr(lib.optim, name)([p], lr=0.05)
        for g in grads:
            p.grad = lib.tensor(g)
            opt.step()
        results.append(p.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=0, atol=1e-12)


def _error(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - comparing the exception itself
            return type(e), str(e)
    return None


def _p(lib):
    return [lib.zeros(1, requires_grad=True)]


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.optim.Adadelta(_p(lib), lr=-1.0),
        lambda lib: lib.optim.Adadelta(_p(lib), rho=1.5),
        lambda lib: lib.optim.Adadelta(_p(lib), eps=-1.0),
        lambda lib: lib.optim.Adadelta(_p(lib), weight_decay=-1.0),
        lambda lib: lib.optim.Adamax(_p(lib), betas=(1.0, 0.9)),
        lambda lib: lib.optim.Adamax(_p(lib), betas=(0.9, -0.1)),
        lambda lib: lib.optim.Adamax(_p(lib), eps=-1.0),
        lambda lib: lib.optim.NAdam(_p(lib), momentum_decay=-1.0),
        lambda lib: lib.optim.NAdam(_p(lib), weight_decay=-1.0),
        lambda lib: lib.optim.RAdam(_p(lib), betas=(0.9, 1.0)),
        lambda lib: lib.optim.RAdam(_p(lib), lr=lib.tensor([0.1, 0.2])),
        lambda lib: lib.optim.ASGD(_p(lib), lr=-0.1),
        lambda lib: lib.optim.ASGD(_p(lib), weight_decay=-0.1),
        lambda lib: lib.optim.Rprop(_p(lib), etas=(1.5, 1.2)),
        lambda lib: lib.optim.Rprop(_p(lib), etas=(0.5, 0.9)),
        lambda lib: lib.optim.Rprop(_p(lib), lr=-1.0),
        lambda lib: lib.optim.NAdam([]),
        lambda lib: lib.optim.Rprop(_p(lib), 0.1, (0.5, 1.2), (1e-6, 50), True),
        lambda lib: lib.optim.Adafactor(_p(lib), lr=-1.0),
        lambda lib: lib.optim.Adafactor(_p(lib), beta2_decay=0.5),
        lambda lib: lib.optim.Adafactor(_p(lib), eps=(-1.0, 1e-3)),
        lambda lib: lib.optim.Adafactor(_p(lib), eps=(None, -1.0)),
        lambda lib: lib.optim.Adafactor(_p(lib), d=0.5),
        lambda lib: lib.optim.Adafactor(_p(lib), weight_decay=-1.0),
        lambda lib: lib.optim.Adafactor([lib.zeros(1, requires_grad=True) * 2]),
    ],
)
def test_constructor_errors_match_torch(make):
    theirs = _error(lambda: make(torch))
    assert theirs is not None
    assert _error(lambda: make(sg)) == theirs


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_differentiable_on_a_leaf_raises_as_torch(name):
    errors = []
    for lib in (sg, torch):
        p = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
        opt = getattr(lib.optim, name)([p], differentiable=True)
        p.grad = lib.ones(2, dtype=lib.float64)
        errors.append(_error(opt.step))
    assert errors[0] == errors[1] and errors[0][0] is RuntimeError


def test_differentiable_through_a_non_leaf_is_refused_not_silently_wrong():
    """torch would record the update so a gradient flows into w; sourcegrad's update is
    outside the graph, so it refuses rather than returning a wrong gradient."""
    w = sg.ones(2, dtype=sg.float64, requires_grad=True)
    q = w * 2
    q.retain_grad()
    opt = sg.optim.Adadelta([q], differentiable=True)
    q.grad = sg.ones(2, dtype=sg.float64)
    with pytest.raises(NoRuleError, match="differentiable=True"):
        opt.step()


def test_differentiable_with_plain_tensors_steps_as_torch():
    results = []
    for lib in (sg, torch):
        p = lib.ones(2, dtype=lib.float64)
        opt = lib.optim.RAdam([p], lr=0.1, differentiable=True)
        for _ in range(8):
            p.grad = p * 3 - 1
            opt.step()
        results.append(p.numpy().copy())
    np.testing.assert_allclose(results[0], results[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["NAdam", "ASGD"])
def test_float32_parameters_track_torch(name):
    """NAdam's mu_product and ASGD's eta/mu are float32 scalars in torch's state; with
    float32 weights the iterates stay float32 and follow torch's."""
    results = []
    for lib in (sg, torch):
        model = _model(lib).float()
        opt = getattr(lib.optim, name)(model.parameters(), lr=0.05)
        for _ in range(10):
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(
                model(lib.tensor(X, dtype=lib.float32)), lib.tensor(Y, dtype=lib.float32)
            )
            loss.backward()
            opt.step()
        results.append(_weights(model))
        assert all(w.dtype == np.float32 for w in results[-1])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_repr_lists_the_group_options_as_torch():
    p, tp = sg.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    assert repr(sg.optim.NAdam([p])) == repr(torch.optim.NAdam([tp]))
    assert repr(sg.optim.Rprop([p])) == repr(torch.optim.Rprop([tp]))


def test_adafactor_factors_stacked_matrices_as_torch():
    """A 3-d parameter keeps a row factor per matrix of the stack (the last two dims)."""
    value = RNG.normal(size=(2, 3, 4))
    grads = [RNG.normal(size=(2, 3, 4)) for _ in range(6)]
    results = []
    for lib in (sg, torch):
        p = lib.nn.Parameter(lib.tensor(value.copy()))
        opt = lib.optim.Adafactor([p], lr=0.05)
        for g in grads:
            p.grad = lib.tensor(g)
            opt.step()
        state = opt.state[p]
        results.append((p.detach().numpy(), {k: tuple(v.shape) for k, v in state.items()}))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=0, atol=1e-12)
    assert results[0][1] == results[1][1]


def test_adafactor_refuses_complex_parameters_before_updating_any():
    errors = []
    for lib in (sg, torch):
        real = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
        cplx = lib.nn.Parameter(lib.ones(2, dtype=lib.complex128))
        opt = lib.optim.Adafactor([real, cplx])
        real.grad, cplx.grad = lib.ones_like(real), lib.ones_like(cplx)
        errors.append(_error(opt.step))
        assert real.detach().numpy().tolist() == [1.0, 1.0]
    assert (
        errors[0]
        == errors[1]
        == (
            RuntimeError,
            "Adafactor does not support complex parameters",
        )
    )


@pytest.mark.parametrize(
    "name,scheduler,options",
    [
        ("RAdam", "CosineAnnealingLR", dict(T_max=10)),
        ("ASGD", "StepLR", dict(step_size=4, gamma=0.5)),
        ("NAdam", "OneCycleLR", dict(max_lr=0.05, total_steps=STEPS)),
        ("Adadelta", "ExponentialLR", dict(gamma=0.9)),
    ],
)
def test_with_an_lr_scheduler_matches_torch(name, scheduler, options):
    """The schedulers write each group's lr; the new optimizers read it every step (ASGD's
    eta included) as torch's do."""
    results = []
    for lib in (sg, torch):
        model = _model(lib)
        opt = getattr(lib.optim, name)(model.parameters(), lr=0.02)
        sched = getattr(lib.optim.lr_scheduler, scheduler)(opt, **options)
        for _ in range(STEPS):
            _step(lib, model, opt)
            sched.step()
        results.append((_weights(model), opt.param_groups[0]["lr"]))
    assert results[0][1] == pytest.approx(results[1][1], rel=1e-12)
    for ours, theirs in zip(results[0][0], results[1][0]):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)
