"""Conv1d/2d/3d and ConvTranspose1d/2d/3d, initialised and printed as torch's.

Parameters: `weight` (out, in / groups, *kernel), or (in, out / groups, *kernel) for the
transposed ones, and `bias` (out,); weight ~ kaiming_uniform_(a=sqrt(5)), bias ~
U(-1/sqrt(fan_in), 1/sqrt(fan_in)). padding_mode 'reflect', 'replicate' and 'circular'
pad with F.pad first, as torch does.
"""

from __future__ import annotations

import math

from ...eager import factories
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _ntuple(value, n):
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,) * n


class _ConvNd(Module):
    __constants__ = [
        "stride",
        "padding",
        "dilation",
        "groups",
        "padding_mode",
        "output_padding",
        "in_channels",
        "out_channels",
        "kernel_size",
    ]
    _nd = 2

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        bias,
        padding_mode,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}"
                )
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(
                f"padding_mode must be one of {valid_padding_modes}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's widths for the non-zeros padding modes: last dim first
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    self._reversed_padding_repeated_twice[2 * i] = total // 2
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - total // 2
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(padding) for _ in range(2)]
        shape = (
            (in_channels, out_channels // groups)
            if transposed
            else (out_channels, in_channels // groups)
        ) + tuple(kernel_size)
        self.weight = Parameter(factories.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(factories.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.weight.shape[2:])
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class _Conv(_ConvNd):
    _function = None

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        n = self._nd
        super().__init__(
            in_channels,
            out_channels,
            _ntuple(kernel_size, n),
            _ntuple(stride, n),
            padding if isinstance(padding, str) else _ntuple(padding, n),
            _ntuple(dilation, n),
            False,
            _ntuple(0, n),
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _conv_forward(self, input, weight, bias):
        conv = type(self)._function
        if self.padding_mode != "zeros":
            return conv(
                F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                weight,
                bias,
                self.stride,
                _ntuple(0, self._nd),
                self.dilation,
                self.groups,
            )
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    _nd = 1
    _function = staticmethod(F.conv1d)


class Conv2d(_Conv):
    _nd = 2
    _function = staticmethod(F.conv2d)


class Conv3d(_Conv):
    _nd = 3
    _function = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _function = None

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {self.__class__.__name__}'
            )
        n = self._nd
        super().__init__(
            in_channels,
            out_channels,
            _ntuple(kernel_size, n),
            _ntuple(stride, n),
            _ntuple(padding, n),
            _ntuple(dilation, n),
            True,
            _ntuple(output_padding, n),
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._nd
        non_spatial = 2 if input.dim() == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.dim()}D input, output_size must "
                f"have {n} or {non_spatial + n} elements (got {len(output_size)})"
            )
        min_sizes, max_sizes = [], []
        for d in range(n):
            size = (
                (input.size(d + non_spatial) - 1) * self.stride[d]
                - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1)
                + 1
            )
            min_sizes.append(size)
            max_sizes.append(size + self.stride[d] - 1)
        for d in range(n):
            if not min_sizes[d] <= output_size[d] <= max_sizes[d]:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes "
                    f"range from {min_sizes} to {max_sizes} (for an input of "
                    f"{input.size()[non_spatial:]})"
                )
        return tuple(output_size[d] - min_sizes[d] for d in range(n))

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return type(self)._function(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTranspose):
    _nd = 1
    _function = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    _nd = 2
    _function = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    _nd = 3
    _function = staticmethod(F.conv_transpose3d)
