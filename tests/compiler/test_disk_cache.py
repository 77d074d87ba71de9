"""The optional on-disk cache: atomic, authenticated by the user's secret, safe with several
processes. (Attacks on it: test_cache_security.py.)"""

import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

import sourcegrad
from sourcegrad import api, cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
from tests.compiler.test_disk_cache import cached_fn, args
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
