"""`sourcegrad.optim.lr_scheduler` against torch's: the lr sequences are identical floats."""

import warnings

import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")


def _optimizer(lib, opt="SGD", groups=1, **kwargs):
    params = [
        {"params": [lib.nn.Parameter(lib.zeros(2))], "lr": 0.1 * (i + 1)} for i in range(groups)
    ]
    return getattr(lib.optim, opt)(params, **kwargs)


def _sequence(lib, make, steps=30, opt="SGD", groups=1, metrics=None, **opt_kwargs):
    """[(get_last_lr(), [group lrs], [momentum/betas]) after construction and each step]."""
    optimizer = _optimizer(lib, opt, groups, **opt_kwargs)
    scheduler = make(lib.optim.lr_scheduler, optimizer)
    key = "betas" if opt == "Adam" else "momentum"
    out = [
        (
            scheduler.get_last_lr(),
            [g["lr"] for g in optimizer.param_groups],
            [g.get(key) for g in optimizer.param_groups],
        )
    ]
    for i in range(steps):
        optimizer.step()
        if metrics is None:
            scheduler.step()
        else:
            scheduler.step(metrics[i])
        out.append(
            (
                scheduler.get_last_lr(),
                [g["lr"] for g in optimizer.param_groups],
                [g.get(key) for g in optimizer.param_groups],
            )
        )
    return out, scheduler


SCHEDULES = {
    "StepLR": lambda s, o: s.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda s, o: s.MultiStepLR(o, milestones=[2, 5, 5, 11], gamma=0.3),
    "ExponentialLR": lambda s, o: s.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda s, o: s.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "CosineAnnealingLR-default": lambda s, o: s.CosineAnnealingLR(o, T_max=10),
    "LambdaLR": lambda s, o: s.LambdaLR(o, lambda e: 0.95**e + 1 / (e + 1)),
    "LambdaLR-per-group": lambda s, o: s.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.9**e]),
    "MultiplicativeLR": lambda s, o: s.MultiplicativeLR(o, lambda e: 0.97),
    "ConstantLR": lambda s, o: s.ConstantLR(o, factor=0.25, total_iters=4),
    "LinearLR": lambda s, o: s.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6),
    "PolynomialLR": lambda s, o: s.PolynomialLR(o, total_iters=8, power=2.0),
    "OneCycleLR": lambda s, o: s.OneCycleLR(o, max_lr=1.0, total_steps=30),
    "OneCycleLR-linear-3phase": lambda s, o: s.OneCycleLR(
        o,
        max_lr=[0.5, 2.0],
        epochs=3,
        steps_per_epoch=10,
        anneal_strategy="linear",
        three_phase=True,
        pct_start=0.25,
    ),
    "SequentialLR": lambda s, o: s.SequentialLR(
        o,
        [s.LinearLR(o, start_factor=0.1, total_iters=4), s.ExponentialLR(o, gamma=0.8)],
        milestones=[5],
    ),
    "CyclicLR": lambda s, o: s.CyclicLR(
        o, base_lr=0.01, max_lr=[0.1, 0.3], step_size_up=4, step_size_down=3
    ),
    "CyclicLR-triangular2": lambda s, o: s.CyclicLR(
        o, 0.01, 0.1, step_size_up=3, mode="triangular2"
    ),
    "CyclicLR-exp_range": lambda s, o: s.CyclicLR(
        o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.9
    ),
    "CosineAnnealingWarmRestarts": lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=4),
    "CosineAnnealingWarmRestarts-mult": lambda s, o: s.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.01
    ),
    "ChainedScheduler": lambda s, o: s.ChainedScheduler(
        [s.ConstantLR(o, factor=0.5, total_iters=3), s.ExponentialLR(o, gamma=0.9)]
    ),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_lr_sequence_is_torch_s(name, opt):
    groups = 2
    kwargs = dict(momentum=0.9) if opt == "SGD" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours, sched = _sequence(sg, SCHEDULES[name], opt=opt, groups=groups, **kwargs)
        theirs, tsched = _sequence(torch, SCHEDULES[name], opt=opt, groups=groups, **kwargs)
    assert ours == theirs  # exact: the same float operations in the same order
    assert len({tuple(lrs) for lrs, _, _ in ours}) > 1  # the schedule does change the lr
    sd, tsd = sched.state_dict(), tsched.state_dict()
    assert sd.keys() == tsd.keys()
    for key in ("last_epoch", "_step_count", "base_lrs", "_last_lr"):
        assert sd.get(key) == tsd.get(key)


def test_step_with_epoch_uses_the_closed_form_and_warns():
    for make in (SCHEDULES["StepLR"], SCHEDULES["CosineAnnealingLR"], SCHEDULES["LinearLR"]):
        lrs = []
        for lib in (sg, torch):
            optimizer = _optimizer(lib)
            scheduler = make(lib.optim.lr_scheduler, optimizer)
            seq = []
            for epoch in (4, 9, 2):
                optimizer.step()
                with pytest.warns(UserWarning, match="epoch parameter"):
                    scheduler.step(epoch)
                seq.append(scheduler.get_last_lr())
            lrs.append(seq)
        assert lrs[0] == lrs[1]


def test_reduce_lr_on_plateau_matches_torch():
    metrics = [
        1.0,
        0.9,
        0.9,
        0.9,
        0.95,
        0.89,
        0.8999,
        0.91,
        0.92,
        0.93,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
    ]
    for kwargs in (
        dict(patience=2),
        dict(mode="max", factor=0.5, patience=1, cooldown=2),
        dict(threshold_mode="abs", threshold=0.05, patience=0, min_lr=[0.02, 0.05]),
        dict(patience=0, factor=0.1, min_lr=0.0999, eps=1e-3),
    ):
        make = lambda s, o, kw=kwargs: s.ReduceLROnPlateau(o, **kw)  # noqa: E731
        ours, sched = _sequence(sg, make, steps=len(metrics), groups=2, metrics=metrics)
        theirs, tsched = _sequence(torch, make, steps=len(metrics), groups=2, metrics=metrics)
        assert ours == theirs
        assert sched.state_dict() == tsched.state_dict()


def test_state_dict_round_trip_resumes_the_schedule():
    opt = _optimizer(sg)
    sched = sg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    for _ in range(4):
        opt.step()
        sched.step()
    state = sched.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 4
    opt2 = _optimizer(sg)
    opt2.load_state_dict(opt.state_dict())
    sched2 = sg.optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=10, last_epoch=3)
    sched2.load_state_dict(state)
    for _ in range(3):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            s.step()
    assert sched.get_last_lr() == sched2.get_last_lr()
    assert opt.param_groups[0]["lr"] == opt2.param_groups[0]["lr"]


def test_lambda_state_dict_leaves_functions_out():
    for lib in (sg, torch):
        sched = lib.optim.lr_scheduler.LambdaLR(_optimizer(lib), lambda e: 1.0)
        assert sched.state_dict()["lr_lambdas"] == [None]


@pytest.mark.parametrize(
    "make",
    [
        lambda s, o: s.StepLR("not an optimizer", 3),
        lambda s, o: s.ReduceLROnPlateau(o, factor=1.5),
        lambda s, o: s.ReduceLROnPlateau(o, mode="middle"),
        lambda s, o: s.ConstantLR(o, factor=2.0),
        lambda s, o: s.LinearLR(o, start_factor=0.0),
        lambda s, o: s.LambdaLR(o, [lambda e: 1.0, lambda e: 1.0]),
        lambda s, o: s.OneCycleLR(o, max_lr=0.1),
        lambda s, o: s.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="quad"),
        lambda s, o: s.StepLR(o, 3, last_epoch=5),
        lambda s, o: s.SequentialLR(o, [s.StepLR(o, 3)], milestones=[2]),
    ],
)
def test_errors_match_torch(make):
    def error(lib):
        try:
            make(lib.optim.lr_scheduler, _optimizer(lib))
        except Exception as e:  # noqa: BLE001 - comparing the exception itself
            return type(e).__name__, str(e)

    theirs = error(torch)
    assert theirs is not None and error(sg) == theirs


def test_stepping_the_scheduler_before_the_optimizer_warns_as_torch():
    for lib in (sg, torch):
        optimizer = _optimizer(lib)
        scheduler = lib.optim.lr_scheduler.StepLR(optimizer, 2)
        with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
            scheduler.step()


def test_one_cycle_past_total_steps_raises_as_torch():
    for lib in (sg, torch):
        optimizer = _optimizer(lib, momentum=0.9)
        scheduler = lib.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1.0, total_steps=3)
        for _ in range(3):
            optimizer.step()
            scheduler.step()
        with pytest.raises(ValueError, match="Tried to step 4 times"):
            scheduler.step()


def test_warm_restarts_with_fractional_epochs_match_torch():
    lrs = []
    for lib in (sg, torch):
        optimizer = _optimizer(lib)
        scheduler = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(
            optimizer, T_0=2, T_mult=3, eta_min=1e-3
        )
        seq = []
        for epoch in range(12):
            for i in range(4):
                optimizer.step()
                scheduler.step(epoch + i / 4)
                seq.append(scheduler.get_last_lr())
        lrs.append(seq)
    assert lrs[0] == lrs[1]
