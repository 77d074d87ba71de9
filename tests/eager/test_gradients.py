"""Every rule the eager mode uses, checked against central finite differences in float64.

Each case runs an op through the eager Tensor and compares the gradient that
backward gives (the rule's VJP lambdas called on arrays) with central
differences. Most cases also check the second derivative: the gradient is
computed with `create_graph=True` (the same lambdas called on Tensors, through
`__array_function__`), differentiated again, and compared with finite
differences of the first derivative.

`test_every_rule_has_a_case` fails when an op starts using a rule that no case
here exercises.
"""

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.nn.functional as F
from sourcegrad.eager.spec import ALL_SPECS

from ..test_registry_ops import ELSEWHERE as REGISTRY_ELSEWHERE
from ..test_registry_ops import ROWS as REGISTRY_ROWS

R = np.random.default_rng(1234)
EPS = 1e-6


def arr(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape)


def pos(*shape):
    return R.uniform(0.5, 2.0, shape)


def away(*shape):
    """Values at least 0.2 away from 0 (for abs, relu, sign, ...)."""
    a = R.uniform(0.2, 1.0, shape)
    return a * R.choice([-1.0, 1.0], shape)


def distinct(*shape):
    """No ties (for max, min, sort)."""
    n = int(np.prod(shape))
    return (R.permutation(n) / n + R.uniform(0, 0.01, n)).reshape(shape) - 0.5


def _outputs(out):
    return out if isinstance(out, (tuple, list)) else (out,)


def _weighted(fn, tensors, weights):
    outs = _outputs(fn(*tensors))
    total = 0.0
    for o, w in zip(outs, weights):
        total = total + (o * sg.tensor(w)).sum()
    return total


def _numeric_grad(scalar, arrays, i):
    a = arrays[i]
    num = np.zeros_like(a)
    for k in np.ndindex(a.shape):
        saved = a[k]
        a[k] = saved + EPS
        plus = scalar(arrays)
        a[k] = saved - EPS
        minus = scalar(arrays)
        a[k] = saved
        num[k] = (plus - minus) / (2 * EPS)
    return num


def check_first(fn, inputs, rtol=1e-5, atol=1e-6):
    arrays = [np.array(a, dtype=np.float64) for a in inputs]
    tensors = [sg.tensor(a, requires_grad=True) for a in arrays]
    outs = _outputs(fn(*tensors))
    weights = [R.standard_normal(tuple(o.shape)) for o in outs]
    _weighted(fn, tensors, weights).backward()

    def scalar(arrs):
        with sg.no_grad():
            return float(_weighted(fn, [sg.tensor(a) for a in arrs], weights))

    for i, t in enumerate(tensors):
        expected = _numeric_grad(scalar, arrays, i)
        got = t.grad.numpy() if t.grad is not None else np.zeros_like(arrays[i])
        np.testing.assert_allclose(
            got, expected, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}"
        )
    return weights


def check_second(fn, inputs, weights, rtol=1e-4, atol=1e-5):
    """d/dx <grad_x(sum(w * f(x))), v> with create_graph, against finite differences."""
    arrays = [np.array(a, dtype=np.float64) for a in inputs]
    vs = [R.standard_normal(a.shape) for a in arrays]

    def first(tensors, create):
        loss = _weighted(fn, tensors, weights)
        grads = sg.autograd.grad(loss, tensors, create_graph=create, allow_unused=True)
        return grads

    tensors = [sg.tensor(a, requires_grad=True) for a in arrays]
    grads = first(tensors, True)
    total = 0.0
    for g, v in zip(grads, vs):
        if g is not None:
            total = total + (g * sg.tensor(v)).sum()
    if not isinstance(total, sg.Tensor) or not total.requires_grad:
        analytic = [np.zeros_like(a) for a in arrays]
    else:
        second = sg.autograd.grad(total, tensors, allow_unused=True)
        analytic = [np.zeros_like(a) if s is None else s.numpy() for a, s in zip(arrays, second)]

    def scalar(arrs):
        ts = [sg.tensor(a, requires_grad=True) for a in arrs]
        gs = first(ts, False)
        return sum(float((g.numpy() * v).sum()) for g, v in zip(gs, vs) if g is not None)

    for i in range(len(arrays)):
        expected = _numeric_grad(scalar, arrays, i)
        np.testing.assert_allclose(
            analytic[i], expected, rtol=rtol, atol=atol, err_msg=f"second derivative, input {i}"
        )


def _setitem_scalar(x):
    y = x * 1
    y[0, 1] = 5.0
    return y


def _setitem_tensor(x, v):
    y = x * 2
    y[:, 1] = v
    return y


def _index_put(x, v):
    y = x * 1
    y[[0, 1, 1], [2, 0, 2]] = v
    return y


def _index_put_accumulate(x, v):
    y = x * 1
    y.index_put_((sg.tensor([0, 0, 1]), sg.tensor([1, 1, 2])), v, accumulate=True)
    return y


def _view_inplace(x, s):
    y = x * 1
    y[1:, :2].mul_(s)
    return y


def _zero(x):
    y = x * 3
    y[0].zero_()
    return y


def _fill_tensor(x, s):
    y = x * 1
    y[1].fill_(s.sum())
    return y


def _inplace_chain(x):
    y = x * 2
    y.add_(x)
    y.mul_(x)
    y.exp_()  # exp_ saves its result: it must come last, or backward refuses (as torch)
    return y


# (rule, case id, function, inputs, check the second derivative)
CASES = [
    ("add", "broadcast", lambda a, b: a + b, [arr(2, 3), arr(3)], True),
    ("add", "scalar on the left", lambda a: 2 + a, [arr(3)], True),
    ("add_alpha", "alpha", lambda a, b: sg.add(a, b, alpha=2.5), [arr(2, 3), arr(2, 3)], True),
    ("subtract", "broadcast", lambda a, b: a - b, [arr(2, 3), arr(2, 1)], True),
    ("subtract", "rsub", lambda a: 1 - a, [arr(3)], True),
    ("sub_alpha", "alpha", lambda a, b: sg.sub(a, b, alpha=0.5), [arr(3), arr(3)], True),
    ("multiply", "broadcast", lambda a, b: a * b, [arr(2, 3), arr(1, 3)], True),
    ("multiply", "0-dim", lambda a, b: a * b, [arr(2, 3), arr()], True),
    ("divide", "tensors", lambda a, b: a / b, [arr(2, 3), pos(3)], True),
    ("reciprocal", "scalar over tensor", lambda a: 2 / a, [pos(4)], True),
    ("power", "integer exponent", lambda a: a**3, [arr(4)], True),
    ("power", "fractional exponent", lambda a: a**2.5, [pos(4)], True),
    ("power", "tensor exponent", lambda a, b: a**b, [pos(2, 3), arr(3)], True),
    ("power", "scalar base", lambda a: 2**a, [arr(4)], True),
    ("power", "square", lambda a: a.square(), [arr(4)], True),
    ("negative", "neg", lambda a: -a, [arr(3)], True),
    ("positive", "clone", lambda a: a.clone() * a, [arr(3)], True),
    ("matmul", "mm", lambda a, b: a @ b, [arr(2, 3), arr(3, 4)], True),
    ("matmul", "mv", lambda a, b: a @ b, [arr(2, 3), arr(3)], True),
    ("matmul", "dot", lambda a, b: a @ b, [arr(3), arr(3)], True),
    ("matmul", "vector-matrix", lambda a, b: a @ b, [arr(3), arr(3, 2)], True),
    ("matmul", "batched", lambda a, b: a @ b, [arr(2, 2, 3), arr(2, 3, 2)], True),
    ("matmul", "broadcast batch", lambda a, b: a @ b, [arr(2, 1, 2, 3), arr(3, 3, 2)], True),
    ("matmul", "3-d by matrix", lambda a, b: a @ b, [arr(2, 2, 3), arr(3, 2)], True),
    ("matmul", "bmm", lambda a, b: sg.bmm(a, b), [arr(2, 2, 3), arr(2, 3, 2)], True),
    ("matmul", "outer", lambda a, b: sg.outer(a, b), [arr(3), arr(2)], True),
    (
        "einsum",
        "matrix product",
        lambda a, b: sg.einsum("ij,jk->ik", a, b),
        [arr(2, 3), arr(3, 4)],
        True,
    ),
    ("einsum", "diagonal", lambda a: sg.einsum("ii->i", a), [arr(3, 3)], True),
    ("einsum", "trace, operands as a list", lambda a: sg.einsum("ii", [a]), [arr(3, 3)], True),
    (
        "einsum",
        "a diagonal among three operands, ellipsis",
        lambda a, b, c: sg.einsum("...ij,jj,j->...i", a, b, c),
        [arr(2, 3, 4), arr(4, 4), arr(4)],
        True,
    ),
    (
        "addmm",
        "linear with bias",
        lambda x, w, b: F.linear(x, w, b),
        [arr(2, 3), arr(4, 3), arr(4)],
        True,
    ),
    ("mod_op", "scalar divisor", lambda a: a % 0.7 * a, [R.uniform(0.1, 0.6, 4)], True),
    (
        "mod_op",
        "tensor divisor",
        lambda a, b: a % b * b,
        [R.uniform(1.1, 1.4, 3), R.uniform(0.8, 1.0, 3)],
        True,
    ),
    ("fmod", "scalar divisor", lambda a: sg.fmod(a, 0.7) * a, [R.uniform(0.1, 0.6, 4)], True),
    (
        "fmod",
        "tensor divisor",
        lambda a, b: sg.fmod(a, b) * b,
        [R.uniform(1.1, 1.4, 3), R.uniform(0.8, 1.0, 3)],
        True,
    ),
    (
        "torch_div_rounding",
        "floor and trunc",
        lambda a, b: (
            sg.div(a, b, rounding_mode="floor") * a + sg.div(a, b, rounding_mode="trunc") * b
        ),
        [R.uniform(1.1, 1.4, 3), R.uniform(0.8, 1.0, 3)],
        True,
    ),
    ("exp", "exp", lambda a: a.exp(), [arr(3)], True),
    ("exp2", "exp2", lambda a: a.exp2(), [arr(3)], True),
    ("expm1", "expm1", lambda a: a.expm1(), [arr(3)], True),
    ("log", "log", lambda a: a.log(), [pos(3)], True),
    ("log1p", "log1p", lambda a: a.log1p(), [pos(3)], True),
    ("log2", "log2", lambda a: a.log2(), [pos(3)], True),
    ("log10", "log10", lambda a: a.log10(), [pos(3)], True),
    ("sqrt", "sqrt", lambda a: a.sqrt(), [pos(3)], True),
    ("rsqrt", "rsqrt", lambda a: a.rsqrt(), [pos(3)], True),
    ("reciprocal", "reciprocal", lambda a: a.reciprocal(), [pos(3)], True),
    ("sin", "sin", lambda a: a.sin(), [arr(3)], True),
    ("cos", "cos", lambda a: a.cos(), [arr(3)], True),
    ("tan", "tan", lambda a: a.tan(), [arr(3)], True),
    ("arcsin", "asin", lambda a: a.asin(), [arr(3) * 0.8], True),
    ("arccos", "acos", lambda a: a.acos(), [arr(3) * 0.8], True),
    ("arctan", "atan", lambda a: a.atan(), [arr(3)], True),
    ("sinh", "sinh", lambda a: a.sinh(), [arr(3)], True),
    ("cosh", "cosh", lambda a: a.cosh(), [arr(3)], True),
    ("tanh", "tanh", lambda a: a.tanh(), [arr(3)], True),
    ("arcsinh", "asinh", lambda a: a.asinh(), [arr(3)], True),
    ("arccosh", "acosh", lambda a: a.acosh(), [R.uniform(1.5, 3.0, 3)], True),
    ("arctanh", "atanh", lambda a: a.atanh(), [arr(3) * 0.8], True),
    ("absolute", "abs", lambda a: a.abs(), [away(4)], True),
    ("erf", "erf", lambda a: a.erf(), [arr(3)], True),
    ("sigmoid", "sigmoid", lambda a: a.sigmoid(), [arr(3) * 3], True),
    ("relu", "relu", lambda a: a.relu(), [away(5)], True),
    ("leaky_relu", "leaky_relu", lambda a: F.leaky_relu(a, 0.1), [away(5)], True),
    ("gelu", "gelu", lambda a: F.gelu(a * 3), [arr(2, 5)], True),
    ("maximum", "maximum", lambda a, b: sg.maximum(a, b), [distinct(2, 3), distinct(3)], True),
    ("minimum", "minimum", lambda a, b: sg.minimum(a, b), [distinct(2, 3), distinct(2, 3)], True),
    ("torch_fmax", "fmax", lambda a, b: sg.fmax(a, b), [distinct(2, 3), distinct(3)], True),
    ("torch_fmin", "fmin", lambda a, b: sg.fmin(a, b), [distinct(2, 3), distinct(2, 3)], True),
    ("logaddexp", "logaddexp", lambda a, b: sg.logaddexp(a, b), [arr(3), arr(3)], True),
    ("arctan2", "atan2", lambda a, b: sg.atan2(a, b), [arr(3), pos(3)], True),
    ("hypot", "hypot", lambda a, b: sg.hypot(a, b), [pos(3), pos(3)], True),
    ("where", "where", lambda a, b: sg.where(a > 0, a, b), [away(2, 3), arr(3)], True),
    ("where", "scalar other", lambda a: sg.where(a > 0, a * a, 0.0), [away(4)], True),
    ("where", "masked_fill", lambda a: (a * 2).masked_fill(a > 0, 1.5), [away(4)], True),
    ("clip", "scalar bounds", lambda a: a.clamp(-0.5, 0.5), [away(6) * 0.9], True),
    (
        "clip",
        "tensor bounds",
        lambda a, lo, hi: sg.clamp(a, lo, hi),
        [np.array([-2.0, 0.3, 2.0]), np.array([-1.0, -1.0, -1.0]), np.array([1.0, 1.0, 1.0])],
        True,
    ),
    ("clip", "clamp_min", lambda a: a.clamp_min(0.1), [away(5)], True),
    ("clip", "clamp_max", lambda a: a.clamp_max(0.1), [away(5)], True),
    ("sum", "all", lambda a: a.sum(), [arr(2, 3)], True),
    ("sum", "dim", lambda a: a.sum(1), [arr(2, 3)], True),
    ("sum", "dims keepdim", lambda a: a.sum((0, 2), keepdim=True), [arr(2, 3, 2)], True),
    ("mean", "all", lambda a: a.mean(), [arr(2, 3)], True),
    ("mean", "dim", lambda a: a.mean(-1, keepdim=True), [arr(2, 3)], True),
    ("prod", "all", lambda a: a.prod(), [pos(4)], True),
    ("prod", "dim", lambda a: a.prod(1), [pos(2, 3)], True),
    ("prod", "with a zero", lambda a: (a * sg.tensor([0.0, 1.0, 1.0])).prod(), [pos(3)], True),
    ("max", "full", lambda a: a.max(), [distinct(2, 3)], True),
    ("min", "full", lambda a: a.min(), [distinct(2, 3)], True),
    ("amax", "dim", lambda a: a.amax(1), [distinct(2, 3)], True),
    ("amin", "dims", lambda a: a.amin((0, 1)), [distinct(2, 3)], True),
    ("var", "unbiased", lambda a: a.var(), [arr(5)], True),
    ("var", "dim biased", lambda a: a.var(1, correction=0), [arr(2, 4)], True),
    ("std", "unbiased", lambda a: a.std(), [arr(5)], True),
    ("std", "dim keepdim", lambda a: a.std(0, keepdim=True), [arr(3, 2)], True),
    ("vector_norm", "2-norm", lambda a: a.norm(), [arr(2, 3)], True),
    ("vector_norm", "dim", lambda a: a.norm(dim=1), [arr(2, 3)], True),
    ("vector_norm", "1-norm", lambda a: a.norm(p=1), [away(4)], True),
    ("vector_norm", "inf-norm", lambda a: a.norm(p=float("inf")), [distinct(4)], True),
    ("vector_norm", "3-norm", lambda a: a.norm(p=3, dim=0), [away(3, 2)], True),
    ("logsumexp", "dim", lambda a: a.logsumexp(1), [arr(2, 3)], True),
    ("softmax", "dim", lambda a: a.softmax(1), [arr(2, 3)], True),
    ("log_softmax", "dim", lambda a: a.log_softmax(0), [arr(2, 3)], True),
    (
        "nll_loss",
        "cross_entropy",
        lambda a: F.cross_entropy(a, sg.tensor([0, 2])),
        [arr(2, 3)],
        True,
    ),
    (
        "nll_loss",
        "weights and ignore_index",
        lambda a: F.cross_entropy(
            a, sg.tensor([0, 2, -100]), weight=sg.tensor([1.0, 2.0, 0.5], dtype=sg.float64)
        ),
        [arr(3, 3)],
        True,
    ),
    (
        "nll_loss",
        "sum",
        lambda a: F.nll_loss(a, sg.tensor([1, 1]), reduction="sum"),
        [arr(2, 3)],
        True,
    ),
    (
        "nll_loss",
        "none",
        lambda a: F.nll_loss(a, sg.tensor([1, 0]), reduction="none"),
        [arr(2, 3)],
        True,
    ),
    ("mse_loss", "both inputs", lambda a, b: F.mse_loss(a, b), [arr(2, 3), arr(2, 3)], True),
    ("mse_loss", "none", lambda a, b: F.mse_loss(a, b, reduction="none"), [arr(3), arr(3)], True),
    (
        "smooth_l1_loss",
        "beta",
        lambda a, b: F.smooth_l1_loss(a, b, beta=0.7),
        [arr(2, 3), arr(2, 3)],
        True,
    ),
    (
        "smooth_l1_loss",
        "none",
        lambda a, b: F.smooth_l1_loss(a, b, reduction="none"),
        [arr(4), arr(4)],
        True,
    ),
    (
        "huber_loss",
        "delta",
        lambda a, b: F.huber_loss(a, b, reduction="sum", delta=0.6),
        [arr(2, 3), arr(2, 3)],
        True,
    ),
    (
        "binary_cross_entropy",
        "weight",
        lambda a, b: F.binary_cross_entropy(
            a, b, weight=sg.tensor([1.0, 2.0, 0.5], dtype=sg.float64)
        ),
        [arr(2, 3, lo=0.1, hi=0.9), arr(2, 3, lo=0.0, hi=1.0)],
        True,
    ),
    (
        "binary_cross_entropy",
        "none",
        lambda a, b: F.binary_cross_entropy(a, b, reduction="none"),
        [arr(4, lo=0.1, hi=0.9), arr(4, lo=0.0, hi=1.0)],
        True,
    ),
    (
        "binary_cross_entropy_with_logits",
        "plain",
        lambda a, b: F.binary_cross_entropy_with_logits(a, b),
        [arr(2, 3), arr(2, 3, lo=0.0)],
        True,
    ),
    (
        "binary_cross_entropy_with_logits",
        "weight and pos_weight",
        lambda a, b: F.binary_cross_entropy_with_logits(
            a,
            b,
            weight=sg.tensor([1.0, 2.0, 0.5], dtype=sg.float64),
            pos_weight=sg.tensor([3.0, 0.5, 1.5], dtype=sg.float64),
            reduction="sum",
        ),
        [arr(2, 3) * 3, arr(2, 3, lo=0.0)],
        True,
    ),
    (
        "nll_loss2d",
        "4-d",
        lambda a: F.cross_entropy(a, sg.tensor([[[0, 2], [1, -100]]]), label_smoothing=0.2),
        [arr(1, 3, 2, 2)],
        True,
    ),
    (
        "nll_loss2d",
        "3-d none weighted",
        lambda a: F.nll_loss(
            a,
            sg.tensor([[2, 0, 1], [1, 1, 0]]),
            weight=sg.tensor([1.0, 2.0, 0.5], dtype=sg.float64),
            reduction="none",
        ),
        [arr(2, 3, 3)],
        True,
    ),
    (
        "xlogy",
        "kl_div's target term",
        lambda a, b: F.kl_div(a, b, reduction="sum"),
        [arr(2, 3), pos(2, 3)],
        True,
    ),
    ("linalg_cross", "broadcast", lambda a, b: sg.linalg.cross(a, b), [arr(4, 3), arr(1, 3)], True),
    ("linalg_cross", "dim 0", lambda a, b: sg.cross(a, b, dim=0), [arr(3, 2), arr(3, 2)], True),
    ("cdist", "p=2", lambda a, b: sg.cdist(a, b), [arr(3, 2), arr(4, 2)], True),
    ("cdist", "p=1 batched", lambda a, b: sg.cdist(a, b, p=1), [arr(2, 3, 2), arr(2, 2, 2)], False),
    ("cdist", "p=3", lambda a, b: sg.cdist(a, b, p=3), [arr(3, 2), arr(2, 2)], True),
    ("cdist", "p=inf", lambda a, b: sg.cdist(a, b, p=float("inf")), [arr(3, 2), arr(2, 2)], False),
    ("reshape", "view", lambda a: a.view(3, 2) * a.reshape(3, 2), [arr(2, 3)], True),
    ("reshape", "flatten of a transpose", lambda a: a.t().flatten(), [arr(2, 3)], True),
    ("expand_dims", "unsqueeze", lambda a: a.unsqueeze(1) * a[None], [arr(3)], True),
    ("squeeze", "squeeze", lambda a: a.squeeze(1).exp(), [arr(3, 1)], True),
    ("transpose", "permute", lambda a: a.permute(2, 0, 1), [arr(2, 3, 2)], True),
    ("transpose", "T", lambda a: a.T.exp(), [arr(2, 3)], True),
    ("T", "t", lambda a: a.t() @ a, [arr(2, 3)], True),
    ("swapaxes", "transpose", lambda a: a.transpose(0, 1), [arr(2, 3)], True),
    ("broadcast_to", "expand", lambda a: a.expand(2, 3) * a, [arr(3)], True),
    ("concatenate", "cat", lambda a, b: sg.cat([a, b * b], 1), [arr(2, 3), arr(2, 1)], True),
    ("stack", "stack", lambda a, b: sg.stack([a, b], 1), [arr(2, 3), arr(2, 3)], True),
    ("split", "split", lambda a: a.split(2, dim=1)[1] * 2, [arr(2, 5)], True),
    ("split", "chunk, two used", lambda a: a.chunk(3)[0] * a.chunk(3)[2], [arr(6)], True),
    ("split", "split_with_sizes", lambda a: a.split([1, 2], 0), [arr(3, 2)], True),
    ("unbind", "unbind", lambda a: a.unbind(1)[2] * a.unbind(1)[0], [arr(2, 3)], True),
    ("getitem", "select", lambda a: a[1] * a[0, 2], [arr(2, 3)], True),
    ("getitem", "slice", lambda a: a[:, 1:] * 2, [arr(2, 3)], True),
    ("getitem", "repeated indices", lambda a: a[[0, 0, 2]] * a[sg.tensor([1])], [arr(3)], True),
    ("getitem", "mask", lambda a: a[a > 0] ** 2, [away(2, 3)], True),
    ("getitem", "ellipsis and None", lambda a: a[..., None, 1], [arr(2, 3)], True),
    ("getitem", "max(dim)", lambda a: a.max(dim=1).values, [distinct(2, 3)], True),
    ("getitem", "min(dim) keepdim", lambda a: a.min(0, keepdim=True)[0], [distinct(2, 3)], True),
    ("getitem", "gather", lambda a: a.gather(1, sg.tensor([[0, 0], [2, 1]])), [arr(2, 3)], True),
    ("getitem", "index_select", lambda a: a.index_select(1, sg.tensor([2, 0])), [arr(2, 3)], True),
    ("getitem", "sort", lambda a: a.sort(dim=1, descending=True).values, [distinct(2, 3)], True),
    ("getitem", "topk", lambda a: a.topk(2).values, [distinct(2, 4)], True),
    ("getitem", "diagonal", lambda a: a.diagonal(), [arr(3, 3)], True),
    ("getitem", "masked_select", lambda a: a.masked_select(a > 0), [away(2, 3)], True),
    ("index_put", "setitem with indices", _index_put, [arr(2, 3), arr(3)], True),
    ("index_put", "accumulate", _index_put_accumulate, [arr(2, 3), arr(3)], True),
    ("fill", "setitem scalar", _setitem_scalar, [arr(2, 3)], True),
    ("fill", "zero_ of a view", _zero, [arr(2, 3)], True),
    ("fill_tensor", "fill_ with a tensor", _fill_tensor, [arr(2, 3), arr(2)], True),
    ("multiply", "in-place on a view", _view_inplace, [arr(3, 3), arr()], True),
    ("exp", "in-place chain", _inplace_chain, [arr(3)], True),
    ("getitem", "setitem with a tensor", _setitem_tensor, [arr(2, 3), arr(2)], True),
    ("torch_sign", "sign", lambda a: a.sign() * a, [away(4)], True),
    ("torch_floor", "floor", lambda a: a.floor() + a, [R.uniform(0.1, 0.9, 4)], True),
    ("torch_ceil", "ceil", lambda a: a.ceil() * a, [R.uniform(0.1, 0.9, 4)], True),
    ("torch_round", "round", lambda a: a.round() * a, [R.uniform(0.1, 0.4, 4)], True),
    ("torch_trunc", "trunc", lambda a: a.trunc() + a, [R.uniform(0.1, 0.9, 4)], True),
    ("flip", "flip", lambda a: a.flip(0) * a, [arr(3, 2)], True),
    ("roll", "roll", lambda a: a.roll(1, 1) * a, [arr(2, 3)], True),
    ("cumsum", "cumsum", lambda a: a.cumsum(1) * a, [arr(2, 3)], True),
    ("cumprod", "cumprod", lambda a: a.cumprod(0), [pos(4)], True),
    (
        "cumprod",
        "with a zero",
        lambda a: (a * sg.tensor([1.0, 0.0, 1.0, 1.0])).cumprod(0),
        [pos(4)],
        True,
    ),
    ("tril", "tril", lambda a: a.tril() * a, [arr(3, 3)], True),
    ("triu", "triu", lambda a: a.triu(1), [arr(3, 3)], True),
    ("tile", "repeat", lambda a: a.repeat(2, 3) * 1.5, [arr(2, 2)], True),
    ("tile", "tile with new dims", lambda a: a.tile((2, 1, 2)), [arr(3)], True),
    # the layers of nn (conv_ops, pool_ops, pad_ops, norm_ops)
    (
        "convolution",
        "conv2d",
        lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
        [arr(1, 4, 4, 5), arr(4, 2, 2, 2), arr(4)],
        True,
    ),
    (
        "convolution",
        "conv_transpose2d",
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
        [arr(1, 2, 3, 2), arr(2, 2, 2, 2)],
        True,
    ),
    (
        "resample",
        "avg_pool2d",
        lambda a: F.avg_pool2d(a * a, 2, padding=1, count_include_pad=False),
        [arr(1, 2, 3, 3)],
        True,
    ),
    (
        "resample",
        "bilinear",
        lambda a: F.interpolate(a * a, size=(3, 4), mode="bilinear"),
        [arr(1, 1, 2, 3)],
        True,
    ),
    ("constant_pad", "pad", lambda a: F.pad(a * a, (1, -1, 2, 0), value=0.5), [arr(1, 2, 3)], True),
    (
        "batch_norm_train",
        "batch_norm",
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        [arr(3, 2, 2), pos(2), arr(2)],
        True,
    ),
    (
        "embedding",
        "embedding, a repeated row",
        lambda w: F.embedding(sg.tensor([[1, 0], [2, 1]]), w * w),
        [arr(3, 2)],
        True,
    ),
    (
        "layer_norm",
        "layer_norm",
        lambda x, w, b: F.layer_norm(x * x, (2, 2), w, b),
        [arr(3, 2, 2), pos(2, 2), arr(2, 2)],
        True,
    ),
    (
        "batch_norm_eval",
        "batch_norm eval",
        lambda x, w, b: F.batch_norm(x * x, sg.tensor([0.5, -0.2]), sg.tensor([1.5, 0.7]), w, b),
        [arr(3, 2, 2), pos(2), arr(2)],
        True,
    ),
    # sourcegrad.linalg (the np.linalg entries)
    ("linalg_inv", "inv", lambda a: sg.linalg.inv(a), [arr(3, 3) * 0.3 + 2.0 * np.eye(3)], True),
    ("linalg_det", "det", lambda a: sg.linalg.det(a), [arr(3, 3) * 0.3 + 2.0 * np.eye(3)], True),
    (
        "linalg_solve",
        "solve",
        lambda a, b: sg.linalg.solve(a, b),
        [arr(3, 3) * 0.3 + 2.0 * np.eye(3), arr(3, 2)],
        True,
    ),
    (
        "linalg_cholesky",
        "cholesky",
        lambda a: sg.linalg.cholesky(a @ a.T + sg.eye(3, dtype=sg.float64)),
        [arr(3, 3)],
        True,
    ),
    ("linalg_pinv", "pinv", lambda a: sg.linalg.pinv(a), [arr(4, 2)], True),
    ("linalg_norm", "vector_norm", lambda a: sg.linalg.vector_norm(a, 3, dim=1), [arr(2, 3)], True),
    (
        "linalg_slogdet",
        "slogdet",
        lambda a: sg.linalg.slogdet(a)[1],
        [arr(3, 3) * 0.3 + 2.0 * np.eye(3)],
        True,
    ),
    (
        "linalg_eigh",
        "eigh",
        lambda a: sg.linalg.eigh(a + a.T)[1] ** 2 + sg.linalg.eigh(a + a.T)[0],
        [arr(3, 3)],
        True,
    ),
    ("linalg_eigvalsh", "eigvalsh", lambda a: sg.linalg.eigvalsh(a + a.T), [arr(3, 3)], True),
    # (eig: a real loss of its complex results; no second derivative through it)
    (
        "linalg_eig",
        "eig",
        lambda a: sg.linalg.eig(a)[1].abs() ** 2 + sg.linalg.eig(a)[0].real,
        [arr(3, 3)],
        False,
    ),
    ("linalg_eigvals", "eigvals", lambda a: sg.linalg.eigvals(a).abs(), [arr(3, 3)], False),
    (
        "linalg_svd",
        "svd",
        lambda a: sg.linalg.svd(a, full_matrices=False)[0] ** 2 + sg.linalg.svdvals(a),
        [arr(3, 2)],
        True,
    ),
    ("linalg_qr", "qr", lambda a: sg.linalg.qr(a)[0] + sg.linalg.qr(a)[1][0], [arr(3, 2)], True),
    # sourcegrad.fft and complex values (real outputs of complex intermediates)
    ("fft_fft", "fft", lambda a: sg.fft.fft(a, n=5, dim=0, norm="ortho").abs(), [arr(3, 2)], True),
    ("fft_ifft", "ifft", lambda a: sg.fft.ifft(a * (1 + 2j), n=2).imag, [arr(2, 3)], True),
    ("fft_rfft", "rfft", lambda a: sg.fft.rfft(a, norm="forward").abs() ** 2, [arr(2, 5)], True),
    ("fft_irfft", "irfft", lambda a: sg.fft.irfft(a * (1 - 1j), n=6) ** 2, [arr(2, 4)], True),
    ("fft_fft2", "fft2", lambda a: sg.fft.fft2(a, s=(3, 4)).real ** 2, [arr(2, 3)], True),
    ("fft_ifft2", "ifft2", lambda a: sg.angle(sg.fft.ifft2(a * 1j) + 0.5), [arr(2, 3)], True),
    ("fft_rfft2", "rfft2", lambda a: sg.fft.rfft2(a).abs(), [arr(3, 4)], True),
    (
        "fft_irfft2",
        "irfft2",
        lambda a: sg.fft.irfft2(a * (2 + 1j), norm="ortho") * a.sum(),
        [arr(3, 3)],
        True,
    ),
    ("fft_fftn", "fftn", lambda a: sg.fft.fftn(a, dim=(0, 2)).abs() ** 1.5, [arr(2, 2, 3)], True),
    (
        "fft_ifftn",
        "ifftn",
        lambda a: sg.fft.ifftn(a * 1j, s=(3,)).real * a.sum(),
        [arr(2, 2)],
        True,
    ),
    ("fft_rfftn", "rfftn", lambda a: sg.fft.rfftn(a, s=(2, 4)).abs() ** 2, [arr(3, 3)], True),
    (
        "fft_irfftn",
        "irfftn",
        lambda a: sg.fft.irfftn(a * (1 + 1j), s=(3, 5)) ** 2,
        [arr(3, 3)],
        True,
    ),
    ("fft_fftshift", "fftshift", lambda a: sg.fft.fftshift(a, dim=1) * a, [arr(2, 5)], True),
    ("fft_ifftshift", "ifftshift", lambda a: sg.fft.ifftshift(a) * a, [arr(2, 5)], True),
    ("np_real", "real", lambda a: sg.real(sg.exp(a * (0.5 + 1j))), [arr(3)], True),
    ("np_imag", "imag", lambda a: (a * (1 + 2j) * a).imag, [arr(3)], True),
    (
        "np_conjugate",
        "conj",
        lambda a: sg.real(sg.conj(a * (1 + 2j)) * sg.exp(a * 1j)),
        [arr(3)],
        True,
    ),
    ("np_angle", "angle", lambda a: (a * (1 + 2j) + 0.3j).angle(), [arr(3)], True),
    # torch's functions numpy lacks (tests/eager/test_torch_gaps_ops.py compares them to torch)
    ("np_rot90", "rot90", lambda a: sg.rot90(a, 1, (0, 1)) * a, [arr(3, 3)], True),
    ("np_rot90", "rot90 backwards", lambda a: a.rot90(-1, [2, 0]), [arr(2, 3, 4)], True),
    ("logcumsumexp", "logcumsumexp", lambda a: sg.logcumsumexp(a, 1) * a, [arr(2, 4)], True),
    ("diag_embed", "diag_embed", lambda a: sg.diag_embed(a, 1, 0, 2) * 2, [arr(2, 3)], True),
    ("copysign", "copysign", lambda a, b: sg.copysign(a, b) * a, [away(2, 3), away(3)], True),
    ("frac", "frac", lambda a: sg.frac(a) * a, [R.uniform(0.1, 0.9, 4)], True),
    ("getitem", "cummax", lambda a: sg.cummax(a, 1)[0] * a, [arr(2, 4)], True),
    ("getitem", "unfold", lambda a: a.unfold(1, 3, 1) * 2, [arr(2, 5)], True),
    ("getitem", "quantile", lambda a: sg.quantile(a, 0.3, 1) * 3, [arr(2, 5)], True),
    # (complex values in between: the real pairs in and out, as torch's complex code writes it)
    (
        "view_as_complex",
        "view_as_complex",
        lambda a: sg.view_as_real(sg.view_as_complex(a) * sg.view_as_complex(a)),
        [arr(3, 2)],
        True,
    ),
    (
        "view_as_real",
        "view_as_real",
        lambda a: sg.view_as_real(sg.view_as_complex(a).exp()) * 2,
        [arr(4, 2)],
        True,
    ),
    (
        "matmul",
        "baddbmm",
        lambda c, a, b: sg.baddbmm(c, a, b, beta=0.5, alpha=2.0),
        [arr(2, 2), arr(3, 2, 4), arr(3, 4, 2)],
        True,
    ),
]


@pytest.mark.parametrize(
    "rule, case, fn, inputs, second", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_gradient_matches_finite_differences(rule, case, fn, inputs, second):
    weights = check_first(fn, inputs)
    if second:
        check_second(fn, inputs, weights)


def test_every_rule_has_a_case():
    used = {spec.rule.name for spec in ALL_SPECS}
    # (the registry's entries with torch names are checked from their rows in test_registry_ops,
    # the few torch.special ones it leaves out in tests/eager/test_special.py)
    covered = {c[0] for c in CASES} | set(REGISTRY_ROWS) | REGISTRY_ELSEWHERE
    # (float32 only, as torch's fused layer: its finite differences, in float64, and its
    # comparison with torch are in test_nn_rnn.py)
    covered |= {"lstm_layer"}
    assert used - covered == set(), f"rules without a finite-difference case: {used - covered}"


def test_rules_come_from_the_shared_table():
    """The eager nodes call the table's own lambdas, not copies of them."""
    from sourcegrad.ops import RULES

    for spec in ALL_SPECS:
        assert spec.rule is RULES[spec.rule.name]
        if spec.vjps is not None:
            for p, vjp in zip(spec.edges, spec.vjps):
                assert vjp is spec.rule.vjp_for(p)
