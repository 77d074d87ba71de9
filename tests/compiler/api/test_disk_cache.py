"""The optional on-disk cache: atomic, authenticated by the user's secret, safe with several
processes. (Attacks on it: test_cache_security.py.)"""

import json
import linecache
import os
import stat
import subprocess
import sys
import types

import numpy as np
import pytest

import sourcegrad
from sourcegrad import api, cache
from sourcegrad.ops import registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def cached_fn(x, W):
    return np.sum(np.tanh(W @ x) ** 2)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the secret's home
    monkeypatch.setattr(cache, "_warned", set())
    path = str(tmp_path / "cache")
    assert cache.enable(path) == path
    api.clear()
    yield path
    cache.disable()
    api.clear()


def args():
    return np.array([0.1, 0.2]), np.array([[1.0, 2.0], [3.0, 4.0]])


def entries(path):
    return [os.path.join(path, f) for f in os.listdir(path) if f.endswith(".json")]


def test_directory_is_private_and_entries_are_reused(cache_dir):
    assert stat.S_IMODE(os.stat(cache_dir).st_mode) == 0o700
    first = sourcegrad.grad(cached_fn)(*args())
    files = entries(cache_dir)
    assert len(files) == 1
    api.clear()  # a new process would start with an empty memory cache
    g = sourcegrad.grad(cached_fn)
    np.testing.assert_allclose(g(*args()), first)
    assert g._last.ir is None  # came from disk: the pipeline did not run
    assert g.source == json.load(open(files[0]))["source"]


def test_corrupted_or_tampered_entry_is_regenerated_not_executed(cache_dir):
    expected = sourcegrad.grad(cached_fn)(*args())
    (path,) = entries(cache_dir)
    entry = json.load(open(path))
    entry["source"] = entry["source"].replace("return", "raise SystemExit('executed'); return")
    json.dump(entry, open(path, "w"))  # the MAC no longer matches
    api.clear()
    with pytest.warns(cache.CacheWarning, match="not written with this user's cache secret"):
        np.testing.assert_allclose(sourcegrad.grad(cached_fn)(*args()), expected)
    assert "SystemExit" not in json.load(open(path))["source"]  # rewritten
    with open(path, "w") as f:
        f.write('{"truncated": ')
    api.clear()
    with pytest.warns(cache.CacheWarning, match="malformed"):
        np.testing.assert_allclose(sourcegrad.grad(cached_fn)(*args()), expected)
    rewritten = json.load(open(path))  # rewritten whole
    assert (
        rewritten["source"] == entry["source"].replace("raise SystemExit('executed'); ", "")
        and len(rewritten["mac"]) == 64
    )


def test_a_new_signature_is_a_new_entry(cache_dir):
    sourcegrad.grad(cached_fn)(*args())
    sourcegrad.grad(cached_fn)(np.ones(3), np.ones((3, 3)))
    assert len(entries(cache_dir)) == 2


SCRIPT = """
import os, sys, numpy as np
os.environ["XDG_CONFIG_HOME"] = {config!r}
sys.path.insert(0, {root!r})
from sourcegrad import cache
cache.enable({path!r})
import sourcegrad
from tests.compiler.api.test_disk_cache import cached_fn, args
print(sourcegrad.grad(cached_fn)(*args()).tolist())
"""


@pytest.mark.long
def test_several_processes_at_once(tmp_path):
    path = str(tmp_path / "shared")
    script = SCRIPT.format(root=ROOT, path=path, config=str(tmp_path / "config"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for _ in range(6)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outputs]
    assert len({o[0] for o in outputs}) == 1
    assert len(entries(path)) == 1 and not [f for f in os.listdir(path) if f.endswith(".tmp")]
    # the racing processes agreed on one secret (whichever linked it first)
    assert os.listdir(tmp_path / "config" / "sourcegrad") == ["cache-key"]


# --- what the key covers: the rules the code uses, and sourcegrad's own source ---------------

RULE_MODULE = """
import numpy as np
from sourcegrad.ops import defvjp
from sourcegrad.ops.registry import Spelling


def cube(x):
    return x ** 3


# (deliberately {k}x², to see which rule a gradient was made with)
defvjp("{op}", cube, Spelling("module", "{module}.cube"),
       lambda g, ans, x: g * {k} * x ** 2,
       kind="elementwise")


def loss(x):
    return np.sum(cube(x))
"""


def load_rule_module(path, name, k):
    """Write the user's rule module with the rule `k`x² and import it (as a new process
    would: a new registration, the file read afresh)."""
    text = RULE_MODULE.format(op=name, module=name, k=k)
    path.write_text(text)
    linecache.clearcache()
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # (the generated code imports it to call cube)
    exec(compile(text, str(path), "exec"), module.__dict__)
    return module


def unregister(module, name):
    """Forget the module's rule, as a process that ends does."""
    registry.RULES.pop(name, None)
    registry._BY_FUNCTION.pop(registry._function_key(module.cube), None)
    registry._MODULE_LAMBDAS.pop(module.__file__, None)


@pytest.fixture
def rule_module(tmp_path, cache_dir):
    """(load(k), the cache directory): the rule module under a name of its own; the modules
    loaded are kept (so no code object of theirs is freed and its id reused) and their
    rule unregistered at the end."""
    name = f"user_rule_{os.path.basename(tmp_path)}".replace("-", "_")
    loaded = []

    def load(k):
        if loaded:
            unregister(loaded[-1], name)
        api.clear()  # a new process would start with an empty memory cache
        loaded.append(load_rule_module(tmp_path / f"{name}.py", name, k))
        return loaded[-1]

    yield load, cache_dir
    unregister(loaded[-1], name)
    sys.modules.pop(name, None)


def test_a_user_rule_changed_between_runs_is_a_new_entry(rule_module):
    load, cache_dir = rule_module
    x = np.array([1.0, 2.0])
    first = sourcegrad.grad(load(2.0).loss)
    np.testing.assert_allclose(first(x), 2.0 * x**2)
    assert first._last.ir is not None and len(entries(cache_dir)) == 1
    same = sourcegrad.grad(load(2.0).loss)  # the rule unchanged: a hit
    np.testing.assert_allclose(same(x), 2.0 * x**2)
    assert same._last.ir is None and len(entries(cache_dir)) == 1
    changed = sourcegrad.grad(load(3.0).loss)  # 2x² -> 3x²: the new rule's gradient
    np.testing.assert_allclose(changed(x), 3.0 * x**2)
    assert changed._last.ir is not None and len(entries(cache_dir)) == 2
    again = sourcegrad.grad(load(3.0).loss)
    np.testing.assert_allclose(again(x), 3.0 * x**2)
    assert again._last.ir is None


def test_another_sourcegrad_source_is_a_new_entry(cache_dir, monkeypatch):
    sourcegrad.grad(cached_fn)(*args())
    api.clear()
    monkeypatch.setattr(cache, "_source_digest", "0" * 64)  # as an edited checkout's
    g = sourcegrad.grad(cached_fn)
    g(*args())
    assert g._last.ir is not None and len(entries(cache_dir)) == 2


def test_sourcegrad_edited_after_import_turns_the_cache_off_with_one_warning(
    cache_dir, monkeypatch
):
    monkeypatch.setattr(cache, "_source_digest", None)
    monkeypatch.setattr(cache, "_IMPORTED", 0.0)  # every file is newer than that
    with pytest.warns(cache.CacheWarning, match="changed after sourcegrad was imported"):
        got = sourcegrad.grad(cached_fn)(*args())
    np.testing.assert_allclose(got, sourcegrad.grad(cached_fn, backend="numpy")(*args()))
    assert cache.directory() is None and entries(cache_dir) == []


def test_the_source_digest_reads_every_python_file_of_the_package(monkeypatch):
    monkeypatch.setattr(cache, "_source_digest", None)
    digest = cache.source_digest()
    assert len(digest) == 64 and cache.source_digest() is digest  # once per process
    read = []
    real_open = open
    monkeypatch.setattr(cache, "_source_digest", None)
    monkeypatch.setattr(
        "builtins.open", lambda path, *a, **k: read.append(path) or real_open(path, *a, **k)
    )
    assert cache.source_digest() == digest
    monkeypatch.undo()
    package = os.path.dirname(sourcegrad.__file__)
    assert os.path.join(package, "ops", "elementwise.py") in read
    assert os.path.join(package, "cache.py") in read and all(p.endswith(".py") for p in read)


RULE_SCRIPT = """
import json, os, sys
sys.path[:0] = [{root!r}, {folder!r}]
os.environ["XDG_CONFIG_HOME"] = {config!r}
import numpy as np
from sourcegrad import api, cache
from sourcegrad.ops import registry
assert cache.enable({path!r})
import sourcegrad
import {module} as user
made = []
from sourcegrad.compiler import pipeline
generate = pipeline.generate_module  # (stage 9, printing: what a cache hit skips)
pipeline.generate_module = lambda *a, **k: made.append(1) or generate(*a, **k)
print(json.dumps([sourcegrad.grad(user.loss)(np.array([1.0, 2.0])).tolist(), len(made)]))
"""


@pytest.mark.long
def test_a_user_rule_changed_between_processes_gives_the_new_gradient(tmp_path):
    name = "user_rule_between_processes"
    script = RULE_SCRIPT.format(
        root=ROOT,
        folder=str(tmp_path),
        config=str(tmp_path / "config"),
        path=str(tmp_path / "cache"),
        module=name,
    )

    def run(k):
        (tmp_path / f"{name}.py").write_text(RULE_MODULE.format(op=name, module=name, k=k))
        done = subprocess.run(
            [sys.executable, "-B", "-c", script],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    assert run(2.0) == [[2.0, 8.0], 1]  # compiled
    assert run(2.0) == [[2.0, 8.0], 0]  # the same rule: from the disk cache
    assert run(3.0) == [[3.0, 12.0], 1]  # the rule changed: compiled with it
    assert run(3.0) == [[3.0, 12.0], 0]
