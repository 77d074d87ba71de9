"""RNN, LSTM and GRU (stacked, bidirectional) and their cells, as torch.nn has them.

The modules take torch's constructor arguments, name and order their parameters as
torch does (`weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0`, `bias_hh_l0`, `weight_hr_l0`
for LSTM projections, `..._reverse` for the second direction), initialise them
uniformly in +-1/sqrt(hidden_size), and return torch's outputs: `(output, h_n)`, or
`(output, (h_n, c_n))` for LSTM. Inputs are (L, N, H_in), (N, L, H_in) with
`batch_first`, or unbatched (L, H_in); the initial state defaults to zeros.

The recurrences are written with the eager tensor ops, so gradients flow through
the ordinary nodes (torch's fused `_VF` kernels have internal node names). Each
layer and direction projects the whole input sequence at once (one matmul), then
steps through time with the hidden-to-hidden product; the gate formulas follow
ATen's cells (`(h - n) * z + n` for GRU). Dropout is applied to each layer's
output except the last, in training mode only.

A PackedSequence input (nn/utils/rnn.py) runs the same cell steps on its time-major `data`:
at step t only the first batch_sizes[t] (longest) sequences advance, the others keep their
state, so each sequence's h_n is its state after its own last step (its first, in the
reverse direction, which starts each sequence from h0 at its own last step). hx is given and
h_n returned in the caller's batch order (permuted by sorted_indices / unsorted_indices), the
output is a PackedSequence with the input's batch_sizes and indices, as torch's.

Why one module: as torch's `rnn.py`, RNN, LSTM and GRU (and their cells) share one base
(`RNNBase`: parameter names, layers, directions, batch_first) and differ only in the cell
step.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ...eager import factories, shape_ops, tensor_math
from ...eager.dual_state import DUAL
from ...eager.grad_mode import STATE
from ...eager.operands import needs_grad
from ...eager.spec import OpSpec, record
from ...eager.tensor import Tensor
from ...ops import nn as _kernels
from .. import composites, init
from .. import functional as F
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# --- one step of each cell, given the input's projection gi = x W_ih^T + b_ih -----------------


def _rnn_step(act, gi, h, w_hh, b_hh):
    return act(gi + F.linear(h, w_hh, b_hh))


def _lstm_step(gi, h, c, w_hh, b_hh, w_hr=None):
    gates = F.linear(h, w_hh, b_hh) + gi
    i, f, g, o = shape_ops.chunk(gates, 4, 1)
    h, c = composites.lstm_cell(i, f, g, o, c, tensor_math.sigmoid, tensor_math.tanh)
    return (h if w_hr is None else F.linear(h, w_hr)), c


def _gru_step(gi, h, w_hh, b_hh):
    i_r, i_z, i_n = shape_ops.chunk(gi, 3, 1)
    h_r, h_z, h_n = shape_ops.chunk(F.linear(h, w_hh, b_hh), 3, 1)
    return composites.gru_cell(
        i_r, i_z, i_n, h_r, h_z, h_n, h, tensor_math.sigmoid, tensor_math.tanh
    )


def _activation(mode):
    return tensor_math.relu if mode == "RNN_RELU" else tensor_math.tanh


# torch runs a float32 LSTM layer as one op on CPU (mkldnn_rnn_layer), one node per layer and
# direction; so does this, with the registry's lstm_layer (its VJP backpropagates through time)
LSTM_LAYER = OpSpec("MkldnnRnnLayerBackward0", "lstm_layer", n_arrays=7, multi_output=True)


def _fused_lstm(x, h, c, weights, reverse):
    """(outputs, h_n, c_n) of an LSTM layer as one node, or None where the step-by-step ops
    are needed (no biases, a projection, another dtype than float32 as torch, forward AD,
    a GPU array)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    args = (x, h, c, w_ih, w_hh, b_ih, b_hh)
    if (
        w_hr is not None
        or b_ih is None
        or DUAL.on
        or any(not isinstance(a, Tensor) or type(a._data) is not np.ndarray for a in args)
        or any(a._data.dtype != np.float32 for a in args)
    ):
        return None
    outs = [Tensor._make(d) for d in _kernels.lstm_layer(*(a._data for a in args), reverse)]
    if STATE.enabled and needs_grad(*args):
        record(LSTM_LAYER, None, args, {"reverse": reverse}, outputs=outs)
    return outs


def _run_direction(mode, x, h, c, weights, reverse):
    """One layer in one direction over x (L, N, I): (outputs (L, N, H), h_n, c_n)."""
    if mode == "LSTM":
        fused = _fused_lstm(x, h, c, weights, reverse)
        if fused is not None:
            return fused
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    projected = F.linear(x, w_ih, b_ih)
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    outputs = [None] * x.shape[0]
    for t in steps:
        gi = projected[t]
        if mode == "LSTM":
            h, c = _lstm_step(gi, h, c, w_hh, b_hh, w_hr)
        elif mode == "GRU":
            h = _gru_step(gi, h, w_hh, b_hh)
        else:
            h = _rnn_step(_activation(mode), gi, h, w_hh, b_hh)
        outputs[t] = h
    return shape_ops.stack(outputs), h, c


def _cell_step(mode, gi, h, c, weights):
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    if mode == "LSTM":
        return _lstm_step(gi, h, c, w_hh, b_hh, w_hr)
    if mode == "GRU":
        return _gru_step(gi, h, w_hh, b_hh), None
    return _rnn_step(_activation(mode), gi, h, w_hh, b_hh), None


def _run_direction_packed(mode, data, batch_sizes, h, c, weights, reverse):
    """One layer in one direction over a packed sequence's data (sum(batch_sizes), I):
    (packed outputs, h_n, c_n); at step t only the first batch_sizes[t] rows advance."""
    projected = F.linear(data, weights[0], weights[2])
    starts = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]])
    steps = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
    outputs = [None] * len(batch_sizes)
    batch = h.shape[0]
    for t in steps:
        n, start = int(batch_sizes[t]), int(starts[t])
        step_h, step_c = _cell_step(
            mode, projected[start : start + n], h[:n], None if c is None else c[:n], weights
        )
        outputs[t] = step_h
        h = step_h if n == batch else shape_ops.cat([step_h, h[n:]], 0)
        if c is not None:
            c = step_c if n == batch else shape_ops.cat([step_c, c[n:]], 0)
    return shape_ops.cat(outputs, 0), h, c


# --- the layers ------------------------------------------------------------------------------


class RNNBase(Module):
    """The stacked, optionally bidirectional recurrence shared by RNN, LSTM and GRU."""

    __constants__ = [
        "mode",
        "input_size",
        "hidden_size",
        "num_layers",
        "bias",
        "batch_first",
        "dropout",
        "bidirectional",
        "proj_size",
    ]

    def __init__(
        self,
        mode,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        proj_size=0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        _check_options(
            mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size
        )
        num_directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
            for direction in range(num_directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [
                    ("weight_ih", (gate_size, layer_input_size)),
                    ("weight_hh", (gate_size, real_hidden_size)),
                ]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for kind, shape in shapes:
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(
                        self, name, Parameter(factories.empty(shape, device=device, dtype=dtype))
                    )
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op: the weights are used as they are (torch packs them for cuDNN)."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # -- forward --

    def _weights(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""

        def get(kind):
            return getattr(self, f"{kind}_l{layer}{suffix}", None)

        return (
            get("weight_ih"),
            get("weight_hh"),
            get("bias_ih"),
            get("bias_hh"),
            get("weight_hr"),
        )

    def _check_input(self, input):
        weight_dtype = self.weight_ih_l0.dtype
        if input.dtype != weight_dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype "
                f"({weight_dtype}). Convert input: input.to({weight_dtype}), or "
                f"convert model: model.to({input.dtype})"
            )
        if self.input_size != input.size(-1):
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.size(-1)}"
            )

    def _expected_size(self, input, size):
        mini_batch = input.size(0) if self.batch_first else input.size(1)
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch, size)

    @staticmethod
    def _check_hidden(hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != expected:
            raise RuntimeError(msg.format(expected, list(hx.size())))

    def _zeros(self, input, size):
        return factories.zeros(
            self._expected_size(input, size), dtype=input.dtype, device=input.device
        )

    def _run(self, input, h0, c0=None, batch_sizes=None):
        """The stacked recurrence on a batched input, or on a packed sequence's data with
        its batch_sizes: (output, h_n, c_n or None)."""
        packed = batch_sizes is not None
        x = input.transpose(0, 1) if self.batch_first and not packed else input
        num_directions = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                state = (h0[k], None if c0 is None else c0[k], self._weights(layer, direction))
                if packed:
                    out, h, c = _run_direction_packed(
                        self.mode, x, batch_sizes, *state, direction == 1
                    )
                else:
                    out, h, c = _run_direction(self.mode, x, *state, direction == 1)
                outputs.append(out)
                h_n.append(h)
                c_n.append(c)
            x = outputs[0] if num_directions == 1 else shape_ops.cat(outputs, x.dim() - 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        output = x.transpose(0, 1) if self.batch_first and not packed else x
        return output, shape_ops.stack(h_n), None if c0 is None else shape_ops.stack(c_n)

    def _run_packed(self, packed, hx, size, c_size=None):
        """forward on a PackedSequence: (output PackedSequence, h_n, c_n or None), hx (h0,
        c0) and the states in the caller's batch order."""
        data, batch_sizes = packed.data, np.asarray(packed.batch_sizes.numpy(), dtype=np.int64)
        self._check_input(data)
        expected = (self.num_layers * (2 if self.bidirectional else 1), int(batch_sizes[0]))
        states = []
        for i, (h, width) in enumerate(zip(hx, (size, c_size))):
            if width is None:
                states.append(None)
            elif h is None:
                states.append(factories.zeros(expected + (width,), dtype=data.dtype))
            else:
                what = "hidden" if c_size is None else f"hidden[{i}]"
                self._check_hidden(h, expected + (width,), f"Expected {what} size {{}}, got {{}}")
                if packed.sorted_indices is not None:
                    h = h.index_select(1, packed.sorted_indices)
                states.append(h)
        output, h_n, c_n = self._run(data, states[0], states[1], batch_sizes)
        if packed.unsorted_indices is not None:
            h_n = h_n.index_select(1, packed.unsorted_indices)
            c_n = None if c_n is None else c_n.index_select(1, packed.unsorted_indices)
        out = type(packed)(
            output, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices
        )
        return out, h_n, c_n

    def _batched(self, input, name):
        """input with a batch dim (and hx with one), and whether it had one."""
        if input.dim() not in (2, 3):
            tensor = " tensor" if name == "RNN" else ""
            raise ValueError(
                f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tensor} instead"
            )
        is_batched = input.dim() == 3
        if not is_batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        return input, is_batched

    def _unbatch(self, output, is_batched):
        return output if is_batched else output.squeeze(0 if self.batch_first else 1)


def _check_options(
    mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size
):
    """torch's checks of RNNBase's arguments, in torch's order, with its messages."""
    if (
        not isinstance(dropout, numbers.Number)
        or not 0 <= dropout <= 1
        or isinstance(dropout, bool)
    ):
        raise ValueError(
            "dropout should be a number in range [0, 1] representing the "
            "probability of an element being zeroed"
        )
    if dropout > 0 and num_layers == 1:
        warnings.warn(
            "dropout option adds dropout after all but last recurrent layer, so "
            "non-zero dropout expects num_layers greater than 1, but got "
            f"dropout={dropout} and num_layers={num_layers}",
            stacklevel=4,
        )
    if not isinstance(bias, bool):
        raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
    if not isinstance(batch_first, bool):
        raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
    if not isinstance(input_size, int):
        raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")
    if mode not in _GATES:
        raise ValueError("Unrecognized RNN mode: " + mode)


class RNN(RNNBase):
    """Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act tanh or relu."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return _forward_single_state(self, input, hx, "RNN")


class GRU(RNNBase):
    """Gated recurrent unit (reset, update and new gates, in torch's order r, z, n)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return _forward_single_state(self, input, hx, "GRU")


def _forward_single_state(module, input, hx, name):
    """RNN's and GRU's forward: (output, h_n)."""
    if isinstance(input, PackedSequence):
        output, h_n, _ = module._run_packed(input, (hx, None), module.hidden_size)
        return output, h_n
    input, is_batched = module._batched(input, name)
    if hx is not None:
        if is_batched and hx.dim() != 3:
            raise RuntimeError(
                f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor"
            )
        if not is_batched:
            if hx.dim() != 2:
                raise RuntimeError(
                    f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor"
                )
            hx = hx.unsqueeze(1)
    else:
        hx = module._zeros(input, module.hidden_size)
    module._check_input(input)
    module._check_hidden(hx, module._expected_size(input, module.hidden_size))
    output, h_n, _ = module._run(input, hx)
    return module._unbatch(output, is_batched), h_n if is_batched else h_n.squeeze(1)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o in torch's order), with optional projections."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if isinstance(input, PackedSequence):
            output, h_n, c_n = self._run_packed(
                input, (None, None) if hx is None else hx, real_hidden_size, self.hidden_size
            )
            return output, (h_n, c_n)
        input, is_batched = self._batched(input, "LSTM")
        if hx is None:
            hx = (self._zeros(input, real_hidden_size), self._zeros(input, self.hidden_size))
        else:
            want = 3 if is_batched else 2
            if hx[0].dim() != want or hx[1].dim() != want:
                kind = "batched 3-D" if is_batched else "unbatched 2-D"
                raise RuntimeError(
                    f"For {kind} input, hx and cx should also be {want}-D but "
                    f"got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors"
                )
            if not is_batched:
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self._check_input(input)
        self._check_hidden(
            hx[0],
            self._expected_size(input, real_hidden_size),
            "Expected hidden[0] size {}, got {}",
        )
        self._check_hidden(
            hx[1],
            self._expected_size(input, self.hidden_size),
            "Expected hidden[1] size {}, got {}",
        )
        output, h_n, c_n = self._run(input, hx[0], hx[1])
        if not is_batched:
            return self._unbatch(output, False), (h_n.squeeze(1), c_n.squeeze(1))
        return output, (h_n, c_n)


# --- the cells -------------------------------------------------------------------------------


class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(
            factories.empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype)
        )
        self.weight_hh = Parameter(
            factories.empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype)
        )
        if bias:
            self.bias_ih = Parameter(
                factories.empty(num_chunks * hidden_size, device=device, dtype=dtype)
            )
            self.bias_hh = Parameter(
                factories.empty(num_chunks * hidden_size, device=device, dtype=dtype)
            )
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, input, hx, name, what="hidden"):
        """(input with a batch dim, hx likewise or zeros, whether input had one)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            return (
                input,
                factories.zeros(
                    (input.size(0), self.hidden_size), dtype=input.dtype, device=input.device
                ),
                is_batched,
            )
        if hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {hx.dim()}D instead")
        return input, hx if is_batched else hx.unsqueeze(0), is_batched


class RNNCell(RNNCellBase):
    def __init__(
        self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, hx, is_batched = self._prepare(input, hx, "RNNCell")
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        act = tensor_math.tanh if self.nonlinearity == "tanh" else tensor_math.relu
        h = _rnn_step(
            act, F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh, self.bias_hh
        )
        return h if is_batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(
                        f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead"
                    )
        input, h0, is_batched = self._prepare(input, None if hx is None else hx[0], "LSTMCell")
        c0 = h0 if hx is None else (hx[1] if is_batched else hx[1].unsqueeze(0))
        h, c = _lstm_step(
            F.linear(input, self.weight_ih, self.bias_ih), h0, c0, self.weight_hh, self.bias_hh
        )
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, hx, is_batched = self._prepare(input, hx, "GRUCell")
        h = _gru_step(
            F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh, self.bias_hh
        )
        return h if is_batched else h.squeeze(0)
