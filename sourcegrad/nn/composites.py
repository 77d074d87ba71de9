"""The composites both modes compute, written once: the LSTM and GRU cells; and layer norm
as Tensor ops, which eager uses where its entry does not apply (`nn.norm_ops.layer_norm`: an
input that is not a real floating-point array of one dtype with its weight and bias).

Each is a function over arrays or Tensors whose registry ops are passed in: eager code
passes the eager ops (`ops.sigmoid`, `ops.tanh`, `ops.rsqrt`: the nodes torch records) and
`compiled.lowering` the entries' numpy functions (`sourcegrad.ops.nn.sigmoid`, `np.tanh`,
`sourcegrad.ops.nn.rsqrt`), which the compiler reads as primitives; a mean keeping the
reduced dims is each mode's spelling (`x.mean(dims, keepdim=True)`, `np.mean(x, axis=...,
keepdims=True)`). Operators, slicing and `isinstance` mean the same on both. (A Tensor also
takes numpy's functions, but through its numpy protocol, a few microseconds a call: eager's
hot paths call the ops themselves.)

The compiler reads these functions (inlined into the code of a compiled module): `x is None`
of an array is a run-time comparison to it, so a missing weight is `isinstance(w, NoneType)`.

Imports nothing.
"""

from __future__ import annotations

NoneType = type(None)


def lstm_cell(i, f, g, o, c, sigmoid, tanh):
    """ATen's LSTM cell on the gates' pre-activations (input, forget, cell, output): (h, c)."""
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    return sigmoid(o) * tanh(c), c


def gru_cell(i_r, i_z, i_n, h_r, h_z, h_n, h, sigmoid, tanh):
    """ATen's GRU cell on the input's and the state's projections (gates r, z, n): the next
    state, h' = (h - n) z + n."""
    r = sigmoid(h_r + i_r)
    z = sigmoid(h_z + i_z)
    n = tanh(i_n + h_n * r)
    return (h - n) * z + n


def layer_norm(input, axes, weight, bias, eps, mean, rsqrt):
    """(x - mean) / sqrt(var + eps) over `axes` (the biased variance), then the elementwise
    affine map where weight and bias are given. `mean(x, axes)` keeps the reduced dims.
    (No name is bound twice: a compiled module inlines this at every LayerNorm, and a
    name bound again is pushed on the generated forward's saved-values stack.)"""
    centred = input - mean(input, axes)
    normed = centred * rsqrt(mean(centred * centred, axes) + eps)
    if isinstance(weight, NoneType):
        return _plus_bias(normed, bias)
    return _plus_bias(normed * weight, bias)


def _plus_bias(x, bias):
    if isinstance(bias, NoneType):
        return x
    return x + bias
