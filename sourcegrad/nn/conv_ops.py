"""Convolutions: `conv1d`, `conv2d`, `conv3d`, `conv_transpose1d/2d/3d` (ConvolutionBackward0).

Every form is one primitive, torch's `aten::convolution(input, weight, bias, stride,
padding, dilation, transposed, output_padding, groups)`, the registry's entry
"convolution" (`ops.nn_layers`, with its VJPs: convolutions again; arrays in
`ops.nn_kernels.convolution`).

`convolution` below is its eager op, which records ConvolutionBackward0: a VJP run under
`create_graph=True` calls `ops.nn_layers.convolution` on Tensors, which dispatches here
through the Tensor's numpy protocol, so every order of derivative works (torch names the
second one ConvolutionBackwardBackward0).

The user-facing functions check their arguments as torch does and raise torch's
messages; padding='same' with an odd total pads the right end first (a
ConstantPadNdBackward0 under the convolution, as torch).

Imports: numpy, `ops` (the entry, its kernels), `pad_ops` and the eager ops; `nn.functional` re-exports
the functions.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..eager import numpy_dispatch, operands, shape_ops
from ..eager.spec import OpSpec, record
from ..eager.tensor import Tensor
from ..ops import nn_kernels as K
from ..ops import nn_layers
from .pad_ops import pad

__all__ = [
    "convolution",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
]

_wrap = Tensor._make


CONVOLUTION = OpSpec("ConvolutionBackward0", "convolution", n_arrays=3)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """aten::convolution on checked arguments (tuples): Tensors, or arrays for plain VJPs."""
    if not any(isinstance(v, Tensor) for v in (input, weight, bias)):
        return K.convolution(
            input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
        )
    input, weight = operands.as_tensor(input), operands.as_tensor(weight)
    if bias is not None:
        bias = operands.as_tensor(bias)
    out = _wrap(
        K.convolution(
            input._data,
            weight._data,
            None if bias is None else bias._data,
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
        )
    )
    if operands.needs_grad(input, weight, bias):
        record(
            CONVOLUTION,
            out,
            (input, weight, bias),
            {
                "stride": stride,
                "padding": padding,
                "dilation": dilation,
                "transposed": transposed,
                "output_padding": output_padding,
                "groups": groups,
            },
        )
    return out


# the entry's VJPs call `nn_layers.convolution`; on Tensors it is this op
numpy_dispatch.FUNCTIONS[nn_layers.convolution] = convolution


# --- argument checks (torch's messages) -------------------------------------------------------


def _tuple(value, nd, name):
    if isinstance(value, (int, np.integer)):
        return (int(value),) * nd
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * nd
    if len(value) != nd:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {nd} "
            f"values to match the convolution dimensions, but got "
            f"{name}={list(value)}"
        )
    return value


def _size(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _check(
    input,
    weight,
    bias,
    nd,
    name,
    stride,
    padding,
    dilation,
    groups,
    transposed,
    output_padding=None,
):
    """torch's checks of a convolution's arguments; returns whether the input is batched."""
    for arg, value in (("input", input), ("weight", weight)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}() argument '{arg}' must be Tensor, not {type(value).__name__}")
    x, w = input._data, weight._data
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
            f"{name}, but got input of size: {_size(x.shape)}"
        )
    if x.dtype != w.dtype:
        raise RuntimeError(
            f"expected scalar type {input.dtype._scalar_name} but found {weight.dtype._scalar_name}"
        )
    operands.same_device(input, weight, bias)
    _check_geometry(stride, padding, dilation, groups)
    if w.ndim != nd + 2:
        raise RuntimeError(
            f"Expected {nd + 2}-dimensional input for {nd + 2}-dimensional "
            f"weight {_size(w.shape)}, but got {x.ndim}-dimensional input of "
            f"size {_size(x.shape)} instead"
        )
    shape = x.shape if x.ndim == nd + 2 else (1,) + x.shape
    if transposed:
        _check_output_padding(nd, output_padding, stride, dilation)
        out_channels = _check_transposed_channels(shape, w.shape, groups)
    else:
        out_channels = _check_channels(shape, w.shape, groups, nd, padding, dilation)
    if bias is not None:
        _check_bias(bias, input, out_channels, w.shape)
    return x.ndim == nd + 2


def _check_geometry(stride, padding, dilation, groups):
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _check_output_padding(nd, output_padding, stride, dilation):
    """A transposed convolution's output_padding is smaller than its stride or dilation."""
    if output_padding is None or not any(
        op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)
    ):
        return
    names = ("height", "width") if nd == 2 else ("depth", "height", "width")[-nd:]
    if nd == 1:
        names = ("width",)
    parts = (
        " ".join(f"output_padding_{n}: {v}" for n, v in zip(names, output_padding))
        + " "
        + " ".join(f"stride_{n}: {v}" for n, v in zip(names, stride))
        + " "
        + " ".join(f"dilation_{n}: {v}" for n, v in zip(names, dilation))
    )
    raise RuntimeError(
        f"output padding must be smaller than either stride or dilation, but got {parts}"
    )


def _check_groups(w_shape, groups):
    if w_shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by "
            f"{groups} at dimension 0, but got weight of shape "
            f"{_size(w_shape)} instead"
        )


def _check_transposed_channels(shape, w_shape, groups):
    """A transposed convolution's input channels (of the batched `shape`) against its
    weight's; gives its output channels."""
    if shape[1] != w_shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {_size(w_shape)}, expected "
            f"input{_size(shape)} to have {w_shape[0]} channels, but got "
            f"{shape[1]} channels instead"
        )
    _check_groups(w_shape, groups)
    return w_shape[1] * groups


def _check_channels(shape, w_shape, groups, nd, padding, dilation):
    """A convolution's input channels and padded size (of the batched `shape`) against its
    weight's; gives its output channels."""
    _check_groups(w_shape, groups)
    if shape[1] != w_shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {_size(w_shape)}, "
            f"expected input{_size(shape)} to have {w_shape[1] * groups} "
            f"channels, but got {shape[1]} channels instead"
        )
    padded = tuple(shape[2 + i] + 2 * padding[i] for i in range(nd))
    kernel = tuple(dilation[i] * (w_shape[2 + i] - 1) + 1 for i in range(nd))
    if any(k > p for k, p in zip(kernel, padded)):
        raise RuntimeError(
            "Calculated padded input size per channel: ("
            + " x ".join(map(str, padded))
            + "). Kernel size: ("
            + " x ".join(map(str, kernel))
            + "). Kernel size can't be greater than actual input size"
        )
    return w_shape[0]


def _check_bias(bias, input, out_channels, w_shape):
    b = bias._data if isinstance(bias, Tensor) else bias
    if b.ndim != 1 or b.shape[0] != out_channels:
        raise RuntimeError(
            f"Given weight of size {_size(w_shape)}, expected bias to be "
            f"1-dimensional with {out_channels} elements, but got bias of "
            f"size {_size(b.shape)} instead"
        )
    if b.dtype != input._data.dtype:
        raise RuntimeError(
            f"expected scalar type {input.dtype._scalar_name} but found {bias.dtype._scalar_name}"
        )


def _same_padding(input, weight, nd, dilation):
    """padding='same': (input padded on the right where the total is odd, symmetric padding)."""
    kernel = weight._data.shape[2:]
    left, extra = [], []
    for i in range(nd):
        total = dilation[i] * (kernel[i] - 1)
        left.append(total // 2)
        extra.append(total - 2 * (total // 2))
    if any(extra):
        warnings.warn(
            "Using padding='same' with even kernel lengths and odd dilation may "
            "require a zero-padded copy of the input be created",
            UserWarning,
            stacklevel=4,
        )
        widths = []
        for i in reversed(range(nd)):
            widths += [0, extra[i]]
        input = pad(input, tuple(widths))
    return input, tuple(left)


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, name):
    stride = _tuple(stride, nd, "stride")
    dilation = _tuple(dilation, nd, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            _check(input, weight, bias, nd, name, stride, (0,) * nd, dilation, groups, False)
            input, padding = _same_padding(input, weight, nd, dilation)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _tuple(padding, nd, "padding")
    batched = _check(input, weight, bias, nd, name, stride, padding, dilation, groups, False)
    if not batched:
        input = shape_ops.unsqueeze(input, 0)
    out = convolution(input, weight, bias, stride, padding, dilation, False, (0,) * nd, groups)
    return out if batched else shape_ops.squeeze(out, 0)


def _conv_transpose(
    input, weight, bias, stride, padding, output_padding, groups, dilation, nd, name
):
    stride = _tuple(stride, nd, "stride")
    padding = _tuple(padding, nd, "padding")
    output_padding = _tuple(output_padding, nd, "output_padding")
    dilation = _tuple(dilation, nd, "dilation")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    batched = _check(
        input, weight, bias, nd, name, stride, padding, dilation, groups, True, output_padding
    )
    shape = input._data.shape if batched else (1,) + input._data.shape
    kernel = weight._data.shape[2:]
    out = tuple(
        (shape[2 + i] - 1) * stride[i]
        - 2 * padding[i]
        + dilation[i] * (kernel[i] - 1)
        + output_padding[i]
        + 1
        for i in range(nd)
    )
    if any(o <= 0 for o in out):
        raise RuntimeError(
            f"Given input size per channel: ({' x '.join(map(str, shape[2:]))}). "
            f"Calculated output size per channel: ({' x '.join(map(str, out))}). "
            "Output size is too small"
        )
    if not batched:
        input = shape_ops.unsqueeze(input, 0)
    y = convolution(input, weight, bias, stride, padding, dilation, True, output_padding, groups)
    return y if batched else shape_ops.squeeze(y, 0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    return _conv_transpose(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        1,
        "conv_transpose1d",
    )


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    return _conv_transpose(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        2,
        "conv_transpose2d",
    )


def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    return _conv_transpose(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        3,
        "conv_transpose3d",
    )
