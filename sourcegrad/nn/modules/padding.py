"""Padding modules (ZeroPad, ConstantPad, ReflectionPad, ReplicationPad, CircularPad; 1d and
2d): F.pad with a fixed padding, printed as torch prints them."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = [
    "ZeroPad1d",
    "ZeroPad2d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "CircularPad1d",
    "CircularPad2d",
]


def _widths(padding, n):
    """An int pads every side; else the tuple as given (torch's _pair / _quadruple)."""
    if isinstance(padding, int):
        return (padding,) * n
    return tuple(padding)


class _PadNd(Module):
    __constants__ = ["padding"]
    _mode = "constant"
    _sides = 2
    _input_dims = None  # the circular ones check the input's dims first, as torch's do

    def __init__(self, padding):
        super().__init__()
        self.padding = _widths(padding, self._sides)

    def forward(self, input):
        if self._input_dims and input.dim() not in self._input_dims:
            a, b = self._input_dims
            raise ValueError(f"expected {a}D or {b}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    __constants__ = ["padding", "value"]

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    pass


class ConstantPad2d(_ConstantPadNd):
    _sides = 4


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    _mode = "reflect"


class ReflectionPad2d(_PadNd):
    _mode = "reflect"
    _sides = 4


class ReplicationPad1d(_PadNd):
    _mode = "replicate"


class ReplicationPad2d(_PadNd):
    _mode = "replicate"
    _sides = 4


class CircularPad1d(_PadNd):
    _mode = "circular"
    _input_dims = (2, 3)


class CircularPad2d(_PadNd):
    _mode = "circular"
    _sides = 4
    _input_dims = (3, 4)
