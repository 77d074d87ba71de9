"""`backends.openmp`: sourcegrad's own code runs no OpenMP threads."""

__all__ = ["is_available"]


def is_available() -> bool:
    return False
