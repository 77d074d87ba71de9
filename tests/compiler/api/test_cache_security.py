"""Attacks on the on-disk cache (sourcegrad.cache) and its faults.

An entry holds code that runs on a hit: it must be authenticated by a key the cache
directory's writer does not have (the user's secret, kept outside it). The cache never
follows a symlink, never chmods anything, refuses directories it should not trust, and
turns every fault into one warning and an in-memory compile.

Tests that depend on permission checks (a read-only directory, one owned by another
user) run in a subprocess as an unprivileged user: as `nobody` when the interpreter is
reachable by it, else as root without capabilities (`setpriv --bounding-set=-all`: the
kernel then applies permission bits to it as to any user); directly when this process is
unprivileged itself; skipped when none of these is possible.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import pytest

import sourcegrad
from sourcegrad import api, cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def f(x):
    return np.sum(np.sin(x) * x)


def df(x):
    return np.cos(x) * x + np.sin(x)


def nested(x):
    return np.sum(x**3)


@pytest.fixture
def env(tmp_path, monkeypatch):
    """The secret under tmp_path/config; the cache off, its warnings unsaid, nothing compiled."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("SOURCEGRAD_CACHE_DIR", raising=False)
    monkeypatch.delenv("SOURCEGRAD_CACHE", raising=False)
    monkeypatch.setattr(cache, "_warned", set())
    cache.disable()
    api.clear()
    yield tmp_path
    cache.disable()
    api.clear()


def cache_warnings(record):
    return [str(w.message) for w in record if issubclass(w.category, cache.CacheWarning)]


def gradient_in_memory(x):
    """grad(f) on a fresh memory cache (a new process would start with one)."""
    api.clear()
    return sourcegrad.grad(f)(x)


def entry_files(path):
    return [os.path.join(path, n) for n in os.listdir(path) if n.endswith(".json")]


PLANT = "import os as _os\nopen({marker!r}, 'w').close()\n"


def plant(path, marker, mac_key):
    """Edit an entry to run planted code, and re-sign it with `mac_key` (as an attacker who
    can write the directory would, with whatever key they have)."""
    entry = json.load(open(path))
    entry["source"] = PLANT.format(marker=marker) + entry["source"]
    del entry["mac"]
    text = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    import hashlib
    import hmac

    entry["mac"] = hmac.new(mac_key, text.encode(), hashlib.sha256).hexdigest()
    with open(path, "w") as out:
        json.dump(entry, out)


# --- authentication -----------------------------------------------------------------------


def test_a_tampered_entry_with_a_recomputed_digest_is_not_executed(env):
    directory = cache.enable(str(env / "cache"))
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(sourcegrad.grad(f)(x), df(x))
    (path,) = entry_files(directory)
    marker = str(env / "planted-code-ran")
    # the attacker's best guesses: an unkeyed SHA-256 (as the old format had), an empty key
    for guess in (b"", b"0" * 32):
        plant(path, marker, guess)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            np.testing.assert_allclose(gradient_in_memory(x), df(x))
        assert not os.path.exists(marker)
        assert len(cache_warnings(record)) <= 1
        assert "planted" not in open(path).read()  # recompiled and overwritten
    assert len(cache._warned) == 1  # one warning for the cause, not one per entry
    # control: signed with the user's own secret, the same edit does run (so the test can
    # see execution): the MAC is the whole guarantee
    secret = open(os.path.join(cache.secret_directory(), cache.SECRET_NAME), "rb").read()
    plant(path, marker, secret)
    gradient_in_memory(x)
    assert os.path.exists(marker)


def test_the_secret_is_private_and_outside_the_cache_directory(env):
    directory = cache.enable(str(env / "cache"))
    sourcegrad.grad(f)(np.array([0.5]))
    secret_dir = cache.secret_directory()
    key = os.path.join(secret_dir, cache.SECRET_NAME)
    assert not os.path.commonpath([directory, key]) == directory
    assert stat.S_IMODE(os.stat(secret_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(key).st_mode) == 0o600 and os.path.getsize(key) == 32
    (path,) = entry_files(directory)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600  # entries too
    assert not [n for n in os.listdir(directory) if n.endswith(".tmp")]


@pytest.mark.parametrize("mode", [0o640, 0o604])
def test_a_secret_others_can_read_is_refused(env, mode):
    cache.enable(str(env / "cache"))
    key = os.path.join(cache.secret_directory(), cache.SECRET_NAME)
    os.chmod(key, mode)  # (the test's own file)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert cache.enable(str(env / "cache")) is None
    (message,) = cache_warnings(record)
    assert "mode 0600" in message
    assert stat.S_IMODE(os.stat(key).st_mode) == mode  # not chmodded back


def test_a_symlinked_secret_or_secret_directory_is_refused_and_not_followed(env):
    elsewhere = env / "attacker"
    elsewhere.mkdir()
    known = elsewhere / "known-key"
    known.write_bytes(b"k" * 32)
    os.chmod(known, 0o600)
    config = env / "config" / "sourcegrad"
    config.mkdir(parents=True, mode=0o700)
    os.symlink(known, config / cache.SECRET_NAME)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert cache.enable(str(env / "cache")) is None
        np.testing.assert_allclose(sourcegrad.grad(f)(np.array([0.4])), df(np.array([0.4])))
    assert len(cache_warnings(record)) == 1 and "symlink" in cache_warnings(record)[0]
    assert known.read_bytes() == b"k" * 32
    # the secret's directory as a symlink
    shutil.rmtree(config)
    (elsewhere / "dir").mkdir(mode=0o700)
    os.symlink(elsewhere / "dir", config)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert cache.enable(str(env / "cache")) is None
    assert "is a symlink" in cache_warnings(record)[0]
    assert os.listdir(elsewhere / "dir") == []
    assert stat.S_IMODE(os.stat(elsewhere / "dir").st_mode) == 0o700


# --- the directory ------------------------------------------------------------------------


def test_a_symlinked_cache_directory_is_not_followed_nor_chmodded(env):
    victim = env / "victim"  # (as root, this was /etc: chmodded 0700)
    victim.mkdir()
    os.chmod(victim, 0o755)
    link = env / "cache"
    os.symlink(victim, link)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert cache.enable(str(link)) is None
        for _ in range(3):
            np.testing.assert_allclose(
                gradient_in_memory(np.array([1.0, 2.0])), df(np.array([1.0, 2.0]))
            )
    (message,) = cache_warnings(record)
    assert "is a symlink" in message
    assert stat.S_IMODE(os.stat(victim).st_mode) == 0o755 and os.listdir(victim) == []


def test_a_symlinked_entry_is_not_followed_and_is_replaced_not_written_through(env):
    directory = cache.enable(str(env / "cache"))
    x = np.array([0.1, 0.2])
    sourcegrad.grad(f)(x)
    (path,) = entry_files(directory)
    target = env / "users-file"
    target.write_text(open(path).read())  # even a valid entry, reached through a link
    os.unlink(path)
    os.symlink(target, path)
    before = target.read_text()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        np.testing.assert_allclose(gradient_in_memory(x), df(x))
    assert len(cache_warnings(record)) == 1
    assert target.read_text() == before
    assert not os.path.islink(path) and stat.S_ISREG(os.lstat(path).st_mode)  # rewritten


def test_a_group_or_world_writable_directory_is_refused_and_not_chmodded(env):
    shared = env / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert cache.enable(str(shared)) is None
        np.testing.assert_allclose(gradient_in_memory(np.array([0.7])), df(np.array([0.7])))
    assert "group or others can write" in cache_warnings(record)[0]
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o777 and os.listdir(shared) == []


def test_a_directory_of_another_user_is_refused_with_a_warning(env, monkeypatch):
    if os.geteuid() == 0:
        foreign = env / "foreign"
        foreign.mkdir()
        os.chmod(foreign, 0o755)
        os.chown(foreign, 65534, 65534)
    else:
        foreign = "/usr"  # root's
    monkeypatch.setenv("SOURCEGRAD_CACHE_DIR", str(foreign))
    monkeypatch.setattr(cache, "_configured", False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):  # never an exception, and one warning in all
            np.testing.assert_allclose(gradient_in_memory(np.array([0.2])), df(np.array([0.2])))
    (message,) = cache_warnings(record)
    assert "not by this user" in message
    assert cache.directory() is None


def test_a_path_that_is_a_regular_file_warns_once_and_compiles_in_memory(env, monkeypatch):
    a_file = env / "not-a-directory"
    a_file.write_text("data")
    monkeypatch.setenv("SOURCEGRAD_CACHE_DIR", str(a_file))
    monkeypatch.setattr(cache, "_configured", False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for x in (np.array([0.3]), np.array([0.3, 0.4]), 0.5):
            np.testing.assert_allclose(gradient_in_memory(x), df(x))
    (message,) = cache_warnings(record)
    assert "not a directory" in message and a_file.read_text() == "data"


@pytest.mark.parametrize(
    "content",
    [
        "[]",
        "3",
        '"text"',
        "{}",
        '{"source": 3}',
        '{"format": 2, "key": "k", "source": "x = 1", "saved": {}, "names": "f", '
        '"control_flow": false, "mac": "00"}',
        '{"format": 2, "key": "k", "source": "x = 1", "saved": [], "names": ["not a name"], '
        '"control_flow": 0, "mac": "00"}',
    ],
)
def test_an_entry_of_the_wrong_shape_is_ignored_with_one_warning(env, content):
    directory = cache.enable(str(env / "cache"))
    x = np.array([0.25, 0.5])
    sourcegrad.grad(f)(x)
    (path,) = entry_files(directory)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            with open(path, "w") as out:
                out.write(content)
            np.testing.assert_allclose(gradient_in_memory(x), df(x))
    assert len(cache_warnings(record)) == 1
    assert json.load(open(path))["mac"] != "00"  # replaced by a good entry


# --- higher order across processes --------------------------------------------------------

SECOND_ORDER = """
import json, os, sys
import numpy as np
sys.path.insert(0, {root!r})
os.environ["XDG_CONFIG_HOME"] = {config!r}
from sourcegrad import api, cache
assert cache.enable({path!r})
import sourcegrad
from tests.compiler.api.test_cache_security import nested
made = []
from sourcegrad.compiler import pipeline
generate = pipeline.generate_module  # (stage 9, printing: what a cache hit skips)
pipeline.generate_module = lambda *a, **k: made.append(1) or generate(*a, **k)
second = sourcegrad.grad(sourcegrad.grad(nested))
print(json.dumps([second(1.5), second(np.array(0.5)).tolist(), len(made)]))
"""


@pytest.mark.long
def test_grad_of_grad_from_the_cache_in_a_second_process(env):
    script = SECOND_ORDER.format(root=ROOT, config=str(env / "config"), path=str(env / "cache"))
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    (first, first_0d, made_first), (second, second_0d, made_second) = runs
    assert first == second == pytest.approx(6 * 1.5) and first_0d == second_0d == pytest.approx(
        6 * 0.5
    )
    assert made_first > 0 and made_second == 0  # the second process generated nothing


# --- permission checks, as an unprivileged user -------------------------------------------

UNPRIVILEGED = """
import json, os, sys, warnings
sys.path.insert(0, {root!r})
import numpy as np
base = {base!r}
os.environ["XDG_CONFIG_HOME"] = os.path.join(base, "config")
os.environ["HOME"] = base
from sourcegrad import api, cache
import sourcegrad

def f(x):
    return np.sum(np.sin(x) * x)

def df(x):
    return np.cos(x) * x + np.sin(x)

def scenario(run):
    cache.disable()
    cache._warned.clear()
    api.clear()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = run()
    out["warnings"] = [str(w.message) for w in record
                       if issubclass(w.category, cache.CacheWarning)]
    return out

def gradients_right():
    ok = True
    for x in (np.array([0.3, 1.1]), np.array([0.2]), 0.7):
        api.clear()
        ok = ok and bool(np.allclose(sourcegrad.grad(f)(x), df(x)))
    return ok

def read_only():
    d = os.path.join(base, "read-only")
    os.mkdir(d, 0o700)
    os.chmod(d, 0o500)
    enabled = cache.enable(d)
    return dict(enabled=enabled == d, right=gradients_right(),
                mode=oct(os.stat(d).st_mode & 0o7777), listing=os.listdir(d))

def foreign():
    enabled = cache.enable({foreign!r})
    return dict(enabled=enabled, right=gradients_right(),
                mode=oct(os.stat({foreign!r}).st_mode & 0o7777))

def symlinked():
    victim = os.path.join(base, "victim")
    os.mkdir(victim, 0o755)
    os.chmod(victim, 0o755)
    link = os.path.join(base, "cache-link")
    os.symlink(victim, link)
    enabled = cache.enable(link)
    return dict(enabled=enabled, right=gradients_right(),
                mode=oct(os.stat(victim).st_mode & 0o7777), listing=os.listdir(victim))

print(json.dumps(dict(uid=os.geteuid(), read_only=scenario(read_only),
                      foreign=scenario(foreign), symlinked=scenario(symlinked))))
"""


def _unprivileged_command():
    """How to run the interpreter unprivileged, and the uid it then has; None if no way."""
    if os.geteuid() != 0:
        return [], os.geteuid()
    probe = [sys.executable, "-c", f"import os, sys; os.stat({ROOT!r}); import numpy, gast"]
    setpriv = shutil.which("setpriv")
    candidates = []
    if setpriv:
        candidates.append(([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"], 65534))
        # root without capabilities: permission bits apply to it as to any user
        candidates.append(([setpriv, "--inh-caps=-all", "--bounding-set=-all"], 0))
    for prefix, uid in candidates:
        try:
            if subprocess.run(prefix + probe, capture_output=True, timeout=60).returncode == 0:
                return prefix, uid
        except (OSError, subprocess.SubprocessError):
            continue
    return None


@pytest.fixture(scope="module")
def unprivileged():
    how = _unprivileged_command()
    if how is None:
        pytest.skip("running as root, and no unprivileged user can run this interpreter")
    prefix, uid = how
    base = tempfile.mkdtemp(prefix="sourcegrad-cache-test-")
    foreign = tempfile.mkdtemp(prefix="sourcegrad-foreign-")
    try:
        if os.geteuid() == 0:
            os.chown(base, uid, uid)
            os.chmod(foreign, 0o755)
            os.chown(foreign, 65534 if uid == 0 else 0, 65534 if uid == 0 else 0)
        else:
            os.rmdir(foreign)
            foreign = "/usr"
        script = os.path.join(base, "scenarios.py")  # (a file: functions need their source)
        with open(script, "w") as out:
            out.write(UNPRIVILEGED.format(root=ROOT, base=base, foreign=foreign))
        os.chmod(script, 0o644)
        done = subprocess.run(
            prefix + [sys.executable, script], capture_output=True, text=True, cwd=base, timeout=300
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout.splitlines()[-1])
        assert result["uid"] == uid
        if uid == 0:  # without capabilities, root must be refused a read-only directory
            probe = os.path.join(base, "probe")
            os.mkdir(probe, 0o500)
            refused = (
                subprocess.run(
                    prefix + ["touch", os.path.join(probe, "x")], capture_output=True
                ).returncode
                != 0
            )
            if not refused:
                pytest.skip("setpriv did not take root's capabilities away here")
        yield result
    finally:
        shutil.rmtree(base, ignore_errors=True)
        if foreign != "/usr":
            shutil.rmtree(foreign, ignore_errors=True)


def test_unprivileged_a_read_only_directory_is_not_chmodded_and_warns_once(unprivileged):
    result = unprivileged["read_only"]
    assert result["enabled"] and result["right"]
    assert result["mode"] == "0o500" and result["listing"] == []
    (message,) = result["warnings"]
    assert "cannot write" in message


def test_unprivileged_a_directory_of_another_user_is_refused(unprivileged):
    result = unprivileged["foreign"]
    assert result["enabled"] is None and result["right"] and result["mode"] == "0o755"
    (message,) = result["warnings"]
    assert "not by this user" in message


def test_unprivileged_a_symlinked_directory_is_refused(unprivileged):
    result = unprivileged["symlinked"]
    assert result["enabled"] is None and result["right"]
    assert result["mode"] == "0o755" and result["listing"] == []
    (message,) = result["warnings"]
    assert "is a symlink" in message


def test_an_authentic_entry_that_does_not_load_warns_and_compiles_in_memory(env):
    """Made with the user's own secret (so trusted) but unusable: one warning, a compile."""
    directory = cache.enable(str(env / "cache"))
    x = np.array([0.6, 0.1])
    sourcegrad.grad(f)(x)
    (path,) = entry_files(directory)
    entry = json.load(open(path))
    entry["names"] = ["no_such_function"]
    signed = {k: v for k, v in entry.items() if k != "mac"}
    signed["mac"] = cache._mac({k: v for k, v in signed.items()})
    with open(path, "w") as out:
        json.dump(signed, out)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(2):
            np.testing.assert_allclose(gradient_in_memory(x), df(x))
    (message,) = cache_warnings(record)
    assert "could not be loaded" in message


# --- numba's cache directory ----------------------------------------------------------------
# numba unpickles its cache index by path: sourcegrad hands numba `cache=True` only for a
# directory nobody else can write or swap (cache.untrusted_because), NUMBA_CACHE_DIR's too.


def decay(k, x0):
    x = x0
    for _ in range(20):  # (a loop over numbers: numba compiles it)
        x = x - 0.1 * k * x
    return x * x


def ddecay_dk(k, x0):
    return 2.0 * x0**2 * (1.0 - 0.1 * k) ** 39 * 20 * -0.1


@pytest.fixture
def numba_dirs(env, monkeypatch):
    """NUMBA_CACHE_DIR as the user set it, a shared sticky directory (as /tmp is); yields
    (the gradient file's folder in the cache, the shared directory, the directory numba
    computes for that folder's files under it)."""
    pytest.importorskip("numba")
    from numba.core import caching, config

    shared = env / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    monkeypatch.setattr(config, "CACHE_DIR", str(shared))
    folder = os.path.join(cache.enable(str(env / "cache")), "numba")
    # (numba's own computation: anyone can make it for another user's cache directory)
    subpath = caching._CacheLocator.get_suitable_cache_subpath(os.path.join(folder, "f.py"))
    yield folder, shared, shared / subpath


def numba_directory(folder):
    """The directory sourcegrad lets numba cache in for a gradient's file, and the warnings."""
    from sourcegrad.compiler.backends import numba_backend

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        found = [numba_backend._numba_directory(os.path.join(folder, "f.py")) for _ in range(2)]
    assert found[0] == found[1]
    return found[0], cache_warnings(record)


def test_numba_cache_dir_is_created_private_and_used_when_safe(numba_dirs):
    folder, shared, numbas = numba_dirs
    assert numba_directory(folder) == (str(numbas), [])
    assert stat.S_IMODE(os.lstat(numbas).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o1777  # not chmodded


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
def test_numba_cache_dir_others_can_write_is_not_used(numba_dirs, mode):
    folder, _, numbas = numba_dirs
    numbas.mkdir()  # pre-created by someone else, or carelessly
    os.chmod(numbas, mode)
    found, (message,) = numba_directory(folder)  # one warning for both calls
    assert found is None
    assert str(numbas) in message and "group or others can write" in message
    assert "without numba's disk cache" in message
    assert stat.S_IMODE(os.stat(numbas).st_mode) == mode and os.listdir(numbas) == []


def test_numba_cache_dir_as_a_symlink_is_not_followed(numba_dirs, env):
    folder, _, numbas = numba_dirs
    elsewhere = env / "attackers"
    elsewhere.mkdir(mode=0o700)
    os.symlink(elsewhere, numbas)
    found, (message,) = numba_directory(folder)
    assert found is None and "is a symlink" in message
    assert os.listdir(elsewhere) == [] and stat.S_IMODE(os.stat(elsewhere).st_mode) == 0o700


def test_numba_cache_dir_reached_through_a_symlink_is_not_used(env, monkeypatch):
    pytest.importorskip("numba")
    from numba.core import config

    real = env / "real"
    real.mkdir(mode=0o700)
    os.symlink(real, env / "link")
    monkeypatch.setattr(config, "CACHE_DIR", str(env / "link" / "numba-cache"))
    folder = os.path.join(cache.enable(str(env / "cache")), "numba")
    found, (message,) = numba_directory(folder)
    assert found is None and f"{env / 'link'} is a symlink" in message
    assert os.listdir(real) == []


def test_numba_cache_dir_in_a_directory_others_can_write_is_not_used(numba_dirs):
    folder, shared, numbas = numba_dirs
    os.chmod(shared, 0o777)  # not sticky: anyone could swap numba's directory in it
    found, (message,) = numba_directory(folder)
    assert found is None and f"{shared} has mode 0777" in message and "not sticky" in message
    assert not os.path.lexists(numbas)  # nothing made there


def test_numba_cache_dir_of_another_user_is_not_used(numba_dirs, monkeypatch):
    folder, _, numbas = numba_dirs
    numbas.mkdir(mode=0o755)
    monkeypatch.setattr(os, "geteuid", lambda: 4242)  # this process as another user
    found, (message,) = numba_directory(folder)
    # (run as root, the directory is root's, not uid 4242's; as a user, the first of the
    # user's directories on the way is neither uid 4242's nor root's)
    assert found is None and "this user (uid 4242)" in message


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_numba_cache_dir_under_another_users_directory_is_not_used(numba_dirs, env):
    folder, shared, numbas = numba_dirs
    os.chmod(shared, 0o755)
    os.chown(shared, 65534, 65534)  # theirs: they could replace what is in it
    found, (message,) = numba_directory(folder)
    assert found is None and f"{shared} is owned by uid 65534" in message


def test_numba_cache_locator_classes_are_not_trusted(numba_dirs, monkeypatch):
    from numba.core import config

    folder, _, numbas = numba_dirs
    monkeypatch.setattr(config, "CACHE_LOCATOR_CLASSES", "UserWideCacheLocator", raising=False)
    found, (message,) = numba_directory(folder)
    assert found is None and "NUMBA_CACHE_LOCATOR_CLASSES" in message
    assert not os.path.lexists(numbas)


def test_without_numba_cache_dir_numba_caches_beside_the_file(env, monkeypatch):
    pytest.importorskip("numba")
    from numba.core import config

    monkeypatch.setattr(config, "CACHE_DIR", "")
    folder = os.path.join(cache.enable(str(env / "cache")), "numba")
    pycache = os.path.join(folder, "__pycache__")
    assert numba_directory(folder) == (pycache, [])
    assert stat.S_IMODE(os.lstat(pycache).st_mode) == 0o700


class _Planted:
    """An index entry whose unpickling runs code: it touches a marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (eval, (f"__import__('pathlib').Path({self.marker!r}).touch() or (None, {{}})",))


def plant_indexes(py_file, directory, marker):
    """An index with the planted entry for each function of the gradient's file, named as
    numba names it (anyone can compute the name), in `directory`."""
    import ast
    import pickle

    import numba

    module = os.path.splitext(os.path.basename(py_file))[0]
    tag = "py%d%d%s" % (sys.version_info[0], sys.version_info[1], getattr(sys, "abiflags", ""))
    for node in ast.parse(open(py_file).read()).body:
        if isinstance(node, ast.FunctionDef):
            line = node.decorator_list[0].lineno  # (the code's first line)
            with open(os.path.join(directory, f"{module}.{node.name}-{line}.{tag}.nbi"), "wb") as f:
                pickle.dump(numba.__version__, f)
                f.write(pickle.dumps(_Planted(marker)))


def test_a_planted_numba_index_in_a_shared_cache_dir_is_never_unpickled(numba_dirs, env):
    """The attack: another user pre-creates the directory numba will use under a shared
    NUMBA_CACHE_DIR and plants its pickled index. Compiled without numba's disk cache,
    after one warning; control: where the directory is safe, numba does read the index
    planted (so the test sees it when it is read)."""
    folder, _, numbas = numba_dirs
    numbas.mkdir()
    os.chmod(numbas, 0o777)  # the attacker's (anyone may write)
    marker = env / "planted-code-ran"
    x = (0.7, 1.3)
    runs = {}
    for run in ("learn the names", "attacked", "control"):
        if run == "control":
            os.chmod(numbas, 0o755)  # as if the user's own
        api.clear()
        cache._warned.clear()
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            g = sourcegrad.grad(decay, backend="numba")
            np.testing.assert_allclose(g(*x), ddecay_dk(*x), rtol=1e-12)
        runs[run] = (g, cache_warnings(record), os.path.exists(marker))
        if run == "learn the names":
            (py_file,) = [n for n in os.listdir(folder) if n.endswith(".py")]
            plant_indexes(os.path.join(folder, py_file), numbas, str(marker))
    assert not runs["attacked"][2], "numba unpickled the planted index"
    for run in ("learn the names", "attacked"):
        g, said, ran = runs[run]
        (message,) = said
        assert str(numbas) in message and "group or others can write" in message
        assert "cache=True" not in g.source and g._last.fn.stats.cache_path is None
    g, said, ran = runs["control"]
    assert ran and said == [] and g._last.fn.stats.cache_path == str(numbas)


def test_numba_caching_elsewhere_than_checked_is_not_used(env, monkeypatch):
    """Should numba pick another directory than the one sourcegrad predicted and checked
    (another numba's locators), the code is compiled again without numba's disk cache."""
    pytest.importorskip("numba")
    from numba.core import config

    from sourcegrad.compiler.backends import numba_backend

    monkeypatch.setattr(config, "CACHE_DIR", "")  # numba: __pycache__ beside the file
    cache.enable(str(env / "cache"))
    checked = env / "checked"
    monkeypatch.setattr(numba_backend, "_numba_directory", lambda path: str(checked))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        g = sourcegrad.grad(decay, backend="numba")
        np.testing.assert_allclose(g(0.7, 1.3), ddecay_dk(0.7, 1.3), rtol=1e-12)
    (message,) = cache_warnings(record)
    assert "numba chose the cache directory" in message and str(checked) in message
    assert "cache=True" not in g.source and g._last.fn.stats.cache_path is None
    pycache = os.path.join(cache.directory(), "numba", "__pycache__")
    assert not os.path.exists(pycache) or not [
        n for n in os.listdir(pycache) if n.endswith((".nbi", ".nbc"))
    ]
