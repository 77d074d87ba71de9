"""`backends.cpu`: the CPU capability torch reports (numpy's kernels pick their own)."""

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """'DEFAULT': sourcegrad dispatches to no capability-specific kernels of its own."""
    return "DEFAULT"
