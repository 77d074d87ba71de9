"""Second derivatives of every differentiable op the eager mode exposes.

Each case is written once against a torch-like module `T` (and its
`nn.functional` as `F`), so it runs on sourcegrad and, where installed, on
torch. For weights `w` on the outputs and a direction `v` per input, the check
differentiates `sum_i <d/dx_i <w, f(x)>, v_i>` (the first derivatives computed
with `create_graph=True`, i.e. the backward written in Tensor ops and recorded)
and compares that second derivative with

* central finite differences of the first derivative, in float64;
* torch's own double backward, when torch is installed (first derivatives too).

`test_every_exposed_op_has_a_case` fails when an op reachable as
`sourcegrad.<name>`, `Tensor.<name>`, a Tensor operator or
`sourcegrad.nn.functional.<name>` has neither a case here nor a reason in
`NOT_DIFFERENTIABLE`.
"""

import inspect

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.nn.functional as sF
from sourcegrad.eager import methods as _methods

from ..test_registry_ops import ROWS as REGISTRY_ROWS

R = np.random.default_rng(20240607)
EPS = 1e-6


def arr(*shape):
    return R.uniform(-1.0, 1.0, shape)


def pos(*shape):
    return R.uniform(0.5, 2.0, shape)


def unit(*shape):
    return R.uniform(0.1, 0.9, shape)


def away(*shape):
    """At least 0.2 away from 0 (kinks of abs, relu, sign, ...)."""
    return R.uniform(0.2, 1.0, shape) * R.choice([-1.0, 1.0], shape)


def distinct(*shape):
    """Well-separated values, no ties (max, sort, ...)."""
    n = int(np.prod(shape))
    return (R.permutation(n) / n + R.uniform(0, 0.01, n)).reshape(shape) - 0.5


def frac(*shape):
    """Values inside (k + 0.1, k + 0.4): away from the jumps of floor, round, fmod."""
    return R.integers(-2, 3, shape) + R.uniform(0.1, 0.4, shape)


def _i(T, values):
    return T.tensor(values)


# ---- in-place and setitem helpers (each starts from a non-leaf copy) ---------------------------


def _ip(method, *args, **kwargs):
    def fn(T, F, a, *more):
        y = a * 1
        getattr(y, method)(*args, *more, **kwargs)
        return y

    return fn


def _setitem(T, F, a, v):
    y = a * 2
    y[:, 1] = v
    y[0, 0] = 3.0
    return y


def _index_put_(T, F, a, v):
    y = a * 1
    y.index_put_((_i(T, [0, 0, 1]), _i(T, [1, 1, 2])), v, accumulate=True)
    return y * a


def _iop(op):
    def fn(T, F, a, b):
        y = a * 1
        if op == "add":
            y += b
        elif op == "sub":
            y -= b
        elif op == "mul":
            y *= b
        elif op == "div":
            y /= b
        elif op == "pow":
            y **= b
        elif op == "mod":
            y %= 0.7
        elif op == "matmul":
            y @= b
        return y * a

    return fn


# (key, fn(T, F, *inputs), inputs). A key names what the case exercises: `name` is
# sourcegrad.<name>, `Tensor.<name>` a method, `__op__` an operator, `F.<name>` nn.functional.
CASES = [
    # arithmetic
    ("add", lambda T, F, a, b: T.add(a, b, alpha=2.5) * a, [arr(2, 3), arr(3)]),
    ("sub", lambda T, F, a, b: T.sub(a, b, alpha=0.5) * b, [arr(2, 3), arr(2, 1)]),
    ("subtract", lambda T, F, a, b: T.subtract(a, b) ** 2, [arr(3), arr(3)]),
    ("rsub", lambda T, F, a, b: T.rsub(a, b) * a, [arr(3), arr(3)]),
    ("mul", lambda T, F, a, b: T.mul(a, b) * a, [arr(2, 3), arr(1, 3)]),
    ("multiply", lambda T, F, a, b: T.multiply(a, b) * b, [arr(3), arr()]),
    ("div", lambda T, F, a, b: T.div(a, b), [arr(2, 3), pos(3)]),
    (
        "div",
        lambda T, F, a, b: (
            T.div(a, b, rounding_mode="floor") * a + T.div(a * 3, b, rounding_mode="trunc") * b
        ),
        [frac(3), pos(3)],
    ),
    ("divide", lambda T, F, a, b: T.divide(a, b) * a, [arr(3), pos(3)]),
    ("true_divide", lambda T, F, a, b: T.true_divide(b, a), [pos(3), arr(3)]),
    ("pow", lambda T, F, a, b: T.pow(a, b), [pos(2, 3), arr(3)]),
    ("pow", lambda T, F, a: T.pow(a, 3) + T.pow(a, 2.5) * 0, [pos(4)]),
    ("pow", lambda T, F, a: T.pow(2.0, a), [arr(4)]),
    ("square", lambda T, F, a: T.square(a) * a, [arr(4)]),
    ("float_power", lambda T, F, a, b: T.float_power(a, b) + T.float_power(a, 2), [pos(3), arr(3)]),
    ("remainder", lambda T, F, a, b: T.remainder(a, b) * a, [unit(3) + 1.2, unit(3) * 0.1 + 0.8]),
    ("fmod", lambda T, F, a: T.fmod(a, 0.7) * a, [unit(4) * 0.5 + 0.1]),
    ("fmod", lambda T, F, a, b: T.fmod(a, b) * a * b, [unit(3) + 1.2, unit(3) * 0.1 + 0.8]),
    ("atan2", lambda T, F, a, b: T.atan2(a, b), [arr(3), pos(3)]),
    ("arctan2", lambda T, F, a, b: T.arctan2(a, b), [arr(3), pos(3)]),
    ("hypot", lambda T, F, a, b: T.hypot(a, b), [pos(3), pos(3)]),
    ("logaddexp", lambda T, F, a, b: T.logaddexp(a, b), [arr(3), arr(3)]),
    ("maximum", lambda T, F, a, b: T.maximum(a, b) ** 2, [distinct(2, 3), distinct(3)]),
    ("minimum", lambda T, F, a, b: T.minimum(a, b) ** 2, [distinct(2, 3), distinct(2, 3)]),
    ("fmax", lambda T, F, a, b: T.fmax(a, b) ** 2, [distinct(3), distinct(3)]),
    ("fmin", lambda T, F, a, b: T.fmin(a, b) ** 2, [distinct(3), distinct(3)]),
    # one-input elementwise
    ("exp", lambda T, F, a: T.exp(a), [arr(3)]),
    ("exp2", lambda T, F, a: T.exp2(a), [arr(3)]),
    ("expm1", lambda T, F, a: T.expm1(a), [arr(3)]),
    ("log", lambda T, F, a: T.log(a), [pos(3)]),
    ("log1p", lambda T, F, a: T.log1p(a), [pos(3)]),
    ("log2", lambda T, F, a: T.log2(a), [pos(3)]),
    ("log10", lambda T, F, a: T.log10(a), [pos(3)]),
    ("sqrt", lambda T, F, a: T.sqrt(a), [pos(3)]),
    ("rsqrt", lambda T, F, a: T.rsqrt(a), [pos(3)]),
    ("sin", lambda T, F, a: T.sin(a), [arr(3)]),
    ("cos", lambda T, F, a: T.cos(a), [arr(3)]),
    ("tan", lambda T, F, a: T.tan(a), [arr(3)]),
    ("asin", lambda T, F, a: T.asin(a), [arr(3) * 0.8]),
    ("arcsin", lambda T, F, a: T.arcsin(a), [arr(3) * 0.8]),
    ("acos", lambda T, F, a: T.acos(a), [arr(3) * 0.8]),
    ("arccos", lambda T, F, a: T.arccos(a), [arr(3) * 0.8]),
    ("atan", lambda T, F, a: T.atan(a), [arr(3)]),
    ("arctan", lambda T, F, a: T.arctan(a), [arr(3)]),
    ("sinh", lambda T, F, a: T.sinh(a), [arr(3)]),
    ("cosh", lambda T, F, a: T.cosh(a), [arr(3)]),
    ("tanh", lambda T, F, a: T.tanh(a), [arr(3)]),
    ("asinh", lambda T, F, a: T.asinh(a), [arr(3)]),
    ("arcsinh", lambda T, F, a: T.arcsinh(a), [arr(3)]),
    ("acosh", lambda T, F, a: T.acosh(a), [pos(3) + 1.0]),
    ("arccosh", lambda T, F, a: T.arccosh(a), [pos(3) + 1.0]),
    ("atanh", lambda T, F, a: T.atanh(a), [arr(3) * 0.8]),
    ("arctanh", lambda T, F, a: T.arctanh(a), [arr(3) * 0.8]),
    ("sigmoid", lambda T, F, a: T.sigmoid(a), [arr(3) * 3]),
    ("erf", lambda T, F, a: T.erf(a), [arr(3)]),
    ("reciprocal", lambda T, F, a: T.reciprocal(a), [pos(3)]),
    ("relu", lambda T, F, a: T.relu(a) ** 2, [away(5)]),
    ("abs", lambda T, F, a: T.abs(a) ** 3, [away(4)]),
    ("absolute", lambda T, F, a: T.absolute(a) * a, [away(4)]),
    ("neg", lambda T, F, a: T.neg(a) * a, [arr(3)]),
    ("negative", lambda T, F, a: T.negative(a) * a, [arr(3)]),
    ("positive", lambda T, F, a: T.positive(a) * a, [arr(3)]),
    ("sign", lambda T, F, a: T.sign(a) * a * a, [away(4)]),
    ("floor", lambda T, F, a: T.floor(a) * a + a * a, [frac(4)]),
    ("ceil", lambda T, F, a: T.ceil(a) * a, [frac(4)]),
    ("trunc", lambda T, F, a: T.trunc(a) * a, [frac(4)]),
    ("fix", lambda T, F, a: T.fix(a) * a, [frac(4)]),
    ("round", lambda T, F, a: T.round(a) * a + T.round(a * 10, decimals=1) * a, [frac(4) * 1.01]),
    ("clamp", lambda T, F, a: T.clamp(a, -0.5, 0.5) ** 2, [away(6) * 0.9]),
    (
        "clamp",
        lambda T, F, a, lo, hi: T.clamp(a, lo, hi) * a,
        [np.array([-2.0, 0.3, 2.0]), np.array([-1.0, -1.0, -1.0]), np.array([1.0, 1.0, 1.0])],
    ),
    ("clip", lambda T, F, a: T.clip(a, min=-0.5) ** 2, [away(6) * 0.9]),
    ("clamp_min", lambda T, F, a: T.clamp_min(a, 0.1) ** 2, [away(5)]),
    ("clamp_max", lambda T, F, a: T.clamp_max(a, 0.1) ** 2, [away(5)]),
    ("where", lambda T, F, a, b: T.where(a > 0, a * a, b * a), [away(2, 3), arr(3)]),
    ("where", lambda T, F, a: T.where(a > 0, a * a, 0.0), [away(4)]),
    ("masked_fill", lambda T, F, a: T.masked_fill(a * a, a > 0, 1.5), [away(4)]),
    ("relu_", lambda T, F, a: T.relu_(a * a - 0.25) * a, [away(4)]),
    ("abs_", lambda T, F, a: T.abs_(a * 1) * a, [away(4)]),
    ("zero_", lambda T, F, a: T.zero_(a * 1) + a * a, [arr(3)]),
    # reductions
    (
        "sum",
        lambda T, F, a: T.sum(a * a) + T.sum(a**3, 1).sum() + T.sum(a, (0, 1), keepdim=True) ** 2,
        [arr(2, 3)],
    ),
    ("nansum", lambda T, F, a: T.nansum(a**3, 0), [arr(2, 3)]),
    ("mean", lambda T, F, a: T.mean(a**2) + T.mean(a**3, -1, keepdim=True), [arr(2, 3)]),
    ("prod", lambda T, F, a: T.prod(a) + T.prod(a, 1), [pos(2, 3)]),
    ("prod", lambda T, F, a: T.prod(a * T.tensor([0.0, 1.0, 1.0], dtype=T.float64)), [pos(3)]),
    ("max", lambda T, F, a: T.max(a) ** 2 + T.max(a, 1).values ** 3, [distinct(2, 3)]),
    ("max", lambda T, F, a, b: T.max(a, b) ** 2, [distinct(3), distinct(3)]),
    ("min", lambda T, F, a: T.min(a) ** 2 + T.min(a, 0, keepdim=True)[0] ** 3, [distinct(2, 3)]),
    ("amax", lambda T, F, a: T.amax(a, 1) ** 2, [distinct(2, 3)]),
    ("amin", lambda T, F, a: T.amin(a, (0, 1)) ** 2, [distinct(2, 3)]),
    ("var", lambda T, F, a: T.var(a) + T.var(a, 1, correction=0), [arr(2, 4)]),
    ("std", lambda T, F, a: T.std(a) + T.std(a, 0, keepdim=True), [arr(3, 2)]),
    ("norm", lambda T, F, a: T.norm(a) + T.norm(a, dim=1), [arr(2, 3)]),
    ("norm", lambda T, F, a: T.norm(a, p=1) ** 2 + T.norm(a, p=3, dim=0), [away(3, 2)]),
    ("norm", lambda T, F, a: T.norm(a, p=float("inf")) ** 2, [distinct(4)]),
    ("logsumexp", lambda T, F, a: T.logsumexp(a, 1), [arr(2, 3)]),
    ("softmax", lambda T, F, a: T.softmax(a, 1), [arr(2, 3)]),
    ("log_softmax", lambda T, F, a: T.log_softmax(a, 0), [arr(2, 3)]),
    ("cumsum", lambda T, F, a: T.cumsum(a, 1) * a, [arr(2, 3)]),
    ("cumprod", lambda T, F, a: T.cumprod(a, 0), [pos(4)]),
    (
        "cumprod",
        lambda T, F, a: T.cumprod(a * T.tensor([1.0, 0.0, 1.0, 1.0], dtype=T.float64), 0),
        [pos(4)],
    ),
    # matrix products
    ("mm", lambda T, F, a, b: T.mm(a, b) ** 2, [arr(2, 3), arr(3, 4)]),
    ("bmm", lambda T, F, a, b: T.bmm(a, b) ** 2, [arr(2, 2, 3), arr(2, 3, 2)]),
    ("mv", lambda T, F, a, b: T.mv(a, b) ** 2, [arr(2, 3), arr(3)]),
    ("dot", lambda T, F, a, b: T.dot(a, b) ** 2, [arr(3), arr(3)]),
    ("vdot", lambda T, F, a, b: T.vdot(a, b) ** 2, [arr(3), arr(3)]),
    ("inner", lambda T, F, a, b: T.inner(a, b) ** 2, [arr(2, 3), arr(4, 3)]),
    ("matmul", lambda T, F, a, b: T.matmul(a, b) ** 2, [arr(2, 1, 2, 3), arr(3, 3, 2)]),
    ("matmul", lambda T, F, a, b: T.matmul(a, b) ** 2, [arr(3), arr(3, 2)]),
    ("outer", lambda T, F, a, b: T.outer(a, b) ** 2, [arr(3), arr(2)]),
    ("einsum", lambda T, F, a, b: T.einsum("ij,jk->ik", a, b) ** 2, [arr(2, 3), arr(3, 4)]),
    ("einsum", lambda T, F, a, b: T.einsum("iij,j->i", a, b) ** 3, [arr(3, 3, 2), arr(2)]),
    ("diff", lambda T, F, a, b: T.diff(a, n=2, dim=1, prepend=b) ** 3, [arr(3, 4), arr(3, 2)]),
    ("lerp", lambda T, F, a, b, w: T.lerp(a, b, w) ** 3, [arr(2, 3), arr(3), arr(2, 1)]),
    ("median", lambda T, F, a: T.median(a) ** 3 + T.median(a, 1).values.sum() ** 2, [arr(3, 4)]),
    ("nan_to_num", lambda T, F, a: T.nan_to_num(a / a.abs().clamp(max=1.0)) ** 3, [arr(3, 4)]),
    ("nanmedian", lambda T, F, a: T.nanmedian(a, 0, keepdim=True)[0] ** 3, [arr(3, 4)]),
    ("kthvalue", lambda T, F, a: a.kthvalue(2, 1)[0] ** 3, [arr(3, 4)]),
    (
        "addcmul",
        lambda T, F, a, b, c: a.addcmul(b, c, value=0.5) ** 3,
        [arr(2, 3), arr(2, 3), arr(3)],
    ),
    (
        "addcdiv",
        lambda T, F, a, b, c: T.addcdiv(a, b, c**2 + 2.0) ** 3,
        [arr(2, 3), arr(2, 3), arr(3)],
    ),
    (
        "tensordot",
        lambda T, F, a, b: T.tensordot(a, b, dims=([0, 2], [1, 0])) ** 2,
        [arr(2, 3, 4), arr(4, 2, 5)],
    ),
    ("kron", lambda T, F, a, b: T.kron(a, b) ** 3, [arr(2, 3), arr(3)]),
    (
        "meshgrid",
        lambda T, F, a, b: (
            T.meshgrid(a, b, indexing="xy")[0] * T.meshgrid(a, b, indexing="xy")[1] ** 2
        ),
        [arr(3), arr(2)],
    ),
    ("var_mean", lambda T, F, a: T.var_mean(a, dim=1)[0] * T.var_mean(a, dim=1)[1], [arr(3, 4)]),
    (
        "std_mean",
        lambda T, F, a: T.std_mean(a, correction=0)[0] ** 2 * T.std_mean(a)[1],
        [arr(3, 4)],
    ),
    ("diff", lambda T, F, a, b: a.diff(append=b, dim=0) ** 3, [arr(3, 4), arr(1, 4)]),
    ("ger", lambda T, F, a, b: T.ger(a, b) ** 2, [arr(3), arr(2)]),
    (
        "addmm",
        lambda T, F, c, a, b: T.addmm(c, a, b, beta=0.5, alpha=2.0) ** 2,
        [arr(2, 1), arr(2, 3), arr(3, 2)],
    ),
    # shapes and views
    (
        "reshape",
        lambda T, F, a: T.reshape(a, (3, 2)) * T.reshape(a.t(), (-1,)).reshape(3, 2),
        [arr(2, 3)],
    ),
    ("flatten", lambda T, F, a: T.flatten(a, 1) ** 2, [arr(2, 2, 2)]),
    ("ravel", lambda T, F, a: T.ravel(a.t()) ** 2, [arr(2, 3)]),
    ("unflatten", lambda T, F, a: T.unflatten(a, 1, (2, 2)) ** 2, [arr(2, 4)]),
    ("squeeze", lambda T, F, a: T.squeeze(a) ** 2 + T.squeeze(a, 1) ** 2, [arr(3, 1)]),
    ("unsqueeze", lambda T, F, a: T.unsqueeze(a, 1) * a, [arr(3)]),
    # torch.svd's singular values (their vectors' signs are LAPACK's choice)
    ("svd", lambda T, F, a: T.svd(a).S ** 2, [arr(3, 2)]),
    ("transpose", lambda T, F, a: T.transpose(a, 0, 1) ** 2, [arr(2, 3)]),
    ("swapaxes", lambda T, F, a: T.swapaxes(a, 0, 1) ** 2, [arr(2, 3)]),
    ("swapdims", lambda T, F, a: T.swapdims(a, 0, 1) ** 2, [arr(2, 3)]),
    ("t", lambda T, F, a: T.t(a) @ a, [arr(2, 3)]),
    ("permute", lambda T, F, a: T.permute(a, (2, 0, 1)) ** 2, [arr(2, 3, 2)]),
    ("movedim", lambda T, F, a: T.movedim(a, 0, 2) ** 2, [arr(2, 3, 2)]),
    ("moveaxis", lambda T, F, a: T.moveaxis(a, 0, 2) ** 2, [arr(2, 3, 2)]),
    ("broadcast_to", lambda T, F, a: T.broadcast_to(a, (2, 3)) * a, [arr(3)]),
    (
        "broadcast_tensors",
        lambda T, F, a, b: [x**2 for x in T.broadcast_tensors(a, b)],
        [arr(2, 1), arr(3)],
    ),
    ("select", lambda T, F, a: T.select(a, 1, 2) * T.select(a, 0, -1), [arr(3, 3)]),
    ("narrow", lambda T, F, a: T.narrow(a, 1, 1, 2) ** 2, [arr(2, 3)]),
    ("unbind", lambda T, F, a: T.unbind(a, 1)[2] * T.unbind(a, 1)[0], [arr(2, 3)]),
    ("split", lambda T, F, a: [p**2 for p in T.split(a, [1, 2], 0)], [arr(3, 2)]),
    ("split", lambda T, F, a: T.split(a, 2, dim=1)[1] ** 2, [arr(2, 5)]),
    ("tensor_split", lambda T, F, a: [p**2 for p in T.tensor_split(a, 3)], [arr(5)]),
    ("chunk", lambda T, F, a: T.chunk(a, 3)[0] * T.chunk(a, 3)[2], [arr(6)]),
    ("cat", lambda T, F, a, b: T.cat([a, b * b], 1) ** 2, [arr(2, 3), arr(2, 1)]),
    ("concat", lambda T, F, a, b: T.concat([a, b], 0) ** 2, [arr(1, 3), arr(2, 3)]),
    ("concatenate", lambda T, F, a, b: T.concatenate([a, b]) ** 2, [arr(1, 3), arr(2, 3)]),
    ("stack", lambda T, F, a, b: T.stack([a, b], 1) ** 2, [arr(2, 3), arr(2, 3)]),
    ("hstack", lambda T, F, a, b: T.hstack([a, b]) ** 2, [arr(2, 1), arr(2, 2)]),
    ("vstack", lambda T, F, a, b: T.vstack([a, b]) ** 2, [arr(3), arr(2, 3)]),
    ("row_stack", lambda T, F, a, b: T.row_stack([a, b]) ** 2, [arr(3), arr(3)]),
    ("dstack", lambda T, F, a, b: T.dstack([a, b]) ** 2, [arr(2, 2), arr(2, 2)]),
    ("column_stack", lambda T, F, a, b: T.column_stack([a, b]) ** 2, [arr(3), arr(3, 2)]),
    ("atleast_1d", lambda T, F, a: T.atleast_1d(a) ** 2, [arr()]),
    ("atleast_2d", lambda T, F, a: T.atleast_2d(a) ** 2, [arr(3)]),
    ("atleast_3d", lambda T, F, a: T.atleast_3d(a) ** 2, [arr(2, 2)]),
    ("clone", lambda T, F, a: T.clone(a) * a, [arr(3)]),
    ("flip", lambda T, F, a: T.flip(a, (0,)) * a, [arr(3, 2)]),
    ("fliplr", lambda T, F, a: T.fliplr(a) * a, [arr(2, 3)]),
    ("flipud", lambda T, F, a: T.flipud(a) * a, [arr(2, 3)]),
    ("roll", lambda T, F, a: T.roll(a, 1, 1) * a + T.roll(a, 2) * a, [arr(2, 3)]),
    ("tile", lambda T, F, a: T.tile(a, (2, 1, 2)) ** 2, [arr(3)]),
    ("repeat_interleave", lambda T, F, a: T.repeat_interleave(a, 2, dim=0) ** 2, [arr(2, 2)]),
    ("tril", lambda T, F, a: T.tril(a) * a, [arr(3, 3)]),
    ("triu", lambda T, F, a: T.triu(a, 1) ** 2, [arr(3, 3)]),
    ("gather", lambda T, F, a: T.gather(a, 1, _i(T, [[0, 0], [2, 1]])) ** 2, [arr(2, 3)]),
    ("take_along_dim", lambda T, F, a: T.take_along_dim(a, _i(T, [[0], [2]]), 1) ** 2, [arr(2, 3)]),
    ("index_select", lambda T, F, a: T.index_select(a, 1, _i(T, [2, 0, 2])) ** 2, [arr(2, 3)]),
    ("take", lambda T, F, a: T.take(a, _i(T, [5, 0, 5])) ** 2, [arr(2, 3)]),
    ("masked_select", lambda T, F, a: T.masked_select(a, a > 0) ** 2, [away(2, 3)]),
    ("diagonal", lambda T, F, a: T.diagonal(a, 1) ** 2 + T.diagonal(a).sum(), [arr(3, 3)]),
    ("diag", lambda T, F, a: T.diag(a) ** 2, [arr(3)]),
    ("diag", lambda T, F, a: T.diag(a, -1) ** 2, [arr(3, 3)]),
    ("trace", lambda T, F, a: T.trace(a) ** 2, [arr(3, 3)]),
    ("sort", lambda T, F, a: T.sort(a, dim=1, descending=True).values ** 2, [distinct(2, 3)]),
    ("topk", lambda T, F, a: T.topk(a, 2).values ** 2, [distinct(2, 4)]),
    # Tensor methods with no namespace twin
    ("Tensor.view", lambda T, F, a: a.view(3, 2) ** 2, [arr(2, 3)]),
    ("Tensor.view_as", lambda T, F, a, b: a.view_as(b) * b, [arr(6), arr(2, 3)]),
    ("Tensor.reshape_as", lambda T, F, a, b: a.t().reshape_as(b) * b, [arr(3, 2), arr(2, 3)]),
    ("Tensor.expand", lambda T, F, a: a.expand(2, 3) * a, [arr(3)]),
    ("Tensor.expand_as", lambda T, F, a, b: a.expand_as(b) * b, [arr(3), arr(2, 3)]),
    ("Tensor.contiguous", lambda T, F, a: a.t().contiguous() ** 2, [arr(2, 3)]),
    ("Tensor.to", lambda T, F, a: a.to(T.float64) ** 2 + a.to(dtype=T.float64) ** 3, [arr(3)]),
    ("Tensor.double", lambda T, F, a: a.double() ** 2, [arr(3)]),
    ("Tensor.type", lambda T, F, a: a.type(T.float64) ** 2, [arr(3)]),
    ("Tensor.type_as", lambda T, F, a, b: a.type_as(b) * b, [arr(3), arr(3)]),
    ("Tensor.repeat", lambda T, F, a: a.repeat(2, 3) ** 2, [arr(2, 2)]),
    ("Tensor.where", lambda T, F, a, b: a.where(a > 0, b) ** 2, [away(3), arr(3)]),
    (
        "Tensor.index_put",
        lambda T, F, a, v: a.index_put((_i(T, [0, 1]), _i(T, [2, 0])), v) ** 2,
        [arr(2, 3), arr(2)],
    ),
    (
        "Tensor.index_add",
        lambda T, F, a, s: a.index_add(0, _i(T, [0, 2, 0]), s, alpha=2) ** 2,
        [arr(3, 2), arr(3, 2)],
    ),
    ("Tensor.index_fill", lambda T, F, a: a.index_fill(1, _i(T, [0, 2]), 1.5) ** 2, [arr(2, 3)]),
    (
        "Tensor.scatter",
        lambda T, F, a, s: a.scatter(1, _i(T, [[2, 0]]), s) ** 2,
        [arr(2, 3), arr(1, 2)],
    ),
    (
        "Tensor.scatter_add",
        lambda T, F, a, s: a.scatter_add(1, _i(T, [[2, 2]]), s) ** 2,
        [arr(2, 3), arr(1, 2)],
    ),
    ("Tensor.T", lambda T, F, a: a.T @ a, [arr(2, 3)]),
    ("Tensor.mT", lambda T, F, a: a.mT @ a, [arr(2, 2, 3)]),
    # in place
    ("Tensor.add_", _ip("add_", alpha=2), [arr(3), arr(3)]),
    ("Tensor.sub_", _ip("sub_", alpha=2), [arr(3), arr(3)]),
    ("Tensor.subtract_", _ip("subtract_"), [arr(3), arr(3)]),
    ("Tensor.mul_", _ip("mul_"), [arr(3), arr(3)]),
    ("Tensor.multiply_", _ip("multiply_"), [arr(3), arr(3)]),
    ("Tensor.div_", _ip("div_"), [arr(3), pos(3)]),
    ("Tensor.divide_", _ip("divide_"), [arr(3), pos(3)]),
    ("Tensor.true_divide_", _ip("true_divide_"), [arr(3), pos(3)]),
    ("Tensor.pow_", _ip("pow_"), [pos(3), arr(3)]),
    ("Tensor.remainder_", _ip("remainder_", 0.7), [unit(3) * 0.5 + 0.1]),
    ("Tensor.exp_", _ip("exp_"), [arr(3)]),
    ("Tensor.log_", _ip("log_"), [pos(3)]),
    ("Tensor.sqrt_", _ip("sqrt_"), [pos(3)]),
    ("Tensor.rsqrt_", _ip("rsqrt_"), [pos(3)]),
    ("Tensor.sin_", _ip("sin_"), [arr(3)]),
    ("Tensor.cos_", _ip("cos_"), [arr(3)]),
    ("Tensor.tanh_", _ip("tanh_"), [arr(3)]),
    ("Tensor.sigmoid_", _ip("sigmoid_"), [arr(3)]),
    ("Tensor.relu_", lambda T, F, a: (a * a - 0.25).relu_() * a, [away(4)]),
    ("Tensor.abs_", lambda T, F, a: (a * 1).abs_() * a, [away(4)]),
    ("Tensor.neg_", lambda T, F, a: (a * 1).neg_() * a, [arr(3)]),
    ("Tensor.negative_", lambda T, F, a: (a * 1).negative_() * a, [arr(3)]),
    ("Tensor.reciprocal_", _ip("reciprocal_"), [pos(3)]),
    ("Tensor.sign_", lambda T, F, a: (a * 1).sign_() * a * a, [away(3)]),
    ("Tensor.floor_", lambda T, F, a: (a * 1).floor_() * a, [frac(3)]),
    ("Tensor.ceil_", lambda T, F, a: (a * 1).ceil_() * a, [frac(3)]),
    ("Tensor.trunc_", lambda T, F, a: (a * 1).trunc_() * a, [frac(3)]),
    ("Tensor.round_", lambda T, F, a: (a * 1).round_() * a, [frac(3)]),
    ("Tensor.exp2_", _ip("exp2_"), [arr(3)]),
    ("Tensor.expm1_", _ip("expm1_"), [arr(3)]),
    ("Tensor.log1p_", _ip("log1p_"), [pos(3)]),
    ("Tensor.square_", lambda T, F, a: (a * 1).square_() * a, [arr(3)]),
    ("Tensor.clamp_", lambda T, F, a: (a * 1).clamp_(-0.5, 0.5) * a, [away(5) * 0.9]),
    # in-place view ops: the tensor takes the view's shape (UnsqueezeBackward1, ...)
    ("Tensor.unsqueeze_", lambda T, F, a: (a * 1).unsqueeze_(1) * a, [arr(3)]),
    ("Tensor.squeeze_", lambda T, F, a: (a * 1).squeeze_(1) ** 2, [arr(3, 1)]),
    ("Tensor.transpose_", lambda T, F, a: (a * 1).transpose_(0, 1) @ a, [arr(2, 3)]),
    ("Tensor.swapdims_", lambda T, F, a: (a * 1).swapdims_(0, 1) ** 2, [arr(2, 3)]),
    ("Tensor.swapaxes_", lambda T, F, a: (a * 1).swapaxes_(0, 1) ** 2, [arr(2, 3)]),
    ("Tensor.t_", lambda T, F, a: (a * 1).t_() @ a, [arr(2, 3)]),
    ("Tensor.clip_", lambda T, F, a: (a * 1).clip_(max=0.5) * a, [away(5) * 0.9]),
    ("Tensor.clamp_min_", lambda T, F, a: (a * 1).clamp_min_(0.1) * a, [away(5)]),
    ("Tensor.clamp_max_", lambda T, F, a: (a * 1).clamp_max_(0.1) * a, [away(5)]),
    ("Tensor.zero_", lambda T, F, a: (a * 3)[0].zero_() * a[1], [arr(2, 3)]),
    ("Tensor.fill_", lambda T, F, a, s: _ip("fill_")(T, F, a, s.sum()) * a, [arr(2, 3), arr(2)]),
    (
        "Tensor.copy_",
        lambda T, F, a, b: T.zeros(2, 3, dtype=T.float64).copy_(b * b) * a,
        [arr(2, 3), arr(3)],
    ),
    ("Tensor.masked_fill_", lambda T, F, a: (a * a).masked_fill_(a > 0, 2.0) * a, [away(4)]),
    ("Tensor.index_put_", _index_put_, [arr(2, 3), arr(3)]),
    (
        "Tensor.index_add_",
        lambda T, F, a, s: (a * 1).index_add_(0, _i(T, [1, 1]), s * s) * a,
        [arr(2, 3), arr(2, 3)],
    ),
    (
        "Tensor.index_fill_",
        lambda T, F, a: (a * 1).index_fill_(0, _i(T, [1]), -1.0) * a,
        [arr(2, 3)],
    ),
    (
        "Tensor.scatter_",
        lambda T, F, a, s: (a * 1).scatter_(0, _i(T, [[1, 0, 1]]), s * s) * a,
        [arr(2, 3), arr(1, 3)],
    ),
    (
        "Tensor.scatter_add_",
        lambda T, F, a, s: (a * 1).scatter_add_(0, _i(T, [[1, 1, 1]]), s * s) * a,
        [arr(2, 3), arr(1, 3)],
    ),
    # operators
    ("__add__", lambda T, F, a, b: (a + b) * a + (a + 2) * a, [arr(2, 3), arr(3)]),
    ("__radd__", lambda T, F, a: (2 + a) * a, [arr(3)]),
    ("__sub__", lambda T, F, a, b: (a - b) * a, [arr(3), arr(3)]),
    ("__rsub__", lambda T, F, a: (1 - a) * a, [arr(3)]),
    ("__mul__", lambda T, F, a, b: a * b * a, [arr(3), arr(3)]),
    ("__rmul__", lambda T, F, a: 2 * a * a, [arr(3)]),
    ("__truediv__", lambda T, F, a, b: a / b, [arr(3), pos(3)]),
    ("__rtruediv__", lambda T, F, a: 2 / a, [pos(3)]),
    ("__mod__", lambda T, F, a: (a % 0.7) * a, [unit(3) * 0.5 + 0.1]),
    ("__pow__", lambda T, F, a, b: a**b + a**3, [pos(3), arr(3)]),
    ("__rpow__", lambda T, F, a: 2**a, [arr(3)]),
    ("__matmul__", lambda T, F, a, b: (a @ b) ** 2, [arr(2, 3), arr(3)]),
    ("__rmatmul__", lambda T, F, a, b: b.__rmatmul__(a) ** 2, [arr(2, 3), arr(3, 2)]),
    ("__iadd__", _iop("add"), [arr(3), arr(3)]),
    ("__isub__", _iop("sub"), [arr(3), arr(3)]),
    ("__imul__", _iop("mul"), [arr(3), arr(3)]),
    ("__itruediv__", _iop("div"), [arr(3), pos(3)]),
    ("__ipow__", _iop("pow"), [pos(3), arr(3)]),
    ("__imod__", lambda T, F, a: _iop("mod")(T, F, a, None), [unit(3) * 0.5 + 0.1]),
    ("__matmul__", _iop("matmul"), [arr(2, 2), arr(2, 2)]),  # `a @= b`: no __imatmul__, as torch
    ("__neg__", lambda T, F, a: -a * a, [arr(3)]),
    ("__pos__", lambda T, F, a: +a * a, [arr(3)]),
    ("__abs__", lambda T, F, a: abs(a) * a, [away(3)]),
    (
        "__getitem__",
        lambda T, F, a: (
            (a[1] * a[0, 2]).sum()
            + (a[:, 1:] ** 2).sum()
            + (a[[0, 0, 1]] ** 2).sum()
            + (a[a > 0] ** 3).sum()
            + (a[..., None, 1] ** 2).sum()
        ),
        [away(2, 3)],
    ),
    ("__setitem__", _setitem, [arr(2, 3), arr(2)]),
    # nn.functional
    ("F.relu", lambda T, F, a: F.relu(a) ** 2, [away(4)]),
    ("F.relu_", lambda T, F, a: F.relu_(a * a - 0.25) * a, [away(4)]),
    # a slope exact in float32: torch's double backward rounds it to float32
    ("F.leaky_relu", lambda T, F, a: F.leaky_relu(a, 0.25) ** 2 + F.leaky_relu(a) ** 3, [away(5)]),
    ("F.sigmoid", lambda T, F, a: F.sigmoid(a), [arr(3)]),
    ("F.tanh", lambda T, F, a: F.tanh(a), [arr(3)]),
    ("F.softmax", lambda T, F, a: F.softmax(a, dim=1), [arr(2, 3)]),
    ("F.log_softmax", lambda T, F, a: F.log_softmax(a, 1), [arr(2, 3)]),
    (
        "F.linear",
        lambda T, F, x, w, b: F.linear(x, w, b) ** 2 + F.linear(x, w) ** 3,
        [arr(2, 3), arr(4, 3), arr(4)],
    ),
    (
        "F.nll_loss",
        lambda T, F, a: F.nll_loss(a, _i(T, [1, 1]), reduction="sum") * a.sum(),
        [arr(2, 3)],
    ),
    (
        "F.nll_loss",
        lambda T, F, a: F.nll_loss(a, _i(T, [1, 0]), reduction="none") ** 2,
        [arr(2, 3)],
    ),
    (
        "F.nll_loss",
        lambda T, F, a: F.nll_loss(a, _i(T, [[1, 0], [2, 1]]), reduction="none") ** 2,
        [arr(2, 3, 2)],
    ),
    ("F.cross_entropy", lambda T, F, a: F.cross_entropy(a, _i(T, [0, 2])), [arr(2, 3)]),
    (
        "F.cross_entropy",
        lambda T, F, a: F.cross_entropy(
            a, _i(T, [0, 2, -100]), weight=T.tensor([1.0, 2.0, 0.5], dtype=T.float64)
        ),
        [arr(3, 3)],
    ),
    (
        "F.cross_entropy",
        lambda T, F, a, p: F.cross_entropy(a, p.softmax(1)),
        [arr(2, 3), arr(2, 3)],
    ),
    (
        "F.cross_entropy",
        lambda T, F, a: F.cross_entropy(a, _i(T, [1, 0]), label_smoothing=0.1),
        [arr(2, 3)],
    ),
    ("F.mse_loss", lambda T, F, a, b: F.mse_loss(a, b), [arr(2, 3), arr(2, 3)]),
    ("F.mse_loss", lambda T, F, a, b: F.mse_loss(a, b, reduction="none") ** 2, [arr(3), arr(3)]),
    ("F.l1_loss", lambda T, F, a, b: F.l1_loss(a * a, b) * a.sum(), [arr(3), away(3) + 2.0]),
    ("F.binary_cross_entropy", lambda T, F, a, t: F.binary_cross_entropy(a, t), [unit(3), unit(3)]),
    (
        "F.binary_cross_entropy_with_logits",
        lambda T, F, a, t: F.binary_cross_entropy_with_logits(
            a, t, pos_weight=T.tensor([1.0, 2.0, 0.5], dtype=T.float64)
        ),
        [arr(2, 3), unit(2, 3)],
    ),
    ("F.normalize", lambda T, F, a: F.normalize(a, dim=1), [arr(2, 3)]),
    (
        "F.smooth_l1_loss",
        lambda T, F, a, b: F.smooth_l1_loss(a * a, b, beta=0.5) * a.sum(),
        [arr(2, 3), arr(2, 3)],
    ),
    (
        "F.huber_loss",
        lambda T, F, a, b: F.huber_loss(a * a, b, delta=0.3) * a.sum(),
        [arr(2, 3), arr(2, 3)],
    ),
    (
        "F.kl_div",
        lambda T, F, a, t: F.kl_div(a, t, reduction="batchmean") * a.sum(),
        [arr(2, 3), unit(2, 3)],
    ),
    (
        "F.binary_cross_entropy",
        lambda T, F, a, t: F.binary_cross_entropy(a, t, reduction="none") ** 2,
        [unit(4), unit(4)],
    ),
    ("cross", lambda T, F, a, b: T.cross(a, b, dim=1) ** 2, [arr(2, 3), arr(1, 3)]),
    ("cdist", lambda T, F, a, b: T.cdist(a, b) ** 2 + T.cdist(a, b, p=3.0), [arr(3, 2), arr(4, 2)]),
    ("pdist", lambda T, F, a: T.pdist(a) ** 2 + T.pdist(a, p=3.0), [arr(3, 2)]),
    ("dist", lambda T, F, a, b: T.dist(a, b) ** 2 + T.dist(a, b, 3.0), [arr(3), arr(3)]),
    ("Tensor.dist", lambda T, F, a, b: a.dist(b, 1.5) * a, [arr(3), arr(3)]),
    ("sgn", lambda T, F, a: T.sgn(a) * a**3, [away(4)]),
    ("Tensor.sgn", lambda T, F, a: a.sgn() * a**2, [away(4)]),
    ("Tensor.sgn_", lambda T, F, a: (a * 1.0).sgn_() * a * a, [away(4)]),
    ("renorm", lambda T, F, a: T.renorm(a, 2, 0, 1.0) ** 2, [arr(3, 4)]),
    ("Tensor.renorm", lambda T, F, a: a.renorm(1, 1, 0.5) * a, [arr(3, 4)]),
    ("Tensor.renorm_", lambda T, F, a: (a * 1.0).renorm_(2, 0, 1.0) * a, [arr(3, 4)]),
    ("diagonal_scatter", lambda T, F, a, b: T.diagonal_scatter(a, b) ** 2, [arr(3, 3), arr(3)]),
    (
        "Tensor.diagonal_scatter",
        lambda T, F, a, b: a.diagonal_scatter(b, 1) ** 3,
        [arr(3, 3), arr(2)],
    ),
    ("select_scatter", lambda T, F, a, b: T.select_scatter(a, b, 0, 1) ** 2, [arr(3, 4), arr(4)]),
    (
        "Tensor.select_scatter",
        lambda T, F, a, b: a.select_scatter(b, 1, 2) ** 3,
        [arr(3, 4), arr(3)],
    ),
    (
        "slice_scatter",
        lambda T, F, a, b: T.slice_scatter(a, b, 0, 0, 2) ** 2,
        [arr(4, 3), arr(2, 3)],
    ),
    (
        "Tensor.slice_scatter",
        lambda T, F, a, b: a.slice_scatter(b, 1, 1, 3) ** 3,
        [arr(4, 3), arr(4, 2)],
    ),
    ("F.alpha_dropout", lambda T, F, a: F.alpha_dropout(a, 0.5, training=False) ** 2, [arr(3)]),
    (
        "F.feature_alpha_dropout",
        lambda T, F, a: F.feature_alpha_dropout(a, 0.5, training=False) ** 3,
        [arr(2, 3, 2)],
    ),
    ("F.softplus", lambda T, F, a: F.softplus(a, beta=2.0), [arr(4)]),
    ("F.gelu", lambda T, F, a: F.gelu(a) + F.gelu(a, approximate="tanh"), [arr(4)]),
    ("F.silu", lambda T, F, a: F.silu(a), [arr(4)]),
    ("F.elu", lambda T, F, a: F.elu(a, alpha=0.7), [away(4)]),
    (
        "F.dropout",
        lambda T, F, a: F.dropout(a, 0.5, training=False) ** 2 + F.dropout(a, 0.0) ** 3,
        [arr(3)],
    ),
    # the layers' functions and activations of sourcegrad.nn (written with tensor ops)
    ("F.dropout1d", lambda T, F, a: F.dropout1d(a, 0.5, training=False) ** 2, [arr(2, 3, 2)]),
    ("F.dropout2d", lambda T, F, a: F.dropout2d(a, 0.5, training=False) ** 2, [arr(2, 2, 2, 2)]),
    ("F.dropout3d", lambda T, F, a: F.dropout3d(a, 0.0) ** 2, [arr(2, 1, 2, 2)]),
    (
        "F.bilinear",
        lambda T, F, x1, x2, w, b: F.bilinear(x1, x2, w, b) ** 2 + F.bilinear(x1, x2, w),
        [arr(2, 3), arr(2, 4), arr(2, 3, 4), arr(2)],
    ),
    (
        "F.embedding",
        lambda T, F, w: (
            (F.embedding(_i(T, [[0, 2], [2, 1]]), w) ** 2).sum(0)
            + F.embedding(_i(T, [1, 0]), w, padding_idx=1) ** 3
        ),
        [arr(3, 2)],
    ),
    (
        "F.layer_norm",
        lambda T, F, a, w, b: F.layer_norm(a, (3,), w, b) ** 2 + F.layer_norm(a, (2, 3), eps=1e-3),
        [arr(2, 2, 3), pos(3), arr(3)],
    ),
    ("F.rms_norm", lambda T, F, a, w: F.rms_norm(a, (3,), w, eps=1e-6) ** 2, [arr(2, 3), pos(3)]),
    (
        "F.group_norm",
        lambda T, F, a, w, b: F.group_norm(a, 2, w, b) ** 2,
        [arr(2, 4, 3), pos(4), arr(4)],
    ),
    ("F.cosine_similarity", lambda T, F, a, b: F.cosine_similarity(a, b), [arr(2, 3), arr(2, 3)]),
    ("F.pairwise_distance", lambda T, F, a, b: F.pairwise_distance(a, b), [arr(2, 3), arr(2, 3)]),
    ("F.glu", lambda T, F, a: F.glu(a, dim=1), [arr(2, 4)]),
    ("F.prelu", lambda T, F, a, w: F.prelu(a, w) * a, [away(2, 3), arr(3)]),
    # alpha exact in float32: torch's celu backward rounds alpha to float32
    ("F.celu", lambda T, F, a: F.celu(a, alpha=0.5), [away(4)]),
    ("F.selu", lambda T, F, a: F.selu(a), [away(4)]),
    ("F.mish", lambda T, F, a: F.mish(a), [arr(4)]),
    ("F.logsigmoid", lambda T, F, a: F.logsigmoid(a), [arr(4)]),
    ("F.softsign", lambda T, F, a: F.softsign(a), [away(4)]),
    ("F.tanhshrink", lambda T, F, a: F.tanhshrink(a), [arr(4)]),
    ("F.softmin", lambda T, F, a: F.softmin(a, dim=1), [arr(2, 3)]),
    # saturated only: inside, torch's backward uses 1/6 rounded to float32 (the slope inside is
    # compared with torch in float32 in tests/eager/test_nn_layers.py)
    ("F.hardsigmoid", lambda T, F, a: F.hardsigmoid(a * 4) * a, [[-1.0, -0.8, 0.8, 1.0]]),
    ("F.hardswish", lambda T, F, a: F.hardswish(a * 4), [arr(4)]),
    ("F.hardtanh", lambda T, F, a: F.hardtanh(a) * a, [[-1.7, -0.4, 0.3, 1.6]]),
    ("F.hardtanh_", lambda T, F, a: F.hardtanh_(a * 1, -0.5, 0.5) * a, [[-1.7, -0.4, 0.3, 1.6]]),
    ("F.relu6", lambda T, F, a: F.relu6(a) * a, [[-1.5, 0.5, 3.0, 7.0]]),
    ("F.hardshrink", lambda T, F, a: F.hardshrink(a, 0.5) * a, [[-0.9, -0.3, 0.2, 0.8]]),
    ("F.softshrink", lambda T, F, a: F.softshrink(a, 0.3) * a, [[-0.9, -0.1, 0.2, 0.8]]),
    ("F.threshold", lambda T, F, a: F.threshold(a, 0.1, 20.0) * a, [away(4)]),
    ("F.threshold_", lambda T, F, a: F.threshold_(a * 1, 0.1, 20.0) * a, [away(4)]),
    # eval mode: leaky_relu with slope (lower + upper) / 2, chosen exact in float32 (see above)
    ("F.rrelu", lambda T, F, a: F.rrelu(a, 0.125, 0.375) * a, [away(4)]),
    # complex values (real outputs of complex intermediates)
    ("real", lambda T, F, a: T.real(T.exp(a * (0.5 + 1j))) * a, [arr(3)]),
    ("Tensor.real", lambda T, F, a: (a * (1 + 2j) * T.exp(a * 1j)).real, [arr(3)]),
    ("imag", lambda T, F, a: T.imag(T.exp(a * (0.5 + 1j))) * a, [arr(3)]),
    ("Tensor.imag", lambda T, F, a: (a * (1 + 2j) * T.exp(a * 1j)).imag, [arr(3)]),
    ("conj", lambda T, F, a: T.real(T.conj(a * (1 + 2j)) * T.exp(a * 1j)), [arr(3)]),
    ("Tensor.conj", lambda T, F, a: T.imag((a * (1 + 2j)).conj() * T.exp(a * 1j)), [arr(3)]),
    ("angle", lambda T, F, a: T.angle(a * (1 + 2j) + 0.3j) * a, [arr(3)]),
    ("Tensor.angle", lambda T, F, a: (a * a * (1 - 2j) + 0.3j).angle(), [arr(3)]),
    # torch's functions numpy lacks (tests/eager/test_torch_gaps_ops.py compares more forms)
    ("logcumsumexp", lambda T, F, a: T.logcumsumexp(a, 1) * a, [arr(2, 4)]),
    ("cummax", lambda T, F, a: T.cummax(a, 1)[0] * a, [arr(2, 4)]),
    ("cummin", lambda T, F, a: T.cummin(a, 0)[0] * a, [arr(3, 2)]),
    ("aminmax", lambda T, F, a: T.aminmax(a, dim=1)[0] * T.aminmax(a, dim=1)[1], [arr(2, 4)]),
    ("mode", lambda T, F, a: T.mode(a, 1)[0] * a.sum(), [arr(2, 4)]),
    ("quantile", lambda T, F, a: T.quantile(a, 0.3, 1) ** 2, [arr(2, 5)]),
    ("nanquantile", lambda T, F, a: T.nanquantile(a, 0.6) * a, [arr(2, 5)]),
    ("rot90", lambda T, F, a: T.rot90(a, 1, [0, 1]) * a, [arr(3, 3)]),
    ("diag_embed", lambda T, F, a: T.diag_embed(a) ** 2, [arr(2, 3)]),
    ("Tensor.unfold", lambda T, F, a: a.unfold(1, 3, 1) ** 2, [arr(2, 5)]),
    (
        "baddbmm",
        lambda T, F, c, a, b: T.baddbmm(c, a, b, beta=0.5, alpha=2.0) * c,
        [arr(2, 2), arr(3, 2, 4), arr(3, 4, 2)],
    ),
    (
        "scatter_reduce",
        lambda T, F, a, b: T.scatter_reduce(a, 1, T.tensor([[0, 2, 0]]), b * b, "mean") * a,
        [arr(1, 3), arr(1, 3)],
    ),
    (
        "Tensor.scatter_reduce_",
        lambda T, F, a, b: (a * 1).scatter_reduce_(1, T.tensor([[1, 1, 0]]), b * a, "amax") * b,
        [arr(1, 3), arr(1, 3)],
    ),
    # torch's functions added with the missing API table rows (test_torch_gaps_more.py)
    ("as_strided", lambda T, F, a: T.as_strided(a, (2, 2), (1, 2)) ** 2 * 3, [arr(6)]),
    ("Tensor.as_strided", lambda T, F, a: a.as_strided((3, 2), (2, 1), 1) ** 3, [arr(8)]),
    ("block_diag", lambda T, F, a, b: T.block_diag(a, b) ** 2 * 0.5, [arr(2, 2), arr(1, 3)]),
    ("cartesian_prod", lambda T, F, a, b: T.cartesian_prod(a, b) ** 3, [arr(2), arr(3)]),
    ("combinations", lambda T, F, a: T.combinations(a, 2) ** 3, [arr(4)]),
    ("cov", lambda T, F, a: T.cov(a) ** 2, [arr(3, 5)]),
    ("Tensor.cov", lambda T, F, a: a.cov(correction=0) ** 2, [arr(2, 4)]),
    ("corrcoef", lambda T, F, a: T.corrcoef(a) ** 2, [arr(3, 5)]),
    ("Tensor.corrcoef", lambda T, F, a: a.corrcoef() ** 2, [arr(2, 4)]),
    ("deg2rad", lambda T, F, a: T.deg2rad(a) * a, [arr(3)]),
    ("Tensor.deg2rad", lambda T, F, a: a.deg2rad() * a, [arr(3)]),
    ("rad2deg", lambda T, F, a: T.rad2deg(a) * a, [arr(3)]),
    ("Tensor.rad2deg", lambda T, F, a: a.rad2deg() * a, [arr(3)]),
    ("det", lambda T, F, a: T.det(a) * a, [arr(3, 3)]),
    ("Tensor.det", lambda T, F, a: a.det() ** 2, [arr(3, 3)]),
    ("logdet", lambda T, F, a: T.logdet(a @ a.mT + T.eye(3, dtype=a.dtype)), [arr(3, 3)]),
    ("Tensor.logdet", lambda T, F, a: (a @ a.mT + T.eye(3, dtype=a.dtype)).logdet(), [arr(3, 3)]),
    ("slogdet", lambda T, F, a: T.slogdet(a)[1] * a, [arr(3, 3)]),
    ("Tensor.slogdet", lambda T, F, a: a.slogdet()[1] ** 2, [arr(3, 3)]),
    ("matrix_power", lambda T, F, a: T.matrix_power(a, 3) * a, [arr(3, 3)]),
    ("Tensor.matrix_power", lambda T, F, a: a.matrix_power(2) ** 2, [arr(3, 3)]),
    ("matrix_exp", lambda T, F, a: T.matrix_exp(a * 0.5) ** 2, [arr(3, 3)]),
    ("Tensor.matrix_exp", lambda T, F, a: (a * 0.5).matrix_exp() * a, [arr(3, 3)]),
    (
        "cholesky",
        lambda T, F, a: T.cholesky(a @ a.mT + 3 * T.eye(3, dtype=a.dtype), True) ** 2,
        [arr(3, 3)],
    ),
    (
        "cholesky_solve",
        lambda T, F, b, c: T.cholesky_solve(b * b, T.tril(c) + 2 * T.eye(3, dtype=c.dtype)),
        [arr(3, 2), arr(3, 3)],
    ),
    (
        "cholesky_inverse",
        lambda T, F, c: T.cholesky_inverse(T.triu(c) + 2 * T.eye(3, dtype=c.dtype), True) * c,
        [arr(3, 3)],
    ),
    ("view_as_real", lambda T, F, a: T.view_as_real(T.view_as_complex(a) ** 3), [arr(3, 2)]),
    (
        "stft",
        lambda T, F, a: T.view_as_real(
            T.stft(a * a, 8, 2, window=T.hann_window(8, dtype=a.dtype), return_complex=True)
        ),
        [arr(2, 20)],
    ),
    (
        "istft",
        lambda T, F, a: T.istft(
            T.view_as_complex(a * a), 8, 2, window=T.hann_window(8, dtype=a.dtype), length=12
        ),
        [arr(5, 5, 2)],
    ),
    ("view_as_complex", lambda T, F, a: T.view_as_real(T.view_as_complex(a * a) ** 2), [arr(2, 2)]),
    (
        "orgqr",
        lambda T, F, a, t: T.orgqr(a, t) ** 2 * 2,
        [arr(4, 3), arr(2)],
    ),
    ("Tensor.orgqr", lambda T, F, a, t: a.orgqr(t) ** 3, [arr(4, 3), arr(2)]),
    (
        "index_copy",
        lambda T, F, a, b: T.index_copy(a, 0, _i(T, [2, 0]), b * b) * a,
        [arr(3, 2), arr(2, 2)],
    ),
    (
        "Tensor.index_copy",
        lambda T, F, a, b: a.index_copy(1, _i(T, [1]), b) ** 2,
        [arr(2, 3), arr(2, 1)],
    ),
    (
        "Tensor.index_copy_",
        lambda T, F, a, b: (a * 1).index_copy_(0, _i(T, [1]), b * a[:1]) ** 2,
        [arr(2, 3), arr(1, 3)],
    ),
    (
        "index_reduce",
        lambda T, F, a, b: T.index_reduce(a, 0, _i(T, [2, 0, 2]), b, "mean") * a,
        [arr(3, 2), arr(3, 2)],
    ),
    (
        "Tensor.index_reduce",
        lambda T, F, a, b: a.index_reduce(0, _i(T, [1, 1]), b * b, "prod") ** 2,
        [away(2, 2), away(2, 2)],
    ),
    (
        "Tensor.index_reduce_",
        lambda T, F, a, b: (a * 1).index_reduce_(0, _i(T, [0, 1]), b, "amax") * b,
        [distinct(2, 2), distinct(2, 2)],
    ),
    # (self not differentiated: torch's copysign_ needs the self it overwrites)
    (
        "Tensor.copysign_",
        lambda T, F, a, b: T.full_like(a, 2.0).copysign_(a) * b * b,
        [away(3), arr(3)],
    ),
    # s54b: in-place ops on a non-leaf copy, and their out-of-place forms
    (
        "Tensor.addcmul_",
        lambda T, F, a, b, c: (a * 1).addcmul_(b, c, value=0.5) * a,
        [arr(2, 3), arr(3), arr(2, 3)],
    ),
    (
        "Tensor.addcdiv_",
        lambda T, F, a, b, c: (a * 1).addcdiv_(b, c, value=2) * a,
        [arr(2, 3), arr(2, 3), pos(2, 3)],
    ),
    ("Tensor.lerp_", lambda T, F, a, b, w: (a * 1).lerp_(b, w) * a, [arr(2, 3), arr(3), arr(2, 3)]),
    ("Tensor.atan2_", lambda T, F, a, b: (a * 1).atan2_(b) * a, [arr(2, 3), away(3)]),
    (
        "Tensor.fill_diagonal_",
        lambda T, F, a: (a * a).fill_diagonal_(2.0, wrap=True) * a,
        [arr(5, 2)],
    ),
    (
        "Tensor.masked_scatter_",
        lambda T, F, a, s: (a * 1).masked_scatter_(a > 0, s * s) * a,
        [away(2, 3), arr(6)],
    ),
    (
        "masked_scatter",
        lambda T, F, a, s: T.masked_scatter(a, a > 0, s * s) * a,
        [away(2, 3), arr(6)],
    ),
    (
        "Tensor.put_",
        lambda T, F, a, s: (a * 1).put_(_i(T, [4, -1, 4]), s * s, accumulate=True) * a,
        [arr(2, 3), arr(3)],
    ),
    ("put", lambda T, F, a, s: T.put(a, _i(T, [0, 5]), s * s) * a, [arr(2, 3), arr(2)]),
    ("Tensor.sum_to_size", lambda T, F, a: a.sum_to_size(1, 3) ** 2, [arr(2, 3)]),
]

# Cases whose second derivative torch refuses: only their first derivatives are compared with
# torch's (the second ones with finite differences), and torch must raise this message.
TORCH_NO_DOUBLE_BACKWARD = {
    "F.hardsigmoid": "derivative for aten::hardsigmoid_backward is not implemented",
    "cdist": "the derivative for '_cdist_backward' is not implemented",
    "pdist": "the derivative for '_pdist_backward' is not implemented",
}

# Exposed callables that are not differentiable ops, by the reason they have no case.
NOT_DIFFERENTIABLE = {
    "memory sharing (set_: torch's node has no derivative; refused while grad is recorded)": [
        "Tensor.set_"
    ],
    "counts (torch's histc has no derivative either)": ["histc", "Tensor.histc"],
    "integer or boolean results": [
        "isin",
        "isposinf",
        "isneginf",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "not_equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "logical_and",
        "logical_or",
        "logical_xor",
        "logical_not",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_not",
        "isnan",
        "isinf",
        "isfinite",
        "isclose",
        "allclose",
        "equal",
        "argmax",
        "argmin",
        "argsort",
        "nonzero",
        "argwhere",
        "count_nonzero",
        "all",
        "any",
        "unique",
        "is_tensor",
        "is_floating_point",
        "is_complex",
        "numel",
        "is_nonzero",
        "F.one_hot",
        "Tensor.floor_divide_",
        "__floordiv__",
        "__rfloordiv__",
        "__ifloordiv__",
        "__and__",
        "__rand__",
        "__or__",
        "__ror__",
        "__xor__",
        "__rxor__",
        "__iand__",
        "__ior__",
        "__ixor__",
        "bitwise_left_shift",
        "bitwise_right_shift",
        "Tensor.bitwise_left_shift",
        "Tensor.bitwise_right_shift",
        "Tensor.bitwise_left_shift_",
        "Tensor.bitwise_right_shift_",
        "__lshift__",
        "__rlshift__",
        "__rshift__",
        "__rrshift__",
        "__ilshift__",
        "__irshift__",
        "__invert__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "Tensor.long",
        "Tensor.int",
        "Tensor.short",
        "Tensor.char",
        "Tensor.byte",
        "Tensor.bool",
    ],
    "detaches from the graph (torch.detach_)": ["detach_"],
    "torch records them with a NotImplemented node (see test_not_implemented_like_torch)": [
        "floor_divide",
        "__rmod__",
    ],
    "casts to another precision (the same code as Tensor.to, checked there)": [
        "Tensor.float",
        "Tensor.half",
        "Tensor.cfloat",
        "Tensor.cdouble",
    ],
    "factories and random numbers": [
        "tril_indices",
        "triu_indices",
        "tensor",
        "as_tensor",
        "asarray",
        "from_numpy",
        "zeros",
        "ones",
        "full",
        "empty",
        "eye",
        "arange",
        "linspace",
        "logspace",
        "rand",
        "randn",
        "randint",
        "randperm",
        "normal",
        "bernoulli",
        "multinomial",
        "zeros_like",
        "ones_like",
        "full_like",
        "empty_like",
        "rand_like",
        "randn_like",
        "randint_like",
        "Tensor.new_zeros",
        "Tensor.new_ones",
        "Tensor.new_empty",
        "Tensor.new_full",
        "Tensor.new_tensor",
        "Tensor.uniform_",
        "Tensor.normal_",
        "Tensor.bernoulli_",
        "Tensor.random_",
        "Tensor.exponential_",
        "hann_window",
        "hamming_window",
        "blackman_window",
        "bartlett_window",
        "kaiser_window",
    ],
    "settings and state": [
        "get_default_dtype",
        "set_default_dtype",
        "get_default_device",
        "set_default_device",
        "promote_types",
        "result_type",
        "can_cast",
        "set_printoptions",
        "is_grad_enabled",
        "is_inference_mode_enabled",
        "is_anomaly_enabled",
        "is_anomaly_check_nan_enabled",
        "manual_seed",
        "seed",
        "initial_seed",
        "get_rng_state",
        "set_rng_state",
    ],
    "torch's functions numpy lacks: integer results": ["bincount", "searchsorted", "bucketize"],
    "no derivative, as torch's (test_torch_gaps_ops.py: its backward raises NoRuleError)": [
        "heaviside",
        "Tensor.heaviside_",
    ],
}


def _target(key):
    """The function object a key names (aliases share one object, hence one case)."""
    if key.startswith("Tensor."):
        name = key[len("Tensor.") :]
        if name in _methods.PROPERTIES:
            return _methods.PROPERTIES[name]
        return _methods.METHODS[name]
    if key.startswith("F."):
        return getattr(sF, key[2:])
    if key.startswith("__"):
        return _methods.OPERATORS[key]
    # (a function given out= by eager/out_forms.py is its op's: the method's case covers it)
    obj = getattr(sg, key)
    return getattr(obj, "op", obj)


def _exposed():
    keys = []
    from sourcegrad import eager

    for name in eager.__all__:
        obj = getattr(eager, name)
        if callable(obj) and inspect.isroutine(obj):
            keys.append(name)
    keys += ["Tensor." + n for n in _methods.METHODS]
    keys += ["Tensor." + n for n in _methods.PROPERTIES]
    keys += list(_methods.OPERATORS)
    keys += [
        "F." + n
        for n in dir(sF)
        if not n.startswith("_")
        and inspect.isfunction(getattr(sF, n))
        and getattr(sF, n).__module__ == sF.__name__
    ]
    return keys


def test_every_exposed_op_has_a_case():
    covered = {id(_target(key)) for key, _, _ in CASES}
    # ops made from the registry's entries are checked from their rows in test_registry_ops
    covered |= {
        id(_target(k))
        for k in _exposed()
        if getattr(_target(k), "entry", None) is not None and _target(k).entry.name in REGISTRY_ROWS
    }
    skipped = {id(_target(k)) for keys in NOT_DIFFERENTIABLE.values() for k in keys}
    missing = [k for k in _exposed() if id(_target(k)) not in covered | skipped]
    assert missing == [], f"exposed ops without a second-derivative case: {missing}"


def test_not_implemented_like_torch():
    """`x // y` and `number % x` have no derivative, in torch as here: backward raises."""
    x = sg.tensor([1.5, 2.5], requires_grad=True)
    for y, op in [
        (x // 2, "floor_divide"),
        (sg.floor_divide(x, x), "floor_divide"),
        (3.0 % x, "remainder"),
    ]:
        assert y.grad_fn.name() == "torch::autograd::NotImplemented"
        with pytest.raises(RuntimeError, match=f"derivative for aten::{op} is not implemented"):
            y.sum().backward()


# ---- the check ---------------------------------------------------------------------------------


def _flat(out):
    if isinstance(out, (tuple, list)):
        items = []
        for o in out:
            items.extend(_flat(o))
        return items
    return [out]


def _float_outputs(T, out):
    return [o for o in _flat(out) if isinstance(o, T.Tensor) and o.dtype == T.float64]


def _first(T, F, fn, arrays, weights, create):
    xs = [T.tensor(a, requires_grad=True) for a in arrays]
    outs = _float_outputs(T, fn(T, F, *xs))
    loss = 0.0
    for o, w in zip(outs, weights):
        loss = loss + (o * T.tensor(w)).sum()
    if not isinstance(loss, T.Tensor) or not loss.requires_grad:
        return xs, [None] * len(xs)
    return xs, list(T.autograd.grad(loss, xs, create_graph=create, allow_unused=True))


def _second(T, F, fn, arrays, weights, vs):
    xs, grads = _first(T, F, fn, arrays, weights, True)
    total = 0.0
    for g, v in zip(grads, vs):
        if g is not None:
            total = total + (g * T.tensor(v)).sum()
    if not isinstance(total, T.Tensor) or not total.requires_grad:
        return [np.zeros_like(a) for a in arrays]
    second = T.autograd.grad(total, xs, allow_unused=True)
    return [np.zeros_like(a) if s is None else s.detach().numpy() for a, s in zip(arrays, second)]


def _as_arrays(grads, arrays):
    return [np.zeros_like(a) if g is None else g.detach().numpy() for g, a in zip(grads, arrays)]


def _directional_first(fn, arrays, weights, vs):
    _, grads = _first(sg, sF, fn, arrays, weights, False)
    return sum(float((g.numpy() * v).sum()) for g, v in zip(grads, vs) if g is not None)


def _numeric(fn, arrays, weights, vs):
    result = []
    for a in arrays:
        num = np.zeros_like(a)
        for k in np.ndindex(a.shape):
            saved = a[k]
            a[k] = saved + EPS
            plus = _directional_first(fn, arrays, weights, vs)
            a[k] = saved - EPS
            minus = _directional_first(fn, arrays, weights, vs)
            a[k] = saved
            num[k] = (plus - minus) / (2 * EPS)
        result.append(num)
    return result


try:
    import torch as _torch
    import torch.nn.functional as _tF
except ImportError:  # pragma: no cover - torch is optional
    _torch = None


def _ids():
    seen = {}
    out = []
    for key, _, _ in CASES:
        n = seen[key] = seen.get(key, 0) + 1
        out.append(key if n == 1 else f"{key}-{n}")
    return out


@pytest.mark.parametrize("key, fn, inputs", CASES, ids=_ids())
def test_second_derivative(key, fn, inputs):
    arrays = [np.array(a, dtype=np.float64) for a in inputs]
    with sg.no_grad():
        outs = _float_outputs(sg, fn(sg, sF, *[sg.tensor(a) for a in arrays]))
    weights = [R.standard_normal(tuple(o.shape)) for o in outs]
    vs = [R.standard_normal(a.shape) for a in arrays]

    analytic = _second(sg, sF, fn, arrays, weights, vs)
    numeric = _numeric(fn, arrays, weights, vs)
    for i, (got, num) in enumerate(zip(analytic, numeric)):
        np.testing.assert_allclose(
            got,
            num,
            rtol=1e-4,
            atol=1e-5,
            err_msg=f"{key}: second derivative of input {i} vs finite differences",
        )
    if _torch is None:
        return
    _, first = _first(sg, sF, fn, arrays, weights, False)
    _, tfirst = _first(_torch, _tF, fn, arrays, weights, False)
    for i, (got, exp) in enumerate(zip(_as_arrays(first, arrays), _as_arrays(tfirst, arrays))):
        np.testing.assert_allclose(
            got,
            exp,
            rtol=1e-9,
            atol=1e-12,
            err_msg=f"{key}: first derivative of input {i} vs torch",
        )
    if key in TORCH_NO_DOUBLE_BACKWARD:
        with pytest.raises(RuntimeError, match=TORCH_NO_DOUBLE_BACKWARD[key]):
            _second(_torch, _tF, fn, arrays, weights, vs)
        return
    expected = _second(_torch, _tF, fn, arrays, weights, vs)
    for i, (got, exp) in enumerate(zip(analytic, expected)):
        np.testing.assert_allclose(
            got,
            exp,
            rtol=1e-9,
            atol=1e-12,
            err_msg=f"{key}: second derivative of input {i} vs torch",
        )
