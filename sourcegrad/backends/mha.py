"""`backends.mha`: the switch of torch's fused inference path for MultiheadAttention and the
Transformer encoder (sourcegrad computes the same values on its one path; the encoder reads
the switch to decide, as torch does, whether padded positions come out as zeros)."""

__all__ = ["get_fastpath_enabled", "set_fastpath_enabled"]

_ENABLED = [True]


def get_fastpath_enabled() -> bool:
    return _ENABLED[0]


def set_fastpath_enabled(value: bool) -> None:
    _ENABLED[0] = bool(value)
