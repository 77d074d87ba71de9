"""An optional on-disk cache of generated gradient modules.

Off by default. `SOURCEGRAD_CACHE=1` turns it on in the user's cache directory
(`$XDG_CACHE_HOME/sourcegrad`, else `~/.cache/sourcegrad`); `SOURCEGRAD_CACHE_DIR=path`
or `sourcegrad.cache.enable(path)` chooses another one; `disable()` turns it off.

Each entry is one JSON file named by the SHA-256 of its key: everything the generated
code depends on (the lowered function, the input signature, `wrt`, the mode, the
backend, the sourcegrad and Python versions). The file holds the key itself, the source,
the saved-value manifest and a SHA-256 over those; an entry whose digest or key does not
match (stale, truncated, tampered with) is regenerated and rewritten, never executed.
Entries are written to a temporary file in the same directory and renamed into place
(atomic on POSIX), so processes that compile the same gradient at once never see half a
file. The directory is created with mode 0700.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile

_directory: str | None = None
_configured = False


def default_directory() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sourcegrad")


def enable(path: str | None = None) -> str:
    """Cache generated modules in `path` (default: the user's cache directory)."""
    global _directory, _configured
    _directory = path or default_directory()
    os.makedirs(_directory, mode=0o700, exist_ok=True)
    os.chmod(_directory, 0o700)
    _configured = True
    return _directory


def disable() -> None:
    global _directory, _configured
    _directory, _configured = None, True


def directory() -> str | None:
    """The cache directory in use, or None when the cache is off."""
    if not _configured:
        if os.environ.get("SOURCEGRAD_CACHE_DIR"):
            enable(os.environ["SOURCEGRAD_CACHE_DIR"])
        elif os.environ.get("SOURCEGRAD_CACHE", "") not in ("", "0"):
            enable()
        else:
            disable()
    return _directory


def key_of(*parts) -> str:
    """A stable key text for the parts (reprs of plain data)."""
    from . import __version__
    return repr((__version__, sys.version_info[:2]) + tuple(parts))


def _digest(entry) -> str:
    payload = json.dumps([entry["key"], entry["source"], entry["saved"], entry["names"]],
                         sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def _path(key: str) -> str:
    return os.path.join(_directory, hashlib.sha256(key.encode()).hexdigest() + ".json")


def load(key: str):
    """The cached (source, saved, names) for `key`, or None (absent, stale or corrupted)."""
    if directory() is None:
        return None
    try:
        with open(_path(key)) as f:
            entry = json.load(f)
        if entry.get("key") != key or entry.get("digest") != _digest(entry):
            return None
        return entry["source"], entry["saved"], entry["names"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(key: str, source: str, saved, names) -> None:
    """Write the entry atomically (a temporary file renamed into place)."""
    if directory() is None:
        return
    entry = {"key": key, "source": source, "saved": saved, "names": list(names)}
    entry["digest"] = _digest(entry)
    fd, tmp = tempfile.mkstemp(dir=_directory, prefix=".entry-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f, default=_plain)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, _path(key))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _plain(value):
    if isinstance(value, tuple):
        return list(value)
    return str(value)
