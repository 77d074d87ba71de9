"""torch.backends, torch.amp (autocast, GradScaler), torch.cuda.amp, torch.accelerator,
torch.distributed and torch.nn.parallel as torch has them on a machine without a GPU.

Each scenario runs once with torch and once with sourcegrad as `lib`; what it returns,
the warnings it gives (category and text) and the error it raises (type and text) must be
the same. Skipped when torch is absent, or when either library sees a CUDA device.
"""

import os
import warnings

import numpy as np
import pytest

import sourcegrad as sg

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(
    torch.cuda.is_available() or sg.cuda.is_available(), reason="the CPU-only behaviour"
)


def _outcome(scenario, lib):
    """(result or ("raised", type name, message), [(warning category, text)])."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = scenario(lib)
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            result = ("raised", type(e).__name__, str(e))
    return result, [(w.category.__name__, str(w.message)) for w in caught]


def same(scenario):
    ours, theirs = _outcome(scenario, sg), _outcome(scenario, torch)
    assert ours == theirs
    return ours[0]


# --- backends ---------------------------------------------------------------------------------


def test_backend_flags_read_and_set_as_torch():
    def flags(lib):
        b = lib.backends
        seen = [
            b.cuda.matmul.allow_tf32,
            b.cudnn.allow_tf32,
            b.cudnn.benchmark,
            b.cudnn.deterministic,
            b.cudnn.enabled,
            b.cudnn.is_available(),
            b.cudnn.version(),
            b.mps.is_available(),
            b.mps.is_built(),
            b.cuda.is_built(),
            lib.get_float32_matmul_precision(),
        ]
        try:
            b.cuda.matmul.allow_tf32 = True
            b.cudnn.allow_tf32 = True
            b.cudnn.benchmark = True
            b.cudnn.deterministic = True
            seen += [b.cuda.matmul.allow_tf32, lib.get_float32_matmul_precision()]
            seen += [b.cudnn.benchmark, b.cudnn.deterministic]
            lib.set_float32_matmul_precision("medium")
            seen += [b.cuda.matmul.allow_tf32, lib.get_float32_matmul_precision()]
            lib.set_float32_matmul_precision("highest")
            seen += [b.cuda.matmul.allow_tf32]
            with b.cudnn.flags(enabled=False):
                seen.append(b.cudnn.enabled)
            seen.append(b.cudnn.enabled)
            lib.use_deterministic_algorithms(True)
            seen.append(lib.are_deterministic_algorithms_enabled())
            seen += [b.cuda.flash_sdp_enabled(), b.cuda.math_sdp_enabled()]
            b.cuda.enable_flash_sdp(False)
            seen.append(b.cuda.flash_sdp_enabled())
        finally:
            b.cuda.matmul.allow_tf32 = False
            b.cudnn.benchmark = b.cudnn.deterministic = False
            lib.use_deterministic_algorithms(False)
            b.cuda.enable_flash_sdp(True)
        try:
            b.cuda.matmul.not_a_flag = 1
        except AttributeError as e:
            seen.append(str(e))
        return seen

    assert same(flags)[:3] == [False, True, False]


def test_matmul_precision_warns_on_unknown_value():
    def bad(lib):
        lib.set_float32_matmul_precision("fastest")
        return lib.get_float32_matmul_precision()

    ours, theirs = _outcome(bad, sg), _outcome(bad, torch)
    assert ours[0] == theirs[0] == "highest"
    assert ours[1][0][1] in theirs[1][0][1]  # torch appends where in C++ it was raised


# --- amp ----------------------------------------------------------------------------------------


def _train(lib, scaler, autocast, steps=3):
    lib.manual_seed(0)
    w = lib.nn.Parameter(lib.tensor(np.linspace(-1, 1, 6).reshape(3, 2)))
    opt = lib.optim.SGD([w], lr=0.1)
    x = lib.tensor(np.arange(6.0).reshape(2, 3))
    record = [scaler.is_enabled(), scaler.get_scale(), scaler.state_dict()]
    for _ in range(steps):
        opt.zero_grad()
        with autocast():
            loss = (x @ w).square().mean()
        scaled = scaler.scale(loss)
        scaled.backward()
        scaler.unscale_(opt)
        record.append(round(w.grad.norm().item(), 10))
        scaler.step(opt)
        scaler.update()
        record += [round(loss.item(), 10), scaler.get_scale()]
    return record + [w.detach().numpy().round(10).tolist(), scaler.state_dict()]


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: (lib.cuda.amp.GradScaler(), lambda: lib.cuda.amp.autocast()),
        lambda lib: (
            lib.amp.GradScaler("cuda"),
            lambda: lib.amp.autocast(device_type="cuda", dtype=lib.float16),
        ),
        lambda lib: (lib.amp.GradScaler(), lambda: lib.autocast("cuda")),
        lambda lib: (lib.amp.GradScaler("cuda", enabled=False), lambda: lib.autocast("cuda")),
    ],
    ids=["cuda.amp", "amp cuda", "amp default", "disabled"],
)
def test_cuda_amp_is_disabled_with_torchs_warnings(make):
    """A train script's mixed precision for CUDA on a machine without: GradScaler and
    autocast disabled (torch's warnings), the same steps as without them."""
    same(lambda lib: _train(lib, *make(lib)))


def test_enabled_grad_scaler_scales_unscales_and_updates_as_torch():
    def run(lib):
        scaler = lib.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
        return _train(lib, scaler, lambda: lib.autocast("cpu", enabled=False), steps=5)

    record = same(run)
    assert record[0] is True and record[-1]["scale"] == 32.0


def test_grad_scaler_skips_steps_with_inf_gradients_and_backs_off():
    def run(lib):
        scaler = lib.amp.GradScaler("cpu", init_scale=4.0)
        w = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        opt = lib.optim.SGD([w], lr=0.5)
        scaler.scale((w * lib.tensor([float("inf"), 1.0])).sum()).backward()
        scaler.step(opt)
        scaler.update()
        seen = [w.tolist(), scaler.get_scale(), scaler.state_dict()["_growth_tracker"]]
        for call in (lambda: scaler.unscale_(opt), lambda: scaler.unscale_(opt)):
            try:
                call()
            except RuntimeError as e:
                seen.append(str(e))
        return seen

    same(run)


def test_autocast_state_and_errors():
    def run(lib):
        seen = [lib.is_autocast_enabled(), lib.is_autocast_enabled("cpu")]
        with lib.autocast("cpu", dtype=lib.bfloat16):
            seen.append(lib.is_autocast_enabled("cpu"))
            with lib.autocast("cpu", enabled=False):
                seen.append(lib.is_autocast_enabled("cpu"))
            seen.append(lib.is_autocast_enabled("cpu"))
        seen.append(lib.is_autocast_enabled("cpu"))
        with lib.autocast("cpu", dtype=lib.float64):
            seen.append(lib.is_autocast_enabled("cpu"))

        @lib.autocast("cuda")
        def decorated():
            return lib.is_autocast_enabled("cuda")

        seen.append(decorated())
        seen += [lib.amp.is_autocast_available("cpu"), str(lib.get_autocast_dtype("cuda"))]
        lib.autocast("gpu")

    same(run)


def test_disabled_scaler_passes_everything_through():
    def run(lib):
        scaler = lib.amp.GradScaler(enabled=False)
        t = lib.ones(2)
        return [scaler.scale(t) is t, scaler.get_scale(), scaler.state_dict(), scaler.update()]

    same(run)


# --- accelerator ---------------------------------------------------------------------------


def test_accelerator_without_a_device():
    def run(lib):
        acc = lib.accelerator
        seen = [acc.current_accelerator(), acc.is_available(), acc.device_count()]
        for fn in (acc.current_device_index, acc.synchronize):
            try:
                fn()
            except RuntimeError as e:
                seen.append(str(e))
        device = acc.current_accelerator().type if acc.is_available() else "cpu"
        return seen + [device]

    assert same(run)[0] is None


# --- distributed and parallel ----------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_distributed_without_a_process_group(clean_env):
    def run(lib):
        dist = lib.distributed
        seen = [dist.is_available(), dist.is_initialized(), dist.is_torchelastic_launched()]
        seen.append(str(dist.ReduceOp.SUM))
        calls = [
            lambda: dist.init_process_group(backend="gloo"),
            lambda: dist.init_process_group(backend="nccl"),
            lambda: dist.get_rank(),
            lambda: dist.get_world_size(),
            lambda: dist.barrier(),
            lambda: dist.all_reduce(lib.ones(2)),
            lambda: dist.destroy_process_group(),
            lambda: lib.nn.parallel.DistributedDataParallel(lib.nn.Linear(2, 2)),
        ]
        for call in calls:
            try:
                call()
            except Exception as e:  # noqa: BLE001
                seen.append((type(e).__name__, str(e)))
        return seen

    same(run)


@pytest.mark.parametrize(
    "env",
    [
        {"RANK": "0"},
        {"RANK": "0", "WORLD_SIZE": "1"},
        {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "localhost"},
    ],
)
def test_init_process_group_reads_the_environment_as_torch(clean_env, env):
    for name, value in env.items():
        clean_env.setenv(name, value)

    def run(lib):
        lib.distributed.init_process_group("gloo")

    assert same(run)[1] == "ValueError"


def test_a_world_of_one_process(clean_env):
    """RANK=0 WORLD_SIZE=1 (torchrun with one process): torch's gloo group, sourcegrad's
    single-process one; the collectives and a DDP step are those of one rank."""
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    for name, value in {
        "RANK": "0",
        "WORLD_SIZE": "1",
        "MASTER_ADDR": "localhost",
        "MASTER_PORT": str(port),
    }.items():
        clean_env.setenv(name, value)

    def run(lib):
        dist = lib.distributed
        dist.init_process_group("gloo")
        try:
            seen = [dist.is_initialized(), dist.get_rank(), dist.get_world_size()]
            seen.append(dist.get_backend())
            t = lib.tensor([1.0, 2.0])
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
            gathered = [lib.zeros(2)]
            dist.all_gather(gathered, t)
            seen += [t.tolist(), gathered[0].tolist()]
            lib.manual_seed(0)
            inner = lib.nn.Linear(2, 1)
            with lib.no_grad():
                inner.weight.copy_(lib.tensor([[0.5, -1.0]]))
                inner.bias.fill_(0.25)
            model = lib.nn.parallel.DistributedDataParallel(inner)
            opt = lib.optim.SGD(model.parameters(), lr=0.1)
            loss = model(lib.tensor([[1.0, 2.0]])).square().sum()
            loss.backward()
            opt.step()
            seen += [sorted(model.state_dict()), model.module is inner]
            seen.append(inner.weight.detach().numpy().round(6).tolist())
            with model.no_sync():
                seen.append(model(lib.ones(1, 2)).item())
        finally:
            dist.destroy_process_group()
        return seen + [dist.is_initialized()]

    same(run)


def test_data_parallel_on_the_cpu_runs_the_module():
    def run(lib):
        inner = lib.nn.Linear(2, 2)
        model = lib.nn.DataParallel(inner)
        return [
            model.module is inner,
            tuple(model(lib.ones(3, 2)).shape),
            sorted(model.state_dict()),
        ]

    same(run)
