"""How the benchmark prints a time and a size: takes seconds or bytes (or None), gives text.

Its own module so that the workload families (`layers`, `workloads`) and the runner that
imports them share it without importing one another back."""


def fmt_time(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1.0:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_bytes(b):
    if b is None:
        return "-"
    if b < 1024**2:
        return f"{b / 1024:.0f} KiB"
    if b < 1024**3:
        return f"{b / 1024**2:.1f} MiB"
    return f"{b / 1024**3:.2f} GiB"
