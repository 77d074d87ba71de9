"""torch surfaces that published scripts reach at import or at their first line of use:
torch.testing, torch.vmap and torch.func's names, torch.jit, torch.profiler, and the
namespaces sourcegrad only names (onnx, hub, export, sparse, masked). Each is compared
with torch 2.13: the same messages from assert_close, the same numbers through a
scripted or traced model, the same profiler schedule, a named refusal where torch would
need what sourcegrad lacks."""

import time
import warnings

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import SourcegradError, UnsupportedAPIError

torch = pytest.importorskip("torch")


def both(fn):
    """fn(lib) for sourcegrad and torch: the AssertionError message each raises (or None)."""
    messages = []
    for lib in (sg, torch):
        try:
            fn(lib)
        except AssertionError as error:
            messages.append(str(error))
        else:
            messages.append(None)
    return messages


# --- torch.testing ----------------------------------------------------------------------------

CLOSE_CASES = [
    ("close floats", lambda t: (t.tensor([1.0, 2.0]), t.tensor([1.0, 2.0 + 1e-6])), {}),
    ("far floats", lambda t: (t.tensor([1.0, 2.0, 3.0]), t.tensor([1.0, 2.5, 3.1])), {}),
    (
        "2-d",
        lambda t: (t.tensor([[1.0, 2.0], [3.0, 4.0]]), t.tensor([[1.0, 2.0], [3.0, 5.0]])),
        {},
    ),
    ("ints", lambda t: (t.tensor([1, 2, 3]), t.tensor([1, 2, 4])), {}),
    (
        "float64 defaults",
        lambda t: (
            t.tensor([1.0], dtype=t.float64),
            t.tensor([1.0 + 2e-7], dtype=t.float64),
        ),
        {},
    ),
    ("nan", lambda t: (t.tensor([float("nan")]), t.tensor([float("nan")])), {}),
    (
        "nan equal",
        lambda t: (t.tensor([float("nan")]), t.tensor([float("nan")])),
        {"equal_nan": True},
    ),
    ("dtype", lambda t: (t.tensor([1.0]), t.tensor([1.0], dtype=t.float64)), {}),
    (
        "dtype unchecked",
        lambda t: (t.tensor([1.0]), t.tensor([1.0], dtype=t.float64)),
        {"check_dtype": False},
    ),
    ("shape", lambda t: (t.tensor([1.0, 2.0]), t.tensor([1.0])), {}),
    ("scalars", lambda t: (1.0, 1.1), {}),
    ("int scalars", lambda t: (1, 2), {}),
    ("tolerances", lambda t: (t.tensor([1.0]), t.tensor([1.05])), {"rtol": 0.1, "atol": 0.0}),
    ("msg", lambda t: (t.tensor([1.0]), t.tensor([2.0])), {"msg": "custom"}),
    ("msg callable", lambda t: (t.tensor([1.0]), t.tensor([2.0])), {"msg": lambda m: "X" + m}),
    ("list", lambda t: ([t.tensor([1.0, 2.0])], [t.tensor([1.0, 3.0])]), {}),
    ("dict", lambda t: ({"a": t.tensor([1.0, 2.0])}, {"a": t.tensor([1.0, 3.0])}), {}),
    ("length", lambda t: ([1.0, 2.0], [1.0]), {}),
]


@pytest.mark.parametrize("case", CLOSE_CASES, ids=[c[0] for c in CLOSE_CASES])
def test_assert_close_passes_and_fails_as_torch_with_its_message(case):
    _, make, options = case

    def check(lib):
        lib.testing.assert_close(*make(lib), **options)

    ours, theirs = both(check)
    assert ours == theirs


def test_assert_close_refuses_as_torch():
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified"):
        sg.testing.assert_close(sg.tensor([1.0]), sg.tensor([1.0]), rtol=1e-3)
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs"):
        sg.testing.assert_close(sg.tensor([1.0]), [1.0])


@pytest.mark.parametrize(
    "dtype, low, high",
    [("float32", None, None), ("float64", -1.0, 2.0), ("int64", None, None), ("uint8", 3, 6)],
)
def test_make_tensor_gives_torchs_shape_dtype_and_range(dtype, low, high):
    ours = sg.testing.make_tensor(
        (40, 50), dtype=getattr(sg, dtype), device="cpu", low=low, high=high
    )
    theirs = torch.testing.make_tensor(
        (40, 50), dtype=getattr(torch, dtype), device="cpu", low=low, high=high
    )
    assert str(ours.dtype) == str(theirs.dtype) and tuple(ours.shape) == tuple(theirs.shape)
    o, t = ours.numpy(), theirs.numpy()
    # the same closed ranges, filled (2000 draws reach both ends of an integer range)
    if dtype.startswith(("int", "uint")):
        assert (o.min(), o.max()) == (t.min(), t.max())
    else:
        assert t.min() >= (low if low is not None else -9) and o.min() >= t.min() - 0.1
        assert o.max() <= (high if high is not None else 9) and o.max() >= t.max() - 0.1
    with_grad = sg.testing.make_tensor(3, dtype=sg.float32, device="cpu", requires_grad=True)
    assert with_grad.requires_grad and with_grad.is_leaf


# --- torch.vmap and torch.func ----------------------------------------------------------------


def test_torch_vmap_is_func_vmap_with_its_arguments():
    assert sg.vmap is sg.func.vmap
    x = np.arange(24.0).reshape(2, 3, 4)
    for kwargs in [{}, {"in_dims": 1, "out_dims": 1}, {"in_dims": 2, "chunk_size": 2}]:
        ours = sg.vmap(lambda v: v.sin().sum(0), **kwargs)(sg.tensor(x))
        theirs = torch.vmap(lambda v: v.sin().sum(0), **kwargs)(torch.tensor(x))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_func_names_scripts_import_exist():
    for name in ["grad", "vmap", "jacrev", "jacfwd", "hessian", "functional_call"]:
        assert callable(getattr(sg.func, name)), name
    assert callable(sg.func.stack_module_state)


def test_stack_module_state_ensembles_as_torch():
    torch.manual_seed(0)
    theirs_models = [torch.nn.Linear(3, 2).double() for _ in range(4)]
    ours_models = [sg.nn.Linear(3, 2).double() for _ in range(4)]
    for o, t in zip(ours_models, theirs_models):
        o.load_state_dict({k: sg.tensor(v.numpy()) for k, v in t.state_dict().items()})
    x = np.linspace(-1, 1, 15).reshape(5, 3)
    outputs = []
    for lib, models, data in [
        (sg, ours_models, sg.tensor(x)),
        (torch, theirs_models, torch.tensor(x)),
    ]:
        params, buffers = lib.func.stack_module_state(models)
        assert all(p.is_leaf and p.requires_grad for p in params.values())

        def run(p, b, d, model=models[0], lib=lib):
            return lib.func.functional_call(model, (p, b), (d,))

        out = lib.vmap(run, in_dims=(0, 0, None))(params, buffers, data)
        out.sum().backward()
        outputs.append((out.detach().numpy(), params["weight"].grad.numpy()))
    for ours, theirs in zip(*outputs):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        sg.func.stack_module_state([])
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        sg.func.stack_module_state([sg.nn.Linear(1, 1), sg.nn.Linear(1, 1).eval()])


# --- torch.jit --------------------------------------------------------------------------------


class Net(sg.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = sg.nn.Linear(3, 2)

    def forward(self, x):
        return self.linear(x).tanh()


def test_script_and_trace_of_a_module_give_its_outputs_and_share_its_parameters():
    model = Net().double()
    x = sg.tensor(np.linspace(-1, 1, 12).reshape(4, 3))
    for scripted in [sg.jit.script(model), sg.jit.trace(model, (x,)), sg.jit.trace(model, x)]:
        assert isinstance(scripted, sg.jit.ScriptModule) and isinstance(scripted, Net)
        assert scripted.linear.weight is model.linear.weight
        np.testing.assert_array_equal(scripted(x).detach().numpy(), model(x).detach().numpy())
        assert scripted.original_name == "Net"
        assert list(scripted.state_dict()) == list(model.state_dict())
    assert not isinstance(model, sg.jit.ScriptModule)  # the model itself is not changed


def test_script_of_a_function_calls_it_and_refuses_its_graph():
    def f(x, y):
        return x * y + 1

    scripted = sg.jit.script(f)
    assert scripted(sg.tensor(2.0), sg.tensor(3.0)).item() == 7.0
    assert scripted.__name__ == "f" and scripted.name == "f"
    for member in ["graph", "code", "inlined_graph"]:
        with pytest.raises(
            UnsupportedAPIError, match=f"ScriptFunction.{member} needs a TorchScript"
        ):
            getattr(scripted, member)
    with pytest.raises(SourcegradError, match="ScriptModule.graph"):
        sg.jit.script(Net()).graph


def test_jit_annotations_are_the_identity_and_flags_are_false():
    def f(x):
        return x

    assert sg.jit.ignore(f) is f and sg.jit.ignore(drop=True)(f) is f
    assert sg.jit.unused(f) is f and sg.jit.export(f) is f
    assert sg.jit.is_scripting() is False and torch.jit.is_scripting() is False
    assert sg.jit.is_tracing() is False and torch.jit.is_tracing() is False
    assert sg.jit.Final[int] is not None and sg.jit.annotate(int, 3) == 3
    assert sg.jit.wait(sg.jit.fork(lambda a: a + 1, 1)) == 2
    assert sg.jit.script_if_tracing(f) is f and sg.jit.onednn_fusion_enabled() is False
    with sg.jit.optimized_execution(False), sg.jit.fuser("fuser1"):
        assert sg.jit.script(f)(3) == 3
    assert sg.jit.RecursiveScriptModule is sg.jit.ScriptModule


def test_jit_save_load_round_trips_a_scripted_module(tmp_path):
    model = Net().double()
    x = sg.tensor(np.linspace(-1, 1, 12).reshape(4, 3))
    path = tmp_path / "model.pt"
    sg.jit.script(model).save(str(path))
    loaded = sg.jit.load(str(path))
    assert isinstance(loaded, sg.jit.ScriptModule) and isinstance(loaded, Net)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())
    with pytest.raises(AttributeError, match="has no attribute 'save'"):
        sg.jit.save(model, str(path))


def test_jit_save_of_an_unpicklable_module_is_refused_by_name(tmp_path):
    class Local(sg.nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(UnsupportedAPIError, match="cannot be pickled"):
        sg.jit.save(sg.jit.script(Local()), str(tmp_path / "local.pt"))


def test_jit_freeze_asks_for_eval_mode_as_torch():
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        sg.jit.freeze(sg.jit.script(Net()))
    frozen = sg.jit.freeze(sg.jit.script(Net()).eval())
    assert isinstance(frozen, sg.jit.ScriptModule)


# --- torch.profiler ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        {"wait": 1, "warmup": 1, "active": 2},
        {"wait": 0, "warmup": 2, "active": 1, "repeat": 2},
        {"wait": 2, "warmup": 1, "active": 3, "repeat": 1, "skip_first": 3},
        {"wait": 3, "warmup": 1, "active": 1, "skip_first": 2, "skip_first_wait": 1},
    ],
)
def test_profiler_schedule_is_torchs(arguments):
    ours = sg.profiler.schedule(**arguments)
    theirs = torch.profiler.schedule(**arguments)
    assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_profiler_records_the_active_steps_and_hands_over_each_cycle():
    traces = []
    with sg.profiler.profile(
        activities=[sg.profiler.ProfilerActivity.CPU, sg.profiler.ProfilerActivity.CUDA],
        schedule=sg.profiler.schedule(wait=1, warmup=1, active=2, repeat=2),
        on_trace_ready=lambda prof: traces.append(prof.key_averages()),
        record_shapes=True,
    ) as prof:
        for _ in range(10):
            with sg.profiler.record_function("work"):
                time.sleep(0.001)
            prof.step()
    assert len(traces) == 2  # as torch's: two cycles of 2 recorded steps each
    for averages in traces:
        by_key = {a.key: a for a in averages}
        assert by_key["work"].count == 2 and by_key["ProfilerStep*"].count == 2
        assert by_key["work"].cpu_time_total >= 2000  # two sleeps of a millisecond, in us
    table = traces[0].table(sort_by="cpu_time_total", row_limit=10)
    assert "work" in table and "Self CPU time total" in table


def test_profiler_without_a_schedule_records_the_block(tmp_path):
    with sg.profiler.profile(
        on_trace_ready=sg.profiler.tensorboard_trace_handler(str(tmp_path))
    ) as prof:
        with sg.profiler.record_function("outer"):
            with sg.profiler.record_function("inner"):
                time.sleep(0.001)
    names = [e.name for e in prof.events()]
    assert names == ["outer", "inner"]
    written = list(tmp_path.glob("*.pt.trace.json"))
    assert len(written) == 1 and "inner" in written[0].read_text()
    with pytest.raises(UnsupportedAPIError, match="records no stacks"):
        prof.export_stacks(str(tmp_path / "stacks.txt"))


# --- namespaces sourcegrad names only ---------------------------------------------------------


@pytest.mark.parametrize(
    "namespace, function",
    [
        ("onnx", "export"),
        ("hub", "load"),
        ("hub", "load_state_dict_from_url"),
        ("export", "export"),
        ("sparse", "mm"),
        ("masked", "masked_tensor"),
    ],
)
def test_named_namespaces_import_and_refuse_every_use(namespace, function):
    module = getattr(sg, namespace)
    assert hasattr(getattr(torch, namespace), function)  # a name torch has
    refused = getattr(module, function)  # binding it (a module-level import) works
    with pytest.raises(UnsupportedAPIError, match=f"torch.{namespace}.{function} is not supported"):
        refused()
    with pytest.raises(UnsupportedAPIError, match=f"torch.{namespace}.something"):
        module.something
    assert not hasattr(module, "something")  # an AttributeError too


def test_is_in_onnx_export_is_false_as_outside_torchs_export():
    assert sg.onnx.is_in_onnx_export() is False
    assert torch.onnx.is_in_onnx_export() is False


def test_schedule_without_warmup_warns_as_torch():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sg.profiler.schedule(wait=1, warmup=0, active=1)
    assert any("won't be using warmup" in str(w.message) for w in caught)


def deprecations(lib, tmp_path):
    """The DeprecationWarning messages torch.jit's entry points give, in order."""
    model = lib.nn.Linear(2, 2) if lib is torch else Net()
    x = lib.ones(1, 2) if lib is torch else lib.ones(1, 3)
    path = str(tmp_path / f"{lib.__name__}.pt")
    seen = []
    for step in ["script", "trace", "save", "load", "freeze"]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if step == "script":
                scripted = lib.jit.script(model)
            elif step == "trace":
                lib.jit.trace(lambda v: v * 2, (x,))
            elif step == "save":
                lib.jit.save(scripted, path)
            elif step == "load":
                lib.jit.load(path)
            else:
                lib.jit.freeze(scripted.eval())
        seen.append(sorted({str(w.message) for w in caught if w.category is DeprecationWarning}))
    return seen


def test_jit_entry_points_warn_torchs_deprecations(tmp_path):
    assert deprecations(sg, tmp_path) == deprecations(torch, tmp_path)
