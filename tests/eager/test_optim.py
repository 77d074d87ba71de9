"""`sourcegrad.optim` against torch.optim: iterates, state dicts, param groups, errors.

Both libraries start from the same float64 values and are fed the same gradients
(computed with numpy from the current parameter values), so their iterates must
agree to rounding over 20 steps.
"""

import copy
import math
import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
W0 = RNG.normal(size=(3, 2))
B0 = RNG.normal(size=(2,))
TARGET = RNG.normal(size=(3, 2))


def _loss_and_grads(w, b):
    """A bounded non-quadratic objective: sum(logcosh(w - T)) + |b - 0.3|^2/2 + coupling."""
    c = 0.1 * np.sin(b).sum()
    loss = np.log(np.cosh(w - TARGET)).sum() + 0.5 * ((b - 0.3) ** 2).sum() + np.tanh(w).sum() * c
    gw = np.tanh(w - TARGET) + (1 - np.tanh(w) ** 2) * c
    gb = (b - 0.3) + 0.1 * np.cos(b) * np.tanh(w).sum()
    return loss, gw, gb


def _params(lib):
    return [lib.nn.Parameter(lib.tensor(W0.copy())), lib.nn.Parameter(lib.tensor(B0.copy()))]


def _set_grads(lib, params):
    loss, gw, gb = _loss_and_grads(*(p.detach().numpy() for p in params))
    params[0].grad = lib.tensor(gw)
    params[1].grad = lib.tensor(gb)
    return lib.tensor(loss)


def _run(lib, name, kwargs, steps=20, groups=None):
    params = _params(lib)
    spec = (
        params
        if groups is None
        else [{"params": [params[0]], **groups[0]}, {"params": [params[1]], **groups[1]}]
    )
    opt = getattr(lib.optim, name)(spec, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        _set_grads(lib, params)
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


CASES = [
    ("SGD", dict(lr=0.01)),
    ("SGD", dict(lr=0.01, momentum=0.9)),
    ("SGD", dict(lr=0.01, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.01, momentum=0.8, nesterov=True, weight_decay=0.05)),
    ("SGD", dict(lr=0.01, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.3, 0.9), eps=1e-6)),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, maximize=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.3, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, maximize=True, eps=1e-3)),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=lambda c: str(c))
def test_iterates_match_torch(name, kwargs):
    ours, opt = _run(sg, name, kwargs)
    theirs, topt = _run(torch, name, kwargs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert not np.allclose(ours[0], W0)  # the parameters did move
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    assert sd["state"].keys() == tsd["state"].keys()
    for i in tsd["state"]:
        assert sd["state"][i].keys() == tsd["state"][i].keys()
        for key, value in tsd["state"][i].items():
            assert sd["state"][i][key].dtype == getattr(sg, str(value.dtype)[6:])
            np.testing.assert_allclose(sd["state"][i][key].numpy(), value.numpy(), atol=1e-12)


def test_param_groups_with_their_own_options_match_torch():
    groups = [dict(lr=0.1, momentum=0.9), dict(weight_decay=0.5)]
    ours, opt = _run(sg, "SGD", dict(lr=0.01), groups=groups)
    theirs, topt = _run(torch, "SGD", dict(lr=0.01), groups=groups)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert opt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]


def test_add_param_group_uses_the_defaults():
    p, q = _params(sg)
    opt = sg.optim.Adam([p], lr=0.2)
    opt.add_param_group({"params": q, "betas": (0.5, 0.6)})
    assert opt.param_groups[1]["params"] == [q]
    assert opt.param_groups[1]["lr"] == 0.2 and opt.param_groups[1]["betas"] == (0.5, 0.6)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [p]})


def test_adagrad_state_for_a_group_added_later():
    p, q = _params(sg)
    opt = sg.optim.Adagrad([p], lr=0.1, initial_accumulator_value=0.5)
    opt.add_param_group({"params": [q]})
    _set_grads(sg, [p, q])
    opt.step()
    assert opt.state[q]["step"].item() == 1.0
    g = _loss_and_grads(W0, B0)[2]
    np.testing.assert_allclose(
        q.detach().numpy(), B0 - 0.1 * g / (np.sqrt(0.5 + g * g) + 1e-10), rtol=1e-14
    )


def _error(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - comparing the exception itself
            return type(e), str(e)
    return None


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.optim.SGD(np.zeros(3), lr=0.1),
        lambda lib: lib.optim.SGD(5, lr=0.1),
        lambda lib: lib.optim.SGD(lib.zeros(3, requires_grad=True), lr=0.1),
        lambda lib: lib.optim.SGD([], lr=0.1),
        lambda lib: lib.optim.SGD([{"params": {lib.zeros(1, requires_grad=True)}}], lr=0.1),
        lambda lib: lib.optim.SGD([lib.zeros(1, requires_grad=True) * 2], lr=0.1),
        lambda lib: lib.optim.SGD([1.0, 2.0], lr=0.1),
        lambda lib: lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=-1),
        lambda lib: lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1, nesterov=True),
        lambda lib: lib.optim.Adam([lib.zeros(1, requires_grad=True)], betas=(1.0, 0.9)),
        lambda lib: lib.optim.Adam([lib.zeros(1, requires_grad=True)], eps=-1.0),
        lambda lib: lib.optim.RMSprop([lib.zeros(1, requires_grad=True)], alpha=-1.0),
        lambda lib: lib.optim.Adagrad([lib.zeros(1, requires_grad=True)], lr_decay=-1.0),
        lambda lib: lib.optim.SGD([lib.zeros(1, requires_grad=True)]).add_param_group([]),
        lambda lib: lib.optim.LBFGS(
            [
                {"params": [lib.zeros(1, requires_grad=True)]},
                {"params": [lib.zeros(1, requires_grad=True)]},
            ]
        ),
    ],
)
def test_constructor_errors_match_torch(make):
    theirs = _error(lambda: make(torch))
    assert theirs is not None
    assert _error(lambda: make(sg)) == theirs


def test_duplicate_parameters_warn_as_torch():
    p = sg.nn.Parameter(sg.ones(2))
    with pytest.warns(UserWarning, match="duplicate parameters"):
        sg.optim.SGD([p, p], lr=0.1)


def test_state_dict_round_trip_continues_identically():
    ours, opt = _run(sg, "Adam", dict(lr=0.05, amsgrad=True), steps=5)
    params = _params(sg)
    for p, value in zip(params, ours):
        p.data = sg.tensor(value.copy())
    opt2 = sg.optim.Adam(params, lr=0.9)
    opt2.load_state_dict(opt.state_dict())
    assert opt2.param_groups[0]["lr"] == 0.05 and opt2.param_groups[0]["params"] == params
    assert opt2.state[params[0]]["step"].item() == 5.0
    # the loaded state is a copy: stepping the new optimizer leaves the old one's alone
    before = opt.state_dict()["state"][0]["exp_avg"].numpy().copy()
    old_params = [p for group in opt.param_groups for p in group["params"]]
    for _ in range(3):
        opt2.zero_grad()
        _set_grads(sg, params)
        opt2.step()
    np.testing.assert_array_equal(opt.state[old_params[0]]["exp_avg"].numpy(), before)
    for _ in range(3):
        opt.zero_grad()
        _set_grads(sg, old_params)
        opt.step()
    for p, q in zip(params, old_params):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_loading_a_torch_state_dict_continues_as_torch():
    _, topt = _run(torch, "SGD", dict(lr=0.01, momentum=0.9), steps=4)
    tsd = topt.state_dict()
    sd = {
        "state": {
            k: {n: sg.tensor(v.numpy()) for n, v in s.items()} for k, s in tsd["state"].items()
        },
        "param_groups": copy.deepcopy(tsd["param_groups"]),
    }
    ours = _params(sg)
    theirs = list(topt.param_groups[0]["params"])
    for p, t in zip(ours, theirs):
        p.data = sg.tensor(t.detach().numpy().copy())
    opt = sg.optim.SGD(ours, lr=0.5)
    opt.load_state_dict(sd)
    for lib, o, ps in ((sg, opt, ours), (torch, topt, theirs)):
        for _ in range(5):
            o.zero_grad()
            _set_grads(lib, ps)
            o.step()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)


def test_load_state_dict_errors_match_torch():
    for lib in (sg, torch):
        opt = lib.optim.SGD(_params(lib), lr=0.1)
        with pytest.raises(ValueError, match="doesn't match the size"):
            opt.load_state_dict({"state": {}, "param_groups": [{"params": [0], "lr": 0.1}]})
        with pytest.raises(ValueError, match="different number of parameter groups"):
            opt.load_state_dict({"state": {}, "param_groups": []})


def test_zero_grad_set_to_none_false_zeroes_in_place():
    p = sg.nn.Parameter(sg.tensor([1.0, 2.0]))
    opt = sg.optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_step_returns_the_closure_loss_and_skips_params_without_grad():
    p, q = _params(sg)
    opt = sg.optim.SGD([p, q], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p**2).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == pytest.approx((W0**2).sum())
    np.testing.assert_allclose(p.detach().numpy(), W0 * 0.8, atol=1e-15)
    np.testing.assert_array_equal(q.detach().numpy(), B0)
    assert p._version == 1 and q._version == 0


def test_float32_parameters_stay_float32_and_track_torch():
    def run(lib):
        p = lib.nn.Parameter(lib.tensor(W0.astype(np.float32)))
        opt = lib.optim.Adam([p], lr=0.01)
        for _ in range(10):
            p.grad = lib.tensor(((p.detach().numpy() - TARGET) ** 3).astype(np.float32))
            opt.step()
        return p.detach().numpy()

    ours, theirs = run(sg), run(torch)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(lr=0.5, history_size=3, max_iter=7),
        dict(line_search_fn="strong_wolfe"),
        dict(line_search_fn="strong_wolfe", history_size=2, max_iter=5, lr=0.8),
    ],
)
def test_lbfgs_matches_torch(kwargs):
    def run(lib):
        params = _params(lib)
        opt = lib.optim.LBFGS(params, **kwargs)
        losses = []

        def closure():
            opt.zero_grad()
            return _set_grads(lib, params)

        for _ in range(4):
            losses.append(float(opt.step(closure)))
        return [p.detach().numpy() for p in params], losses, opt

    ours, our_losses, opt = run(sg)
    theirs, their_losses, topt = run(torch)
    np.testing.assert_allclose(our_losses, their_losses, rtol=1e-10)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
    state = next(iter(opt.state.values()))
    tstate = next(iter(topt.state.values()))
    assert state["func_evals"] == tstate["func_evals"]
    assert state["n_iter"] == tstate["n_iter"]


def test_lbfgs_minimises_a_quadratic():
    a = sg.tensor([[3.0, 1.0], [1.0, 2.0]], dtype=sg.float64)
    x = sg.nn.Parameter(sg.zeros(2, dtype=sg.float64))
    opt = sg.optim.LBFGS([x], line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ a @ x) - x.sum()
        loss.backward()
        return loss

    opt.step(closure)
    np.testing.assert_allclose(
        x.detach().numpy(), np.linalg.solve(a.numpy(), [1.0, 1.0]), atol=1e-6
    )


def test_repr_lists_the_group_options_as_torch():
    assert repr(sg.optim.SGD(_params(sg), lr=0.1, momentum=0.9)) == repr(
        torch.optim.SGD(_params(torch), lr=0.1, momentum=0.9)
    )
    assert math.isclose(sg.optim.AdamW(_params(sg)).param_groups[0]["weight_decay"], 0.01)


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1)),
        ("Adam", dict(lr=0.05, amsgrad=True)),
        ("AdamW", dict(lr=0.05)),
        ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
        ("Adagrad", dict(lr=0.1, weight_decay=0.1)),
    ],
)
def test_complex_parameters_are_updated_as_real_pairs_as_torch(name, kwargs):
    z0 = W0[:, 0] + 1j * W0[:, 1]

    def run(lib):
        p = lib.nn.Parameter(lib.tensor(z0.copy()))
        opt = getattr(lib.optim, name)([p], **kwargs)
        for _ in range(10):
            z = p.detach().numpy()
            p.grad = lib.tensor(np.tanh(z.real - 1) + 1j * (z.imag + 0.5) ** 3)
            opt.step()
        return p.detach().numpy()

    ours, theirs = run(sg), run(torch)
    assert ours.dtype == np.complex128
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


def test_lbfgs_on_complex_parameters_matches_torch():
    z0 = W0[:, 0] + 1j * W0[:, 1]

    def run(lib):
        p = lib.nn.Parameter(lib.tensor(z0.copy()))
        opt = lib.optim.LBFGS([p], line_search_fn="strong_wolfe", max_iter=5)

        def closure():
            z = p.detach().numpy()
            p.grad = lib.tensor(2 * (z.real - 1) + 2j * (z.imag + 2))
            return lib.tensor(((z.real - 1) ** 2 + (z.imag + 2) ** 2).sum())

        opt.step(closure)
        return p.detach().numpy()

    np.testing.assert_allclose(run(sg), run(torch), rtol=0, atol=1e-10)


def test_step_and_state_dict_hooks_run_as_torch_s():
    def trace(lib):
        calls = []
        params = _params(lib)
        opt = lib.optim.SGD(params, lr=0.1)
        opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", len(a), sorted(k))))
        handle = opt.register_step_post_hook(lambda o, a, k: calls.append(("post",)))
        opt.register_state_dict_post_hook(
            lambda o, sd: calls.append(("sd", sorted(sd))) or {**sd, "extra": 1}
        )
        opt.register_load_state_dict_pre_hook(lambda o, sd: calls.append(("load",)))
        opt.register_load_state_dict_post_hook(lambda o: calls.append(("loaded",)))
        _set_grads(lib, params)
        opt.step()
        handle.remove()
        opt.step(closure=None)
        sd = opt.state_dict()
        opt.load_state_dict(sd)
        # a pre hook may replace the arguments: here, a closure that reports it ran
        opt.register_step_pre_hook(
            lambda o, a, k: ((a[0],), {"closure": lambda: calls.append(("closure",))})
        )
        opt.step()
        return calls, sorted(sd)

    assert trace(sg) == trace(torch)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt = sg.optim.Adam(_params(sg))
        opt.register_step_pre_hook(lambda o, a, k: 3)
        opt.step()


TRAINING_SCRIPT = """
import io
DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset

g = np.random.default_rng(0)
X = torch.tensor(g.normal(size=(50, 3)))
Y = torch.tensor(g.normal(size=(50, 1)))
w = torch.nn.Parameter(torch.tensor(g.normal(size=(3, 1))))
b = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
loader = DataLoader(TensorDataset(X, Y), batch_size=8, drop_last=True)
opt = torch.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.01}], lr=0.05, momentum=0.9,
                      nesterov=True)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[0.2, 0.05], total_steps=3 * len(loader))
norms = []
for epoch in range(3):
    for x, y in loader:
        opt.zero_grad()
        loss = ((torch.tanh(x @ w + b) - y) ** 2).mean()
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_([w, b], max_norm=0.5).item())
        opt.step()
        sched.step()
buf = io.BytesIO()
torch.save({"w": w, "opt": opt.state_dict(), "sched": sched.state_dict()}, buf)
buf.seek(0)
ckpt = torch.load(buf)
result = (w.detach().numpy().copy(), b.detach().numpy().copy(), norms, sched.get_last_lr(),
          ckpt["w"].detach().numpy(), ckpt["opt"]["state"][0]["momentum_buffer"].numpy())
"""


def test_a_training_script_runs_unchanged_and_agrees_with_torch():
    results = []
    for lib in (sg, torch):
        namespace = {"torch": lib, "np": np}
        exec(TRAINING_SCRIPT, namespace)
        results.append(namespace["result"])
    ours, theirs = results
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-11, atol=1e-13)
