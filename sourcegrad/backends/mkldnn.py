"""`backends.mkldnn` (oneDNN), which sourcegrad does not use."""

__all__ = ["is_available"]

enabled = False


def is_available() -> bool:
    return False
