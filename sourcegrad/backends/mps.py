"""`backends.mps`: Apple's Metal backend, which sourcegrad does not have."""

__all__ = ["is_available", "is_built", "is_macos_or_newer"]


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    return False
