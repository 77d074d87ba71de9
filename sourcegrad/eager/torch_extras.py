"""torch functions numpy lacks or spells otherwise, as eager ops: logcumsumexp, cummax/cummin,
aminmax, mode, quantile/nanquantile, rot90, diag_embed, Tensor.unfold, baddbmm, scatter_reduce,
heaviside_, copysign_, matrix_exp, householder_product (orgqr) and the integer helpers
bincount, searchsorted, bucketize.

Each records the registry's rules, as torch records its node: its own entry where it has one
(logcumsumexp, diag_embed, np_rot90, scipy_expm for matrix_exp), else the getitem rule of the elements it picks (cummax,
mode, unfold: each value's gradient goes to its index, summed where an index repeats, as
torch's scatter-add backward) or the ops it is made of (quantile: sort, then a linear
interpolation of two order statistics; aminmax: amin and amax; baddbmm: bmm, mul, add; householder_product: one rank-one update per reflector;
scatter_reduce: index_put, mul, div; its prod a custom node, `ScatterReduceBackward0`, whose
backward is torch's formula in eager ops, so it differentiates again). bincount, searchsorted and bucketize give integers: no
gradient. The index computations (cummax's running index, mode, quantile's ranks,
scatter_reduce's counts) run in numpy: CPU tensors.

Why one module: ~650 lines of torch's extra functions, each small, sharing the argument
checks (`_dim`) and the picking helpers.

Imports: `arithmetic`, `elementwise`, `indexing`, `inplace`, `products`, `reductions`,
`views`, `operands`, `spec`, `tensor`, `surface`, the registry's family modules and `errors`.
"""

from __future__ import annotations

import collections
import importlib

import numpy as np

from ..ops import reductions as ops_reductions
from ..ops import shape as ops_shape
from .arithmetic import add, div, mul, not_implemented_for, sub
from .elementwise import copysign, heaviside
from .factories import eye, zeros_like
from .function import Function
from .indexing import diagonal, index_array, pick, sort
from .inplace import copy_, scatter_add_
from .joining import cat
from .operands import along_index, needs_grad, result, return_types, wrap_dim
from .out_arg import write_out
from .products import bmm
from .reductions import amax, amin
from .spec import OpSpec, record
from .surface import export, implements
from .tensor import Tensor
from .views import expand_to, movedim, reshape

_wrap = Tensor._make

LOGCUMSUMEXP = OpSpec.of("logcumsumexp", n_arrays=1)
DIAG_EMBED = OpSpec.of("diag_embed", n_arrays=1)
ROT90 = OpSpec("Rot90Backward0", "np_rot90", n_arrays=1)


def _dim(dim, ndim):
    """torch's dim as a non-negative axis (a 0-d tensor takes 0 or -1)."""
    return wrap_dim(int(dim), ndim) if ndim else 0


# --- scans --------------------------------------------------------------------------------------


@implements("logcumsumexp")
def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim, without overflow; floating-point tensors only."""
    d = input._data
    if d.dtype.kind not in "fc":
        raise not_implemented_for("logcumsumexp_out_cpu", d.dtype)
    axis = _dim(dim, d.ndim)
    if d.ndim == 0:  # (the scan of one element: the rules read an axis)
        return reshape(logcumsumexp(reshape(input, (1,)), 0), ())
    out = _wrap(result(ops_reductions.logcumsumexp(d, axis)))
    if needs_grad(input):
        record(LOGCUMSUMEXP, out, (input,), {"axis": axis})
    return out


def running_index(d, axis, largest):
    """The index of the running maximum (largest) or minimum of d along axis, as torch's
    cummax/cummin give it: a tie moves it to the later element, a NaN holds it until the next
    NaN (the running value stays NaN)."""
    moved = np.moveaxis(d, axis, -1)
    index = np.zeros(moved.shape, np.int64)
    if moved.shape[-1] == 0:
        return np.moveaxis(index, -1, axis)
    floating = moved.dtype.kind in "fc"
    best = moved[..., 0]
    at = np.zeros(best.shape, np.int64)
    for i in range(moved.shape[-1]):
        v = moved[..., i]
        take = v >= best if largest else v <= best
        if floating:
            take = (take & ~np.isnan(best)) | np.isnan(v)
        best = np.where(take, v, best)
        at = np.where(take, i, at)
        index[..., i] = at
    return np.moveaxis(index, -1, axis)


def _cumulative_extreme(input, dim, largest):
    d = input._data
    name = "cummax" if largest else "cummin"
    if d.ndim == 0:
        values = pick(input, f"{name.capitalize()}Backward0", ())
        return getattr(return_types, name)(values, _wrap(np.zeros((), np.int64)))
    axis = _dim(dim, d.ndim)
    index = running_index(np.asarray(d), axis, largest)
    values = pick(input, f"{name.capitalize()}Backward0", along_index(index, axis, d.ndim))
    return getattr(return_types, name)(values, _wrap(index))


@export("cummax")
def cummax(input, dim):
    """The running maximum along dim and its index (the later one on a tie)."""
    return _cumulative_extreme(input, dim, True)


@export("cummin")
def cummin(input, dim):
    """The running minimum along dim and its index (the later one on a tie)."""
    return _cumulative_extreme(input, dim, False)


# --- reductions ---------------------------------------------------------------------------------

aminmax_result = collections.namedtuple("aminmax", ("min", "max"))


@export("aminmax")
def aminmax(input, *, dim=None, keepdim=False):
    """(amin, amax) over dim (every element for None); ties share the gradient, as torch's."""
    d = input._data
    if dim is None:
        if d.size == 0:
            raise RuntimeError(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation "
                "has no identity."
            )
        lo, hi = amin(input), amax(input)
        if keepdim:  # (every dim kept, of size 1)
            lo, hi = reshape(lo, (1,) * d.ndim), reshape(hi, (1,) * d.ndim)
        return aminmax_result(lo, hi)
    axis = _dim(dim, d.ndim)
    if d.ndim and d.shape[axis] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {axis} to have non-zero size.")
    return aminmax_result(amin(input, dim, keepdim), amax(input, dim, keepdim))


def mode_index(line):
    """For each row of a 2-d array: the index of torch's mode, the smallest of the most frequent
    values, at its last occurrence."""
    out = np.zeros(line.shape[0], np.int64)
    for r, row in enumerate(line):
        values, counts = np.unique(row, return_counts=True)
        value = values[np.argmax(counts)]  # (np.unique sorts: the first maximum is the smallest)
        same = np.flatnonzero((row == value) | (np.isnan(row) & np.isnan(value)))
        out[r] = same[-1]
    return out


@export("mode")
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest on a tie) and its last index."""
    d = np.asarray(input._data)
    if d.ndim == 0:
        return return_types.mode(pick(input, "ModeBackward0", ()), _wrap(np.zeros((), np.int64)))
    axis = _dim(dim, d.ndim)
    moved = np.moveaxis(d, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    if flat.shape[-1] == 0:
        raise IndexError(f"mode(): Expected reduction dim {axis} to have non-zero size.")
    index = np.expand_dims(mode_index(flat).reshape(moved.shape[:-1]), axis)
    key = along_index(index, axis, d.ndim)
    if not keepdim:
        key = tuple(k.squeeze(axis) for k in key)
        index = index.squeeze(axis)
    return return_types.mode(pick(input, "ModeBackward0", key), _wrap(index))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, name, ignore_nan):
    """torch's quantile: sort along dim (NaN last), then interpolate between the order
    statistics below and above q * (n - 1), n the slice's count (of its non-NaN values for
    nanquantile); a slice with a NaN (quantile) or only NaNs (nanquantile) picks a NaN, as
    torch's ranks do. The gradient goes through the sort to the elements picked, weighted as
    the interpolation is."""
    d = input._data
    if d.dtype.kind != "f":
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    qs = np.asarray(q._data if isinstance(q, Tensor) else q, dtype=np.float64)
    if qs.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if ((qs < 0) | (qs > 1)).any():
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {qs.max()}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(
            f"{name}() interpolation must be one of linear, lower, higher, midpoint or "
            f"nearest. Got {interpolation}"
        )
    if dim is None:
        x, axis = reshape(input, (-1,)), None
    else:
        axis = _dim(dim, d.ndim)
        x = movedim(input, axis, -1) if d.ndim else reshape(input, (1,))
    if x._data.shape[-1] == 0:
        raise IndexError(f"{name}() input tensor must be non-empty")
    ordered = sort(x, -1)[0]  # (NaN last)
    nans = np.isnan(np.asarray(ordered._data)).sum(axis=-1, keepdims=True)
    n = ordered._data.shape[-1] - (nans if ignore_nan else 0 * nans)
    position = qs.reshape(-1) * np.maximum(n - 1, 0)  # (batch..., number of q)
    if not ignore_nan:  # a slice with a NaN: its last element, a NaN (torch's rank)
        position = np.where(nans > 0, ordered._data.shape[-1] - 1, position)
    below = np.floor(position)
    above = np.ceil(position)
    weight = position - below
    if interpolation == "lower":
        weight = np.zeros_like(weight)
    elif interpolation == "higher":
        weight = np.ones_like(weight)
    elif interpolation == "midpoint":
        weight = np.where(above > below, 0.5, 0.0)
    elif interpolation == "nearest":
        weight = (np.round(position) > below).astype(np.float64)
    last = ordered._data.ndim - 1
    lo = pick(ordered, "IndexBackward0", along_index(below.astype(np.int64), last, last + 1))
    hi = pick(ordered, "IndexBackward0", along_index(above.astype(np.int64), last, last + 1))
    out = add(lo, mul(sub(hi, lo), _wrap(weight.astype(d.dtype))))
    # out is (batch..., number of q): q's dim first, as torch gives it, or none for a scalar q
    out = movedim(out, -1, 0) if qs.ndim else reshape(out, out._data.shape[:-1])
    if keepdim:
        kept = (1,) * d.ndim if axis is None else d.shape[:axis] + (1,) + d.shape[axis + 1 :]
        out = reshape(out, qs.shape + kept)
    return out


@export("quantile")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    made = _quantile(input, q, dim, keepdim, interpolation, "quantile", ignore_nan=False)
    return made if out is None else write_out("quantile", out, made, (input, q))


@export("nanquantile")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    made = _quantile(input, q, dim, keepdim, interpolation, "nanquantile", ignore_nan=True)
    return made if out is None else write_out("nanquantile", out, made, (input, q))


# --- shapes -------------------------------------------------------------------------------------


@export("rot90", numpy=(np.rot90,))
def rot90(input, k=1, dims=(0, 1)):
    """input rotated k quarter turns in the plane dims, from dims[0] toward dims[1]."""
    dims = tuple(dims)
    d = input._data
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if d.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {d.ndim}")
    a, b = wrap_dim(dims[0], d.ndim), wrap_dim(dims[1], d.ndim)
    if a == b:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}"
        )
    out = _wrap(result(np.rot90(d, k, (a, b)).copy()))
    if needs_grad(input):
        record(ROT90, out, (input,), {"k": k, "axes": (a, b)})
    return out


@implements("diag_embed")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A new tensor, one rank higher, with input's last dim on the diagonal `offset` of the
    planes (dim1, dim2), zeros elsewhere."""
    d = input._data
    ndim = d.ndim + 1
    a, b = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    out = _wrap(result(ops_shape.diag_embed(np.asarray(d), offset, a, b)))
    if needs_grad(input):
        record(DIAG_EMBED, out, (input,), {"offset": offset, "dim1": a, "dim2": b})
    return out


# np.diagonal(tensor) is torch's diagonal (the same arguments): diag_embed's VJP calls it on
# Tensors under create_graph
export(methods=(), numpy=(np.diagonal,))(diagonal)


@export(methods=("unfold",))
def unfold(self, dimension, size, step):
    """Tensor.unfold: the windows of `size` elements along `dimension`, every `step`, as a
    new last dim (a read-only copy here, where torch's is a view: a write into it raises)."""
    d = self._data
    axis = _dim(dimension, d.ndim)
    length = d.shape[axis] if d.ndim else 1
    if size > length:
        raise RuntimeError(
            f"maximum size for tensor at dimension {axis} is {length} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if d.ndim == 0:
        return reshape(self, (1,))
    windows = (length - size) // step + 1
    # one advanced index per dim, broadcast to the result's (..., windows, ..., size) shape
    key = []
    for a in range(d.ndim):
        shape = [1] * (d.ndim + 1)
        if a == axis:
            shape[a] = windows
            starts = (np.arange(windows) * step).reshape(shape)
            shape = [1] * (d.ndim + 1)
            shape[-1] = size
            key.append(starts + np.arange(size).reshape(shape))
        else:
            shape[a] = d.shape[a]
            key.append(np.arange(d.shape[a]).reshape(shape))
    windows = pick(self, "UnfoldBackward0", tuple(key))
    # A copy standing for torch's view: read-only, so that a write into it raises (torch's
    # error for overlapping windows) rather than silently not reaching self
    windows._data.flags.writeable = False
    return windows


# --- products -----------------------------------------------------------------------------------


@export("baddbmm")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), batch by batch; with beta 0 input is not read
    (its NaNs do not reach the result), as torch's."""
    product = bmm(batch1, batch2)
    if alpha != 1:
        product = mul(product, alpha)
    if beta == 0:
        shape = np.broadcast_shapes(product._data.shape, input._data.shape)
        return expand_to(product, shape) if shape != product._data.shape else product
    return add(mul(input, beta) if beta != 1 else input, product)


# --- elementwise --------------------------------------------------------------------------------


@export(methods=("heaviside_",))
def heaviside_(self, values):
    return copy_(self, heaviside(self, values))


@export(methods=("copysign_",))
def copysign_(self, other):
    return copy_(self, copysign(self, other))


# --- scatter_reduce -----------------------------------------------------------------------------

_SCATTER_REDUCE = {
    "sum": np.add,
    "prod": np.multiply,
    "mean": np.add,
    "amax": np.maximum,
    "amin": np.minimum,
}


def _scattered(self, dim, index, src, reduce, include_self):
    """The numbers of scatter_reduce (numpy: ufunc.at), the index key, the count of values
    each element of the result combines, and which elements some index names."""
    d = self._data
    axis = _dim(dim, d.ndim)
    idx = index_array(index)
    key = along_index(idx, axis, d.ndim)
    values = src._data[tuple(slice(0, n) for n in idx.shape)]
    named = np.zeros(d.shape, bool)
    named[key] = True
    counts = np.zeros(d.shape, np.int64)
    np.add.at(counts, key, 1)
    out = d.copy()
    ufunc = _SCATTER_REDUCE[reduce]
    if not include_self:  # (the named elements start from the reduction's identity)
        if reduce in ("amax", "amin"):
            kind = np.finfo if d.dtype.kind == "f" else np.iinfo
            out[named] = kind(d.dtype).min if reduce == "amax" else kind(d.dtype).max
            if d.dtype.kind == "f":
                out[named] = -np.inf if reduce == "amax" else np.inf
        else:
            out[named] = 1 if reduce == "prod" else 0
    ufunc.at(out, key, values.astype(d.dtype))
    if include_self:
        counts += 1
    if reduce == "mean":
        total = np.maximum(counts, 1)
        out = np.where(named | include_self, out, d)
        out = (out // total if d.dtype.kind in "iub" else out / total).astype(d.dtype)
    return out, key, counts, named, idx


@export("scatter_reduce")
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """input with src's values reduced into it at index along dim (sum, prod, mean, amax,
    amin; with include_self=False input's own value takes no part where some index names it).
    Its gradient is torch's, made of differentiable ops: the masked input plus a scatter_add of
    src (divided by the counts for mean; for amax/amin each value equal to the result gets an
    equal share). prod's is torch's formula (`_ScatterReduceProd`), zeros included."""
    if reduce not in _SCATTER_REDUCE:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    out, key, counts, named, idx = _scattered(input, dim, index, src, reduce, include_self)
    if not needs_grad(input, src):
        return _wrap(result(out))
    src = src[tuple(slice(0, n) for n in idx.shape)] if src._data.shape != idx.shape else src
    if reduce == "prod":
        return _ScatterReduceProd.apply(input, src, dim, _wrap(idx), include_self)
    own = ~named if not include_self else np.ones(named.shape, bool)
    dtype = input._data.dtype
    if reduce in ("amax", "amin"):
        # only the values equal to the result take part, each by 1 / their number; torch counts
        # input's equal value among them even where include_self=False leaves it out (its
        # share then goes nowhere): so do these counts
        equal = input._data == out
        own = own & equal
        taking = src._data == out[key]
        counts = equal + np.bincount(
            np.ravel_multi_index(key, out.shape).reshape(-1),
            taking.reshape(-1),
            minlength=out.size,
        ).reshape(out.shape).astype(np.int64)
        src = mul(src, _wrap(taking.astype(dtype)))
    combined = scatter_add_(mul(input, _wrap(own.astype(dtype))), dim, _wrap(idx), src)
    if reduce != "sum":
        combined = div(combined, _wrap(np.maximum(counts, 1).astype(dtype)))
    # (the exact numbers of ufunc.at; the sums above carry the gradient)
    return add(combined, _wrap(result(out - combined._data)))


class _ScatterReduceProd(Function):
    """scatter_reduce(reduce="prod") as a node with torch's backward (scatter_reduce_backward in
    torch's FunctionsManual.cpp). The product of the others is the result over the value where
    that is not 0; a zero input is masked to 1 and the product recomputed; a src value that is
    the only zero of its target gets the product of the others recomputed the same way (two
    zeros at one target: every gradient there is 0). The backward is made of eager ops, so it
    differentiates again under create_graph."""

    @staticmethod
    def forward(ctx, input, src, dim, index, include_self):
        out = _scattered(input, dim, index, src, "prod", include_self)[0]
        ctx.dim, ctx.include_self = dim, include_self
        result_tensor = _wrap(result(out))
        ctx.save_for_backward(input, src, index, result_tensor)
        return result_tensor

    @staticmethod
    def backward(ctx, grad):
        input, src, index, out = ctx.saved_tensors
        dim, include_self = ctx.dim, ctx.include_self
        grad_input = grad_src = None
        if ctx.needs_input_grad[0]:
            masked_input = input.masked_fill(input == 0, 1)
            others = scatter_reduce(
                masked_input, dim, index, src, "prod", include_self=include_self
            )
            grad_input = grad * others / masked_input
            if not include_self:  # (the named elements' own values took no part)
                grad_input = grad_input.scatter(dim, index, 0)
        if ctx.needs_input_grad[1]:
            src_zero = src == 0
            zeros_at_target = (
                input.new_zeros(input.shape)
                .scatter_add(dim, index, src_zero.to(input.dtype))
                .gather(dim, index)
            )
            single_zero = src_zero & (zeros_at_target == 1)
            others = scatter_reduce(
                input,
                dim,
                index,
                src.masked_fill(single_zero, 1),
                "prod",
                include_self=include_self,
            )
            grad_src = (
                (grad * others)
                .gather(dim, index)
                .where(single_zero, (grad * out).gather(dim, index) / src.masked_fill(src_zero, 1))
            )
        return grad_input, grad_src, None, None, None


# torch's node name for every reduce (the class's own would read `_ScatterReduceProdBackward`)
_ScatterReduceProd._backward_cls.__name__ = "ScatterReduceBackward0"
_ScatterReduceProd._backward_cls.__qualname__ = "ScatterReduceBackward0"


@export(methods=("scatter_reduce_",))
def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    # prod's node saves its input: a clone of self, which the copy below does not change
    source = self.clone() if reduce == "prod" and needs_grad(self, src) else self
    return copy_(self, scatter_reduce(source, dim, index, src, reduce, include_self=include_self))


# --- matrix functions ---------------------------------------------------------------------------


@export("matrix_exp")
def matrix_exp(input):
    """The matrix exponential of each square matrix in input (scipy's Pade approximation);
    its gradient is the registry's scipy_expm rule, the Frechet adjoint torch computes too."""
    d = input._data
    if d.ndim < 2:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 dimensions.")
    if d.shape[-1] != d.shape[-2]:
        raise RuntimeError(
            "linalg.matrix_exp: A must be batches of square matrices, but they are "
            f"{d.shape[-2]} by {d.shape[-1]} matrices"
        )
    if d.dtype.kind not in "fc":
        raise RuntimeError(
            "linalg.matrix_exp: Expected a floating point or complex tensor as input. Got "
            f"{input.dtype._scalar_name}"
        )
    if needs_grad(input):
        return _MatrixExp.apply(input)
    return _wrap(result(_scipy_linalg().expm(d).astype(d.dtype)))


class _MatrixExp(Function):
    """matrix_exp as a node whose backward is made of eager ops (the registry's scipy_expm
    adjoint, the upper right block of exp([[A^H, G], [0, A^H]])), so that it differentiates
    again under create_graph, as torch's does."""

    @staticmethod
    def forward(ctx, input):
        d = input._data
        ctx.save_for_backward(input)
        return _wrap(result(_scipy_linalg().expm(d).astype(d.dtype)))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        n = a.shape[-1]
        a_h = a.mT.conj() if a.is_complex() else a.mT
        block = cat([cat([a_h, grad], -1), cat([zeros_like(a), a_h], -1)], -2)
        return matrix_exp(block)[..., :n, n:]


_MatrixExp._backward_cls.__name__ = "LinalgMatrixExpBackward0"


def _scipy_linalg():
    """scipy.linalg, imported at the first matrix_exp (it costs a second)."""
    return importlib.import_module("scipy.linalg")


def _check_householder(input, tau):
    name = "torch.linalg.householder_product"
    a, t = input._data, tau._data
    if a.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if a.shape[-2] < a.shape[-1]:
        raise RuntimeError(
            f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )
    if a.shape[-1] < t.shape[-1]:
        raise RuntimeError(
            f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]"
        )
    if t.shape[:-1] != a.shape[:-2]:
        raise RuntimeError(
            f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
            f"{list(t.shape[:-1])}"
        )
    if a.dtype != t.dtype:
        raise RuntimeError(
            f"{name}: tau dtype {tau.dtype._scalar_name} does not match input dtype "
            f"{input.dtype._scalar_name}"
        )


@export("orgqr", methods=("orgqr",))
def householder_product(input, tau):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i the i-th column of
    input below the diagonal with a 1 on it (LAPACK's orgqr). Made of differentiable ops (one
    rank-one update per reflector), so its gradient is the exact one: none for the entries on
    and above input's diagonal, which the product does not read."""
    _check_householder(input, tau)
    m, n = input.shape[-2], input.shape[-1]
    reflectors = input.tril(-1) + eye(m, n, dtype=input.dtype)
    q = eye(m, dtype=input.dtype).expand(*input.shape[:-2], m, m)
    for i in range(tau.shape[-1]):
        v = reflectors[..., :, i : i + 1]
        q = q - (q @ v) @ (tau[..., i : i + 1].unsqueeze(-1) * v.mT)
    return q[..., :n]


# --- integer helpers (no gradient) --------------------------------------------------------------


@export("bincount")
def bincount(input, weights=None, minlength=0):
    """How many times each non-negative integer occurs in the 1-d input (or the sum of its
    weights): int64, or the weights' dtype."""
    d = input._data
    if d.dtype.kind not in "iub":
        raise not_implemented_for("bincount_cpu", d.dtype)
    if d.ndim != 1 or (d.size and d.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _wrap(result(np.bincount(d, minlength=minlength), np.int64))
    w = weights._data
    kind = w.dtype if w.dtype.kind == "f" else np.dtype(np.float64)
    return _wrap(result(np.bincount(d, w, minlength=minlength), kind))


def _integers(found, out_int32):
    return _wrap(result(found, np.int32 if out_int32 else np.int64))


@export("searchsorted", methods=())
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Where each value would go in the sorted innermost dim of sorted_sequence to keep it
    sorted (after equal elements for right=True / side='right')."""
    seq = np.asarray(sorted_sequence._data)
    values = np.asarray(input._data if isinstance(input, Tensor) else input)
    if side is not None:
        if side not in ("left", "right") or (right and side == "left"):
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                f"{side} while right was {right}"
            )
        right = side == "right"
    if sorter is not None:
        seq = np.take_along_axis(seq, np.asarray(sorter._data), -1)
    where = "right" if right else "left"
    if seq.ndim <= 1:
        return _integers(np.searchsorted(seq, values, where), out_int32)
    if seq.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor {list(values.shape)}"
        )
    rows = seq.reshape(-1, seq.shape[-1])
    found = np.stack(
        [np.searchsorted(r, v, where) for r, v in zip(rows, values.reshape(len(rows), -1))]
    )
    return _integers(found.reshape(values.shape), out_int32)


@export("bucketize", methods=())
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each element between the sorted 1-d boundaries (boundaries[i-1] < x <=
    boundaries[i]; < with right=True)."""
    if boundaries._data.ndim != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({boundaries._data.ndim})"
        )
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
