"""Adam's and AdamW's update of a whole parameter group at once (optim/_together.py): the
same numbers as the one-parameter-at-a-time rule, bit for bit, step after step, and as
torch's; the state stays per parameter (views into the group's buffer) and survives what
replaces it (load_state_dict, deepcopy, assignment); a group that does not fit (a
parameter without a gradient, different step counts, amsgrad) takes the single rule."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

SHAPES = [(5, 3), (3,), (7,), (2, 2, 2), (1,)]


def _params(lib, seed=0):
    rng = np.random.default_rng(seed)
    return [lib.nn.Parameter(lib.tensor(rng.normal(size=s).astype(np.float32))) for s in SHAPES]


def _grads(step, skip=()):
    rng = np.random.default_rng(100 + step)
    return [
        None if i in skip else rng.normal(size=s).astype(np.float32) for i, s in enumerate(SHAPES)
    ]


class _OneByOne:
    """The optimizer class with the group update turned off: the single-tensor rule."""

    def __init__(self, cls):
        self.cls = type(
            cls.__name__, (cls,), {"_update_together": lambda self, group, params: params}
        )

    def __call__(self, *args, **kwargs):
        return self.cls(*args, **kwargs)


def _run(make, steps=5, skip_at=None, lib=sg):
    params = _params(lib)
    opt = make(params)
    for step in range(steps):
        for p, g in zip(params, _grads(step, skip_at.get(step, ()) if skip_at else ())):
            p.grad = None if g is None else lib.tensor(g)
        opt.step()
    return params, opt


CONFIGS = [
    (sg.optim.Adam, torch.optim.Adam, {}),
    (sg.optim.Adam, torch.optim.Adam, {"maximize": True, "betas": (0.8, 0.9)}),
    (sg.optim.AdamW, torch.optim.AdamW, {"weight_decay": 0.1, "betas": (0.9, 0.95)}),
    (sg.optim.Adam, torch.optim.Adam, {"weight_decay": 0.1}),  # (coupled decay: one by one)
    (sg.optim.Adam, torch.optim.Adam, {"amsgrad": True}),  # (one by one)
]


@pytest.mark.parametrize("ours, theirs, kwargs", CONFIGS)
def test_group_update_is_the_single_rule_bit_for_bit_and_torchs(ours, theirs, kwargs):
    together, _ = _run(lambda ps: ours(ps, lr=1e-2, **kwargs))
    one, _ = _run(lambda ps: _OneByOne(ours)(ps, lr=1e-2, **kwargs))
    reference, _ = _run(lambda ps: theirs(ps, lr=1e-2, **kwargs), lib=torch)
    for a, b, t in zip(together, one, reference):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_the_group_update_is_taken_and_keeps_the_state_per_parameter():
    params, opt = _run(lambda ps: sg.optim.AdamW(ps, lr=1e-2))
    bases = [opt.state[p]["exp_avg"]._data.base for p in params]
    assert bases[0] is not None and all(b is bases[0] for b in bases)
    for p in params:  # each state Tensor has its parameter's shape, and a count of its own
        assert opt.state[p]["exp_avg_sq"].shape == p.shape
        assert float(opt.state[p]["step"]) == 5.0
    sd = opt.state_dict()  # the state's Tensors, as torch's state_dict gives them
    assert sd["state"][0]["exp_avg"] is opt.state[params[0]]["exp_avg"]


def test_parameters_without_a_gradient_and_uneven_counts_match_the_single_rule():
    skip = {1: (0, 3), 3: (2,)}  # some parameters miss steps: their counts then differ
    together, opt = _run(lambda ps: sg.optim.Adam(ps, lr=1e-2), steps=6, skip_at=skip)
    one, _ = _run(lambda ps: _OneByOne(sg.optim.Adam)(ps, lr=1e-2), steps=6, skip_at=skip)
    for a, b in zip(together, one):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert sorted(float(opt.state[p]["step"]) for p in together) == [5.0, 5.0, 5.0, 6.0, 6.0]


@pytest.mark.parametrize("replace", ["load_state_dict", "deepcopy", "assign"])
def test_state_replaced_between_steps_is_gathered_again(replace):
    params, opt = _run(lambda ps: sg.optim.Adam(ps, lr=1e-2), steps=3)
    ref_params, ref = _run(lambda ps: _OneByOne(sg.optim.Adam)(ps, lr=1e-2), steps=3)
    if replace == "load_state_dict":
        opt.load_state_dict(copy.deepcopy(opt.state_dict()))
    elif replace == "deepcopy":
        opt = copy.deepcopy(opt)
        params = [p for g in opt.param_groups for p in g["params"]]
    else:
        for p in params:
            opt.state[p]["exp_avg"] = sg.tensor(opt.state[p]["exp_avg"].detach().numpy().copy())
    for step in range(3, 6):
        for ps in (params, ref_params):
            for p, g in zip(ps, _grads(step)):
                p.grad = sg.tensor(g)
        opt.step()
        ref.step()
    for a, b in zip(params, ref_params):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert len(opt._together) == 1  # (the replaced group's buffers are not kept)
    for p, q in zip(params, ref_params):
        np.testing.assert_array_equal(
            opt.state[p]["exp_avg"].detach().numpy(), ref.state[q]["exp_avg"].detach().numpy()
        )


def test_a_parameter_resized_between_steps_is_laid_out_again():
    params, opt = _run(lambda ps: sg.optim.Adam(ps, lr=1e-2), steps=3)
    ref_params, ref = _run(lambda ps: _OneByOne(sg.optim.Adam)(ps, lr=1e-2), steps=3)
    for o, ps in ((opt, params), (ref, ref_params)):  # a new value and state, of a new size
        ps[1].data = sg.zeros(4)
        o.state[ps[1]]["exp_avg"] = sg.zeros(4)
        o.state[ps[1]]["exp_avg_sq"] = sg.zeros(4)
    for o, ps in ((opt, params), (ref, ref_params)):
        for p in ps:
            p.grad = sg.ones(p.shape)
        o.step()
    for a, b in zip(params, ref_params):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_a_large_parameter_takes_the_single_rule_beside_the_small_ones():
    rng = np.random.default_rng(1)
    shapes = [(100, 50), (3,), (7,)]  # (5000 elements: more than _together.SMALL)

    def run(make):
        params = [sg.nn.Parameter(sg.tensor(rng.normal(size=s).astype(np.float32))) for s in shapes]
        opt = make(params)
        for step in range(4):
            for p in params:
                p.grad = sg.tensor(np.full(p.shape, 0.1 * (step + 1), np.float32))
            opt.step()
        return params, opt

    rng = np.random.default_rng(1)
    together, opt = run(lambda ps: sg.optim.AdamW(ps, lr=1e-2))
    rng = np.random.default_rng(1)
    one, _ = run(lambda ps: _OneByOne(sg.optim.AdamW)(ps, lr=1e-2))
    for a, b in zip(together, one):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert opt.state[together[0]]["exp_avg"]._data.base is None  # (its own array)
    assert opt.state[together[1]]["exp_avg"]._data.base is not None  # (the small ones' buffer)
