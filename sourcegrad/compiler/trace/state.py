"""Which trace is running in this thread: `active()` gives its recorder (or None), `enter` and
`leave` set it. Its own module so that the recorder and the patches it installs both read it
without importing each other both ways."""

from __future__ import annotations

import threading

_ACTIVE = threading.local()  # .recorder: the trace running in this thread, if any


def active():
    """The recorder of the trace running in this thread, or None."""
    return getattr(_ACTIVE, "recorder", None)


def enter(recorder) -> None:
    _ACTIVE.recorder = recorder


def leave() -> None:
    _ACTIVE.recorder = None
