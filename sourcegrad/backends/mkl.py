"""`backends.mkl`: whether numpy's BLAS is MKL does not change sourcegrad: answered False."""

__all__ = ["is_available"]


def is_available() -> bool:
    return False
