"""Whole programs written for torch, run unchanged under torch and under sourcegrad, compared
step by step.

Each program in `torch_programs/` is a script as its authors write them (`import torch`, a
model, a training loop, printing the losses): a minGPT-style Trainer with an infinite random
sampler, a nanoGPT-style train script that sets backends/amp flags and uses a disabled
GradScaler, models subclassing nn.Transformer and its layers, the save and reload of a whole
model; and REINFORCE with distributions.Categorical, the torchtext tutorial's EmbeddingBag
classifier, the examples' VAE, fine-tuning with frozen layers, param groups and LR
schedulers, a GRU char-RNN with truncated BPTT, gradient accumulation, custom
autograd.Functions with gradcheck, and parametrized weights saved through io.BytesIO.
It runs twice in this process: with the real torch, then with sourcegrad installed
as `torch` in `sys.modules` (`import torch.nn.functional as F` and the like resolve to
sourcegrad), as `__main__` with the same command line.

The two libraries draw different random numbers, so the run under sourcegrad is given
torch's: the program's `torch.randint` / `torch.randperm` draws (its batches, the random
sampler's indices) replay what torch drew, in the same order and sizes; and each model, at
its first forward, takes the weights torch's model had at that moment unless it has them
already (a model the program reloaded): the initialisation is the only other randomness,
the programs use no dropout. What they print must agree:
the text exactly (sourcegrad's module paths read as torch's), every number to float32
accuracy (or to the `# torch_programs: rtol=...` a program asks for, printing the digits),
the warnings too; and the state dict a program saves at its end as `final_state.pt` in its
--out_dir, to that tolerance.
"""

from __future__ import annotations

import contextlib
import io
import re
import runpy
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import sourcegrad

torch = pytest.importorskip("torch")

PROGRAMS = Path(__file__).parent / "torch_programs"
NAMES = sorted(p.stem for p in PROGRAMS.glob("*.py"))


# --- sourcegrad as torch ------------------------------------------------------------------------


@contextlib.contextmanager
def sourcegrad_as_torch():
    """`import torch` (and every `torch.<sub>` sourcegrad has) gives sourcegrad in the block."""
    import sourcegrad.amp._cuda
    import sourcegrad.eager.cuda

    for sub in ("nn.functional", "utils.data", "autograd.forward_ad", "autograd.profiler"):
        __import__("sourcegrad." + sub)
    aliases = {"torch": sourcegrad}
    for name, module in list(sys.modules.items()):
        if name.startswith("sourcegrad.") and module is not None:
            aliases["torch." + name[len("sourcegrad.") :]] = module
    aliases["torch.cuda"] = sourcegrad.eager.cuda
    aliases["torch.cuda.amp"] = sourcegrad.amp._cuda
    saved = {
        name: m for name, m in sys.modules.items() if name == "torch" or name.startswith("torch.")
    }
    for name in saved:
        del sys.modules[name]
    sys.modules.update(aliases)
    try:
        yield
    finally:
        for name in aliases:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


# --- what torch drew, replayed -----------------------------------------------------------------


def _size_of(args, kwargs):
    size = kwargs.get("size")
    if size is None:
        size = next(
            (a for a in args if isinstance(a, (tuple, list)) or hasattr(a, "__len__")), None
        )
    return tuple(size) if size is not None else None


class Recording:
    """torch's random draws made through `torch.randint` / `torch.randperm` and each model's
    weights at its first forward, in the order the program made them."""

    def __init__(self):
        self.draws = []
        self.weights = []


@contextlib.contextmanager
def recording_torch(record, monkeypatch):
    def recorded(fn, kind):
        def draw(*args, **kwargs):
            out = fn(*args, **kwargs)
            record.draws.append((kind, out.numpy().copy()))
            return out

        return draw

    monkeypatch.setattr(torch, "randint", recorded(torch.randint, "randint"))
    monkeypatch.setattr(torch, "randperm", recorded(torch.randperm, "randperm"))
    roots, depth = [], [0]

    def pre(module, args):
        if depth[0] == 0 and not any(module is m for r in roots for m in r.modules()):
            roots.append(module)
            record.weights.append(
                {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}
            )
        depth[0] += 1

    def post(module, args, output):
        depth[0] -= 1

    from torch.nn.modules import module as torch_module

    handles = [
        torch_module.register_module_forward_pre_hook(pre),
        torch_module.register_module_forward_hook(post),
    ]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def replaying_in_sourcegrad(record, monkeypatch):
    from sourcegrad.nn.modules.module import Module
    from sourcegrad.utils.data import sampler

    draws = list(record.draws)

    def replayed(kind):
        def draw(*args, **kwargs):
            assert draws, f"the program drew more ({kind}) under sourcegrad than under torch"
            recorded_kind, values = draws.pop(0)
            assert recorded_kind == kind
            size = (len(values),) if kind == "randperm" else _size_of(args, kwargs)
            assert size == values.shape, (kind, size, values.shape)
            return sourcegrad.tensor(values)

        return draw

    monkeypatch.setattr(sourcegrad, "randint", replayed("randint"))
    monkeypatch.setattr(sourcegrad, "randperm", replayed("randperm"))
    monkeypatch.setattr(sampler, "randint", replayed("randint"))
    monkeypatch.setattr(sampler, "randperm", replayed("randperm"))
    monkeypatch.setattr(sampler, "_fresh_generator", lambda: sourcegrad.Generator())
    weights = list(record.weights)
    roots, depth = [], [0]
    call = Module.__call__

    def first_forward_takes_torchs_weights(self, *args, **kwargs):
        if depth[0] == 0 and not any(self is m for r in roots for m in r.modules()):
            roots.append(self)
            state = weights.pop(0)
            if not _same_state(self.state_dict(), state):  # (randomly initialised)
                self.load_state_dict({k: sourcegrad.tensor(v) for k, v in state.items()})
        depth[0] += 1
        try:
            return call(self, *args, **kwargs)
        finally:
            depth[0] -= 1

    monkeypatch.setattr(Module, "__call__", first_forward_takes_torchs_weights)
    yield
    assert not draws, f"{len(draws)} of torch's draws were not made under sourcegrad"
    assert not weights, "a model torch ran forward was not run under sourcegrad"


def _same_state(ours, theirs):
    """Whether a model already has torch's weights (to float32 accuracy): one the program
    loaded or derived from a trained one, which keeps its own; a randomly initialised one
    takes torch's."""
    if list(ours) != list(theirs):
        return False
    for k, v in ours.items():
        v = v.detach().numpy()
        if v.shape != theirs[k].shape or not np.allclose(v, theirs[k], rtol=1e-3, atol=1e-5):
            return False
    return True


# --- running and comparing ---------------------------------------------------------------------


def run_program(name, argv, context):
    out = io.StringIO()
    path = str(PROGRAMS / f"{name}.py")
    old_argv = sys.argv
    sys.argv = [path, *argv]
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        try:
            with context:
                runpy.run_path(path, run_name="__main__")
        finally:
            sys.argv = old_argv
    shown = [
        (w.category.__name__, str(w.message).split(" (Triggered internally")[0])
        for w in caught
        if not issubclass(w.category, DeprecationWarning)
    ]
    return out.getvalue(), shown


_NUMBER = re.compile(r"(?<![\w.])(-?(?:\d+\.\d*|\.\d+|\d+)(?:e[+-]?\d+)?)(?![\w.])")


def _as_torchs(text):
    return text.replace("sourcegrad.", "torch.").replace("sourcegrad", "torch")


def same_output(ours, theirs, rtol=2e-4):
    """The same text, numbers to `rtol` (float32 accuracy by default) or one unit of their
    last printed digit."""
    ours_lines, theirs_lines = _as_torchs(ours).splitlines(), theirs.splitlines()
    assert len(ours_lines) == len(theirs_lines), (ours, theirs)
    for a, b in zip(ours_lines, theirs_lines):
        assert _NUMBER.sub("#", a) == _NUMBER.sub("#", b), (a, b)
        for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b)):
            decimals = len(y.partition("e")[0].partition(".")[2])
            unit = 10.0 ** (int(y.partition("e")[2] or 0) - decimals)
            assert abs(float(x) - float(y)) <= max(rtol * abs(float(y)), 1.01 * unit), (a, b)


_RTOL = re.compile(r"^# torch_programs: rtol=(\S+)$", re.M)


def program_rtol(name):
    """The relative tolerance a program asks for with a `# torch_programs: rtol=...` line
    (its printed numbers carry that many digits), else float32 accuracy."""
    found = _RTOL.search((PROGRAMS / f"{name}.py").read_text())
    return float(found.group(1)) if found else 2e-4


def same_final_state(ours_dir, theirs_dir, rtol):
    """The state dict a program saved at the end as `final_state.pt` (if it does), the same
    keys and values to `rtol` (atol rtol / 10 for entries near zero)."""
    ours_path, theirs_path = ours_dir / "final_state.pt", theirs_dir / "final_state.pt"
    assert ours_path.exists() == theirs_path.exists()
    if not theirs_path.exists():
        return
    ours = sourcegrad.load(str(ours_path))
    theirs = torch.load(str(theirs_path))
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        np.testing.assert_allclose(
            ours[key].detach().numpy(), value.numpy(), rtol=rtol, atol=rtol / 10, err_msg=key
        )


@pytest.fixture
def one_thread():
    """torch on one thread: its thread pool only slows such small ops down on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", NAMES)
def test_program_runs_as_under_torch(name, tmp_path, monkeypatch, one_thread):
    record = Recording()
    theirs, their_warnings = run_program(
        name, ["--out_dir=" + str(tmp_path / "torch")], recording_torch(record, monkeypatch)
    )
    monkeypatch.undo()

    @contextlib.contextmanager
    def as_sourcegrad():
        with sourcegrad_as_torch(), replaying_in_sourcegrad(record, monkeypatch):
            yield

    ours, our_warnings = run_program(
        name, ["--out_dir=" + str(tmp_path / "sourcegrad")], as_sourcegrad()
    )
    rtol = program_rtol(name)
    same_output(ours, theirs, rtol)
    same_final_state(tmp_path / "sourcegrad", tmp_path / "torch", rtol)
    assert [(c, _as_torchs(m)) for c, m in our_warnings] == their_warnings
    assert np.isfinite(len(theirs))
