"""`sourcegrad.save` / `sourcegrad.load`: round trips, and refusing code when weights_only."""

import collections
import io
import json
import pathlib
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import SourcegradError

torch = pytest.importorskip("torch")


def _same(a, b):
    """Structural equality, tensors by type, dtype, requires_grad and values."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, sg.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys())
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, float) and a != a:
        assert b != b
    else:
        assert a == b


def _round_trip(obj, **load_kwargs):
    buf = io.BytesIO()
    sg.save(obj, buf)
    buf.seek(0)
    return sg.load(buf, **load_kwargs)


OBJECTS = [
    sg.tensor([[1.0, 2.0], [3.0, 4.0]]),
    sg.arange(6, dtype=sg.int32).reshape(2, 3),
    sg.tensor([True, False]),
    sg.tensor(3.5, dtype=sg.float64),
    sg.zeros(0, 4),
    sg.tensor([1 + 2j], dtype=sg.complex64),
    sg.tensor([1.0, 2.0], requires_grad=True),
    sg.nn.Parameter(sg.ones(3)),
    sg.nn.Parameter(sg.ones(3), requires_grad=False),
    collections.OrderedDict([("layer.weight", sg.randn(3, 2)), ("layer.bias", sg.zeros(3))]),
    {
        "epoch": 3,
        "loss": 0.25,
        "name": "run",
        "best": None,
        "flags": [True, False],
        "nested": {"t": (sg.ones(2), [sg.zeros(1), 7]), 5: "int key", (1, 2): "tuple key"},
        "special": [float("inf"), -float("inf"), float("nan"), 2**70, 1e-300, 3 + 4j],
        "types": (sg.float16, sg.int64, sg.Size([2, 3]), sg.device("cpu")),
        "raw": b"\x00\xff",
        "np": (np.arange(3.0), np.float32(1.5), np.int64(-2), np.bool_(True)),
    },
    [],
    (),
    "just a string",
]


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: type(o).__name__)
def test_round_trip(obj):
    _same(obj, _round_trip(obj))


def test_loaded_parameters_and_tensors_are_fresh_leaves():
    p = sg.nn.Parameter(sg.ones(2))
    q = _round_trip(p)
    assert isinstance(q, sg.nn.Parameter) and q.is_leaf and q.requires_grad
    (q * 2).sum().backward()
    assert q.grad.tolist() == [2.0, 2.0] and p.grad is None
    y = sg.tensor([1.0, 2.0], requires_grad=True) * 3  # a non-leaf: loads as a leaf
    z = _round_trip(y)
    assert z.is_leaf and z.requires_grad and z.tolist() == [3.0, 6.0]


def test_shared_storage_is_saved_as_copies():
    base = sg.arange(6.0)
    view = base[2:4]
    loaded = _round_trip({"base": base, "view": view, "again": base})
    loaded["base"][0] = 100.0
    assert loaded["again"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert loaded["view"].tolist() == [2.0, 3.0]


def test_paths_and_file_objects(tmp_path):
    obj = {"w": sg.randn(4)}
    sg.save(obj, tmp_path / "a.pt")
    sg.save(obj, str(tmp_path / "b.pt"))
    with open(tmp_path / "c.pt", "wb") as fh:
        sg.save(obj, fh)
    for name in "abc":
        _same(obj, sg.load(tmp_path / f"{name}.pt"))
    with open(tmp_path / "a.pt", "rb") as fh:
        _same(obj, sg.load(fh))


def test_map_location():
    x = sg.randn(3)
    for location in ("cpu", sg.device("cpu"), {"cpu": "cpu"}, lambda t, loc: t):
        loaded = _round_trip(x, map_location=location)
        assert loaded.device.type == "cpu" and loaded.tolist() == x.tolist()
    with pytest.raises(TypeError, match="map_location"):
        _round_trip(x, map_location=3)


def test_a_file_saved_from_cuda_needs_a_map_location_without_a_gpu():
    if sg.cuda.is_available():
        pytest.skip("a GPU is present")
    buf = io.BytesIO()
    sg.save(sg.ones(2), buf)
    manifest, members = _members(buf)
    manifest["root"]["device"] = "cuda:0"
    tampered = _rezip(manifest, members)
    with pytest.raises(RuntimeError, match="map_location=torch.device\\('cpu'\\)"):
        sg.load(tampered)
    tampered.seek(0)
    assert sg.load(tampered, map_location="cpu").tolist() == [1.0, 1.0]
    tampered.seek(0)
    assert sg.load(tampered, map_location={"cuda:0": "cpu"}).tolist() == [1.0, 1.0]


def test_optimizer_state_dict_round_trip_continues_training():
    def objective(p):
        return ((p - sg.tensor([1.0, -2.0, 3.0], dtype=sg.float64)) ** 4).sum()

    p = sg.nn.Parameter(sg.zeros(3, dtype=sg.float64))
    opt = sg.optim.Adam([p], lr=0.1, amsgrad=True)
    sched = sg.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
    for _ in range(3):
        opt.zero_grad()
        objective(p).backward()
        opt.step()
        sched.step()
    checkpoint = _round_trip(
        {"model": {"p": p}, "opt": opt.state_dict(), "sched": sched.state_dict()}
    )
    assert checkpoint["opt"]["state"][0]["step"].dtype == sg.float32
    q = sg.nn.Parameter(checkpoint["model"]["p"].detach().clone())
    opt2 = sg.optim.Adam([q], lr=0.1, amsgrad=True)
    opt2.load_state_dict(checkpoint["opt"])
    sched2 = sg.optim.lr_scheduler.StepLR(opt2, 2, gamma=0.5)
    sched2.load_state_dict(checkpoint["sched"])
    for param, o, s in ((p, opt, sched), (q, opt2, sched2)):
        for _ in range(4):
            o.zero_grad()
            objective(param).backward()
            o.step()
            s.step()
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert opt.param_groups[0]["lr"] == opt2.param_groups[0]["lr"] == 0.1 * 0.5**3


@pytest.mark.long
def test_load_in_a_fresh_process(tmp_path):
    path = tmp_path / "ckpt.pt"
    sg.save({"w": sg.arange(4.0).reshape(2, 2), "step": 7}, path)
    code = (
        "import sys, sourcegrad as torch; d = torch.load(sys.argv[1]); "
        "print(d['step'], d['w'].sum().item(), d['w'].dtype)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(pathlib.Path(sg.__file__).parents[1]),
    )
    assert out.stdout.split() == ["7", "6.0", "torch.float32"]


class _Custom:
    def __init__(self, value):
        self.value = value


def test_unsupported_objects_are_pickled_and_refused_unless_weights_only_false():
    obj = {"w": sg.ones(2), "custom": _Custom(5)}
    buf = io.BytesIO()
    sg.save(obj, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="weights_only=True") as e:
        sg.load(buf)
    assert isinstance(e.value, SourcegradError) and "_Custom" in str(e.value)
    buf.seek(0)
    loaded = sg.load(buf, weights_only=False)
    assert loaded["custom"].value == 5 and loaded["w"].tolist() == [1.0, 1.0]
    # torch refuses the same object under weights_only, with the same exception type
    tbuf = io.BytesIO()
    torch.save({"custom": _Custom(5)}, tbuf)
    tbuf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(tbuf)


class _Evil:
    """Unpickling this creates a file: the stand-in for arbitrary code."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.path),))


def _members(buf):
    buf.seek(0)
    with zipfile.ZipFile(buf) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    return json.loads(members.pop("sourcegrad.json")), members


def _rezip(manifest, members):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("sourcegrad.json", json.dumps(manifest))
        for name, data in members.items():
            zf.writestr(name, data)
    out.seek(0)
    return out


def test_a_plain_pickle_file_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"w": _Evil(str(marker))}))
    with pytest.raises(pickle.UnpicklingError, match="may be a pickle"):
        sg.load(path)
    assert not marker.exists()
    sg.load(path, weights_only=False)  # the explicit opt-in does unpickle
    assert marker.exists()


def test_tampered_checkpoints_are_refused_and_run_nothing(tmp_path):
    marker = tmp_path / "pwned"
    buf = io.BytesIO()
    sg.save({"w": sg.ones(2)}, buf)
    manifest, members = _members(buf)
    # 1. a pickle member slipped into a safe checkpoint: unpickled with the weights-only
    # allow-list, which refuses the name its payload calls
    evil = dict(manifest, pickled="data.pkl")
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL pathlib"):
        sg.load(_rezip(evil, dict(members, **{"data.pkl": pickle.dumps(_Evil(str(marker)))})))
    # 2. an array member replaced by an object array (np.load would need pickle)
    obj_array = io.BytesIO()
    np.save(obj_array, np.array([_Evil(str(marker))], dtype=object), allow_pickle=True)
    with pytest.raises(pickle.UnpicklingError, match="without unpickling"):
        sg.load(_rezip(manifest, {"arrays/0.npy": obj_array.getvalue()}))
    # 3. nodes the format does not have, missing arrays, bad values
    for root in (
        {"$dict": [["w", {"$tensor": 5}]]},
        {"$eval": "1"},
        {"$float": "1e400x"},
        {"$dtype": "Tensor"},
        {"$dict": [[[1], 2]]},
        {"$tensor": "../x"},
    ):
        with pytest.raises(pickle.UnpicklingError, match="malformed"):
            sg.load(_rezip(dict(manifest, root=root), members))
    assert not marker.exists()


def _torch_bytes(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


def test_pytorch_checkpoints_load_as_sourcegrad_tensors():
    torch.manual_seed(0)
    linear = torch.nn.Linear(3, 2)
    state = linear.state_dict()
    opt = torch.optim.Adam(linear.parameters(), lr=0.01)
    linear(torch.randn(4, 3)).sum().backward()
    opt.step()
    extras = collections.OrderedDict(
        param=torch.nn.Parameter(torch.randn(2, 2)),
        frozen=torch.nn.Parameter(torch.ones(1), requires_grad=False),
        ints=torch.arange(5),
        half=torch.ones(3).half(),
        complex=torch.tensor([1 + 2j]),
        column=torch.randn(4, 4)[:, 1],
        transposed=torch.randn(3, 2).t(),
        empty=torch.zeros(0, 3),
        scalar=torch.tensor(2.5),
        flags=torch.tensor([True, False]),
        grad=torch.ones(2, requires_grad=True),
    )
    loaded = sg.load(
        _torch_bytes(
            {
                "model": state,
                "opt": opt.state_dict(),
                "extras": extras,
                "meta": {
                    "epoch": 3,
                    "dtype": torch.float16,
                    "size": torch.Size([2, 3]),
                    "z": 1 + 2j,
                    "tags": {"a", "b"},
                },
            }
        )
    )
    assert isinstance(loaded["model"], collections.OrderedDict)
    assert list(loaded["model"]) == ["weight", "bias"]
    assert loaded["model"]._metadata == state._metadata  # nn.Module's version info
    for name, t in [*state.items(), *extras.items()]:
        ours = (loaded["model"] if name in state else loaded["extras"])[name]
        assert type(ours).__name__ == type(t).__name__ and str(ours.dtype) == str(t.dtype)
        assert ours.shape == tuple(t.shape) and ours.requires_grad == t.requires_grad
        np.testing.assert_array_equal(ours.detach().numpy(), t.detach().numpy())
    assert loaded["meta"] == {
        "epoch": 3,
        "dtype": sg.float16,
        "size": sg.Size([2, 3]),
        "z": 1 + 2j,
        "tags": {"a", "b"},
    }
    # the optimizer state continues in sourcegrad as it would in torch
    params = [sg.nn.Parameter(loaded["model"][k].clone()) for k in ("weight", "bias")]
    ours = sg.optim.Adam(params, lr=0.5)
    ours.load_state_dict(loaded["opt"])
    assert ours.param_groups[0]["lr"] == 0.01
    for p, t in zip(params, linear.parameters()):
        p.grad = sg.tensor(t.grad.numpy())
    ours.step()
    opt.step()
    for p, t in zip(params, linear.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-6)


class _Config:
    def __init__(self, depth):
        self.depth = depth


def test_pytorch_checkpoints_with_other_objects_need_weights_only_false(tmp_path):
    buf = _torch_bytes({"w": torch.ones(2), "config": _Config(4)})
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL .*_Config"):
        sg.load(buf)
    buf.seek(0)
    loaded = sg.load(buf, weights_only=False)
    assert loaded["config"].depth == 4 and loaded["w"].tolist() == [1.0, 1.0]
    with pytest.raises(pickle.UnpicklingError, match="bfloat16"):
        sg.load(_torch_bytes(torch.ones(2, dtype=torch.bfloat16)))


def test_a_tampered_pytorch_checkpoint_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    buf = _torch_bytes({"w": torch.ones(2)})
    with zipfile.ZipFile(buf) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    pkl = next(name for name in members if name.endswith("data.pkl"))
    members[pkl] = pickle.dumps({"w": _Evil(str(marker))}, protocol=2)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    for weights_only in (True, None):
        out.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
            sg.load(out, weights_only=weights_only)
    assert not marker.exists()


# --- whole models under weights_only (torch's safe globals) ------------------------------------


def _whole_model_loads(lib):
    """Save a whole model; load it with weights_only=True allowing nothing, its class, then
    its class and nn.Linear: what each load gives (the error text with the library's module
    path spelled torch's)."""

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 2)
            self.register_buffer("steps", lib.zeros(1))

        def forward(self, x):
            return self.fc(x)

    Net.__qualname__ = "Net"  # importable from the test module, as a user's class would be
    globals()["Net"] = Net
    lib.manual_seed(0)
    model = Net()
    buf = io.BytesIO()
    lib.save(model, buf)
    seen = []
    for allowed in ([], [Net], [Net, lib.nn.Linear]):
        buf.seek(0)
        try:
            with lib.serialization.safe_globals(allowed):
                loaded = lib.load(buf, weights_only=True)
            x = lib.ones(1, 3)
            same_out = bool((loaded(x) == model(x)).all())
            seen.append(("loaded", type(loaded).__name__, sorted(loaded.state_dict()), same_out))
        except pickle.UnpicklingError as e:
            seen.append(("refused", str(e).replace(lib.__name__ + ".", "torch.")))
    lib.serialization.add_safe_globals([Net, lib.nn.Linear])
    try:
        buf.seek(0)
        seen.append(type(lib.load(buf)).__name__)  # weights_only's default: True
        seen.append(len(lib.serialization.get_safe_globals()) >= 2)
    finally:
        lib.serialization.clear_safe_globals()
    buf.seek(0)
    seen.append(type(lib.load(buf, weights_only=False)).__name__)
    return seen


def test_whole_model_weights_only_load_as_torch():
    """torch.load(weights_only=True) of a whole model refuses its classes, naming each with
    torch's message, until safe_globals / add_safe_globals allow them."""
    ours, theirs = _whole_model_loads(sg), _whole_model_loads(torch)
    assert ours == theirs
    assert ours[0][0] == ours[1][0] == "refused" and ours[2][0] == "loaded"
    assert "GLOBAL torch.nn.modules.linear.Linear" in ours[1][1]


class _Holder:
    def __init__(self, payload):
        self.payload = payload


def test_an_allowed_class_does_not_let_its_contents_run(tmp_path):
    """Allowing a class allows making it, not what its state refers to: a payload inside an
    allowed object is refused by name, and nothing of it runs."""
    marker = tmp_path / "pwned"
    path = tmp_path / "holder.pt"
    sg.save(_Holder(_Evil(str(marker))), path)
    with sg.serialization.safe_globals([_Holder]):
        with pytest.raises(
            pickle.UnpicklingError, match="Unsupported global: GLOBAL (pathlib|builtins.getattr)"
        ):
            sg.load(path)
    assert not marker.exists()
    assert sg.serialization.get_safe_globals() == []


def test_loading_a_buffer_not_seeked_back_is_torchs_eoferror():
    """torch.load reads from the buffer's position: a BytesIO saved into and not seeked back
    to 0 runs out of input (EOFError) in torch; here zipfile found the archive anyway."""
    for lib in (torch, sg):
        buffer = io.BytesIO()
        lib.save({"w": lib.ones(2)}, buffer)
        with pytest.raises(EOFError):
            lib.load(buffer)
        buffer.seek(0)
        assert lib.load(buffer)["w"].tolist() == [1.0, 1.0]
