"""An optional on-disk cache of generated gradient modules.

Off by default. `SOURCEGRAD_CACHE=1` turns it on in the user's cache directory
(`$XDG_CACHE_HOME/sourcegrad`, else `~/.cache/sourcegrad`); `SOURCEGRAD_CACHE_DIR=path`
or `sourcegrad.cache.enable(path)` chooses another one; `disable()` turns it off.
`load(key)` returns an `Entry` (the generated source and what the compiler knows about
it) or None; `store(key, ...)` writes one. Neither ever raises.

What the cache trusts. An entry holds Python source that is executed on a hit, so an
entry is used only when it carries an HMAC-SHA256, over everything in it, made with a
per-user secret that lives OUTSIDE the cache directory: 32 random bytes in
`$XDG_CONFIG_HOME/sourcegrad/cache-key` (else `~/.config/sourcegrad/cache-key`), created
with O_EXCL|O_NOFOLLOW and mode 0600 in a directory created 0700. The secret is refused
(and the cache turned off) when it or its directory is a symlink, is not owned by the
user, or is accessible to group or others. So whoever can write the cache directory but
cannot read that file cannot make the cache run code: a planted, edited or
re-digested entry fails its MAC and is ignored (it is recompiled and overwritten). The
cache trusts the user's own account (and root), the interpreter and the sourcegrad
installation; it trusts nothing in the cache directory. The parent directories of the
cache directory and of the secret's directory are taken as the environment gives them;
the last component of each, the secret and every entry are opened without following
symlinks (O_NOFOLLOW, relative to a directory descriptor).

The cache directory is created 0700 when absent and never chmodded; one that is a
symlink, not a directory, not owned by the user or writable by group or others is
refused. Any fault (such a directory, a missing or unsafe secret, an unwritable
directory, a malformed or forged entry) turns into one `CacheWarning` per cause per
process, and the gradient is compiled in memory as without a cache.

Each entry is one JSON file named by the SHA-256 of its key: everything the generated
code depends on (the lowered function, the input signature, `wrt`, the mode, the
backend, the sourcegrad and Python versions), the digest of every derivative rule the
code uses, users' rules included (`ops.fingerprint`: a rule edited between runs is a new
key), and the digest of sourcegrad's own source (`source_digest`: an edited checkout is a
new key). Entries are written to a temporary file (O_EXCL, 0600) in the same directory
and renamed into place (atomic on POSIX), so processes that compile the same gradient at
once never see half a file.

numba's cache (of the numba backend's machine code) is not authenticated: numba unpickles
its index, by path. So numba is given `cache=True` only where `untrusted_because` finds
nothing wrong with the directory it will use (`compiler.backends.numba_backend`): no symlink on
its path from `/`, every directory above it this user's or root's and not writable by
others unless sticky, itself this user's and not writable by group or others. Elsewhere
the gradient is compiled without numba's disk cache, after one `CacheWarning`.

Why one module: the trust model above is one argument, and each function is one of its steps
(the directory, the secret, the MAC, the entry); apart, a check would be read away from its
reason.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import sys
import time
import warnings
from typing import NamedTuple

from ._version import __version__

FORMAT = 2
SECRET_NAME = "cache-key"
SECRET_BYTES = 32
MAX_ENTRY_BYTES = 16 << 20

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

_directory: str | None = None
_dir_fd: int | None = None
_secret: bytes | None = None
_configured = False
_warned: set = set()


class CacheWarning(UserWarning):
    """The on-disk cache could not be used for something; the gradient is compiled in memory."""


class Entry(NamedTuple):
    source: str
    saved: list
    names: list
    control_flow: bool  # whether the generated function has loops or branches


class _Fault(Exception):
    """A reason not to use the cache: `cause` names it for the one-warning-per-cause rule."""

    def __init__(self, cause, message):
        super().__init__(message)
        self.cause = cause


def _warn(cause: str, message: str, outcome: str = "compiling in memory") -> None:
    if cause in _warned:
        return
    _warned.add(cause)
    warnings.warn(f"sourcegrad cache: {message}; {outcome}", CacheWarning, stacklevel=4)


def fault(cause: str, message: str) -> None:
    """Report a fault met using an entry (one warning per cause per process)."""
    _warn(cause, message)


def numba_fault(cause: str, message: str) -> None:
    """Report why numba's disk cache is not used for a gradient (one warning per cause per
    process): numba compiles it again in each process."""
    _warn(cause, message, "compiling without numba's disk cache")


def default_directory() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sourcegrad")


def secret_directory() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "sourcegrad")


def enable(path: str | None = None) -> str | None:
    """Cache generated modules in `path` (default: the user's cache directory).

    Returns the directory, or None (with a `CacheWarning`) when it or the secret cannot
    be used safely; the cache is then off for this process until `enable` is called again."""
    global _directory, _dir_fd, _secret, _configured
    disable()
    path = path or default_directory()
    try:
        fd = _open_own_directory(path, "cache directory", private=False)
        try:
            secret = _load_secret()
        except BaseException:
            os.close(fd)
            raise
    except _Fault as fault:
        _warn(fault.cause, str(fault))
        return None
    except OSError as exc:
        _warn("cache directory", f"cannot use the cache directory {path} ({exc})")
        return None
    _directory, _dir_fd, _secret = path, fd, secret
    return path


def disable() -> None:
    global _directory, _dir_fd, _secret, _configured
    if _dir_fd is not None:
        try:
            os.close(_dir_fd)
        except OSError:
            pass
    _directory, _dir_fd, _secret, _configured = None, None, None, True


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
    """A stable key text for the parts (reprs of plain data), with sourcegrad's version, its
    source's digest (`source_digest`, while the cache is on) and Python's version."""
    own = None
    if directory() is not None:
        try:
            own = source_digest()
        except OSError as exc:  # (an entry keyed without it could be another version's)
            _warn("source digest", f"cannot read sourcegrad's own source to key entries ({exc})")
            disable()
    return repr((__version__, own, sys.version_info[:2]) + tuple(parts))


_source_digest: str | None = None
_IMPORTED = time.time()


def source_digest() -> str:
    """The SHA-256 of sourcegrad's own source: every `.py` file of the installed package, by
    its path in the package and its bytes. Computed once per process (about 5 ms for the
    package's 2.7 MB on the project's machine), on first use, so an entry made by other
    rules, passes or printers than this process's (an edited checkout, another commit of
    the same version) is never a hit. Contents, not sizes and mtimes: a rule edited in place
    (2.0 -> 3.0) keeps its file's size, and mtimes are coarse on some file systems.
    Raises OSError when the package cannot be read, or when a file of it changed after this
    module was imported (this process runs the code it had before: keyed by the new
    files, its entries would be wrong for a process that runs them)."""
    global _source_digest
    if _source_digest is None:
        root = os.path.dirname(os.path.abspath(__file__))
        paths = []
        for where, folders, files in os.walk(root):
            folders[:] = sorted(f for f in folders if f != "__pycache__")
            paths += [os.path.join(where, f) for f in sorted(files) if f.endswith(".py")]
        if not paths:
            raise OSError(f"no Python source under {root}")
        digest = hashlib.sha256()
        for path in paths:
            with open(path, "rb") as f:
                data = f.read()
                if os.fstat(f.fileno()).st_mtime > _IMPORTED:
                    raise OSError(f"{path} changed after sourcegrad was imported")
            name = os.path.relpath(path, root).encode()
            digest.update(b"%d:%s:%d:" % (len(name), name, len(data)) + data)
        _source_digest = digest.hexdigest()
    return _source_digest


# --- directories and the secret ---------------------------------------------------------------


def _open_own_directory(path: str, what: str, private: bool) -> int:
    """A descriptor of directory `path`, created 0700 if absent, never followed if a symlink,
    refused unless owned by the user and not writable (`private`: not accessible) by group
    or others. Its parents are created as needed and taken as they are."""
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    try:
        os.makedirs(parent, mode=0o700, exist_ok=True)
        parent_fd = os.open(parent, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise _Fault(
            f"{what} parent", f"cannot open the parent of the {what} {path} ({exc})"
        ) from exc
    try:
        try:
            os.mkdir(name, 0o700, dir_fd=parent_fd)  # (does not follow a symlink: EEXIST)
        except FileExistsError:
            pass
        except OSError as exc:
            raise _Fault(f"{what} create", f"cannot create the {what} {path} ({exc})") from exc
        try:
            fd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=parent_fd)
        except OSError as exc:
            kind = (
                "a symlink"
                if os.path.islink(path)
                else "not a directory"
                if os.path.lexists(path) and not os.path.isdir(path)
                else "unusable"
            )
            raise _Fault(f"{what} open", f"the {what} {path} is {kind} ({exc})") from exc
    finally:
        os.close(parent_fd)
    problem = _ownership_problem(os.fstat(fd), private)
    if problem is not None:
        os.close(fd)
        raise _Fault(f"{what} unsafe", f"the {what} {path} {problem}")
    return fd


def _ownership_problem(info: os.stat_result, private: bool) -> str | None:
    """Why a directory with `info` cannot be the user's own (None when it can): owned by
    another user, or writable (`private`: accessible) by group or others."""
    if info.st_uid != os.geteuid():
        return f"is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()})"
    if info.st_mode & (0o077 if private else 0o022):
        return f"has mode {stat.S_IMODE(info.st_mode):04o}: " + (
            "group or others can access it" if private else "group or others can write to it"
        )
    return None


def _ancestor_problem(info: os.stat_result) -> str | None:
    """Why a directory with `info` lets another user replace what is in it (None when it
    does not): it is owned by someone other than this user or root, or group or others may
    write to it and it is not sticky (in a sticky directory, such as /tmp, nobody else can
    rename or remove what this user owns, and the next component's own check decides)."""
    if info.st_uid not in (0, os.geteuid()):
        return f"is owned by uid {info.st_uid}, neither this user (uid {os.geteuid()}) nor root"
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        return (
            f"has mode {stat.S_IMODE(info.st_mode):04o}: group or others can write to it "
            "and it is not sticky"
        )
    return None


def untrusted_because(path: str) -> str | None:
    """Why files under directory `path` must not be trusted by a consumer that opens them
    by path and executes what it reads (numba's cache index is a pickle); None when they
    may be.

    Checked from `/` down, one component at a time relative to the one above (so the check
    itself cannot be redirected): no component is a symlink (none is followed, even one
    that would be safe: point at the real path instead); every directory above `path` is
    this user's or root's and, unless sticky, not writable by group or others (nobody else
    can swap a component after the check); `path` itself is this user's and not writable
    by group or others, as the cache directory must be. Missing components are created
    0700; nothing is chmodded. Never raises."""
    path = os.path.abspath(path)
    try:
        fd = os.open(os.sep, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as exc:
        return f"cannot open {os.sep} ({exc})"
    try:
        where = os.sep
        names = [name for name in path.split(os.sep) if name]
        info = os.fstat(fd)
        problem = _ancestor_problem(info) if names else _ownership_problem(info, False)
        if problem is not None:
            return f"{where} {problem}"
        for i, name in enumerate(names):
            where = os.path.join(where, name)
            try:
                child = _open_component(fd, name)
            except OSError as exc:
                return f"{where} {_unusable(fd, name, exc)}"
            os.close(fd)
            fd = child
            info = os.fstat(fd)
            last = i == len(names) - 1
            problem = _ownership_problem(info, False) if last else _ancestor_problem(info)
            if problem is not None:
                return f"{where} {problem}"
        return None
    finally:
        os.close(fd)


def _open_component(dir_fd: int, name: str) -> int:
    """A descriptor of directory `name` in `dir_fd`, created 0700 when absent; a symlink
    is not followed (the open fails)."""
    flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        try:
            os.mkdir(name, 0o700, dir_fd=dir_fd)  # (does not follow a symlink: EEXIST)
        except FileExistsError:
            pass  # (made meanwhile: the open below checks what it is)
        return os.open(name, flags, dir_fd=dir_fd)


def _unusable(dir_fd: int, name: str, exc: OSError) -> str:
    """What is wrong with `name` in `dir_fd`, which could not be opened as a directory."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return f"cannot be opened or created ({exc})"
    if stat.S_ISLNK(info.st_mode):
        return "is a symlink (never followed)"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    return f"cannot be opened ({exc})"


def _load_secret() -> bytes:
    """The user's cache secret, created on first use (see the module docstring)."""
    where = secret_directory()
    dir_fd = _open_own_directory(where, "secret directory", private=True)
    try:
        try:
            fd = os.open(SECRET_NAME, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            _create_secret(dir_fd)
            fd = os.open(SECRET_NAME, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise _Fault(
            "secret open", f"cannot open the cache secret in {where} (a symlink is refused) ({exc})"
        ) from exc
    finally:
        os.close(dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise _Fault(
                "secret unsafe",
                f"the cache secret {os.path.join(where, SECRET_NAME)} "
                "must be a regular file of this user's, mode 0600",
            )
        secret = os.read(fd, SECRET_BYTES + 1)
    finally:
        os.close(fd)
    if len(secret) != SECRET_BYTES:
        raise _Fault(
            "secret unsafe",
            f"the cache secret {os.path.join(where, SECRET_NAME)} is not {SECRET_BYTES} bytes long",
        )
    return secret


def _create_secret(dir_fd: int) -> None:
    """Write a new secret under a temporary name and link it into place: a process racing
    this one either links first (and both read its secret) or finds it there."""
    temporary = f".{SECRET_NAME}-{os.getpid()}-{os.urandom(8).hex()}"
    fd = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dir_fd
    )
    try:
        try:
            os.write(fd, os.urandom(SECRET_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(
                temporary, SECRET_NAME, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False
            )
        except FileExistsError:
            pass
    finally:
        os.unlink(temporary, dir_fd=dir_fd)


# --- entries ----------------------------------------------------------------------------------


def _file_name(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest() + ".json"


def _mac(payload: dict) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hmac.new(_secret, text.encode(), hashlib.sha256).hexdigest()


_FIELDS = {"format", "key", "source", "saved", "names", "control_flow"}


def _well_formed(entry) -> bool:
    return (
        isinstance(entry, dict)
        and set(entry) == _FIELDS | {"mac"}
        and entry["format"] == FORMAT
        and isinstance(entry["key"], str)
        and isinstance(entry["source"], str)
        and isinstance(entry["mac"], str)
        and isinstance(entry["control_flow"], bool)
        and isinstance(entry["saved"], list)
        and all(isinstance(s, dict) for s in entry["saved"])
        and isinstance(entry["names"], list)
        and entry["names"]
        and all(isinstance(n, str) and n.isidentifier() for n in entry["names"])
    )


def load(key: str) -> Entry | None:
    """The cached entry for `key`, or None (absent, unreadable, malformed or not made with
    this user's secret: never executed)."""
    if directory() is None:
        return None
    try:
        fd = os.open(_file_name(key), os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=_dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a symlinked entry (ELOOP), no permission
        _warn("entry open", f"cannot open an entry in {_directory} ({exc})")
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
            _warn("entry bad", f"an entry in {_directory} is not a regular file of a sane size")
            return None
        data = b""
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_ENTRY_BYTES:
                return None
    except OSError as exc:
        _warn("entry open", f"cannot read an entry in {_directory} ({exc})")
        return None
    finally:
        os.close(fd)
    try:
        entry = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        entry = None
    if not _well_formed(entry):
        _warn("entry bad", f"ignored a malformed entry in {_directory}")
        return None
    mac = entry.pop("mac")
    if not hmac.compare_digest(mac, _mac(entry)):
        _warn(
            "entry forged",
            f"ignored an entry in {_directory} that was not written with "
            "this user's cache secret (tampered with, or from another key)",
        )
        return None
    if entry["key"] != key:
        return None
    return Entry(entry["source"], entry["saved"], entry["names"], entry["control_flow"])


def store(key: str, source: str, saved, names, control_flow: bool) -> None:
    """Write the entry atomically: O_EXCL 0600 temporary file, renamed into place."""
    if directory() is None:
        return
    payload = {
        "format": FORMAT,
        "key": key,
        "source": source,
        "saved": saved,
        "names": list(names),
        "control_flow": bool(control_flow),
    }
    payload = json.loads(json.dumps(payload, default=_plain))  # as a reader will see it
    payload["mac"] = _mac(payload)
    data = json.dumps(payload, sort_keys=True).encode()
    temporary = f".entry-{os.getpid()}-{os.urandom(8).hex()}.tmp"
    try:
        fd = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
            0o600,
            dir_fd=_dir_fd,
        )
    except OSError as exc:
        _warn("write", f"cannot write to {_directory} ({exc})")
        return
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        # (rename replaces a symlink planted at the name; it never writes through it)
        os.rename(temporary, _file_name(key), src_dir_fd=_dir_fd, dst_dir_fd=_dir_fd)
    except OSError as exc:
        _warn("write", f"cannot write to {_directory} ({exc})")
        try:
            os.unlink(temporary, dir_fd=_dir_fd)
        except OSError:
            pass


def write_private_file(subdirectory: str, name: str, text: str) -> str | None:
    """The path of file `name` holding `text` in the private directory `subdirectory` of the
    cache directory (created 0700; refused, as the cache directory is, when a symlink, not
    the user's or accessible to others), written there if it is not already; None (with a
    `CacheWarning`) when the cache is off or it cannot be done safely.

    For a consumer that must read a real file and trusts what it finds next to it (numba's
    cache of machine code, which it unpickles): only this user can write in a private
    directory, so nobody else can plant what it reads. A file already holding `text` is left
    as it is (its mtime is that consumer's key); any other is replaced atomically."""
    if directory() is None:
        return None
    path = os.path.join(_directory, subdirectory)
    data = text.encode()
    try:
        sub_fd = _open_own_directory(path, "private cache directory", private=True)
    except _Fault as fault:
        _warn(fault.cause, str(fault))
        return None
    try:
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=sub_fd)
        except FileNotFoundError:
            fd = None
        if fd is not None:
            try:
                same = stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(data) + 1) == data
            finally:
                os.close(fd)
            if same:
                return os.path.join(path, name)
        temporary = f".{name}-{os.getpid()}-{os.urandom(8).hex()}.tmp"
        fd = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
            0o600,
            dir_fd=sub_fd,
        )
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.rename(temporary, name, src_dir_fd=sub_fd, dst_dir_fd=sub_fd)
        return os.path.join(path, name)
    except OSError as exc:
        _warn("write", f"cannot write to {path} ({exc})")
        return None
    finally:
        os.close(sub_fd)


def _plain(value):
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()  # a numpy integer or float
    return str(value)
