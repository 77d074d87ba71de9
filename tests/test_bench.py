"""The benchmark suite: a --quick smoke run, every variant's gradient against the hand-written one.

No timing is asserted. The hand-written gradients are themselves checked against
central finite differences, since they are the reference everything else is held to.
"""

import copy
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import sourcegrad
from sourcegrad.api import numeric_grad
from sourcegrad.bench import runner
from sourcegrad.bench import workloads as W

QUICK = W.cases(quick=True)
IDS = [f"{w.name}-{s.name}".replace(" ", "_") for w, s in QUICK]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def hand_gradient(workload, size, args):
    prepared = W.prepare(workload, size, "hand", args)
    return prepared.to_numpy(prepared.call())


@pytest.mark.parametrize("workload,size", QUICK, ids=IDS)
def test_hand_gradient_matches_finite_differences(workload, size):
    args = W.make_args(workload, size)
    ref = hand_gradient(workload, size, args)
    for pos, g in zip(W.wrt_positions(workload), ref):
        numeric = numeric_grad(workload.function(size), args, pos)
        assert runner.max_rel_error((g,), (numeric,)) < 1e-5, (workload.name, pos)


# numba compiles each workload for seconds (the RNN's for a minute on a busy machine): slow
@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(v, marks=pytest.mark.slow) if v == "numba" else v
        for v in W.VARIANTS
        if v != "hand"
    ],
)
@pytest.mark.parametrize("workload,size", QUICK, ids=IDS)
def test_variant_agrees_with_hand(workload, size, variant):
    if not W.available(variant):
        pytest.skip(f"{variant} is not installed")
    args = W.make_args(workload, size)
    before = copy.deepcopy(args)
    ref = hand_gradient(workload, size, args)
    try:
        prepared = W.prepare(workload, size, variant, args)
        got = prepared.to_numpy(prepared.call())
    except sourcegrad.SourcegradError as exc:
        if variant != "sourcegrad":
            raise
        pytest.skip(runner.failure(exc))  # not supported yet: the benchmark reports it so
    assert runner.max_rel_error(got, ref) <= runner.RTOL, (got, ref)
    for a, b in zip(args, before):  # no variant (nor the hand gradient) writes to its inputs
        np.testing.assert_array_equal(a, b)


@pytest.mark.long
def test_quick_run(tmp_path):
    out = tmp_path / "bench.json"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "sourcegrad.bench", "--quick", "--json", str(out)],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(out.read_text())
    statuses = [v.get("status", "") for r in report["results"] for v in r["variants"]]
    # exit status 1 exactly when a gradient is wrong (test_variant_agrees_with_hand says which)
    assert proc.returncode == (1 if "WRONG" in statuses else 0), proc.stderr
    assert {r["workload"] for r in report["results"]} == {w.name for w in W.WORKLOADS}
    assert proc.stdout.startswith(report["table"])
    assert "Eager mode:" in proc.stdout and report["eager"]  # per-op overhead, compiled region
    # compile time against function size: the quick curve (straight lines of 10 and 100
    # statements, loops nested 1 and 2 deep)
    assert "Compile time against function size" in proc.stdout
    assert [(r["kind"], r["size"]) for r in report["compile_scaling"]] == [
        ("straight-line", 10),
        ("straight-line", 100),
        ("nested loops", 1),
        ("nested loops", 2),
    ]
    assert all(
        r["ms"] > 0 and r["ms_per_statement"] == r["ms"] / r["statements"]
        for r in report["compile_scaling"]
    )
    assert proc.stdout.startswith("| workload | size | variant | median |")
    assert "timing" in proc.stderr  # progress goes to stderr
    for res in report["results"]:
        hand, *others = res["variants"]
        assert hand["variant"] == "hand" and hand["status"] == "reference"
        assert hand["median_s"] > 0 and hand["peak_bytes"] is not None
        for rec in others:
            assert (
                rec["status"] == "ok"
                or rec["status"] == "WRONG"
                or rec["status"].startswith(("unsupported: ", "error: "))
            ), rec
            if rec["status"] == "ok":
                assert rec["median_s"] > 0 and rec["ratio_to_hand"] > 0
                assert "peak_bytes" in rec or "memory_status" in rec
            else:
                assert "median_s" not in rec  # never time a wrong or failed gradient
    assert report["targets"] and all(isinstance(t["met"], bool) for t in report["targets"])


def test_report_marks_unsupported_and_wrong():
    results = [
        {
            "workload": "rnn",
            "size": "large",
            "label": "T=50",
            "variants": [
                {
                    "variant": "hand",
                    "status": "reference",
                    "median_s": 1e-3,
                    "first_call_s": 2e-3,
                    "peak_bytes": 1000,
                },
                {
                    "variant": "sourcegrad",
                    "status": "unsupported: f.py:3: a for loop is not supported yet",
                },
                {"variant": "torch", "status": "WRONG", "max_rel_error": 0.5, "first_call_s": 1e-3},
            ],
        }
    ]
    runner.add_ratios(results)
    rows = runner.targets(results)
    table = runner.markdown(results, rows)
    assert "unsupported: f.py:3: a for loop is not supported yet" in table
    assert "**WRONG**" in table and "not timed" in table
    assert rows and not any(t["met"] for t in rows)
    assert {t["measured"] for t in rows} == {"unsupported"}


def test_a_variant_crashing_its_process_is_that_variants_error_only(monkeypatch):
    """jax segfaults compiling the 10,000-step spring: that process took hand's and every
    other variant's measurements with it; they are measured again, one process each."""
    calls = []

    def child(kind, cases, variants, quick, timeout):
        calls.append(list(variants))
        if "jax" in variants:
            return {"error": "measuring process exited with status -11"}
        return {
            "pinned": None,
            "results": [
                [{"variant": v, "status": "reference" if v == "hand" else "ok"} for v in variants]
                for _ in cases
            ],
        }

    monkeypatch.setattr(runner, "run_child", child)
    case = W.cases(only=["spring"], quick=True)[:1]
    results, _ = runner.run(case, ["hand", "sourcegrad", "jax"], quick=False, memory=False)
    assert calls == [["hand", "sourcegrad", "jax"], ["hand", "sourcegrad"], ["hand", "jax"]]
    records = results[0]["variants"]
    assert [r["variant"] for r in records] == ["hand", "sourcegrad", "jax"]
    assert [r["status"] for r in records[:2]] == ["reference", "ok"]
    assert records[2]["status"] == "error: measuring process exited with status -11"


def test_help_says_to_unset_openblas_overrides(capsys):
    with pytest.raises(SystemExit):
        runner.parse_args(["--help"])
    text = capsys.readouterr().out
    assert "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m sourcegrad.bench" in text


def test_dask_benchmark_checks_and_reports(tmp_path, capsys):
    # `--backend dask`: a tiny run of the out-of-core benchmark (timings not asserted). The
    # in-process worker's memory limit counts this whole process (what earlier tests left):
    # a small one would pause the worker for good
    pytest.importorskip("distributed")
    out = tmp_path / "dask.json"
    assert (
        runner.main(
            [
                "--backend",
                "dask",
                "--rows",
                "4e4",
                "--chunk-rows",
                "1e4",
                "--numpy-rows",
                "2e4",
                "--check-rows",
                "2e4",
                "--threads",
                "1",
                "--memory-limit",
                "4GiB",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads(out.read_text())
    assert max(report["check"].values()) <= 1e-10 and report["full_data_agreement"] <= 1e-10
    variants = [r["variant"] for r in report["results"]]
    assert "sourcegrad, backend dask" in variants and "hand-written dask.array" in variants
    assert all(r["rows_per_s"] > 0 for r in report["results"])
    assert "sourcegrad / hand-written dask" in capsys.readouterr().out


@pytest.mark.long
def test_checkpointing_bench_quick_rows():
    """python -m sourcegrad.bench.checkpointing: same gradients, less saved under a budget
    (the loops' snapshots, the MLP's values made once), each row measured in a process of
    its own (its peak RSS a real figure)."""
    from sourcegrad.bench import checkpointing as bench

    rows = []
    for index, case in enumerate(bench.cases(quick=True)):
        # (a process per row costs seconds: the MLP's two only)
        fresh = case[0].startswith("mlp")
        rows += bench.measure(index, quick=True, budget=4000, repeats=1, fresh=fresh)
    assert all(r["rel_error"] < 1e-12 for r in rows)
    for case in {r["case"] for r in rows}:
        plain, *planned = [r for r in rows if r["case"] == case]
        # (the loops: the budget's rows, then revolve's: 32 snapshots and one trip)
        assert len(planned) == (1 if case.startswith("mlp") else 2)
        assert all(p["saved_bytes"] < plain["saved_bytes"] for p in planned)
        assert plain["rss_bytes"] > 10 * 2**20 and plain["peak_bytes"] > 0
    mlp = [r for r in rows if r["case"].startswith("mlp")]
    assert mlp[1]["saved_bytes"] <= mlp[0]["saved_bytes"] // 2  # a budget of half
    table = bench.markdown(rows)
    assert "| spring, 1000 steps | memory=4000 (revolve over segments of " in table
    assert "| spring, 1000 steps | checkpoint_loops='revolve' (revolve over trips, 32 " in table


# --- the layers family (`--layers`): published-style code against its authors' backward ------

LAYERS = W.cases(quick=True, family="layers")
LAYER_IDS = [w.name for w, _ in LAYERS]


def test_layers_family_is_registered():
    assert {w.name for w, _ in LAYERS} == {
        "dense",
        "conv",
        "batchnorm",
        "layernorm",
        "lstm",
        "per_example",
        "rnn_stack",
        "softmax_naive",
    }
    assert all(w.family == "layers" for w, _ in LAYERS)
    assert not {w.name for w in W.WORKLOADS} & set(LAYER_IDS)  # the main table is unchanged


@pytest.mark.parametrize("workload,size", LAYERS, ids=LAYER_IDS)
def test_layers_hand_backward_matches_finite_differences(workload, size):
    args = W.make_args(workload, size)
    ref = hand_gradient(workload, size, args)
    for pos, g in zip(W.wrt_positions(workload), ref):
        numeric = numeric_grad(workload.function(size), args, pos)
        assert runner.max_rel_error((g,), (numeric,)) < 1e-6, (workload.name, pos)


@pytest.mark.no_cross_check  # (the cross-check compiles a second gradient)
@pytest.mark.parametrize("workload,size", LAYERS, ids=LAYER_IDS)
def test_layers_gradient_agrees_and_never_recompiles(workload, size):
    """The compiled gradient is the authors' backward's (1e-8), and a repeated call with equal
    inputs (the same arrays, then equal copies) compiles nothing again."""
    from sourcegrad.api import memory_caches

    args = W.make_args(workload, size)
    ref = hand_gradient(workload, size, args)
    prepared = W.prepare(workload, size, "sourcegrad", args)
    prepared.compile()
    got = prepared.to_numpy(prepared.call())
    assert runner.max_rel_error(got, ref) <= runner.RTOL, (got, ref)
    before = memory_caches.compile_count()
    for _ in range(3):
        prepared.call()
    g = sourcegrad.grad(workload.function(size), wrt=tuple(workload.wrt))
    again = g(*W.make_args(workload, size))  # equal values, new arrays
    assert runner.max_rel_error(prepared.to_numpy(again), ref) <= runner.RTOL
    assert memory_caches.compile_count() == before, "a repeated call compiled again"
    assert prepared.after() == {"recompiles": 0}


@pytest.mark.long
def test_layers_quick_run(tmp_path):
    out = tmp_path / "layers.json"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "sourcegrad.bench", "--layers", "--quick", "--no-memory"]
        + ["--json", str(out)],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert [r["workload"] for r in report["results"]] == LAYER_IDS
    assert "The layers family" in proc.stdout and "worst" in proc.stdout
    for res in report["results"]:
        assert [v["variant"] for v in res["variants"]] == ["hand", "sourcegrad"]
        sg = res["variants"][1]
        assert sg["status"] == "ok" and sg["recompiles"] == 0, sg


@pytest.mark.no_cross_check
def test_a_changed_hyperparameter_recompiles_and_an_equal_one_does_not():
    """The layers' epsilon comes from a property building a new dict on every read: equal
    values find the compiled code, a changed value compiles again and its numbers change."""
    from sourcegrad.api import memory_caches
    from sourcegrad.bench import layers

    workload = W.BY_NAME["batchnorm"]
    size = workload.quick[0]
    args = W.make_args(workload, size)
    g = sourcegrad.grad(workload.function(size), wrt=tuple(workload.wrt))
    first = g(*args)
    before = memory_caches.compile_count()
    g(*args)
    assert memory_caches.compile_count() == before
    saved = layers.BATCHNORM.epsilon
    try:
        layers.BATCHNORM.epsilon = 0.5
        changed = g(*args)
        assert memory_caches.compile_count() > before, "a changed epsilon must compile again"
        ref = hand_gradient(workload, size, args)
        assert runner.max_rel_error(changed, ref) <= runner.RTOL
        assert runner.max_rel_error(changed, first) > 1e-3
    finally:
        layers.BATCHNORM.epsilon = saved
    again = g(*args)
    assert runner.max_rel_error(again, first) <= runner.RTOL
