"""Grad modes: `no_grad`, `enable_grad`, `set_grad_enabled`, `inference_mode`.

The state is thread-local, as in torch: a `no_grad` block in one thread does not
stop another thread from recording. Every op reads `STATE.enabled` once, so it
is a plain attribute of a `threading.local` subclass whose defaults are set per
thread by `__init__`.

Each mode works three ways, like torch's:

* as a context manager: `with no_grad(): ...`;
* as a decorator, with or without parentheses (`@no_grad()` and `@no_grad`),
  generator functions included (the mode holds while the generator runs, and is
  restored around each `yield`);
* `set_grad_enabled(False)` also acts at once when called, so a plain call
  changes the mode for the rest of the thread.

`inference_mode` additionally marks tensors created inside it as inference
tensors (see `Tensor.is_inference`).

Imports: nothing of sourcegrad (a leaf of the eager package).
"""

from __future__ import annotations

import functools
import inspect
import threading

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
]


class _State(threading.local):
    """Per-thread flags: is the graph being recorded, is inference mode on, does the
    backward running keep the graph."""

    def __init__(self):
        self.enabled = True
        self.inference = False
        # inside a backward: whether it keeps the graph (a node may then free what it
        # saved as its backward goes, not only after: engine.run sets it)
        self.retain_graph = True


STATE = _State()


def is_grad_enabled() -> bool:
    """True when ops record a graph (outside `no_grad` and `inference_mode`)."""
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _Mode:
    """Base of the mode objects: context manager plus decorator.

    Subclasses say in `_enter` what to change; `_exit` restores what `_enter` saved.
    """

    def __init__(self):
        self._saved = []

    def __enter__(self):
        self._saved.append((STATE.enabled, STATE.inference))
        self._enter()
        return None

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference = self._saved.pop()
        return False

    def _enter(self):
        raise NotImplementedError

    def clone(self):
        return type(self)()

    def __call__(self, fn):
        # `@no_grad` without parentheses hands us the function to wrap ...
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            # ... and a fresh mode object per call keeps recursion and threads independent
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            mode = self.clone()
            try:
                with mode:
                    request = next(gen)
                while True:
                    try:
                        sent = yield request
                    except GeneratorExit:
                        with mode:
                            gen.close()
                        raise
                    except BaseException as exc:  # noqa: BLE001 - forwarded into the generator
                        with mode:
                            request = gen.throw(exc)
                    else:
                        with mode:
                            request = gen.send(sent)
            except StopIteration as stop:
                return stop.value

        return wrapper


class _ModeMeta(type):
    """Lets `@no_grad` (no parentheses) decorate: calling the class with a function wraps it."""

    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]) and cls._bare_decorator:
            return type.__call__(cls)(args[0])
        return type.__call__(cls, *args, **kwargs)


class no_grad(_Mode, metaclass=_ModeMeta):
    """Ops inside record no graph; their results are leaves with requires_grad=False."""

    _bare_decorator = True

    def _enter(self):
        STATE.enabled = False


class enable_grad(_Mode, metaclass=_ModeMeta):
    """Turn recording back on inside a `no_grad` block."""

    _bare_decorator = True

    def _enter(self):
        STATE.enabled = True


class set_grad_enabled(_Mode, metaclass=_ModeMeta):
    """`set_grad_enabled(mode)`: acts as soon as it is called, and undoes it when a block ends."""

    _bare_decorator = False

    def __init__(self, mode: bool):
        super().__init__()
        self.mode = bool(mode)
        self._prev = STATE.enabled
        STATE.enabled = self.mode  # a plain call changes the mode for good

    def __enter__(self):
        # the constructor already switched; restore what was there before it
        self._saved.append((self._prev, STATE.inference))
        STATE.enabled = self.mode

    def _enter(self):
        STATE.enabled = self.mode

    def clone(self):
        prev = STATE.enabled
        new = set_grad_enabled(self.mode)
        STATE.enabled = prev  # cloning for a decorator call must not switch the mode now
        new._prev = prev
        return new

    def __call__(self, fn):
        # used as a decorator: the constructor's switch was for the decoration only
        STATE.enabled = self._prev
        return super().__call__(fn)


class inference_mode(_Mode, metaclass=_ModeMeta):
    """No recording, and tensors made inside are inference tensors.

    `inference_mode(False)` turns inference mode off and grad mode on, as torch's
    guard does even inside `no_grad`.
    """

    _bare_decorator = True

    def __init__(self, mode: bool = True):
        super().__init__()
        self.mode = bool(mode)

    def _enter(self):
        STATE.inference = self.mode
        STATE.enabled = not self.mode

    def clone(self):
        return inference_mode(self.mode)
