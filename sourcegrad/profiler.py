"""`sourcegrad.profiler`: torch.profiler's `profile`, `schedule`, `record_function`,
`ProfilerActivity` and `tensorboard_trace_handler`, built on `autograd.profiler`.

`with profile(activities=[ProfilerActivity.CPU], schedule=..., on_trace_ready=...) as prof:`
times the `record_function(name)` ranges the program enters, and, as torch's, one
`ProfilerStep#N` range per `prof.step()` under a schedule. Without a schedule everything inside the block
is recorded; with one (`schedule(wait=, warmup=, active=, repeat=, skip_first=)`, torch's
step arithmetic) only the RECORD steps are, and each cycle's trace is handed to
`on_trace_ready(prof)` at its last active step (and on exit if the block ends inside a
cycle). `prof.key_averages().table(sort_by="cpu_time_total")` gives the measured wall
times of those ranges. sourcegrad records no per-operator events (torch's `aten::*`
rows), no CUDA activity (accepted, nothing to record) and no memory: `record_shapes`,
`profile_memory`, `with_stack`, `with_flops`, `with_modules` are accepted and ignored.
`tensorboard_trace_handler(dir)` writes each trace as a chrome-trace JSON file there.
"""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings

from .autograd import profiler as _autograd_profiler
from .autograd.profiler import EventList, record_function
from .errors import UnsupportedAPIError

__all__ = [
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """The step -> ProfilerAction function of torch.profiler.schedule (same arithmetic)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0)."
        )
    if warmup == 0:
        warnings.warn(
            "Profiler won't be using warmup, this can skew profiler results", stacklevel=2
        )

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _record_always(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """An on_trace_ready handler writing `<dir>/<worker>.<ms>.pt.trace.json` (chrome trace)."""
    if use_gzip:
        raise UnsupportedAPIError("tensorboard_trace_handler(use_gzip=True) is not supported")

    def handler_fn(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler_fn


class profile:
    """torch.profiler.profile (see the module doc): a context manager, or start()/stop()."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None,
                 post_processing_timeout_s=None):  # fmt: skip
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule if schedule is not None else _record_always
        self.record_steps = schedule is not None  # torch marks steps only under a schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.step_num = 0
        self._recording = None  # the autograd profiler of the cycle being recorded
        self._finished = None  # the last cycle's, once it is over
        self._step_range = None

    # --- the recording of one cycle -----------------------------------------------------------

    def _action(self):
        return self.schedule(self.step_num)

    def _begin_recording(self):
        self._recording = _autograd_profiler.profile()
        self._recording.__enter__()

    def _end_recording(self, hand_over: bool):
        recording, self._recording = self._recording, None
        recording.__exit__(None, None, None)
        self._finished = recording
        if hand_over and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _enter_step_range(self):
        if self._recording is not None and self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _exit_step_range(self):
        step_range, self._step_range = self._step_range, None
        if step_range is not None:
            step_range.__exit__(None, None, None)

    def start(self):
        if self._action() in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._begin_recording()
        self._enter_step_range()

    def stop(self):
        self._exit_step_range()
        if self._recording is not None:
            self._end_recording(hand_over=True)

    def step(self):
        """Mark the end of a training step: move along the schedule."""
        self._exit_step_range()
        before = self._action()
        self.step_num += 1
        after = self._action()
        recording_after = after in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if self._recording is not None and (
            before is ProfilerAction.RECORD_AND_SAVE or not recording_after
        ):
            self._end_recording(hand_over=True)
        if self._recording is None and recording_after:
            self._begin_recording()
        self._enter_step_range()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.stop()
        return False

    # --- the results ---------------------------------------------------------------------------

    def _results(self):
        source = self._recording if self._recording is not None else self._finished
        if source is None:
            raise RuntimeError("Profiler didn't finish running")
        return source

    def events(self) -> EventList:
        events = self._results().function_events
        for event in events:
            if event.name.startswith("ProfilerStep#"):
                event.key = "ProfilerStep*"  # torch's key_averages counts the steps together
        return events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, **kwargs):
        return self.events().key_averages()

    def export_chrome_trace(self, path):
        return self._results().export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        raise UnsupportedAPIError(
            "profile.export_stacks: sourcegrad's profiler records no stacks (with_stack)"
        )

    def export_memory_timeline(self, path, device=None):
        raise UnsupportedAPIError(
            "profile.export_memory_timeline: sourcegrad's profiler records no memory"
        )
