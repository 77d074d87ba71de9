"""`autograd.profiler`: `profile` and `record_function`, timing the ranges a program names.

`with profile() as prof:` collects the `record_function(name)` ranges entered inside it (as
context managers or decorators, nested or not); `prof.function_events` lists them,
`prof.key_averages()` groups them by name (count, total and self CPU time in
microseconds), `.table(sort_by=..., row_limit=...)` prints torch's table, and
`prof.export_chrome_trace(path)` writes them for chrome://tracing. sourcegrad records no
per-op events (torch's `aten::*` rows): only the ranges the program names.
"""

from __future__ import annotations

import functools
import json
import threading
import time

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


class _Active(threading.local):
    def __init__(self):
        self.profilers: list = []
        self.stack: list = []


_ACTIVE = _Active()


def _now_us() -> float:
    return time.perf_counter_ns() / 1000.0


class FunctionEvent:
    """One range: its name, start and end (microseconds), and the ranges inside it."""

    def __init__(self, name, start_us, parent=None):
        self.name = self.key = name
        self.start_us = start_us
        self.end_us = start_us
        self.cpu_parent = parent
        self.cpu_children: list = []
        self.count = 1

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    def __repr__(self):
        return (
            f"<FunctionEvent name={self.name} cpu_time_total={self.cpu_time_total:.3f}us "
            f"self_cpu_time_total={self.self_cpu_time_total:.3f}us>"
        )


class FunctionEventAvg:
    """The events of one name together (`key_averages()`)."""

    def __init__(self, key):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0

    def add(self, event):
        self.count += 1
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        return self

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
            f"cpu_time={self.cpu_time:.3f}us count={self.count}>"
        )


def _format_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class EventList(list):
    """A list of events, with torch's `table()` and `key_averages()`."""

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        groups: dict = {}
        for event in self:
            groups.setdefault(event.key, FunctionEventAvg(event.key)).add(event)
        return EventList(groups.values())

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, header=None, **kw):
        rows = list(self)
        if sort_by is not None:
            rows.sort(key=lambda e: getattr(e, sort_by, 0), reverse=True)
        rows = rows[:row_limit] if row_limit is not None and row_limit >= 0 else rows
        total = self.self_cpu_time_total or 1.0
        width = max([len("Name")] + [len(e.key) for e in rows])
        width = min(width, max_name_column_width)
        heads = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        heads.append("# of Calls")
        rule = "-" * width + "  " + "  ".join("-" * 12 for _ in heads) + "  "
        lines = [rule, f"{'Name':>{width}}  " + "".join(f"{h:>12}  " for h in heads), rule]
        for e in rows:
            count = e.count
            cells = [
                f"{100 * e.self_cpu_time_total / total:.2f}%",
                _format_us(e.self_cpu_time_total),
                f"{100 * e.cpu_time_total / total:.2f}%",
                _format_us(e.cpu_time_total),
                _format_us(e.cpu_time_total / count),
                str(count),
            ]
            lines.append(f"{e.key[:width]:>{width}}  " + "".join(f"{c:>12}  " for c in cells))
        lines += [rule, f"Self CPU time total: {_format_us(self.self_cpu_time_total)}", ""]
        return "\n".join(lines)

    def __str__(self):
        return self.table()


class profile:
    """Collect the `record_function` ranges of its block (see the module doc)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, **kwargs):  # fmt: skip
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.entered = False
        self._events = EventList()

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        _ACTIVE.profilers.append(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self.enabled and self in _ACTIVE.profilers:
            _ACTIVE.profilers.remove(self)
        return False

    def _record(self, event):
        self._events.append(event)

    @property
    def function_events(self) -> EventList:
        return EventList(sorted(self._events, key=lambda e: e.start_us))

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        return self.function_events.key_averages()

    def table(self, sort_by=None, row_limit=100, **kwargs):
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    @property
    def self_cpu_time_total(self) -> float:
        return self.function_events.self_cpu_time_total

    def total_average(self):
        total = FunctionEventAvg("Total")
        for event in self.function_events:
            total.add(event)
        return total

    def export_chrome_trace(self, path):
        trace = [
            {
                "name": e.name,
                "ph": "X",
                "ts": e.start_us,
                "dur": e.cpu_time_total,
                "pid": "CPU functions",
                "tid": 0,
                "cat": "user_annotation",
            }
            for e in self.function_events
        ]
        with open(path, "w") as f:
            json.dump({"traceEvents": trace}, f)

    def __str__(self):
        return self.table()


class record_function:
    """A named range for the enclosing profilers (context manager or decorator)."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._event = None

    def __enter__(self):
        if _ACTIVE.profilers:
            parent = _ACTIVE.stack[-1] if _ACTIVE.stack else None
            self._event = FunctionEvent(self.name, _now_us(), parent)
            if parent is not None:
                parent.cpu_children.append(self._event)
            _ACTIVE.stack.append(self._event)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        event, self._event = self._event, None
        if event is not None:
            event.end_us = _now_us()
            if _ACTIVE.stack and _ACTIVE.stack[-1] is event:
                _ACTIVE.stack.pop()
            for prof in _ACTIVE.profilers:
                prof._record(event)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapped
