"""torch.nn.utils.parametrize / parametrizations, torch.nn.utils.prune and
torch.optim.swa_utils against torch 2.13: the same weights in (copied through state_dict),
the same parametrized weights, gradients, masks, state-dict keys and averaged parameters
out (float64 unless a case says otherwise)."""

import copy
import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")
pytest.importorskip("torch.nn.utils.prune")  # torch loads it on import only

X = np.sin(np.arange(4 * 5) * 0.7).reshape(4, 5)


def twin(make):
    """make(lib) for torch and for sourcegrad, with torch's initial values copied over."""
    torch.manual_seed(0)
    theirs = make(torch).double()
    ours = make(sg).double()
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def numpy_of(t):
    return t.detach().numpy()


def assert_same_state(ours, theirs, rtol=1e-12):
    ours_state, theirs_state = ours.state_dict(), theirs.state_dict()
    assert list(ours_state) == list(theirs_state)
    for key, value in theirs_state.items():
        np.testing.assert_allclose(numpy_of(ours_state[key]), value.numpy(), rtol=rtol, atol=0)


def backward_both(ours, theirs, x=X):
    (ours(sg.tensor(x)) ** 2).sum().backward()
    (theirs(torch.tensor(x)) ** 2).sum().backward()


# --- parametrize ------------------------------------------------------------------------------


def symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    return Symmetric()


def doubled(lib):
    class Doubled(lib.nn.Module):
        def forward(self, x):
            return 2 * x

    return Doubled()


def test_parametrized_weight_its_gradient_and_removal_are_torchs():
    ours, theirs = twin(lambda lib: lib.nn.Linear(5, 5))
    for lib, m in [(sg, ours), (torch, theirs)]:
        lib.nn.utils.parametrize.register_parametrization(m, "weight", symmetric(lib))
        lib.nn.utils.parametrize.register_parametrization(m, "weight", doubled(lib))
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    assert_same_state(ours, theirs)
    np.testing.assert_array_equal(numpy_of(ours.weight), numpy_of(theirs.weight))
    backward_both(ours, theirs)
    np.testing.assert_allclose(
        ours.parametrizations.weight.original.grad.numpy(),
        theirs.parametrizations.weight.original.grad.numpy(),
        rtol=1e-12,
    )
    parametrize = sg.nn.utils.parametrize
    assert parametrize.is_parametrized(ours) and parametrize.is_parametrized(ours, "weight")
    assert not parametrize.is_parametrized(ours, "bias")
    assert parametrize.type_before_parametrizations(ours) is sg.nn.Linear
    for lib, m in [(sg, ours), (torch, theirs)]:
        lib.nn.utils.parametrize.remove_parametrizations(m, "weight")
    assert type(ours) is sg.nn.Linear and isinstance(ours.weight, sg.nn.Parameter)
    assert_same_state(ours, theirs)


def test_assigning_a_parametrized_weight_stores_its_right_inverse():
    ours, theirs = twin(lambda lib: lib.nn.Linear(3, 3))
    value = np.arange(9.0).reshape(3, 3)
    for lib, m in [(sg, ours), (torch, theirs)]:
        lib.nn.utils.parametrize.register_parametrization(m, "weight", symmetric(lib))
        with lib.no_grad():
            m.weight = lib.tensor(value)
    assert_same_state(ours, theirs)
    np.testing.assert_array_equal(numpy_of(ours.weight), numpy_of(theirs.weight))


def test_cached_computes_a_parametrization_once():
    calls = []

    class Counted(sg.nn.Module):
        def forward(self, x):
            calls.append(1)
            return x * 1

    m = sg.nn.Linear(2, 2)
    sg.nn.utils.parametrize.register_parametrization(m, "weight", Counted())
    calls.clear()
    with sg.nn.utils.parametrize.cached():
        assert m.weight is m.weight
    assert len(calls) == 1
    m.weight
    m.weight
    assert len(calls) == 3


def test_parametrization_refusals_are_torchs():
    m = sg.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        sg.nn.utils.parametrize.register_parametrization(m, "nothing", doubled(sg))
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        sg.nn.utils.parametrize.remove_parametrizations(m, "weight")

    class Shrink(sg.nn.Module):
        def forward(self, x):
            return x[0]

    with pytest.raises(ValueError, match="may not change the shape"):
        sg.nn.utils.parametrize.register_parametrization(m, "weight", Shrink())


def test_a_parametrized_module_deep_copies_but_does_not_pickle():
    m = sg.nn.Linear(2, 2)
    sg.nn.utils.parametrize.register_parametrization(m, "weight", doubled(sg))
    clone = copy.deepcopy(m)
    np.testing.assert_array_equal(numpy_of(clone.weight), numpy_of(m.weight))
    assert clone.parametrizations.weight.original is not m.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        m.__getstate__()


# --- parametrizations -------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_is_torchs(dim):
    ours, theirs = twin(lambda lib: lib.nn.Linear(5, 3))
    sg.nn.utils.parametrizations.weight_norm(ours, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    assert_same_state(ours, theirs)
    backward_both(ours, theirs)
    for i in (0, 1):
        np.testing.assert_allclose(
            getattr(ours.parametrizations.weight, f"original{i}").grad.numpy(),
            getattr(theirs.parametrizations.weight, f"original{i}").grad.numpy(),
            rtol=1e-10,
        )


@pytest.mark.parametrize("make", ["linear", "conv", "conv_transpose"])
def test_spectral_norm_parametrization_is_torchs(make):
    def module(lib):
        if make == "linear":
            return lib.nn.Linear(5, 3)
        if make == "conv":
            return lib.nn.Conv2d(2, 3, 3)
        return lib.nn.ConvTranspose2d(2, 3, 3)

    ours, theirs = twin(module)
    sg.nn.utils.parametrizations.spectral_norm(ours, n_power_iterations=2)
    torch.nn.utils.parametrizations.spectral_norm(theirs, n_power_iterations=2)
    # the random start vectors are torch's too, then every iteration must agree
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    for mode in ["train", "train", "eval"]:
        getattr(ours, mode)()
        getattr(theirs, mode)()
        np.testing.assert_allclose(numpy_of(ours.weight), numpy_of(theirs.weight), rtol=1e-10)
    assert_same_state(ours, theirs, rtol=1e-10)
    ours.train()
    theirs.train()
    x = np.sin(np.arange(2 * 2 * 6 * 6) * 0.3).reshape(2, 2, 6, 6) if make != "linear" else X
    backward_both(ours, theirs, x)
    np.testing.assert_allclose(
        ours.parametrizations.weight.original.grad.numpy(),
        theirs.parametrizations.weight.original.grad.numpy(),
        rtol=1e-9,
    )


# (orthogonal: tests/eager/test_orthogonal_parametrization.py)


# --- prune ------------------------------------------------------------------------------------


def prune_both(ours, theirs, method, *args, **kwargs):
    getattr(sg.nn.utils.prune, method)(ours, *args, **kwargs)
    getattr(torch.nn.utils.prune, method)(theirs, *args, **kwargs)


def test_l1_pruning_iterated_and_structured_gives_torchs_masks_and_gradients():
    ours, theirs = twin(lambda lib: lib.nn.Linear(5, 4))
    prune_both(ours, theirs, "l1_unstructured", "weight", amount=0.3)
    assert sorted(dict(ours.named_parameters())) == ["bias", "weight_orig"]
    assert_same_state(ours, theirs)  # weight_orig and weight_mask
    prune_both(ours, theirs, "l1_unstructured", "weight", amount=3)
    prune_both(ours, theirs, "ln_structured", "weight", amount=1, n=2, dim=0)
    prune_both(ours, theirs, "l1_unstructured", "bias", amount=0.5)
    assert_same_state(ours, theirs)
    assert type(next(iter(ours._forward_pre_hooks.values()))).__name__ == "PruningContainer"
    np.testing.assert_array_equal(numpy_of(ours.weight), numpy_of(theirs.weight))
    backward_both(ours, theirs)
    np.testing.assert_allclose(ours.weight_orig.grad.numpy(), theirs.weight_orig.grad.numpy())
    assert sg.nn.utils.prune.is_pruned(ours)
    for name in ["weight", "bias"]:
        sg.nn.utils.prune.remove(ours, name)
        torch.nn.utils.prune.remove(theirs, name)
    assert not sg.nn.utils.prune.is_pruned(ours)
    assert isinstance(ours.weight, sg.nn.Parameter)
    assert_same_state(ours, theirs)


def test_structured_pruning_of_a_conv_gives_torchs_masks():
    ours, theirs = twin(lambda lib: lib.nn.Conv2d(3, 4, 3))
    prune_both(ours, theirs, "ln_structured", "weight", amount=0.5, n=1, dim=1)
    prune_both(ours, theirs, "l1_unstructured", "weight", amount=0.2)
    prune_both(ours, theirs, "ln_structured", "weight", amount=1, n=float("inf"), dim=0)
    assert_same_state(ours, theirs)


def test_global_unstructured_gives_torchs_masks():
    pairs = [twin(lambda lib: lib.nn.Linear(5, 4)), twin(lambda lib: lib.nn.Linear(4, 3))]
    for k, lib in [(0, sg), (1, torch)]:
        first, second = pairs[0][k], pairs[1][k]
        lib.nn.utils.prune.global_unstructured(
            [(first, "weight"), (second, "weight"), (second, "bias")],
            pruning_method=lib.nn.utils.prune.L1Unstructured,
            amount=0.4,
        )
    for ours, theirs in pairs:
        assert_same_state(ours, theirs)


def test_random_pruning_prunes_torchs_counts():
    m = sg.nn.Linear(5, 4)
    sg.nn.utils.prune.random_unstructured(m, "weight", amount=0.25)
    assert int((m.weight_mask == 0).sum()) == 5
    c = sg.nn.Conv2d(2, 4, 3)
    sg.nn.utils.prune.random_structured(c, "weight", amount=2, dim=0)
    kept_channels = (c.weight_mask.sum(dim=[1, 2, 3]) != 0).numpy()
    assert kept_channels.sum() == 2


def test_pruning_refusals_are_torchs():
    m = sg.nn.Linear(5, 4)
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        sg.nn.utils.prune.l1_unstructured(m, "bias", amount=10)
    assert sorted(dict(m.named_parameters())) == ["bias", "weight"]  # put back as it was
    with pytest.raises(ValueError, match="should either be a float in the range"):
        sg.nn.utils.prune.l1_unstructured(m, "weight", amount=1.5)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        sg.nn.utils.prune.remove(m, "weight")
    with pytest.raises(ValueError, match="Structured pruning can only be applied"):
        sg.nn.utils.prune.ln_structured(m, "bias", amount=1, n=2, dim=0)


# --- swa_utils --------------------------------------------------------------------------------


def bn_model(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


def averaging(lib, kind):
    swa = lib.optim.swa_utils
    return {
        "default": {},
        "ema multi": {"multi_avg_fn": swa.get_ema_multi_avg_fn(0.9)},
        "ema": {"avg_fn": swa.get_ema_avg_fn(0.9)},
        "swa multi": {"multi_avg_fn": swa.get_swa_multi_avg_fn()},
        "buffers": {"use_buffers": True},
    }[kind]


@pytest.mark.parametrize("kind", ["default", "ema multi", "ema", "swa multi", "buffers"])
def test_averaged_model_over_five_updates_is_torchs(kind):
    ours, theirs = twin(bn_model)
    averaged = [
        sg.optim.swa_utils.AveragedModel(ours, **averaging(sg, kind)),
        torch.optim.swa_utils.AveragedModel(theirs, **averaging(torch, kind)),
    ]
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = rng.standard_normal((8, 3))
        for lib, m, avg in [(sg, ours, averaged[0]), (torch, theirs, averaged[1])]:
            m(lib.tensor(x))  # moves the BatchNorm statistics
            with lib.no_grad():
                for p in m.parameters():
                    p.mul_(0.9).add_(0.1)
            avg.update_parameters(m)
    assert_same_state(averaged[0], averaged[1], rtol=1e-12)
    assert int(averaged[0].n_averaged) == 5
    x = sg.tensor(X[:, :3])
    averaged[0].eval()
    averaged[1].eval()
    np.testing.assert_allclose(
        numpy_of(averaged[0](x)), numpy_of(averaged[1](torch.tensor(X[:, :3]))), rtol=1e-12
    )


def test_update_bn_recomputes_torchs_statistics():
    ours, theirs = twin(bn_model)
    rng = np.random.default_rng(0)
    data = [rng.standard_normal((5, 3)) for _ in range(3)]
    ours.eval()
    theirs.eval()
    sg.optim.swa_utils.update_bn([(sg.tensor(d), 0) for d in data], ours)
    torch.optim.swa_utils.update_bn([(torch.tensor(d), 0) for d in data], theirs)
    assert not ours.training
    assert_same_state(ours, theirs, rtol=1e-12)
    assert ours[1].momentum == theirs[1].momentum == 0.1


@pytest.mark.parametrize("strategy, epochs", [("cos", 3), ("linear", 2), ("cos", 0)])
def test_swalr_anneals_as_torch(strategy, epochs):
    rates = []
    for lib in (sg, torch):
        param = lib.nn.Parameter(lib.ones(2))
        optimizer = lib.optim.SGD([param], lr=0.5)
        scheduler = lib.optim.swa_utils.SWALR(
            optimizer, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy
        )
        seen = []
        for _ in range(6):
            optimizer.step()
            scheduler.step()
            seen.append(scheduler.get_last_lr()[0])
        rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-14)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        sg.optim.swa_utils.SWALR(sg.optim.SGD([sg.nn.Parameter(sg.ones(1))], lr=1.0), 0.1, 2, "x")


def test_swa_training_loop_of_torchs_docs_runs_to_torchs_numbers():
    ours, theirs = twin(bn_model)
    rng = np.random.default_rng(3)
    batches = [(rng.standard_normal((6, 3)), rng.standard_normal((6, 2))) for _ in range(4)]
    results = []
    for lib, model in [(sg, ours), (torch, theirs)]:
        optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
        swa_model = lib.optim.swa_utils.AveragedModel(model)
        scheduler = lib.optim.swa_utils.SWALR(optimizer, swa_lr=0.05, anneal_epochs=2)
        for epoch in range(4):
            for x, y in batches:
                optimizer.zero_grad()
                loss = ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
                loss.backward()
                optimizer.step()
            if epoch >= 1:
                swa_model.update_parameters(model)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    scheduler.step()
        lib.optim.swa_utils.update_bn([(lib.tensor(x), 0) for x, _ in batches], swa_model)
        results.append(swa_model.state_dict())
    for key, value in results[1].items():
        np.testing.assert_allclose(numpy_of(results[0][key]), value.numpy(), rtol=1e-9)


def test_weight_norm_parametrization_loads_an_old_weight_g_weight_v_state_dict():
    """A state dict of the old hook-based nn.utils.weight_norm (`weight_g`, `weight_v`) loads
    into parametrizations.weight_norm through its load_state_dict pre-hook, as torch's."""
    old = {
        "weight_g": np.array([[1.5], [2.0]]),
        "weight_v": np.sin(np.arange(6.0)).reshape(2, 3),
        "bias": np.array([0.1, -0.2]),
    }
    out = {}
    for lib in (torch, sg):
        lin = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 2).double())
        lin.load_state_dict({k: lib.tensor(v) for k, v in old.items()})
        assert sorted(lin.state_dict()) == [
            "bias",
            "parametrizations.weight.original0",
            "parametrizations.weight.original1",
        ]
        out[lib.__name__] = lin(lib.tensor(X[:, :3])).detach().numpy()
    np.testing.assert_allclose(out["sourcegrad"], out["torch"], rtol=1e-12)


def test_load_state_dict_pre_hooks_public_and_private():
    """register_load_state_dict_pre_hook (with the module first) and
    _register_load_state_dict_pre_hook (without it unless with_module=True) see what torch's
    see, may rename keys, and are removed by their handle."""
    seen = {}
    for lib in (torch, sg):
        calls = []
        lin = lib.nn.Linear(2, 2)

        def public(module, state_dict, prefix, *rest, calls=calls, lin=lin):
            calls.append(("public", module is lin, prefix, sorted(state_dict)))
            if "w" in state_dict:
                state_dict["weight"] = state_dict.pop("w")

        def private(state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            calls.append(("private", prefix, strict, list(missing), list(unexpected)))

        h1 = lin.register_load_state_dict_pre_hook(public)
        h2 = lin._register_load_state_dict_pre_hook(private)
        lin.load_state_dict({"w": lib.ones(2, 2), "bias": lib.zeros(2)})
        calls.append(float(lin.weight.sum()))
        h1.remove(), h2.remove()
        lin.load_state_dict({"weight": lib.zeros(2, 2), "bias": lib.zeros(2)})
        seen[lib.__name__] = calls
    assert seen["sourcegrad"] == seen["torch"]
